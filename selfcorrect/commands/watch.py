"""`selfcorrect watch DIR`: a correction run whenever the inputs change from outside (rules §15).

One observer thread (watchdog) only records that something relevant happened; the caller's
thread does everything else: debounce, compare content hashes, run, report. So runs never
overlap, and a signal handler that sets `stop` is noticed within POLL_S, after the current run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from msgspec import Struct, field
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from selfcorrect import layout
from selfcorrect.clock import Clock, system_clock
from selfcorrect.commands.run import RunOutcome, correction_run
from selfcorrect.errors import (
    Diagnostic,
    EnvironmentProblem,
    ExitCode,
    InputError,
    SelfcorrectError,
    result_exit_code,
)
from selfcorrect.io import folder_lock, safe_paths, watch_lock
from selfcorrect.io.documents import display_path
from selfcorrect.io.input_hashes import ABSENT, Snapshot, WatchedInputs, changed
from selfcorrect.io.workflow_inputs import LogCache

POLL_S = 0.1  # how often the idle loop looks at `stop`
POLLING_INTERVAL_S = 0.5  # PollingObserver's rescan period
# The longest wait before a failed run is tried again. Short: a write conflict with a person's
# editor clears as soon as they stop typing, and their last save may bring no further event.
RETRY_MAX_S = 1.0
# Without opened / closed-no-write events: reading a file (our own hashing) wakes no one.
EVENTS: list[type[FileSystemEvent]] = [
    FileModifiedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]
# inotify exhausted (watches, instances, file table) or missing: poll instead.
INOTIFY_LIMITS = {errno.ENOSPC, errno.EMFILE, errno.ENFILE, errno.ENOSYS}


class WatchRun(Struct):
    """One run as the watcher reports it: what changed, and what came of it."""

    at: datetime
    trigger: list[str]  # input labels that changed; empty for the start-up run
    code: int
    outcome: RunOutcome | None = None
    error: str = ""  # set when there is no outcome
    busy: bool = False  # another process held the folder's lock: nothing ran, try again
    environment: bool = False  # the machine refused a write (a full disk): try again later
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class _Handler(FileSystemEventHandler):
    def __init__(self, notify: Callable[[FileSystemEvent], None]) -> None:
        self._notify = notify

    def on_any_event(self, event: FileSystemEvent) -> None:
        self._notify(event)


class Watcher:
    def __init__(
        self,
        folder: Path,
        policy_path: Path | None,
        *,
        debounce_ms: int = 50,
        polling: bool = False,
        render: Callable[[WatchRun], str],
        emit: Callable[[str], None],
        clock: Clock = system_clock,
        warn: Callable[[str], None] = _stderr,
        verbosity: int = 0,
        debug: bool = False,
    ) -> None:
        self.folder = folder
        self.policy_path = policy_path
        self.debounce_s = debounce_ms / 1000
        # A steady stream of events must not starve runs forever.
        self.max_wait_s = max(1.0, 10 * self.debounce_s)
        self.polling = polling
        self.render = render  # the CLI's renderer: presentation stays in cli/ (rules §20)
        self.emit = emit
        self.clock = clock
        self.warn = warn
        self.verbosity = verbosity
        self.debug = debug
        self.inputs = WatchedInputs(folder, policy_path)
        self._recorded: Snapshot = {}
        self._warned: set[str] = set()
        # Derived state of the failure log, kept between runs: an append costs what was
        # appended, not the whole history (rules §15, §18).
        self._cache = LogCache()
        self._guard = threading.Lock()
        self._wake = threading.Event()
        self._first_event: float | None = None
        self._last_event = 0.0
        self._failures = 0  # runs in a row that failed midway: the retry backs off

    # --- the two entry points ------------------------------------------------------------------

    def run_once(self) -> int:
        """Process the current state as one run; its exit code, like `selfcorrect run`."""
        safe_paths.preflight(self.folder)  # before the lock: watch.lock may be a link too
        with watch_lock.hold(self.folder):
            return self._cycle([], contain=False, wait=folder_lock.DEFAULT_WAIT_S)

    def run_forever(self, stop: threading.Event) -> int:
        """Start-up run, then one run per outside change until `stop` is set; returns 0.

        `stop` is only polled (never waited on), so a signal handler may set it safely.
        """
        safe_paths.preflight(self.folder)  # before the lock: watch.lock may be a link too
        with watch_lock.hold(self.folder):
            observer = self._start_observer()
            try:
                if self.verbosity >= 0:
                    kind = "polling" if isinstance(observer, PollingObserver) else "native events"
                    self.warn(
                        f"selfcorrect watch: watching {display_path(self.folder)} ({kind}, "
                        f"debounce {round(self.debounce_s * 1000)} ms); Ctrl-C to stop"
                    )
                self._cycle([], contain=True)
                while not stop.is_set():
                    if not self._wake.wait(POLL_S):
                        if not observer.is_alive():
                            raise SelfcorrectError("the file observer stopped unexpectedly")
                        continue
                    if not self._settle(stop):
                        break
                    if not self.folder.is_dir():
                        self.warn(f"selfcorrect watch: {display_path(self.folder)} is gone")
                        return ExitCode.INVALID
                    current = self.inputs.snapshot()
                    trigger = changed(self._recorded, current)
                    if trigger:
                        self._cycle(trigger, contain=True, before=current)
                    elif self.verbosity > 0:
                        self.warn(f"{self._time()} events, but no input changed: no run")
            finally:
                observer.stop()
                observer.join(timeout=5)
        if self.verbosity >= 0:
            self.warn("selfcorrect watch: stopped")
        return ExitCode.PASS

    # --- waiting -------------------------------------------------------------------------------

    def _on_event(self, event: FileSystemEvent) -> None:
        """Observer thread: note the time of a relevant event and wake the loop."""
        paths = [event.src_path, event.dest_path]  # moved: an editor's rename lands on dest
        raw = [os.fsdecode(p) for p in paths if p]
        if not any(self.inputs.relevant(p, is_directory=event.is_directory) for p in raw):
            return
        with self._guard:
            now = time.monotonic()
            self._last_event = now
            if self._first_event is None:
                self._first_event = now
            self._wake.set()

    def _settle(self, stop: threading.Event) -> bool:
        """Debounce: wait until `debounce` passed since the last event. False when stopping."""
        while True:
            with self._guard:
                first = self._first_event if self._first_event is not None else self._last_event
                due = min(self._last_event + self.debounce_s, first + self.max_wait_s)
                delay = due - time.monotonic()
                if delay <= 0:
                    # Events from now on belong to the next run.
                    self._wake.clear()
                    self._first_event = None
                    return True
            if stop.is_set():
                return False
            time.sleep(min(delay, POLL_S))

    def _start_observer(self) -> BaseObserver:
        handler = _Handler(self._on_event)
        if not self.polling:
            observer: BaseObserver = Observer()
            try:
                return self._schedule(observer, handler)
            except OSError as exc:
                if exc.errno not in INOTIFY_LIMITS:
                    raise
                with contextlib.suppress(Exception):
                    observer.stop()
                self.warn(
                    f"selfcorrect watch: warning: native file events unavailable ({exc.strerror});"
                    " polling instead (raise fs.inotify.max_user_watches / max_user_instances)"
                )
        return self._schedule(PollingObserver(timeout=POLLING_INTERVAL_S), handler)

    def _schedule(self, observer: BaseObserver, handler: _Handler) -> BaseObserver:
        for path, recursive in self.inputs.watched_dirs():
            observer.schedule(handler, str(path), recursive=recursive, event_filter=EVENTS)
        observer.start()
        return observer

    # --- one run -------------------------------------------------------------------------------

    def _cycle(
        self,
        trigger: list[str],
        *,
        contain: bool,
        before: Snapshot | None = None,
        wait: float = 0.0,
    ) -> int:
        """Run, report, then record the inputs' hashes so our own writes never retrigger."""
        before = before if before is not None else self.inputs.snapshot()
        previous = self._recorded
        run = self._execute(trigger, contain=contain, wait=wait)
        after = self.inputs.snapshot()
        self._recorded = after
        if run.outcome is None and (run.busy or run.environment or run.code != ExitCode.INVALID):
            # It failed midway (a write conflict with a busy editor, an internal error) or
            # another process held the folder: what triggered it is still unprocessed. Keep it
            # pending; retry after a backoff.
            self._recorded = previous
            self._failures += 1
            ceiling = max(RETRY_MAX_S, 4 * self.debounce_s)
            self._retry_after(min(self.debounce_s * 2 ** min(self._failures, 16), ceiling))
            if run.environment and self._failures == 1:
                self._report(run)  # said once, not at every retry while the disk stays full
            elif not run.busy and not run.environment:
                self._report(run)
            elif run.busy and self._failures == 1 and self.verbosity >= 0:
                self.warn(f"selfcorrect watch: {run.error}; the run waits for its turn")
            return run.code
        self._failures = 0
        outside = [label for label in changed(before, after) if label not in self._ours(run)]
        if outside:
            # Someone else wrote during the run: keep their change pending, run once more.
            self._recorded = {**after, **{label: before.get(label, ABSENT) for label in outside}}
            with self._guard:
                self._last_event = time.monotonic()
                self._wake.set()
        self._report(run)
        return run.code

    def _retry_after(self, delay: float) -> None:
        with self._guard:
            self._last_event = time.monotonic() + max(delay, 0.1) - self.debounce_s
            self._first_event = None
            self._wake.set()

    def _execute(self, trigger: list[str], *, contain: bool, wait: float) -> WatchRun:
        at = self.clock()
        try:
            # The folder's lock only for the run: a `run` or `reset` beside the watcher gets its
            # turn between runs; a busy folder is retried after a backoff, not waited on, so a
            # signal still stops the watcher promptly (io/folder_lock).
            outcome = correction_run(
                self.folder,
                policy_path=self.policy_path,
                clock=self.clock,
                cache=self._cache,
                wait=wait,
            )
        except folder_lock.FolderBusy as exc:
            if not contain:
                raise
            return WatchRun(at, trigger, int(exc.exit_code), error=str(exc), busy=True)
        except EnvironmentProblem as exc:
            # A full disk, a read-only folder: it may pass with no edit to any input, and the
            # run may have written part of its outputs. Retried like a run that failed midway.
            return WatchRun(at, trigger, 2, error=str(exc), environment=True)
        except InputError as exc:
            # The last good state stands: nothing was written; a fix is the next change.
            return WatchRun(at, trigger, 2, error=str(exc), diagnostics=exc.diagnostics)
        except Exception as exc:
            if not contain:
                raise
            if self.debug:
                import traceback

                self.warn(traceback.format_exc().rstrip("\n"))
            code = exc.exit_code if isinstance(exc, SelfcorrectError) else ExitCode.INTERNAL
            return WatchRun(at, trigger, int(code), error=f"{type(exc).__name__}: {exc}")
        return WatchRun(at, trigger, int(result_exit_code(outcome.plan.result.value)), outcome)

    def _ours(self, run: WatchRun) -> set[str]:
        """Inputs this run wrote itself, the validator's report included when it ran."""
        if run.outcome is None:
            # Invalid input writes nothing; after an internal error, assume anything was ours.
            return set() if run.code == ExitCode.INVALID else set(self.inputs.snapshot())
        labels = {self.inputs.label(Path(path).resolve()) for path in run.outcome.written}
        if run.outcome.cycles or run.outcome.uncertain:
            labels.add(layout.REPORT)
        return {label for label in labels if label is not None}

    def _report(self, run: WatchRun) -> None:
        if run.outcome is not None:
            warnings = {str(w) for w in run.outcome.decisions.warnings}
            for text in sorted(warnings - self._warned):  # a warning is said once, not every run
                self.warn(text)
            self._warned = warnings
        elif run.diagnostics:
            for diagnostic in run.diagnostics:
                self.warn(str(diagnostic))
        elif run.error:
            self.warn(f"selfcorrect watch: {run.error}")
        self.emit(self.render(run))

    def _time(self) -> str:
        return self.clock().astimezone().strftime("%H:%M:%S")


__all__ = ["WatchRun", "Watcher"]
