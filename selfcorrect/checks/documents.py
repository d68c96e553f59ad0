"""Documentation checks (rules §14): required documents exist; documents follow templates."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from selfcorrect.checks._common import (
    DOCS,
    TEMPLATES,
    clean,
    inside,
    kind_of,
    read_text,
    refused,
    severity_of,
)
from selfcorrect.checks.findings import Finding
from selfcorrect.core.markdown import headings, matches, restructure
from selfcorrect.core.policy import Policy


def docs_findings(cfg: Mapping[str, Any] | None, root: Path, policy: Policy) -> list[Finding]:
    """`{required: [PATH…]}`: each path missing or empty is a `missing_documentation` issue."""
    severity, findings = severity_of(policy, DOCS), []
    for rel in (cfg or {}).get("required") or ():
        path = inside(root, str(rel))
        if path is None:
            findings.append(refused(DOCS, severity, "documentation path", str(rel)))
        elif kind_of(path) is None:
            findings.append(
                Finding(DOCS, severity, f"required documentation missing: {rel}", target=str(rel))
            )
        elif _empty(path):
            findings.append(
                Finding(DOCS, severity, f"required documentation is empty: {rel}", target=str(rel))
            )
    return findings


def _empty(path: Path) -> bool:
    if kind_of(path) == "dir":
        return next(path.iterdir(), None) is None
    text = read_text(path) if path.stat().st_size <= 65536 else "x"  # big files are not blank
    return text is None or not text.strip()


def _show(heading: tuple[int, str]) -> str:
    return f"{'#' * heading[0]} {clean(heading[1])}"


def template_findings(
    entries: Iterable[Mapping[str, Any]] | None, root: Path, policy: Policy
) -> list[Finding]:
    """`[{glob, template}]`: every matching document carries the template's headings in order."""
    severity, findings = severity_of(policy, TEMPLATES), []
    for entry in entries or ():
        pattern, template = str(entry["glob"]), str(entry["template"])
        tpath = inside(root, template)
        text = read_text(tpath) if tpath is not None else None
        if tpath is None or text is None:
            why = "refused (absolute or outside the project)" if tpath is None else "not found"
            findings.append(Finding(TEMPLATES, severity, f"template {clean(template)!r} {why}"))
        elif os.path.isabs(pattern) or ".." in PurePosixPath(pattern.replace("\\", "/")).parts:
            findings.append(refused(TEMPLATES, severity, "glob", pattern))
        elif expected := headings(text):
            for rel in _documents(root, pattern):
                problem = _conformance(root, rel, expected, template)
                if problem is not None:
                    target = None if problem.startswith("refused") else rel
                    findings.append(Finding(TEMPLATES, severity, problem, target=target))
    return findings


def _documents(root: Path, pattern: str) -> list[str]:
    """Paths (relative to root) matching `pattern`, sorted; an unusable pattern matches nothing."""
    base = root.resolve()
    try:
        return sorted(match.relative_to(base).as_posix() for match in base.glob(pattern))
    except (ValueError, NotImplementedError, OSError):
        return []


def _conformance(
    root: Path, rel: str, expected: list[tuple[int, str]], template: str
) -> str | None:
    """What is wrong with one document's headings, or None when they follow the template."""
    path = inside(root, rel)
    if path is None:  # a symlink out of the project: never read
        return f"refused document {clean(rel)!r}: it leaves the project root"
    if not path.is_file():
        return None
    doc = read_text(path)
    if doc is None:
        return f"{clean(rel)}: cannot read it"
    seen, index = headings(doc), 0
    for heading in seen:  # other headings may be interleaved: a subsequence match
        if index < len(expected) and matches(expected[index], heading):
            index += 1
    if index == len(expected):
        return None
    wanted = expected[index]
    state = "out of order" if any(matches(wanted, h) for h in seen) else "missing"
    order = " > ".join(_show(h) for h in expected)
    return (
        f"{clean(rel)}: heading {_show(wanted)!r} is {state}; expected headings in this "
        f"order (template {clean(template)}): {order}"
    )


def restructurable(root: Path) -> Callable[[str, str], bool]:
    """`(target, template) -> bool`: the built-in restructure_to_template can put the document
    under the template's headings keeping its title and every line (docs/policy.md). A document
    or template that cannot be read is the fixer's to report: True."""

    def check(target: str, template: str) -> bool:
        doc, tpl = inside(root, target), inside(root, template)
        doc_text = read_text(doc) if doc is not None and doc.is_file() else None
        tpl_text = read_text(tpl) if tpl is not None and tpl.is_file() else None
        if doc_text is None or tpl_text is None:
            return True
        return restructure(doc_text, tpl_text) is not None

    return check
