"""Loops that succeed: one agent's calls that keep working and change nothing (docs/rules.md §7).

The success hook runs after every successful call, so this is its cheap part: standard library
only, one small file per agent, `.selfcorrect/loops/<agent>.json`, read and rewritten on each of
that agent's successful calls. It keeps the agent's last three calls (tool, a key of the call's
canonical input, a few words naming it) and how long the current runs are:
- `same`: the latest call repeated this many times in a row (`repeated_call` fires at
  `stuck.repeated_call`, default 5);
- `period`: for a period of two and of three, how many calls in a row equal the call two (three)
  before them; with the last two (three) calls distinct, two (three) calls alternate, and the
  `alternation` signal fires at `stuck.alternation_cycles` (default 4) whole cycles.
A poll is never a loop (`sleep N && ...`, `gh run watch`, `tail`, `watch`, BashOutput and
TaskOutput, and what `stuck.poll` adds), nor a tool `stuck.exempt.tools` names: neither is
counted. An edit by the agent (an edit tool, or a shell command that writes a file) starts
everything again. Successes only: a failure in between changes nothing here.

Two strikes per loop: its first firing is named to the agent in the hook's answer; when the loop
goes on (one more repeat, or one more cycle), the hook logs an `outcome: loop` entry and decides,
and the work item enters the ladder at step 2; each further `threshold` repeats (cycles) logs
another, which climbs as failures do. Nothing else is ever logged from here: the file is the only
memory, and a lost update (two parallel calls of one agent) forgets a call, never invents one.
"""

from __future__ import annotations

import json
import os
import re
import zlib  # a 64-bit key from two checksums: no OpenSSL load on every call (see `_key`)

from selfcorrect.hooks.events import VOLATILE_KEYS, HookEvent, canonical_input

TYPE_CHECKING = False  # not `from typing import`: typing costs the hook 8 ms
if TYPE_CHECKING:
    from typing import Any

    from selfcorrect.hooks.gate_file import GateState

FOLDER = os.path.join(".selfcorrect", "loops")
FORMAT = 1
REPEATED_CALL = 5  # stuck.repeated_call's default, when no run wrote the gate's state yet
ALTERNATION_CYCLES = 4  # stuck.alternation_cycles's default
PERIODS = (2, 3)  # two or three calls alternating
KEPT = max(PERIODS)  # calls kept: enough to tell each period
MAX_STATE = 64 * 1024
# stuck.edit_loop.tools's default (core/repeated_calls.EDIT_TOOLS), when no run wrote the state
EDIT_TOOLS = frozenset({"edit", "write", "multiedit", "notebookedit"})
SHELL_TOOLS = frozenset({"bash", "shell", "run_shell_command"})  # as core/probes.SHELL_TOOLS
POLL_TOOLS = frozenset({"bashoutput", "taskoutput"})  # a background command's output, read again
# A shell command that waits for something to change: a sleep, a watch, a log's end read again.
# Each as a command of its own (first, or after `;`, `&&`, `||`, `(`, `do`, `then`), never
# after a pipe: `make 2>&1 | tail -20` cuts a build's output, it waits for nothing (measured on
# the real sessions in tests/replay/real-sessions).
_COMMAND = r"(?:^|;|&&|\|\||\(|\bdo\b|\bthen\b)\s*"
POLL = re.compile(
    _COMMAND + r"(?:sleep\s+[0-9.]+[smhd]?(?![\w.])|tail\s|watch\s)"
    r"|\bgh\s+run\s+watch\b|\bgh\s+pr\s+checks\b.*--watch\b|\bkubectl\b.*\s(?:-w|--watch)\b"
)
MAX_COMMAND = 4096  # characters of a command searched for a poll or a write
# Only a command that has one of these can write a file the way hooks/shell_writes.py reads it:
# the rest never pays for that module's import.
_MAY_WRITE = re.compile(
    r">|\b(?:tee|sed|cp|mv|rm|rmdir|ln|install|truncate|shred|touch|dd|unlink)\b"
)
LABEL = 120  # characters naming one call in the answer
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class Loop:
    """A loop firing now: its signal, how many repeats (or cycles) against the threshold, the
    calls that make it, and which strike this call is (0: the loop goes on between strikes)."""

    __slots__ = ("calls", "count", "signal", "strike", "threshold", "tool")

    def __init__(
        self, signal: str, count: int, threshold: int, calls: list[str], strike: int, tool: str
    ) -> None:
        self.signal, self.count, self.threshold = signal, count, threshold
        self.calls, self.strike, self.tool = calls, strike, tool

    def text(self) -> str:
        """What repeated and how often, in the agent's terms."""
        if self.signal == "repeated_call":
            return (
                f"you have made the same call {self.count} times in a row, each succeeding, "
                f"with no edit between: {self.calls[0]}"
            )
        named = "; ".join(self.calls)
        calls = self.count * len(self.calls)
        return (
            f"you have alternated between {len(self.calls)} calls for {self.count} cycles "
            f"({calls} calls), each succeeding, with no edit between: {named}"
        )


class Ended:
    """An edit by the agent after a loop that reached the ladder: the loop is over."""

    __slots__ = ("tools",)

    def __init__(self, tools: list[str]) -> None:
        self.tools = tools


def observe(event: HookEvent, folder: str, gate: GateState | None) -> Loop | Ended | None:
    """Count this successful call in its agent's loop state; the loop it makes, or an ended
    loop, or None. Never raises for the state's sake: an unreadable or unwritable state is an
    empty one (the hook must never break the agent)."""
    tool = event.tool or ""
    settings = gate.data.get("loops") if gate is not None else None
    settings = settings if isinstance(settings, dict) else {}
    folded = tool.casefold()
    if _listed(folded, settings.get("exempt_tools")) or polls(event, settings):
        return None
    path = _path(folder, event.agent_id or "")
    if path is None:
        return None
    state = _read(path)
    if _edits(event, gate):
        laddered = [str(t) for t in state.get("laddered") or [] if isinstance(t, str)]
        if state:
            _remove(path)
        return Ended(laddered) if laddered else None
    volatile = (gate.volatile_keys if gate is not None else None) or VOLATILE_KEYS
    canonical = canonical_input(event.tool_input, tool, volatile)
    found = _push(state, tool, _key(tool, canonical), label(tool, canonical), settings)
    _write(path, state)
    return found


def polls(event: HookEvent, settings: dict[str, Any]) -> bool:
    """A call that waits for something to change: its repeats are the point."""
    folded = (event.tool or "").casefold()
    if folded in POLL_TOOLS or _listed(folded, settings.get("poll_tools")):
        return True
    command = event.tool_input.get("command")
    if folded not in SHELL_TOOLS or not isinstance(command, str):
        return False
    command = command[:MAX_COMMAND]
    if POLL.search(command):
        return True
    for pattern in settings.get("poll_commands") or []:
        try:  # the policy's loader refused a pattern that does not compile or runs away
            if isinstance(pattern, str) and re.search(pattern, command):
                return True
        except re.error:
            continue
    return False


def label(tool: str, given: dict[str, Any]) -> str:
    """The call in a few words: its command, file or search, cut to LABEL characters."""
    if isinstance(given.get("command"), str):
        said = f"{tool} `{' '.join(given['command'].split())}`"
    elif isinstance(given.get("file_path"), str):
        said = f"{tool} of {given['file_path']}"
        rest = {k: v for k, v in given.items() if k in ("offset", "limit")}
        said += f" {json.dumps(rest, sort_keys=True)}" if rest else ""
    elif isinstance(given.get("pattern"), str):
        said = f"{tool} for {given['pattern']!r}"
        where = given.get("path")
        said += f" in {where}" if isinstance(where, str) and where else ""
    else:
        text = json.dumps(given, sort_keys=True, ensure_ascii=False)
        said = f"{tool} {text}" if given else tool
    return said if len(said) <= LABEL else said[: LABEL - 1] + "…"


def _push(
    state: dict[str, Any], tool: str, key: str, named: str, settings: dict[str, Any]
) -> Loop | None:
    """Count one call into `state`; the loop it makes now, with its strike."""
    calls = _count(state, tool, key, named)
    found = _firing(state, calls, settings)
    if found is None:
        return None
    signal, count, threshold, members = found
    ident = f"{signal}:{'|'.join(sorted(c[1] for c in members))}"
    strike = _strike(state, ident, count, threshold)
    if strike >= 2:
        laddered = [t for t in state.get("laddered") or [] if isinstance(t, str)]
        state["laddered"] = sorted({*laddered, tool})
    return Loop(signal, count, threshold, [c[2] for c in members], strike, tool)


def _count(state: dict[str, Any], tool: str, key: str, named: str) -> list[list[Any]]:
    """The runs after this call (`same`, `period`), and the last calls with it."""
    calls = [c for c in state.get("calls") or [] if isinstance(c, list) and len(c) == 3]
    keys = [c[1] for c in calls]
    same = _int(state.get("same"))
    state["same"] = same + 1 if keys and keys[-1] == key else 1
    periods = state.get("period")
    periods = periods if isinstance(periods, list) and len(periods) == len(PERIODS) else [0, 0]
    for n, period in enumerate(PERIODS):
        ok = len(keys) >= period and keys[-period] == key
        periods[n] = _int(periods[n]) + 1 if ok else 0
    state["period"] = periods
    calls = [*calls, [tool, key, named]][-KEPT:]
    state["calls"] = calls
    return calls


def _strike(state: dict[str, Any], ident: str, count: int, threshold: int) -> int:
    """Which strike this firing of loop `ident` is: 1 the first time, 2 once it went on one
    more repeat (cycle) after being named, then one more each further `threshold`; 0 between."""
    strikes = state.get("strikes")
    strikes = strikes if isinstance(strikes, dict) else {}
    prior = strikes.get(ident)
    number, at = prior if isinstance(prior, list) and len(prior) == 2 else (0, 0)
    number, at = _int(number), _int(at)
    if number == 0:
        strike = 1
    elif number == 1 and count >= at + 1:  # it went on after being named: the second strike
        strike = 2
    elif number >= 2 and count >= at + threshold:  # each further threshold: another round
        strike = number + 1
    else:
        return 0
    state["strikes"] = {ident: [strike, count]}  # one loop at a time
    return strike


def _firing(
    state: dict[str, Any], calls: list[list[Any]], settings: dict[str, Any]
) -> tuple[str, int, int, list[list[Any]]] | None:
    repeated = _setting(settings, "repeated_call", REPEATED_CALL)
    if state["same"] >= repeated:
        return "repeated_call", state["same"], repeated, calls[-1:]
    cycles = _setting(settings, "alternation_cycles", ALTERNATION_CYCLES)
    for n, period in enumerate(PERIODS):
        members = calls[-period:]
        distinct = len(members) == period and len({c[1] for c in members}) == period
        done = (state["period"][n] + period) // period
        if distinct and done >= cycles:
            return "alternation", done, cycles, members
    return None


def _edits(event: HookEvent, gate: GateState | None) -> bool:
    """An edit tool, or a shell command that writes a file (not a device: `2>/dev/null`)."""
    folded = (event.tool or "").casefold()
    edit_tools = gate.data.get("edit_tools") if gate is not None else None
    if isinstance(edit_tools, list):
        if folded in {str(t).casefold() for t in edit_tools}:
            return True
    elif folded in EDIT_TOOLS:
        return True
    command = event.tool_input.get("command")
    if folded not in SHELL_TOOLS or not isinstance(command, str):
        return False
    command = command[:MAX_COMMAND]
    if not _MAY_WRITE.search(command):
        return False
    from selfcorrect.hooks.shell_writes import written

    cwd = event.text("cwd") or os.getcwd()
    try:
        paths = written(command, cwd)
    except (ValueError, OSError):
        return False
    return any(not path.startswith("/dev/") for path, _ in paths)


def _key(tool: str, canonical: dict[str, Any]) -> str:
    """The call's identity in the state: its tool and canonical input (the input digest's,
    docs/hooks.md), as two checksums; a collision between an agent's last three calls is
    one in 2**64."""
    text = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    data = f"{tool}\0{text}".encode("utf-8", "surrogatepass")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _listed(folded: str, names: Any) -> bool:
    return isinstance(names, list) and folded in {str(n).casefold() for n in names}


def _setting(settings: dict[str, Any], name: str, default: int) -> int:
    value = settings.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
        return value
    return default


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _path(folder: str, agent: str) -> str | None:
    """The agent's state file; None when `.selfcorrect` or its `loops` is a link (written
    nowhere: the state stays in the folder, docs/containment.md)."""
    name = agent if _SAFE_NAME.fullmatch(agent) else f"agent-{_key('', {'a': agent})}"
    state = os.path.join(folder, ".selfcorrect")
    loops = os.path.join(folder, FOLDER)
    for place in (state, loops):
        if os.path.islink(place):
            return None
    try:
        os.makedirs(loops, exist_ok=True)
    except OSError:
        return None
    return os.path.join(loops, f"{name}.json")


def _read(path: str) -> dict[str, Any]:
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read(MAX_STATE))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == FORMAT else {}


def _write(path: str, state: dict[str, Any]) -> None:
    """Whole or not at all: a temporary file beside it, renamed over it."""
    state["format"] = FORMAT
    temporary = f"{path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(temporary, flags, 0o600)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, ensure_ascii=False, separators=(",", ":"))
        os.replace(temporary, path)
    except OSError:
        _remove(temporary)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        return  # gone already, or not ours to remove: nothing to undo
