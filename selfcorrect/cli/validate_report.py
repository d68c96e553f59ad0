"""How `validate` shows its report: one line per issue for people, the report as JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from selfcorrect.cli.options import Common
from selfcorrect.cli.words import count, printable

if TYPE_CHECKING:
    from selfcorrect.commands.validate import Validation


def show_validation(result: Validation, fmt: str, common: Common) -> None:
    for warning in result.warnings:
        click.echo(printable(str(warning)), err=True)
    if fmt == "json":
        warnings = {"warnings": [w.as_dict() for w in result.warnings]} if result.warnings else {}
        click.echo(json.dumps({**result.report, **warnings}, indent=2, ensure_ascii=False))
        return
    colour = {"PASS": "green", "FIXABLE": "yellow", "BLOCKED": "red"}[result.status]
    lines = [
        click.style(result.status, fg=colour, bold=True)
        + f"  {count(len(result.findings), 'issue')}"
    ]
    for issue in result.report["issues"]:
        where = f" {issue['target']}" if issue.get("target") else ""
        task = f" [{issue['task_id']}]" if issue.get("task_id") else ""
        line = f"  {issue['id']}  {issue['severity']:<8} {issue['type']}{where}{task}"
        lines.append(printable(line))  # targets and task ids come from agents' files
        if common.verbosity >= 0:
            # A command's output tail spans lines: each is shown on its own, indented, and
            # only what is not printable is escaped (a newline used to come out as \x0a).
            for part in str(issue["description"]).splitlines() or [""]:
                lines.append(f"      {printable(part)}")
    lines.append(f"Wrote {result.written}" if result.written else "Report unchanged.")
    click.echo("\n".join(lines), color=common.color)
