"""Progress on a terminal for work that takes a while (docs/ci.md: silent when piped).

A 100,000-entry log once sat silent for 14 s. While a command reads the failure log, a line on
stderr says how far it got (`reading tool_failures.yaml: 45,000 entries (45%)`), rewritten in
place and erased when the read ends. Nothing is shown for work under `delay` seconds, when
stderr is no terminal, or with -q. Standard library only: start-up time counts.
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
    token = PROGRESS.set(reporter)
    try:
        yield
    finally:
        PROGRESS.reset(token)
        reporter(0, 1.0)  # erase the line even when the read stopped early
