"""What `selfcorrect install` prints: one line per event changed, then the settings file."""

from __future__ import annotations

import posixpath

import click

from selfcorrect.cli.options import Common
from selfcorrect.cli.words import printable
from selfcorrect.commands.install import InstallResult


def show_installs(results: list[InstallResult], common: Common) -> None:
    """Each settings file install changed (the first, the one it writes, always), or, when an
    uninstall found nothing in any, one line naming them all."""
    changed = [r for r in results if r.changes]
    if results[0].uninstall and not changed:
        for result in results:
            for warning in result.warnings:
                click.echo(printable(warning), err=True)
        if common.verbosity >= 0:
            where = " or ".join(r.display for r in results)
            click.echo(printable(f"no selfcorrect hooks in {where}: nothing to remove"))
        return
    for result in results:
        if result.changes or (result is results[0] and not result.uninstall):
            show_install(result, common)


def show_install(result: InstallResult, common: Common) -> None:
    """Warnings go to stderr whatever -q says (they ask for an edit); with --dry-run the diff is
    printed even under -q, since it is what was asked for; everything else -q silences."""
    for warning in result.warnings:
        click.echo(printable(warning), err=True)
    if result.dry_run:
        for line in result.diff:
            click.echo(printable(line))
    if common.verbosity < 0:
        return
    for change in result.changes:
        click.echo(printable(f"{change.action} {change.event} hook: {change.command}"))
    where = result.display
    if not result.changes:
        if result.uninstall:
            click.echo(printable(f"no selfcorrect hooks in {where}: nothing to remove"))
        else:
            click.echo(printable(f"already installed in {where}: nothing written"))
    elif result.dry_run:
        click.echo(printable(f"dry run: {where} not {'removed' if result.deleted else 'written'}"))
        if result.folder_removed:
            click.echo(printable(f"dry run: {posixpath.dirname(where)}/ not removed"))
    elif result.deleted:
        click.echo(printable(f"removed {where} (install had created it)"))
    if result.folder_removed and not result.dry_run:
        click.echo(printable(f"removed {posixpath.dirname(where)}/ (install had created it)"))
    elif result.written:
        click.echo(printable(f"{'created' if result.created else 'wrote'} {where}"))
    else:
        click.echo(printable(f"{where} changed meanwhile and needs nothing now: nothing written"))
