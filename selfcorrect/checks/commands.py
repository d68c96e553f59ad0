"""Command checks (rules §14): policy argv, never a shell; a non-zero exit is an issue."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from selfcorrect.checks._common import (
    clean,
    inside,
    severity_of,
)
from selfcorrect.checks.findings import Finding
from selfcorrect.core.policy import Policy
from selfcorrect.io.process import run_argv


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
            command = clean(shlex.join(argv))
            description = f"check `{command}` {outcome}"
            # The output and timing vary between runs; the failing command is the issue.
            key = f"command {command}"
            findings.append(Finding(type_, severity, description, target=target, key=key))
    return findings


def _target_problem(root: Path, target: Any) -> str | None:
    """Why a target may not be used (in argv or as the issue's target), or None."""
    if target is None:
        return None
    if not isinstance(target, str) or not target.strip():
        return "the target must be a non-empty path"
    if target.startswith("-"):  # would be read as an option by the program (rules §17)
        return f"target {clean(target)!r} refused: it starts with '-'"
    path = inside(root, target)
    if path is None:
        return f"target {clean(target)!r} refused: it is absolute or leaves the project root"
    if not path.exists():
        return f"target {clean(target)!r} refused: no such path in the project"
    return None


def _run(argv: list[str], root: Path, limit: float) -> str | None:
    """None when the command exits 0; else what went wrong, with the output's tail."""
    done = run_argv(argv, root, limit)
    if done.ok:
        return None
    if done.not_found:
        return f"could not start: program {clean(argv[0])!r} not found (is it installed?)"
    if done.error:
        return f"could not start: {clean(done.error)}"
    shown = clean(done.tail).rstrip()
    return f"{done.describe(limit)}; output tail:\n{shown if shown.strip() else '(no output)'}"
