"""The policy's regexes: matched with a time limit, and a catastrophic one refused up front.

A policy pattern is the user's to write, or an agent's (the policy is a file in the workflow
folder), and Python's `re` has no time limit: `^(a+)+$` against 41 characters ran for minutes,
in the failure hook, under the folder's lock. So (docs/policy.md, "Patterns"):
- every pattern that is not one of the shipped defaults is matched by the `regex` package with
  its `timeout`; a match that runs out of time counts as no match. The shipped patterns are
  linear (tests/test_bounded_patterns.py proves it) and stay on `re`, which is faster;
- what a slow pattern may cost one run is bounded: the run's timeouts are counted per pattern
  (`begin_run`, `timed_out`), a pattern that ran out of time MAX_TIMEOUTS times is not tried
  again in that run, nor, once the run's patterns ran out of time RUN_TIMEOUTS times in all,
  one that ran out of time at all. The run reports each with its position, once;
- `catastrophic` says why a pattern can take exponential time, so the policy check refuses it
  at its own line: a repeated group whose body can be matched by a repetition inside it alone
  (`(a+)+`, `(\\w+\\s?)*`), found from its parse, or a pattern that runs out of time on a
  probe text (`(a|aa)+$` over a run of one character).

Pure: no I/O (the run's count of timeouts is the one state kept). `regex` is imported only
when a policy pattern is compiled.
"""

from __future__ import annotations

import re
import re._constants as _c  # the stdlib parser: the pattern is checked as `re` would run it
import re._parser as _p
from collections.abc import Iterable
from typing import Any

MATCH_LIMIT_S = 0.05  # one search over at most 8 KiB of text (core/text_window.py)
MAX_TIMEOUTS = 3  # a pattern's timeouts in one run before it is tried no more in that run
RUN_TIMEOUTS = 20  # all patterns' timeouts in one run before any that timed out is dropped
PROBE_LIMIT_S = 0.1
_PROBE_LENGTH = 48  # 2**48 steps for an exponential pattern: far past any limit
_PROBE_CHARS = "a0 _-./:"
_UNBOUNDED = (_c.MAX_REPEAT, _c.MIN_REPEAT)


class Bounded:
    """A compiled policy pattern whose `search` and `match` give up after MATCH_LIMIT_S."""

    __slots__ = ("_rx", "pattern", "timeouts")

    def __init__(self, source: str) -> None:
        import regex  # only for a policy that has patterns of its own: start-up counts

        self.pattern = source
        self._rx = regex.compile(source, regex.IGNORECASE | regex.VERSION0)
        self.timeouts = 0  # how many matches ran out of time (each counted as no match)

    def search(self, text: str, pos: int = 0) -> Any:
        return self._run(self._rx.search, text, pos)

    def match(self, text: str, pos: int = 0) -> Any:
        return self._run(self._rx.match, text, pos)

    def _run(self, method: Any, text: str, pos: int) -> Any:
        spent = _RUN.counts.get(self.pattern, 0)
        if spent and (spent >= MAX_TIMEOUTS or _RUN.total >= RUN_TIMEOUTS):
            return None  # dropped for the rest of the run: as a timeout, no match
        try:
            return method(text, pos, timeout=MATCH_LIMIT_S)
        except TimeoutError:
            self.timeouts += 1
            _RUN.counts[self.pattern] = spent + 1
            _RUN.total += 1
            return None


class _Spent:
    """The timeouts of the run under way, per pattern source (a pattern compiled twice, or
    kept compiled between runs, is one pattern)."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.total = 0


_RUN = _Spent()


def begin_run() -> None:
    """A run starts: no pattern has run out of time in it yet."""
    _RUN.counts.clear()
    _RUN.total = 0


def timed_out() -> list[tuple[str, int, bool]]:
    """(pattern, timeouts, dropped) for each policy pattern that ran out of time in this run,
    in the order they first did; `dropped`: not tried again in this run."""
    return [
        (source, count, count >= MAX_TIMEOUTS or _RUN.total >= RUN_TIMEOUTS)
        for source, count in _RUN.counts.items()
    ]


def compile_policy(source: str, shipped: frozenset[str]) -> re.Pattern[str] | Bounded:
    """A policy pattern ready to match: on `re` when it is a shipped one, else bounded."""
    if source in shipped:
        return re.compile(source, re.IGNORECASE)
    return Bounded(source)


def catastrophic(source: str) -> str | None:
    """Why `source` (which `re` compiles) can take exponential time, or None."""
    try:
        parsed = _p.parse(source, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError):
        return None  # the compile check reports it
    if _nested_repeat(parsed):
        return (
            "it repeats a group that a repetition inside it can match alone (like `(a+)+`), "
            "so a text that almost matches is tried in exponentially many ways"
        )
    probe = _slow_probe(source)
    if probe is not None:
        return f"matching it against {probe!r} did not finish within {PROBE_LIMIT_S:g} s"
    return None


def _nested_repeat(items: Any) -> bool:
    for op, av in items:
        if op in _UNBOUNDED:
            if av[1] > 1 and _only_repeats(av[2]):
                return True
            found = _nested_repeat(av[2])
        elif op is _c.SUBPATTERN:
            found = _nested_repeat(av[-1])
        elif op is _c.BRANCH:
            found = any(map(_nested_repeat, av[1]))
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            found = _nested_repeat(av[1])
        else:
            found = False
        if found:
            return True
    return False


def _only_repeats(body: Any) -> bool:
    """Does the body hold an unbounded repetition, with everything else in it optional?"""
    flat = _flatten(body)
    repeats = [(op, av) for op, av in flat if op in _UNBOUNDED and av[1] > 1]
    optional = all(
        (op in _UNBOUNDED and av[0] == 0) or op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT)
        for op, av in flat
        if (op, av) not in repeats
    )
    return bool(repeats) and optional


def _flatten(items: Any) -> list[tuple[Any, Any]]:
    flat: list[tuple[Any, Any]] = []
    for op, av in items:
        if op is _c.SUBPATTERN:
            flat.extend(_flatten(av[-1]))
        elif op is _c.BRANCH and len(av[1]) == 1:
            flat.extend(_flatten(av[1][0]))
        else:
            flat.append((op, av))
    return flat


def _slow_probe(source: str) -> str | None:
    """A text of one repeated character the pattern cannot finish within PROBE_LIMIT_S."""
    import regex

    rx = regex.compile(source, regex.IGNORECASE | regex.VERSION0)
    for text in _probes(source):
        try:
            rx.search(text, timeout=PROBE_LIMIT_S)
        except TimeoutError:
            return text[:8] + "…" if len(text) > 8 else text
    return None


def _probes(source: str) -> Iterable[str]:
    letters = [ch for ch in dict.fromkeys(source) if ch.isalnum()][:16]
    for ch in dict.fromkeys([*letters, *_PROBE_CHARS]):
        for end in ("!", "\n"):
            yield ch * _PROBE_LENGTH + end


__all__ = [
    "MATCH_LIMIT_S",
    "MAX_TIMEOUTS",
    "RUN_TIMEOUTS",
    "Bounded",
    "begin_run",
    "catastrophic",
    "compile_policy",
    "timed_out",
]
