"""The `selfcorrect` program's front door (docs/architecture.md, "Agent hooks").

An agent hook runs on every tool call, so `selfcorrect hook …` takes a short way that imports
neither click nor a YAML library; everything else, `selfcorrect hook --help` included, goes to
the click commands.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if len(argv) >= 3 and argv[0] == "hook" and not any(a.startswith("-") for a in argv[1:]):
        from selfcorrect.hooks.dispatch import run_hook

        raise SystemExit(run_hook(argv[1:]))
    from selfcorrect.cli.main import entry

    entry()
