"""Load every file of a workflow folder once, into a frozen `core.inputs.Inputs`.

Decision documents are strict: every broken one is reported at once (one `InputError` with a
line per problem) before anything is written. Hook logs are tolerant: an unreadable entry or
waypoint is a warning. The failure log is folded as it streams (core/ledger.py,
core/stuck.py); a watcher's `LogCache` lets the next load read only the appended bytes.
"""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from msgspec import Struct, field
from msgspec.structs import replace

from selfcorrect import layout
from selfcorrect.core import policy_commands
from selfcorrect.core.dead_letters import held as dead_letter_holds
from selfcorrect.core.frozen import thaw
from selfcorrect.core.inputs import Inputs, LogFold, ProjectView
from selfcorrect.core.issue_owners import owned
from selfcorrect.core.ledger import Ledger, attributed, read_only_tools, subject_of, task_owners
from selfcorrect.core.model import Failure, Issue, Outcome, Report, Severity, Verdict
from selfcorrect.core.normalise import (
    normalise_coordination,
    normalise_escalations,
    normalise_failure,
    normalise_report,
    normalise_waypoint,
)
from selfcorrect.core.policy import Policy
from selfcorrect.core.probes import Probes
from selfcorrect.core.repeated_calls import RepeatedCalls
from selfcorrect.core.stuck import StuckDetector
from selfcorrect.core.taxonomy import Taxonomy
from selfcorrect.errors import Diagnostic, EnvironmentProblem, InputError
from selfcorrect.io import documents, journal, last_report
from selfcorrect.io.failure_log import RawFailure
from selfcorrect.io.host_settings import reports_turns
from selfcorrect.io.log_cursor import LogCursor
from selfcorrect.io.policy_file import load_policy, shipped_commands
from selfcorrect.io.project_paths import placer
from selfcorrect.io.project_root import project_root, refuse_undecodable
from selfcorrect.io.workspace import resolve_inside

T = TypeVar("T")


class LogCache(Struct):
    """The failure log's fold, kept between the runs of a watcher.

    With it, a load parses and feeds only the entries appended since the last one, so its cost
    follows what changed, not the log's length. Everything is rebuilt from the whole log when
    the log's earlier bytes changed (io/log_cursor.py), when the policy changed, or for another
    folder. A process that lives for one event (an agent hook) saves it and restores it with
    io/log_state.py.
    """

    cursor: LogCursor | None = None
    policy_version: str = ""  # digest of the policy data the objects below were built with
    taxonomy: Taxonomy | None = None
    ledger: Ledger | None = None
    detector: StuckDetector | None = None
    repeated: RepeatedCalls | None = None
    entries: int = 0
    warnings: list[Diagnostic] = field(default_factory=list)  # the log's, reported every run


class ProjectChecks(NamedTuple):
    """What loading asks of the project beyond the workflow files, given by the caller (the
    built-in validator's checks, checks/project.py): io never imports the checks above it.

    - `recheck(report, root)`: the findings of a PASS's cited evidence that does not hold;
    - `restructurable(root)`: `(target, template) -> bool`, may the built-in fix restructure it.
    """

    recheck: Callable[[Report, Path], Iterable[Any]]
    restructurable: Callable[[Path], Callable[[str, str], bool]]


NO_CHECKS = ProjectChecks(lambda _report, _root: (), lambda _root: lambda _t, _tpl: True)


def load_inputs(
    folder: Path,
    policy_path: Path | None = None,
    cache: LogCache | None = None,
    checks: ProjectChecks = NO_CHECKS,
) -> Inputs:
    """Read the folder; writes nothing. Raises InputError naming every broken document.
    `checks` re-check a PASS's evidence against the project (commands pass checks/project.py;
    NO_CHECKS reads the workflow files alone)."""
    refuse_undecodable(folder)  # a path no UTF-8 file can hold: refused, said
    policy = load_policy(policy_path or folder / layout.POLICY)
    max_bytes = policy.limits.max_bytes
    errors: list[InputError] = []

    def strict(load: Callable[[], T], default: T) -> T:
        try:
            return load()
        except EnvironmentProblem:
            raise  # the machine refused: not the user's document, and a watcher retries it
        except InputError as exc:
            errors.append(exc)
            return default

    warnings: list[Diagnostic] = []
    absent: tuple[Report | None, str] = (None, "absent")
    report, digest = strict(lambda: _load_report(folder, policy, warnings), absent)
    stamp = last_report.stamp(folder / layout.REPORT) if report is not None else ""
    if report is not None and report.stub:  # no validator ran: the last real report stands
        report, digest, stamp = _last_real(folder, policy, warnings, (report, digest, stamp))
    coordination = None
    if (folder / layout.COORDINATION_LOG).exists():
        doc = strict(
            lambda: documents.load_decision(
                folder / layout.COORDINATION_LOG, "coordination_log", max_bytes=max_bytes
            ),
            None,
        )
        coordination = normalise_coordination(doc.data) if doc else None
    escalations: tuple[Any, ...] = ()
    positions: tuple[tuple[int, int], ...] = ()
    if (folder / layout.ESCALATIONS).exists():  # strict: a broken hand edit stops the run
        esc_doc = strict(
            lambda: documents.load_decision(
                folder / layout.ESCALATIONS, "escalations", max_bytes=max_bytes
            ),
            None,
        )
        if esc_doc is not None:
            escalations = normalise_escalations(esc_doc.data or {})
            positions = tuple(
                esc_doc.position(["escalations", i, "status"]) for i in range(len(escalations))
            )
    microtasks: dict[str, dict[str, Any]] = {}
    for path in sorted((folder / layout.MICROTASKS).glob("*.yaml")):  # agents mark items done
        data = strict(_loader(path, "microtasks", max_bytes), None)
        if data is not None:
            microtasks[str(data["task_id"])] = data
    if errors:
        raise InputError.combined(errors)
    tasks = coordination.tasks if coordination else ()
    if report is not None and tasks:  # an issue naming no task is tied to its task (rules §5)
        report = dead_letter_holds(replace(report, issues=owned(report.issues, tasks)), tasks)

    history = tuple(journal.read_journal(folder, warnings))
    before = policy_commands.baseline(history, shipped_commands())
    changed = policy_commands.warning(before, policy_commands.commands_of(policy))
    if changed is not None:  # agents can write the policy (docs/containment.md)
        shown = documents.display_path(policy_path or folder / layout.POLICY)
        warnings.append(replace(changed, path=shown))
    # A failure without task_id belongs to the task its agent_id works on (docs/rules.md §2.1).
    owners = task_owners(coordination.tasks) if coordination else {}
    log = _fold_log(folder / layout.FAILURE_LOG, policy, max_bytes, warnings, cache, owners)
    waypoints = []
    for path in documents.waypoint_paths(folder):  # hook logs: a bad one is a warning
        loaded = documents.load_waypoint(path, warnings, max_bytes=max_bytes)
        if loaded is not None:
            waypoints.append(normalise_waypoint(loaded.data, loaded.display))
    root = project_root(folder)
    return Inputs(
        host_turns=reports_turns(root),
        workflow_dir=documents.display_path(folder),
        policy=policy,
        report=report,
        report_digest=digest,
        report_stamp=stamp,
        coordination=coordination,
        escalations=escalations,
        escalation_positions=positions,
        history=history,
        log=log,
        waypoints=tuple(waypoints),
        microtasks=microtasks,
        rechecked=owned(_recheck(report, root, checks), tasks),
        warnings=tuple(warnings),
        project=_project_view(root, checks),
    )


def _loader(path: Path, stem: str, max_bytes: int) -> Callable[[], Any]:
    return lambda: documents.load_decision(path, stem, max_bytes=max_bytes).data


def _project_view(root: Path, checks: ProjectChecks) -> ProjectView:
    def size_of(rel: str) -> int | None:
        """Its length in bytes, from `stat`: a target is never read to be sized (an agent
        may name a 1.5 GB file, and every hook would read it: docs/containment.md)."""
        path = resolve_inside(root, rel)
        try:
            info = path.stat() if path is not None else None
        except (OSError, ValueError):
            return None
        return info.st_size if info is not None and stat.S_ISREG(info.st_mode) else None

    return ProjectView(
        exists=lambda rel: (path := resolve_inside(root, rel)) is not None and path.exists(),
        size_of=size_of,
        place=placer(root),
        restructurable=checks.restructurable(root),
    )


def _fold_log(
    log: Path,
    policy: Policy,
    max_bytes: int,
    warnings: list[Diagnostic],
    cache: LogCache | None,
    owners: dict[str, str],
) -> LogFold:
    if cache is None:
        taxonomy, ledger, detector = fresh_fold(policy)
        repeated = RepeatedCalls(policy.stuck.edit_tools)
        entries = 0
        if log.exists():
            raws = documents.read_failure_log(log, warnings, max_bytes=max_bytes)
            probes = Probes.of(policy)
            entries = _feed(raws, taxonomy, ledger, detector, owners, repeated, probes)
        seen_before = 0  # read whole: nothing says an entry came before what this load sees
    else:
        seen_before = cache.entries  # what the load before this one had read
        ledger, detector, repeated, entries = _read_on(
            cache, log, policy, max_bytes, warnings, owners
        )
    records = dict(ledger.records)
    firing = {s: detector.firing(s) for s in records}
    # Every call failing since it was cleared: the success hook watches them all (docs/hooks.md).
    return LogFold(records, firing, entries, seen_before, repeated.at_least(1))


def counted_failures(folder: Path, policy: Policy) -> int:
    """How many entries of the folder's log count as failures, by the rule `_feed` applies: a
    call that ran and failed, once, never a probe, an interruption, a verification or a call
    that never ran (docs/rules.md §7). `replay` holds it to a session's label."""
    log = folder / layout.FAILURE_LOG
    if not log.exists():
        return 0
    probes, repeated, counted = Probes.of(policy), RepeatedCalls(policy.stuck.edit_tools), 0
    for raw in documents.read_failure_log(log, [], max_bytes=policy.limits.max_bytes):
        failure = normalise_failure(raw.data, raw.index)
        counted += failure.outcome is Outcome.FAILURE and _counts(failure, probes, repeated)
    return counted


def _counts(failure: Failure, probes: Probes, repeated: RepeatedCalls) -> bool:
    """Whether an entry feeds anything (rules §7): not a probe, an interrupted call or one that
    never ran; and one call logged twice counts once (docs/hooks.md)."""
    if not probes.counted(failure):
        return False
    return not (
        failure.extra and "tool_use_id" in failure.extra and not repeated.first_sight(failure)
    )


def fresh_fold(policy: Policy) -> tuple[Taxonomy, Ledger, StuckDetector]:
    stuck = policy.stuck
    ledger = Ledger(
        frozenset(stuck.exempt_tools),
        frozenset(stuck.exempt_subjects),
        read_only_tools(policy),  # a failed read never gives a scope (docs/rules.md §6)
    )
    return Taxonomy.of(policy), ledger, StuckDetector(policy)


def _feed(
    raws: Iterable[RawFailure],
    taxonomy: Taxonomy,
    ledger: Ledger,
    detector: StuckDetector,
    owners: dict[str, str],
    repeated: RepeatedCalls,
    probes: Probes,
) -> int:
    """Type each entry and feed the ledger, the detector and the repeated calls, in log order;
    returns the count. An entry is attributed to its agent's task, and a tool-only subject is
    split by type and agent. A probe or an interrupted call feeds nothing (rules §7)."""
    entries = 0
    for raw in raws:
        entries += 1
        failure = attributed(normalise_failure(raw.data, raw.index), owners)
        if not _counts(failure, probes, repeated):
            continue
        failure_type = taxonomy.classify(failure).failure_type
        subject = subject_of(failure, failure_type)
        ledger.feed(failure, failure_type, subject)
        detector.feed(failure, subject)
        repeated.feed(failure, subject)
    return entries


def _read_on(
    cache: LogCache,
    log: Path,
    policy: Policy,
    max_bytes: int,
    warnings: list[Diagnostic],
    owners: dict[str, str],
) -> tuple[Ledger, StuckDetector, RepeatedCalls, int]:
    """Feed the cache's objects the log's new entries, or all of them after a reset."""
    # A task's agent changed in the coordination log: attribute every entry again.
    version = policy_version(policy) + repr(sorted(owners.items()))
    if (
        cache.cursor is None
        or cache.cursor.path != log
        or cache.policy_version != version
        or cache.taxonomy is None
        or cache.ledger is None
        or cache.detector is None
        or cache.repeated is None
    ):
        cache.cursor, cache.policy_version = LogCursor(log), version  # a new cursor reads whole
    found: list[Diagnostic] = []
    reset, raws = cache.cursor.read(found, max_bytes=max_bytes)
    if (
        reset
        or cache.taxonomy is None
        or cache.ledger is None
        or cache.detector is None
        or cache.repeated is None
    ):
        cache.taxonomy, cache.ledger, cache.detector = fresh_fold(policy)
        cache.repeated = RepeatedCalls(policy.stuck.edit_tools)
        cache.entries, cache.warnings = 0, []
    # Should feeding stop half-way, the cursor has not moved on: the next run starts afresh.
    probes = Probes.of(policy)
    cache.entries += _feed(
        raws, cache.taxonomy, cache.ledger, cache.detector, owners, cache.repeated, probes
    )
    cache.warnings.extend(found)
    warnings.extend(cache.warnings)
    return cache.ledger, cache.detector, cache.repeated, cache.entries


def policy_version(policy: Policy) -> str:
    """A digest of the policy's data: the cached objects were built from it."""
    return hashlib.sha256(repr(thaw(policy.data)).encode("utf-8")).hexdigest()[:16]


def _recheck(report: Report | None, root: Path, checks: ProjectChecks) -> tuple[Issue, ...]:
    """A PASS is not taken on trust: its cited evidence is re-checked against the project
    (docs/rules.md §2.2)."""
    if report is None or report.verdict is not Verdict.PASS:
        return ()
    return tuple(
        Issue(
            severity=Severity.MAJOR,
            description=finding.description,
            type=finding.type,
            target=finding.target,
            task_id=finding.task_id,
        )
        for finding in checks.recheck(report, root)
    )


def _last_real(
    folder: Path,
    policy: Policy,
    warnings: list[Diagnostic],
    stub: tuple[Report, str, str],
) -> tuple[Report, str, str]:
    """The validator's last report (its copy, io/last_report.py) in place of a stub, with a
    warning; the stub itself when no real report was kept."""
    copy = last_report.kept(folder)
    if copy is None:
        return stub
    path, stamp, digest = copy
    try:
        doc = documents.load_decision(path, "validation_report", max_bytes=policy.limits.max_bytes)
    except InputError:
        return stub
    shown = documents.display_path(folder / layout.REPORT)
    warnings.append(
        Diagnostic(
            shown,
            1,
            1,
            f"a stub ({stub[0].stub}): no validator ran, so the validator's last report stands "
            "until it writes a new one",
            "warning",
        )
    )
    # The report's digest, not the copy's: the copy is that report, its texts cut.
    return normalise_report(doc.data, policy.stub_validators), digest, stamp


def _load_report(
    folder: Path, policy: Policy, warnings: list[Diagnostic]
) -> tuple[Report | None, str]:
    path = folder / layout.REPORT
    if not path.exists():
        return None, "absent"
    doc = documents.load_decision(path, "validation_report", max_bytes=policy.limits.max_bytes)
    warnings.extend(doc.warnings)  # a duplicate key: the last value is read (rules §2.2)
    # A report's identity is its content; whether our own validator ran since a hand-out is
    # journaled separately (State.validations), so touching or copying the file counts nothing.
    return normalise_report(doc.data, policy.stub_validators), doc.digest
