"""How `watch` shows a run: one line for people, or one JSON object per line for tools.

Text:  `12:00:01 tool_failures.yaml changed → BLOCKED (1): wrote workflow/recovery/WI-3.md`
JSON:  the `run --format json` object (cli.run_report.run_json) plus `trigger` (the input
       files whose contents changed; empty for the start-up run), `exit` and `at`. A run that
       stopped on invalid input has `result: "INVALID"` and `errors` (positioned diagnostics);
       one that failed internally has `result: "ERROR"` and `message`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from selfcorrect import layout
from selfcorrect.cli.run_report import run_json
from selfcorrect.cli.words import printable

if TYPE_CHECKING:
    from selfcorrect.commands.watch import WatchRun

COLOURS = {"PASS": "green", "PENDING": "yellow", "BLOCKED": "red"}
SHOWN_TRIGGERS = 3


def watch_json(run: WatchRun) -> dict[str, Any]:
    data: dict[str, Any]
    if run.outcome is not None:
        data = run_json(run.outcome)
    else:
        data = {
            "result": "INVALID" if run.code == 2 else "ERROR",
            "errors": [d.as_dict() for d in run.diagnostics],
            "message": run.error,
        }
    data.setdefault("written", [])
    return {
        **data,
        "trigger": run.trigger,
        "exit": run.code,
        "at": run.at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }


def watch_line(run: WatchRun, *, color: bool) -> str:
    when = run.at.astimezone().strftime("%H:%M:%S")
    if not run.trigger:
        what = "start-up"
    else:
        names = [printable(label) for label in run.trigger[:SHOWN_TRIGGERS]]
        more = len(run.trigger) - SHOWN_TRIGGERS
        what = ", ".join(names) + (f" and {more} more" if more > 0 else "") + " changed"
    if run.outcome is None:
        result = "INVALID" if run.code == 2 else "ERROR"
        tail = (
            "kept the last good state; fix the input to resume"
            if run.code == 2
            else "see the error above; still watching"
        )
        styled = click.style(result, fg="red", bold=True) if color else result
        return f"{when} {what} → {styled} ({run.code}): {tail}"
    result = run.outcome.plan.result.value
    # The journal is bookkeeping: the line names what people and agents read.
    shown = [p for p in run.outcome.written if layout.STATE not in p.replace("\\", "/")]
    if shown:
        tail = "wrote " + summarise_paths([printable(p) for p in shown])
    else:
        tail = "journal updated" if run.outcome.written else "nothing new to write"
    styled = click.style(result, fg=COLOURS.get(result), bold=True) if color else result
    return f"{when} {what} → {styled} ({run.code}): {tail}"


def summarise_paths(paths: list[str]) -> str:
    """Written paths in one short phrase: their common folder once, then each file name, and
    a sub-folder holding several as `recovery/ (9 files)`. The start-up run on a cAgents
    session listed about 1,500 characters of full paths."""
    import os.path

    if len(paths) == 1:
        return paths[0]
    base = os.path.commonpath([os.path.dirname(p) for p in paths])
    groups: dict[str, list[str]] = {}
    for path in paths:
        rest = os.path.relpath(path, base) if base else path
        first, _, under = rest.replace(os.sep, "/").partition("/")
        groups.setdefault(first + ("/" if under else ""), []).append(rest)
    parts = [
        f"{name} ({len(members)} files)" if len(members) > 1 else members[0]
        for name, members in groups.items()
    ]
    return (f"in {base}/: " if base else "") + ", ".join(parts)


def render(run: WatchRun, fmt: str, *, color: bool) -> str:
    if fmt == "json":
        return json.dumps(watch_json(run), ensure_ascii=False)
    return watch_line(run, color=color)


__all__ = ["render", "watch_json", "watch_line"]
