"""One bounded, verified, reversible fix (rules §9): the state machine of an autofix attempt.

observed → classified → preflight → remediating → verifying → (re-validation) → recovered,
with preflight → escalated, and verifying → compensating → escalated when the fixer failed,
strayed outside its scope or changed too much. Every transition is one fsynced journal record
written before the next effect, so a crash leaves a `remediating` record that the next run
reconciles (re-validates) before any retry, and an attempt is never counted twice.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from selfcorrect import layout
from selfcorrect.checks._common import clean
from selfcorrect.core.classify import IssueDecision
from selfcorrect.core.journal_records import Stamped, TransitionEvent
from selfcorrect.core.markdown import restructure
from selfcorrect.core.model import FixState
from selfcorrect.core.policy import Policy
from selfcorrect.core.policy_views import Fixer
from selfcorrect.core.verification import FixVerdict, Measured, verify_fix
from selfcorrect.errors import InputError
from selfcorrect.io import (
    atomic,
    journal,
    manifest,
    platform,
    safe_paths,
    undone_copies,
    workspace,
)
from selfcorrect.io.process import Completed
from selfcorrect.io.process_tree import run_contained
from selfcorrect.io.programs import locate

Record = Callable[[Stamped], None]  # journals a record at once, stamped when it happens
LISTED = 100  # paths named per list in a journal record
OUTPUT_KEPT = 2048  # bytes of a fixer's last output handed on (rules §9.2)


class FixOutcome(Struct):
    decision: IssueDecision
    verdict: FixVerdict | None  # None: refused in preflight, nothing ran
    detail: str
    argv: list[str] = field(default_factory=list)
    snapshot: workspace.Snapshot | None = None
    changes: list[workspace.Change] = field(default_factory=list)
    output: str = ""  # the fixer's last output (OUTPUT_KEPT bytes): every escalation carries it
    restored: list[str] = field(default_factory=list)  # files the undo put back

    @property
    def applied(self) -> bool:
        """An effect is on disk and waits for re-validation (a partial one too: rules §9.2)."""
        return self.verdict in (FixVerdict.OK, FixVerdict.PARTIAL)

    @property
    def partial(self) -> bool:
        return self.verdict is FixVerdict.PARTIAL


NO_FIXER = Fixer.of({})  # a decision without one runs no command and has no bounds of its own


def attempt_key(trace: str, decision: IssueDecision) -> str:
    """trace id + fingerprint + rule version (rules §9): the identity of one attempt."""
    raw = f"{trace}|{decision.fingerprint}|{decision.rule_version}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def normal_target(target: str | None) -> str | None:
    """`./src/a.py` and `src/../src/a.py` are `src/a.py`: the spelling the workspace reports."""
    if target is None or target.startswith("-") or target.startswith("/"):
        return target  # left as given: build_argv refuses it with the reason
    return posixpath.normpath(target.replace("\\", "/"))


def fix_scope(decision: IssueDecision) -> list[str]:
    """The files the fix may change: the fixer's `scope` globs, else the issue's target."""
    scope = list(decision.fixer.scope) if decision.fixer else []
    target = normal_target(decision.issue.target)
    if not scope and target:
        scope = [target]
    return scope


def build_argv(
    command: Sequence[Any], target: str | None, files: Sequence[str], root: Path
) -> list[str] | str:
    """The fixer's argv with {target} and {files} filled in, or why it was refused (rules §17).

    Values come from agent-written reports, so each must be a relative path inside the
    project that does not start with '-'. `{files}` alone in an argument expands to one
    argument per file; nothing is ever joined into a shell string.
    """
    for value in ([target] if target is not None else []) + list(files):
        path = workspace.resolve_inside(root, value)
        if path is None:
            return (
                f"refused the path {value[:80]!r}: it must be relative, inside the "
                "project, and not start with '-'"
            )
        if not path.exists():
            return f"{value[:80]!r} does not exist in the project: nothing to fix"
    argv: list[str] = []
    for part in (str(p) for p in command):
        if part == "{files}":
            if not files:
                return "the fixer takes {files} but the issue names no file"
            argv.extend(files)
        elif "{files}" in part:
            return "{files} must stand alone as an argument"
        elif "{target}" in part:
            if target is None:
                return "the fixer takes {target} but the issue has none"
            argv.append(part.replace("{target}", target))
        else:
            argv.append(part)
    return argv


# Told (fixes started so far, fixes this cycle, the fix about to run) before each fix and
# (n, n, "") after the last: the CLI shows it on a terminal (cli/progress.py). None: silent.
FIX_PROGRESS: ContextVar[Callable[[int, int, str], None] | None] = ContextVar(
    "fix_progress", default=None
)


def transition_writer(
    record: Record, decision: IssueDecision, key: str | None = None
) -> Callable[..., None]:
    """`step(source, target, **evidence)`: one journal record per transition (rules §9)."""

    def step(source: FixState, target: FixState, **evidence: Any) -> None:
        entry = TransitionEvent(
            fingerprint=decision.fingerprint,
            source=source.value,
            target=target.value,
            rule=decision.rule,
            rule_version=decision.rule_version,
            attempt=decision.attempts,
            evidence=evidence,
            attempt_key=key or None,
        )
        record(entry)

    return step


def apply_fix(
    decision: IssueDecision, root: Path, folder: Path, policy: Policy, record: Record, trace: str
) -> FixOutcome:
    """Run one autofix under the rules §9 state machine; compensates on anything but success."""
    key = attempt_key(trace, decision)
    fixer = decision.fixer or NO_FIXER

    step = transition_writer(record, decision, key)

    step(
        FixState.OBSERVED,
        FixState.CLASSIFIED,
        classification="FIXABLE",
        confidence=decision.confidence,
    )
    step(FixState.CLASSIFIED, FixState.PREFLIGHT)
    scope = fix_scope(decision)
    built_in = fixer.builtin
    exclude = [workspace.relative_to_root(folder, root)]
    argv = _fix_argv(decision, fixer, root, exclude)
    if isinstance(argv, str):
        step(FixState.PREFLIGHT, FixState.ESCALATED, reason=argv)
        return FixOutcome(decision, None, f"preflight refused the fix: {argv}")
    try:
        snap = workspace.snapshot(root, scope, exclude=exclude)
    except workspace.SnapshotTooLarge as exc:
        step(FixState.PREFLIGHT, FixState.ESCALATED, reason=str(exc))
        return FixOutcome(decision, None, f"preflight refused the fix: {exc}", argv)
    if not built_in:
        argv[0] = locate(argv[0]) or argv[0]  # the same program `installed` found
    step(
        FixState.PREFLIGHT, FixState.REMEDIATING, argv=argv, scope=scope
    )  # fsynced before the effect
    journal_rel = workspace.relative_to_root(journal.journal_path(folder), root)
    snap = workspace.recapture(snap, [journal_rel])  # with the record just appended
    timeout = fixer.timeout_s or policy.remediation.step_timeout_s
    done = _restructure(root, argv[1], argv[2]) if built_in else run_contained(argv, root, timeout)
    changed = _not_by_hooks(workspace.changes(snap), root, exclude[0])
    # Bytes a fixer put in the journal come out before our next record goes in after them.
    own = workspace.restore(snap, [c for c in changed if c.rel == journal_rel])
    caches = [c for c in changed if manifest.is_cache(c.rel)]
    discarded = workspace.discard(snap, caches)
    step(
        FixState.REMEDIATING,
        FixState.VERIFYING,
        exit=done.returncode,
        outcome=done.describe(timeout),
        **_listed("changed", [c.rel for c in changed if c not in caches]),
        **(_listed("discarded", discarded) if discarded else {}),
    )
    changed = [c for c in changed if c not in caches]
    limit = fixer.max_changed_lines or policy.remediation.max_changed_lines
    measured = [Measured(c.rel, c.added, c.removed) for c in changed]
    # A link that leads out of the project is never a fix, whatever the scope says.
    escaping = [c.rel for c in changed if _leads_outside(root, c.rel)]
    never = (*exclude, ".git", *escaping)
    verdict, detail = _judged(done, timeout, measured, scope, limit, never, linter=not built_in)
    rest = [c for c in changed if c.rel != journal_rel]
    outcome = FixOutcome(decision, verdict, detail, argv, snap, rest, last_output(done))
    if outcome.applied:
        return outcome  # verified locally; the re-validation decides recovered or degraded
    if changed:
        compensate(outcome, step, own, folder)
    else:
        step(FixState.VERIFYING, FixState.ESCALATED, **_verdict(outcome))
    return outcome


def _judged(
    done: Completed,
    timeout: float,
    measured: list[Measured],
    scope: list[str],
    limit: int,
    never: Sequence[str],
    *,
    linter: bool,
) -> tuple[FixVerdict, str]:
    """The verdict on the fixer's run: a fixer that ran to its end and exited non-zero having
    changed files in scope, within the size limit, made a partial fix (rules §9.2); so did a
    project's fixer (`linter`, not a built-in one) that exited 1 having changed nothing."""
    verdict, detail = verify_fix(
        done.ok or _ran_to_its_end(done), measured, scope, limit, never=never
    )
    if verdict is FixVerdict.NO_CHANGE and linter and done.returncode == FINDINGS_REMAIN:
        # A linter in fix mode that could fix none of its findings (ruff with only F821): they
        # are the agent's, with its output, as what a partial fix leaves (rules §9.2).
        return FixVerdict.PARTIAL, (
            "the fixer could fix none of its findings (exit 1: findings remain); they go to "
            "the agent with its output"
        )
    if verdict is FixVerdict.NO_CHANGE and not done.ok:
        verdict, detail = FixVerdict.FIXER_FAILED, "the fixer did not exit 0 and changed nothing"
    if verdict is FixVerdict.OK and not done.ok:
        verdict = FixVerdict.PARTIAL
        detail = f"a partial fix, kept while the next report is no worse: {detail}"
    if not done.ok:
        detail = f"{detail}: {done.describe(timeout)}"
    return verdict, detail


def _verdict(outcome: FixOutcome) -> dict[str, Any]:
    """A failed verification's journal evidence: the verdict, why, and the fixer's output (a
    circuit it trips carries it to a person: rules §9.2)."""
    said = {"output": outcome.output} if outcome.output else {}
    verdict = outcome.verdict.value if outcome.verdict else None
    return {"verdict": verdict, "detail": outcome.detail, **said}


# The exit code linters in fix mode give when findings remain (ruff, eslint, flake8): any other
# non-zero code with nothing changed is a fixer that failed (a usage error, a crash).
FINDINGS_REMAIN = 1


def _ran_to_its_end(done: Completed) -> bool:
    """Exited by itself with a non-zero code: a linter in fix mode saying findings remain
    (ruff and eslint exit 1), not a timeout, a signal or a program that never started."""
    return done.returncode is not None and done.returncode > 0 and not done.timed_out


def last_output(done: Completed) -> str:
    """The fixer's last OUTPUT_KEPT bytes of output, as text safe to show (rules §9.2)."""
    data = done.output or done.tail.encode("utf-8", "replace")
    kept = data[-OUTPUT_KEPT:].decode("utf-8", "replace").lstrip("\ufffd")
    return clean(kept).strip()


def _fix_argv(
    decision: IssueDecision, fixer: Fixer, root: Path, exclude: list[str]
) -> list[str] | str:
    """The fixer's argv with its placeholders filled, or why preflight refuses it."""
    target = normal_target(decision.issue.target)
    files = [target] if target else []
    built_in = fixer.builtin
    if built_in:  # argv only names the fix in the journal; nothing is executed
        template = str(fixer.template)
        argv = build_argv(
            [f"selfcorrect:{built_in}", "{target}", template], target, [template], root
        )
    else:
        argv = build_argv(fixer.command, target, files, root)
    if isinstance(argv, str):
        return argv
    return _refuse_protected(files, exclude) or argv


def _not_by_hooks(
    changed: list[workspace.Change], root: Path, folder_rel: str
) -> list[workspace.Change]:
    """The changes, less entries the agents' hooks appended to the failure log meanwhile.

    Agents keep working while a fix runs, and their hooks append failures to the log. An
    append (the old bytes intact, more after them) is theirs: undoing it would lose their
    entries, so it is neither restored nor a violation. Any other change to the log is.
    """
    # The agents' hooks append to the failure log at any moment.
    hook_log = layout.FAILURE_LOG
    log = f"{folder_rel}/{hook_log}" if folder_rel not in ("", ".") else hook_log
    kept = []
    for change in changed:
        before = change.before.data
        if change.rel == log and before is not None and _appended_to(root / log, before):
            continue
        kept.append(change)
    return kept


def _leads_outside(root: Path, rel: str) -> bool:
    """`rel` is now a symlink whose target resolves outside the project root."""
    path = root / rel
    if not path.is_symlink():
        return False
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return True  # a loop, or unreadable: not a fix either


def _appended_to(path: Path, before: bytes) -> bool:
    """`path` is a regular file (not a link, not a FIFO) that starts with `before` and has
    more after it; only the first len(before) bytes are read, whatever its size."""
    try:
        fd = os.open(
            path, os.O_RDONLY | platform.O_NOFOLLOW | platform.O_NONBLOCK | platform.O_CLOEXEC
        )
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size <= len(before):
            return False
        return platform.pread(fd, len(before), 0) == before
    finally:
        os.close(fd)


def _refuse_protected(files: Sequence[str], exclude: Sequence[str]) -> str | None:
    """A target in `.git` or the workflow folder is never handed to a fixer."""
    for value in files:
        rel = normal_target(value) or ""
        if ".git" in rel.split("/") or any(rel == e or rel.startswith(e + "/") for e in exclude):
            return (
                f"refused the path {value[:80]!r}: a fixer never gets `.git` or the workflow "
                "folder as its target"
            )
    return None


def _listed(name: str, paths: list[str]) -> dict[str, Any]:
    """`paths` for a journal record: the first LISTED, and how many there were when more (a
    fixer that runs `npm install` changes 50,000 files; one record must stay readable)."""
    if len(paths) <= LISTED:
        return {name: paths}
    return {name: paths[:LISTED], f"{name}_total": len(paths)}


def _restructure(root: Path, target: str, template: str) -> Completed:
    """The built-in restructure_to_template: the document's sections in template order."""
    try:
        document = (root / target).read_text(encoding="utf-8")
        wanted = (root / template).read_text(encoding="utf-8")
        result = restructure(document, wanted)
        if result is None:  # the classifier checked; the document changed since
            return Completed(
                1,
                "restructure_to_template would lose the document's title or a line: not applied",
            )
        atomic.replace_file(root / target, result.encode("utf-8"))
    except (OSError, UnicodeDecodeError, InputError) as exc:  # InputError: a link, read-only
        return Completed(1, f"restructure_to_template failed: {exc}")
    return Completed(0, "")


def compensate(
    outcome: FixOutcome,
    step: Callable[..., None],
    already: workspace.RestoreReport | None = None,
    folder: Path | None = None,
) -> workspace.RestoreReport | None:
    """Restore exactly the files the fix changed, verify, and never touch others' edits.

    `already`: what was put back before this step could be recorded (the journal itself).
    `folder`: the workflow folder; a document people edit there that the undo puts back is
    copied first (see `_keep_undone`).
    """
    done_before = already or workspace.RestoreReport()
    if outcome.snapshot is None or not (
        outcome.changes or done_before.restored or done_before.failed or done_before.skipped
    ):
        return None
    step(FixState.VERIFYING, FixState.COMPENSATING, **_verdict(outcome))
    kept, pruned = _keep_undone(outcome, folder) if folder is not None else ([], [])
    report = workspace.restore(outcome.snapshot, outcome.changes)
    report.restored[:0] = done_before.restored
    # Nobody else writes our journal mid-fix: bytes of the fixer's left in it are a failure.
    report.failed[:0] = done_before.failed + done_before.skipped
    outcome.restored = list(report.restored)
    target = FixState.ESCALATED if not report.failed else FixState.CIRCUIT_OPEN
    step(
        FixState.COMPENSATING,
        target,
        **_listed("restored", report.restored),
        **_listed("skipped", report.skipped),
        **_listed("failed", report.failed),
        **(_listed("kept", kept) if kept else {}),
        **(_listed("pruned", pruned) if pruned else {}),
    )
    return report


UNDONE = Path(layout.UNDONE)


def _keep_undone(outcome: FixOutcome, folder: Path) -> tuple[list[str], list[str]]:
    """Copy every file the undo is about to put back or delete, as it is now; (the copies
    kept, the older copies pruned to keep the folder within its bounds: io/undone_copies.py).

    People and agents take no lock: a person's save (of coordination_log.yaml, of a source
    file) or a validator's fresh report that lands while a fixer runs looks like the fixer's
    change and is undone with it. Their bytes are kept under `.selfcorrect/undone/` (named in
    the journal's `compensating` record), never lost. Up to manifest.KEEP_FILE_MAX a file and
    KEEP_TOTAL_MAX in all, as for the snapshot's hidden files.
    """
    snap = outcome.snapshot
    if snap is None:
        return [], []
    kept: list[str] = []
    names: set[str] = set()
    budget = manifest.KEEP_TOTAL_MAX
    for change in outcome.changes:
        image = workspace.current_image(snap.root, change.rel)
        data = image.data
        if data is None or image.mode is None or not stat.S_ISREG(image.mode):
            continue  # gone, a link, a folder, or too large to hold: nothing to copy
        if len(data) > min(manifest.KEEP_FILE_MAX, budget):
            continue
        budget -= len(data)
        # Named by content: the same bytes undone twice are one copy.
        copy = folder / UNDONE / f"{change.rel.replace('/', '_')}.{atomic.digest(data)[:12]}"
        safe_paths.ensure_dir(copy.parent)
        atomic.write_new(copy, data)
        kept.append(workspace.relative_to_root(copy, snap.root))
        names.add(copy.name)
    pruned = undone_copies.prune(folder / UNDONE, names) if kept else []
    shown = workspace.relative_to_root(folder / UNDONE, snap.root)
    return kept, [f"{shown}/{name}" for name in pruned]
