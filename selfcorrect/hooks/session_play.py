"""A recorded session played through the hooks, for `replay` to decide (docs/rules.md §13).

A session case is a folder holding what a host sent or wrote during one real session:
`events.jsonl` (the hook payloads, one JSON object per line, in order, as a hook logger saved
them) or `transcript.jsonl` (a Claude Code transcript), beside its labels (`expected.yaml`) and
the workflow files the session had, if any (coordination_log.yaml, ...).

Playing it builds a temporary project with those workflow files in `workflow/` and hands each
event, in order and in-process, to the hook its `hook_event_name` names, exactly as the host
would have run `selfcorrect hook claude-code EVENT`. The recorded project's path (the first
event's `cwd`) is moved to the temporary project's, so the paths the agents used stay inside it.
A transcript without events is turned into the events Claude Code sends for it: a failure event
for each call that ran and failed, a success event for each that succeeded, and one Stop at the
end, whose transcript fallback finds the calls the host rejected or cancelled. Nothing of the
case is written; the temporary project is deleted when the caller is done with it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr
from io import StringIO
from pathlib import Path
from typing import Any, NamedTuple

from selfcorrect.commands.install import EVENTS as HOST_EVENTS
from selfcorrect.hooks.dispatch import DEFAULT_FOLDER, SESSION, handler_of
from selfcorrect.hooks.events import BadEvent, parse_event

EVENTS = "events.jsonl"
TRANSCRIPT = "transcript.jsonl"
# The case's own files, never copied into the played workflow folder.
_CASE_FILES = {EVENTS, TRANSCRIPT, "expected.yaml", "README.md", "SOURCE.md", "labels.md"}
# The host's event -> the hook install runs for it; not the session events: a replay starts no
# warm answerer.
_NAMES = {event: name for event, name, *_ in HOST_EVENTS if name not in SESSION}
_MAX_LINE = 4 * 1024 * 1024  # a recorded line longer than this is skipped, not read


def is_session(folder: Path) -> bool:
    return (folder / EVENTS).is_file() or (folder / TRANSCRIPT).is_file()


class Played(NamedTuple):
    """What a session left: its workflow folder, and how to spell a path of the temporary
    project as the session recorded it (a label names the paths the agents used)."""

    workflow: Path
    recorded: Callable[[str], str]


@contextmanager
def played(case: Path) -> Iterator[Played | None]:
    """The workflow folder the hooks leave after playing `case`'s session (deleted after);
    None when `case` holds no session."""
    if not is_session(case):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="selfcorrect-replay-") as scratch:
        project = Path(scratch, "project")
        workflow = project / DEFAULT_FOLDER
        shutil.copytree(case, workflow, ignore=lambda _d, names: _CASE_FILES & set(names))
        transcript = None
        if (case / TRANSCRIPT).is_file():
            transcript = Path(scratch, TRANSCRIPT)
            shutil.copyfile(case / TRANSCRIPT, transcript)
        if (case / EVENTS).is_file():
            events = _recorded(case / EVENTS)
        else:
            events = _from_transcript(transcript, Path(scratch)) if transcript else []
        root = _root(events)
        _play(events, root, project, workflow, transcript)
        moved = str(project)
        yield Played(workflow, lambda text: text.replace(moved, root) if root else text)


def _recorded(path: Path) -> list[dict[str, Any]]:
    events = []
    with path.open("rb") as handle:
        for line in handle:
            if len(line) > _MAX_LINE:
                continue
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(event, dict):
                events.append(event)
    return events


def _from_transcript(path: Path, scratch: Path) -> list[dict[str, Any]]:
    """The events Claude Code sends for the calls a transcript records: a failure or success
    event per call that ran, a SubagentStop after each subagent's last line (with the
    subagent's own transcript, written to `scratch`, as the host keeps one per subagent), and
    a Stop at the end. The stops' transcript fallback finds the calls that never ran."""
    uses: dict[str, dict[str, Any]] = {}
    events: list[dict[str, Any]] = []
    session = cwd = None
    records = [(record, *_message(record)) for record in _recorded(path)]
    last = {agent: n for n, (_r, _m, agent) in enumerate(records) if agent}
    for number, (record, message, agent) in enumerate(records):
        session = session or record.get("sessionId")
        cwd = cwd or record.get("cwd")
        content = message.get("content") if isinstance(message, dict) else None
        if agent:
            own = scratch / f"agent-{re.sub(r'[^A-Za-z0-9_.-]', '_', str(agent))[:64]}.jsonl"
            with own.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"type": "message", "message": message}) + "\n")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                uses[block["id"]] = block
                continue
            if block.get("type") != "tool_result":
                continue
            use = uses.get(str(block.get("tool_use_id")))
            text = _text(block.get("content"))
            if use is None or text.lstrip().startswith("<tool_use_error>"):
                continue  # never ran: the Stop's transcript fallback reads these
            event: dict[str, Any] = {
                "session_id": session,
                "cwd": cwd,
                "tool_name": use.get("name"),
                "tool_input": use.get("input"),
                "tool_use_id": use.get("id"),
            }
            if agent:
                event["agent_id"] = agent
            if block.get("is_error") is True:
                event |= {"hook_event_name": "PostToolUseFailure", "error": text}
            else:
                event |= {"hook_event_name": "PostToolUse", "tool_response": text}
            events.append(event)
        if agent and last[agent] == number:
            events.append(
                {
                    "hook_event_name": "SubagentStop",
                    "session_id": session,
                    "cwd": cwd,
                    "agent_id": agent,
                    "agent_transcript_path": str(own),
                    "stop_hook_active": False,
                }
            )
    stop = {"hook_event_name": "Stop", "session_id": session, "cwd": cwd}
    return [*events, {**stop, "stop_hook_active": False, "transcript_path": str(path)}]


def _message(record: dict[str, Any]) -> tuple[Any, Any]:
    """A transcript line's message and the subagent that wrote it (None: the lead). A subagent
    writes to its own transcript (`isSidechain`), or, in Claude Code 2.1, into the lead's as
    `agent_progress` lines."""
    data = record.get("data")
    if record.get("type") == "progress" and isinstance(data, dict):
        if data.get("type") != "agent_progress" or not isinstance(data.get("message"), dict):
            return None, None
        return data["message"].get("message"), data.get("agentId")
    return record.get("message"), record.get("agentId") if record.get("isSidechain") else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _root(events: list[dict[str, Any]]) -> str:
    """The recorded project's path: the first event's cwd ("" when none says, or "/")."""
    root = next((e["cwd"] for e in events if isinstance(e.get("cwd"), str)), "")
    return "" if root in ("", "/") else root


def _play(
    events: list[dict[str, Any]],
    recorded: str,
    project: Path,
    workflow: Path,
    transcript: Path | None,
) -> None:
    saved = os.environ.get("CLAUDE_PROJECT_DIR")
    os.environ["CLAUDE_PROJECT_DIR"] = str(project)
    try:
        with redirect_stderr(StringIO()):  # the hooks' notes are for the host's log
            for event in events:
                name = _NAMES.get(str(event.get("hook_event_name")))
                if name is None:
                    continue
                raw = json.dumps(event, ensure_ascii=False)
                if recorded:
                    # The paths the agents used, moved with their project.
                    raw = raw.replace(json.dumps(recorded)[1:-1], json.dumps(str(project))[1:-1])
                moved = json.loads(raw)
                if transcript is not None and "transcript_path" in moved:
                    moved["transcript_path"] = str(transcript)
                try:
                    handler_of(name)(parse_event(json.dumps(moved)), str(workflow))
                except BadEvent:
                    continue  # as the host's hook would: nothing done
    finally:
        if saved is None:
            os.environ.pop("CLAUDE_PROJECT_DIR", None)
        else:
            os.environ["CLAUDE_PROJECT_DIR"] = saved


__all__ = ["EVENTS", "TRANSCRIPT", "Played", "is_session", "played"]
