"""The one clock: injected everywhere (tests pass a fixed one), stamped one way (UTC, 'Z')."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def stamp(clock: Clock) -> str:
    """`2026-11-29T10:00:00Z`: how every timestamp selfcorrect writes is spelled."""
    return clock().isoformat(timespec="seconds").replace("+00:00", "Z")
