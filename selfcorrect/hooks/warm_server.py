"""The warm answerer: one process per workflow folder that answers the deciding hooks with the
decision core already loaded (docs/hooks.md, "The warm answerer").

`python -P -m selfcorrect.hooks.warm_server DIR HOST_PID[:START]`, started by the `session-start`
hook (hooks/warm_client.py). It listens on `DIR/.selfcorrect/warm/hooks.sock` (mode 0600) and
runs each event it is handed through `run_hook`, exactly as the hook would in-process, one at a
time, with the hook's stdin, working folder and project variables. Failure hooks that are
waiting together (parallel subagents failing in one burst) are each logged, then decided once
(`failure.answer_many`), as hooks run in-process would have decided had their appends come
first. It never outlives what it
serves (docs/containment.md); it stops, removing its socket, when
- every host attached to it (the agent host of each session that started or joined it) has
  exited, or ended its session (`session-end`);
- no hook came for IDLE_S (SELFCORRECT_WARM_IDLE_S overrides it);
- its socket was removed or replaced (the folder was deleted, or a second answerer took over);
- selfcorrect was upgraded or edited under it: a hook of another version, or any of its loaded
  modules' files changed, is not answered (the hook runs in-process) and it stops.
An event it cannot take at once (the folder's lock is held by a run) is handed back: the hook
runs in-process, waiting for the lock as it always did. It is delivery, not a second truth: a
hook it does not answer within `hooks.warm_wait_s` runs in-process, and an event it finds after
that (it was stopped, or slow) is dropped unread; one it took as the hook gave up is logged once
all the same, the log holding one entry per event's identity (io/failure_append.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import selectors
import signal
import socket
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from selfcorrect import __version__
from selfcorrect.errors import SelfcorrectError
from selfcorrect.hooks import dispatch, warm_client
from selfcorrect.io import platform
from selfcorrect.io.atomic import replace_file

IDLE_S = 1800.0
TICK_S = 0.5  # how often hosts, the socket and idleness are looked at
MAX_REQUEST = 9 * 1024 * 1024  # an event (at most 8 MiB) and its envelope
READ_S = 5.0  # a client that connects and sends nothing is dropped
# Hooks waiting together are answered within this, or the answerer stops. Each hook stops
# waiting after hooks.warm_wait_s and runs in-process (hooks/warm_client.py); this spares the
# hooks after them that wait, each, on an answerer that is wedged.
WEDGED_S = 45
LOCK_NAME = "answerer.lock"  # in DIR/.selfcorrect/warm/: one answerer per folder
LAST = "last.json"  # in DIR/.selfcorrect/warm/: the last answerer's life, for a person to read
# Loaded before the first hook comes, so that none pays for them.
PRELOAD = (
    "selfcorrect.hooks.failure",
    "selfcorrect.hooks.batch",
    "selfcorrect.hooks.stop",
    "selfcorrect.hooks.compact",
    "selfcorrect.commands.run",
    "selfcorrect.io.failure_append",
    "selfcorrect.io.prompts",
    "jinja2.sandbox",
)


class Answerer:
    """The listening socket, the hosts served, and why to stop."""

    def __init__(self, folder: str, host: int, idle_s: float, start: str | None = None) -> None:
        self.folder = os.path.abspath(folder)
        self.state = os.path.join(self.folder, warm_client.STATE)
        self.home = os.path.join(self.folder, warm_client.HOME)
        # Each host by its pid and start time (None: not known), so a reused pid is not it.
        self.hosts: dict[int, str | None] = {host: start}
        self.idle_s = idle_s
        self.wedged_s = int(os.environ.get("SELFCORRECT_WARM_WEDGED_S", WEDGED_S))
        self.served = 0
        self.why = "stopped"  # why it stopped, for DIR/.selfcorrect/warm/last.json
        self.started = time.time()
        self.last = time.monotonic()
        self.code = _code_files()
        self.code_changed: bool | None = None
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.inode = self._bind()

    def _bind(self) -> int:
        """Bind by the relative name (a socket's path is limited to about 100 bytes), in a
        state folder that is a real folder, replacing only a socket left by a dead answerer
        (we hold the folder's answerer lock, so no live one owns it)."""
        with _in_folder(self.home):
            with contextlib.suppress(FileNotFoundError):
                info = os.lstat(warm_client.SOCKET)
                if not stat.S_ISSOCK(info.st_mode):
                    raise SystemExit(f"{self.home}/{warm_client.SOCKET} is not a socket")
                os.unlink(warm_client.SOCKET)
            mask = os.umask(0o077)  # only our user may connect
            try:
                self.listener.bind(warm_client.SOCKET)
            finally:
                os.umask(mask)
            self.listener.listen(64)
            return os.lstat(warm_client.SOCKET).st_ino

    def serve(self) -> None:
        self.listener.setblocking(False)
        with selectors.DefaultSelector() as selector:
            selector.register(self.listener, selectors.EVENT_READ)
            while self._wanted():
                if selector.select(TICK_S):
                    signal.alarm(self.wedged_s)
                    try:
                        self._answer_waiting()
                    except Exception as exc:  # say why in last.json; the hooks go in-process
                        self.why = f"an internal error: {type(exc).__name__}: {exc}"
                        raise
                    signal.alarm(0)

    def close(self) -> None:
        """Say in `last.json` what it did, remove the socket when it is still ours, then stop
        listening: a hook that finds no answerer finds its record written."""
        record = {
            "pid": os.getpid(),
            "started": _utc(self.started),
            "stopped": _utc(time.time()),
            "served": self.served,
            "why": self.why,
        }
        with contextlib.suppress(OSError, SelfcorrectError):
            data = (json.dumps(record, indent=2) + "\n").encode("utf-8")
            replace_file(Path(self.home) / LAST, data)
        with contextlib.suppress(OSError), _in_folder(self.home):
            if os.lstat(warm_client.SOCKET).st_ino == self.inode:
                os.unlink(warm_client.SOCKET)
        self.listener.close()

    def _wanted(self) -> bool:
        alive = {host: start for host, start in self.hosts.items() if _alive(host, start)}
        if self.hosts and not alive:
            self.why = "its host exited"
        self.hosts = alive
        if not self.hosts:
            return False
        if time.monotonic() - self.last > self.idle_s:
            self.why = f"no hook came for {self.idle_s:g} s"
            return False
        try:
            ours = os.lstat(warm_client.socket_path(self.folder)).st_ino == self.inode
        except OSError:
            ours = False
        if not ours:
            self.why = "its socket was removed or replaced"
        return ours

    def _code_changed(self) -> bool:
        """Whether a module file it loaded changed since it started (one loaded since is
        remembered); looked at once per wake-up, not once per hook."""
        if self.code_changed is None:
            now = _code_files()
            self.code_changed = any(self.code.get(path, seen) != seen for path, seen in now.items())
            self.code = {**now, **self.code}
        return self.code_changed

    def _answer_waiting(self) -> None:
        """Every hook waiting now, answered: the failure hooks of one folder that came
        together with one decision (a burst of parallel subagents), the rest one by one."""
        waiting: list[tuple[socket.socket, dict[str, Any]]] = []
        while True:
            try:
                connection, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            request = _read(connection)
            if request is None:
                connection.close()
            else:
                waiting.append((connection, request))
        self.code_changed = None  # not looked at yet in this wake-up
        replies: list[dict[str, Any] | None] = [None] * len(waiting)
        failures: dict[tuple[Any, ...], list[int]] = {}
        now = time.time()
        for at, (_, request) in enumerate(waiting):
            if _expired(request, now):
                continue  # its hook stopped waiting and ran in-process: nothing to answer
            if _is_failure(request) and self._takes(request):
                key = (*request["argv"], request["cwd"], _env(request))
                failures.setdefault(key, []).append(at)
            else:
                replies[at] = self._reply(request)
        for key, group in failures.items():
            answered = self._failures(key, [waiting[at][1] for at in group])
            for at, reply in zip(group, answered, strict=True):
                replies[at] = reply
        for (connection, _), reply in zip(waiting, replies, strict=True):
            with connection:
                if reply is not None:
                    with contextlib.suppress(OSError):
                        connection.sendall(json.dumps(reply, ensure_ascii=False).encode("utf-8"))

    def _reply(self, request: dict[str, Any]) -> dict[str, Any] | None:
        kind = request.get("kind")
        host = request.get("host")
        if kind == "attach" and isinstance(host, int) and host > 1:
            start = request.get("start")
            self.hosts[host] = start if isinstance(start, str) else None
            return {"attached": True}
        if kind == "detach" and isinstance(host, int):
            self.hosts.pop(host, None)
            if not self.hosts:
                self.why = "its session ended"
            return {"detached": True}
        if kind == "status":
            hosts = sorted(self.hosts)
            return {"pid": os.getpid(), "hosts": hosts, "served": self.served}
        if kind == "hook":
            return self._hook(request) if self._takes(request) else {"busy": True}
        return None

    def _takes(self, request: dict[str, Any]) -> bool:
        """Whether a hook request is well formed, of our version and code, and comes while
        no run holds the folder (else it is handed back: the hook runs in-process)."""
        argv: Any = request.get("argv")
        raw, cwd, env = (request.get(k) for k in ("stdin", "cwd", "env"))
        well_formed = (
            isinstance(argv, list)
            and len(argv) == 3
            and all(isinstance(a, str) for a in argv)
            and isinstance(raw, str)
            and isinstance(cwd, str)
            and isinstance(env, dict)
            and all(k in warm_client.FORWARDED_ENV and isinstance(v, str) for k, v in env.items())
        )
        if not well_formed:
            return False
        if request.get("version") != __version__ or self._code_changed():
            self.hosts.clear()  # upgraded or edited under us: stop after handing it back
            self.why = "selfcorrect changed under it (another version, or an edited module)"
            return False
        if not self._serves(argv[2]):
            return False  # another folder's hook (a link to ours, or a request made by hand)
        return not os.path.lexists(os.path.join(self.folder, warm_client.STATE, "folder.lock"))

    def _serves(self, folder: str) -> bool:
        """Whether `folder` is the very folder it serves (the same file, not the same name)."""
        try:
            given, ours = os.stat(folder), os.stat(self.folder)
        except OSError:
            return False
        return (given.st_dev, given.st_ino) == (ours.st_dev, ours.st_ino) and folder == self.folder

    def _hook(self, request: dict[str, Any]) -> dict[str, Any]:
        """One hook, run as `run_hook` runs it in-process."""
        self.last = time.monotonic()
        self.served += 1
        out, err = io.StringIO(), io.StringIO()
        with _as_hook(request, io.StringIO(request["stdin"]), out, err) as entered:
            if entered:
                dispatch.run_hook(request["argv"], forward=False)
        if not entered:
            return {"busy": True}
        return {"stdout": out.getvalue(), "stderr": err.getvalue()}

    def _failures(self, key: tuple[Any, ...], requests: list[dict[str, Any]]) -> list[Any]:
        """Failure hooks of one folder that came together: logged each, decided once."""
        if len(requests) == 1:
            return [self._hook(requests[0])]
        self.last = time.monotonic()
        self.served += len(requests)
        host, name, folder = key[:3]
        raws = [request["stdin"] for request in requests]
        err = io.StringIO()
        with _as_hook(requests[0], io.StringIO(), io.StringIO(), err) as entered:
            if entered:
                outs = dispatch.run_failure_hooks(host, name, folder, raws)
        if not entered:
            return [{"busy": True}] * len(requests)
        return [{"stdout": out, "stderr": err.getvalue()} for out in outs]


def _expired(request: dict[str, Any], now: float) -> bool:
    """A hook whose wait ran out before it was reached (the answerer was stopped or slow): it
    has run in-process, and answering it again would only do its work twice."""
    expires = request.get("expires")
    return request.get("kind") == "hook" and isinstance(expires, int | float) and now > expires


def _is_failure(request: dict[str, Any]) -> bool:
    argv = request.get("argv")
    return (
        request.get("kind") == "hook"
        and isinstance(argv, list)
        and len(argv) == 3
        and argv[1] in ("post-tool-use-failure", "after-tool")
    )


def _env(request: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(request["env"].items()))


@contextlib.contextmanager
def _as_hook(
    request: dict[str, Any], stdin: io.StringIO, out: io.StringIO, err: io.StringIO
) -> Iterator[bool]:
    """Within the block, this process is the hook of `request`: its working folder, its
    project variables, its stdin, its stdout and stderr captured. Yields False when the hook's
    working folder cannot be entered (gone, or not ours): the hook runs in-process."""
    try:
        os.chdir(request["cwd"])
    except OSError:
        yield False
        return
    saved_env = {key: os.environ.get(key) for key in warm_client.FORWARDED_ENV}
    streams = sys.stdin, sys.stdout, sys.stderr
    try:
        for key in warm_client.FORWARDED_ENV:
            os.environ.pop(key, None)
        os.environ.update(request["env"])
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        yield True
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        for key, value in saved_env.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value
        os.chdir("/")


def _read(connection: socket.socket) -> dict[str, Any] | None:
    """One request, or None for what is not one (closed without a word)."""
    connection.setblocking(True)
    connection.settimeout(READ_S)
    try:
        request = json.loads(warm_client.read_all(connection, MAX_REQUEST))
    except (OSError, ValueError, RecursionError):
        return None
    return request if isinstance(request, dict) else None


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _alive(pid: int, start: str | None) -> bool:
    """Is the host still running? Not when no process holds its pid, when another user's does
    (the host was ours: it exited, and the pid was given again), when it exited and is not
    reaped yet (a zombie), or when the process holding the pid started at another time than the
    host did (the pid was reused). Without /proc, a process holding the pid is taken for it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process holds the pid: ours exited
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
    except OSError:
        return True  # no /proc: alive as far as we can tell
    if not fields or fields[0] == b"Z":
        return False
    return start is None or (len(fields) > 19 and fields[19].decode("ascii", "replace") == start)


def _code_files() -> dict[str, tuple[int, int]]:
    """Each loaded selfcorrect module's file and its (size, change time)."""
    found = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and (name == "selfcorrect" or name.startswith("selfcorrect.")):
            try:
                info = os.stat(path)
            except OSError:
                continue
            found[path] = (info.st_size, info.st_mtime_ns)
    return found


@contextlib.contextmanager
def _in_folder(path: str) -> Iterator[None]:
    """Work inside `path`, a real folder (never a link to one), then come back to "/"."""
    flags = os.O_RDONLY | os.O_DIRECTORY | platform.O_NOFOLLOW
    handle = os.open(path, flags)
    try:
        os.fchdir(handle)
        yield
    finally:
        os.close(handle)
        os.chdir("/")


def main(argv: list[str]) -> int:
    pid, _, start = argv[1].partition(":") if len(argv) == 2 else ("", "", "")
    if not pid.isdigit() or not (start.isdigit() or not start):
        sys.stderr.write("usage: python -m selfcorrect.hooks.warm_server DIR HOST_PID[:START]\n")
        return 2
    folder, host = os.path.abspath(argv[0]), int(pid)
    from selfcorrect.io.safe_paths import ensure_dir

    home = os.path.join(folder, warm_client.HOME)
    ensure_dir(Path(home))  # never through a link
    lock = os.open(
        os.path.join(home, LOCK_NAME),
        os.O_RDWR | os.O_CREAT | platform.O_NOFOLLOW | platform.O_CLOEXEC,
        0o600,
    )
    if not platform.lock(lock, blocking=False):
        return 0  # an answerer serves this folder already
    for name in PRELOAD:
        __import__(name)
    idle = float(os.environ.get("SELFCORRECT_WARM_IDLE_S", IDLE_S))
    answerer = Answerer(folder, host, idle, start or None)

    def terminated(*_: object) -> None:
        answerer.why = "it was sent SIGTERM"
        sys.exit(0)

    def wedged(*_: object) -> None:
        answerer.why = f"hooks waited over {answerer.wedged_s} s for it"
        sys.exit(0)

    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGALRM, wedged)
    try:
        answerer.serve()
    finally:
        answerer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
