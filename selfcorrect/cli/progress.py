"""Progress on a terminal for work that takes a while (docs/ci.md: silent when piped).

A 100,000-entry log once sat silent for 14 s. While a command reads the failure log, a line on
stderr says how far it got (`reading tool_failures.yaml: 45,000 entries (45%)`), rewritten in
place and erased when the read ends; while a run's fixes run, `running fix 2 of 5: <issue>`.
Nothing is shown for work under `delay` seconds, when stderr is no terminal, or with -q.
Standard library only: start-up time counts.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

# Seconds of work before anything is shown; SELFCORRECT_PROGRESS_DELAY overrides it.
DELAY_S = 1.0
REFRESH_S = 0.1  # at most ten redraws a second
ERASE = "\r\x1b[K"


class TerminalProgress:
    """The callback io/failure_log.PROGRESS takes: (entries read, fraction of the log read)."""

    def __init__(
        self,
        stream: TextIO,
        label: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        delay: float = DELAY_S,
    ) -> None:
        self.stream, self.label, self.clock, self.delay = stream, label, clock, delay
        self.started = clock()
        self.last: float | None = None
        self.shown = False

    def __call__(self, entries: int, fraction: float) -> None:
        now = self.clock()
        if fraction >= 1.0:
            if self.shown:  # done: leave the line as it was before us
                self.stream.write(ERASE)
                self.stream.flush()
                self.shown = False
            return
        if now - self.started < self.delay:
            return
        if self.last is not None and now - self.last < REFRESH_S:
            return
        self.last = now
        percent = min(99, int(fraction * 100))
        self.stream.write(f"{ERASE}{self.label}: {entries:,} entries ({percent}%)")
        self.stream.flush()
        self.shown = True


def wanted(verbosity: int, stream: TextIO | None = None) -> bool:
    stream = stream or sys.stderr
    return verbosity >= 0 and stream.isatty()


class FixProgress:
    """The callback effects/remediation.FIX_PROGRESS takes: which fix of the cycle runs now.
    A fix is a program of its own (seconds, often): shown once the run has taken `delay`."""

    def __init__(
        self,
        stream: TextIO,
        *,
        clock: Callable[[], float] = time.monotonic,
        delay: float = DELAY_S,
    ) -> None:
        self.stream, self.clock, self.delay = stream, clock, delay
        self.started = clock()
        self.shown = False

    def __call__(self, started: int, total: int, what: str) -> None:
        if started >= total:
            if self.shown:
                self.stream.write(ERASE)
                self.stream.flush()
                self.shown = False
            return
        if self.clock() - self.started < self.delay:
            return
        self.stream.write(f"{ERASE}running fix {started + 1} of {total}: {what[:60]}")
        self.stream.flush()
        self.shown = True


@contextlib.contextmanager
def failure_log_progress(verbosity: int) -> Iterator[None]:
    """Show the failure log's read on stderr while the body runs, when wanted."""
    if not wanted(verbosity):
        yield
        return
    from selfcorrect.io.failure_log import PROGRESS

    try:
        delay = float(os.environ.get("SELFCORRECT_PROGRESS_DELAY", DELAY_S))
    except ValueError:
        delay = DELAY_S
    reporter = TerminalProgress(sys.stderr, "reading tool_failures.yaml", delay=delay)
    from selfcorrect.effects.remediation import FIX_PROGRESS

    fixes = FixProgress(sys.stderr, delay=delay)
    token, fix_token = PROGRESS.set(reporter), FIX_PROGRESS.set(fixes)
    try:
        yield
    finally:
        PROGRESS.reset(token)
        FIX_PROGRESS.reset(fix_token)
        reporter(0, 1.0)  # erase the line even when the read stopped early
        fixes(1, 1, "")
