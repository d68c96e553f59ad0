"""A fixer's whole process tree, contained: nothing it starts outlives it (docs/containment.md).

A fixer is the project's own code run on the project, and a hostile or careless one can detach
(`cmd &`, `setsid cmd`, a double fork) so that a child edits files after the changes were
measured, or keep running after a timeout. So a fixer never runs directly under selfcorrect: it
runs under a small keeper process (the `_KEEPER` program below, a fresh interpreter with no
site-packages) that

- is the fixer tree's child subreaper (Linux `PR_SET_CHILD_SUBREAPER`), so a descendant that
  detaches is reparented to the keeper, never to init: it stays findable and reapable;
- starts the fixer in its own process group;
- when the fixer exits (or on SIGTERM: a timeout, or selfcorrect itself going away, through
  `PR_SET_PDEATHSIG`), kills every remaining descendant (its process group, and every process
  whose parent chain in /proc leads to the keeper), reaps them all, and only then reports the
  fixer's status on a pipe of its own and exits.

Why a keeper and not selfcorrect itself as the subreaper: the flag is per process, and
selfcorrect also runs git (GitPython), the validator and, in `watch`, other threads. As the
subreaper it would inherit their orphans too, and could not tell them from the fixer's by
parentage. The keeper has no other children, so "my descendants" is exactly "the fixer's".
Elsewhere than Linux the keeper falls back to killing the fixer's process group: a `setsid`
grandchild can escape there.

A fixer can kill its keeper (`kill -9 $PPID`). So for as long as a fixer runs, selfcorrect is
a subreaper too (`_adopting`): what the dead keeper leaves is reparented to selfcorrect, not to
init, and every process adopted that way, with all it started, is killed and reaped before the
changes are measured. (Other threads of selfcorrect start no process while a fixer runs.)

The fixer's output (stdout and stderr) is read from a pipe as it comes: only the last
`OUTPUT_CAP` bytes are kept in memory, nothing goes to disk, so a fixer printing without end
costs neither memory nor temp space. The pipe's end arrives once the keeper has ended the tree.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from selfcorrect.io.process import Completed, tail_of

OUTPUT_CAP = 1 << 20  # the last 1 MiB of a fixer's output is kept
_GRACE_S = 10.0  # after SIGTERM, how long the keeper gets to end the tree before SIGKILL

_KEEPER = r"""
import ctypes, os, signal, sys
status_fd, argv = int(sys.argv[1]), sys.argv[2:]
# Signals are taken one at a time with sigwaitinfo, never by a handler: no moment where a
# SIGTERM could cut the cleanup short. Blocked first, before anything can send one.
watched = {signal.SIGTERM, signal.SIGINT, signal.SIGCHLD}
signal.pthread_sigmask(signal.SIG_BLOCK, watched)
parent = os.getppid()
subreaper = False
if sys.platform.startswith("linux"):
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        subreaper = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG: selfcorrect went away
    except (OSError, AttributeError):
        pass

def report(text):
    os.write(status_fd, (text + "\n").encode("utf-8", "replace")[:4000])

def descendants(me):
    children = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as handle:
                ppid = int(handle.read().rpartition(b")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [me]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found

def end_tree(group):
    me = os.getpid()
    while True:
        for pid in descendants(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if group:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return

# The fixer gets default dispositions and an empty mask (Python ignores SIGPIPE; we block
# three), and never the status pipe.
default = set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
os.set_inheritable(status_fd, False)
pid, outcome = None, "stopped"
if os.getppid() == parent:
    try:
        pid = os.posix_spawnp(
            argv[0], argv, os.environ, setpgroup=0, setsigdef=default, setsigmask=()
        )
    except FileNotFoundError:
        outcome = "notfound"
    except OSError as exc:
        outcome = "error " + (exc.strerror or str(exc))
if pid is not None:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            outcome = "exit %d" % os.waitstatus_to_exitcode(status)
            break
        if signal.sigwaitinfo(watched).si_signo != signal.SIGCHLD:
            break  # SIGTERM: the timeout, or selfcorrect is gone
end_tree(pid)
report(outcome + (" contained" if subreaper else " group-only"))
"""


def run_contained(argv: Sequence[str], cwd: Path, timeout: float) -> Completed:
    """Run a fixer under the keeper; return when it and every descendant are gone."""
    with _adopting():
        return _run_kept(argv, cwd, timeout)


def _run_kept(argv: Sequence[str], cwd: Path, timeout: float) -> Completed:
    out_r, out_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _KEEPER, str(status_w), *argv],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=out_w,
            pass_fds=(status_w,),
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        for fd in (out_r, out_w, status_r, status_w):
            os.close(fd)
        why = "an argument contains a NUL byte" if isinstance(exc, ValueError) else str(exc)
        return Completed(None, "", error=why)
    os.close(out_w)
    os.close(status_w)
    try:
        kept, status, timed_out = _collect(keeper, out_r, status_r, timeout)
    except BaseException:  # e.g. Ctrl-C: end the tree before we go
        _stop(keeper)
        raise
    finally:
        os.close(out_r)
        os.close(status_r)
    text = tail_of(bytes(kept))
    if not status:  # the keeper died before its report (the fixer killed it?)
        _kill_session(keeper.pid)
    if status.startswith("notfound"):
        return Completed(None, "", not_found=True)
    if status.startswith("error "):
        return Completed(None, text, error=status.removeprefix("error "))
    if timed_out:
        return Completed(None, text, timed_out=True, output=bytes(kept))
    if not status.startswith("exit "):
        return Completed(None, text, error="the fixer's keeper ended without its status")
    return Completed(int(status.split()[1]), text, output=bytes(kept))


def _collect(
    keeper: subprocess.Popen[bytes], out_r: int, status_r: int, timeout: float
) -> tuple[bytearray, str, bool]:
    """Read output (keeping the last OUTPUT_CAP bytes) and the status until the keeper is done."""
    kept, status = bytearray(), bytearray()
    deadline, timed_out, killed = time.monotonic() + timeout, False, False
    open_fds = {out_r, status_r}
    while status_r in open_fds:
        wait = deadline - time.monotonic()
        if wait <= 0:
            if not timed_out:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    keeper.send_signal(signal.SIGTERM)
            elif not killed:
                killed = True
                _kill(keeper)
                break
            deadline, wait = time.monotonic() + _GRACE_S, _GRACE_S
        ready, _, _ = select.select(list(open_fds), [], [], wait)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.discard(fd)
            elif fd == out_r:
                kept += chunk
                if len(kept) > 2 * OUTPUT_CAP:
                    del kept[:-OUTPUT_CAP]
            else:
                status += chunk
    keeper.wait()
    if out_r in open_fds:  # the keeper is gone; take what is buffered, wait for no one else
        os.set_blocking(out_r, False)
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(out_r, 1 << 16):
                kept += chunk
                del kept[:-OUTPUT_CAP]
    del kept[:-OUTPUT_CAP]
    return kept, status.decode("utf-8", "replace").strip(), timed_out


_PR_SET_CHILD_SUBREAPER = 36


@contextlib.contextmanager
def _adopting() -> Iterator[None]:
    """Be a subreaper for the block (Linux), then end every process adopted meanwhile: the
    orphans of a keeper the fixer killed, and all they started."""
    prctl = _prctl()
    me = os.getpid()
    before = set(_children(me))
    adopting = prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    try:
        yield
    finally:
        if adopting:
            _end_adopted(me, before)
            prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _end_adopted(me: int, before: set[int]) -> None:
    """Kill and reap our children that were not ours before (adopted orphans), and their
    descendants, until none is left: each one killed may leave orphans of its own to us."""
    for _ in range(1000):
        adopted = [pid for pid in _children(me) if pid not in before]
        if not adopted:
            return
        for pid in adopted:
            for victim in [pid, *_descendants(pid)]:
                with contextlib.suppress(OSError):
                    os.kill(victim, signal.SIGKILL)
        for pid in adopted:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _processes() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, the fields of /proc/<pid>/stat after its name) of every process we can read."""
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    yield int(name), handle.read().rpartition(b")")[2].split()
            except OSError:
                continue


def _parents() -> dict[int, list[int]]:
    """Every process's children, from /proc ({} where there is none)."""
    children: dict[int, list[int]] = {}
    for pid, fields in _processes():
        with contextlib.suppress(ValueError, IndexError):
            children.setdefault(int(fields[1]), []).append(pid)
    return children


def _children(pid: int) -> list[int]:
    return _parents().get(pid, [])


def _descendants(pid: int) -> list[int]:
    tree, found, todo = _parents(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _kill_session(sid: int) -> None:
    """Kill every process of the keeper's session: the fixer and all it started that did not
    call setsid. A session's id stays reserved while it has members, so none is a stranger."""
    for pid, fields in _processes():
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(fields[3]) == sid:
                os.kill(pid, signal.SIGKILL)


def _stop(keeper: subprocess.Popen[bytes]) -> None:
    """Ask the keeper to end the tree; kill it if it does not within the grace period."""
    with contextlib.suppress(ProcessLookupError):
        keeper.send_signal(signal.SIGTERM)
    try:
        keeper.wait(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:
        _kill(keeper)


def _kill(keeper: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(keeper.pid, signal.SIGKILL)
    keeper.wait()
