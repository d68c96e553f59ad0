"""`selfcorrect hook claude-code EVENT [DIR]`: read the event, answer, never break the agent.

DIR defaults to `workflow/` under the project ($CLAUDE_PROJECT_DIR). Whatever happens (bad
stdin, a missing folder, an internal error) the hook exits 0 with one line on stderr: the host
reads exit 2 as "block", and a broken selfcorrect must never stop an agent's tool call
(docs/hooks.md). Only the gate's modules are imported up front.
"""

from __future__ import annotations

import json
import os
import sys

from selfcorrect.hooks import answers
from selfcorrect.hooks.events import BadEvent, HookEvent, parse_event, project_dir, read_raw

TYPE_CHECKING = False  # not `from typing import`: typing costs the gate 8 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

HOSTS = ("claude-code", "gemini", "copilot", "codex")
EVENTS = (
    "post-tool-use-failure",
    "post-tool-use",
    "post-tool-batch",
    "pre-tool-use",
    "pre-compact",
    "subagent-start",
    "subagent-stop",
    "stop",
    "session-start",
    "session-end",
)
# The hooks that decide or write, and so load the rest of selfcorrect: the warm answerer takes
# them when one runs (hooks/warm_client.py). The gate and the success hook stay in-process.
WARM = frozenset(
    {"post-tool-use-failure", "post-tool-batch", "pre-compact", "subagent-stop", "stop"}
)
SESSION = ("session-start", "session-end")
DEFAULT_FOLDER = "workflow"  # layout.DEFAULT_FOLDER, spelled here: the gate imports no more
NO_HOOK = "none"  # a host event that needs no hook (a call that never ran, an unknown outcome)
LOCK_WAIT_S = 10.0  # the longest a hook waits for any lock (docs/hooks.md)


def run_hook(argv: list[str], forward: bool = True) -> int:
    """Answer one hook event; 0 (see the module's docstring), or 2 with Copilot CLI's failure
    guidance on stderr, its one way back to the agent (hooks/copilot.py). With `forward`, a
    deciding hook goes to the folder's warm answerer when one runs (hooks/warm_client.py)."""
    try:
        host = translator(argv[0]) if argv and argv[0] in HOSTS else None
        events = host.EVENTS if host is not None else EVENTS
        if len(argv) not in (2, 3) or argv[0] not in HOSTS or argv[1] not in events:
            shown = argv[0] if host is not None else "claude-code"
            answers.note(
                f"usage: selfcorrect hook {shown} "
                f"{{{','.join(events)}}} [DIR]; got {' '.join(argv)!r}: nothing done"
            )
            return 0
        raw = read_raw(sys.stdin)
        event = parse_event(raw)
        folder = _folder(event, argv[2] if len(argv) == 3 else None)
        if not os.path.isdir(folder):
            answers.note(f"{folder}: no workflow folder here; nothing checked (see docs/hooks.md)")
            return 0
        if not _utf8(folder):  # every hook says so, the gate included, and does nothing
            shown = os.fsencode(folder).decode("utf-8", "backslashreplace")
            answers.note(
                f"{shown}: this path is not valid UTF-8, and selfcorrect writes the project's "
                "paths into UTF-8 files, so it does nothing here (the gate checks nothing): "
                "rename the folder whose name is not UTF-8"
            )
            return 0
        if argv[1] in SESSION:
            _session(argv[1], folder)
            return 0
        name = argv[1]
        if host is not None:  # another host's events, answered by the same hooks
            name, event = host.translate(argv[1], event)
        if name == NO_HOOK:
            return 0
        deciding = name in WARM or (name == "post-tool-use" and _logs_a_success(event, folder))
        # A host whose answer to an event is an exit code answers it here (hooks/copilot.py)
        warm = argv[1] not in getattr(host, "IN_PROCESS", ())
        if forward and warm and deciding and _answered_warm(argv, folder, raw):
            return 0
        answer = handler_of(name)(event, folder)
        reply = host.answer(argv[1], answer) if host is not None else answer
        if isinstance(reply, str):  # guidance on stderr, exit code 2 (hooks/copilot.py)
            sys.stderr.write(reply + "\n")
            return 2
        answers.say(reply)
    except BadEvent as exc:
        answers.note(f"{exc}; nothing done")
    except KeyboardInterrupt:
        return 0
    except Exception as exc:  # a hook must never break the agent
        answers.note(_describe(exc))
    return 0


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _answered_warm(argv: list[str], folder: str, raw: str) -> bool:
    """Whether the warm answerer answered this hook (its answer printed as ours)."""
    from selfcorrect.hooks import warm_client

    answered = warm_client.ask(folder, [argv[0], argv[1], os.path.abspath(folder)], raw)
    if answered is None:
        return False
    sys.stdout.write(answered[0])
    sys.stderr.write(answered[1])
    return True


def _logs_a_success(event: HookEvent, folder: str) -> bool:
    """Whether this success hook will log and decide (the gate's state awaits the call): then
    the warm answerer takes it, as it takes a failure; nearly every call is not awaited and
    stays here, on the lean path."""
    from selfcorrect.hooks.success import awaited

    return awaited(event, folder)


def _session(name: str, folder: str) -> None:
    """session-start: have a warm answerer serve this host's session (start one, or join the
    one running); session-end: leave it, which stops it when no session is left."""
    from selfcorrect.hooks import warm_client

    host = warm_client.host_pid()
    if name == "session-end":
        warm_client.detach(folder, host)
    elif not warm_client.attach(folder, host):
        warm_client.start(os.path.abspath(folder), host)


def translator(host: str) -> Any:
    """The module translating `host`'s events and answers (hooks/gemini.py, copilot.py,
    codex.py), None for Claude Code's own."""
    if host == "gemini":
        from selfcorrect.hooks import gemini

        return gemini
    if host == "copilot":
        from selfcorrect.hooks import copilot

        return copilot
    if host == "codex":
        from selfcorrect.hooks import codex

        return codex
    return None


def _folder(event: HookEvent, given: str | None) -> str:
    """os.path, not pathlib: the gate's start-up counts (docs/hooks.md)."""
    folder = given or DEFAULT_FOLDER
    return folder if os.path.isabs(folder) else os.path.join(project_dir(event), folder)


def handler_of(name: str) -> Callable[[HookEvent, str], dict[str, Any] | None]:
    if name == "pre-tool-use":
        from selfcorrect.hooks.gate import answer

        return answer
    if name == "post-tool-use":  # on every successful call: as lean as the gate
        from selfcorrect.hooks.success import answer as success

        return success
    if name == "subagent-start":
        from selfcorrect.hooks.binding import answer_start

        return answer_start
    return _bounded(_slow_handler(name))


def run_failure_hooks(host: str, name: str, folder: str, raws: list[str]) -> list[str]:
    """Several failure hooks (`hook HOST NAME`) of one folder handed over together
    (hooks/warm_server.py): what each prints on stdout (their notes go to stderr, as
    `run_hook`'s). Each event is read and answered as `run_hook` would; one decision serves
    them all (`failure.answer_many`)."""
    from selfcorrect.hooks.failure import answer_many

    other = translator(host)
    events: list[HookEvent | None] = []
    for raw in raws:
        try:
            event = parse_event(raw)
        except BadEvent as exc:
            answers.note(f"{exc}; nothing done")
            events.append(None)
            continue
        events.append(other.translate(name, event)[1] if other is not None else event)
    good = [event for event in events if event is not None]
    try:
        found = iter(_bounded(answer_many)(good, folder) or [None] * len(good))
    except Exception as exc:  # a hook must never break the agent
        answers.note(_describe(exc))
        found = iter([None] * len(good))
    outs = []
    for read in events:
        answer = next(found) if read is not None else None
        if other is not None:
            answer = other.answer(name, answer)
        if isinstance(answer, str):  # Copilot's exit-code guidance never comes warm
            answer = None
        outs.append("" if answer is None else json.dumps(answer, ensure_ascii=False) + "\n")
    return outs


def _bounded(handler: Callable[[Any, Path], Any]) -> Callable[[Any, str], Any]:
    """`handler` on the folder unless it is a link out of the project, giving up on a held
    sidecar lock after LOCK_WAIT_S."""
    from pathlib import Path

    from selfcorrect.io.atomic import lock_waits

    def bounded(event: Any, folder: str) -> Any:
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
