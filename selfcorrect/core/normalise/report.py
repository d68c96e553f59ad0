"""validation_report.yaml in its three shapes (canonical, dialect A, dialect B) → one `Report`.

Everything a dialect says in its own block is turned into the canonical facts (issues, verdict)
and the block is consumed, so a dialect report and the canonical report stating the same facts
give equal records. Parts of a consumed block that carry no such fact stay in `extra`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from selfcorrect.core.frozen import freeze_map
from selfcorrect.core.model import Criterion, Issue, Report, Severity, Verdict
from selfcorrect.core.normalise.coerce import (
    entries,
    first,
    flag,
    leftover,
    mapping,
    nonblank,
    number,
    text,
    text_or,
    texts,
)
from selfcorrect.core.summary import summary

# cAgents' Stop-hook safety net writes a PASS when a session ends with no report (rules §2.2);
# the policy's `stub_validators` names more such writers.
SAFETY_NET = "verify-completion-hook-safety-net"
_NO_VALIDATOR = re.compile(r"\bno\s+validator(\s+agent)?\s+(ran|was\s+run|has\s+run)\b", re.I)
_NOTE_KEYS = ("note", "notes", "summary", "message", "comment")
UNMET = "acceptance_criterion_unmet"
CIRCULAR = "circular_delegation"
# How a report-level BLOCKED is shown on the issues it blocks: the validator's verdict, not theirs.
VERDICT_BLOCKED = "the validator's verdict is BLOCKED"
_BUCKETS = ("critical", "major", "minor")
MAX_MINOR_IN_PASS = 3  # rules §5: a PASS carries no critical/major issue and at most 3 minor

_VERDICTS = {
    "PASS": Verdict.PASS,
    "PASSED": Verdict.PASS,
    "FIXABLE": Verdict.FIXABLE,
    "REVISE": Verdict.FIXABLE,  # dialect A: the reviewer asks for a revision, i.e. fixable work
    "NEEDS_REVISION": Verdict.FIXABLE,
    "BLOCKED": Verdict.BLOCKED,
    "FAIL": Verdict.FAIL,
    "FAILED": Verdict.FAIL,
    "FAILURE": Verdict.FAIL,
    "PARTIAL_PASS": Verdict.FAIL,  # partly met is not met: never read it as PASS
    "PARTIAL": Verdict.FAIL,
}

_SEVERITIES = {
    "critical": Severity.CRITICAL,
    "blocker": Severity.CRITICAL,
    "fatal": Severity.CRITICAL,
    "major": Severity.MAJOR,
    "high": Severity.MAJOR,
    "error": Severity.MAJOR,
    "medium": Severity.MAJOR,
    "minor": Severity.MINOR,
    "low": Severity.MINOR,
    "warning": Severity.MINOR,
    "info": Severity.MINOR,
    "trivial": Severity.MINOR,
}

_ISSUE_KEYS = (
    "severity",
    "type",
    "id",
    "target",
    "task_id",
    "suggested_fix",
    "estimated_minutes",
    "classification",
    "criterion",
    "evidence",
    "verification_method",
)
_DESCRIPTION_KEYS = ("description", "message", "issue", "title")
_CRITERION_KEYS = ("criterion", "met", "evidence", "confidence", "verification_method")
_REPORT_KEYS = (
    "classification",
    "status",
    "overall_status",
    "issues",
    "issues_found",
    "acceptance_criteria_results",
    "coordination_validation",
    "recheck",
    "confidence",
    "overall_confidence",
    "generated_at",
    "validator",
    "generated_by",
    "summary",
    "next_action",
)


def verdict_of(value: Any) -> Verdict | None:
    """Normalise a verdict word; None when absent, NONE when unknown (UNKNOWN included)."""
    word = text(value)
    if word is None:
        return None
    key = word.strip().upper().replace("-", "_").replace(" ", "_")
    return _VERDICTS.get(key, Verdict.NONE)


def severity_of(value: Any, default: Severity = Severity.MAJOR) -> Severity:
    """Case-insensitive severity; an unknown word counts as MAJOR, never as a harmless minor."""
    word = text(value)
    if word is None:
        return default
    return _SEVERITIES.get(word.strip().lower(), Severity.MAJOR)


def issue_from(raw: Any, severity: Severity, *, bucket: bool = False) -> Issue:
    """One issue from a mapping (or a bare string, as dialect B writes them).

    `bucket` means `severity` comes from the dialect-B list the item sits in, which wins.
    """
    if not isinstance(raw, Mapping):
        return Issue(severity=severity, description=text_or(raw, ""))
    used = next((key for key in _DESCRIPTION_KEYS if raw.get(key) is not None), None)
    classification = verdict_of(raw.get("classification"))
    minutes = number(raw.get("estimated_minutes"))
    return Issue(
        severity=severity if bucket else severity_of(raw.get("severity"), severity),
        description=text_or(raw.get(used), "") if used else "",
        type=nonblank(raw.get("type")),
        id=nonblank(raw.get("id")),
        target=nonblank(raw.get("target")),
        task_id=nonblank(raw.get("task_id")),
        suggested_fix=text(raw.get("suggested_fix")),
        estimated_minutes=minutes,
        classification=None if classification is Verdict.NONE else classification,
        criterion=text(raw.get("criterion")),
        evidence=text(raw.get("evidence")),
        verification_method=nonblank(raw.get("verification_method")),
        extra=freeze_map(leftover(raw, (*_ISSUE_KEYS, *((used,) if used else ())))),
    )


def criterion_from(raw: Any) -> Criterion:
    """One acceptance-criterion result; `met` stays None unless stated."""
    if not isinstance(raw, Mapping):
        return Criterion(criterion=text_or(raw, ""), met=None)
    return Criterion(
        criterion=text_or(raw.get("criterion"), ""),
        met=flag(raw.get("met")),
        evidence=text(raw.get("evidence")),
        confidence=number(raw.get("confidence")),
        verification_method=nonblank(raw.get("verification_method")),
        extra=freeze_map(leftover(raw, _CRITERION_KEYS)),
    )


def unmet_issue(
    criterion: str, evidence: str | None, method: str | None, reason: str | None
) -> Issue:
    """The `acceptance_criterion_unmet` issue for a criterion (rules §2.2)."""
    notes = [f"evidence: {evidence}"] if evidence else []
    if reason:
        notes.append(f"recheck: {reason}")
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return Issue(
        severity=Severity.MAJOR,
        description=f"Acceptance criterion not met: {criterion}{suffix}",
        type=UNMET,
        criterion=criterion,
        evidence=evidence,
        verification_method=method,
    )


def _key(criterion: str) -> str:
    """Criterion identity: whitespace-folded, since the recheck hook re-quotes the text."""
    return " ".join(criterion.split())


def _circular_issue(cycle: Any) -> Issue:
    """The CRITICAL issue for `circular_delegation_detected: true`, naming the cycle if given."""
    members = texts(cycle)
    where = f": {' -> '.join(members)}" if members else ""
    return Issue(
        severity=Severity.CRITICAL,
        type=CIRCULAR,
        description=f"Circular delegation detected{where}",
    )


def _found_issues(found: Any) -> list[Issue]:
    """Dialect B `issues_found`: severity buckets, critical → major → minor, then the rest."""
    if not isinstance(found, Mapping):
        return [issue_from(item, Severity.MAJOR) for item in entries(found)]
    names = list(found)
    known = [name for bucket in _BUCKETS for name in names if str(name).lower() == bucket]
    order = known + [name for name in names if name not in known]
    issues: list[Issue] = []
    for name in order:
        severity = severity_of(name)
        issues.extend(issue_from(item, severity, bucket=True) for item in entries(found[name]))
    return issues


def _criteria_issues(
    criteria: tuple[Criterion, ...], recheck: Mapping[Any, Any], already: set[str]
) -> list[Issue]:
    """Issues for unmet criteria and for the recheck hook's failing entries, one per criterion."""
    failing: dict[str, tuple[str, str | None]] = {}
    for entry in entries(recheck.get("failing_entries")):
        raw = entry if isinstance(entry, Mapping) else {"criterion": entry}
        name = nonblank(raw.get("criterion"))
        if name is not None:
            failing.setdefault(_key(name), (name, text(first(raw, "reason", "detail"))))
    issues: list[Issue] = []
    for crit in criteria:
        key = _key(crit.criterion)
        failed = failing.pop(key, None)
        if (crit.met is False or failed is not None) and key and key not in already:
            already.add(key)
            reason = failed[1] if failed else None
            issues.append(
                unmet_issue(crit.criterion, crit.evidence, crit.verification_method, reason)
            )
    for key, (name, reason) in failing.items():  # entries citing a criterion not in the list
        if key not in already:
            already.add(key)
            issues.append(unmet_issue(name, None, None, reason))
    return issues


def _standing_verdict(claimed: Verdict, recheck: Mapping[Any, Any], issues: list[Issue]) -> Verdict:
    """The verdict that stands: a downgrade of a PASS stands, and issues can refute a PASS."""
    verdict = claimed
    downgrade = recheck.get("downgrade")
    if claimed is Verdict.PASS and downgrade is not None and flag(downgrade) is not False:
        # "PASS -> FAIL": the target is after the arrow; anything unreadable is still not a PASS.
        target = verdict_of(text_or(downgrade, "").split("->")[-1])
        verdict = target if target not in (None, Verdict.PASS, Verdict.NONE) else Verdict.FAIL
    if verdict is Verdict.PASS:
        serious = any(issue.severity is not Severity.MINOR for issue in issues)
        minors = sum(issue.severity is Severity.MINOR for issue in issues)
        if serious or minors > MAX_MINOR_IN_PASS:
            verdict = Verdict.FAIL
    return verdict


def _stub(raw: Mapping[Any, Any], validator: str | None, stubs: frozenset[str]) -> str | None:
    """Why the report is a stub written when no validator ran, else None (rules §2.2)."""
    if validator is not None and validator.strip() in stubs:
        return f"written by {validator.strip()}: no validator ran"
    for key in _NOTE_KEYS:
        note = raw.get(key)
        if isinstance(note, str) and _NO_VALIDATOR.search(note):
            return f"it says so: {note.strip()}"
    return None


def _blocked_reason(raw: Mapping[Any, Any]) -> tuple[str, str]:
    """The validator's own words for a report-level BLOCKED ("" when it says nothing: never an
    issue's words, rules §5), and whom it asks to act (" (next: hitl)", else "")."""
    action = raw.get("next_action")
    step = mapping(action)
    said = first(raw, "blocked_reason", "reason") or first(step, "reason", "action")
    if said is None and isinstance(action, str):
        said = action
    if said is None and isinstance(raw.get("summary"), str):
        said = raw.get("summary")
    who = nonblank(step.get("agent"))
    return text_or(said, "").strip(), f" (next: {who})" if who else ""


def _verdict_blocks(raw: Mapping[Any, Any], issue: Issue | None) -> str:
    """Why a report-level BLOCKED blocks `issue` (None: the run, the report naming no issue):
    the validator's verdict, shown as such, with its reason; without one, what the issue's
    own words say failed (rules §5, §9.6)."""
    said, who = _blocked_reason(raw)
    if said:
        return f"{VERDICT_BLOCKED}: {said}{who}"
    if issue is None:
        return f"{VERDICT_BLOCKED}: no reason given{who}"
    return f"{VERDICT_BLOCKED}, with no reason given{who}; this issue: {summary(issue.description)}"


def _honour_blocked(raw: Mapping[Any, Any], issues: list[Issue]) -> list[Issue]:
    """A report-level BLOCKED blocks every issue it names; naming none, it blocks the run
    (rules §5). Where the validator classified issues one by one, its BLOCKED is the sum of
    those calls, and they stand; a CRITICAL issue of a BLOCKED report is never FIXABLE either
    way. Each issue it blocks carries the verdict's reason, never another issue's words."""
    itemised = any(issue.classification is not None for issue in issues)
    if not issues:
        why = _verdict_blocks(raw, None)
        return [
            Issue(
                severity=Severity.CRITICAL,
                description=why[0].upper() + why[1:],
                type="unclassified",
                classification=Verdict.BLOCKED,
                blocked_reason=why,
            )
        ]
    return [
        issue
        if issue.classification is Verdict.BLOCKED
        or (issue.severity is not Severity.CRITICAL and itemised)
        else replace(
            issue, classification=Verdict.BLOCKED, blocked_reason=_verdict_blocks(raw, issue)
        )
        for issue in issues
    ]


def normalise_report(
    raw: Mapping[Any, Any], stubs: frozenset[str] = frozenset({SAFETY_NET})
) -> Report:
    """A validation report in any of the three shapes (or a stub) → `Report`.

    `stubs`: the names of writers whose reports say no validator ran (policy `stub_validators`).
    """
    claimed = verdict_of(first(raw, "classification", "status", "overall_status")) or Verdict.NONE
    issues = [issue_from(item, Severity.MAJOR) for item in entries(raw.get("issues"))]
    issues.extend(_found_issues(raw.get("issues_found")))

    validation = mapping(raw.get("coordination_validation"))
    if flag(validation.get("circular_delegation_detected")) and not any(
        issue.type == CIRCULAR for issue in issues
    ):
        issues.append(_circular_issue(validation.get("cycle")))

    criteria = tuple(
        criterion_from(item) for item in entries(raw.get("acceptance_criteria_results"))
    )
    recheck = mapping(raw.get("recheck"))
    already = {_key(i.criterion) for i in issues if i.type == UNMET and i.criterion}
    issues.extend(_criteria_issues(criteria, recheck, already))

    if claimed is Verdict.BLOCKED:
        issues = _honour_blocked(raw, issues)

    extra = leftover(raw, _REPORT_KEYS)
    # Keep what the consumed blocks said beyond the facts now carried by issues and verdict.
    for name, block, used in (
        ("coordination_validation", validation, ("circular_delegation_detected", "cycle")),
        ("recheck", recheck, ("downgrade", "failing_entries")),
    ):
        remains = leftover(block, used)
        if remains:
            extra[name] = remains

    validator = text(first(raw, "validator", "generated_by"))
    stub = _stub(raw, validator, stubs)
    return Report(
        # A stub is no verdict at all, whatever it claims: never a PASS (rules §2.2).
        verdict=Verdict.NONE if stub else _standing_verdict(claimed, recheck, issues),
        claimed=claimed,
        issues=tuple(issues),
        criteria=criteria,
        confidence=number(first(raw, "confidence", "overall_confidence")),
        generated_at=text(raw.get("generated_at")),
        validator=validator,
        summary=text(raw.get("summary")),
        next_action=text(raw.get("next_action")),
        extra=freeze_map(extra),
        stub=stub,
    )
