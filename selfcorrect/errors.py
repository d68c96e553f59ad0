"""One base error, positioned diagnostics, and the exit-code map (rules §16).

This module imports nothing from the package, so every layer may use it.
"""

from __future__ import annotations

import enum

from msgspec import Struct


class ExitCode(enum.IntEnum):
    """Exit codes of rules §16."""

    PASS = 0
    BLOCKED = 1
    INVALID = 2
    PENDING = 3
    INTERNAL = 4  # an internal error never exits 0 (docs/rules.md §16)
    INTERRUPTED = 130


def result_exit_code(result: str) -> ExitCode:
    """The one result -> exit-code map, for every command and the watcher (docs/ci.md).

    A run's PASS, PENDING and BLOCKED exit by name; a validator report that is FIXABLE lists
    issues, so it exits as BLOCKED does.
    """
    return ExitCode.BLOCKED if result == "FIXABLE" else ExitCode[result]


class Diagnostic(Struct, frozen=True, order=True):
    """One problem in one file, at `line:col` (both 1-based)."""

    path: str
    line: int
    col: int
    message: str
    severity: str = "error"  # "error" (exit 2) or "warning" (reported, run goes on)

    def __str__(self) -> str:
        tag = "" if self.severity == "error" else f"{self.severity}: "
        return f"{self.path}:{self.line}:{self.col}: {tag}{self.message}"

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "severity": self.severity,
            "message": self.message,
        }


class SelfcorrectError(Exception):
    """Base of every expected failure. The CLI maps it to `exit_code` and a clean message."""

    exit_code: ExitCode = ExitCode.INTERNAL


class InputError(SelfcorrectError):
    """Invalid input, policy or usage: exit 2, nothing written."""

    exit_code = ExitCode.INVALID

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic | str) -> None:
        if isinstance(diagnostics, str):
            self.diagnostics: list[Diagnostic] = []
            self.lines = [diagnostics]
        else:
            if isinstance(diagnostics, Diagnostic):
                diagnostics = [diagnostics]
            self.diagnostics = sorted(diagnostics)
            self.lines = [str(d) for d in self.diagnostics]
        super().__init__("\n".join(self.lines))

    @classmethod
    def combined(cls, errors: list[InputError]) -> InputError:
        """Several problems found at once, each printed on its own line (a line of agent text
        is still escaped as one: a newline inside it never starts a line of output)."""
        error = cls([d for e in errors for d in e.diagnostics])
        error.lines = sorted(line for e in errors for line in e.lines)
        error.args = ("\n".join(error.lines),)
        return error


class EnvironmentProblem(InputError):
    """The machine refused a read or write (read-only folder, full disk, permission denied):
    exit 2 naming the path. Unlike invalid input it may pass without any edit, and a run may
    have written part of its outputs before it struck, so a watcher tries again later."""


class WriteConflict(SelfcorrectError):
    """A file kept changing under us while we tried to write it; nothing was written."""

    exit_code = ExitCode.INTERNAL


class WorkspaceError(SelfcorrectError):
    """git failed, or the work tree cannot be snapshotted: the remediation cannot go ahead."""

    exit_code = ExitCode.INTERNAL


class ResourceMissing(SelfcorrectError):
    """A shipped schema or template is missing: the installation is broken."""

    exit_code = ExitCode.INTERNAL
