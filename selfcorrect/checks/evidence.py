"""The evidence re-check (rules §2.2): a PASS is not taken on trust.

A criterion claimed met whose evidence is `file_exists` (a path) or `file_contains`
(`"path:line - snippet"`) is checked against the project itself; a citation that does not hold
is an `acceptance_criterion_unmet` finding. Other verification methods are not re-checked.
Evidence is agent text: its paths are confined to the project root and files are only read.
"""

from __future__ import annotations

import re
from pathlib import Path

from msgspec import Struct

from selfcorrect.checks._common import MAX_READ, clean, inside
from selfcorrect.checks.findings import Finding
from selfcorrect.core.model import Criterion, Report, Verdict

UNMET = "acceptance_criterion_unmet"
SEVERITY = "MAJOR"
METHODS = ("file_exists", "file_contains")
SLACK = 2  # agents miscount lines: the snippet may sit this many lines either side of the cited one
# Possessive runs: evidence is agent text, and `:1` followed by a long run of spaces made the
# backtracking versions cost the square of the text (docs/architecture.md, checks/). A line
# number has at most 9 digits: 8,000 of them made int() raise.
_WITH_LINE = re.compile(
    r"[`'\"]?(?P<path>[^:`'\"]+?):(?P<line>\d{1,9}+)(?:-(?P<end>\d{1,9}+))?[`'\"]?"
    r"(?:\s*+[-\u2013\u2014:]\s*(?P<snip>.*))?",
    re.DOTALL,
)
# `path - snippet`: the first dash between spaces, found from the start of a run of spaces only
# (a lazy `(.+?)\s+-` tried every split of a long run of spaces: quadratic).
_DASH = re.compile(r"(?<!\s)\s++[-\u2013\u2014]\s+")
_ELLIPSIS = re.compile(r"\.\.\.|\u2026")
_QUOTES = "`'\""


class Citation(Struct, frozen=True):
    """What a piece of evidence points at: a path, maybe a line (range) and a snippet."""

    path: str
    line: int | None = None
    end: int | None = None
    snippet: str = ""


def parse_citation(evidence: str) -> Citation:
    """`path`, `path:line`, `path:line-end` or `path - snippet`, each optionally `- snippet`."""
    text = evidence.strip()
    if match := _WITH_LINE.fullmatch(text):
        end = match.group("end")
        return Citation(
            _unquote(match.group("path")),
            int(match.group("line")),
            int(end) if end else None,
            _unquote(match.group("snip") or ""),
        )
    dash = _DASH.search(text, 1)
    path, snip = (text[: dash.start()], text[dash.end() :]) if dash else (text, "")
    return Citation(_unquote(path), snippet=_unquote(snip))


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
        text = text[1:-1].strip()
    return text


def _claimed(criterion: Criterion, report: Report) -> bool:
    # A criterion with no `met` in a report that claims PASS is claimed met by that PASS.
    return criterion.met is True or (criterion.met is None and report.claimed is Verdict.PASS)


def _method(value: str | None) -> str:
    return (value or "").strip().lower().replace("-", "_").replace(" ", "_")


def recheck(report: Report, root: Path) -> list[Finding]:
    """Findings for criteria claimed met whose file evidence does not hold in `root`."""
    findings: list[Finding] = []
    for criterion in report.criteria:
        method = _method(criterion.verification_method)
        if method not in METHODS or not _claimed(criterion, report):
            continue
        problem, target = check_evidence(method, criterion.evidence or "", root)
        if problem is not None:
            description = (
                f"Acceptance criterion not met: {clean(criterion.criterion)} "
                f"(evidence re-check: {problem})"
            )
            findings.append(Finding(UNMET, SEVERITY, description, target=target))
    return findings


def check_evidence(method: str, evidence: str, root: Path) -> tuple[str | None, str | None]:
    """(what failed, the cited path) for one piece of evidence; (None, path) when it holds."""
    if not evidence.strip():
        return f"{method}: no evidence cited", None
    cite = parse_citation(evidence)
    shown = clean(cite.path)
    path = inside(root, cite.path)
    if path is None:
        return f"cited path refused (absolute or outside the project): {shown!r}", None
    if not path.exists():
        return f"cited path does not exist: {shown}", cite.path
    if method == "file_exists":
        return None, cite.path
    return _contains(path, cite, shown), cite.path


def _contains(path: Path, cite: Citation, shown: str) -> str | None:
    """Does the file hold the snippet at the cited line (± SLACK), or anywhere if none is cited?"""
    if not path.is_file():
        return f"cited path is not a regular file: {shown}"
    if path.stat().st_size > MAX_READ:
        return f"cited file is too large to re-check ({MAX_READ:,} bytes at most): {shown}"
    line, end = cite.line, cite.end or cite.line
    low, high = ((line or 0) - SLACK, (end or 0) + SLACK) if line else (1, -1)
    window: list[str] = []
    count = 0
    try:
        # Streamed: only the window around the cited line is kept.
        with path.open(encoding="utf-8", errors="replace") as handle:
            for count, text in enumerate(handle, 1):
                if line is None and cite.snippet and _found(text, cite.snippet):
                    return None
                if low <= count <= high:
                    window.append(text)
    except OSError as exc:
        return f"cited file is unreadable ({exc.strerror}): {shown}"
    if line is not None and end is not None and not (1 <= line <= end <= count):
        cited = f"{line}-{end}" if end != line else str(line)
        return f"line {cited} out of range for {shown} ({count} lines)"
    if not cite.snippet or (line is not None and _found(" ".join(window), cite.snippet)):
        return None
    where = f"{shown}:{line}" if line is not None else shown
    return f"snippet not found at {where}: {clean(cite.snippet)[:120]!r}"


def _fold(text: str) -> str:
    return " ".join(text.split())


def _found(haystack: str, snippet: str) -> bool:
    """Whitespace-insensitive; `...` or `…` in the snippet stands for elided text."""
    text, position = _fold(haystack), 0
    for part in (_fold(piece) for piece in _ELLIPSIS.split(snippet)):
        if not part:
            continue
        position = text.find(part, position)
        if position < 0:
            return False
        position += len(part)
    return True
