"""`python -m loop_sim [--warm] [NAME...]` (from tests/): play every scenario (or those named)
and print a scenario-by-invariant table.

Each cell is `pass` or `FAIL`, and each failure's first message follows the table. The same
scenarios run under pytest (tests/test_loop_simulator.py); this is the overview for a person.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .invariants import INVARIANTS
from .scenario import Simulation, load, scenario_files


def main(names: list[str]) -> int:
    """`--warm` plays the scenarios warm (docs/simulator.md)."""
    if {"-h", "--help"} & set(names):
        print(__doc__)
        return 0
    mode = "warm" if "--warm" in names else "cold"
    names = [n for n in names if n != "--warm"]
    files = [p for p in scenario_files() if not names or any(n in p.stem for n in names)]
    if not files:
        print(f"no scenario named {' or '.join(names)} in tests/loop_sim/scenarios/")
        return 2
    columns = list(INVARIANTS)
    rows, details = [], []
    for path in files:
        with tempfile.TemporaryDirectory() as tmp:
            sim = Simulation(path.stem, load(path), Path(tmp), mode)
            sim.play()
        failed: dict[str, list[str]] = {}
        for v in sim.checker.violations:
            failed.setdefault(v.invariant, []).append(
                v.message.replace("{runs}", ", ".join(v.runs))
            )
        rows.append((path.stem, ["FAIL" if c in failed else "pass" for c in columns]))
        for column in columns:
            for message in failed.get(column, [])[:3]:
                details.append(message)
    width = max(len(r[0]) for r in rows)
    print(" " * width + " | " + " | ".join(f"{c:^4}" for c in columns))
    for name, cells in rows:
        print(f"{name:<{width}} | " + " | ".join(f"{c:^4}" for c in cells))
    print()
    for key, text in INVARIANTS.items():
        print(f"{key}: {text}")
    print()
    print("\n".join(details))
    return 1 if any("FAIL" in cells for _, cells in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
