"""The lead agent is told, once, that an escalation waits for a person (docs/rules.md §10).

Every run lists the open escalations in the gate's state (`waiting`, core/gate_state.py). The
lead's next hook answer that can carry words (a failed or a successful call's) names each one
it was not told of yet, and the lead's stop hold adds it to its reason; each escalation is
named once (`.selfcorrect/told_escalations.json`). A subagent is never told: the lead speaks
to the person. The cheap path is one look at the gate's state, already read: with nothing
waiting, nothing more is read.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from selfcorrect.hooks.gate_file import GateState

TOLD = os.path.join(".selfcorrect", "told_escalations.json")
MAX_TOLD = 1000  # remembered escalations; the oldest are forgotten first


def waiting_note(folder: str, state: GateState | None) -> str | None:
    """The words naming each open escalation the lead was not told of yet (now remembered as
    told), or None."""
    waiting = state.waiting if state is not None else []
    if not waiting or not _untold(folder, [e["id"] for e in waiting]):
        return None  # the common case while a person has not answered: nothing imported
    from pathlib import Path

    from selfcorrect.hooks.remembered import first_time

    fresh = set(first_time(Path(folder, TOLD), [e["id"] for e in waiting], MAX_TOLD))
    if not fresh:
        return None
    told = [e for e in waiting if e["id"] in fresh]
    named = "; ".join(f"{e['id']} ({e['subject']}: {e['reason']})" for e in told)
    where = told[0]["where"] or "escalations.yaml"
    noun = "An escalation waits" if len(told) == 1 else f"{len(told)} escalations wait"
    return (
        f"selfcorrect: {noun} for a person in {where}: {named}. Tell the person in your next "
        "message; its work stays stopped until they answer (they resolve it there, or run "
        "`selfcorrect reset`)."
    )


def _untold(folder: str, ids: list[str]) -> bool:
    """Whether any of `ids` is not in the told list, read with the standard library alone (a
    file that cannot be read tells nothing: the compare-and-swap that follows decides)."""
    import json

    try:
        fd = os.open(os.path.join(folder, TOLD), _FLAGS)
    except OSError:
        return True
    try:
        with os.fdopen(fd, "rb") as handle:
            told = json.loads(handle.read(MAX_READ))
    except (OSError, ValueError, RecursionError):
        return True
    known = {str(k) for k in told} if isinstance(told, list) else set()
    return any(ident not in known for ident in ids)


_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
MAX_READ = 1 << 20


def with_note(answer: dict[str, Any] | None, note: str | None, event: str) -> dict[str, Any] | None:
    """`answer` with `note` added to its words: its context, or a stop hold's reason; a new
    context answer for `event` (PostToolUse, PostToolUseFailure) when there was none."""
    if note is None:
        return answer
    if answer is None:
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": note}}
    specific = answer.get("hookSpecificOutput")
    if isinstance(specific, dict) and "additionalContext" in specific:
        specific["additionalContext"] = f"{specific['additionalContext']}\n{note}"
    elif answer.get("decision") == "block":
        answer["reason"] = f"{answer.get('reason', '')} {note}"
    return answer
