"""Streaming stuck detection (rules §7).

Pure: entries are fed in log order, one at a time, and only per-subject state (three runs, one
window of at most the largest policy window, an unable-to-complete counter) and per-agent runs
are kept, so a 100,000-entry log costs what its subjects cost, not what its entries cost.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, NamedTuple

from msgspec import Struct, field

from selfcorrect.core import saved
from selfcorrect.core.digit_fold import Memo, ShapeKey
from selfcorrect.core.ledger import tool_key
from selfcorrect.core.model import Failure, Outcome, Task
from selfcorrect.core.policy import Policy
from selfcorrect.core.summary import summary
from selfcorrect.core.taxonomy import (
    NORMALISER_PATTERNS,
    ErrorClasses,
    http_statuses,
    normalise_error,
)
from selfcorrect.core.text_window import search, window

EXCERPT = 80  # characters of an error a signal's pattern shows (core/summary.py picks them)


class Signal(StrEnum):
    """The stuck signals, in the order `firing` reports them."""

    CONSECUTIVE_FAILURES = "consecutive_failures"
    REPEATED_ERROR = "repeated_error"
    EDIT_LOOP = "edit_loop"
    AGENT_RETRY = "agent_retry"
    TOOL_LOOP = "tool_loop"
    REVIEW_LOOP = "review_loop"
    UNABLE_TO_COMPLETE = "unable_to_complete"
    # Loops that succeed, per agent: seen by the success hook, which logs `outcome: loop` at
    # its second strike (hooks/loops.py); the entry carries what fired.
    REPEATED_CALL = "repeated_call"
    ALTERNATION = "alternation"


LOOP_SIGNALS = frozenset({Signal.REPEATED_CALL, Signal.ALTERNATION})


class Firing(Struct, frozen=True):
    """One signal firing: occurrences against the threshold, a short summary, and the log
    positions (Failure.index) of the latest entries that make it fire."""

    signal: Signal
    count: int
    threshold: int
    pattern: str
    positions: tuple[int, ...]


class _Shown(NamedTuple):
    """What a window's firing shows of one entry: its position and its summary's fields (the
    rest of the Failure is not kept, so a window can be saved as it is, io/log_state.py)."""

    position: int  # Failure.index
    tool: str
    error: str
    file_path: str | None
    input_digest: str | None


class _Slot(NamedTuple):
    """One entry of a subject's window; the keys are None when the entry cannot count."""

    error: str | None  # normalised error of a failure with error text
    edited: str | None  # file of a failed edit
    operation: tuple[str, str] | None  # (tool, input_digest) of a failure
    shown: _Shown


def _shown(failure: Failure) -> _Shown:
    return _Shown(
        failure.index, failure.tool, failure.error, failure.file_path, failure.input_digest
    )


class _Run(Struct):
    """Consecutive failures that share one key (an error class, a file or an operation)."""

    cap: int
    key: object = None
    count: int = 0
    label: str = ""
    positions: deque[int] = field(default_factory=deque)  # bounded by cap: __post_init__

    def __post_init__(self) -> None:
        self.positions = deque(maxlen=self.cap)

    def push(self, key: object, index: int, label: str) -> None:
        """The next failure: it extends the run when it shares the key, else starts a new one
        (or none, when it has no such key)."""
        if key is None:
            if self.count or self.key is not None:  # else nothing to end (most have no digest)
                self.reset()
            return
        if key != self.key:
            self.reset()
        self.key, self.label = key, label
        self.count += 1
        self.positions.append(index)

    def reset(self) -> None:
        self.key, self.count, self.label = None, 0, ""
        self.positions.clear()


class _Subject(Struct):
    window: deque[_Slot]
    # error class, file, operation; then the failures that say they cannot complete, which
    # are counted since the last success rather than in a row
    runs: tuple[_Run, _Run, _Run, _Run]
    loop: Firing | None = None  # the latest loop entry since the last success (rules §7)


class StuckDetector:
    """Feed failures in log order; ask which signals fire for a subject now."""

    def __init__(self, policy: Policy) -> None:
        stuck = policy.stuck
        self._consecutive = stuck.consecutive_failures
        self._agent_threshold = stuck.agent_retry
        self._unable_threshold = stuck.unable_to_complete
        # (signal, threshold, window) of the signals counted over a window
        self._windowed = tuple(
            (signal, counted.threshold, counted.window)
            for signal, counted in (
                (Signal.REPEATED_ERROR, stuck.repeated_error),
                (Signal.EDIT_LOOP, stuck.edit_loop),
                (Signal.TOOL_LOOP, stuck.tool_loop),
            )
        )
        self._window = max(window for _, _, window in self._windowed)
        # Positions kept per run: enough to show every entry of any window or threshold.
        self._cap = max(
            self._window, self._consecutive, self._agent_threshold, self._unable_threshold
        )
        # Tool names compare case-insensitively: hooks spell them 'Edit' or 'edit'.
        self._edit_tools = {name.casefold() for name in stuck.edit_tools}
        self._exempt_tools = {name.casefold() for name in stuck.exempt_tools}
        self._exempt_subjects = set(stuck.exempt_subjects)
        self._unable = tuple(policy.regex(rx) for rx in stuck.unable_patterns)  # bounded
        self._seen: dict[str, _Subject | None] = {}
        self._split: dict[str, dict[str, None]] = {}  # tool -> its subjects, one per type
        # Per agent, since its last success: its failures on each subject. "The same agent
        # failing 3 times in a row" stalls a subject when 3 of them are on that subject; an
        # agent failing once each on many subjects stalls none of them.
        self._agents: dict[str, dict[str, _Run]] = {}
        self._texts: dict[str, tuple[str, str | None, bool]] = {}
        # The normalised text and "cannot complete" are remembered per shape of text: keyed by
        # what the normaliser's and these patterns' matches depend on (digit_fold.ShapeKey).
        self._shape_key = ShapeKey(
            [
                *NORMALISER_PATTERNS,
                *(re.compile(rx, re.IGNORECASE) for rx in stuck.unable_patterns),
            ]
        )  # read, never matched, with `re`
        self._classes = ErrorClasses()
        self._shapes: Memo[bytes, tuple[str, bool]] = Memo()

    def feed(self, failure: Failure, subject: str | None = None) -> None:
        """Take the next entry of the log; `subject`: its subject when not `failure.subject`
        (a tool-only subject is split by failure type, core/ledger.subject_of)."""
        subject = subject or failure.subject
        if subject != failure.subject:  # a tool-only subject, split by failure type
            split = self._split.setdefault(tool_key(failure), {})
            if failure.outcome is Outcome.SUCCESS and split:
                for other in list(split):  # the tool works again: every type's streak ends
                    self._feed(failure, other)
                return
            split[subject] = None
        self._feed(failure, subject)

    def _feed(self, failure: Failure, subject: str) -> None:
        state = self._seen.get(subject)
        if state is None:
            self._seen[subject] = None
        if (
            failure.read_only  # reads and polls feed no signal at all (rules §7)
            or subject in self._exempt_subjects
            or failure.tool.casefold() in self._exempt_tools
        ):
            return
        if state is None:
            runs = (_Run(self._cap), _Run(self._cap), _Run(self._cap), _Run(self._cap))
            state = self._seen[subject] = _Subject(deque(maxlen=self._window), runs)
        agent = self._agent(failure.agent_id)
        if failure.outcome is Outcome.SUCCESS:
            # The situation changed: the streak and the windows start again.
            state.window.clear()
            state.loop = None
            for run in state.runs:
                run.reset()
            for per_subject in self._agents.values():  # no agent is stuck on it any more
                per_subject.pop(subject, None)
        if failure.outcome is Outcome.LOOP:  # the success hook saw it: take what it says
            state.loop = _loop_firing(failure)
            return
        if failure.outcome is not Outcome.FAILURE:
            if agent is not None:  # the agent got something done: its run of failures ends
                agent.clear()
            if failure.outcome is Outcome.PARTIAL:
                state.window.append(_Slot(None, None, None, _shown(failure)))
            return
        self._fail(state, subject, failure, agent)

    def _fail(
        self, state: _Subject, subject: str, failure: Failure, agent: dict[str, _Run] | None
    ) -> None:
        index, tool, error = failure.index, failure.tool, failure.error
        normalised, kind, unable = self._read(error)
        place = failure.file_path
        operation = (tool, failure.input_digest) if failure.input_digest else None
        by_class, by_file, by_operation, unable_run = state.runs
        by_class.push(kind, index, f"{kind} on {place or subject}")
        by_file.push(place, index, f"Failures on {place}")
        by_operation.push(operation, index, f"{tool} with the same input")
        if unable:  # counted since the last success, not necessarily in a row
            unable_run.push(True, index, f"Reports it cannot complete: {summary(error, EXCERPT)}")
        edited = place if place and tool.casefold() in self._edit_tools else None
        state.window.append(_Slot(normalised or None, edited, operation, _shown(failure)))
        if agent is not None:
            run = agent.get(subject)
            if run is None:
                run = agent[subject] = _Run(self._cap)
            run.push(True, index, f"Agent {failure.agent_id} failing")

    def firing(self, subject: str) -> tuple[Firing, ...]:
        """The signals that fire for `subject` now, in Signal order."""
        state = self._seen.get(subject)
        if state is None:
            return ()
        slots = list(state.window)
        # The longest run ending at the latest failure; ties go to class, then file.
        streak = max(state.runs[:3], key=lambda run: run.count)
        agents = [runs[subject] for runs in self._agents.values() if subject in runs]
        agent = max(agents, key=lambda run: run.count, default=None)
        found = [
            _fired(Signal.CONSECUTIVE_FAILURES, streak, self._consecutive),
            None if agent is None else _fired(Signal.AGENT_RETRY, agent, self._agent_threshold),
            _fired(Signal.UNABLE_TO_COMPLETE, state.runs[3], self._unable_threshold),
            *(
                _most(signal, slots[-window:], threshold)
                for signal, threshold, window in self._windowed
            ),
        ]
        fired = [firing for firing in found if firing is not None]
        if state.loop is not None:
            fired.append(state.loop)
        return tuple(sorted(fired, key=lambda firing: _ORDER[firing.signal]))

    def subjects(self) -> list[str]:
        """Every subject seen, read-only and exempt ones included, in first-seen order."""
        return list(self._seen)

    def state_size(self) -> dict[str, int]:
        """How much is held: subjects, agents, the longest window and position list."""
        states = [state for state in self._seen.values() if state is not None]
        runs = [run for state in states for run in state.runs]
        runs += [run for agent in self._agents.values() for run in agent.values()]
        return {
            "subjects": len(self._seen),
            "agents": len(self._agents),
            "window": max((len(state.window) for state in states), default=0),
            "positions": max((len(run.positions) for run in runs), default=0),
        }

    def to_state(self) -> dict[str, Any]:
        """Per-subject windows and runs, the split map and the per-agent runs as JSON data
        (io/log_state.py). Thresholds, windows and patterns come from the policy the restoring
        detector is built with; the text caches are rebuilt as entries come."""
        return {
            "subjects": {
                subject: None
                if state is None
                else {
                    "window": [_slot_state(slot) for slot in state.window],
                    "runs": [_run_state(run) for run in state.runs],
                    "loop": None if state.loop is None else _firing_state(state.loop),
                }
                for subject, state in self._seen.items()
            },
            "split": {tool: list(subjects) for tool, subjects in self._split.items()},
            "agents": {
                agent: {subject: _run_state(run) for subject, run in runs.items()}
                for agent, runs in self._agents.items()
            },
        }

    def load_state(self, state: Any) -> None:
        """Take what `to_state` gave into this new detector; every field is checked, windows
        and runs against this policy's lengths (saved.StateError when one does not read)."""
        data = saved.fields(state, ("subjects", "split", "agents"))
        seen: dict[str, _Subject | None] = {}
        for subject, value in saved.mapping(data["subjects"]).items():
            if value is None:
                seen[subject] = None
                continue
            parts = saved.fields(value, ("window", "runs", "loop"))
            window = [_slot_of(slot) for slot in saved.items(parts["window"], self._window)]
            runs = [self._run_of(run) for run in saved.items(parts["runs"], 4)]
            if len(runs) != 4:
                raise saved.StateError(f"a subject has 4 runs, not {len(runs)}")
            by_class, by_file, by_operation, unable = runs
            state = _Subject(
                deque(window, maxlen=self._window),
                (by_class, by_file, by_operation, unable),
                None if parts["loop"] is None else _firing_of(parts["loop"]),
            )
            seen[subject] = state
        self._seen = seen
        self._split = {
            tool: dict.fromkeys(saved.texts(subjects))
            for tool, subjects in saved.mapping(data["split"]).items()
        }
        self._agents = {
            agent: {subject: self._run_of(run) for subject, run in saved.mapping(runs).items()}
            for agent, runs in saved.mapping(data["agents"]).items()
        }

    def _run_of(self, state: Any) -> _Run:
        data = saved.fields(state, ("key", "count", "label", "positions"))
        run = _Run(self._cap)
        run.key = _key_of(data["key"])
        run.count = saved.integer(data["count"])
        run.label = saved.text(data["label"])
        positions = saved.items(data["positions"], self._cap)
        run.positions.extend(saved.integer(index) for index in positions)
        return run

    def _read(self, error: str) -> tuple[str, str | None, bool]:
        """Normalised error, error class, and whether it says it cannot complete.

        Cached: a stuck agent repeats itself, and this is the costly part of `feed`.
        """
        known = self._texts.get(error)
        if known is None:
            # The normalised text and "cannot complete" are read once per shape of text (see
            # digit_fold); both read only the text's window, so the key is cut to it too.
            seen = window(error)
            if self._shape_key.readable:
                # Digits are folded in the key, but a status is kept in the text (rules §6).
                statuses = http_statuses(seen)
                key = self._shape_key.key(seen)
                if statuses:
                    key += statuses.encode()
                normalised, unable = self._shapes.get(key, lambda: self._shape(error))
            else:  # a pattern compares digits (a backreference): read every text
                normalised, unable = self._shape(error)
            # Empty (or blank) text is still a failure, but shares nothing with other errors.
            kind = self._classes(error) if normalised else None
            known = (normalised, kind, unable)
            if len(self._texts) >= _CACHE_SIZE:
                del self._texts[next(iter(self._texts))]
            self._texts[error] = known
        return known

    def _shape(self, error: str) -> tuple[str, bool]:
        """The normalised error and whether it says it cannot complete."""
        normalised = normalise_error(error) if error else ""
        return normalised, bool(normalised) and any(search(rx, error) for rx in self._unable)

    def _agent(self, agent_id: str | None) -> dict[str, _Run] | None:
        if agent_id is None:
            return None
        return self._agents.setdefault(agent_id, {})


_CACHE_SIZE = 1024


# --- saved state (io/log_state.py) -------------------------------------------------------------

_text_or_none = saved.optional(saved.text)


def _key_of(value: Any) -> object:
    """A run's key: an error class or a file (text), an operation (tool, digest), or True."""
    if value is None or value is True or type(value) is str:
        return value
    return _operation_of(value)


def _operation_of(value: Any) -> tuple[str, str]:
    pair = saved.items(value, 2)
    if len(pair) != 2:
        raise saved.StateError("an operation is a (tool, input digest) pair")
    return (saved.text(pair[0]), saved.text(pair[1]))


def _firing_state(firing: Firing) -> list[Any]:
    return [
        firing.signal.value,
        firing.count,
        firing.threshold,
        firing.pattern,
        [*firing.positions],
    ]


def _firing_of(state: Any) -> Firing:
    values = saved.items(state, 5)
    if len(values) != 5:
        raise saved.StateError(f"a loop firing has 5 fields, not {len(values)}")
    signal, count, threshold, pattern, positions = values
    name = saved.text(signal)
    if name not in {s.value for s in LOOP_SIGNALS}:
        raise saved.StateError(f"{name!r} is not a loop signal")
    return Firing(
        Signal(name),
        saved.integer(count),
        saved.integer(threshold),
        saved.text(pattern),
        tuple(saved.integer(p) for p in saved.items(positions, 1)),
    )


LOOP_PATTERN = 240  # characters of a loop entry's text its firing shows: it names the calls


def _loop_firing(failure: Failure) -> Firing:
    """The loop signal a `loop` entry carries (`signal`, `count`, `threshold`); an entry that
    says less is a repeated call seen once, at its own threshold."""
    extra: Mapping[str, Any] = failure.extra or {}
    name = extra.get("signal")
    signal = Signal(name) if name in {s.value for s in LOOP_SIGNALS} else Signal.REPEATED_CALL
    count, threshold = _number(extra.get("count")), _number(extra.get("threshold"))
    threshold = threshold or 1
    text = " ".join(failure.error.split())
    pattern = text if len(text) <= LOOP_PATTERN else text[: LOOP_PATTERN - 1] + "…"
    return Firing(signal, max(count, threshold), threshold, pattern, (failure.index,))


def _number(value: Any) -> int:
    """A logged count: an integer, or its text (a hook writes every field as text)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return 0


def _run_state(run: _Run) -> dict[str, Any]:
    key = list(run.key) if isinstance(run.key, tuple) else run.key
    return {"key": key, "count": run.count, "label": run.label, "positions": list(run.positions)}


def _slot_state(slot: _Slot) -> list[Any]:
    operation = None if slot.operation is None else list(slot.operation)
    return [slot.error, slot.edited, operation, list(slot.shown)]


def _slot_of(state: Any) -> _Slot:
    values = saved.items(state, 4)
    if len(values) != 4:
        raise saved.StateError(f"a window slot has 4 fields, not {len(values)}")
    error, edited, operation, shown = values
    fields = saved.items(shown, 5)
    if len(fields) != 5:
        raise saved.StateError(f"a slot's entry has 5 fields, not {len(fields)}")
    index, tool, text, file_path, digest = fields
    return _Slot(
        _text_or_none(error),
        _text_or_none(edited),
        None if operation is None else _operation_of(operation),
        _Shown(
            saved.integer(index),
            saved.text(tool),
            saved.text(text),
            _text_or_none(file_path),
            _text_or_none(digest),
        ),
    )


def review_loops(tasks: Iterable[Task], policy: Policy) -> dict[str, Firing]:
    """Tasks sent back (REVISE) after at least `stuck.review_loop.rounds` review rounds."""
    rounds = policy.stuck.review_rounds
    exempt = set(policy.stuck.exempt_subjects)
    loops: dict[str, Firing] = {}
    for task in tasks:
        done = task.review_rounds or 0
        if task.review_result == "REVISE" and done >= rounds and task.task_id not in exempt:
            pattern = f"Review of {task.task_id}: REVISE after {done} rounds"
            loops[task.task_id] = Firing(Signal.REVIEW_LOOP, done, rounds, pattern, ())
    return loops


def _fired(signal: Signal, run: _Run, threshold: int) -> Firing | None:
    if run.count < threshold:
        return None
    return Firing(signal, run.count, threshold, run.label, tuple(run.positions))


_KEY = {Signal.REPEATED_ERROR: 0, Signal.EDIT_LOOP: 1, Signal.TOOL_LOOP: 2}  # _Slot fields
_ORDER = {signal: rank for rank, signal in enumerate(Signal)}


def _most(signal: Signal, slots: list[_Slot], threshold: int) -> Firing | None:
    """The key repeated most often among `slots`, if at least `threshold` times."""
    groups: dict[object, list[_Shown]] = {}
    field_at = _KEY[signal]
    for slot in slots:
        if slot[field_at] is not None:
            groups.setdefault(slot[field_at], []).append(slot.shown)
    # Most occurrences first; on a tie, the key seen most recently.
    best = max(groups.values(), key=lambda group: (len(group), group[-1].position), default=None)
    if best is None or len(best) < threshold:
        return None
    latest = best[-1]
    if signal is Signal.REPEATED_ERROR:
        pattern = f"Same error: {summary(latest.error, EXCERPT)}"
    elif signal is Signal.EDIT_LOOP:
        pattern = f"{latest.tool} of {latest.file_path}"
    else:
        pattern = f"{latest.tool} with the same input ({latest.input_digest})"
    return Firing(signal, len(best), threshold, pattern, tuple(item.position for item in best))
