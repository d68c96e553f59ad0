"""The click commands: arguments → one call → exit code. No decisions here (SPEC §20)."""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from selfcorrect import __version__
from selfcorrect.cli import report
from selfcorrect.cli.options import (
    Common,
    common_options,
    folder_argument,
    format_option,
    make_common,
)
from selfcorrect.errors import ExitCode, SelfcorrectError

if TYPE_CHECKING:
    import threading

_NOT_YET = "not yet implemented in this version of selfcorrect"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="selfcorrect")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Deterministic self-correction for multi-agent coding workflows.

    selfcorrect reads the YAML an agent workflow leaves in its workflow/ folder
    (validation_report.yaml, tool_failures.yaml, coordination_log.yaml, waypoints/),
    classifies every problem as FIXABLE or BLOCKED, enforces retry caps, climbs a
    six-step recovery ladder for stuck work, and escalates to a human with full context.

    \b
    Exit codes: 0 PASS · 1 BLOCKED (a human is needed) · 2 invalid input, policy
    or usage (nothing written) · 3 PENDING (work handed to agents) · 130 interrupted.
    """
    ctx.obj = {"debug": debug}


@cli.command()
@folder_argument
@format_option("text", "json")
@common_options
def check(
    folder: Path, fmt: str, policy: Path | None, color: str, verbose: int, quiet: bool
) -> int:
    """Schema-check every workflow file in DIR.

    Prints one line per problem as path:line:col: message. Decision documents
    (selfcorrect.yaml, validation_report.yaml, coordination_log.yaml,
    escalations.yaml, microtasks/*.yaml) must be valid: any error exits 2. Hook logs
    (tool_failures.yaml, waypoints) are append-only records: an unreadable entry
    is a warning, and the rest is read. Exits 0 when there is no error.
    """
    from selfcorrect.check import check_folder

    common = make_common(policy, color, verbose, quiet)
    result = check_folder(folder, policy)
    report.check_result(result, fmt, common)
    return ExitCode.INVALID if result.errors else ExitCode.PASS


@cli.command()
@folder_argument
@common_options
def init(folder: Path, policy: Path | None, color: str, verbose: int, quiet: bool) -> int:
    """Create DIR with a commented policy and empty but valid inputs.

    Writes selfcorrect.yaml (every default, and why), tool_failures.yaml,
    coordination_log.yaml, validation_report.yaml (no verdict yet) and
    escalations.yaml. Never overwrites an existing file: it says which it skipped.
    """
    from selfcorrect.init_folder import init_folder

    common = make_common(policy, color, verbose, quiet)
    created, skipped = init_folder(folder, policy)
    report.init_result(created, skipped, common)
    return ExitCode.PASS


@cli.command()
@folder_argument
@format_option("text", "json", "github", "sarif", "junit")
@click.option(
    "--shadow", is_flag=True, help="Print the plan and write nothing at all, not even the journal."
)
@click.option(
    "--max-cycles",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Fix-and-revalidate cycles at most (default: the policy's caps.global_cycles).",
)
@click.option(
    "--validate-first",
    is_flag=True,
    help="Run the validator once first, so the run starts from a fresh report.",
)
@common_options
def run(
    folder: Path,
    fmt: str,
    shadow: bool,
    max_cycles: int | None,
    validate_first: bool,
    policy: Path | None,
    color: str,
    verbose: int,
    quiet: bool,
) -> int:
    """Perform one correction run on DIR.

    \b
    Loads every workflow file (a bad decision document stops the run before
    anything is written), then:
    - classifies every validation issue FIXABLE or BLOCKED; runs the policy's
      fixer for each autofixable one (argv, in scope, bounded, verified, undone
      on failure) and writes a directive for each agent strategy to
      DIR/recovery/<task>.md;
    - types every tool failure, enforces its retry budget, detects stuck
      subjects and climbs the six-step recovery ladder, writing the recovery
      prompt to DIR/recovery/<subject>.md;
    - after a cycle that ran a fix, re-runs the validator and trusts only a
      fresh report; a report that got worse undoes the cycle's fixes;
    - splits unfinished subagent work into DIR/microtasks/<task>.yaml and writes
      DIR/handoffs/<task>.md when an agent's context needs a reset;
    - keeps coordination_log.yaml#failed_items and escalations.yaml current,
      and journals every decision in DIR/.selfcorrect/journal.jsonl.

    \b
    --format github|sarif|junit print CI output to stdout (SARIF 2.1.0 for
    GitHub code scanning). Exit codes: 0 PASS, 1 BLOCKED (see escalations.yaml),
    2 invalid input, 3 PENDING (work handed to agents through recovery/).
    """
    from selfcorrect.cli.run_report import EXIT, show_run
    from selfcorrect.run import correction_run

    common = make_common(policy, color, verbose, quiet)
    _require_folder(folder)
    outcome = correction_run(
        folder,
        policy_path=policy,
        shadow=shadow,
        max_cycles=max_cycles,
        validate_first=validate_first,
    )
    show_run(outcome, fmt, common, documents_display(folder))
    return EXIT[outcome.plan.result.value]


@cli.command()
@folder_argument
@format_option("text", "json")
@common_options
def status(
    folder: Path, fmt: str, policy: Path | None, color: str, verbose: int, quiet: bool
) -> int:
    """Show every subject and issue: classification, attempts against the cap,
    ladder step and last decision, plus the open escalations. Writes nothing."""
    from selfcorrect.cli.status_report import show_status
    from selfcorrect.status import folder_status

    common = make_common(policy, color, verbose, quiet)
    _require_folder(folder)
    show_status(folder_status(folder, policy), fmt, common)
    return ExitCode.PASS


@cli.command()
@folder_argument
@format_option("text", "json")
@click.option(
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report here instead of DIR/validation_report.yaml (so an "
    "external validator's report is never clobbered).",
)
@click.option(
    "--recheck",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Also re-check the file_exists / file_contains evidence cited by another "
    "validator's report against the project.",
)
@common_options
def validate(
    folder: Path,
    fmt: str,
    output: Path | None,
    recheck: Path | None,
    policy: Path | None,
    color: str,
    verbose: int,
    quiet: bool,
) -> int:
    """Run the built-in validator on DIR and write a canonical report.

    \b
    Coordination checks on coordination_log.yaml: missing log, unanswered
    questions, vague answers, incomplete or weak synthesis, circular delegation
    (every cycle, members in order). Output-quality checks configured under the
    policy's `checks:` key: commands (argv, never a shell), coverage (coverage.py
    JSON or Cobertura XML), required documentation, template headings.

    Exit codes: 0 PASS, 1 the report lists issues, 2 invalid input.
    """
    from selfcorrect.cli.validate_report import show_validation
    from selfcorrect.validator import validate_folder

    common = make_common(policy, color, verbose, quiet)
    result = validate_folder(folder, policy_path=policy, output=output, recheck=recheck)
    show_validation(result, fmt, common)
    return ExitCode.PASS if result.status == "PASS" else ExitCode.BLOCKED


@cli.command()
@folder_argument
@format_option("text", "json")
@click.option(
    "--debounce",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    metavar="MS",
    help="Start a run MS milliseconds after the last change (a burst is one run).",
)
@click.option(
    "--polling",
    is_flag=True,
    help="Poll the folder instead of using native file events (network filesystems).",
)
@click.option("--once", is_flag=True, help="Process the current state as one run and exit.")
@common_options
@click.pass_context
def watch(
    ctx: click.Context,
    folder: Path,
    fmt: str,
    debounce: int,
    polling: bool,
    once: bool,
    policy: Path | None,
    color: str,
    verbose: int,
    quiet: bool,
) -> int:
    """Run a correction run whenever DIR's inputs change from outside.

    \b
    Processes the current state at start-up, then watches DIR (recursively) and
    DIR/../waypoints/ for changes to the inputs: selfcorrect.yaml,
    validation_report.yaml, tool_failures.yaml, coordination_log.yaml,
    escalations.yaml, waypoints/*.yaml, microtasks/*.yaml and templates/.
    - Debounced: a run starts --debounce ms after the last change; runs never
      overlap, and changes made during a run cause one more run afterwards.
    - Blind to its own writes and to the validator it starts: a run happens only
      when an input's contents differ from what the last run left (content
      hashes). Editors' temp-file-and-rename saves count as changes; temp files,
      lock files, .selfcorrect/, recovery/ and handoffs/ are ignored.
    - A bad input is reported (file:line:col on stderr) and the watcher keeps
      running on the last good state; fixing the file resumes the runs.
    - One watcher per folder: a second one exits 2 at once, naming the pid that
      holds DIR/.selfcorrect/watch.lock.
    - --polling polls instead of using inotify; the watcher also falls back to
      polling, with a warning, when inotify is unavailable or out of watches.

    \b
    Output: one line per run (time, what changed, result and exit code, what was
    written); --format json prints one JSON object per line: the `run --format
    json` object plus "trigger" (the changed files), "exit" and "at".
    Exit codes: SIGINT or SIGTERM let the current run finish, then exit 0; a
    second signal interrupts at once (130); 2 when DIR is already watched.
    --once exits with the run's code, like `selfcorrect run`: 0 PASS, 1 BLOCKED,
    2 invalid input, 3 PENDING.
    """
    import threading

    from selfcorrect.watcher import Watcher

    common = make_common(policy, color, verbose, quiet)
    _require_folder(folder)

    def emit(line: str) -> None:
        click.echo(line, color=common.color)  # click.echo flushes: one line per run, at once

    from selfcorrect.cli.report import printable
    from selfcorrect.cli.watch_report import render

    watcher = Watcher(
        folder,
        policy,
        debounce_ms=debounce,
        polling=polling,
        render=lambda run: render(run, fmt, color=common.color and fmt == "text"),
        emit=emit,
        warn=lambda text: click.echo(printable(text), err=True),
        verbosity=common.verbosity,
        debug=bool((ctx.find_root().obj or {}).get("debug")),
    )
    if once:
        return watcher.run_once()
    stop = threading.Event()
    with _stop_on_signals(stop):
        return watcher.run_forever(stop)


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set `stop` (the watcher finishes its run); a second one interrupts."""
    import signal  # here, not at import: start-up time, and handlers only while watching

    def on_signal(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _require_folder(folder: Path) -> None:
    from selfcorrect.errors import Diagnostic, InputError

    if not folder.is_dir():
        raise InputError(
            Diagnostic(
                documents_display(folder),
                1,
                1,
                "not a folder; pass the workflow folder (the one holding validation_report.yaml)",
            )
        )


def documents_display(path: Path) -> str:
    from selfcorrect.io.documents import display_path

    return display_path(path)


def _stub(name: str, summary: str) -> None:
    @cli.command(
        name=name,
        help=f"{summary}\n\n(Not yet implemented: exits 2.)",
        context_settings={"ignore_unknown_options": True},
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: tuple[str, ...]) -> int:
        click.echo(f"selfcorrect {name}: {_NOT_YET}", err=True)
        return ExitCode.INVALID


_stub("stats", "Print per-rule figures from the journal.")
_stub("replay", "Run detection and classification over recorded folders.")
_stub("reset", "Close a circuit or give a subject a fresh budget, with evidence.")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return the exit code; every error is mapped here, once."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        code = cli.main(args=argv, prog_name="selfcorrect", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return ExitCode.INVALID
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except SelfcorrectError as exc:
        click.echo(str(exc), err=True)
        return int(exc.exit_code)
    except Exception as exc:  # an internal error: never exit 0, never a bare traceback
        if debug:
            click.echo(traceback.format_exc(), err=True)
        else:
            click.echo(
                f"selfcorrect: internal error: {type(exc).__name__}: {exc}\n"
                "Run again with --debug for the traceback, and please report it.",
                err=True,
            )
        return ExitCode.INTERNAL
    return int(code) if isinstance(code, int) else 0


def entry() -> None:
    """Console-script entry point."""
    raise SystemExit(main())


__all__ = ["Common", "cli", "entry", "main"]
