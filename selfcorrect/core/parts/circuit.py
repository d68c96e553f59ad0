"""A rule's circuit (docs/rules.md §10): no work item's part, but an output of its own. A rule
whose circuit opens stops acting, and a person is told why, with the numbers."""

from __future__ import annotations

from selfcorrect.core.circuits import Trip
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.journal_records import CircuitEvent, ProposalEvent
from selfcorrect.core.outputs import Escalation, EscalationEntry, PlanDraft, stamp
from selfcorrect.core.parts.shadow import shadow
from selfcorrect.core.stages import SHADOW


def plan_trips(plan: PlanDraft, run: Decisions) -> None:
    """rules §10: a rule whose circuit opens stops acting, and a person is told why. A circuit
    still open stays listed (its escalation is written once)."""
    tripping = {(t.rule, t.rule_version) for t in run.trips}
    for rule, version, _reason in run.open_circuits:
        opened = run.circuits.opening(rule, version)
        if not shadow(run) and opened is not None and (rule, version) not in tripping:
            plan.escalations.append(_circuit_escalation(run, opened))
    for trip in run.trips:
        if shadow(run):
            key = f"{trip.rule}|circuit|{trip.rule_version}|{run.validations}|open"
            if key not in run.proposals:
                plan.journal.append(
                    ProposalEvent(
                        key=key,
                        rule=trip.rule,
                        rule_version=trip.rule_version,
                        stage=SHADOW,
                        name=trip.rule,
                        would="open circuit",
                        **stamp(run),
                        evidence={"reason": trip.reason.value, "detail": trip.detail},
                    )
                )
            continue
        entry = _circuit_escalation(run, trip)
        plan.escalations.append(entry)
        plan.journal.append(
            CircuitEvent(
                status="open",
                rule=trip.rule,
                rule_version=trip.rule_version,
                reason=trip.reason.value,
                detail=trip.detail,
                escalation=entry.id,
                evidence=[fix.to_json() for fix in trip.evidence] or None,
                **stamp(run),
            )
        )
        plan.reasons.append(f"circuit open: {trip.rule} ({trip.detail})")


def _circuit_escalation(run: Decisions, trip: Trip) -> Escalation:
    """A circuit's escalation carries its numbers (docs/rules.md §10): the trip in words (the
    rate against its threshold, the window), then every failed fix behind it: which issue,
    which attempt, when and why."""
    rule, version = trip.rule, trip.rule_version
    return EscalationEntry(
        key=f"circuit:{rule}@{version}",
        kind="circuit",
        subject=rule,
        reason=f"circuit open: {trip.detail}. The rule is disabled (observation continues) "
        "until a person resets it with evidence: "
        f"selfcorrect reset DIR --rule {rule} --evidence TEXT",
        failure_type=rule.split(":", 1)[-1],
        attempts=len(trip.evidence),
        error_chain=[trip.detail, *(fix.line() for fix in trip.evidence), *_fixer_said(trip)],
        tried=list(dict.fromkeys(f"fix of {fix.fingerprint}" for fix in trip.evidence)),
        files=list(dict.fromkeys(_target(fix.fingerprint) for fix in trip.evidence)),
        rule=rule,
        rule_version=version,
        epoch=run.circuit_epoch(rule, version),
    ).entry(run)


def _fixer_said(trip: Trip) -> list[str]:
    """The last output of the latest fixer behind the trip: every escalation a fixer causes
    carries it (docs/rules.md §9.2)."""
    said = [fix for fix in trip.evidence if fix.output]
    if not said:
        return []
    return [f"the fixer's last output (fix of {said[-1].fingerprint}):\n{said[-1].output}"]


def _target(fingerprint: str) -> str:
    """The target a fingerprint names (`type@target#task~words`), else the fingerprint."""
    _type, at, rest = fingerprint.partition("@")
    return rest.split("#", 1)[0].split("~", 1)[0] if at else fingerprint
