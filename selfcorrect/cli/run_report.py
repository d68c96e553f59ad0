"""How `run` and `status` show a run: a table for people, one stable JSON object for tools.

The text form shows each stuck detection in the hooks' advisory shape (cli/advisory.py) below
the subjects table; the JSON object carries the same fields as `advisories`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from selfcorrect import layout
from selfcorrect.cli import cells
from selfcorrect.cli.advisory import advisory_lines
from selfcorrect.cli.options import Common
from selfcorrect.cli.words import attempts_text, count, printable
from selfcorrect.core.advisories import advisories
from selfcorrect.core.work_item_decision import shown_status
from selfcorrect.errors import result_exit_code
from selfcorrect.layout import work_item_file

if TYPE_CHECKING:
    from selfcorrect.commands.run import RunOutcome
    from selfcorrect.core.classify import IssueDecision
    from selfcorrect.core.decisions import Decisions
    from selfcorrect.core.outputs import Plan


def item_status(plan: Plan, work_item: str, own: str) -> str:
    """The one status of the work item a subject or issue belongs to: the status the prompt
    file, failed_items and escalations.yaml show too (core/work_item_decision.shown_status)."""
    return shown_status(plan.work_items, work_item, own)


def _why(plan: Plan, decision: IssueDecision) -> str:
    """The decision's reason; for a stopped work item (blocked, skipped), why it stopped."""
    item = plan.work_items.get(decision.work_item)
    if item is None or not item.stopped:
        return decision.detail
    return item.why + (f" ({item.escalation})" if item.escalation else "")


def subject_rows(decisions: Decisions, plan: Plan) -> list[dict[str, Any]]:
    rows = []
    for d in decisions.subjects:
        item = plan.item_of(d.subject)
        decided = plan.work_items.get(item)
        # A part held by its item's block (core/work_item_decision.py) stays where it was.
        held = decided is not None and decided.holds("subject", d.subject)
        step = plan.subject_steps.get(d.subject, d.ladder_step)
        rows.append(
            {
                "subject": d.subject,
                "failure_type": d.failure_type,
                "attempts": d.attempts,
                # Owner turns it failed in, where the host reports turns (the ceiling's count).
                "rounds": d.rounds,
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
                "ladder_step": step,
                "status": item_status(plan, item, d.status.value),
                "reason": HELD if held else d.reason.value,
            }
        )
    return rows


HELD = "HELD"  # its work item is blocked (or skipped) by another of its parts


def issue_rows(decisions: Decisions, plan: Plan) -> list[dict[str, Any]]:
    return [
        {
            "fingerprint": d.fingerprint,
            "id": d.issue.id,
            "type": d.type,
            "severity": d.issue.severity.value.upper(),
            "classification": d.classification.value,
            "reason": d.reason.value,
            "detail": _why(plan, d),  # a stopped work item says why it stopped
            "attempts": d.spent,
            "retries": d.retries,
            "status": item_status(plan, d.work_item, "pending"),
            "ladder_step": d.ladder_step,  # its retries spent: the recovery step handed out
            "strategy": d.strategy,
            "target": d.issue.target,
            "task_id": d.issue.task_id,
        }
        for d in decisions.issues
    ]


# --- what to read: each issue and subject says what is wrong and where to look (docs/ci.md) ---


def add_what_to_read(
    outcome: RunOutcome, issues: list[dict[str, Any]], subjects: list[dict[str, Any]]
) -> None:
    """Adds to each row (in decision order) what a person or a CI log needs to act on it:

    - `description`: the issue's description, or the subject's latest error (its summary, as
      failed_items carries it);
    - `prompt`: the recovery file this run wrote for its work item (in shadow: would write),
      relative to the workflow folder like `advisories[].prompt`; null when there is none;
    - `escalation`: the id of the escalation a person should read, else null.

    Keys are only ever added to the JSON object, never renamed or removed.
    """
    from selfcorrect.core.summary import summary

    plan, decisions = outcome.plan, outcome.decisions

    def escalation_of(work_item: str) -> str | None:  # the work item's one decision says it
        item = plan.work_items.get(work_item)
        return item.escalation if item is not None else None

    for row, issue in zip(issues, decisions.issues, strict=True):
        row["description"] = summary(issue.issue.description)
        row["prompt"] = prompt_path(outcome, issue.work_item)
        row["escalation"] = escalation_of(issue.work_item)
    for row, decision in zip(subjects, decisions.subjects, strict=True):
        record = decisions.records.get(decision.subject)
        latest = record.chain[-1].error if record is not None and record.chain else ""
        row["description"] = summary(latest)
        work_item = outcome.plan.item_of(decision.subject)
        row["prompt"] = prompt_path(outcome, work_item)
        row["escalation"] = escalation_of(work_item)


def add_positions(
    outcome: RunOutcome, folder: Path, issues: list[dict[str, Any]], subjects: list[dict[str, Any]]
) -> str | None:
    """Adds `line` to each row (the issue's line in validation_report.yaml, the subject's
    latest failure's in tool_failures.yaml; null when unknown) and `file` to each subject (the
    file that failure names, or null); returns the folder relative to the repository root, which
    CI formats print every path relative to (docs/ci.md, "Lines")."""
    from selfcorrect.io import positions

    decisions = outcome.decisions
    max_bytes = decisions.policy.limits.max_bytes
    issue_lines = positions.issue_lines(folder, [d.issue for d in decisions.issues], max_bytes)
    for row, line in zip(issues, issue_lines, strict=True):
        row["line"] = line
    latest = {
        d.subject: record.latest_position
        for d in decisions.subjects
        if (record := decisions.records.get(d.subject)) is not None
    }
    entries = positions.failure_entries(folder, latest, max_bytes)
    for row in subjects:
        entry = entries.get(row["subject"])
        row["line"] = entry.line if entry else None
        row["file"] = entry.file if entry else None
    return positions.folder_in_repository(folder)


def prompt_path(outcome: RunOutcome, work_item: str) -> str | None:
    """`recovery/<file>` when this run rendered a prompt for the work item, else None."""
    name = work_item_file(work_item)
    return f"{layout.RECOVERY}/{name}" if name in outcome.rendered else None


def run_json(outcome: RunOutcome, folder: Path | None = None) -> dict[str, Any]:
    """The documented, stable `--format json` object (rules §16; docs/commands.md, "JSON
    output"). With the workflow `folder`, rows also say where they stand in their files
    (add_positions)."""
    plan = outcome.plan
    issues = issue_rows(outcome.decisions, plan)
    subjects = subject_rows(outcome.decisions, plan)
    add_what_to_read(outcome, issues, subjects)
    where: dict[str, Any] = {}
    if folder is not None:
        where["workflow_dir"] = add_positions(outcome, folder, issues, subjects)
    return {
        **where,
        "result": plan.result.value,
        "cycles": outcome.cycles,
        "shadow": outcome.shadow,
        "issues": issues,
        "subjects": subjects,
        "escalations": [
            {"id": e.id, "subject": e.subject, "reason": e.reason, "kind": e.kind}
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
        # Every stuck signal firing, in the hooks' advisory fields (rules §8). A later addition:
        # keys are only ever added to this object, never renamed or removed.
        "advisories": [a.as_dict() for a in advisories(outcome.decisions, outcome.plan)],
        # Every file a fix of this run changed, kept or put back (rules §9.2).
        "changed_by_fixes": [f.as_dict() for f in outcome.fixed_files],
    }


def table(rows: Sequence[Sequence[str]], common: Common, columns: int | None = None) -> list[str]:
    """Rows aligned in display cells (cli/cells.py), fitted to `columns` cells (the terminal's;
    unlimited when piped): the last column (free text) is cut at its end and the first (a
    name) in the middle, keeping its file name, each with a visible ellipsis."""
    columns = terminal_columns() if columns is None else columns
    widths = [max(cells.width(row[i]) for row in rows) for i in range(len(rows[0]))]
    if columns > 0:
        over = 2 + sum(widths) + 2 * (len(widths) - 1) - columns
        last = len(widths) - 1
        for index, floor in ((last, 24), (0, 28), (last, 12), (0, 12)):
            if over > 0 and widths[index] > floor:
                cut = min(over, widths[index] - max(floor, cells.width(rows[0][index])))
                widths[index] -= max(0, cut)
                over -= max(0, cut)
    lines = []
    for number, row in enumerate(rows):
        shown = [
            cells.fit_middle(cell, widths[i]) if i == 0 else cells.fit_end(cell, widths[i])
            for i, cell in enumerate(row)
        ]
        text = "  ".join(cells.ljust(cell, widths[i]) for i, cell in enumerate(shown)).rstrip()
        lines.append(click.style(text, bold=True) if number == 0 else text)
    return ["  " + line for line in lines]


def terminal_columns() -> int:
    """The terminal's width in cells ($COLUMNS first); 0 (no limit) when stdout is no terminal."""
    import shutil

    return shutil.get_terminal_size((0, 0)).columns


def _steps(step: int | None) -> str:
    return "-" if step is None else str(step)


def show_run(
    outcome: RunOutcome,
    fmt: str,
    common: Common,
    folder: str,
    path: Path | None = None,
    sarif_file: Path | None = None,
    *,
    exit_code: int | None = None,
) -> None:
    """`folder` as the user typed it; `path` the folder itself, for the machine formats'
    positions (without it, they carry none); `sarif_file` where the SARIF log goes too.
    `exit_code`: what the process returns (under --pending-ok a PENDING run exits 0), the
    result's own when not given."""
    for warning in outcome.decisions.warnings:
        click.echo(printable(str(warning)), err=True)
    data = run_json(outcome, path) if fmt != "text" or sarif_file is not None else {}
    write_ci_files(data, fmt, folder, sarif_file)
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if fmt in ("github", "sarif", "junit"):
        from selfcorrect.cli import ci_formats

        text = {
            "github": lambda: ci_formats.render_github(data, workflow_dir=folder),
            "sarif": lambda: ci_formats.render_sarif(data, workflow_dir=folder),
            "junit": lambda: ci_formats.render_junit(data, workflow_dir=folder),
        }[fmt]()
        click.echo(text.rstrip("\n"))
        return
    plan, decisions = outcome.plan, outcome.decisions
    colour = {"PASS": "green", "PENDING": "yellow", "BLOCKED": "red"}[plan.result.value]
    mode = " (shadow: nothing written)" if outcome.shadow else ""
    code = result_exit_code(plan.result.value) if exit_code is None else exit_code
    lines = [
        click.style(f"{plan.result.value}", fg=colour, bold=True)
        + f"  selfcorrect run {folder}{mode}  (exit {int(code)})"
    ]
    found = advisories(outcome.decisions, outcome.plan)
    lines += _body(
        decisions,
        plan,
        common,
        advisory_lines(found, folder, verbose=common.verbosity > 0, shadow=outcome.shadow),
    )
    if plan.escalations:
        lines += ["", "Escalations (a human is needed):"]
        lines += [
            f"  {e.id}  {printable(e.subject)}: {printable(e.reason)}" for e in plan.escalations
        ]
    if outcome.fixed_files:
        lines += ["", "Changed by fixes:"]
        lines += [
            f"  {printable(f.path)}  "
            + (
                f"changed by {printable(f.fix)}"
                if f.change == "changed"
                else f"put back (the fix for {printable(f.fix)} was undone)"
            )
            for f in outcome.fixed_files
        ]
    if waiting := _waiting_for_validator(outcome, folder):
        lines += ["", waiting]
    if outcome.shadow:
        would = [f"  {folder}/{layout.RECOVERY}/{name}" for name in sorted(outcome.rendered)]
        if plan.failed_items:
            entries = f"({count(len(plan.failed_items), 'entry', 'entries')})"
            would.append(f"  {folder}/{layout.COORDINATION_LOG}#failed_items {entries}")
        if changes := _escalation_changes(outcome):
            would.append(f"  {folder}/{layout.ESCALATIONS} ({changes})")
        if plan.journal:
            would.append(f"  {folder}/{layout.JOURNAL} ({count(len(plan.journal), 'record')})")
        lines += ["", "Would write:", *would] if would else ["", "Nothing to write."]
    elif outcome.written:
        lines += ["", "Written:"] + [f"  {path}" for path in outcome.written]
    else:
        lines += ["", "Nothing new to write."]
    why = "; ".join(shown for shown in (printable(r).strip() for r in plan.reasons) if shown)
    lines += ["", "Why: " + why] if why else []  # a PASS may have nothing to explain
    if common.verbosity < 0:
        lines = lines[:1]
    click.echo("\n".join(lines), color=common.color)


def write_ci_files(data: dict[str, Any], fmt: str, folder: str, sarif_file: Path | None) -> None:
    """Beside what stdout shows, one run's other CI outputs (docs/ci.md): the SARIF log to
    `--sarif FILE`, and under `--format github` the job summary, appended to the file GitHub
    names in $GITHUB_STEP_SUMMARY, so a log without code scanning still says what is blocked."""
    from selfcorrect.cli import ci_formats
    from selfcorrect.io.atomic import replace_file

    if sarif_file is not None:
        text = ci_formats.render_sarif(data, workflow_dir=folder)
        replace_file(sarif_file, text.encode("utf-8"), always=True)
    if fmt == "github":
        append_job_summary(ci_formats.render_summary(data, workflow_dir=folder))


def append_job_summary(markdown: str) -> None:
    """Append to the job summary file GitHub Actions gives each step; nothing elsewhere."""
    import os

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(markdown)


def _escalation_changes(outcome: RunOutcome) -> str:
    """What a run would change in escalations.yaml: the entries it adds (each is written once)
    and the ones it settles; "" when nothing."""
    known = {e.id for e in outcome.decisions.escalations}
    new = sum(e.id not in known for e in outcome.plan.escalations)
    settled = len(outcome.plan.resolutions)
    parts = [count(new, "new escalation")] if new else []
    parts += [f"{count(settled, 'escalation')} settled"] if settled else []
    return ", ".join(parts)


def _waiting_for_validator(outcome: RunOutcome, folder: str) -> str | None:
    """PENDING with nothing handed to an agent means no one is working yet: say what is so
    (exit 3 alone reads as "work handed to agents")."""
    plan, report = outcome.plan, outcome.decisions.report
    handed = any(item.acts for item in plan.work_items.values())
    if plan.result.value != "PENDING" or outcome.rendered or handed or plan.fixes:
        return None
    where = f"{folder}/{layout.REPORT}"
    if report is None:
        state = f"No validation report yet ({where} does not exist)"
    elif report.verdict.value == "NONE":
        state = f"No verdict yet ({where} has none: no validator has run)"
    else:
        state = f"The report's verdict is {report.verdict.value}, with no issue to hand out"
    return (
        f"{state}: nothing was handed to agents; waiting for a validator. Run "
        f"`selfcorrect validate {folder}` (or your own validator), then run again."
    )


def _body(decisions: Decisions, plan: Plan, common: Common, advisory: list[str]) -> list[str]:
    lines: list[str] = []
    failing = [d for d in decisions.subjects if d.status.value != "ok" or common.verbosity > 0]
    if failing:
        entries = count(decisions.log_entries, "log entry", "log entries")
        lines += ["", f"Subjects ({entries}, {len(failing)} shown):"]
        rows = [["SUBJECT", "TYPE", "ATTEMPTS", "STATUS", "STEP", "SIGNALS"]]
        rows += [
            [
                printable(d.subject),
                printable(d.failure_type),
                attempts_text(d.attempts, d.retries),
                item_status(plan, plan.item_of(d.subject), d.status.value),
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
                attempts_text(d.spent, d.retries),
                printable(_why(plan, d)),
            ]
            for d in decisions.issues
        ]
        lines += table(rows, common)
    return lines
