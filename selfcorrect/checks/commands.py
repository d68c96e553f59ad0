"""Command checks (SPEC §14): policy argv, never a shell; a non-zero exit is an issue."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from selfcorrect.checks._common import (
    TAIL_CHARS,
    TAIL_LINES,
    clean,
    inside,
    severity_of,
)
from selfcorrect.core.findings import Finding
from selfcorrect.core.policy import Policy


def command_findings(
    commands: Iterable[Mapping[str, Any]] | None, root: Path, policy: Policy, *, timeout_s: float
) -> list[Finding]:
    """Run each `{type, command, target?, timeout_s?}`; a failure is an issue of that type."""
    findings: list[Finding] = []
    for entry in commands or ():
        type_, argv = str(entry["type"]), [str(arg) for arg in entry["command"]]
        target = entry.get("target")
        severity, shown = severity_of(policy, type_), clean(shlex.join(argv))
        problem = _target_problem(root, target)
        if problem is None and target is None and any("{target}" in arg for arg in argv):
            problem = "its argv uses {target} but the check sets no target"
        if problem is not None:
            findings.append(Finding(type_, severity, f"check `{shown}` not run: {problem}"))
            continue
        if isinstance(target, str):
            argv = [arg.replace("{target}", target) for arg in argv]
        limit = float(entry.get("timeout_s") or timeout_s)
        outcome = _run(argv, root, limit)
        if outcome is not None:
            description = f"check `{clean(shlex.join(argv))}` {outcome}"
            findings.append(Finding(type_, severity, description, target=target))
    return findings


def _target_problem(root: Path, target: Any) -> str | None:
    """Why a target may not be used (in argv or as the issue's target), or None."""
    if target is None:
        return None
    if not isinstance(target, str) or not target.strip():
        return "the target must be a non-empty path"
    if target.startswith("-"):  # would be read as an option by the program (§17)
        return f"target {clean(target)!r} refused: it starts with '-'"
    path = inside(root, target)
    if path is None:
        return f"target {clean(target)!r} refused: it is absolute or leaves the project root"
    if not path.exists():
        return f"target {clean(target)!r} refused: no such path in the project"
    return None


def _run(argv: list[str], root: Path, limit: float) -> str | None:
    """None when the command exits 0; else what went wrong, with the output's tail."""
    # Output goes to a file, not a pipe: it cannot fill memory, and a grandchild that keeps the
    # pipe open cannot hang us after the command exits or is killed.
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=root,
                shell=False,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except FileNotFoundError:
            return f"could not start: program {clean(argv[0])!r} not found (is it installed?)"
        except OSError as exc:
            return f"could not start: {clean(exc.strerror or str(exc))}"
        try:
            code = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            status = f"timed out after {limit:g}s and was killed"
        except BaseException:  # e.g. Ctrl-C: in its own session, the command would outlive us
            _kill_group(proc)
            raise
        else:
            if code == 0:
                return None
            status = f"exited with code {code}" if code > 0 else f"was killed by signal {-code}"
        return f"{status}; output tail:\n{_tail(out)}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and everything it started (its own session), then reap it."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - no process groups (Windows)
            proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def _tail(out: IO[bytes]) -> str:
    """The last lines (at most TAIL_LINES lines, TAIL_CHARS characters) of the output file."""
    size = out.seek(0, os.SEEK_END)
    out.seek(max(0, size - 8 * TAIL_CHARS))
    lines = clean(out.read().decode("utf-8", "replace")).rstrip().split("\n")
    tail = "\n".join(lines[-TAIL_LINES:])[-TAIL_CHARS:]
    return tail if tail.strip() else "(no output)"
