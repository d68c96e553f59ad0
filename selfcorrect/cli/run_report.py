"""How `run` and `status` show a run: a table for people, one stable JSON object for tools.

The text form shows each stuck detection in the hooks' advisory shape (cli/advisory.py) below
the subjects table; the JSON object carries the same fields as `advisories`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from selfcorrect import layout
from selfcorrect.cli.advisory import advisories, advisory_lines
from selfcorrect.cli.options import Common
from selfcorrect.cli.report import printable
from selfcorrect.errors import result_exit_code

if TYPE_CHECKING:
    from selfcorrect.commands.run import RunOutcome
    from selfcorrect.core.classify import IssueDecision
    from selfcorrect.core.decisions import Decisions
    from selfcorrect.core.outputs import Plan


# A subject no work item holds: its own state in the status vocabulary
# (docs/rules.md §9.1).
_OWN = {"ok": "recovered", "failing": "pending"}


def item_status(plan: Plan, work_item: str, own: str) -> str:
    """The one status of the work item a subject or issue belongs to: the status the prompt
    file, failed_items and escalations.yaml show too (core/work_items.py)."""
    item = plan.work_items.get(work_item)
    return item.final_status if item else _OWN.get(own, own)


def spent(decision: IssueDecision) -> int:
    """Attempts spent: a hand-out still out (a directive, a fix awaiting its report) is the
    next attempt, not a spent one."""
    out = decision.classification.value == "FIXABLE" and decision.attempts > 0
    return decision.attempts - 1 if out else decision.attempts


def _why(plan: Plan, decision: IssueDecision) -> str:
    """The decision's reason; for a stopped work item (blocked, skipped), why it stopped."""
    item = plan.work_items.get(decision.work_item)
    if item is None or item.final_status not in ("blocked", "skipped"):
        return decision.detail
    return item.reason() + (f" ({item.escalation})" if item.escalation else "")


def subject_rows(decisions: Decisions, plan: Plan) -> list[dict[str, Any]]:
    records = decisions.records
    return [
        {
            "subject": d.subject,
            "failure_type": d.failure_type,
            "attempts": d.attempts,
            "retries": d.retries,
            "signals": [
                {
                    "signal": f.signal.value,
                    "pattern": f.pattern,
                    "count": f.count,
                    "threshold": f.threshold,
                }
                for f in d.signals
            ],
            "ladder_step": d.ladder_step,
            "status": item_status(plan, _work_item(records, d.subject), d.status.value),
            "reason": d.reason.value,
        }
        for d in decisions.subjects
    ]


def _work_item(records: Any, subject: str) -> str:
    record = records.get(subject)
    return (record.task_id if record else None) or subject


def issue_rows(decisions: Decisions, plan: Plan) -> list[dict[str, Any]]:
    return [
        {
            "fingerprint": d.fingerprint,
            "id": d.issue.id,
            "type": d.type,
            "severity": d.issue.severity.value.upper(),
            "classification": d.classification.value,
            "reason": d.reason.value,
            "detail": d.detail,
            "attempts": spent(d),
            "retries": d.retries,
            "status": item_status(plan, d.work_item, "pending"),
            "strategy": d.strategy,
            "target": d.issue.target,
            "task_id": d.issue.task_id,
        }
        for d in decisions.issues
    ]


def run_json(outcome: RunOutcome) -> dict[str, Any]:
    """The documented, stable `--format json` object (SPEC §16; README "JSON output")."""
    plan = outcome.plan
    return {
        "result": plan.result.value,
        "cycles": outcome.cycles,
        "shadow": outcome.shadow,
        "issues": issue_rows(outcome.decisions, plan),
        "subjects": subject_rows(outcome.decisions, plan),
        "escalations": [
            {"id": e["id"], "subject": e["subject"], "reason": e["reason"], "kind": e.get("kind")}
            for e in plan.escalations
        ],
        "written": outcome.written,
        "plan": {
            "recovery_files": sorted(outcome.rendered),
            "failed_items": plan.failed_items,
            "journal_records": len(plan.journal),
        },
        "why": plan.reasons,
        "warnings": [w.as_dict() for w in outcome.decisions.warnings],
        # Every stuck signal firing, in the hooks' advisory fields (SPEC §8). A later addition:
        # keys are only ever added to this object, never renamed or removed.
        "advisories": [a.as_dict() for a in advisories(outcome)],
    }


def table(rows: Sequence[Sequence[str]], common: Common) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        text = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        lines.append(click.style(text, bold=True) if number == 0 else text)
    return ["  " + line for line in lines]


def _steps(step: int | None) -> str:
    return "-" if step is None else str(step)


def _cap(attempts: int, retries: int | None) -> str:
    return f"{attempts}/{'∞' if retries is None else retries}"


def show_run(outcome: RunOutcome, fmt: str, common: Common, folder: str) -> None:
    for warning in outcome.decisions.warnings:
        click.echo(printable(str(warning)), err=True)
    if fmt == "json":
        click.echo(json.dumps(run_json(outcome), indent=2, ensure_ascii=False))
        return
    if fmt in ("github", "sarif", "junit"):
        from selfcorrect.cli import ci_formats

        data = run_json(outcome)
        text = {
            "github": lambda: ci_formats.render_github(data),
            "sarif": lambda: ci_formats.render_sarif(data, workflow_dir=folder),
            "junit": lambda: ci_formats.render_junit(data),
        }[fmt]()
        click.echo(text.rstrip("\n"))
        return
    plan, decisions = outcome.plan, outcome.decisions
    colour = {"PASS": "green", "PENDING": "yellow", "BLOCKED": "red"}[plan.result.value]
    mode = " (shadow: nothing written)" if outcome.shadow else ""
    lines = [
        click.style(f"{plan.result.value}", fg=colour, bold=True)
        + f"  selfcorrect run {folder}{mode}  (exit {int(result_exit_code(plan.result.value))})"
    ]
    lines += _body(decisions, plan, common, advisory_lines(advisories(outcome), folder))
    if plan.escalations:
        lines += ["", "Escalations (a human is needed):"]
        lines += [
            f"  {e['id']}  {printable(e['subject'])}: {printable(e['reason'])}"
            for e in plan.escalations
        ]
    if outcome.shadow:
        lines += ["", "Would write:"]
        lines += [f"  {folder}/{layout.RECOVERY}/{name}" for name in sorted(outcome.rendered)]
        if plan.failed_items:
            entries = f"({len(plan.failed_items)} entries)"
            lines.append(f"  {folder}/{layout.COORDINATION_LOG}#failed_items {entries}")
        if plan.journal:
            lines.append(f"  {folder}/{layout.JOURNAL} ({len(plan.journal)} records)")
    elif outcome.written:
        lines += ["", "Written:"] + [f"  {path}" for path in outcome.written]
    else:
        lines += ["", "Nothing new to write."]
    lines += ["", "Why: " + "; ".join(printable(r) for r in plan.reasons)]
    if common.verbosity < 0:
        lines = lines[:1]
    click.echo("\n".join(lines), color=common.color)


def _body(decisions: Decisions, plan: Plan, common: Common, advisory: list[str]) -> list[str]:
    lines: list[str] = []
    failing = [d for d in decisions.subjects if d.status.value != "ok" or common.verbosity > 0]
    if failing:
        lines += ["", f"Subjects ({decisions.log_entries} log entries, {len(failing)} shown):"]
        rows = [["SUBJECT", "TYPE", "ATTEMPTS", "STATUS", "STEP", "SIGNALS"]]
        rows += [
            [
                printable(d.subject)[:48],
                printable(d.failure_type),
                _cap(d.attempts, d.retries),
                item_status(plan, _work_item(decisions.records, d.subject), d.status.value),
                _steps(d.ladder_step),
                ", ".join(f"{f.signal.value} {f.count}/{f.threshold}" for f in d.signals),
            ]
            for d in failing
        ]
        lines += table(rows, common)
    if advisory:
        lines += ["", *advisory]
    if decisions.issues:
        verdict = decisions.report.verdict.value if decisions.report else "none"
        lines += ["", f"Issues (validation report verdict: {verdict}):"]
        rows = [["ISSUE", "TYPE", "STATUS", "ATTEMPTS", "WHY"]]
        rows += [
            [
                printable(d.issue.id or d.fingerprint),
                printable(d.type),
                item_status(plan, d.work_item, "pending"),
                _cap(spent(d), d.retries),
                printable(_why(plan, d)),
            ]
            for d in decisions.issues
        ]
        lines += table(rows, common)
    return lines
