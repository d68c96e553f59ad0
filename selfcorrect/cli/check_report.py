"""What `check` and `init` print, in each --format. No decisions here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from selfcorrect.cli.options import Common
from selfcorrect.cli.words import count, printable

if TYPE_CHECKING:
    from collections.abc import Sequence

    from selfcorrect.commands.check import CheckResult
    from selfcorrect.errors import Diagnostic


def check_result(result: CheckResult, fmt: str, common: Common) -> None:
    if fmt in ("github", "sarif"):
        click.echo(ci_diagnostics(result.diagnostics, fmt), nl=False)
        _summary(result, common)
        return
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
    _summary(result, common)


def _summary(result: CheckResult, common: Common) -> None:
    if common.verbosity >= 0:
        entries = count(result.failure_entries, "failure entry", "failure entries")
        summary = (
            f"{count(len(result.checked), 'file')} checked, {entries} read: "
            f"{count(len(result.errors), 'error')}, {count(len(result.warnings), 'warning')}"
        )
        click.echo(summary, err=True)


def ci_diagnostics(diagnostics: Sequence[Diagnostic], fmt: str) -> str:
    """Input problems as GitHub annotations or a SARIF log, each path relative to the
    repository root (GitHub resolves annotations from there)."""
    from selfcorrect.cli import ci_formats
    from selfcorrect.errors import Diagnostic as Problem
    from selfcorrect.io.positions import in_repository

    rooted = [
        Problem(in_repository(d.path), d.line, d.col, d.message, d.severity) for d in diagnostics
    ]
    if fmt == "sarif":
        return ci_formats.render_diagnostics_sarif(rooted)
    return ci_formats.render_diagnostics_github(rooted)


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
