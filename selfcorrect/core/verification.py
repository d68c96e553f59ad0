"""Is a fix acceptable? Scope, size, exit status, and whether the next report is worse (rules §9).

Pure: it takes what the workspace measured and the fixer's exit status, and answers with a
reason from a fixed enumeration. The caller compensates (restores) on anything but OK.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Iterable, Sequence

from msgspec import Struct

from selfcorrect.core.model import Issue, Severity
from selfcorrect.core.plural import count

WEIGHTS = {Severity.CRITICAL: 10, Severity.MAJOR: 3, Severity.MINOR: 1}


class FixVerdict(enum.StrEnum):
    OK = "OK"
    FIXER_FAILED = "FIXER_FAILED"  # non-zero exit, timeout, or it could not start
    NO_CHANGE = "NO_CHANGE"  # exit 0 but nothing changed: nothing to verify, nothing to undo
    SCOPE_VIOLATION = "SCOPE_VIOLATION"
    TOO_LARGE = "TOO_LARGE"
    DEGRADED = "DEGRADED"  # the re-validated report scores worse than the one before
    # Exited non-zero after changing files in scope (ruff, eslint: findings remain): kept
    # while the re-validated report is not worse; the rest goes to the agent (rules §9.2).
    PARTIAL = "PARTIAL"


class Measured(Struct, frozen=True):
    """One changed file as the workspace saw it."""

    path: str
    added: int
    removed: int


def score(issues: Iterable[Issue]) -> int:
    """CRITICAL 10, MAJOR 3, MINOR 1 (rules §9): the weight of a report's open issues."""
    return sum(WEIGHTS.get(issue.severity, 3) for issue in issues)


def in_scope(path: str, scope: Sequence[str]) -> bool:
    """`path` matches a scope entry: `.`, the file itself, a folder it lies under, or a glob.

    The one scope rule: the snapshot captures by it and verification judges by it, so a folder
    entry (`src`) covers `src/a.py` in both (docs/containment.md, "Scope").
    """
    return any(
        pattern == "."
        or path == pattern
        or path.startswith(pattern.rstrip("/") + "/")
        or (is_glob(pattern) and fnmatch.fnmatchcase(path, pattern))
        for pattern in scope
    )


def applies_to(target: str, pattern: str) -> bool:
    """Does a fixer's `applies_to` glob cover `target`? A file: when the glob matches it. A
    folder (`src`, `src/`): when the glob can match a file under it, since a target that names
    a folder covers every file under it (docs/policy.md, issue types: `fix`).

    Pure, so a folder is told by its name: a trailing `/`, or a last part with no suffix. The
    sample file under it takes the glob's own last part, so `*.py` and `src/*.py` reach `src`,
    and `tests/*.py` does not.
    """
    if fnmatch.fnmatchcase(target, pattern):
        return True
    last = target.rstrip("/").rsplit("/", 1)[-1]
    if not last or not (target.endswith("/") or "." not in last.lstrip(".")):
        return False
    sample = _sample(pattern.rsplit("/", 1)[-1])
    return sample is not None and fnmatch.fnmatchcase(f"{target.rstrip('/')}/{sample}", pattern)


_CLASS = re.compile(r"\[!?([^]]?)[^]]*\]")


def _sample(name_glob: str) -> str | None:
    """A file name the glob's last part matches (`*.py` → `x.py`), None when there is none."""
    if not name_glob:
        return None
    sample = _CLASS.sub(
        lambda m: "x" if m.group(0).startswith(("[!", "[^")) else m.group(1) or "x", name_glob
    )
    sample = sample.replace("*", "x").replace("?", "x")
    return sample if fnmatch.fnmatchcase(sample, name_glob) else None


def _protected(path: str, never: Sequence[str]) -> bool:
    parts = path.split("/")
    return ".git" in parts[:-1] or any(path == n or path.startswith(n + "/") for n in never)


def is_glob(value: str) -> bool:
    return any(ch in value for ch in "*?[")


def verify_fix(
    exit_ok: bool,
    changed: Sequence[Measured],
    scope: Sequence[str],
    max_changed_lines: int,
    never: Sequence[str] = (".git",),
) -> tuple[FixVerdict, str]:
    """The verdict on one fixer run, and the evidence in words.

    `never`: folders no scope reaches (`.git`, the workflow folder), whatever it says: a `.`
    or `*` scope still does not hand a fixer the repository or selfcorrect's own files.
    """
    if not exit_ok:
        return FixVerdict.FIXER_FAILED, "the fixer did not exit 0"
    outside = [c.path for c in changed if not in_scope(c.path, scope) or _protected(c.path, never)]
    if outside:
        return FixVerdict.SCOPE_VIOLATION, (
            f"changed {count(len(outside), 'file')} outside its scope ({', '.join(scope)}): "
            + ", ".join(outside[:5])
        )
    lines = sum(c.added + c.removed for c in changed)
    if lines > max_changed_lines:
        return FixVerdict.TOO_LARGE, (
            f"changed {lines} lines, over max_changed_lines ({max_changed_lines})"
        )
    if not changed:
        return FixVerdict.NO_CHANGE, "exited 0 and changed nothing"
    return (
        FixVerdict.OK,
        f"changed {count(len(changed), 'file')}, {count(lines, 'line')}, all in scope",
    )


def degraded(before: Iterable[Issue], after: Iterable[Issue]) -> bool:
    return score(after) > score(before)
