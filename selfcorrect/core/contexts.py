"""What the prompt templates are given: plain data built from decisions (rules §8, §9.1).

Pure. Each function returns the exact context a template documents (templates/*.md.j2); agent
text goes in as data and is rendered, never evaluated, by the sandbox in io/prompts.py.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from selfcorrect import layout
from selfcorrect.core.checkpoints import prompt_view
from selfcorrect.core.classify import IssueDecision
from selfcorrect.core.intent import infer_intent, repair_tools, work_item_intent
from selfcorrect.core.journal_records import CheckpointEvent
from selfcorrect.core.ladder import DECOMPOSE_STEP, SubjectDecision, ladder_step
from selfcorrect.core.ledger import SubjectRecord
from selfcorrect.core.model import Coordination, Intent, Task
from selfcorrect.core.plural import count
from selfcorrect.core.policy import Policy
from selfcorrect.core.stuck import LOOP_SIGNALS
from selfcorrect.core.summary import summary
from selfcorrect.core.text_caps import cap_all

COMBINE_SUCCESSES = 3  # the ladder step that combines what worked (rules §8)
# A failed read changed nothing: its prompt is about how to read (docs/policy.md,
# `stuck.read_only_tools`), and it gives no file to change.
READ_DIRECTIVE = (
    "Nothing was changed, so there is nothing to revert: read differently. Check that the "
    "path exists and is a file (list its directory, search for its name), and read a large "
    "file in parts (offset and limit) or search it for what you need instead of reading it "
    "whole."
)
# A loop that succeeds (docs/rules.md §7): the calls worked, and more of them tell nothing new.
LOOP_DIRECTIVE = (
    "The calls under DO NOT repeat worked each time, and doing them again will not tell you "
    "more. Act on what they returned (edit the file, run the check, give the answer), or make "
    "a different kind of call; if something you need is missing, say what, and stop."
)
READ_TOO_LARGE = (
    "The file is too large to read whole: read it in parts with offset and limit, or search "
    "it (Grep) for what you need. Nothing was changed, so there is nothing to revert."
)


def _with_sources(
    context: dict[str, Any], policy: Policy, workflow_dir: str, source: str
) -> dict[str, Any]:
    """The context with its agent text capped; task fields come from the coordination log."""
    limit = policy.limits.max_text
    task = context.pop("task")
    result = cap_all(context, limit, f"{workflow_dir}/{source}")
    result["task"] = cap_all(task, limit, f"{workflow_dir}/coordination_log.yaml")
    return dict(result)


def task_of(coordination: Coordination | None, task_id: str | None) -> Task | None:
    if coordination is None or not task_id:
        return None
    return next((t for t in coordination.tasks if t.task_id == task_id), None)


# A path as an agent may be shown it: spelled relative to the project root, or None when it
# leaves the project (the run passes io/project_paths.placer; docs/architecture.md).
Place = Callable[[str], str | None]


def as_given(path: str) -> str | None:
    return path


def placed(paths: Iterable[str], place: Place) -> tuple[list[str], list[str]]:
    """(the paths inside the project, as shown; the paths that leave it, as written)."""
    kept: list[str] = []
    outside: list[str] = []
    for path in paths:
        spelled = place(path)
        if spelled is None:
            outside.append(path)
        else:
            kept.append(spelled)
    return list(dict.fromkeys(kept)), list(dict.fromkeys(outside))


def task_context(task: Task | None) -> dict[str, Any] | None:
    if task is None:
        return None
    return {
        "task_id": task.task_id,
        "name": task.name,
        "acceptance_criteria": list(task.acceptance_criteria),
    }


def _repeated_approach(record: SubjectRecord) -> str:
    """The latest attempt's approach when an earlier attempt in the chain already failed with
    it: the agent repeated what its prompt forbade (rules §8)."""
    chain = list(record.chain)
    if len(chain) < 2 or not chain[-1].approach:
        return ""
    latest = chain[-1].approach
    earlier = {a.approach.casefold() for a in chain[:-1] if a.approach}
    return latest if latest.casefold() in earlier else ""


def subject_summary(decision: SubjectDecision, record: SubjectRecord) -> str:
    retries = "unlimited" if decision.retries is None else str(decision.retries)
    # Round-to-round reasons (first detection, still stuck, awaiting the agent) would rewrite
    # the entry on every rerun; the status says the same thing, stably.
    transient = {
        "STUCK_FIRST_DETECTION",
        "STILL_STUCK",
        "AWAITING_AGENT",
        "RETRIES_SPENT",
        "LIMIT_SIMPLIFY",
        "LIMIT_DECOMPOSE",
    }
    why = (
        "on the recovery ladder"
        if decision.reason.value in transient
        else decision.reason.value.lower().replace("_", " ")
    )
    # Attempts and their limit never read as a fraction ("1 of 0 allowed").
    failed = f"{decision.attempts} failed attempt{'' if decision.attempts == 1 else 's'}"
    if decision.rounds:  # the host reports turns: the ceiling counts rounds, calls beside
        failed = f"{count(decision.attempts, 'failed call')} in {count(decision.rounds, 'round')}"
    limit = {
        "unlimited": "no limit",
        "0": "never retried automatically",
    }.get(retries, f"limit {retries}")
    why = {
        "non retryable": "skipped until a later success shows the cause is gone",
        "maximum attempts reached": "maximum attempts reached; a person decides",
        "ladder exhausted": "the recovery ladder is exhausted; a person decides",
    }.get(why, why)
    text = f"{decision.failure_type}: {failed} ({limit}); {why}"
    if decision.ladder_step:
        text += f"; ladder step {decision.ladder_step}"
    if decision.signals:
        text += "; stuck: " + ", ".join(
            f"{f.signal.value} {f.count}/{f.threshold}" for f in decision.signals
        )
    return text


def step_to_try(
    policy: Policy,
    decision: SubjectDecision,
    record: SubjectRecord,
    worked_before: Sequence[str] = (),
) -> dict[str, Any]:
    """The step a stuck subject's agent is told to try, with its type's own advice: the one
    the prompt's TRY line and the hook's advisory both name (docs/rules.md §8)."""
    step = ladder_step(policy, decision.ladder_step or 1)
    rule = policy.failure_type(decision.failure_type)
    at_limit = rule.at_limit if rule else ""
    # A type that decomposes at its limit enters at step 3 with this directive; the same on
    # every rerun while the prompt is out, so a run with nothing new rewrites nothing.
    decompose = at_limit == "decompose" and step["step"] == DECOMPOSE_STEP
    if decision.signals and all(f.signal in LOOP_SIGNALS for f in decision.signals):
        return {"step": step["step"], "name": "Break the loop", "directive": LOOP_DIRECTIVE}
    if record.read_only:  # a failed read: how to read, and no file to change
        directive = READ_TOO_LARGE if decision.failure_type == "resource_exhaustion" else ""
        return {
            "step": step["step"],
            "name": "Read differently",
            "directive": directive or READ_DIRECTIVE,
        }
    if decompose or decision.reason.value == "LIMIT_DECOMPOSE":
        return {
            "step": step["step"],
            "name": "Decompose",
            "directive": "Split the remaining work into small, independent pieces (one "
            "file edit, one test suite, one document section each) and do "
            "them one at a time.",
        }
    if step["step"] == COMBINE_SUCCESSES and worked_before:
        # Step 3 combines what worked: the TRY line itself names the best record we have.
        return {**step, "directive": f"{step['directive']} Worked before: {worked_before[0]}."}
    return step


def stuck_context(
    policy: Policy,
    decision: SubjectDecision,
    record: SubjectRecord,
    records: Mapping[str, SubjectRecord],
    coordination: Coordination | None,
    workflow_dir: str,
    *,
    worked_before: Sequence[str] = (),
    place: Place = as_given,
    checkpoint: CheckpointEvent | None = None,
) -> dict[str, Any]:
    """`worked_before`: calibration sentences for this failure type, best first (docs/policy.md).
    `place`: how a path is shown to an agent; paths that leave the project are dropped from
    the scope and listed under `outside`. `checkpoint`: the last one at which the item's checks
    passed, named from ladder step 4 on (docs/rules.md §8, "Checkpoints")."""
    step = step_to_try(policy, decision, record, worked_before)
    rule = policy.failure_type(decision.failure_type)
    recovery = rule.recovery if rule else ""
    task = task_of(coordination, record.task_id)
    scope, outside = placed([*(task.files if task else ()), *record.files], place)
    if record.read_only:  # a failed read: how to read, and no file to change
        recovery, scope = step["directive"], []
    elsewhere = [
        p
        for other in records.values()
        if other is not record and other.latest_type == decision.failure_type
        for p in other.partial_successes
    ]
    patterns = [f.pattern for f in decision.signals] or [
        # No signal fires: a person handed it back (reset), or its retry limit was reached.
        "handed back by a person with a fresh budget"
        if decision.epoch and decision.reason.value == "AWAITING_AGENT"
        else f"retry limit of {decision.failure_type} reached"
    ]
    context = {
        # STUCK only when a stuck signal fired; its type's retries spent alone is no signal
        "title": "STUCK RECOVERY" if decision.signals else "RECOVERY",
        "work_item_id": record.work_item,
        # The attempts the JSON shows for this subject (since a person's reset, by its type).
        "attempts": decision.attempts,
        # The chain still lists what failed before a person's reset; say so beside the count.
        "before_reset": max(len(record.chain) - decision.attempts, 0) if decision.epoch else 0,
        "pattern_summary": "; ".join(dict.fromkeys(patterns)),
        # What worked: its successes (a call that worked, kept across them), then what partly
        # did (docs/rules.md §8, step 3 combines them).
        "partial_successes": list(dict.fromkeys([*record.worked, *record.partial_successes])),
        "failure_summary": summary(record.chain[-1].error) if record.chain else "",
        "next_step": step,
        "failed_approaches": list(record.approaches),
        # The latest attempt reused an approach an earlier attempt had already failed with.
        "repeated": _repeated_approach(record),
        "error_chain": [
            {
                "position": a.position,
                "timestamp": a.timestamp,
                "tool": a.tool,
                "approach": a.approach,
                "outcome": a.outcome,
                "error": summary(a.error),
            }
            for a in record.chain
        ],
        "signals": [
            {
                "signal": f.signal.value,
                "pattern": f.pattern,
                "count": f.count,
                "threshold": f.threshold,
            }
            for f in decision.signals
        ],
        "scope": scope,
        "outside": outside,
        # An observe task's agent reports changes, never makes them (docs/rules.md §12): the
        # issue directive in the same file says so too.
        "observe": bool(record.task_id)
        and work_item_intent(coordination, record.task_id, policy) is Intent.OBSERVE,
        "failure_type": decision.failure_type,
        "recovery": recovery,
        "task": task_context(task),
        "successes_elsewhere": list(dict.fromkeys(elsewhere)),
        "worked_before": list(worked_before),
        "workflow_dir": workflow_dir,
        "checkpoint": prompt_view(checkpoint, scope) if checkpoint is not None else None,
    }
    return _with_sources(context, policy, workflow_dir, layout.FAILURE_LOG)


# Test code by the conventions of the common runners (pytest, unittest, Jest/Vitest, Go, RSpec,
# JUnit): a folder of tests, or a file named as a test.
_TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing"})
_TEST_FILE = re.compile(
    r"^(test_.+\.py|.+_test\.(py|go|rb|exs?)|.+\.(test|spec)\.[cm]?[jt]sx?|.+_spec\.rb"
    r"|.+Tests?\.(java|kt|cs|swift))$"
)
_FAILING = re.compile(
    r"\b(tests?|specs?)\b[^.\n]{0,40}\b(fail(s|ed|ing|ure)?|broken|red)\b|\bfailing\s+(tests?|specs?)\b",
    re.IGNORECASE,
)


def is_test_path(path: str | None) -> bool:
    """A path that holds tests: a test folder (`tests`, `tests/unit`) or a test file."""
    if not path:
        return False
    parts = [p for p in posixpath.normpath(path.replace("\\", "/")).split("/") if p]
    return any(p.lower() in _TEST_DIRS for p in parts) or bool(
        parts and _TEST_FILE.match(parts[-1])
    )


def _failing_tests(decision: IssueDecision) -> bool:
    """The issue reports failing tests: it names a test path, or says tests fail."""
    issue = decision.issue
    return is_test_path(issue.target) or bool(_FAILING.search(issue.description[:2000]))


def directive_context(
    decision: IssueDecision,
    coordination: Coordination | None,
    verification: str,
    workflow_dir: str,
    policy: Policy,
    installed: Callable[[str], bool],
    *,
    worked_before: Sequence[str] = (),
    place: Place = as_given,
) -> dict[str, Any]:
    """The context of templates/strategies/<strategy>.md.j2 (rules §9.1, §12).

    `worked_before`: calibration sentences for this issue type, best first (rules §13).
    """
    issue = decision.issue
    task = task_of(coordination, issue.task_id)
    failing = _failing_tests(decision)
    if failing:
        # Failing tests are the evidence: the fix belongs in the code they test (the task's
        # files), never in the tests, which the agent reads but must not weaken.
        named = [issue.target] if issue.target else []
        tests, _ = placed([t for t in named if is_test_path(t)], place)
        code = [t for t in named if not is_test_path(t)] or [
            f for f in (task.files if task else ()) if not is_test_path(f)
        ]
        scope, outside = placed(code, place)
    else:
        tests = []
        scope, outside = placed(
            [issue.target] if issue.target else (task.files if task else ()), place
        )
    target = place(issue.target) if issue.target else None
    # An observe task gets no mutating tool and is asked for a report; an issue that names no
    # task is a fix to make (rules §12).
    intent = infer_intent(task, policy) if task else Intent.CREATE
    context = {
        "intent": intent.value,
        "tools": repair_tools(policy, intent, installed),
        "issue": {
            "fingerprint": decision.fingerprint,
            "id": issue.id,
            "type": decision.type,
            "severity": issue.severity.value.upper(),
            "description": issue.description,
            "target": target,
            "outside": outside,
            "task_id": issue.task_id,
            "suggested_fix": issue.suggested_fix,
            "evidence": issue.evidence,
            "recurrences": decision.recurrences,  # times it came back after being fixed
            # What the project's fixer printed when it fixed part of it (rules §9.2).
            "fixer_output": decision.fixer_output,
        },
        "strategy": decision.strategy,
        "attempt": decision.attempts,
        # On the recovery ladder its own retries are spent: the count runs to the ceiling.
        "retries": policy.caps.max_attempts_per_subject
        if decision.ladder_step
        else decision.retries,
        "scope": scope,
        "failing_tests": failing,
        "tests": tests,
        "verification": verification,
        "workflow_dir": workflow_dir,
        "task": task_context(task),
        "worked_before": list(worked_before),
    }
    return _with_sources(context, policy, workflow_dir, layout.REPORT)
