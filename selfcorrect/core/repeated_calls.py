"""Identical tool calls that keep failing: what the agent hook's gate refuses (docs/hooks.md).

A call is identified by its tool and the digest of its input (`input_digest`, written by the
failure hook). The fold counts each call's failures since its last success, in log order, so
the gate can refuse the call that has failed `gate.repeat_threshold` times in a row. It keeps at
most KEEP calls, the most recently failed, so its size never follows the log's length.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from selfcorrect.core.model import Failure, Outcome

KEEP = 4096  # distinct calls remembered; an older one that fails again starts a new count

Call = tuple[str, str]  # (tool, input_digest)


@dataclass(frozen=True, slots=True)
class Repeat:
    """One call's failures since its last success, and the subject they were counted under."""

    tool: str
    input_digest: str
    failures: int
    subject: str


class RepeatedCalls:
    """Fed every log entry in order; `at_least(n)` lists the calls that failed n times running."""

    def __init__(self) -> None:
        self._calls: OrderedDict[Call, tuple[int, str]] = OrderedDict()
        # The calls that failed more than once: what a watcher's every run lists, kept apart so
        # that listing them never walks the thousands of calls that failed once.
        self._again: dict[Call, None] = {}

    def feed(self, failure: Failure, subject: str) -> None:
        if not failure.input_digest:
            return  # a hook that records no input digest: nothing identifies the call
        call = (failure.tool, failure.input_digest)
        if failure.outcome is Outcome.SUCCESS:
            self._calls.pop(call, None)  # it worked: the count starts over
            self._again.pop(call, None)
            return
        if failure.outcome is not Outcome.FAILURE:
            return  # a partial success neither counts nor clears
        failures, _ = self._calls.pop(call, (0, subject))
        self._remember(call, failures + 1, subject)

    def _remember(self, call: Call, failures: int, subject: str) -> None:
        self._calls[call] = (failures, subject)
        if failures > 1:
            self._again.pop(call, None)  # to the end: both keep the order calls last failed
            self._again[call] = None
        if len(self._calls) > KEEP:
            oldest, _ = self._calls.popitem(last=False)
            self._again.pop(oldest, None)

    def at_least(self, threshold: int) -> tuple[Repeat, ...]:
        """In the order the calls last failed."""
        calls = self._calls if threshold <= 1 else self._again
        found = [(call, *self._calls[call]) for call in calls]
        return tuple(
            Repeat(tool, digest, failures, subject)
            for (tool, digest), failures, subject in found
            if failures >= threshold
        )

    # The failure hook keeps this fold between processes (io/log_state.py).
    def to_state(self) -> list[list[object]]:
        return [[tool, digest, n, subject] for (tool, digest), (n, subject) in self._calls.items()]

    @classmethod
    def from_state(cls, state: object) -> RepeatedCalls:
        fold = cls()
        if not isinstance(state, list):
            raise ValueError("repeated calls: not a list")
        for row in state[-KEEP:]:
            if not (
                isinstance(row, list)
                and len(row) == 4
                and isinstance(row[0], str)
                and isinstance(row[1], str)
                and type(row[2]) is int
                and row[2] > 0
                and isinstance(row[3], str)
            ):
                raise ValueError("repeated calls: a malformed row")
            fold._remember((row[0], row[1]), row[2], row[3])
        return fold
