"""How `status` shows a folder: the run's view plus the journal's last decisions."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from selfcorrect.cli.options import Common
from selfcorrect.cli.run_report import add_what_to_read, issue_rows, subject_rows
from selfcorrect.cli.words import attempts_text, printable
from selfcorrect.commands.status import next_steps

if TYPE_CHECKING:
    from selfcorrect.commands.status import FolderStatus


def status_json(status: FolderStatus, folder: str = "DIR") -> dict[str, Any]:
    decisions = status.outcome.decisions
    subjects = subject_rows(decisions, status.outcome.plan)
    for row in subjects:
        prior = decisions.state.subject(row["subject"])
        row["last_decision"] = {"reason": prior.reason, "at": prior.at} if prior.at else None
    issues = issue_rows(decisions, status.outcome.plan)
    add_what_to_read(status.outcome, issues, subjects)  # description, prompt, escalation
    for row in issues:
        handed = decisions.state.issue(row["fingerprint"])
        row["last_decision"] = {"reason": handed.reason, "at": handed.at} if handed.at else None
    circuits = [
        {"rule": rule, "rule_version": version, "reason": reason}
        for (rule, version), reason in decisions.circuits.open_rules()
    ] + [
        {"rule": t.rule, "rule_version": t.rule_version, "reason": t.reason.value}
        for t in decisions.trips
    ]
    return {
        "result": status.outcome.plan.result.value,
        "subjects": subjects,
        "issues": issues,
        "open_escalations": [
            {"id": e.get("id"), "subject": e.get("subject"), "reason": e.get("reason")}
            for e in status.open_escalations
        ],
        # Hook-log problems that were skipped (rules §2): what `run` reports, status reports.
        "warnings": [w.as_dict() for w in decisions.warnings],
        # Rules that stopped acting (rules §10): open until a person resets them.
        "open_circuits": circuits,
        # What to run (or edit) to move each of the above; empty when nothing waits.
        "next_steps": next_steps(
            folder, status.open_escalations, [str(c["rule"]) for c in circuits]
        ),
    }


def show_status(status: FolderStatus, fmt: str, common: Common, folder: str = "DIR") -> None:
    data = status_json(status, folder)
    for warning in data["warnings"]:  # diagnostics go to stderr, whatever the format
        click.echo(printable(_warning_line(warning)), err=True)
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    lines = [f"Now: {data['result']}"]
    for kind, key, cap in (
        ("Subjects", "subject", "failure_type"),
        ("Issues", "fingerprint", "type"),
    ):
        rows = data[kind.lower()]
        if kind == "Subjects" and common.verbosity <= 0:
            rows = [r for r in rows if r["status"] != "ok"]
        if not rows:
            continue
        lines += ["", f"{kind}:"]
        for row in rows:
            state = row.get("status") or row.get("classification")
            step = f"; ladder step {row['ladder_step']}" if row.get("ladder_step") else ""
            last = row["last_decision"]
            if last:
                when = f"; last decision {last['reason']} at {last['at']}"
            elif kind == "Issues" and state in ("skipped", "blocked") and row.get("detail"):
                # held with its task: the task's decision is the issue's (rules §9.1)
                when = f"; held with its task: {printable(str(row['detail']))}"
            elif state == "recovered":  # a later call worked before anything was decided
                when = "; recovered on its own, nothing was decided for it"
            else:
                when = "; no decision recorded yet"
            name = row.get("id") or row[key] if kind == "Issues" else row[key]
            lines.append(
                f"  {printable(str(name))}  {row[cap]}  {state}  "
                f"attempts {attempts_text(row['attempts'], row['retries'])}{step}{when}"
            )
    if data["open_escalations"]:
        lines += ["", "Open escalations:"]
        lines += [
            f"  {e['id']}  {printable(str(e['subject']))}: {printable(str(e['reason']))}"
            for e in data["open_escalations"]
        ]
    if data["open_circuits"]:
        lines += ["", "Open circuits (the rule does not act until `selfcorrect reset --rule`):"]
        lines += [
            f"  {c['rule']} {c['rule_version']}: {c['reason']}" for c in data["open_circuits"]
        ]
    if data["next_steps"]:
        lines += ["", "Next (after doing what each asks):"]
        lines += [f"  {step}" for step in data["next_steps"]]
    if common.verbosity < 0:  # -q: the verdict line alone, as `run -q` (the exit code says it too)
        lines = lines[:1]
    # Every field here may come from an agent's file or a hand-edited journal: escape all.
    click.echo("\n".join(printable(line) for line in lines), color=common.color)


def _warning_line(warning: dict[str, Any]) -> str:
    return f"{warning['path']}:{warning['line']}:{warning['col']}: warning: {warning['message']}"
