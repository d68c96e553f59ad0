"""The normalised records every input shape is turned into (rules §2).

Each record is a frozen, slotted dataclass; sequences are tuples and unknown keys live in
`extra` (a deep-frozen `FrozenMap`), so records are hashable and compare by value. That is what
lets the cAgents dialect and the canonical form be checked to give *identical* records.
Timestamps stay strings (rules §2).
"""

from __future__ import annotations

import enum

from msgspec import Struct

from selfcorrect.core.frozen import EMPTY, FrozenMap
from selfcorrect.core.text_caps import MAX_KEY, bounded_key

# --------------------------------------------------------------------------- enumerations


class Severity(enum.StrEnum):
    """Issue severity (case-insensitive on input)."""

    CRITICAL = "critical"
    MAJOR = "major"
    MINOR = "minor"


class Verdict(enum.StrEnum):
    """A report's verdict, or an issue's validator classification.

    The dialects' REVISE/PARTIAL_PASS/UNKNOWN fold into this set; NONE means "no verdict"
    (the missing-report stub), which must never be read as PASS.
    """

    PASS = "PASS"
    FIXABLE = "FIXABLE"
    BLOCKED = "BLOCKED"
    FAIL = "FAIL"
    NONE = "NONE"


class Outcome(enum.StrEnum):
    """Outcome of one tool attempt (rules §2.1, §7)."""

    FAILURE = "failure"
    PARTIAL = "partial"
    SUCCESS = "success"
    PROBE = "probe"  # a query that answered "no" (grep found nothing): counts nothing
    INTERRUPTED = "interrupted"  # the call was interrupted: counts nothing
    # The agent ran the validator or a check command: its exit code is the report's business.
    VERIFICATION = "verification"
    # The call never ran: the host cancelled it (a parallel sibling errored) or a person or a
    # PreToolUse hook denied it (core/unrun.py). Counts nothing.
    CANCELLED = "cancelled"
    DENIED = "denied"
    # A call that kept succeeding with no edit between, past its first strike (the success
    # hook's second: docs/rules.md §7): no failure, but no progress either. It carries its
    # signal (`repeated_call` or `alternation`) and puts its work item on the ladder at step 2.
    LOOP = "loop"


class EffectState(enum.StrEnum):
    """Whether a failed call changed anything (rules §2.1)."""

    NOT_ATTEMPTED = "not_attempted"
    APPLIED = "applied"
    UNKNOWN = "unknown"


class FinalStatus(enum.StrEnum):
    """State of a `failed_items` entry (rules §9.6)."""

    RECOVERING = "recovering"
    PENDING = "pending"  # handed to the agents, waiting for their work and a fresh report
    RECOVERED = "recovered"
    SKIPPED = "skipped"
    BLOCKED = "blocked"


class IssueStatus(enum.StrEnum):
    """Where an issue's latest hand-out stands, as the journal records it (docs/rules.md §5)."""

    DIRECTIVE = "directive"  # a directive is out to the agents: an attempt is open
    REMEDIATING = "remediating"  # a fixer was started
    FIXED = "fixed"  # a fixer's change passed verification; a fresh report judges it
    BLOCKED = "blocked"  # a person must act
    RESOLVED = "resolved"  # a fresh report no longer carries it


# A hand-out still out: a directive, or a fixer started or applied, not yet judged by a report.
HANDED_OUT = (IssueStatus.DIRECTIVE, IssueStatus.REMEDIATING, IssueStatus.FIXED)


class FixState(enum.StrEnum):
    """The states of one remediation attempt (docs/rules.md §9)."""

    OBSERVED = "observed"
    CLASSIFIED = "classified"
    PREFLIGHT = "preflight"
    REMEDIATING = "remediating"
    VERIFYING = "verifying"
    RECOVERED = "recovered"
    COMPENSATING = "compensating"
    UNCERTAIN = "uncertain"
    RECONCILE = "reconcile"
    ESCALATED = "escalated"
    CIRCUIT_OPEN = "circuit_open"


class Intent(enum.StrEnum):
    """What a task is meant to do (rules §12)."""

    CREATE = "create"
    OBSERVE = "observe"


class PendingKind(enum.StrEnum):
    """Kind of a waypoint's pending item; one micro-task each (rules §2.4, §11)."""

    FILE_EDIT = "file_edit"
    TEST_SUITE = "test_suite"
    DOC_SECTION = "doc_section"
    OTHER = "other"


class EscalationStatus(enum.StrEnum):
    """An escalation is open until a human resolves it (rules §10)."""

    OPEN = "open"
    RESOLVED = "resolved"
    SUPERSEDED = "superseded"  # a newer escalation for the same work item replaced it


# --------------------------------------------------------------------------- tool_failures.yaml


class Failure(Struct, frozen=True):
    """One entry of tool_failures.yaml (rules §2.1)."""

    id: str
    index: int  # position in the log: the log's order is the only order (rules §7)
    tool: str
    error: str
    timestamp: str
    file_path: str | None = None
    agent_id: str | None = None
    recoverable: bool | None = None  # dialect hint only; the taxonomy decides (rules §2.1)
    task_id: str | None = None
    outcome: Outcome = Outcome.FAILURE
    failure_type: str | None = None
    code: str | None = None
    approach: str | None = None
    input_digest: str | None = None
    read_only: bool = False
    effect_state: EffectState | None = None
    context_usage: float | None = None
    extra: FrozenMap = EMPTY

    @property
    def subject(self) -> str:
        """What "the same work item" means: task_id, else file_path, else tool (docs/rules.md §2);
        bounded in length (core/text_caps.bounded_key)."""
        subject = self.task_id or self.file_path or self.tool
        return subject if len(subject) <= MAX_KEY else bounded_key(subject)


# --------------------------------------------------------------------------- validation_report.yaml


class Issue(Struct, frozen=True):
    """One validation issue, whatever shape it came in (rules §2.2).

    `type` stays None when the validator gave none: typing by description patterns is the
    classifier's job. `criterion`/`evidence`/`verification_method` are set for
    `acceptance_criterion_unmet` issues.
    """

    severity: Severity
    description: str
    type: str | None = None
    id: str | None = None
    target: str | None = None
    task_id: str | None = None
    suggested_fix: str | None = None
    estimated_minutes: float | None = None
    classification: Verdict | None = None  # the validator's own call, e.g. BLOCKED
    criterion: str | None = None
    evidence: str | None = None
    verification_method: str | None = None
    extra: FrozenMap = EMPTY
    # Why a report-level BLOCKED blocks this issue, when it does (rules §5): the validator's
    # verdict with its reason, shown with the issue; never another issue's words.
    blocked_reason: str | None = None


class Criterion(Struct, frozen=True):
    """One acceptance-criterion result, kept so evidence can be re-checked later (rules §2.2)."""

    criterion: str
    met: bool | None
    evidence: str | None = None
    confidence: float | None = None
    verification_method: str | None = None
    extra: FrozenMap = EMPTY


class Report(Struct, frozen=True):
    """A validation report in one shape.

    `claimed` is the validator's own verdict; `verdict` is what stands: a recheck downgrade
    applied, and a PASS contradicted by its issues (any critical or major, or more than three
    minor) demoted to FAIL.
    """

    verdict: Verdict
    claimed: Verdict
    issues: tuple[Issue, ...] = ()
    criteria: tuple[Criterion, ...] = ()
    confidence: float | None = None
    generated_at: str | None = None
    validator: str | None = None
    summary: str | None = None
    next_action: str | None = None
    extra: FrozenMap = EMPTY
    # Why this report is no verdict although it claims one: a stub written when no validator
    # ran (rules §2.2). None for a real report.
    stub: str | None = None


# --------------------------------------------------------------------------- coordination_log.yaml


class Question(Struct, frozen=True):
    """A question the controller delegated (rules §2.3)."""

    question: str
    delegated_to: str | None = None
    answer: str | None = None
    extra: FrozenMap = EMPTY


class Synthesis(Struct, frozen=True):
    """The controller's synthesised solution (rules §2.3)."""

    approach: str | None = None
    rationale: str | None = None
    implementation_steps: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    extra: FrozenMap = EMPTY


class Task(Struct, frozen=True):
    """An implementation task (rules §2.3, §11, §12)."""

    task_id: str
    name: str | None = None
    assigned_to: str | None = None
    agent_id: str | None = None
    acceptance_criteria: tuple[str, ...] = ()
    status: str | None = None  # lowercased: pending, in_progress, completed, blocked, ...
    review_result: str | None = None  # uppercased: PASS, REVISE, ...
    review_rounds: int | None = None
    confidence: float | None = None
    intent: Intent | None = None  # None: inferred later from policy patterns (rules §12)
    files: tuple[str, ...] = ()
    checkpoint: str | None = None
    continuations: int = 0
    expected_deliverables: tuple[str, ...] = ()
    deliverables: tuple[str, ...] = ()
    returned: bool = False
    truncated: bool = False  # the agent's result was cut off: incomplete work (rules §11)
    blocked_reason: str | None = None
    extra: FrozenMap = EMPTY


class WorkItemStatus(Struct, frozen=True):
    """One `work_item_status` entry (rules §2.3)."""

    id: str
    status: str | None = None
    completed_by: str | None = None
    completed_at: str | None = None
    evidence: str | None = None
    extra: FrozenMap = EMPTY


class Delegation(Struct, frozen=True):
    """An edge of the delegation graph (rules §2.3, §14 circular delegation)."""

    from_: str
    to: str
    task_id: str | None = None
    extra: FrozenMap = EMPTY


# A `failed_items` entry's keys, in the order the file gives them (rules §9.6).
FAILED_ITEM_KEYS = (
    "task_id",
    "failure_type",
    "attempts",
    "error_summary",
    "recovery_actions_taken",
    "final_status",
    "escalation_context",
)


class FailedItem(Struct, frozen=True):
    """One `failed_items` entry, the key selfcorrect owns (rules §9.6)."""

    task_id: str
    final_status: FinalStatus
    failure_type: str | None = None
    attempts: int = 0
    error_summary: str = ""
    recovery_actions_taken: tuple[str, ...] = ()
    escalation_context: str | None = None
    extra: FrozenMap = EMPTY


class Coordination(Struct, frozen=True):
    """coordination_log.yaml in either shape (rules §2.3)."""

    controller: str | None = None
    status: str | None = None
    questions: tuple[Question, ...] = ()
    synthesis: Synthesis | None = None
    tasks: tuple[Task, ...] = ()
    work_item_status: tuple[WorkItemStatus, ...] = ()
    delegations: tuple[Delegation, ...] = ()
    failed_items: tuple[FailedItem, ...] = ()
    extra: FrozenMap = EMPTY


# --------------------------------------------------------------------------- waypoints/*.yaml


class PendingItem(Struct, frozen=True):
    """Work a waypoint lists as still to do (rules §2.4)."""

    id: str
    kind: PendingKind = PendingKind.OTHER
    target: str | None = None
    description: str | None = None
    acceptance_criteria: tuple[str, ...] = ()
    extra: FrozenMap = EMPTY


class Waypoint(Struct, frozen=True):
    """A checkpoint written before compaction (rules §2.4, §11).

    The `hint_*` counts come from the hook counting substrings: hints, not facts.
    """

    source: str
    id: str
    type: str | None = None  # lowercased, e.g. "pre_compact"
    phase: str | None = None
    created_at: str | None = None
    trigger: str | None = None
    task_id: str | None = None
    controller: str | None = None
    coordination_status: str | None = None
    hint_questions_pending: int | None = None
    hint_completed: int | None = None
    hint_in_progress: int | None = None
    hint_pending: int | None = None
    hint_blocked: int | None = None
    has_synthesis: bool | None = None
    read_files: tuple[str, ...] = ()
    resume_phase: str | None = None
    next_action: str | None = None
    completed: tuple[str, ...] = ()
    pending: tuple[PendingItem, ...] = ()
    partial_outputs: tuple[object, ...] = ()  # deep-frozen: strings or FrozenMaps
    context_usage: float | None = None
    extra: FrozenMap = EMPTY


# --------------------------------------------------------------------------- escalations.yaml


class Escalation(Struct, frozen=True):
    """One entry of the human-in-the-loop queue (rules §10, §16)."""

    id: str
    subject: str
    reason: str
    status: EscalationStatus = EscalationStatus.OPEN
    retry: bool = False
    false_positive: bool = False
    failure_type: str | None = None
    attempts: int = 0
    ladder_step: int | None = None
    error_chain: tuple[object, ...] = ()  # deep-frozen: strings or FrozenMaps, oldest first
    tried: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    checkpoints: tuple[str, ...] = ()
    rule: str | None = None
    rule_version: str | None = None
    created_at: str | None = None
    resolved_at: str | None = None
    resolved_by: str | None = None
    evidence: str | None = None
    extra: FrozenMap = EMPTY
