"""`post-tool-batch`: the failures no other hook sees (docs/hooks.md).

Claude Code rejects some calls while validating their input ("String to replace not found",
"File has not been read yet", an Edit of a missing file): neither PreToolUse nor
PostToolUseFailure fires for them, and they are most of `stale_context`. PostToolBatch lists
every call of the batch with its result, these as `<tool_use_error>…</tool_use_error>`, but
with no error flag: a result is taken for a rejection only when it is wholly one such element
in the host's own validation or not-run wording (core/unrun.py), so a call whose output merely
opens with the tag is output, not a failure. Each rejection whose `tool_use_id` is not in the
log yet is appended; a call the host cancelled or a person or hook denied (docs/rules.md §7)
as `outcome: cancelled` or `denied`, which counts nothing. Then, when a counted entry was
appended, one decision is made.

Where a host has no PostToolBatch (Claude Code before it had one), the stop hooks read the same
results from the transcript instead (`from_transcript`): the lines added since the last look
(`transcript_path`, a subagent's `agent_transcript_path`), at most MAX_TRANSCRIPT bytes, from
an offset kept in `.selfcorrect/transcripts.json`. Codex CLI, which sends no failure event,
has its session log read the same way, for every call that failed (hooks/codex.py).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.hooks.events import HookEvent

ERROR_OPEN, ERROR_CLOSE = "<tool_use_error>", "</tool_use_error>"
TAIL = 256 * 1024  # bytes of the log searched for a call already logged
MAX_CALLS = 100  # calls of one batch looked at
OFFSETS = os.path.join(".selfcorrect", "transcripts.json")  # how far each transcript was read
MAX_TRANSCRIPT = 4 * 1024 * 1024  # bytes of a transcript read at one stop
MAX_TRANSCRIPTS = 200  # offsets kept, the oldest forgotten first


def answer(event: HookEvent, folder: Path) -> dict[str, Any] | None:
    if log_rejected(rejected(event), folder):  # a counted entry: cancelled or denied ones are not
        from selfcorrect.hooks.failure import decide

        decide(folder)
    return None


def log_rejected(calls: list[HookEvent], folder: Path) -> int:
    """Append each rejected call not logged yet; how many of those appended count (a call that
    never ran is logged `outcome: cancelled` or `denied`, and counts nothing)."""
    from selfcorrect.core.unrun import not_run
    from selfcorrect.hooks.failure import append, entry

    log = folder / layout.FAILURE_LOG
    counted = 0
    for call in calls[:MAX_CALLS]:
        ident = call.tool_use_id
        if ident is not None and _logged(log, ident):
            continue
        error = _error_of(call)
        fields = entry(call, folder, error=error)
        unrun = not_run(error)
        if unrun is not None:
            fields["outcome"] = unrun.value
        if append(folder, fields):  # within limits.max_bytes, or refused and said
            counted += "outcome" not in fields
    return counted


def from_transcript(event: HookEvent, folder: Path) -> int:
    """The stop hooks' fallback: the rejected calls in the transcript's new lines, logged."""
    path = event.text("agent_transcript_path") or event.text("transcript_path")
    if path is None:
        return 0
    lines = _new_lines(Path(path), folder)
    if not lines:
        return 0
    from selfcorrect.hooks.codex import failed_calls

    codex = failed_calls(lines, event)  # Codex CLI's session log: the calls that failed
    if codex is not None:
        return log_rejected(codex, folder)
    from selfcorrect.core.unrun import declined

    uses: dict[str, dict[str, Any]] = {}
    calls = []
    for line in lines:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        message = record.get("message") if isinstance(record, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                uses[block["id"]] = block
            elif block.get("type") == "tool_result" and block.get("is_error") is True:
                # An error result: a rejection (tagged), or a call a person or hook denied;
                # any other error is a call that ran, the failure hook's to log.
                use = uses.get(str(block.get("tool_use_id")), {})
                shared = {k: v for k, v in event.data.items() if k != "tool_input"}
                call = {
                    **shared,
                    "tool_name": use.get("name"),
                    "tool_input": use.get("input"),
                    "tool_use_id": block.get("tool_use_id"),
                    "tool_response": block.get("content"),
                }
                text = _text(call["tool_response"])
                if text.lstrip().startswith(ERROR_OPEN) or declined(text):
                    calls.append(HookEvent(call))
    return log_rejected(calls, folder)


def _new_lines(path: Path, folder: Path) -> list[str]:
    """The transcript's whole lines after the offset kept for it, which moves on.

    Read within bounds (docs/containment.md, "Odd inputs"): opened without blocking and read
    only when a regular file (a FIFO there would hang the hook for good), at most
    MAX_TRANSCRIPT bytes a stop. A line longer than that is skipped with a warning: the offset
    moves into it, and the next stop reads on from the end of that line (an offset that does
    not follow a newline is inside a skipped line)."""
    from selfcorrect.hooks.answers import note
    from selfcorrect.io import atomic, platform
    from selfcorrect.io.safe_paths import ensure_dir

    offsets_path = folder / OFFSETS
    try:
        offsets = json.loads(atomic.read_or_none(offsets_path) or b"{}")
    except (ValueError, RecursionError):
        offsets = {}
    offsets = offsets if isinstance(offsets, dict) else {}
    start = offsets.get(str(path))
    start = start if isinstance(start, int) and start >= 0 else 0
    try:
        fd = os.open(path, os.O_RDONLY | platform.O_NONBLOCK | platform.O_CLOEXEC)
    except OSError:
        return []
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        note(f"{path}: the transcript is not a regular file; not read")
        return []
    with os.fdopen(fd, "rb") as handle:
        try:
            start = 0 if info.st_size < start else start  # a new or rewritten transcript
            inside = False  # whether `start` is inside a line skipped at an earlier stop
            if start:
                handle.seek(start - 1)
                inside = handle.read(1) != b"\n"
            data = handle.read(MAX_TRANSCRIPT)
        except OSError:
            return []
    skipped = 0
    if inside:  # the rest of a line over MAX_TRANSCRIPT: skipped to its end
        end = data.find(b"\n")
        skipped = len(data) if end < 0 else end + 1
    whole = data[skipped : data.rfind(b"\n") + 1] if b"\n" in data[skipped:] else b""
    moved = skipped + len(whole)
    if not inside and not whole and len(data) >= MAX_TRANSCRIPT:
        note(
            f"{path}: a transcript line at byte {start:,} is over {MAX_TRANSCRIPT // 2**20} MiB; "
            "it is skipped, and the lines after it are read"
        )
        moved = len(data)
    if moved:
        kept = {k: v for k, v in offsets.items() if k != str(path)}
        kept[str(path)] = start + moved
        ensure_dir(offsets_path.parent)
        body = json.dumps(dict(list(kept.items())[-MAX_TRANSCRIPTS:]), ensure_ascii=False)
        atomic.replace_file(offsets_path, (body + "\n").encode("utf-8"))
    return whole.decode("utf-8", "replace").splitlines()


def rejected(event: HookEvent) -> list[HookEvent]:
    """The batch's calls that did not run, each as its own event (the batch's agent and session
    ids, the call's tool, input and id): a result that is wholly one `<tool_use_error>` in the
    host's validation or not-run wording, or a person's or hook's denial in the host's words.
    PostToolBatch has no error flag, so a result that merely opens with the tag is output."""
    from selfcorrect.core.unrun import declined, validation_rejection

    calls = event.data.get("tool_calls")
    found = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        text = _text(call.get("tool_response"))
        tool = call.get("tool_name")
        named = tool if isinstance(tool, str) else None
        if validation_rejection(text, named) is not None or declined(text):
            shared = {k: v for k, v in event.data.items() if k != "tool_calls"}
            found.append(HookEvent({**shared, **call}))
    return found


def _text(response: Any) -> str:
    if isinstance(response, list):  # content blocks
        response = " ".join(str(b.get("text", "")) for b in response if isinstance(b, dict))
    return response if isinstance(response, str) else ""


def _error_text(response: Any) -> str:
    """The result's text, its `<tool_use_error>` tags taken off."""
    text = _text(response).strip()
    if not text.startswith(ERROR_OPEN):
        return text
    text = text[len(ERROR_OPEN) :]
    return text[: -len(ERROR_CLOSE)] if text.endswith(ERROR_CLOSE) else text


def _error_of(call: HookEvent) -> str:
    return _error_text(call.data.get("tool_response"))


def _logged(log: Path, ident: str) -> bool:
    """Whether an entry of the log's tail already carries this `tool_use_id`."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(os.fstat(handle.fileno()).st_size - TAIL, 0))
            return ident.encode("utf-8") in handle.read()
    except OSError:
        return False
