"""Each work item is one decision, and the plan renders it: table-driven (docs/rules.md §5, §8,
§9.1, §10).

Every row is named after the rule it pins. A `Folder` holds a workflow folder's worth of typed
records (a policy, a coordination log's tasks, a validator's report, the failure log, the
journal, escalations.yaml); each `run()` calls `decide`, `work_item_decisions` (each part
kind's parts into `decide_work_items`) and `build_plan`
directly, as a run would, and journals what the plan journals, so the next run reads it back.
No CLI, no subprocess, no disk: milliseconds a row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from msgspec import Struct

from selfcorrect.core.decisions import Decisions, decide
from selfcorrect.core.inputs import Inputs, LogFold
from selfcorrect.core.journal_records import Stamped, TurnEvent
from selfcorrect.core.ladder import SubjectDecision
from selfcorrect.core.ledger import Ledger
from selfcorrect.core.normalise import normalise_escalations, normalise_failure, normalise_report
from selfcorrect.core.normalise.coordination import normalise_coordination
from selfcorrect.core.outputs import Plan
from selfcorrect.core.parts.work import EMPTY_WORK
from selfcorrect.core.plan import build_plan, work_item_decisions
from selfcorrect.core.policy import Policy
from selfcorrect.core.stuck import StuckDetector
from selfcorrect.core.taxonomy import Taxonomy
from selfcorrect.core.work_item_decision import WorkItemDecision
from tests.helpers import policy_with

NOW = "2026-12-01T12:00:00Z"
TASK = "WI-1"
AGENT = "agent-1"  # WI-1's owner: a subagent
LEAD = "lead"  # the controller

# ----------------------------------------------------------------------------- the builder


class Run(Struct, frozen=True):
    """What one run decided: the decisions, the work items, and the plan."""

    decisions: Decisions
    item: WorkItemDecision | None  # WI-1's decision
    plan: Plan

    @property
    def subject(self) -> SubjectDecision:
        return next(d for d in self.decisions.subjects if d.subject == TASK)

    @property
    def entry(self) -> Mapping[str, Any]:
        """WI-1's failed_items entry."""
        return next(e for e in self.plan.failed_items if e["task_id"] == TASK)

    @property
    def escalations(self) -> list[str]:
        """The ids of the escalations the plan opens for WI-1."""
        return [e.id for e in self.plan.escalations if e.subject in (TASK, *self.fingerprints)]

    @property
    def fingerprints(self) -> list[str]:
        return [d.fingerprint for d in self.decisions.issues]

    @property
    def directives(self) -> list[str]:
        """The prompt templates the plan hands WI-1's agent."""
        return [p.template for p in self.plan.prompts if p.work_item == TASK]


class Folder:
    """A workflow folder as typed records, one task (WI-1) unless told otherwise."""

    def __init__(self, *, owner: str = "subagent", host_turns: bool = False, **policy: Any) -> None:
        self.policy: Policy = policy_with(**policy)
        task: dict[str, Any] = {"task_id": TASK, "name": "Build the app", "files": ["src/app.py"]}
        task |= {"agent_id": AGENT} if owner == "subagent" else {"assigned_to": LEAD}
        self.tasks = [task]
        self.host_turns = host_turns
        self.failures: list[dict[str, Any]] = []
        self.issues: list[dict[str, Any]] | None = None  # None: no report yet
        self.writes = 0  # writes of the report so far: each is a fresh report
        self.journal: list[Stamped] = []
        self.escalations: dict[str, dict[str, Any]] = {}  # escalations.yaml, by id
        self.runs = 0

    # What the agents, the validator, the host and a person do between runs.
    def fail(self, error: str, times: int = 1, tool: str = "Edit") -> Folder:
        for _ in range(times):
            n = len(self.failures)
            self.failures.append(
                {
                    "tool": tool,
                    "error": error,
                    "task_id": TASK,
                    "agent_id": AGENT,
                    "timestamp": f"2026-12-01T10:{n:02d}:00Z",
                    "approach": f"approach {n}",
                    "outcome": "failure",
                }
            )
        return self

    def report(self, *issues: dict[str, Any]) -> Folder:
        """The validator writes a fresh report carrying `issues`."""
        self.issues = list(issues)
        self.writes += 1
        return self

    def turn(self, agent: str = LEAD, times: int = 1) -> Folder:
        """An agent's turn ends, as its host journals it: the lead's stop owns the lead's
        tasks; a subagent's owns its task."""
        lead = agent == LEAD
        owned = [t["task_id"] for t in self.tasks if t.get("agent_id", LEAD) == agent]
        for _ in range(times):
            self.journal.append(
                TurnEvent(
                    agent=agent,
                    lead=lead,
                    tasks=owned,
                    report_stamp=self.stamp,
                    log_position=len(self.failures),
                    at=NOW,
                )
            )
        return self

    def resolve(self, escalation: str, *, retry: bool) -> Folder:
        """A person marks an escalation resolved in escalations.yaml, with evidence."""
        self.escalations[escalation] |= {
            "status": "resolved",
            "evidence": "the API key is back",
            "resolved_by": "dana",
            "retry": retry,
        }
        return self

    @property
    def stamp(self) -> str:
        return f"write-{self.writes}"

    def inputs(self) -> Inputs:
        taxonomy, ledger, detector = Taxonomy.of(self.policy), Ledger(), StuckDetector(self.policy)
        for index, raw in enumerate(self.failures):
            failure = normalise_failure(raw, index)
            ledger.feed(failure, taxonomy.classify(failure).failure_type)
            detector.feed(failure)
        records = dict(ledger.records)
        firing = {subject: detector.firing(subject) for subject in records}
        report = None
        if self.issues is not None:
            status = "FIXABLE" if self.issues else "PASS"
            report = normalise_report({"status": status, "validator": "v", "issues": self.issues})
        coordination = {"controller": LEAD, "status": "in_progress"}
        coordination["implementation_tasks"] = [
            {"status": "in_progress", **task} for task in self.tasks
        ]
        return Inputs(
            "workflow",
            self.policy,
            report=report,
            report_digest=f"digest-{self.writes}",
            report_stamp=self.stamp,
            coordination=normalise_coordination(coordination),
            escalations=normalise_escalations({"escalations": list(self.escalations.values())}),
            history=tuple(record.to_json() for record in self.journal),
            log=LogFold(records, firing, len(self.failures)),
            host_turns=self.host_turns,
        )

    def run(self) -> Run:
        """One run: decide, decide the work items, plan; journal what it journals and write
        its escalations, as the run would."""
        self.runs += 1
        decisions = decide(
            self.inputs(), now=NOW, run_id=f"run-{self.runs}", installed=lambda _p: True
        )
        items = work_item_decisions(decisions, EMPTY_WORK)
        plan = build_plan(decisions)
        self.journal += plan.journal
        for escalation in plan.escalations:
            self.escalations.setdefault(escalation.id, escalation.to_json())
        return Run(decisions, items.items.get(TASK), plan)


# ----------------------------------------------------------------------------- what a row reads

SYNTAX = "SyntaxError: Unexpected token '}'"  # syntax_error: unlimited retries, a signal at 3
DOWN = "connect ECONNREFUSED 10.0.0.1:5432"  # external_dependency: skipped at once


def issue(kind: str, ident: str, description: str, target: str | None = None) -> dict[str, Any]:
    found = {"id": ident, "type": kind, "severity": "MAJOR", "description": description}
    return found | {"task_id": TASK} | ({"target": target} if target else {})


COVERAGE = issue("test_coverage_low", "V-1", "coverage below 80%", "src/app.py")  # 2 retries
LINT = issue("linting_errors", "V-2", "ruff: F401 unused import", "src/app.py")  # an autofix
COVERAGE_B = issue("test_coverage_low", "V-3", "coverage below 80%", "src/b.py")
CIRCULAR = issue("circular_delegation", "V-4", "WI-1 delegates back to the lead")  # BLOCKED
CIRCULAR_2 = issue("circular_delegation", "V-5", "circular delegation in docs", "docs/plan.md")
SIGNOFF = issue("needs_signoff", "V-6", "legal sign-off needed")  # strategy: escalate
SIGNOFF_TYPE = {"needs_signoff": {"strategy": "escalate", "severity": "MAJOR", "retries": 2}}

COV = "issue:test_coverage_low@src/app.py#WI-1"
LINTED = "issue:linting_errors@src/app.py#WI-1"
CIRC = "issue:circular_delegation#WI-1"
CIRC_2 = "issue:circular_delegation@docs/plan.md#WI-1"
STUCK = "subject:WI-1"
RESET = "reset:WI-1"


class Starts(str):
    """An expected text that only has to start the seen one (a why, a context)."""

    __hash__ = str.__hash__

    def __eq__(self, seen: object) -> bool:
        return isinstance(seen, str) and seen.startswith(str(self))


def seen(run: Run) -> dict[str, Callable[[], Any]]:
    """What a row may assert, by name: WI-1's one decision and how the plan renders it."""
    item = run.item
    assert item is not None, "WI-1 was not decided"
    covered = next((d for d in run.decisions.issues if d.type == "test_coverage_low"), None)
    return {
        "status": lambda: item.status.value,
        "why": lambda: item.why,
        "decider": lambda: item.decider,
        "held": lambda: sorted(item.held),
        "parts": lambda: sorted(p.kind for p in item.parts),
        "step": lambda: item.ladder_step,
        "escalations": lambda: len({*run.escalations, *filter(None, [item.escalation])}),
        "directive": lambda: bool(run.directives),
        # WI-1's failed_items entry: (final_status, failure_type, attempts), context, actions
        "entry": lambda: (
            run.entry["final_status"],
            run.entry.get("failure_type"),
            run.entry.get("attempts"),
        ),
        "context": lambda: run.entry.get("escalation_context"),
        "actions": lambda: run.entry.get("recovery_actions_taken"),
        # the stuck subject: (status, reason, ladder step)
        "subject": lambda: (
            run.subject.status.value,
            run.subject.reason.value,
            run.subject.ladder_step,
        ),
        # the coverage issue: (classification, reason, attempts spent, ladder step)
        "coverage": lambda: (
            covered.classification.value,
            covered.reason.value,
            covered.spent,
            covered.ladder_step,
        ),
        # the coverage issue's budget as the journal has it after this run's resets
        "budget": lambda: run.decisions.state.issue(COV.removeprefix("issue:")).attempts,
    }


def check(run: Run, expected: Mapping[str, Any]) -> None:
    facts = seen(run)
    observed = {name: facts[name]() for name in expected}
    assert observed == dict(expected)


# ----------------------------------------------------------------------------- situations


def handed_out(folder: Folder, fresh: int) -> Run:
    """The coverage issue handed out, then `fresh` reports still carrying it after a turn
    (no host reports turns: a report someone else wrote follows an agent's turn, rules §5)."""
    run = folder.report(COVERAGE).run()
    for _ in range(fresh):
        run = folder.report(COVERAGE).run()
    return run


def lead_turns(turns: int, owner: str = "subagent", runs: int = 1) -> Run:
    """The coverage issue's directive out on a host that reports turns, then `turns` of the
    lead's turns split over `runs` runs, each run after a fresh report."""
    folder = Folder(owner=owner, host_turns=True)
    run = folder.report(COVERAGE).run()
    for share in (turns // runs,) * runs:
        run = folder.turn(LEAD, share).report(COVERAGE).run()
    return run


def resolved_beside_pending() -> Run:
    """Two coverage issues handed out; a fresh report carries one of them."""
    folder = Folder()
    folder.report(COVERAGE, COVERAGE_B).run()
    return folder.report(COVERAGE).run()


def resolved_alone() -> Run:
    folder = Folder()
    folder.report(COVERAGE).run()
    return folder.report().run()  # a fresh report with no issue


def owner_turn() -> Run:
    folder = Folder(host_turns=True)
    folder.report(COVERAGE).run()
    return folder.turn(AGENT).report(COVERAGE).run()


def stuck_then_spent() -> Run:
    """The subject climbs to step 2 (six failures over two runs), then the issue's retries
    are spent: it enters at step 1."""
    folder = Folder().fail(SYNTAX, 3)
    folder.run()
    folder.fail(SYNTAX, 3).run()
    return handed_out(folder, 2)


def spent_then_stuck() -> Run:
    """The issue's retries are spent and it climbs to step 2; then the subject gets stuck."""
    folder = Folder()
    handed_out(folder, 3)
    return folder.fail(SYNTAX, 3).run()


def open_kept() -> Run:
    folder = Folder()
    folder.report(CIRCULAR).run()  # its escalation is open in escalations.yaml
    return folder.report(CIRCULAR_2, CIRCULAR).run()


def at_ceiling(folder: Folder) -> Folder:
    """Five failed calls against a ceiling of 4 (the folder's policy): blocked, escalated."""
    folder.fail(SYNTAX, 5).run()
    return folder


def reset_blocked_subject(retry: bool) -> Run:
    folder = at_ceiling(Folder(caps={"max_attempts_per_subject": 4}))
    (escalation,) = folder.escalations
    return folder.resolve(escalation, retry=retry).run()


def reset_idle_without_report() -> Run:
    """An IDLE issue's escalation handed back with retry while no report is there: the
    reset is all that decides the item."""
    folder = Folder(host_turns=True)
    folder.report(COVERAGE).run()
    folder.turn(LEAD, 6).report(COVERAGE).run()
    (escalation,) = folder.escalations
    folder.issues = None
    return folder.resolve(escalation, retry=True).run()


def reset_with_directive_out(retry: bool) -> Run:
    """The coverage issue's directive is out (one attempt spent, the second out) when the
    item's stuck subject blocks it at the ceiling; a person hands the item back."""
    folder = Folder(caps={"max_attempts_per_subject": 4})
    handed_out(folder, 1)
    at_ceiling(folder)
    (escalation,) = folder.escalations
    return folder.resolve(escalation, retry=retry).run()


def ceiling(journaled: str | None, cap: int) -> Run:
    """Five failed calls in one turn of WI-1's agent (three, a run, two more), against a
    ceiling of `cap`; `journaled`: whose turn the journal holds from before them."""
    folder = Folder(caps={"max_attempts_per_subject": cap})
    if journaled:
        folder.turn(journaled)
    folder.fail(SYNTAX, 3).run()
    return folder.fail(SYNTAX, 2).run()


# ----------------------------------------------------------------------------- the tables

# An item's status is the most severe of its parts (blocked > skipped > recovering > pending >
# recovered); its why and its failed_items facts come from the deciding part, its actions from
# every part that acted (docs/rules.md §9.1, §9.6).
SEVERITY = [
    (
        "blocked beats skipped: the blocking issue decides",
        lambda: Folder().fail(DOWN, tool="Bash").report(CIRCULAR).run(),
        {
            "status": "blocked",
            "decider": CIRC,
            "why": Starts("circular_delegation is never fixed automatically"),
            "held": [STUCK],
            "entry": ("blocked", "circular_delegation", 0),
            "context": Starts("circular_delegation is never fixed automatically"),
        },
    ),
    (
        "skipped beats recovering: the skipped subject decides, the fixer is held",
        lambda: Folder().fail(DOWN, tool="Bash").report(LINT).run(),
        {
            "status": "skipped",
            "decider": STUCK,
            "why": Starts("external_dependency: 1 failed attempt"),
            "held": [LINTED],
            "directive": False,
            "entry": ("skipped", "external_dependency", 1),
        },
    ),
    (
        "skipped beats pending: a skipped item's issue gets no directive",
        lambda: Folder().fail(DOWN, tool="Bash").report(COVERAGE).run(),
        {"status": "skipped", "decider": STUCK, "held": [COV], "directive": False},
    ),
    (
        "recovering beats pending: the stuck subject's facts, every part's actions",
        lambda: Folder().fail(SYNTAX, 3).report(COVERAGE).run(),
        {
            "status": "recovering",
            "decider": STUCK,
            "why": Starts("syntax_error: 3 failed attempts"),
            "held": [],
            "entry": ("recovering", "syntax_error", 3),
            "context": Starts("syntax_error: 3 failed attempts"),
            "actions": ["approach 0", "approach 1", "approach 2", "add_tests"],
        },
    ),
    (
        "recovering beats pending: a fixer's run decides, the directive's action is kept",
        lambda: Folder().report(COVERAGE, LINT).run(),
        {
            "status": "recovering",
            "decider": LINTED,
            "why": Starts("fixer run: autofix, attempt 1 of 1"),
            "entry": ("recovering", "linting_errors", 1),
            "actions": ["add_tests", "autofix"],
        },
    ),
    (
        "pending beats recovered: a resolved issue beside a directive still out",
        resolved_beside_pending,
        {
            "status": "pending",
            "decider": COV,
            "parts": ["issue", "resolved"],
            "why": Starts("directive out: add_tests, attempt 2 of 2"),
            "entry": ("pending", "test_coverage_low", 2),
        },
    ),
    (
        "recovered alone: a fresh report no longer carries the issue",
        resolved_alone,
        {
            "status": "recovered",
            "decider": "resolved:test_coverage_low@src/app.py#WI-1",
            "entry": ("recovered", None, None),
            "context": "a fresh report no longer carries test_coverage_low@src/app.py#WI-1",
        },
    ),
]

# A held item's parts are held: one open escalation, no directive (docs/rules.md §9.1).
HELD = [
    (
        "a blocked item holds its stuck subject and its issue: no directive",
        lambda: Folder().fail(SYNTAX, 3).report(COVERAGE, CIRCULAR).run(),
        {
            "status": "blocked",
            "decider": CIRC,
            "held": [COV, STUCK],
            "directive": False,
            "escalations": 1,
        },
    ),
    (
        "two blocking parts open one escalation: the first one's",
        lambda: at_ceiling(Folder(caps={"max_attempts_per_subject": 4})).report(CIRCULAR).run(),
        {"status": "blocked", "decider": STUCK, "held": [CIRC], "escalations": 1},
    ),
    (
        "no escalation open yet: the first blocking part's is opened",
        lambda: Folder().report(CIRCULAR_2, CIRCULAR).run(),
        {"status": "blocked", "decider": CIRC_2, "held": [CIRC], "escalations": 1},
    ),
    (
        "the one open escalation is kept over a new one",
        open_kept,
        {"status": "blocked", "decider": CIRC, "held": [CIRC_2], "escalations": 1},
    ),
]

# A person's reset, and an item that nothing else decides (docs/rules.md §9.1, §10).
RESETS = [
    (
        "a reset without retry, nothing else deciding: recovered",
        lambda: reset_blocked_subject(retry=False),
        {
            "status": "recovered",
            "decider": RESET,
            "why": "reset by dana: the API key is back",
            "entry": ("recovered", None, None),
            "escalations": 0,
        },
    ),
    (
        "a reset with retry, nothing else deciding: pending",
        reset_idle_without_report,
        {"status": "pending", "decider": RESET, "directive": False, "escalations": 0},
    ),
    (
        "a reset with retry hands a stuck subject back at step 1",
        lambda: reset_blocked_subject(retry=True),
        {
            "status": "recovering",
            "decider": STUCK,
            "step": 1,
            "subject": ("recovering", "AWAITING_AGENT", 1),
            "directive": True,
        },
    ),
    (
        "a reset with retry restarts the issue part: a directive still out gets attempts 0",
        lambda: reset_with_directive_out(retry=True),
        {"budget": 0, "coverage": ("FIXABLE", "FIXABLE", 0, None)},
    ),
    (
        "a reset without retry restarts the issue part too: a directive still out gets attempts 0",
        lambda: reset_with_directive_out(retry=False),
        {"status": "recovered", "budget": 0},
    ),
]

# One ladder per work item: its parts stand at the highest step of theirs (docs/rules.md §8).
ONE_STEP = [
    (
        "a stuck subject joins the step its spent issue reached",
        spent_then_stuck,
        {
            "step": 2,
            "subject": ("recovering", "STUCK_FIRST_DETECTION", 2),
            "coverage": ("FIXABLE", "AWAITING_AGENT", 3, 2),
        },
    ),
    (
        "a spent issue stands at the step its stuck subject reached",
        stuck_then_spent,
        {
            "step": 2,
            "subject": ("recovering", "AWAITING_AGENT", 2),
            "coverage": ("FIXABLE", "LADDER", 2, 2),
        },
    ),
]

# Whose turn: only the owner's turn spends an attempt; nobody acting is visible, not charged
# (docs/rules.md §5, §8).
TURNS = [
    (
        "the lead's turns spend nothing of a subagent's directive",
        lambda: lead_turns(2),
        {"status": "pending", "coverage": ("FIXABLE", "AWAITING_AGENT", 0, None)},
    ),
    (
        "waiting after caps.idle_rounds lead turns: pending, no attempt spent",
        lambda: lead_turns(3),
        {
            "status": "pending",
            "why": Starts("waiting for its agent: no turn of its owner"),
            "coverage": ("FIXABLE", "WAITING", 0, None),
            "escalations": 0,
        },
    ),
    (
        "IDLE after twice caps.idle_rounds lead turns: blocked, the hand-out not spent",
        lambda: lead_turns(6),
        {
            "status": "blocked",
            "decider": COV,
            "coverage": ("BLOCKED", "IDLE", 0, None),
            "directive": False,
            "escalations": 1,
        },
    ),
    (
        "IDLE pages a person once: the same escalation on later lead turns",
        lambda: lead_turns(8, runs=2),
        {"status": "blocked", "coverage": ("BLOCKED", "IDLE", 0, None), "escalations": 1},
    ),
    (
        "the owner's turn spends the attempt",
        owner_turn,
        {"status": "pending", "coverage": ("FIXABLE", "FIXABLE", 1, None)},
    ),
    (
        "a lead-owned task spends an attempt per lead turn",
        lambda: lead_turns(1, owner="lead"),
        {"status": "pending", "coverage": ("FIXABLE", "FIXABLE", 1, None)},
    ),
    (
        "a lead-owned task is never idle: its spent retries climb the ladder",
        lambda: lead_turns(6, owner="lead", runs=6),
        {"status": "pending", "coverage": ("FIXABLE", "LADDER", 6, 5)},
    ),
]

# Straight to a person, and the hard ceiling (docs/rules.md §5, §8).
ESCALATE_AND_CEILING = [
    (
        "strategy escalate goes straight to blocked, never to the ladder",
        lambda: Folder(issue_types=SIGNOFF_TYPE).report(SIGNOFF).run(),
        {
            "status": "blocked",
            "decider": "issue:needs_signoff#WI-1",
            "why": "needs_signoff: the policy's strategy is escalate, a person decides",
            "step": None,
            "directive": False,
            "escalations": 1,
            "entry": ("blocked", "needs_signoff", 0),
        },
    ),
    (
        "without a host's turns the ceiling counts failed calls",
        lambda: ceiling(None, 4),
        {"status": "blocked", "subject": ("blocked", "MAXIMUM_ATTEMPTS_REACHED", 1)},
    ),
    (
        "with a turn journaled the ceiling counts rounds: five calls in one round",
        lambda: ceiling(LEAD, 4),
        {"status": "recovering", "subject": ("recovering", "AWAITING_AGENT", 1)},
    ),
    (
        "a turn that ended before the first failure is no round the subject failed in",
        lambda: ceiling(AGENT, 2),
        {"status": "recovering", "subject": ("recovering", "AWAITING_AGENT", 1)},
    ),
]

TABLE = [*SEVERITY, *HELD, *RESETS, *ONE_STEP, *TURNS, *ESCALATE_AND_CEILING]


@pytest.mark.parametrize(("rule", "situation", "expected"), TABLE, ids=[r[0] for r in TABLE])
def test_the_work_item_decision(
    rule: str, situation: Callable[[], Run], expected: Mapping[str, Any]
) -> None:
    check(situation(), expected)


@pytest.mark.parametrize(("rule", "situation", "expected"), TABLE, ids=[r[0] for r in TABLE])
def test_every_output_shows_the_one_decision(
    rule: str, situation: Callable[[], Run], expected: Mapping[str, Any]
) -> None:
    """The item's why is its deciding part's, failed_items says its status, and only an
    item that acts hands out a prompt (docs/rules.md §9.1)."""
    run = situation()
    item = run.item
    assert item is not None
    assert run.plan.work_items[TASK] == item  # the plan renders the decision made first
    decider = next(p for p in item.parts if f"{p.kind}:{p.name}" == item.decider)
    assert item.why == (decider.why or item.why)
    assert run.entry["final_status"] == item.status.value
    if not item.acts:
        assert run.directives == []
