"""`python -m bench`: run the benchmark (see bench/README.md)."""

from __future__ import annotations

from bench.run import main

if __name__ == "__main__":
    raise SystemExit(main())
