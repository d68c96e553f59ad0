"""Shared by the output-quality checks: paths that stay inside the project, safe text."""

from __future__ import annotations

import re
import stat
import unicodedata
from pathlib import Path

from selfcorrect.checks.findings import Finding
from selfcorrect.core.policy import Policy
from selfcorrect.io.workspace import resolve_inside

SEVERITIES = ("CRITICAL", "MAJOR", "MINOR")
# The issue types these checks report (rules §3 table).
COVERAGE, DOCS, TEMPLATES = "test_coverage_low", "missing_documentation", "format_violations"
MAX_READ = 50 * 1024 * 1024  # the default limits.max_bytes (rules §17): never slurp more than this
WORST_FILES = 5
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
HOW_COVERAGE = "produce it before validating, e.g. `coverage json` or `coverage xml`"


def severity_of(policy: Policy, type_: str) -> str:
    """The severity the policy gives an issue type; MAJOR when it gives none (or null)."""
    rule = policy.issue_type(type_)
    value = rule.severity if rule is not None else None
    word = value.strip().upper() if value is not None else ""
    return word if word in SEVERITIES else "MAJOR"


def clean(text: str) -> str:
    """Text from tools or agents made safe to show: escapes dropped, control characters replaced."""
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    return "".join(
        "\ufffd" if ch in _BIDI or (unicodedata.category(ch) == "Cc" and ch not in "\n\t") else ch
        for ch in text
    )


def inside(root: Path, rel: str) -> Path | None:
    """`rel` resolved under `root`; None when absolute or leaving the project (`..`, symlinks).

    A cited path is read, never passed as an argument, so a leading '-' is allowed here.
    """
    return resolve_inside(root, rel, argument=False)


def refused(type_: str, severity: str, what: str, value: str) -> Finding:
    return Finding(
        type_,
        severity,
        f"refused {what} {clean(value)!r}: it is absolute or leaves "
        "the project root; use a path relative to the project that stays inside it",
    )


def kind_of(path: Path) -> str | None:
    """ "file", "dir" or None (missing, or a path the OS refuses: too long, a loop, …)."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return None
    return "dir" if stat.S_ISDIR(mode) else ("file" if stat.S_ISREG(mode) else None)


def read_text(path: Path) -> str | None:
    """A regular file's text (bad UTF-8 replaced); None if missing, special, unreadable or huge."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_READ:
            return None
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
