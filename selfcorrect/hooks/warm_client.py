"""The agent hooks' side of the warm answerer (docs/hooks.md, "The warm answerer").

A failure hook that starts a fresh interpreter spends most of its time importing the decision
core and Jinja2, every call, while the agent waits. So `session-start` starts one process per
workflow folder that has them loaded (hooks/warm_server.py), and every later deciding hook
hands it its event over a Unix socket in `DIR/.selfcorrect/warm/` and prints its answer. The
answerer runs the very same `run_hook` on the event, so the answer and the files it writes are
those of the hook run in-process.

The answerer is delivery, not a second truth. Whenever a hook gets no answer from it (none
runs, its socket is not a socket we own, it is busy with a run's lock, another version, the
connection refused or reset, closed without a reply, or `hooks.warm_wait_s` passed), the hook
runs in-process as before. An event the answerer took and then did not answer may have been
logged by it, or may be yet: the log holds one entry per event's identity
(io/failure_append.py), so running it again logs it once. No hook waits on the answerer longer
than that, in all. Standard library only, and nothing the gate does not import: this module is
the whole cost of a warm hook.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time

TYPE_CHECKING = False  # not `from typing import`: typing costs the hook 2 ms
if TYPE_CHECKING:
    from typing import Any

# DIR/.selfcorrect/warm/: its own folder, which a run's check of its state files (all regular
# files) does not look into. layout.STATE, spelt here so a warm hook does not import pathlib.
STATE = ".selfcorrect"
HOME = os.path.join(STATE, "warm")
SOCKET = "hooks.sock"
# How long a hook waits on the answerer in all (connect, send, receive): `hooks.warm_wait_s`, as
# the last run wrote it into the gate's state (the policy itself needs a YAML library); then it
# runs in-process. A stopped, slow or dead answerer never holds an agent longer.
WAIT_S = 2.0
MAX_WAIT_S = 50.0  # below the 60 s install gives a deciding hook, whatever the state says
# The session events' own bound: install gives them 10 s, and session-start may start one.
SESSION_WAIT_S = 5.0
GATE = os.path.join(STATE, "gate.json")
MAX_GATE = 16 * 1024 * 1024
MAX_ANSWER = 16 * 1024 * 1024
# What the answerer takes from the hook's environment: the project, as the host names it. A
# hook started under a run's lock (SELFCORRECT_LOCK_HOLDER) runs in-process: the lock is its
# ancestor's, which the answerer is not.
FORWARDED_ENV = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")
HOLDER_ENV = "SELFCORRECT_LOCK_HOLDER"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted there must not hang the hook
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "busybox"})


def socket_path(folder: str) -> str:
    return os.path.join(folder, HOME, SOCKET)


def ask(folder: str, argv: list[str], raw: str) -> tuple[str, str] | None:
    """The answerer's (stdout, stderr) for this hook; None when the hook must run in-process:
    no answerer took the event, or one took it and gave no answer in time (then a note on
    stderr says so; the log's one entry per identity makes running it again safe)."""
    if os.environ.get(HOLDER_ENV):
        return None
    from selfcorrect import __version__

    wait = wait_s(folder)
    request = {
        "kind": "hook",
        "version": __version__,
        "argv": argv,
        "stdin": raw,
        "cwd": os.getcwd(),
        "env": {key: os.environ[key] for key in FORWARDED_ENV if key in os.environ},
        # When this hook stops waiting: an event the answerer finds later than this it drops,
        # as the hook has run it in-process by then (wall clock: the same machine's).
        "expires": time.time() + wait,
    }
    answer = _exchange(folder, request, wait)
    if isinstance(answer, str):
        where = os.path.join(folder, HOME, "last.json")
        sys.stderr.write(f"selfcorrect hook: {answer} (why: {where}); answered in-process\n")
        return None
    if answer is None or answer.get("busy"):
        return None
    out, err = answer.get("stdout"), answer.get("stderr")
    if not isinstance(out, str) or not isinstance(err, str):
        return None
    return out, err


def wait_s(folder: str) -> float:
    """`hooks.warm_wait_s` as the last run wrote it into `.selfcorrect/gate.json`, within
    (0, MAX_WAIT_S]; WAIT_S before any run, or when the state does not read."""
    try:
        fd = os.open(os.path.join(folder, GATE), os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError:
        return WAIT_S
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return WAIT_S
        data = json.loads(os.read(fd, MAX_GATE))
        value = data.get("warm_wait_s") if isinstance(data, dict) else None
    except (OSError, ValueError, RecursionError):
        return WAIT_S
    finally:
        os.close(fd)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return WAIT_S
    return min(float(value), MAX_WAIT_S)


def attach(folder: str, host: int) -> bool:
    """Ask a running answerer to serve this host's session too; False when none answers."""
    request = {"kind": "attach", "host": host, "start": start_time(host)}
    answer = _exchange(folder, request, min(wait_s(folder), SESSION_WAIT_S))
    return isinstance(answer, dict) and bool(answer.get("attached"))


def detach(folder: str, host: int) -> None:
    """This host's session ended: the answerer stops when no attached host remains."""
    _exchange(folder, {"kind": "detach", "host": host}, min(wait_s(folder), SESSION_WAIT_S))


def status(folder: str) -> dict[str, Any] | None:
    """The answerer's pid, attached hosts and how many hooks it answered; None if none runs
    (or none answers within `hooks.warm_wait_s`)."""
    answer = _exchange(folder, {"kind": "status"}, wait_s(folder))
    return answer if isinstance(answer, dict) else None


def start(folder: str, host: int) -> None:
    """Start an answerer for `folder` serving `host`, detached: it outlives this hook, never
    its host (hooks/warm_server.py). The host is named by its pid and, where /proc tells, its
    start time, so that another process given the same pid later is not taken for it."""
    import subprocess

    start = start_time(host)
    named = f"{host}:{start}" if start else str(host)
    subprocess.Popen(
        [sys.executable, "-P", "-m", "selfcorrect.hooks.warm_server", folder, named],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd="/",
        start_new_session=True,  # the host's Ctrl-C goes to the host, which ends the session
        close_fds=True,
    )


def host_pid() -> int:
    """The agent host that runs this hook: our parent, or its parent when the parent is the
    shell the host ran the hook command in (it exits with the hook)."""
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/comm", encoding="utf-8") as handle:
            name = handle.read().strip()
        if name in SHELLS:
            with open(f"/proc/{parent}/stat", "rb") as handle:
                return int(handle.read().rpartition(b")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        pass  # no /proc (macOS): the parent it is
    return parent


def start_time(pid: int) -> str | None:
    """When the process started, in clock ticks since boot (/proc/PID/stat, field 22): with
    its pid, what names one process, as pids are reused. None without /proc (macOS)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[19].decode("ascii")
    except (OSError, IndexError, UnicodeDecodeError):
        return None


def _exchange(folder: str, request: dict[str, Any], wait: float) -> dict[str, Any] | str | None:
    """Send one request, read one reply, all within `wait` seconds. None when no answerer took
    it (none listens, or what is there is not ours); a sentence saying what happened when one
    took it and gave no answer (reset, closed without a reply, the time ran out)."""
    deadline = time.monotonic() + wait
    path = socket_path(folder)
    try:
        state = os.lstat(os.path.join(folder, STATE))
        home = os.lstat(os.path.join(folder, HOME))
        info = os.lstat(path)
    except OSError:
        return None
    if not (stat.S_ISDIR(state.st_mode) and stat.S_ISDIR(home.st_mode)):
        return None  # a link or a file planted there is never followed (docs/containment.md)
    if not stat.S_ISSOCK(info.st_mode):
        return None  # a link or a file planted there is never followed (docs/containment.md)
    if info.st_uid != os.getuid():
        return None
    import socket

    payload = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        try:
            channel.settimeout(max(deadline - time.monotonic(), 0.001))
            _connect(channel, folder)
        except OSError:
            return None  # refused, or no room: no answerer took it (in-process)
        try:
            channel.settimeout(max(deadline - time.monotonic(), 0.001))
            channel.sendall(payload)  # the time out is for the whole of it
            channel.shutdown(socket.SHUT_WR)
            reply = read_all(channel, MAX_ANSWER, deadline)
            answer = json.loads(reply) if reply else None
        except TimeoutError:
            return f"the warm answerer gave no answer within {wait:g} s (hooks.warm_wait_s)"
        except (OSError, ValueError, RecursionError) as exc:
            return f"the warm answerer took the event and gave no answer ({exc})"
    if not isinstance(answer, dict):
        return "the warm answerer took the event and closed without an answer"
    return answer


def _connect(channel: Any, folder: str) -> None:
    """Connect by the socket's name relative to its folder: a Unix socket's path is limited
    to about 100 bytes, a project's path is not."""
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(os.path.join(folder, HOME))
        channel.connect(SOCKET)
    finally:
        os.fchdir(here)
        os.close(here)


def read_all(channel: Any, limit: int, deadline: float | None = None) -> bytes:
    """Everything the other side sends until it closes its end; ValueError past `limit`,
    TimeoutError past `deadline` (time.monotonic()), for all of it."""
    parts: list[bytes] = []
    size = 0
    while True:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out")
            channel.settimeout(left)
        part = channel.recv(65536)
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > limit:
            raise ValueError(f"over {limit} bytes")
        parts.append(part)
