"""The click commands: arguments → one call → exit code. No decisions here (rules §20)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from selfcorrect import __version__
from selfcorrect.cli import check_report
from selfcorrect.cli.options import (
    Common,
    common_options,
    folder_argument,
    format_option,
    make_common,
    new_folder_argument,
    pending_exit,
    pending_ok_option,
    wait_option,
)
from selfcorrect.cli.words import printable
from selfcorrect.errors import ExitCode, InputError, SelfcorrectError, result_exit_code

if TYPE_CHECKING:
    import threading


class _LazyGroup(click.Group):
    """A group that builds a command only when it is run, or listed by --help: building all
    of them, their options and types, cost every command's start-up (rules §18)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.makers: dict[str, Callable[[], click.Command]] = {}

    def names(self) -> list[str]:
        return sorted({*self.commands, *self.makers})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self.names()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        make = self.makers.pop(cmd_name, None)
        if make is not None:
            self.add_command(make(), cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.makers and args[0] not in self.commands:
            # Not a command's name: build them all, for click's "Did you mean" to see them.
            for name in list(self.makers):
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="selfcorrect")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@common_options
@click.pass_context
def cli(
    ctx: click.Context,
    debug: bool,
    policy: Path | None,
    color: str,
    verbose: int,
    quiet: bool,
) -> None:
    """Deterministic self-correction for multi-agent coding workflows.

    selfcorrect reads the YAML an agent workflow leaves in its workflow/ folder
    (validation_report.yaml, tool_failures.yaml, coordination_log.yaml, waypoints/),
    classifies every problem as FIXABLE or BLOCKED, enforces retry caps, climbs a
    six-step recovery ladder for stuck work, and escalates to a human with full context.

    \b
    Global options (--policy, --color, -v, -q) go before or after the command.

    \b
    Exit codes: 0 PASS · 1 BLOCKED (a human is needed) · 2 invalid input, policy
    or usage (nothing written) · 3 PENDING (work handed to agents) · 4 internal
    error (a bug: run again with --debug and report it) · 130 interrupted.
    """
    ctx.obj = {"debug": debug}
    _pass_global_options(ctx, policy=policy, color=color, verbose=verbose, quiet=quiet)


def _pass_global_options(ctx: click.Context, **values: object) -> None:
    """Options given before the command name become the command's defaults, so
    `selfcorrect -q run DIR` and `selfcorrect run DIR -q` mean the same; given after it too,
    the command's own value wins. Click looks a subcommand's defaults up in its parent's
    `default_map` under the subcommand's name, after this callback has run."""
    given = {
        name: value
        for name, value in values.items()
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    }
    if given:
        ctx.default_map = {name: dict(given) for name in cli.names()}


def _lazy(name: str) -> Callable[[Callable[[], click.Command]], Callable[[], click.Command]]:
    """Register a function that builds the command `name`, for the group to call when needed."""

    def register(make: Callable[[], click.Command]) -> Callable[[], click.Command]:
        cli.makers[name] = make
        return make

    return register


@_lazy("check")
def _make_check() -> click.Command:
    @click.command()
    @folder_argument
    @format_option("text", "json", "github", "sarif")
    @common_options
    def check(
        folder: Path, fmt: str, policy: Path | None, color: str, verbose: int, quiet: bool
    ) -> int:
        """Schema-check every workflow file in DIR.

        Prints one line per problem as path:line:col: message. Decision documents
        (selfcorrect.yaml, validation_report.yaml, coordination_log.yaml,
        escalations.yaml, microtasks/*.yaml) must be valid: any error exits 2. Hook logs
        (tool_failures.yaml, waypoints) are append-only records: an unreadable entry
        is a warning, and the rest is read. Every name the policy uses is held
        against this machine: each command's program (on PATH, or a path from the
        project root), each strategy and each checks.templates file; a wrong one is an
        error with a did-you-mean (the shipped defaults' own fixers, e.g. eslint, are
        not required). Exits 0 when there is no error.
        --format github prints GitHub annotations, --format sarif a SARIF log; under
        GitHub Actions (GITHUB_ACTIONS=true) the default is github.
        """
        from selfcorrect.cli.progress import failure_log_progress
        from selfcorrect.commands.check import check_folder

        fmt = _check_format(fmt)
        common = make_common(policy, color, verbose, quiet)
        _require_folder(folder)
        with failure_log_progress(common.verbosity):
            result = check_folder(folder, policy)
        check_report.check_result(result, fmt, common)
        return ExitCode.INVALID if result.errors else ExitCode.PASS

    return check


@_lazy("init")
def _make_init() -> click.Command:
    @click.command()
    @new_folder_argument
    @common_options
    def init(folder: Path, policy: Path | None, color: str, verbose: int, quiet: bool) -> int:
        """Create DIR with a commented policy and empty but valid inputs.

        Writes a short selfcorrect.yaml (what users usually change, commented out:
        the built-in defaults apply until you uncomment a key), tool_failures.yaml,
        coordination_log.yaml, validation_report.yaml (no verdict yet, and no
        validator's: `validate` replaces it),
        escalations.yaml, a .gitignore for the folder's outputs, and the editor
        schemas in .selfcorrect/schemas/. Never overwrites an existing file: it says
        which it skipped. -q prints nothing but errors.
        """
        from selfcorrect.commands.init import init_folder

        common = make_common(policy, color, verbose, quiet)
        created, skipped = init_folder(folder, policy)
        check_report.init_result(created, skipped, common)
        return ExitCode.PASS

    return init


@_lazy("run")
def _make_run() -> click.Command:
    @click.command()
    @folder_argument
    @format_option("text", "json", "github", "sarif", "junit")
    @click.option(
        "--shadow",
        is_flag=True,
        help="Print the plan and write nothing at all, not even the journal.",
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
    @click.option(
        "--sarif",
        "sarif_file",
        type=click.Path(path_type=Path, dir_okay=False),
        metavar="FILE",
        help="Also write the SARIF 2.1.0 log to FILE, whatever --format prints (the Action "
        "prints annotations and uploads this file from one run).",
    )
    @pending_ok_option
    @wait_option
    @common_options
    def run(
        folder: Path,
        fmt: str,
        shadow: bool,
        max_cycles: int | None,
        validate_first: bool,
        sarif_file: Path | None,
        pending_ok: bool,
        wait: float,
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
        GitHub code scanning); github also appends a Markdown job summary (the
        verdict, each item, each open escalation with its reset command) to the
        file $GITHUB_STEP_SUMMARY names. Exit codes: 0 PASS, 1 BLOCKED (see
        escalations.yaml), 2 invalid input, 3 PENDING (work handed to agents
        through recovery/). A validator or check command whose program is not
        installed is invalid input (exit 2, nothing run), --shadow included.

        \b
        One writer per folder: a run holds DIR/.selfcorrect/folder.lock while it
        works; a second run (or reset, validate, a watcher's run) waits for it up
        to --wait seconds, then exits 2 naming the holder's pid. --shadow reads
        without the lock and writes nothing.
        """
        from selfcorrect.cli.progress import failure_log_progress
        from selfcorrect.cli.run_report import show_run
        from selfcorrect.commands.run import correction_run

        common = make_common(policy, color, verbose, quiet)
        _require_folder(folder)
        with failure_log_progress(common.verbosity):
            outcome = correction_run(
                folder,
                policy_path=policy,
                shadow=shadow,
                max_cycles=max_cycles,
                validate_first=validate_first,
                wait=wait,
                programs=True,
            )
        # A validator that could not start is no agent at work: --pending-ok never passes it.
        passes = pending_ok and outcome.unstarted is None
        code = pending_exit(result_exit_code(outcome.plan.result.value), passes)
        display = documents_display(folder)
        show_run(outcome, fmt, common, display, folder, sarif_file, exit_code=code)
        return code

    return run


@_lazy("status")
def _make_status() -> click.Command:
    @click.command()
    @folder_argument
    @format_option("text", "json")
    @common_options
    def status(
        folder: Path, fmt: str, policy: Path | None, color: str, verbose: int, quiet: bool
    ) -> int:
        """Show every subject and issue: classification, attempts against the cap,
        ladder step and last decision, plus the open escalations and open circuits.
        Writes nothing.

        \b
        Exit codes, as a run's would be now:
          0  PASS
          1  BLOCKED: a person is needed (see the open escalations)
          2  invalid input or usage
          3  PENDING: work handed to agents
        """
        from selfcorrect.cli.progress import failure_log_progress
        from selfcorrect.cli.status_report import show_status
        from selfcorrect.commands.status import folder_status

        common = make_common(policy, color, verbose, quiet)
        _require_folder(folder)
        with failure_log_progress(common.verbosity):
            found = folder_status(folder, policy)
        show_status(found, fmt, common, documents_display(folder))
        return result_exit_code(found.outcome.plan.result.value)

    return status


@_lazy("validate")
def _make_validate() -> click.Command:
    @click.command()
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
    @click.option(
        "--force",
        is_flag=True,
        help="Replace the report even when another validator wrote it (by default that is "
        "refused: write to --output instead).",
    )
    @wait_option
    @common_options
    def validate(
        folder: Path,
        fmt: str,
        output: Path | None,
        recheck: Path | None,
        force: bool,
        wait: float,
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

        A report another validator wrote (it names that validator, or is in a cAgents
        dialect) is never replaced: use --output, or --force.

        Exit codes: 0 PASS, 1 the report lists issues, 2 invalid input.
        """
        from selfcorrect.cli.validate_report import show_validation
        from selfcorrect.commands.validate import validate_folder

        common = make_common(policy, color, verbose, quiet)
        # An empty folder is the validator's to judge (a missing coordination log is a finding).
        _require_folder(folder, workflow_file=False)
        result = validate_folder(
            folder, policy_path=policy, output=output, recheck=recheck, wait=wait, force=force
        )
        show_validation(result, fmt, common)
        return result_exit_code(result.status)

    return validate


@_lazy("watch")
def _make_watch() -> click.Command:
    @click.command()
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

        from selfcorrect.commands.watch import Watcher

        common = make_common(policy, color, verbose, quiet)
        _require_folder(folder)

        def emit(line: str) -> None:
            click.echo(line, color=common.color)  # click.echo flushes: one line per run, at once

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

    return watch


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


def _require_folder(folder: Path, *, workflow_file: bool = True) -> None:
    """Exit 2 unless DIR is a folder and (unless told otherwise) holds a workflow file
    (cli/workflow_folder.py)."""
    from selfcorrect.cli.workflow_folder import require_workflow_folder

    require_workflow_folder(folder, documents_display(folder), workflow_file=workflow_file)


def documents_display(path: Path) -> str:
    from selfcorrect.io.documents import display_path

    return display_path(path)


@_lazy("stats")
def _make_stats() -> click.Command:
    @click.command()
    @folder_argument
    @format_option("text", "json")
    @common_options
    def stats(
        folder: Path, fmt: str, policy: Path | None, color: str, verbose: int, quiet: bool
    ) -> int:
        """Print per-rule-version figures from DIR's journal. Writes nothing.

        \b
        One row per rule and version (a rule's version changes when its definition
        in the policy does), counted from DIR/.selfcorrect/journal.jsonl:
          DETECTED     new occurrences: an issue or stuck subject first seen (again
                       after it was resolved or reset); shadow proposals count too
          REJECTED     fixes that preflight refused (preflight -> escalated)
          REMEDIATED   remediations handed out: fixes run, directives written,
                       ladder prompts for a higher step
          RECOVERED    verified recoveries: the issue left a fresh report, or the
                       subject succeeded after selfcorrect acted
          COMPENSATED  fixes undone after verification failed or the report got worse
          CIRCUIT      times the rule's circuit opened
          RECURRED     detections of something that had recovered before
          PRECISION    (detections - false positives) / detections, once someone
                       marked a detection false (reset --false-positive); else -
        Below it, the calibration: per type and strategy (or ladder:N), attempts
        handed out and the verified recoveries that followed (calibration.yaml).
        --format json prints {"rules", "calibration", "journal_records"}.
        Exit codes: 0, or 2 when DIR is not a folder.
        """
        from selfcorrect.cli.stats_report import show_stats
        from selfcorrect.commands.stats import folder_stats
        from selfcorrect.io.journal import journal_path

        common = make_common(policy, color, verbose, quiet)
        _require_folder(folder, workflow_file=False)  # no journal yet is an answer
        result = folder_stats(folder)
        show_stats(result, fmt, common, documents_display(journal_path(folder)))
        return ExitCode.PASS

    return stats


@_lazy("replay")
def _make_replay() -> click.Command:
    @click.command()
    @click.argument(
        "paths",
        metavar="PATH...",
        nargs=-1,
        required=True,
        type=click.Path(path_type=Path, exists=True),
    )
    @format_option("text", "json")
    @click.option(
        "--baseline",
        type=click.Path(path_type=Path, dir_okay=False, exists=True),
        help="YAML file of recorded figures ({detectors: {NAME: {precision, recall}}}); "
        "exit 1 when a figure drops below its recorded value or becomes undefined.",
    )
    @common_options
    def replay(
        paths: tuple[Path, ...],
        fmt: str,
        baseline: Path | None,
        policy: Path | None,
        color: str,
        verbose: int,
        quiet: bool,
    ) -> int:
        """Run detection and classification over recorded workflow folders.

        \b
        Each PATH is a workflow folder, a folder of cases (every folder with an
        expected.yaml at PATH or one or two levels below it is a case), a
        labelled text file (*.texts.yaml, also found up to two levels below a
        PATH: real failure texts, each with the type a careful person gives
        it), or a journal (*.jsonl), whose detections are counted per rule
        version.
        Nothing is executed and nothing is written, not even the journal.
        Every fixer program is assumed installed, so the decisions (and the
        labels that judge them) do not depend on this machine.

        \b
        Where a folder carries labels (expected.yaml: what a careful human says
        is true of it), prints each detector's true and false positives, false
        negatives, precision and recall, summed over all cases ("-": undefined).
        Labels judge subjects, issues (type, FIXABLE/BLOCKED, task) and the whole
        folder: whether it reads (read: ok|refused) and the run's verdict.
        Text files score the taxonomy as `typing`: precision 1.00 means no text
        got a wrong type, recall is the share typed as labelled.
        -v lists, per case, what was labelled and what was decided instead.
        The policy is --policy, else each folder's own selfcorrect.yaml (for
        text files, the shipped defaults).

        Exit codes: 0 done, 1 a figure is below --baseline, 2 invalid input.
        """
        from selfcorrect.cli.replay_report import show_replay
        from selfcorrect.commands.replay import replay as replay_paths

        common = make_common(policy, color, verbose, quiet)
        from selfcorrect.hooks.session_play import played

        result = replay_paths(list(paths), policy, baseline=baseline, play=played)
        show_replay(result, fmt, common)
        return ExitCode.BLOCKED if result.drops else ExitCode.PASS

    return replay


@_lazy("report")
def _make_report_command() -> click.Command:
    @click.command(name="report")
    @folder_argument
    @click.option(
        "-o",
        "--output",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Write the page here (default: DIR/report.html).",
    )
    @common_options
    def report_command(
        folder: Path,
        output: Path | None,
        policy: Path | None,
        color: str,
        verbose: int,
        quiet: bool,
    ) -> int:
        """Write the session as one self-contained HTML page (docs/report.md).

        \b
        Summary counts first (work items by status, failures and issues by type,
        ladder steps, fixes verified and undone, resets), then the open escalations,
        then what needs you, what is being worked and what is done: each work item
        with its status, last error and next step in view, then its failures,
        ladder steps, fixes, escalations and resets (the last 12 events and the
        latest of each kind, with the older ones counted). The same decisions as `selfcorrect status`;
        nothing but the page is written. The page loads nothing (inline CSS,
        no script) and prints one status group per page.
        Exit codes: 0 written, 2 invalid input (nothing written).
        """  # noqa: E501 (a \b block: click prints these lines as they are)
        from selfcorrect.cli.progress import failure_log_progress
        from selfcorrect.cli.report_html import render_report
        from selfcorrect.cli.status_report import status_json
        from selfcorrect.cli.words import count
        from selfcorrect.commands.report import session_report

        common = make_common(policy, color, verbose, quiet)
        _require_folder(folder)
        with failure_log_progress(common.verbosity):  # a big log: progress on a terminal
            result = session_report(
                folder, output, policy_path=policy, render=render_report, view=status_json
            )
        if common.verbosity >= 0:
            items = result.report.items
            escalations = len(result.report.open_escalations)
            click.echo(
                printable(
                    f"wrote {documents_display(result.path)} ({result.size:,} bytes): "
                    f"{count(len(items), 'work item')}, "
                    f"{count(escalations, 'open escalation')}, now {result.report.result}"
                )
            )
        return ExitCode.PASS

    return report_command


@_lazy("reset")
def _make_reset_command() -> click.Command:
    @click.command(name="reset")
    @folder_argument
    @click.option("--subject", metavar="S", help="A subject, task id or issue fingerprint.")
    @click.option(
        "--rule", metavar="R", help="A rule, e.g. linting_errors or issue_type:linting_errors."
    )
    @click.option("--escalation", metavar="E", help="An escalation id from escalations.yaml.")
    @click.option(
        "--evidence", metavar="TEXT", help="Why it is safe to go on (required; journaled)."
    )
    @click.option("--actor", metavar="NAME", help="Who is resetting (default: $USER).")
    @click.option(
        "--false-positive",
        is_flag=True,
        help="The detection was wrong: counted against the rule's precision in `stats`.",
    )
    @click.option(
        "--no-retry",
        is_flag=True,
        help="Resolve without handing the item straight back: the budget still starts again, "
        "but nothing is handed out until new evidence (new failures or a fresh report) says "
        "the problem is still there.",
    )
    @format_option("text", "json")
    @wait_option
    @common_options
    def reset_command(
        folder: Path,
        subject: str | None,
        rule: str | None,
        escalation: str | None,
        evidence: str | None,
        actor: str | None,
        false_positive: bool,
        no_retry: bool,
        fmt: str,
        wait: float,
        policy: Path | None,
        color: str,
        verbose: int,
        quiet: bool,
    ) -> int:
        """Hand work back to selfcorrect, with evidence: a fresh budget or a closed circuit.

        \b
        Exactly one of:
          --subject S     a subject (task, file or tool), a task id (every part of
                          it: subjects, issues, unfinished work) or an issue fingerprint
                          gets a fresh budget: failures before the reset no longer
                          count, and its blocked state, step and issue budgets start again;
          --rule R        closes R's circuit (every version), so it acts again;
          --escalation E  does what escalation E needs: a fresh budget for its
                          subject or issue, or closes its rule's circuit.
        --evidence TEXT is required: a reset without it exits 2 and writes nothing.

        \b
        Writes: the escalations it answers are marked resolved in escalations.yaml
        (resolved_by, resolved_at, evidence), the failed_items entries it reopens
        say who did it and why, and one `reset` record (who, when, why, what)
        goes to DIR/.selfcorrect/journal.jsonl. The next run acts on it.
        The same happens when a person edits escalations.yaml by hand (status:
        resolved, evidence:, resolved_by:, optionally retry: true) or moves a
        failed_items entry's final_status out of blocked.
        An item that another part, or its cause still reported, blocks again at once
        gets that escalation opened now; reset says so and what keeps it blocked
        (--format json: `blocked_again`, with item, why, escalation, cause).
        -q prints nothing but errors.
        Exit codes: 0 done, 2 invalid input or usage (nothing written).
        """
        import json

        from selfcorrect.commands.reset import default_actor, reset
        from selfcorrect.core.human_control import ResetRequest, UnknownTarget
        from selfcorrect.core.summary import clip

        common = make_common(policy, color, verbose, quiet)
        _require_folder(folder)
        chosen = [
            (k, v)
            for k, v in (("subject", subject), ("rule", rule), ("escalation", escalation))
            if v
        ]
        if len(chosen) != 1:
            raise click.UsageError("give exactly one of --subject, --rule or --escalation")
        if not (evidence or "").strip():
            raise click.UsageError(
                "a reset needs --evidence TEXT: say why it is safe to go on (it is journaled); "
                "nothing was written"
            )
        kind, name = chosen[0]
        request = ResetRequest(
            kind,
            str(name),
            str(evidence),
            actor or default_actor(),
            "cli",
            retry=not no_retry,
            false_positive=false_positive,
        )
        try:
            outcome = reset(folder, request, policy_path=policy, wait=wait)
        except UnknownTarget as exc:
            raise click.BadParameter(str(exc), param_hint=f"--{kind}") from exc
        for warning in outcome.warnings:  # a tampered journal is said by every command
            click.echo(printable(str(warning)), err=True)
        if fmt == "json":
            from msgspec.structs import asdict

            blocked = [asdict(again) for again in outcome.still_blocked]
            answer = {"reset": outcome.record, "written": outcome.written, "blocked_again": blocked}
            click.echo(json.dumps(answer, sort_keys=True))
            return ExitCode.PASS
        if common.verbosity < 0:  # -q: the exit code says it was done
            return ExitCode.PASS

        record = outcome.record
        what = [
            *(s["subject"] for s in record["subjects"]),
            *record["fingerprints"],
            *record["tasks"],
            *(f"circuit {r}" for r in record["rules"]),
        ]
        click.echo(
            printable(
                f"reset by {record['actor']}: "
                + (", ".join(what) or "nothing was blocked")
                + (" (fresh budget)" if record["retry"] else " (resolved, no fresh budget)")
            )
        )
        for ident in outcome.escalations:
            click.echo(printable(f"  resolved {ident} in escalations.yaml"))
        for again in outcome.still_blocked:  # a person must act again: say what on
            opened = f"; opened {again.escalation} in escalations.yaml" if again.escalation else ""
            said = clip(again.why)
            click.echo(printable(f"  {again.item} is blocked again at once: {said}{opened}"))
            click.echo(f"    {_STAYS_BLOCKED.get(again.cause, _STAYS_BLOCKED[''])}")
        for path in outcome.written:
            click.echo(printable(f"  wrote {path}"))
        return ExitCode.PASS

    return reset_command


# What keeps a reset item blocked, by the kind of part that blocks it (core/work_item_decision).
_STAYS_BLOCKED = {
    "issue": "It stays blocked while the validator reports that issue and the policy leaves "
    "it to a person: act on it (or change the policy in selfcorrect.yaml), then validate again.",
    "work": "It stays blocked while coordination_log.yaml shows that problem: "
    "fix the delegation or the task there, then run again.",
    "": "It stays blocked while its cause stands: the escalation says what it is.",
}


@_lazy("policy")
def _make_policy_command() -> click.Command:
    @click.command(name="policy")
    @folder_argument
    @format_option("yaml", "json")
    @common_options
    def policy_command(
        folder: Path, fmt: str, policy: Path | None, color: str, verbose: int, quiet: bool
    ) -> int:
        """Print the policy in force for DIR: the built-in defaults merged with
        DIR/selfcorrect.yaml (or --policy), every extend_<list> applied.

        The output is a valid selfcorrect.yaml. Writes nothing.
        Exit codes: 0, or 2 when the policy file is invalid (positioned errors).
        """
        from selfcorrect.commands.policy import effective_policy, render

        make_common(policy, color, verbose, quiet)
        _require_folder(folder)
        click.echo(render(effective_policy(folder, policy), fmt), nl=False)
        return ExitCode.PASS

    return policy_command


@_lazy("allow")
def _make_allow_command() -> click.Command:
    @click.command(name="allow")
    @folder_argument
    @common_options
    def allow_command(
        folder: Path, policy: Path | None, color: str, verbose: int, quiet: bool
    ) -> int:
        """Trust the commands DIR's policy names and DIR's override templates, as
        they are now.

        \b
        The policy's commands (validator.command, checks.commands, agent.command,
        each fixer's command, the tools offered to agents) run only when
        trusted: the shipped defaults', the version of DIR/selfcorrect.yaml
        committed in git, or allowed here; the override templates in
        DIR/templates/ render only when committed or allowed here. Agents can
        write these files, so a change is refused (run, validate and check
        exit 2 and say which) until a person reads it and
        allows it, the way direnv treats .envrc. Allowing journals the commands,
        the templates' digests and who allowed them.
        Exit codes: 0, or 2 when the policy is invalid.
        """
        from selfcorrect.clock import system_clock
        from selfcorrect.commands.allow import allow_folder
        from selfcorrect.core.policy_commands import spell

        common = make_common(policy, color, verbose, quiet)
        _require_folder(folder, workflow_file=False)
        allowed = allow_folder(folder, policy, system_clock)
        if not (allowed.commands or allowed.templates):
            click.echo(
                f"{allowed.policy} names no commands of its own, and there are no override "
                "templates: nothing to allow."
            )
            return ExitCode.PASS
        head = "Allowed" if allowed.recorded else "Already allowed"
        if allowed.commands:
            click.echo(f"{head}, from {allowed.policy}:", color=common.color)
            for key, argv in allowed.commands.items():
                click.echo(f"  {key}: {spell(argv)}")
        if allowed.templates:
            click.echo(f"{head}, the override templates:", color=common.color)
            for name in allowed.templates:
                click.echo(f"  templates/{name}")
        return ExitCode.PASS

    return allow_command


@_lazy("schemas")
def _make_schemas_command() -> click.Command:
    @click.command(name="schemas")
    @click.argument("name", metavar="[NAME]", required=False)
    @common_options
    def schemas_command(
        name: str | None, policy: Path | None, color: str, verbose: int, quiet: bool
    ) -> int:
        """Print where the JSON Schemas of the workflow files are installed.

        \b
        With no NAME, the folder; with NAME (selfcorrect, validation_report,
        tool_failures, coordination_log, escalations, ...), that schema's file.
        For an editor: point yaml-language-server's `yaml.schemas` at them, or run
        `selfcorrect init DIR`, which copies them into DIR/.selfcorrect/schemas/
        and writes a relative `$schema=` modeline at the top of each file.
        """
        from selfcorrect.io.resources import data_dir

        make_common(policy, color, verbose, quiet)
        folder = data_dir("schemas")
        if name is None:
            click.echo(str(folder))
            return ExitCode.PASS
        path = folder / f"{name.removesuffix('.schema.json')}.schema.json"
        if not path.is_file():
            known = ", ".join(sorted(p.name.removesuffix(".schema.json") for p in folder.iterdir()))
            raise click.BadParameter(
                f"no schema named {name!r}; one of: {known}", param_hint="NAME"
            )
        click.echo(str(path))
        return ExitCode.PASS

    return schemas_command


@_lazy("hook")
def _make_hook() -> click.Command:
    from selfcorrect.cli.agent_hooks import hook_command

    return hook_command


@_lazy("install")
def _make_install() -> click.Command:
    from selfcorrect.cli.agent_hooks import install_group

    return install_group


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return the exit code; every error is mapped here, once."""
    args = argv if argv is not None else sys.argv[1:]
    debug = "--debug" in args
    as_json = _json_requested(args)
    try:
        code = cli.main(args=argv, prog_name="selfcorrect", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        if as_json:
            _json_failure([{"message": exc.format_message()}])
        return ExitCode.INVALID
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except SelfcorrectError as exc:
        # File names and keys in a message come from agents too: one escaped line each.
        lines = exc.lines if isinstance(exc, InputError) else [str(exc)]
        click.echo("\n".join(printable(line) for line in lines), err=True)
        if as_json:
            _json_failure(_errors_of(exc), invalid=exc.exit_code == ExitCode.INVALID)
        elif _format_requested(args) == "github":
            _github_failure(exc)
        return int(exc.exit_code)
    except OSError as exc:
        # The environment said no (permissions, a read-only or full disk) somewhere the write
        # layer did not name it: still the user's to fix, exit 2, never "internal error".
        from selfcorrect.io.safe_paths import environment_error

        refused = environment_error(exc)
        if refused is None:
            return _internal(exc, debug, as_json)
        click.echo(printable(str(refused)), err=True)
        if as_json:
            _json_failure(_errors_of(refused))
        return int(refused.exit_code)
    except Exception as exc:  # an internal error: never exit 0, never a bare traceback
        return _internal(exc, debug, as_json)
    return int(code) if isinstance(code, int) else 0


def _check_format(fmt: str) -> str:
    """check's --format as given; when not given, github under GitHub Actions (as yamllint)."""
    source = click.get_current_context().get_parameter_source("fmt")
    if source is click.core.ParameterSource.DEFAULT and _in_github_actions():
        return "github"
    return fmt


def _in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _format_requested(args: list[str]) -> str | None:
    """The --format a failure must still honour, even before the options are parsed: the
    one on the line, or check's default under GitHub Actions."""
    from itertools import pairwise

    given = [a.partition("=")[2] for a in args if a.startswith("--format=")]
    given += [value for flag, value in pairwise(args) if flag == "--format"]
    if given:
        return given[-1]
    command = next((a for a in args if a in cli.names()), None)
    return "github" if command == "check" and _in_github_actions() else None


def _json_requested(args: list[str]) -> bool:
    """`--format json` anywhere on the line: only commands have --format, and a failure must
    still print one JSON object on stdout (docs/ci.md), even before the options are parsed."""
    from itertools import pairwise

    command = next((a for a in args if a in cli.names()), None)
    if command == "watch":  # the watcher prints its own one-line objects, INVALID included
        return False
    return "--format=json" in args or ("--format", "json") in pairwise(args)


def _errors_of(exc: SelfcorrectError) -> list[dict[str, object]]:
    if isinstance(exc, InputError) and exc.diagnostics:
        return [
            {"path": d.path, "line": d.line, "col": d.col, "message": d.message}
            for d in exc.diagnostics
        ]
    lines = exc.lines if isinstance(exc, InputError) else [str(exc)]
    return [{"message": line} for line in lines]


def _github_failure(exc: SelfcorrectError) -> None:
    """What stopped the command, as annotations on stdout: a CI log shows an invalid policy
    at its line as it shows any other problem (docs/ci.md)."""
    from selfcorrect.cli.check_report import ci_diagnostics
    from selfcorrect.cli.ci_formats import markdown
    from selfcorrect.cli.run_report import append_job_summary

    lines = exc.lines if isinstance(exc, InputError) else [str(exc)]
    shown = "\n".join(f"- {markdown(line)}" for line in lines)
    what = "invalid input" if exc.exit_code == ExitCode.INVALID else "stopped"
    append_job_summary(f"## selfcorrect: {what} (exit {int(exc.exit_code)})\n\n{shown}\n")
    if isinstance(exc, InputError) and exc.diagnostics:
        click.echo(ci_diagnostics(exc.diagnostics, "github"), nl=False)
        return
    from selfcorrect.cli.ci_formats import escape_data

    click.echo(f"::error title=selfcorrect::{escape_data(chr(10).join(lines))}")


def _json_failure(errors: list[dict[str, object]], *, invalid: bool = True) -> None:
    """The one object a `--format json` run prints when it stops before deciding: `result`
    INVALID (exit 2: `errors`, each {path, line, col, message}, null where no position
    applies) or ERROR (an internal error: `message`)."""
    import json

    rows = [{"path": None, "line": None, "col": None, **error} for error in errors]
    if invalid:
        data: dict[str, object] = {"result": "INVALID", "errors": rows}
    else:
        data = {"result": "ERROR", "errors": rows, "message": str(rows[0]["message"])}
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _internal(exc: Exception, debug: bool, as_json: bool = False) -> int:
    """Never exit 0, never a bare traceback without --debug."""
    if debug:
        import traceback  # only here: its import costs start-up time (bench/README.md)

        click.echo(traceback.format_exc(), err=True)
    else:
        click.echo(
            f"selfcorrect: internal error: {type(exc).__name__}: {printable(str(exc))}\n"
            "Run again with --debug for the traceback, and please report it.",
            err=True,
        )
    if as_json:
        _json_failure([{"message": f"internal error: {type(exc).__name__}: {exc}"}], invalid=False)
    return ExitCode.INTERNAL


def entry() -> None:
    """Console-script entry point."""
    raise SystemExit(main())


__all__ = ["Common", "cli", "entry", "main"]
