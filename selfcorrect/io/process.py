"""Running a program from the policy: argv only, never a shell, bounded in time (rules §17).

Every command selfcorrect runs (validator checks, fixers, the validator itself, the agent
command) goes through `run_argv`: in its own session so a timeout kills everything it started,
with output in a temp file so it can neither fill memory nor hang us through a pipe held open
by a grandchild.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from msgspec import Struct

TAIL_LINES, TAIL_CHARS = 20, 2000


class Completed(Struct, frozen=True):
    returncode: int | None  # None: it never started, or was killed on timeout
    tail: str  # the last lines of stdout+stderr, raw (the caller cleans it for display)
    timed_out: bool = False
    not_found: bool = False
    error: str | None = None  # why it could not start
    output: bytes = b""  # a fixer's kept output (io/process_tree.py: at most its last 1 MiB)

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe(self, limit: float) -> str:
        """What happened, in words: `exited with code 1`, `timed out after 30s`, …"""
        if self.not_found:
            return "could not start: the program was not found (is it installed?)"
        if self.error:
            return f"could not start: {self.error}"
        if self.timed_out:
            return f"timed out after {limit:g}s and was killed"
        code = self.returncode or 0
        return f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"


def run_argv(
    argv: Sequence[str],
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> Completed:
    """Run `argv`; `stdin` is its standard input (from a temp file too: a command that never
    reads it cannot block us), else none."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as given:
        if stdin is not None:
            given.write(stdin)
            given.seek(0)
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                shell=False,
                stdin=subprocess.DEVNULL if stdin is None else given,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=None if env is None else {**os.environ, **env},
            )
        except FileNotFoundError:
            return Completed(None, "", not_found=True)
        except OSError as exc:
            return Completed(None, "", error=exc.strerror or str(exc))
        except ValueError:  # a NUL byte in an argument: no program can receive it
            return Completed(None, "", error="an argument contains a NUL byte")
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return Completed(None, tail(out), timed_out=True)
        except BaseException:  # e.g. Ctrl-C: in its own session, the command would outlive us
            kill_group(proc)
            raise
        return Completed(code, tail(out))


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and everything it started (its own session), then reap it."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - no process groups (Windows)
            proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def tail(out: IO[bytes]) -> str:
    """The last lines (at most TAIL_LINES lines, TAIL_CHARS characters) of the output file."""
    size = out.seek(0, os.SEEK_END)
    out.seek(max(0, size - 8 * TAIL_CHARS))
    return tail_of(out.read())


def tail_of(output: bytes) -> str:
    """The last lines (at most TAIL_LINES lines, TAIL_CHARS characters) of `output`."""
    lines = output[-8 * TAIL_CHARS :].decode("utf-8", "replace").rstrip().split("\n")
    return "\n".join(lines[-TAIL_LINES:])[-TAIL_CHARS:]
