"""The agent hooks' side of the warm answerer (docs/hooks.md, "The warm answerer").

A failure hook that starts a fresh interpreter spends most of its time importing the decision
core and Jinja2, every call, while the agent waits. So `session-start` starts one process per
workflow folder that has them loaded (hooks/warm_server.py), and every later deciding hook
hands it its event over a Unix socket in `DIR/.selfcorrect/warm/` and prints its answer. The
answerer runs the very same `run_hook` on the event, so the answer and the files it writes are
those of the hook run in-process.

Whenever the answerer cannot take the event (none runs, its socket is not a socket we own, it
is busy with a run's lock, another version), the hook runs in-process as before: the answerer
only ever makes a hook faster. Standard library only, and nothing the gate does not import:
this module is the whole cost of a warm hook.
"""

from __future__ import annotations

import json
import os
import stat
import sys

TYPE_CHECKING = False  # not `from typing import`: typing costs the hook 2 ms
if TYPE_CHECKING:
    from typing import Any

# DIR/.selfcorrect/warm/: its own folder, which a run's check of its state files (all regular
# files) does not look into. layout.STATE, spelt here so a warm hook does not import pathlib.
STATE = ".selfcorrect"
HOME = os.path.join(STATE, "warm")
SOCKET = "hooks.sock"
CONNECT_S = 1.0
# How long a hook waits for the answer once the answerer has the event: the host's own timeout
# (60 s, as install writes it) less a margin. The answerer waits 10 s at most for a lock, and
# stops itself when hooks wait on it for 45 s (hooks/warm_server.py).
ANSWER_S = 55.0
MAX_ANSWER = 16 * 1024 * 1024
# What the answerer takes from the hook's environment: the project, as the host names it. A
# hook started under a run's lock (SELFCORRECT_LOCK_HOLDER) runs in-process: the lock is its
# ancestor's, which the answerer is not.
FORWARDED_ENV = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")
HOLDER_ENV = "SELFCORRECT_LOCK_HOLDER"
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "busybox"})


class NoAnswer(Exception):
    """The answerer took the event and gave no answer: it may have logged it, so the hook
    must not run it again in-process."""


def socket_path(folder: str) -> str:
    return os.path.join(folder, HOME, SOCKET)


def ask(folder: str, argv: list[str], raw: str) -> tuple[str, str] | None:
    """The answerer's (stdout, stderr) for this hook; None when the hook must run in-process
    (no answerer, or it did not take the event). Raises NoAnswer when it took the event and
    did not answer."""
    if os.environ.get(HOLDER_ENV):
        return None
    from selfcorrect import __version__

    request = {
        "kind": "hook",
        "version": __version__,
        "argv": argv,
        "stdin": raw,
        "cwd": os.getcwd(),
        "env": {key: os.environ[key] for key in FORWARDED_ENV if key in os.environ},
    }
    answer = _exchange(folder, request, taken_matters=True)
    if answer is None or answer.get("busy"):
        return None
    out, err = answer.get("stdout"), answer.get("stderr")
    if not isinstance(out, str) or not isinstance(err, str):
        raise NoAnswer("the warm answerer's reply was not an answer")
    return out, err


def attach(folder: str, host: int) -> bool:
    """Ask a running answerer to serve this host's session too; False when none answers."""
    answer = _exchange(folder, {"kind": "attach", "host": host})
    return bool(answer and answer.get("attached"))


def detach(folder: str, host: int) -> None:
    """This host's session ended: the answerer stops when no attached host remains."""
    _exchange(folder, {"kind": "detach", "host": host})


def status(folder: str) -> dict[str, Any] | None:
    """The answerer's pid, attached hosts and how many hooks it answered; None if none runs."""
    return _exchange(folder, {"kind": "status"})


def start(folder: str, host: int) -> None:
    """Start an answerer for `folder` serving `host`, detached: it outlives this hook, never
    its host (hooks/warm_server.py)."""
    import subprocess

    subprocess.Popen(
        [sys.executable, "-P", "-m", "selfcorrect.hooks.warm_server", folder, str(host)],
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


def _exchange(
    folder: str, request: dict[str, Any], taken_matters: bool = False
) -> dict[str, Any] | None:
    """Send one request, read one reply. None when no answerer took it; NoAnswer (when
    `taken_matters`) when one took it and did not reply."""
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
        channel.settimeout(CONNECT_S)
        try:
            _connect(channel, folder)
            channel.sendall(payload)
            channel.shutdown(socket.SHUT_WR)
        except OSError:
            return None  # a socket no answerer listens on any more: in-process
        channel.settimeout(ANSWER_S)
        try:
            reply = read_all(channel, MAX_ANSWER)
            answer = json.loads(reply) if reply else None
        except (OSError, ValueError) as exc:
            if taken_matters:
                raise NoAnswer(
                    f"the warm answerer took the event and did not answer ({exc})"
                ) from None
            return None
    if not isinstance(answer, dict):
        if taken_matters:
            raise NoAnswer("the warm answerer took the event and closed without an answer")
        return None
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


def read_all(channel: Any, limit: int) -> bytes:
    """Everything the other side sends until it closes its end; ValueError past `limit`."""
    parts: list[bytes] = []
    size = 0
    while True:
        part = channel.recv(65536)
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > limit:
            raise ValueError(f"over {limit} bytes")
        parts.append(part)
