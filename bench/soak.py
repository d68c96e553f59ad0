"""A soak of the failure hook: does the state under `.selfcorrect/` stay bounded? (rules §19)

    python -m bench.soak [--runs 1000] [--every 100] [--scenario repeating|distinct] [--json]

Each run is the failure hook's own path (hooks/failure.py `answer`), in this interpreter so that
1,000 runs take minutes, not the twenty a fresh interpreter per run would: one failure appended
to tool_failures.yaml, then one run that decides under the folder's lock and writes what a run
writes (prompts, failed_items, escalations, the journal, gate.json, log_cache.json). The folder
is made by `selfcorrect init` in a git repository in a temporary directory.

- `repeating`: seven agents failing over thirteen files and eleven commands: a fixed set of
  subjects, the common case. The state must level off: the second half of the soak may add
  little (`bounded` compares it with the first half).
- `distinct`: every failure on a file of its own, so the subjects grow with the log: the state
  grows with them, but the saved fold never past the log it folds (or 256 KiB).

Every `--every` runs a row: the runs so far, the seconds, the log's bytes, the state's bytes in
all and its largest files (with `--json`, every file's). Nothing is asserted: the figures are
reported (bench/README.md), and the exit code is 1 when the state was not bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from selfcorrect.io.log_state import MIN_ROOM  # the room any small log's fold is given


def _event(number: int, scenario: str) -> dict[str, Any]:
    files = f"src/f{number}.py" if scenario == "distinct" else f"src/f{number % 13}.py"
    return {
        "hook_event_name": "PostToolUseFailure",
        "session_id": "soak",
        "agent_id": f"agent-{number % 7}",
        "tool_name": ("Bash", "Edit", "Read")[number % 3],
        "tool_input": {"command": f"make {number % 11}", "file_path": files},
        "error": f"Command failed with exit code {number % 3 + 1}: error {number % 17} at {number}",
    }


def _sizes(folder: Path) -> dict[str, int]:
    return {
        path.relative_to(folder).as_posix(): path.stat().st_size
        for path in folder.rglob("*")
        if path.is_file()
    }


def soak(root: Path, runs: int, every: int, scenario: str) -> list[dict[str, Any]]:
    from selfcorrect.hooks import failure
    from selfcorrect.hooks.events import HookEvent

    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(
        [sys.executable, "-m", "selfcorrect", "init", "workflow", "-q"],
        cwd=root,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    folder = root / "workflow"
    os.environ["CLAUDE_PROJECT_DIR"] = str(root)
    rows = []
    start = time.perf_counter()
    for number in range(runs):
        failure.answer(HookEvent(_event(number, scenario)), folder)
        if (number + 1) % every == 0 or number + 1 == runs:
            state = _sizes(folder / ".selfcorrect")
            largest = sorted(state.items(), key=lambda item: -item[1])[:3]
            rows.append(
                {
                    "runs": number + 1,
                    "seconds": round(time.perf_counter() - start, 1),
                    "log_bytes": (folder / "tool_failures.yaml").stat().st_size,
                    "state_bytes": sum(state.values()),
                    "log_cache_bytes": state.get("log_cache.json", 0),
                    "largest": largest,
                    "files": state,
                }
            )
            progress = {k: v for k, v in rows[-1].items() if k != "files"}
            print(json.dumps(progress), file=sys.stderr, flush=True)
    return rows


def verdict(rows: list[dict[str, Any]], scenario: str) -> dict[str, Any]:
    """`repeating`: the second half adds at most a quarter of what the first half left;
    `distinct`: the saved fold never outgrew the log it folds (or MIN_ROOM)."""
    last = rows[-1]
    if scenario == "distinct":
        worst = max(r["log_cache_bytes"] - max(r["log_bytes"], MIN_ROOM) for r in rows)
        return {"bounded": worst <= 0, "fold_over_its_room_bytes": max(worst, 0)}
    middle = min(rows, key=lambda r: abs(r["runs"] - last["runs"] / 2))
    grown = last["state_bytes"] - middle["state_bytes"]
    return {
        "bounded": grown <= middle["state_bytes"] / 4,
        "second_half_growth": round(grown / middle["state_bytes"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--scenario", choices=("repeating", "distinct"), default="repeating")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="selfcorrect-soak-") as temp:
        here = Path.cwd()
        try:
            os.chdir(temp)  # displayed paths are relative to the working directory
            rows = soak(Path(temp), args.runs, max(1, args.every), args.scenario)
        finally:
            os.chdir(here)
    result = {"scenario": args.scenario, "rows": rows, **verdict(rows, args.scenario)}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{'runs':>6} {'seconds':>8} {'log':>10} {'state':>10} {'log_cache':>10}  largest")
        for row in rows:
            largest = ", ".join(f"{name} {size:,}" for name, size in row["largest"])
            print(
                f"{row['runs']:>6} {row['seconds']:>8} {row['log_bytes']:>10,} "
                f"{row['state_bytes']:>10,} {row['log_cache_bytes']:>10,}  {largest}"
            )
        print({k: v for k, v in result.items() if k != "rows"})
    return 0 if result["bounded"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
