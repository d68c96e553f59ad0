"""Stuck detection (rules §7): the signals, their resets, false positives, bounded memory.

The `test_openhands_*` cases port the scenarios of OpenHands' stuck-detector suite,
`tests/unit/controller/test_is_stuck.py` in All-Hands-AI/OpenHands (now OpenHands/OpenHands),
into our log format. OpenHands watches a stream of (action, observation) events; we watch a log
of failed tool calls. The mapping, scenario by scenario:

- an action is a tool call: `tool` plus `input_digest` (the same command, the same digest);
  its error observation is the entry's `error`;
- a user message or other interleaved event is an entry on another subject, or a read-only
  entry: neither breaks a subject's signals (like OpenHands' headless mode);
- the UI mode's "a user message resets" is our `success`: the situation changed;
- the monologue (the agent repeating itself) is agent_retry: one agent failing in a row on one
  subject (other work may interleave; its failures elsewhere do not count for this subject);
- the condensation loop (context window errors) is repeated_error on "prompt is too long";
- the A/B/A/B... action pattern is caught by the windowed signals (repeated_error, edit_loop),
  never by consecutive_failures, which needs one unbroken run sharing a key;
- the empty-response loop is failures with an empty error: they feed no error signal, only
  agent_retry;
- OpenHands' thresholds are 4 repeats (10 condensations); ours are policy values (3 by default).
  Where the number matters, a port runs with an "OpenHands-equivalent" policy and checks the
  default too. We deliberately differ in one place: rules §7 folds digits, so the same syntax
  error on moving line numbers IS a repeated error here (OpenHands calls it progress);
- OpenHands' delegate check (a parent controller is stuck when its delegate is) has no
  equivalent in a flat log and is not ported.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfcorrect.core.model import Failure, Outcome
from selfcorrect.core.normalise import normalise_coordination, normalise_failure
from selfcorrect.core.policy import Policy, build_policy
from selfcorrect.core.stuck import Firing, Signal, StuckDetector, review_loops
from selfcorrect.core.taxonomy import error_class, normalise_error
from selfcorrect.io.policy_file import default_policy_data, load_policy

C, R, E, A, T, U = (
    Signal.CONSECUTIVE_FAILURES,
    Signal.REPEATED_ERROR,
    Signal.EDIT_LOOP,
    Signal.AGENT_RETRY,
    Signal.TOOL_LOOP,
    Signal.UNABLE_TO_COMPLETE,
)
DEFAULTS = load_policy(None)


def policy_with(**stuck: Any) -> Policy:
    return build_policy(default_policy_data(), {"stuck": stuck})


# What OpenHands counts: four repeats of an action, ten condensations.
OPENHANDS = policy_with(
    consecutive_failures={"threshold": 4},
    repeated_error={"threshold": 4, "window": 10},
    agent_retry={"threshold": 4},
)


class Log:
    """A tool_failures.yaml being appended to, watched by a detector."""

    def __init__(self, policy: Policy = DEFAULTS) -> None:
        self.detector = StuckDetector(policy)
        self.size = 0

    def add(self, tool: str = "Bash", error: str = "", **fields: Any) -> Log:
        minute, second = divmod(self.size * 7, 60)
        raw = {
            "tool": tool,
            "error": error,
            "timestamp": f"2026-08-05T14:{minute:02d}:{second:02d}Z",
        }
        self.detector.feed(normalise_failure({**raw, **fields}, self.size))
        self.size += 1
        return self

    def repeat(self, times: int, tool: str = "Bash", error: str = "", **fields: Any) -> Log:
        for _ in range(times):
            self.add(tool, error, **fields)
        return self

    def signals(self, subject: str) -> list[Signal]:
        return [firing.signal for firing in self.detector.firing(subject)]

    def get(self, subject: str, signal: Signal) -> Firing:
        [firing] = [f for f in self.detector.firing(subject) if f.signal is signal]
        return firing


LS_MISSING = "ls: cannot access 'dist': No such file or directory"
NOT_READ = "File has not been read yet. Read it first before writing to it."
NOT_FOUND = "String to replace not found in file. String: const token = await getToken(id);"
TYPE_ERROR = "TypeError: Cannot read properties of undefined (reading 'refreshToken')"
TOO_LONG = "prompt is too long: {n} tokens > 200000 maximum"


# --------------------------------------------------------------------------- each signal


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        # consecutive failures sharing an error class (different files, different inputs)
        (
            [
                ("Bash", f"TypeError: {message}", {"input_digest": digest})
                for digest, message in enumerate(
                    ["x is undefined", "f is not a function", "cannot read 'y' of null"]
                )
            ],
            [C],
        ),
        # ...sharing a file (different classes)
        (
            [
                ("Bash", err, {"file_path": "src/a.ts"})
                for err in (TYPE_ERROR, "SyntaxError: x", "ENOENT: y")
            ],
            [C],
        ),
        # ...sharing an operation: the same tool with the same input (errors all differ)
        (
            [("Bash", err, {"input_digest": "9f2c"}) for err in ("boom", "bang", "crash")],
            [C],
        ),
        # the same tool with different inputs shares nothing
        (
            [
                ("Bash", err, {"input_digest": d})
                for err, d in (("boom", "1"), ("bang", "2"), ("crash", "3"))
            ],
            [],
        ),
        # two are not enough
        ([("Bash", TYPE_ERROR, {}), ("Bash", TYPE_ERROR + "!", {})], []),
        # the same normalised error three times among other failures (classes differ between)
        (
            [
                ("Bash", "ENOENT: open '/a/one.ts'", {}),
                ("Bash", "SyntaxError: y", {}),
                ("Bash", "ENOENT: open '/b/two.ts'", {}),
                ("Bash", "RangeError: z", {}),
                ("Bash", "ENOENT: open '/c/three.ts'", {}),
            ],
            [R],
        ),
        # the same file edited three times in the window, other failures between
        (
            [
                ("Edit", NOT_FOUND, {"file_path": "src/a.ts"}),
                ("Bash", TYPE_ERROR, {}),
                ("Write", NOT_READ, {"file_path": "src/a.ts"}),
                ("Bash", "SyntaxError: q", {}),
                ("MultiEdit", "File has been modified since read", {"file_path": "src/a.ts"}),
            ],
            [E],
        ),
        # failing Bash calls on one file are no edits
        (
            [
                ("Bash", err, {"file_path": "src/a.ts", "input_digest": str(i)})
                for i, err in enumerate(["x", "y"])
            ],
            [],
        ),
        # the same tool and input five times in the window, each time with another error,
        # and other failures between (no streak of three)
        (
            [
                ("Grep", "grep: Unmatched ( or \\(", {"input_digest": "g1"}),
                ("Grep", "grep: Invalid regular expression", {"input_digest": "g1"}),
                ("Bash", "npm ERR! missing script: lint", {"input_digest": "b1"}),
                ("Grep", "grep: Trailing backslash", {"input_digest": "g1"}),
                ("Grep", "grep: Invalid range end", {"input_digest": "g1"}),
                ("Bash", "make: *** No rule to make target", {"input_digest": "b2"}),
                ("Grep", "grep: Unmatched [, [^, [:, [., or [=", {"input_digest": "g1"}),
            ],
            [T],
        ),
        # the agent says it cannot complete, three times, not in a row
        (
            [
                ("Task", "I'm unable to complete the migration: schema is locked", {}),
                ("Task", "ENOENT: open '/x'", {}),
                ("Task", "Could not complete: tests keep failing", {}),
                ("Task", "SyntaxError: bad", {}),
                ("Task", "Giving up after 3 attempts", {}),
            ],
            [U],
        ),
    ],
    ids=[
        "class",
        "file",
        "operation",
        "different-inputs",
        "two",
        "repeated",
        "edit",
        "bash-no-edit",
        "tool-loop",
        "unable",
    ],
)
def test_each_signal(
    entries: list[tuple[str, str, dict[str, Any]]], expected: list[Signal]
) -> None:
    log = Log()
    for tool, error, fields in entries:
        log.add(tool, error, task_id="WI-3", **fields)
    assert log.signals("WI-3") == expected


def test_a_firing_says_what_how_often_and_where() -> None:
    log = Log().add("Read", "EISDIR", file_path="src", task_id="WI-3", read_only=True)
    for line in (45, 46, 47):
        log.add(
            "Edit",
            f"TypeError at handler.ts:{line}",
            file_path="src/handler.ts",
            task_id="WI-3",
            agent_id="executor-1",
        )
    assert log.detector.firing("WI-3") == (
        Firing(C, 3, 3, "TypeError on src/handler.ts", (1, 2, 3)),
        Firing(R, 3, 3, "Same error: TypeError at handler.ts:47", (1, 2, 3)),
        Firing(E, 3, 3, "Edit of src/handler.ts", (1, 2, 3)),
        Firing(A, 3, 3, "Agent executor-1 failing", (1, 2, 3)),
    )


def test_agent_retry_counts_the_agents_failures_on_each_subject() -> None:
    """An agent failing once each on three subjects stalls none of them (replay found this
    false positive in the cAgents session); three of its failures on one subject, with no
    success of that agent in between, stall that subject even when other work interleaves."""
    log = Log()
    log.add("Edit", NOT_FOUND, file_path="src/a.ts", agent_id="executor-1")
    log.add("Bash", "boom", task_id="WI-8", agent_id="executor-2")  # another agent: no break
    log.add("Bash", TYPE_ERROR, task_id="WI-1", agent_id="executor-1")
    log.add("Read", "EISDIR", file_path="src", agent_id="executor-1", read_only=True)  # ignored
    log.add("Write", NOT_READ, file_path="docs/api.md", agent_id="executor-1")
    for subject in ("src/a.ts", "WI-1", "docs/api.md"):
        assert A not in log.signals(subject)
    log.add("Bash", TYPE_ERROR, task_id="WI-1", agent_id="executor-1")
    log.add("Edit", NOT_FOUND, file_path="src/b.ts", agent_id="executor-1")
    log.add("Bash", "another error", task_id="WI-1", agent_id="executor-1")
    assert log.get("WI-1", A) == Firing(A, 3, 3, "Agent executor-1 failing", (2, 5, 7))
    log.add("Bash", "ok-ish", task_id="WI-9", agent_id="executor-1", outcome="partial")
    assert A not in log.signals("WI-1")  # something got done: the run ends


def test_cannot_complete_counts_since_the_last_success() -> None:
    log = Log()
    unable = {"tool": "Task", "task_id": "WI-5"}
    log.add(error="Unable to complete: the schema is locked", **unable)
    log.add(error="I'm stuck on the lock", **unable)
    log.add(error="", outcome="success", **unable)
    log.add(error="Could not finish the migration", **unable)
    log.add(error="ENOENT: open 'db/lock'", **unable)
    log.add(error="Gave up waiting for the lock", **unable)
    assert U not in log.signals("WI-5")
    log.add(error="Cannot complete: lock held by pid 4242", **unable)
    assert log.get("WI-5", U) == Firing(
        U, 3, 3, "Reports it cannot complete: Cannot complete: lock held by pid 4242", (3, 5, 6)
    )


def test_a_tie_reports_the_latest_repeated_key() -> None:
    log = Log()
    for error in ["ENOENT: open '/a'", "EACCES: denied", "ENOENT: open '/b'", "EACCES: denied"]:
        log.add("Bash", error, task_id="WI-3")
    log.add("Bash", "ENOENT: open '/c'", task_id="WI-3").add(
        "Bash", "EACCES: denied", task_id="WI-3"
    )
    assert log.get("WI-3", R) == Firing(R, 3, 3, "Same error: EACCES: denied", (1, 3, 5))


def test_signals_fire_in_signal_order_and_follow_policy_numbers() -> None:
    policy = policy_with(
        tool_loop={"threshold": 2, "window": 3}, consecutive_failures={"threshold": 9}
    )
    log = Log(policy).repeat(2, "Bash", "", task_id="WI-2", input_digest="d")
    assert log.signals("WI-2") == [T]
    log.add("Bash", "x", task_id="WI-2").add("Bash", "y", task_id="WI-2")
    assert log.signals("WI-2") == []  # only one of them left in a window of 3


# --------------------------------------------------------------------------- outcomes


def test_a_success_resets_the_streak_and_clears_the_windows() -> None:
    log = Log()
    common = {"task_id": "WI-3", "file_path": "src/a.ts", "input_digest": "e1"}
    log.repeat(2, "Edit", NOT_FOUND, **common).repeat(
        2, "Edit", NOT_FOUND, **common, outcome="partial"
    )
    assert log.signals("WI-3") == []  # partials are no failures...
    log.add("Edit", NOT_FOUND, **common)
    assert log.get("WI-3", C).positions == (0, 1, 4)  # ...and break nothing
    assert log.signals("WI-3") == [C, R, E]
    log.add("Edit", "", **common, outcome="success")
    log.repeat(2, "Edit", NOT_FOUND, **common)
    assert log.signals("WI-3") == []
    log.add("Edit", NOT_FOUND, **common)
    assert log.get("WI-3", C) == Firing(C, 3, 3, "Failures on src/a.ts", (6, 7, 8))


def test_partials_take_window_slots_but_feed_no_signal() -> None:
    log = Log().repeat(6, "Edit", NOT_FOUND, task_id="WI-3", file_path="a.ts", outcome="partial")
    assert log.signals("WI-3") == []
    log = Log().add("Bash", "ENOENT: open '/x'", task_id="WI-3")
    log.repeat(8, "Bash", "ok", task_id="WI-3", outcome="partial")
    log.add("Bash", "ENOENT: open '/y'", task_id="WI-3").add(
        "Bash", "ENOENT: open '/z'", task_id="WI-3"
    )
    assert R not in log.signals("WI-3")  # the first fell out of the last 10 entries
    assert C in log.signals("WI-3")  # but no success came: the streak of ENOENT stands


@pytest.mark.parametrize("error", ["", "   ", "\t\n"])
def test_an_empty_error_is_a_failure_that_shares_no_error(error: str) -> None:
    log = Log().repeat(4, "Task", error, task_id="WI-6")
    assert log.signals("WI-6") == []
    log = Log().repeat(3, "Task", error, task_id="WI-6", agent_id="executor-1")
    assert log.signals("WI-6") == [A]  # still failures


@pytest.mark.parametrize(
    ("stuck", "fields"),
    [
        ({}, {"read_only": True}),
        ({"exempt": {"tools": ["healthcheck"]}}, {"tool": "HealthCheck"}),
        ({"exempt": {"subjects": ["WI-4"]}}, {}),
    ],
    ids=["read-only", "exempt-tool", "exempt-subject"],
)
def test_read_only_and_exempt_entries_feed_nothing(
    stuck: dict[str, Any], fields: dict[str, Any]
) -> None:
    log = Log(policy_with(**stuck))
    entry = {
        "tool": "Bash",
        "error": TYPE_ERROR,
        "task_id": "WI-4",
        "input_digest": "d",
        "agent_id": "x",
    }
    log.repeat(20, **{**entry, **fields})
    assert log.signals("WI-4") == []
    assert log.detector.subjects() == ["WI-4"]
    assert Log().repeat(20, **entry).signals("WI-4") == [C, R, A, T]  # the same, counted


# --------------------------------------------------------------------------- OpenHands ports


def test_openhands_history_too_short() -> None:
    log = Log().add("Bash", LS_MISSING, input_digest="ls")
    assert log.signals("Bash") == []
    assert log.add("Bash", LS_MISSING, input_digest="ls").signals("Bash") == []


def test_openhands_interactive_mode_resets_after_user_message() -> None:
    log = Log(OPENHANDS).repeat(4, "Bash", LS_MISSING, input_digest="ls")
    assert C in log.signals("Bash")
    log.add("Bash", "", input_digest="ls", outcome="success")  # the situation changed
    assert log.signals("Bash") == []
    log.repeat(2, "Bash", LS_MISSING, input_digest="ls")
    assert log.signals("Bash") == []
    log.repeat(2, "Bash", LS_MISSING, input_digest="ls")
    assert log.get("Bash", C).count == 4


def test_openhands_is_stuck_repeating_action_observation() -> None:
    for policy, stuck_at in ((OPENHANDS, 4), (DEFAULTS, 3)):
        log = Log(policy).repeat(2, "Bash", LS_MISSING, task_id="WI-1", input_digest="ls")
        log.add("Write", NOT_READ, file_path="notes.md")  # something else happens meanwhile
        for _ in range(3, stuck_at + 1):
            assert C not in log.signals("WI-1")
            log.add("Bash", LS_MISSING, task_id="WI-1", input_digest="ls")
        firing = log.get("WI-1", C)
        assert (firing.count, firing.positions) == (stuck_at, (0, 1, *range(3, stuck_at + 1)))
        assert R in log.signals("WI-1")


def test_openhands_is_stuck_repeating_action_error() -> None:
    # The same command, not necessarily the same error: the operation is the shared key.
    log = Log()
    for error in (
        "Command not found",
        "Command still not found or another error",
        "Different error",
    ):
        log.add("Bash", error, task_id="WI-1", input_digest="invalid_command")
    log.add("Bash", "Command not found", task_id="WI-1", input_digest="invalid_command")
    assert log.signals("WI-1") == [C]  # only two errors alike: no repeated_error
    assert log.get("WI-1", C).pattern == "Bash with the same input"


CELL = (
    '  Cell In[1], line {line}\n to_replace="""def largest(min_factor, max_factor):\n'
    "      ^\n{message}{tail}"
)


def syntax_errors(log: Log, message: str, random_line: bool, incidents: int = 4) -> Log:
    for i in range(incidents):
        line, tail = ((i + 1) * 10, "\n" * (i + 1)) if random_line else (42, "")
        log.add(
            "Bash",
            CELL.format(line=line, message=message, tail=tail),
            task_id="WI-4",
            input_digest=f"cell-{i}",
        )
    return log


@pytest.mark.parametrize(
    "message",
    ["SyntaxError: invalid syntax. Perhaps you forgot a comma?", "SyntaxError: incomplete input"],
)
def test_openhands_is_stuck_invalid_syntax_error(message: str) -> None:
    log = syntax_errors(Log(), message, random_line=False)
    assert log.signals("WI-4") == [C, R]
    assert log.get("WI-4", C).pattern == "SyntaxError on WI-4"


@pytest.mark.parametrize(
    "message",
    ["SyntaxError: invalid syntax. Perhaps you forgot a comma?", "SyntaxError: incomplete input"],
)
def test_openhands_syntax_error_random_lines_is_stuck_here(message: str) -> None:
    # OpenHands: not stuck (the line moves). rules §7 folds digits and whitespace, and four
    # SyntaxErrors in a row share an error class: stuck, deliberately.
    assert syntax_errors(Log(), message, random_line=True).signals("WI-4") == [C, R]


def test_openhands_is_not_stuck_invalid_syntax_error_only_three_incidents() -> None:
    message = "SyntaxError: invalid syntax. Perhaps you forgot a comma?"
    assert (
        syntax_errors(Log(OPENHANDS), message, random_line=True, incidents=3).signals("WI-4") == []
    )
    assert syntax_errors(Log(), message, random_line=True, incidents=3).signals("WI-4") == [C, R]


def test_openhands_is_not_stuck_unterminated_string_only_two_incidents() -> None:
    message = "SyntaxError: unterminated string literal (detected at line 1)"
    assert syntax_errors(Log(), message, random_line=False, incidents=2).signals("WI-4") == []


def test_openhands_is_not_stuck_syntax_error_not_at_end() -> None:
    # The same cell, the same SyntaxError, but different output after it each time: the errors
    # are not repeated; the streak of one failing operation is still there.
    log = Log()
    for line, tail in (
        (1, "This is some additional output"),
        (1, "Too much output here on and on"),
        (3, "Enough"),
        (2, "Last line of output"),
    ):
        error = (
            f'print("hello\n  ^\nSyntaxError: unterminated string literal '
            f"(detected at line {line})\n{tail}"
        )
        log.add("Bash", error, task_id="WI-4", input_digest="print-hello")
    assert R not in log.signals("WI-4")
    assert log.signals("WI-4") == [C]


NPM_TEST = (
    "Bash",
    TYPE_ERROR + " at AuthService.refresh (src/auth/refresh.ts:{n}:13)",
    {"input_digest": "npm-test"},
)
EDIT_A = ("Edit", NOT_FOUND, {"file_path": "src/auth/refresh.ts", "input_digest": "edit-1"})
GREP = ("Grep", "grep: Unmatched ( or \\( in pattern", {"input_digest": "grep-1"})
PWD = ("Bash", "pwd: getcwd: cannot access parent directories", {"input_digest": "pwd"})


def play(log: Log, steps: Iterable[tuple[str, str, dict[str, Any]]], subject: str = "WI-2") -> Log:
    for n, (tool, error, fields) in enumerate(steps):
        if tool == "other":  # a user message, or anything on another subject
            log.add("Read", "", file_path="README.md", read_only=True)
            log.add("Bash", "EPIPE", task_id="WI-99")
            continue
        log.add(tool, error.format(n=n), task_id=subject, **fields)
    return log


def test_openhands_is_stuck_repeating_action_observation_pattern() -> None:
    # A/B/A/B/A/B: no run shares a key, so consecutive_failures stays quiet; the windows catch
    # the same error and the same edit coming back.
    log = play(Log(), [NPM_TEST, EDIT_A, NPM_TEST, EDIT_A])
    assert log.signals("WI-2") == []
    play(log, [("other", "", {}), NPM_TEST, EDIT_A])
    assert log.signals("WI-2") == [R, E]
    assert log.get("WI-2", R).count == 3 and log.get("WI-2", E).count == 3


def test_openhands_alternation_without_edits_is_a_repeated_error() -> None:
    log = play(Log(), [NPM_TEST, GREP] * 5)
    assert log.signals("WI-2") == [R]  # tool_loop: 4 of each per 8 entries, under 5


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([EDIT_A, NPM_TEST, EDIT_A, NPM_TEST], []),  # fail guard: two cycles only
        ([EDIT_A, NPM_TEST, GREP, PWD, EDIT_A, NPM_TEST], []),  # pattern broken
        ([("other", "", {}), EDIT_A, ("other", "", {}), NPM_TEST] * 3, [R, E]),  # ignores others
        ([GREP, EDIT_A, NPM_TEST, EDIT_A, NPM_TEST, EDIT_A, NPM_TEST], [R, E]),  # extra first
    ],
    ids=["two-cycles", "broken", "ignores-other-events", "ignores-extra-actions"],
)
def test_openhands_action_observation_pattern_guards(
    steps: list[tuple[str, str, dict[str, Any]]], expected: list[Signal]
) -> None:
    assert play(Log(), steps).signals("WI-2") == expected


def test_openhands_is_stuck_not_stuck() -> None:
    log = Log()
    log.add("Bash", LS_MISSING, input_digest="ls")
    log.add("Read", "", file_path="file1.txt", read_only=True)
    for _ in range(2):
        log.add(*PWD[:2], **PWD[2])
        log.add("Read", "", file_path="file2.txt", read_only=True)
    assert [log.signals(s) for s in log.detector.subjects()] == [[], [], []]


def test_openhands_is_stuck_monologue() -> None:
    log = Log()
    # One agent failing once on each of three tasks retries none of them: no subject stalls.
    for task, error in (("WI-1", TYPE_ERROR), ("WI-2", NOT_READ), ("WI-3", "EACCES: denied")):
        log.add("Task", error, task_id=task, agent_id="executor-2")
        log.add("Bash", "flaky", task_id="WI-9", agent_id="validator")  # others talk meanwhile
    assert log.signals("WI-3") == []
    # Its monologue on one task, while others talk meanwhile, does.
    for error in ("EACCES: denied", "timeout", "EISDIR"):
        log.add("Task", error, task_id="WI-3", agent_id="executor-2")
        log.add("Bash", "flaky", task_id="WI-9", agent_id="validator")
    assert A in log.signals("WI-3")
    log.add("Bash", "", task_id="WI-7", agent_id="executor-2", outcome="success")
    log.add("Task", TYPE_ERROR, task_id="WI-4", agent_id="executor-2")
    log.add("Task", NOT_READ, task_id="WI-4", agent_id="executor-2")
    assert log.signals("WI-4") == [] and log.signals("WI-3") == []


@pytest.mark.parametrize(
    ("between", "count", "stuck"),
    [
        (None, 10, True),  # ten condensations in a row
        (None, 9, False),  # less than ten
        ("success", 10, False),  # with other (successful) work between them
        ("other", 10, True),  # with user messages between them
    ],
)
def test_openhands_context_window_error_loop(between: str | None, count: int, stuck: bool) -> None:
    log = Log(policy_with(repeated_error={"threshold": 10, "window": 10}))
    for i in range(count):
        log.add("Task", TOO_LONG.format(n=200_001 + i * 977), task_id="WI-5")
        if between == "success" and i < count - 1:
            log.add("Bash", "", task_id="WI-5", outcome="success")
        elif between == "other":
            log.add("Bash", "", task_id="WI-0", outcome="success").add(
                "Read", "", task_id="WI-5", read_only=True
            )
    assert (R in log.signals("WI-5")) is stuck


def test_openhands_context_window_error_loop_then_user_message() -> None:
    log = Log().repeat(10, "Task", TOO_LONG.format(n=210_000), task_id="WI-5")
    assert R in log.signals("WI-5")  # the default fires from the third
    log.add("Task", "", task_id="WI-5", outcome="success")
    assert log.signals("WI-5") == []


@pytest.mark.parametrize("errors", [["", "", ""], ["", "  ", "\n"], [" ", "  ", "   "]])
def test_openhands_empty_response_loop(errors: list[str]) -> None:
    log = Log()
    for error in errors:
        log.add("Task", error, task_id="WI-6", agent_id="executor-1")
    assert log.signals("WI-6") == [A]


def test_openhands_non_empty_response_breaks_the_empty_loop() -> None:
    log = Log().repeat(2, "Task", "", task_id="WI-6", agent_id="executor-1")
    assert log.signals("WI-6") == []
    log.add("Task", "", task_id="WI-6", agent_id="executor-1", outcome="partial")
    log.repeat(2, "Task", "", task_id="WI-6", agent_id="executor-1")
    assert log.signals("WI-6") == []


# --------------------------------------------------------------------------- false positives


def test_paging_reads_of_one_big_file_are_never_stuck() -> None:
    big = "/home/dev/webapp/package-lock.json"
    error = "File content (25040 tokens) exceeds maximum allowed tokens (25000). Please use offset"
    log = Log()
    for page in range(20):
        log.add(
            "Read",
            error,
            file_path=big,
            input_digest=f"offset-{page * 2000}",
            read_only=True,
            agent_id="a1",
        )
    assert log.signals(big) == []
    assert log.detector.subjects() == [big]


@pytest.mark.parametrize(
    ("policy", "fields"),
    [
        (DEFAULTS, {"read_only": True}),
        (policy_with(exempt={"tools": ["WaitForService"]}), {"tool": "WaitForService"}),
    ],
    ids=["read-only", "exempt"],
)
def test_polling_a_status_is_never_stuck(policy: Policy, fields: dict[str, Any]) -> None:
    poll = {
        "tool": "Bash",
        "error": "curl: (7) Failed to connect to localhost port 8080: Connection refused",
        "input_digest": "curl-health",
        "agent_id": "executor-1",
    }
    log = Log(policy).repeat(15, **{**poll, **fields})
    assert [log.signals(s) for s in log.detector.subjects()] == [[]]
    assert Log().repeat(15, **poll).signals("Bash") == [C, R, A, T]  # unmarked, it is stuck


@pytest.mark.parametrize("successes_between", [True, False])
def test_batch_work_over_many_files_is_not_stuck(successes_between: bool) -> None:
    errors = {
        4: TYPE_ERROR,
        11: "SyntaxError: Unexpected token",
        19: "ENOENT: open 'x'",
        26: "error TS2339: no",
    }
    log = Log()
    for i in range(30):
        target = {
            "task_id": "WI-7",
            "file_path": f"src/components/Widget{i}.tsx",
            "input_digest": f"e{i}",
        }
        agent = {"agent_id": "executor-1"} if successes_between else {}
        if i in errors:
            log.add("Edit", errors[i], **target, **agent)
        if successes_between or i not in errors:
            log.add("Edit", "", **target, **agent, outcome="success")
        assert log.signals("WI-7") == []
    assert log.detector.subjects() == ["WI-7"]


# --------------------------------------------------------------------------- bounded memory


def test_memory_stays_bounded_over_a_long_log() -> None:
    rng = random.Random(7)
    tools = ("Edit", "Write", "Bash", "Bash", "Read", "Grep")
    errors = (
        TYPE_ERROR + " at {f}:{n}",
        "ENOENT: open '{f}'",
        NOT_FOUND,
        "",
        "SyntaxError at line {n}",
    )
    detector = StuckDetector(DEFAULTS)
    for index in range(100_000):
        tool = rng.choice(tools)
        path = f"src/module{rng.randrange(300)}.ts"
        raw = {
            "tool": tool,
            "error": rng.choice(errors).format(f=path, n=rng.randrange(2000)),
            "timestamp": "2026-08-05T14:00:00Z",
            "task_id": f"WI-{rng.randrange(50)}",
            "file_path": path,
            "agent_id": f"executor-{rng.randrange(5)}",
            "outcome": rng.choice(("failure",) * 8 + ("partial", "success")),
            "input_digest": f"{rng.randrange(40):x}",
            "read_only": tool in ("Read", "Grep"),
        }
        detector.feed(normalise_failure(raw, index))
        if index % 997 == 0:
            size = detector.state_size()
            assert size["window"] <= 10  # the largest policy window
            assert size["positions"] <= 10  # the largest window or threshold
    size = detector.state_size()
    assert {k: size[k] for k in ("subjects", "agents", "window")} == {
        "subjects": 50,
        "agents": 5,
        "window": 10,
    }
    assert 0 < size["positions"] <= 10
    assert any(detector.firing(subject) for subject in detector.subjects())


# --------------------------------------------------------------------------- review loops


def test_review_loops() -> None:
    tasks = normalise_coordination(
        {
            "implementation_tasks": [
                {
                    "task_id": "WI-1",
                    "name": "Fix refresh",
                    "review_result": "revise",
                    "review_rounds": 3,
                },
                {
                    "task_id": "WI-2",
                    "name": "Add tests",
                    "review_result": "REVISE",
                    "review_rounds": 2,
                },
                {"task_id": "WI-3", "name": "Docs", "review_result": "PASS", "review_rounds": 5},
                {
                    "task_id": "WI-4",
                    "name": "Rate limit",
                    "review_result": "REVISE",
                    "review_rounds": "7",
                },
                {"task_id": "WI-5", "name": "Cache", "review_result": "REVISE"},
            ]
        }
    ).tasks
    assert review_loops(tasks, DEFAULTS) == {
        "WI-1": Firing(Signal.REVIEW_LOOP, 3, 3, "Review of WI-1: REVISE after 3 rounds", ()),
        "WI-4": Firing(Signal.REVIEW_LOOP, 7, 3, "Review of WI-4: REVISE after 7 rounds", ()),
    }
    assert list(review_loops(tasks, policy_with(review_loop={"rounds": 2}))) == [
        "WI-1",
        "WI-2",
        "WI-4",
    ]
    assert list(review_loops(tasks, policy_with(exempt={"subjects": ["WI-1"]}))) == ["WI-4"]


# --------------------------------------------------------------------------- streaming = batch

UNABLE = [re.compile(rx, re.IGNORECASE) for rx in DEFAULTS.get("stuck.unable_to_complete.patterns")]
EDIT_TOOLS = {"edit", "write", "multiedit", "notebookedit"}


def reference(log: list[Failure], subject: str) -> dict[Signal, int]:
    """rules §7 computed from the whole log at once, the slow obvious way."""
    seen = [f for f in log if not f.read_only]
    mine = [f for f in seen if f.subject == subject]
    successes = [i for i, f in enumerate(mine) if f.outcome is Outcome.SUCCESS]
    after = mine[successes[-1] + 1 :] if successes else mine
    failures = [f for f in after if f.outcome is Outcome.FAILURE]
    found: dict[Signal, int] = {}

    def keys(f: Failure) -> tuple[object, object, object]:
        kind = error_class(f.error) if normalise_error(f.error) else None
        return kind, f.file_path, (f.tool, f.input_digest) if f.input_digest else None

    if failures:
        runs = []
        for k in range(3):
            last = keys(failures[-1])[k]
            run = 0
            for f in reversed(failures):
                if last is None or keys(f)[k] != last:
                    break
                run += 1
            runs.append(run)
        if max(runs) >= 3:
            found[C] = max(runs)
    for signal, window, threshold, key in (
        (R, 10, 3, lambda f: normalise_error(f.error) or None),
        (E, 8, 3, lambda f: f.file_path if f.tool.casefold() in EDIT_TOOLS else None),
        (T, 8, 5, lambda f: (f.tool, f.input_digest) if f.input_digest else None),
    ):
        counts = Counter(key(f) for f in after[-window:] if f.outcome is Outcome.FAILURE)
        counts.pop(None, None)
        if counts and max(counts.values()) >= threshold:
            found[signal] = max(counts.values())
    agents = {f.agent_id for f in seen if f.agent_id}
    best = 0
    for agent in agents:
        theirs = [f for f in seen if f.agent_id == agent]
        on_subject = 0  # the agent's failures on this subject since its (or its) last success
        for f in reversed(theirs):
            if f.outcome is not Outcome.FAILURE:
                break
            on_subject += f.subject == subject
        # a success on the subject, by anyone, ends every agent's run on it
        on_subject = min(on_subject, len([f for f in failures if f.agent_id == agent]))
        best = max(best, on_subject)
    if best >= 3:
        found[A] = best
    unable = sum(
        1 for f in failures if normalise_error(f.error) and any(rx.search(f.error) for rx in UNABLE)
    )
    if unable >= 3:
        found[U] = unable
    return found


ENTRY = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["Edit", "Bash", "Write"]),
        "error": st.sampled_from(
            [
                TYPE_ERROR,
                "TypeError at a.ts:1",
                "TypeError at a.ts:2",
                "SyntaxError: x",
                "",
                " ",
                NOT_FOUND,
                "I am unable to complete this",
            ]
        ),
        "timestamp": st.just("2026-08-05T14:00:00Z"),
        "task_id": st.sampled_from([None, "WI-1", "WI-2"]),
        "file_path": st.sampled_from([None, "a.ts", "b.ts"]),
        "input_digest": st.sampled_from([None, "d1", "d2"]),
        "agent_id": st.sampled_from([None, "x", "y"]),
        "outcome": st.sampled_from(["failure"] * 6 + ["partial", "success"]),
        "read_only": st.sampled_from([False] * 5 + [True]),
    }
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ENTRY, max_size=40))
def test_streaming_agrees_with_the_whole_log_reading(entries: list[dict[str, Any]]) -> None:
    log = [normalise_failure(raw, index) for index, raw in enumerate(entries)]
    detector = StuckDetector(DEFAULTS)
    for item in log:
        detector.feed(item)
    assert detector.subjects() == list(dict.fromkeys(f.subject for f in log))
    for subject in detector.subjects():
        got = {firing.signal: firing.count for firing in detector.firing(subject)}
        assert got == reference(log, subject), subject
