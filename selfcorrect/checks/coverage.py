"""Coverage check (rules §14): coverage.py JSON or Cobertura XML against min_percent."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from selfcorrect.checks._common import (
    COVERAGE,
    HOW_COVERAGE,
    MAX_READ,
    WORST_FILES,
    clean,
    inside,
    kind_of,
    refused,
    severity_of,
)
from selfcorrect.checks.findings import Finding
from selfcorrect.core.policy import Policy


def coverage_findings(cfg: Mapping[str, Any] | None, root: Path, policy: Policy) -> list[Finding]:
    """`{report, min_percent}`: total coverage below the minimum, or no readable report."""
    if not cfg:
        return []
    report, minimum = str(cfg.get("report") or ""), float(cfg.get("min_percent") or 0)
    severity = severity_of(policy, COVERAGE)
    path = inside(root, report)
    if path is None:
        return [refused(COVERAGE, severity, "coverage report path", report)]
    try:
        total, files = _read_coverage(path)
    except ValueError as exc:
        return [
            Finding(
                COVERAGE,
                severity,
                f"coverage report {clean(report)} {exc}; {HOW_COVERAGE}",
                target=report,
            )
        ]
    if total >= minimum:
        return []
    worst = sorted((pct, name) for name, pct in files.items() if pct < minimum)[:WORST_FILES]
    named = ", ".join(f"{clean(name)} {pct:.1f}%" for pct, name in worst)
    description = f"test coverage {total:.1f}% is below min_percent {minimum:g}% ({clean(report)})"
    description += f"; least covered: {named}" if named else ""
    # The figures change as tests are added; the id stays with the report and its minimum.
    key = f"coverage of {report} below {minimum:g}%"
    return [Finding(COVERAGE, severity, description, key=key)]


def _read_coverage(path: Path) -> tuple[float, dict[str, float]]:
    """(total percent, percent per file) from coverage.py JSON or Cobertura XML; ValueError why."""
    if kind_of(path) != "file":
        raise ValueError("was not found")
    try:
        if path.stat().st_size > MAX_READ:
            raise ValueError(f"is larger than {MAX_READ:,} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"is unreadable ({exc.strerror})") from None
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    try:
        if start == b"{":
            return _coverage_json(json.loads(data))
        if start == b"<":
            return _cobertura(data)
    except (ValueError, SyntaxError, RecursionError) as exc:  # ET.ParseError is a SyntaxError
        raise ValueError(f"is unreadable ({clean(str(exc))[:200]})") from None
    raise ValueError("is unreadable: neither coverage.py JSON nor Cobertura XML")


def _percent(value: Any, scale: float = 1.0) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) * scale


def _coverage_json(doc: Any) -> tuple[float, dict[str, float]]:
    totals = doc.get("totals") if isinstance(doc, Mapping) else None
    total = _percent(totals.get("percent_covered")) if isinstance(totals, Mapping) else None
    if total is None:
        raise ValueError("no totals.percent_covered")
    files: dict[str, float] = {}
    raw_files = doc.get("files")
    for name, info in raw_files.items() if isinstance(raw_files, Mapping) else ():
        summary = info.get("summary") if isinstance(info, Mapping) else None
        pct = _percent(summary.get("percent_covered")) if isinstance(summary, Mapping) else None
        if pct is not None:
            files[str(name)] = pct
    return total, files


def _cobertura(data: bytes) -> tuple[float, dict[str, float]]:
    # Refused before parsing: a DTD is how entity bombs and external entities get in.
    lowered = data.lower()
    if b"<!doctype" in lowered or b"<!entity" in lowered:
        raise ValueError("refused: it declares a DOCTYPE or ENTITY (possible entity bomb)")
    if b"\x00" in data:  # UTF-16/32 would hide a DOCTYPE from the check above
        raise ValueError("not UTF-8 (write the report as UTF-8)")
    root = ET.fromstring(data)
    total = _percent(root.get("line-rate"), 100.0)
    if root.tag != "coverage" or total is None:
        raise ValueError("no <coverage line-rate=...> root")
    files: dict[str, float] = {}
    for cls in root.iter("class"):
        name, pct = cls.get("filename"), _percent(cls.get("line-rate"), 100.0)
        if name and pct is not None:  # a file split into classes counts as its worst class
            files[name] = min(pct, files.get(name, pct))
    return total, files
