"""Identical tool calls that keep failing: what the agent hook's gate refuses (docs/hooks.md).

A call is identified by its agent, its tool, the digest of its input (`input_digest`, written by
the failure hook, canonical per tool) and its normalised error: three agents each failing
`npm test` once, or one agent failing it three different ways, is not one call repeated. The
fold counts each call's failures since it was last cleared, in log order, so the gate can refuse
the call that has failed `gate.repeat_threshold` times. A count is cleared by:
- a success of that call (same tool and digest, by any agent: the call works now);
- a successful edit (an edit tool) by that agent: it changed something, so its next try of the
  call is a new try, not a repeat;
- a reset or a PASS, which the gate's state drops (core/gate_state.py).
It keeps at most KEEP calls, the most recently failed, so its size never follows the log's length.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from msgspec import Struct

from selfcorrect.core.model import Failure, Outcome
from selfcorrect.core.taxonomy import normalise_error

KEEP = 4096  # distinct calls remembered; an older one that fails again starts a new count
ERROR_KEY = 200  # characters of the normalised error that tell two failures of a call apart
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")  # the policy's stuck.edit_tools default

Call = tuple[str, str, str, str]  # (agent, tool, input_digest, normalised error)


class Repeat(Struct, frozen=True):
    """One call's failures since it was last cleared, and the subject they were counted under."""

    tool: str
    input_digest: str
    failures: int
    subject: str
    agent: str = ""
    last: int = -1  # the log position of its latest failure: a reset after it clears it


class RepeatedCalls:
    """Fed every log entry in order; `at_least(n)` lists the calls that failed n times running."""

    def __init__(self, edit_tools: Iterable[str] = EDIT_TOOLS) -> None:
        self._calls: OrderedDict[Call, tuple[int, str, int]] = OrderedDict()
        # The calls that failed more than once: what a watcher's every run lists, kept apart so
        # that listing them never walks the thousands of calls that failed once.
        self._again: dict[Call, None] = {}
        self._edit_tools = frozenset(t.casefold() for t in edit_tools)
        # Indexes for clearing without a walk over every call: by (tool, digest), by agent.
        self._by_call: dict[tuple[str, str], dict[Call, None]] = {}
        self._by_agent: dict[str, dict[Call, None]] = {}
        self._errors: dict[str, str] = {}  # error -> its key: a failing call repeats its error
        # The latest calls' `tool_use_id`s: a call logged twice (two hooks, two loggers) counts
        # once (docs/hooks.md, "One entry per call").
        self._seen: OrderedDict[str, None] = OrderedDict()

    def first_sight(self, failure: Failure) -> bool:
        """False for an entry whose `tool_use_id` an earlier entry already had."""
        ident = failure.extra.get("tool_use_id") if failure.extra else None
        if not isinstance(ident, str) or not ident:
            return True
        if ident in self._seen:
            return False
        self._seen[ident] = None
        if len(self._seen) > KEEP:
            self._seen.popitem(last=False)
        return True

    def feed(self, failure: Failure, subject: str) -> None:
        agent = failure.agent_id or ""
        if failure.outcome is Outcome.SUCCESS:
            self._succeeded(failure, agent)
            return
        if not failure.input_digest or failure.outcome is not Outcome.FAILURE:
            return  # no digest: nothing identifies the call; a partial neither counts nor clears
        call = (agent, failure.tool, failure.input_digest, self._error_key(failure.error))
        failures, _, _ = self._calls.pop(call, (0, subject, -1))
        self._remember(call, failures + 1, subject, failure.index)

    def _error_key(self, error: str) -> str:
        key = self._errors.get(error)
        if key is None:
            if len(self._errors) >= KEEP:
                self._errors.clear()
            key = self._errors[error] = normalise_error(error)[:ERROR_KEY]
        return key

    def _succeeded(self, failure: Failure, agent: str) -> None:
        cleared = list(self._by_call.get((failure.tool, failure.input_digest or ""), ()))
        if agent and failure.tool.casefold() in self._edit_tools:
            cleared += self._by_agent.get(agent, ())
        for call in cleared:  # it worked, or the agent changed something: start over
            self._forget(call)

    def _forget(self, call: Call) -> None:
        if self._calls.pop(call, None) is None:
            return
        self._again.pop(call, None)
        _unindex(self._by_call, (call[1], call[2]), call)
        _unindex(self._by_agent, call[0], call)

    def _remember(self, call: Call, failures: int, subject: str, last: int) -> None:
        self._calls[call] = (failures, subject, last)
        self._by_call.setdefault((call[1], call[2]), {})[call] = None
        self._by_agent.setdefault(call[0], {})[call] = None
        if failures > 1:
            self._again.pop(call, None)  # to the end: both keep the order calls last failed
            self._again[call] = None
        if len(self._calls) > KEEP:
            self._forget(next(iter(self._calls)))

    def at_least(self, threshold: int) -> tuple[Repeat, ...]:
        """In the order the calls last failed."""
        calls = self._calls if threshold <= 1 else self._again
        found = [(call, *self._calls[call]) for call in calls]
        return tuple(
            Repeat(tool, digest, failures, subject, agent, last)
            for (agent, tool, digest, _), failures, subject, last in found
            if failures >= threshold
        )

    # The failure hook keeps this fold between processes (io/log_state.py).
    def to_state(self) -> dict[str, list[object]]:
        calls: list[object] = [[*call, *counted] for call, counted in self._calls.items()]
        return {"calls": calls, "seen": list(self._seen)}

    @classmethod
    def from_state(cls, state: object, edit_tools: Iterable[str] = EDIT_TOOLS) -> RepeatedCalls:
        fold = cls(edit_tools)
        if not isinstance(state, dict):
            raise ValueError("repeated calls: not a mapping")
        rows, seen = state.get("calls"), state.get("seen")
        if not isinstance(rows, list) or not isinstance(seen, list):
            raise ValueError("repeated calls: no calls or seen ids")
        for ident in seen[-KEEP:]:
            if not isinstance(ident, str):
                raise ValueError("repeated calls: a malformed id")
            fold._seen[ident] = None
        for row in rows[-KEEP:]:
            if not (
                isinstance(row, list)
                and len(row) == 7
                and all(isinstance(part, str) for part in row[:4])
                and type(row[4]) is int
                and row[4] > 0
                and isinstance(row[5], str)
                and type(row[6]) is int
            ):
                raise ValueError("repeated calls: a malformed row")
            fold._remember((row[0], row[1], row[2], row[3]), row[4], row[5], row[6])
        return fold


def _unindex(index: dict[Any, dict[Call, None]], key: object, call: Call) -> None:
    members = index.get(key)
    if members is not None:
        members.pop(call, None)
        if not members:
            del index[key]
