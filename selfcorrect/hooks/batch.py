"""`post-tool-batch`: the failures no other hook sees (docs/hooks.md).

Claude Code rejects some calls while validating their input ("String to replace not found",
"File has not been read yet", an Edit of a missing file): neither PreToolUse nor
PostToolUseFailure fires for them, and they are most of `stale_context`. PostToolBatch lists
every call of the batch with its result, these as `<tool_use_error>…</tool_use_error>`: each
such result whose `tool_use_id` is not in the log yet is appended, then one decision is made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.hooks.events import HookEvent

ERROR_OPEN, ERROR_CLOSE = "<tool_use_error>", "</tool_use_error>"
TAIL = 256 * 1024  # bytes of the log searched for a call already logged
MAX_CALLS = 100  # calls of one batch looked at


def answer(event: HookEvent, folder: Path) -> dict[str, Any] | None:
    from selfcorrect.hooks.failure import _decide, _entry
    from selfcorrect.io.failure_append import append_failure

    log = folder / layout.FAILURE_LOG
    appended = 0
    for call in rejected(event)[:MAX_CALLS]:
        ident = call.tool_use_id
        if ident is not None and _logged(log, ident):
            continue
        append_failure(log, _entry(call, folder, error=_error_of(call)))
        appended += 1
    if appended:
        _decide(folder)
    return None


def rejected(event: HookEvent) -> list[HookEvent]:
    """The batch's calls whose result is a `<tool_use_error>`, each as its own event (the
    batch's agent and session ids, the call's tool, input and id)."""
    calls = event.data.get("tool_calls")
    found = []
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict) and _error_text(call.get("tool_response")) is not None:
            shared = {k: v for k, v in event.data.items() if k != "tool_calls"}
            found.append(HookEvent({**shared, **call}))
    return found


def _error_text(response: Any) -> str | None:
    if isinstance(response, list):  # content blocks
        response = " ".join(str(b.get("text", "")) for b in response if isinstance(b, dict))
    if not isinstance(response, str) or not response.lstrip().startswith(ERROR_OPEN):
        return None
    text = response.strip()[len(ERROR_OPEN) :]
    return text[: -len(ERROR_CLOSE)] if text.endswith(ERROR_CLOSE) else text


def _error_of(call: HookEvent) -> str:
    return _error_text(call.data.get("tool_response")) or ""


def _logged(log: Path, ident: str) -> bool:
    """Whether an entry of the log's tail already carries this `tool_use_id`."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(os.fstat(handle.fileno()).st_size - TAIL, 0))
            return ident.encode("utf-8") in handle.read()
    except OSError:
        return False
