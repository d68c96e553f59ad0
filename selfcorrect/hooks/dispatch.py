"""`selfcorrect hook claude-code EVENT [DIR]`: read the event, answer, never break the agent.

DIR defaults to `workflow/` under the project ($CLAUDE_PROJECT_DIR). Whatever happens (bad
stdin, a missing folder, an internal error) the hook exits 0 with one line on stderr: the host
reads exit 2 as "block", and a broken selfcorrect must never stop an agent's tool call
(docs/hooks.md). Only the gate's modules are imported up front.
"""

from __future__ import annotations

import os
import sys

from selfcorrect.hooks import answers
from selfcorrect.hooks.events import BadEvent, HookEvent, project_dir, read_event

TYPE_CHECKING = False  # not `from typing import`: typing costs the gate 8 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

HOSTS = ("claude-code", "gemini")
EVENTS = (
    "post-tool-use-failure",
    "post-tool-use",
    "post-tool-batch",
    "pre-tool-use",
    "pre-compact",
    "subagent-start",
    "subagent-stop",
    "stop",
)
DEFAULT_FOLDER = "workflow"
LOCK_WAIT_S = 10.0  # the longest a hook waits for any lock (docs/hooks.md)


def run_hook(argv: list[str]) -> int:
    """Answer one hook event; always 0 (see the module's docstring)."""
    try:
        gemini = len(argv) > 1 and argv[0] == "gemini"
        events = _gemini_events() if gemini else EVENTS
        if len(argv) not in (2, 3) or argv[0] not in HOSTS or argv[1] not in events:
            answers.note(
                f"usage: selfcorrect hook {argv[0] if gemini else 'claude-code'} "
                f"{{{','.join(events)}}} [DIR]; got {' '.join(argv)!r}: nothing done"
            )
            return 0
        event = read_event(sys.stdin)
        folder = _folder(event, argv[2] if len(argv) == 3 else None)
        if not os.path.isdir(folder):
            answers.note(f"{folder}: no workflow folder here; nothing checked (see docs/hooks.md)")
            return 0
        if gemini:  # Gemini CLI's events, answered by the same hooks (hooks/gemini.py)
            from selfcorrect.hooks import gemini as host

            name, event = host.translate(argv[1], event)
            answers.say(host.answer(argv[1], _handler(name)(event, folder)))
            return 0
        answers.say(_handler(argv[1])(event, folder))
    except BadEvent as exc:
        answers.note(f"{exc}; nothing done")
    except KeyboardInterrupt:
        return 0
    except Exception as exc:  # a hook must never break the agent
        answers.note(_describe(exc))
    return 0


def _gemini_events() -> tuple[str, ...]:
    from selfcorrect.hooks.gemini import EVENTS as GEMINI

    return GEMINI


def _folder(event: HookEvent, given: str | None) -> str:
    """os.path, not pathlib: the gate's start-up counts (docs/hooks.md)."""
    folder = given or DEFAULT_FOLDER
    return folder if os.path.isabs(folder) else os.path.join(project_dir(event), folder)


def _handler(name: str) -> Callable[[HookEvent, str], dict[str, Any] | None]:
    if name == "pre-tool-use":
        from selfcorrect.hooks.gate import answer

        return answer
    if name == "post-tool-use":  # on every successful call: as lean as the gate
        from selfcorrect.hooks.success import answer as success

        return success
    if name == "subagent-start":
        from selfcorrect.hooks.binding import answer_start

        return answer_start
    from pathlib import Path

    from selfcorrect.io.atomic import lock_waits

    handler = _slow_handler(name)

    def bounded(event: HookEvent, folder: str) -> dict[str, Any] | None:
        from selfcorrect.io.real_paths import linked_out

        linked = linked_out(Path(folder))
        if linked is not None:  # its project would be the link target's (docs/containment.md)
            answers.note(
                f"{folder}: is a symbolic link to {linked[0]}, outside the project; nothing done"
            )
            return None
        with lock_waits(LOCK_WAIT_S):  # a held lock costs the agent 10 s at most, once
            return handler(event, Path(folder))

    return bounded


def _slow_handler(name: str) -> Callable[[HookEvent, Path], dict[str, Any] | None]:
    """The hooks that may load the rest of selfcorrect: they decide, or write files."""
    if name == "post-tool-use-failure":
        from selfcorrect.hooks.failure import answer

        return answer
    if name == "pre-compact":
        from selfcorrect.hooks.compact import answer

        return answer
    if name == "post-tool-batch":
        from selfcorrect.hooks.batch import answer as batch

        return batch
    from selfcorrect.hooks.stop import answer_lead, answer_subagent

    return answer_subagent if name == "subagent-stop" else answer_lead


def _describe(exc: Exception) -> str:
    return f"{str(exc) or type(exc).__name__}; the agent was not stopped"
