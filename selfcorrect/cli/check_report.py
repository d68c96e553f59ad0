"""What `check` and `init` print, in each --format. No decisions here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from selfcorrect.cli.options import Common
from selfcorrect.cli.words import count, printable

if TYPE_CHECKING:
    from selfcorrect.commands.check import CheckResult


def check_result(result: CheckResult, fmt: str, common: Common) -> None:
    if fmt == "json":
        import json  # only for JSON output: start-up counts (rules §18)

        click.echo(
            json.dumps(
                {
                    "ok": not result.errors,
                    "checked": result.checked,
                    "failure_entries": result.failure_entries,
                    "errors": len(result.errors),
                    "warnings": len(result.warnings),
                    "diagnostics": [d.as_dict() for d in result.diagnostics],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    if common.verbosity > 0:
        for path in result.checked:
            click.echo(click.style(f"checked {path}", dim=True), color=common.color)
    for diag in result.diagnostics:
        where = click.style(printable(f"{diag.path}:{diag.line}:{diag.col}:"), bold=True)
        tag = "" if diag.severity == "error" else click.style("warning: ", fg="yellow", bold=True)
        message = click.style(printable(diag.message), fg="red" if not tag else None)
        click.echo(f"{where} {tag}{message}", color=common.color)
    if common.verbosity >= 0:
        entries = count(result.failure_entries, "failure entry", "failure entries")
        summary = (
            f"{count(len(result.checked), 'file')} checked, {entries} read: "
            f"{count(len(result.errors), 'error')}, {count(len(result.warnings), 'warning')}"
        )
        click.echo(summary, err=True)


def init_result(created: list[Path], skipped: list[Path], common: Common) -> None:
    if common.verbosity < 0:  # -q: nothing but errors
        return
    for path in created:
        click.echo(f"created {path}")
    for path in skipped:
        click.echo(f"skipped {path} (exists; left as it is)")
    if created:
        click.echo(
            "Next: edit selfcorrect.yaml if the defaults do not suit, then run "
            "`selfcorrect check` on the folder.",
            err=True,
        )
