"""The normalisers: the cAgents dialect and the canonical form give identical records (rules §2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from selfcorrect.core.frozen import FrozenMap, freeze, freeze_map, thaw
from selfcorrect.core.model import (
    EffectState,
    EscalationStatus,
    FailedItem,
    FinalStatus,
    Intent,
    Issue,
    Outcome,
    PendingItem,
    PendingKind,
    Severity,
    Verdict,
)
from selfcorrect.core.normalise import (
    failed_item_to_dict,
    normalise_coordination,
    normalise_escalations,
    normalise_failed_item,
    normalise_failure,
    normalise_report,
    normalise_waypoint,
)
from selfcorrect.core.work_items import ENTRY, WorkItem
from tests.conftest import CORPUS


class _Loader(yaml.CSafeLoader):
    """The read path's loader: timestamps stay strings (rules §2)."""


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_str)


def load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)


def corpus(relative: str) -> Any:
    return load((CORPUS / relative).read_text(encoding="utf-8"))


SECTION_9_6_ORDER = [
    "task_id",
    "failure_type",
    "attempts",
    "error_summary",
    "recovery_actions_taken",
    "final_status",
    "escalation_context",
]

# --------------------------------------------------------------------------- identical records

DIALECT_A = """
classification: PASS
overall_confidence: 0.9
generated_by: cagents:validator
generated_at: "2026-08-05T15:05:00.000Z"
issues:
  - severity: minor
    description: "Lock TTL (5000ms) is hard-coded: consider config"
    suggested_fix: "Read LOCK_TTL_MS from env"
acceptance_criteria_results:
  - criterion: "Docs updated"
    met: true
    verification_method: file_exists
    evidence: "docs/auth.md"
    confidence: 0.9
  - criterion: "E2E suite green"
    met: false
    verification_method: test_result
    evidence: "not run: no e2e harness"
    confidence: 0.3
"""

CANONICAL_A = """
status: pass
confidence: 0.9
validator: "cagents:validator"
generated_at: "2026-08-05T15:05:00.000Z"
issues:
  - {severity: MINOR, description: "Lock TTL (5000ms) is hard-coded: consider config",
     suggested_fix: "Read LOCK_TTL_MS from env"}
  - type: acceptance_criterion_unmet
    severity: Major
    criterion: "E2E suite green"
    description: "Acceptance criterion not met: E2E suite green (evidence: not run: no e2e harness)"
    evidence: "not run: no e2e harness"
    verification_method: test_result
acceptance_criteria_results:
  - {criterion: "Docs updated", met: true, verification_method: file_exists,
     evidence: "docs/auth.md", confidence: 0.9}
  - {criterion: "E2E suite green", met: false, verification_method: test_result,
     evidence: "not run: no e2e harness", confidence: 0.3}
"""


def test_dialect_a_and_canonical_reports_give_equal_records() -> None:
    dialect = normalise_report(load(DIALECT_A))
    canonical = normalise_report(load(CANONICAL_A))
    assert dialect == canonical
    assert [(i.type, i.severity) for i in dialect.issues] == [
        (None, Severity.MINOR),
        ("acceptance_criterion_unmet", Severity.MAJOR),
    ]
    unmet = dialect.issues[1]
    assert unmet.criterion == "E2E suite green"
    assert unmet.evidence == "not run: no e2e harness"
    assert unmet.verification_method == "test_result"
    # The validator said PASS, but an unmet criterion is a major issue: the PASS does not stand.
    assert (dialect.claimed, dialect.verdict) == (Verdict.PASS, Verdict.FAIL)


def test_canonical_report_without_criteria_has_the_same_issues() -> None:
    raw = load(CANONICAL_A)
    del raw["acceptance_criteria_results"]
    canonical = normalise_report(raw)
    dialect = normalise_report(load(DIALECT_A))
    assert canonical.issues == dialect.issues
    assert canonical.criteria == ()
    assert msgspec.structs.replace(dialect, criteria=()) == canonical


DIALECT_B = """
classification: FIXABLE
confidence: 0.8
summary: "Two gaps and a delegation cycle"
next_action: self-correct
coordination_validation:
  circular_delegation_detected: true
issues_found:
  minor:
    - "docs/auth.md lacks a concurrency example"
  critical: []
  major:
    - description: "No regression test for logout during refresh"
      target: tests/auth/refresh.test.ts
      estimated_minutes: 20
"""

CANONICAL_B = """
status: fixable
confidence: 0.8
summary: "Two gaps and a delegation cycle"
next_action: self-correct
issues:
  - severity: major
    description: "No regression test for logout during refresh"
    target: tests/auth/refresh.test.ts
    estimated_minutes: 20.0
  - severity: minor
    description: "docs/auth.md lacks a concurrency example"
  - type: circular_delegation
    severity: CRITICAL
    description: "Circular delegation detected"
"""


def test_dialect_b_and_canonical_reports_give_equal_records() -> None:
    dialect = normalise_report(load(DIALECT_B))
    canonical = normalise_report(load(CANONICAL_B))
    assert dialect == canonical
    assert dialect.verdict is Verdict.FIXABLE
    circular = [i for i in dialect.issues if i.type == "circular_delegation"]
    assert [i.severity for i in circular] == [Severity.CRITICAL]
    assert dialect.issues[0].target == "tests/auth/refresh.test.ts"
    assert dialect.issues[0].estimated_minutes == 20.0


def test_dialect_waypoint_and_canonical_give_equal_records() -> None:
    path = CORPUS / "waypoints" / "wp-compact-2026-08-05_14-20-00.yaml"
    dialect = normalise_waypoint(load(path.read_text(encoding="utf-8")), str(path))
    canonical_text = """
    recovery: {next_action: "Resume from PLANNED phase", resume_phase: PLANNED,
               read_files: [status.yaml, workflow/plan.yaml, workflow/coordination_log.yaml]}
    coordination:
      work_items: {pending: 1, in_progress: 2, completed: 1}
      has_synthesis: true
      questions_pending: 1
      status: IN_PROGRESS
      controller: "cagents:tech-lead"
    trigger: context_compaction
    created_at: 2026-08-05T14:20:00.017Z
    phase: PLANNED
    type: Pre_Compact
    id: WP-compact-2026-08-05_14-20-00
    plan: {domain: engineering, tier: 3}
    reboot_check:
      what_done: "1 items completed"
      what_learned: "No findings captured yet"
      whats_the_goal: >-
        Make token refresh idempotent across concurrent tabs
        without logging users out
      where_am_i: PLANNED
      where_going: "coordinating -> executing -> validating"
    """
    canonical = normalise_waypoint(load(canonical_text), str(path))
    assert dialect == canonical
    counts = (dialect.hint_completed, dialect.hint_in_progress, dialect.hint_pending)
    assert counts == (1, 2, 1)
    assert dialect.hint_questions_pending == 1
    assert dialect.has_synthesis is True
    assert dialect.type == "pre_compact"
    assert dialect.created_at == "2026-08-05T14:20:00.017Z"
    assert dialect.read_files == (
        "status.yaml",
        "workflow/plan.yaml",
        "workflow/coordination_log.yaml",
    )


def test_dialect_failure_and_canonical_give_equal_records() -> None:
    dialect_entry = corpus("workflow/tool_failures.yaml")["failures"][3]
    canonical_entry = load(
        """
        id: "3"
        tool: Read
        file_path: /home/dev/webapp/package-lock.json
        error: "File content (25040 tokens) exceeds maximum allowed tokens (25000). Please use offset and limit parameters to read specific portions of the file, or use the GrepTool to search for specific content."
        timestamp: "2026-08-05T14:04:00.019Z"
        agent_id: 3f9c2a71-8d4e-4b6a-9e21-7c5d0f1a2b34
        recoverable: false
        outcome: FAILURE
        read_only: false
        """  # noqa: E501 - the error text is the hook's 200-character cut
    )
    dialect = normalise_failure(dialect_entry, 3)
    assert dialect == normalise_failure(canonical_entry, 3)
    assert dialect.id == "3"
    assert dialect.outcome is Outcome.FAILURE
    assert dialect.recoverable is False
    assert dialect.subject == "/home/dev/webapp/package-lock.json"


# --------------------------------------------------------------------------- the corpus report


def test_corpus_report_recheck_entries_become_issues_and_verdict_is_not_pass() -> None:
    report = normalise_report(corpus("workflow/validation_report.yaml"))
    assert report.verdict is Verdict.FAIL
    assert report.claimed is Verdict.FAIL
    unmet = [i for i in report.issues if i.type == "acceptance_criterion_unmet"]
    assert [i.criterion for i in unmet] == [
        "Migration for refresh_tokens table created",
        "Unit tests pass",
        "Coverage >= 80%",
        'Handles "expired: true" tokens — ログアウトしない',
        "E2E suite green",
    ]
    assert all(i.severity is Severity.MAJOR for i in unmet)
    assert "file_exists: cited path does not exist" in unmet[0].description
    assert unmet[0].evidence == "migrations/20260805_add_refresh_tokens.sql"
    assert unmet[0].verification_method == "file_exists"
    assert "line 99 out of range" in unmet[3].description
    # The original minor issue is kept, untyped: typing is the classifier's job.
    assert report.issues[0] == Issue(
        severity=Severity.MINOR,
        description="Lock TTL (5000ms) is hard-coded: consider config",
        suggested_fix="Read LOCK_TTL_MS from env",
    )
    assert len(report.issues) == 6
    # All seven criteria are kept for the later evidence re-check.
    assert len(report.criteria) == 7
    assert report.criteria[0].verification_method == "file_contains"
    assert (
        report.criteria[0].evidence == "src/auth/refresh.ts:3 - export async function refreshToken"
    )
    assert report.criteria[0].met is True
    assert report.confidence == 0.86
    assert report.validator == "cagents:validator"
    assert thaw(report.extra["recheck"]) == {
        "hook": "validator-evidence-recheck.cjs",
        "hook_version": "1",
    }
    assert report.extra["claim_verification"]["pass_rate"] == 0.71


def _dialect_a(classification: str, downgrade: str | None, failing: bool) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "classification": classification,
        "issues": [],
        "acceptance_criteria_results": [
            {"criterion": "Docs updated", "met": True, "evidence": "docs/auth.md"},
        ],
    }
    recheck: dict[str, Any] = {}
    if downgrade is not None:
        recheck["downgrade"] = downgrade
    if failing:
        recheck["failing_entries"] = [
            {"criterion": "Docs updated", "reason": "file_exists: cited path does not exist"}
        ]
    if recheck:
        raw["recheck"] = recheck
    return raw


@pytest.mark.parametrize(
    ("classification", "downgrade", "failing", "verdict", "issues"),
    [
        ("PASS", None, False, Verdict.PASS, 0),
        ("PASS", "PASS -> FAIL", True, Verdict.FAIL, 1),
        ("PASS", "PASS -> FAIL", False, Verdict.FAIL, 0),  # a downgrade stands on its own
        ("PASS", "PASS -> BLOCKED", False, Verdict.BLOCKED, 0),
        ("PASS", "garbled", False, Verdict.FAIL, 0),
        ("PASS", None, True, Verdict.FAIL, 1),  # failing entries alone refute the PASS
        ("FAIL", "FAIL -> PASS", False, Verdict.FAIL, 0),  # never an upgrade
        ("REVISE", "PASS -> FAIL", False, Verdict.FIXABLE, 0),
    ],
)
def test_recheck_downgrade(
    classification: str, downgrade: str | None, failing: bool, verdict: Verdict, issues: int
) -> None:
    report = normalise_report(_dialect_a(classification, downgrade, failing))
    assert report.verdict is verdict
    assert len(report.issues) == issues


def test_unmet_criterion_and_recheck_entry_for_it_make_one_issue() -> None:
    raw = _dialect_a("PASS", "PASS -> FAIL", True)
    raw["acceptance_criteria_results"][0]["met"] = False
    report = normalise_report(raw)
    assert len(report.issues) == 1
    assert report.issues[0].description == (
        "Acceptance criterion not met: Docs updated "
        "(evidence: docs/auth.md; recheck: file_exists: cited path does not exist)"
    )


def test_explicit_unmet_issue_is_not_duplicated_by_its_criterion() -> None:
    raw = load(CANONICAL_A)
    report = normalise_report(raw)
    assert [i.criterion for i in report.issues] == [None, "E2E suite green"]


# --------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize(
    "raw",
    [
        {"overall_status": "UNKNOWN"},
        {"overall_status": "unknown", "issues": []},
        {},
        {"classification": "Unknown"},
    ],
)
def test_unknown_stub_is_no_verdict_never_pass(raw: dict[str, Any]) -> None:
    report = normalise_report(raw)
    assert report.verdict is Verdict.NONE
    assert report.claimed is Verdict.NONE
    assert report.issues == ()


@pytest.mark.parametrize(
    ("minor", "verdict"), [(0, Verdict.PASS), (3, Verdict.PASS), (4, Verdict.FAIL)]
)
def test_dialect_b_pass_with_minor_issues_only(minor: int, verdict: Verdict) -> None:
    items: list[Any] = [f"nit {n}" for n in range(minor)]
    if items:
        items[0] = {"description": "nit 0", "target": "README.md"}  # mappings and strings mix
    raw = {"classification": "PASS", "issues_found": {"critical": [], "major": [], "minor": items}}
    report = normalise_report(raw)
    assert report.verdict is verdict
    assert report.claimed is Verdict.PASS
    assert [i.severity for i in report.issues] == [Severity.MINOR] * minor


@pytest.mark.parametrize(
    ("word", "verdict"),
    [
        ("pass", Verdict.PASS),
        ("Fixable", Verdict.FIXABLE),
        ("blocked", Verdict.BLOCKED),
        ("FAIL", Verdict.FAIL),
        ("Revise", Verdict.FIXABLE),
        ("partial_pass", Verdict.FAIL),
        ("UNKNOWN", Verdict.NONE),
    ],
)
def test_classification_words_are_case_insensitive(word: str, verdict: Verdict) -> None:
    assert normalise_report({"classification": word}).claimed is verdict


@pytest.mark.parametrize(
    ("word", "severity"),
    [
        ("CRITICAL", Severity.CRITICAL),
        ("Major", Severity.MAJOR),
        ("mInOr", Severity.MINOR),
        (" minor ", Severity.MINOR),
        ("whatever", Severity.MAJOR),  # unknown is never silently minor
    ],
)
def test_severities_are_case_insensitive(word: str, severity: Severity) -> None:
    report = normalise_report(
        {"status": "FIXABLE", "issues": [{"severity": word, "description": "x"}]}
    )
    assert report.issues[0].severity is severity


def test_issue_fields_are_kept() -> None:
    raw = {
        "status": "BLOCKED",
        "issues": [
            {
                "id": 7,
                "type": "test_coverage_low",
                "severity": "major",
                "description": "Coverage 61%",
                "target": "src/auth",
                "task_id": "WI-3",
                "suggested_fix": "Add tests",
                "estimated_minutes": "45",
                "classification": "blocked",
                "owner": "qa",
            }
        ],
    }
    issue = normalise_report(raw).issues[0]
    assert issue == Issue(
        severity=Severity.MAJOR,
        description="Coverage 61%",
        type="test_coverage_low",
        id="7",
        target="src/auth",
        task_id="WI-3",
        suggested_fix="Add tests",
        estimated_minutes=45.0,
        classification=Verdict.BLOCKED,
        extra=freeze_map({"owner": "qa"}),
    )


def test_coordination_validation_leftovers_are_preserved() -> None:
    raw = load(DIALECT_B)
    raw["coordination_validation"]["unanswered_questions"] = 2
    report = normalise_report(raw)
    assert thaw(report.extra) == {"coordination_validation": {"unanswered_questions": 2}}


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("entry", "subject"),
    [
        ({"tool": "Edit", "file_path": "src/a.ts", "task_id": "WI-3"}, "WI-3"),
        ({"tool": "Edit", "file_path": "src/a.ts"}, "src/a.ts"),
        ({"tool": "Edit", "file_path": "", "task_id": "  "}, "Edit"),
        ({"tool": "Bash"}, "Bash"),
    ],
)
def test_subject_precedence(entry: dict[str, Any], subject: str) -> None:
    raw = {"error": "boom", "timestamp": "2026-11-29T10:00:00Z", **entry}
    assert normalise_failure(raw, 0).subject == subject


def test_canonical_failure_fields() -> None:
    raw = {
        "tool": "Edit",
        "error": "TypeError: x",
        "timestamp": "2026-11-29T10:00:00Z",
        "id": "TF-0007",
        "task_id": "WI-3",
        "outcome": "Partial",
        "failure_type": "Runtime_Error",
        "code": "ETIMEDOUT",
        "approach": "null check addition",
        "input_digest": "9f2c",
        "read_only": "true",
        "effect_state": "NOT_ATTEMPTED",
        "context_usage": 0.82,
        "file_path": "src/handler.ts",
        "agent_id": "executor-1",
        "tool_use_id": "toolu_01",
    }
    failure = normalise_failure(raw, 5)
    # Every field by name: the normaliser fills them in their order, not by name.
    assert (failure.id, failure.index) == ("TF-0007", 5)
    assert (failure.tool, failure.error) == ("Edit", "TypeError: x")
    assert failure.timestamp == "2026-11-29T10:00:00Z"
    assert (failure.file_path, failure.agent_id) == ("src/handler.ts", "executor-1")
    assert (failure.task_id, failure.approach) == ("WI-3", "null check addition")
    assert failure.input_digest == "9f2c"
    assert dict(failure.extra) == {"tool_use_id": "toolu_01"}
    assert failure.outcome is Outcome.PARTIAL
    assert failure.failure_type == "runtime_error"
    assert failure.code == "ETIMEDOUT"
    assert failure.read_only is True
    assert failure.effect_state is EffectState.NOT_ATTEMPTED
    assert failure.context_usage == 0.82
    assert failure.recoverable is None


@pytest.mark.parametrize(
    ("key", "value", "field", "expected"),
    [
        ("outcome", "failure", "outcome", Outcome.FAILURE),
        ("outcome", " SUCCESS ", "outcome", Outcome.SUCCESS),
        ("outcome", ["partial"], "outcome", Outcome.PARTIAL),
        ("outcome", {"a": 1}, "outcome", Outcome.FAILURE),
        ("outcome", "gibberish", "outcome", Outcome.FAILURE),
        ("recoverable", False, "recoverable", False),
        ("recoverable", 1, "recoverable", True),
        ("recoverable", "no", "recoverable", False),
        ("recoverable", "maybe", "recoverable", None),
        ("read_only", 1, "read_only", True),
        ("read_only", "yes", "read_only", True),
        ("read_only", False, "read_only", False),
        ("read_only", 2, "read_only", False),
        ("file_path", "  ", "file_path", None),
        ("file_path", 42, "file_path", "42"),
        ("task_id", True, "task_id", "true"),
        ("id", " ", "id", "3"),
        ("approach", 7, "approach", "7"),
        ("failure_type", "  ", "failure_type", None),
    ],
)
def test_odd_failure_values_read_as_the_coercions_say(
    key: str, value: Any, field: str, expected: Any
) -> None:
    failure = normalise_failure({"tool": "Bash", "error": "e", "timestamp": "t", key: value}, 3)
    assert getattr(failure, field) == expected
    assert type(getattr(failure, field)) is type(expected)


def test_unknown_keys_are_preserved_in_extra() -> None:
    raw = {
        "tool": "Bash",
        "error": "",
        "timestamp": "t",
        "hook_version": 3,
        "meta": {"b": [1, {"c": None}], "a": "x"},
    }
    failure = normalise_failure(raw, 0)
    assert isinstance(failure.extra, FrozenMap)
    assert list(failure.extra) == ["hook_version", "meta"]
    assert thaw(failure.extra) == {"hook_version": 3, "meta": {"a": "x", "b": [1, {"c": None}]}}
    assert hash(failure) == hash(normalise_failure(dict(reversed(raw.items())), 0))


def test_every_corpus_failure_normalises_with_its_position_as_id() -> None:
    entries = corpus("workflow/tool_failures.yaml")["failures"]
    failures = [normalise_failure(entry, index) for index, entry in enumerate(entries)]
    assert [f.id for f in failures] == [str(n) for n in range(len(entries))]
    assert failures[4].subject == "Bash"
    assert failures[0].subject == "/home/dev/webapp/src/auth/token-store.ts"
    assert [f.file_path for f in failures if f.error == ""] == ["/home/dev/webapp/.env"]
    assert all(f.extra == FrozenMap() for f in failures)


# --------------------------------------------------------------------------- coordination log


def test_corpus_coordination_log() -> None:
    log = normalise_coordination(corpus("workflow/coordination_log.yaml"))
    assert log.controller == "cagents:tech-lead"
    assert log.status == "in_progress"
    assert [q.delegated_to for q in log.questions] == [
        "cagents:backend-developer",
        "cagents:qa-lead",
        "cagents:devops-engineer",
    ]
    assert log.synthesis is not None
    assert len(log.synthesis.implementation_steps) == 3
    assert log.synthesis.risks == ("Lock TTL too short under load: token rotated twice",)
    assert [t.task_id for t in log.tasks] == ["WI-1", "WI-2", "WI-3", "WI-4"]
    assert log.tasks[1].review_rounds == 2
    assert log.tasks[1].acceptance_criteria == (
        "Lock acquired with SET NX PX",
        "Lock released in finally",
    )
    assert log.tasks[3].blocked_reason == "waiting on WI-2 lock semantics"
    assert log.tasks[3].status == "blocked"
    assert [f.final_status for f in log.failed_items] == [FinalStatus.SKIPPED, FinalStatus.BLOCKED]
    assert sorted(log.extra) == ["architecture_question", "domain", "objectives", "schema_version"]


def test_canonical_task_additions_and_delegations() -> None:
    raw = load(
        """
        implementation_tasks:
          - task_id: WI-5
            name: "Audit token storage"
            intent: OBSERVE
            files: [src/auth/token-store.ts]
            checkpoint: waypoints/wp-compact-2026-08-05_15-02-00.yaml
            continuations: 2
            expected_deliverables: [docs/audit.md]
            deliverables: []
            returned: true
            review_result: revise
            status: In_Progress
          - name: "Unnamed"
        delegations:
          - {from: "cagents:tech-lead", to: "cagents:qa-lead", task_id: WI-3}
          - {from: "cagents:qa-lead", to: "cagents:tech-lead"}
        """
    )
    log = normalise_coordination(raw)
    task = log.tasks[0]
    assert task.intent is Intent.OBSERVE
    assert task.files == ("src/auth/token-store.ts",)
    assert task.continuations == 2
    assert task.expected_deliverables == ("docs/audit.md",)
    assert task.deliverables == ()
    assert task.returned is True
    assert task.review_result == "REVISE"
    assert task.status == "in_progress"
    assert log.tasks[1].task_id == "task-2"
    assert log.tasks[1].intent is None
    assert [(d.from_, d.to, d.task_id) for d in log.delegations] == [
        ("cagents:tech-lead", "cagents:qa-lead", "WI-3"),
        ("cagents:qa-lead", "cagents:tech-lead", None),
    ]


# --------------------------------------------------------------------------- failed_items


def test_failed_items_round_trip_in_section_9_6_order() -> None:
    raw_items = corpus("workflow/coordination_log.yaml")["failed_items"]
    log = normalise_coordination({"failed_items": raw_items})
    for raw, item in zip(raw_items, log.failed_items, strict=True):
        out = failed_item_to_dict(item)
        assert out == raw
        assert list(out) == SECTION_9_6_ORDER
        assert normalise_failed_item(out, 0) == item


def test_a_planned_work_items_facts_write_its_entry_in_order_with_the_decisions_status() -> None:
    """The facts a part recorded become the failed_items entry in the file's order; the
    status is the item's decision's, never the part's (they carry none)."""
    item = WorkItem(task_id="WI-1", escalation_context="why", attempts=3)
    assert "final_status" not in WorkItem.__struct_fields__
    assert list(item.entry("blocked", "why")) == [
        "task_id",
        "attempts",
        "final_status",
        "escalation_context",
    ]
    assert list(ENTRY) == SECTION_9_6_ORDER
    assert item.entry("recovering", None) == {
        "task_id": "WI-1",
        "attempts": 3,
        "final_status": "recovering",
    }


def test_failed_item_to_dict_orders_keys_and_omits_none() -> None:
    scrambled = {
        "escalation_context": None,
        "final_status": "BLOCKED",
        "note": "human added",
        "recovery_actions_taken": ["revert"],
        "attempts": "2",
        "task_id": "WI-9",
    }
    item = normalise_failed_item(scrambled, 0)
    assert item == FailedItem(
        task_id="WI-9",
        final_status=FinalStatus.BLOCKED,
        attempts=2,
        recovery_actions_taken=("revert",),
        extra=freeze_map({"note": "human added"}),
    )
    out = failed_item_to_dict(item)
    assert list(out) == [
        "task_id",
        "attempts",
        "error_summary",
        "recovery_actions_taken",
        "final_status",
        "note",
    ]
    assert type(out["final_status"]) is str
    assert yaml.safe_dump(out, sort_keys=False).startswith("task_id: WI-9\nattempts: 2\n")


def test_all_seven_keys_when_set() -> None:
    item = FailedItem(
        task_id="WI-3",
        final_status=FinalStatus.RECOVERING,
        failure_type="runtime_error",
        attempts=1,
        error_summary="TypeError",
        recovery_actions_taken=("stack trace analysis",),
        escalation_context="ctx",
    )
    assert list(failed_item_to_dict(item)) == SECTION_9_6_ORDER


# --------------------------------------------------------------------------- waypoints, escalations


def test_canonical_waypoint_additions() -> None:
    raw = load(
        """
        type: pre_compact
        task_id: WI-2
        completed: [WI-2.1, {id: WI-2.2, description: "lock acquire"}]
        pending:
          - {id: P1, kind: FILE_EDIT, target: src/auth/lock.ts, description: "release in finally",
             acceptance_criteria: ["Lock released in finally"]}
          - "update docs"
          - {kind: sculpture}
        partial_outputs: ["src/auth/lock.ts (half)", {path: notes.md, lines: 12}]
        context_usage: "0.85"
        """
    )
    waypoint = normalise_waypoint(raw, "waypoints/wp-compact-2026-08-05_15-02-00.yaml")
    assert waypoint.id == "wp-compact-2026-08-05_15-02-00"
    assert waypoint.task_id == "WI-2"
    assert waypoint.completed == ("WI-2.1", "WI-2.2")
    assert waypoint.pending == (
        PendingItem(
            id="P1",
            kind=PendingKind.FILE_EDIT,
            target="src/auth/lock.ts",
            description="release in finally",
            acceptance_criteria=("Lock released in finally",),
        ),
        PendingItem(id="1", description="update docs"),
        PendingItem(id="2", kind=PendingKind.OTHER),
    )
    assert waypoint.partial_outputs == (
        "src/auth/lock.ts (half)",
        freeze({"path": "notes.md", "lines": 12}),
    )
    assert waypoint.context_usage == 0.85
    assert waypoint.hint_completed is None


def test_escalations() -> None:
    raw = load(
        """
        escalations:
          - id: ESC-1
            subject: WI-2
            reason: "runtime_error: retries exhausted"
            status: RESOLVED
            retry: true
            failure_type: runtime_error
            attempts: 3
            error_chain: ["TypeError at service.ts:88", {error: "TypeError again"}]
            tried: ["stack trace analysis"]
            files: [src/auth/service.ts]
            checkpoints: [waypoints/wp-compact-2026-08-05_15-02-00.yaml]
            evidence: "fixed upstream"
          - {subject: "rule:stale-edit", reason: "circuit open", status: closed, ladder_step: 4,
             rule: stale_edit, owner: ops}
          - "not an entry"
        """
    )
    first, second = normalise_escalations(raw)
    assert first.status is EscalationStatus.RESOLVED
    assert first.retry is True
    assert first.attempts == 3
    assert first.error_chain == ("TypeError at service.ts:88", freeze({"error": "TypeError again"}))
    assert first.checkpoints == ("waypoints/wp-compact-2026-08-05_15-02-00.yaml",)
    assert first.evidence == "fixed upstream"
    assert first.extra == FrozenMap()
    # Only an explicit "resolved" closes an escalation.
    assert (second.id, second.status, second.retry) == ("1", EscalationStatus.OPEN, False)
    assert (second.ladder_step, second.rule) == (4, "stale_edit")
    assert thaw(second.extra) == {"owner": "ops"}
    assert normalise_escalations({}) == ()


# --------------------------------------------------------------------------- odd but valid input

_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _docs(*keys: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=3), _VALUES, max_size=len(keys))


_ISSUE = _docs(
    "severity", "description", "type", "estimated_minutes", "classification", "criterion"
)
_CRITERION = _docs("criterion", "met", "evidence", "confidence", "verification_method")
_REPORT = st.fixed_dictionaries(
    {},
    optional={
        "classification": _VALUES,
        "status": _VALUES,
        "issues": st.lists(_ISSUE | _VALUES, max_size=3),
        "issues_found": st.dictionaries(
            st.sampled_from(["critical", "major", "minor", "x"]),
            st.lists(_ISSUE | _VALUES, max_size=3),
        )
        | _VALUES,
        "acceptance_criteria_results": st.lists(_CRITERION | _VALUES, max_size=3),
        "recheck": _docs("downgrade", "failing_entries") | _VALUES,
        "coordination_validation": _docs("circular_delegation_detected") | _VALUES,
        "confidence": _VALUES,
    },
)


@settings(max_examples=150, deadline=None)
@given(_REPORT)
def test_odd_reports_never_crash_and_pass_needs_a_pass_claim(raw: dict[str, Any]) -> None:
    report = normalise_report(raw)
    assert report.verdict is not Verdict.PASS or report.claimed is Verdict.PASS
    hash(report.issues)


@settings(max_examples=100, deadline=None)
@given(
    _docs(
        "tool",
        "error",
        "timestamp",
        "file_path",
        "task_id",
        "outcome",
        "read_only",
        "context_usage",
        "id",
    ),
    _docs(
        "implementation_tasks",
        "questions_asked",
        "synthesized_solution",
        "delegations",
        "failed_items",
        "work_item_status",
    ),
    _docs("coordination", "recovery", "pending", "completed", "partial_outputs", "id"),
    _docs("escalations"),
)
def test_odd_documents_never_crash(
    failure: dict[str, Any],
    log: dict[str, Any],
    waypoint: dict[str, Any],
    escalations: dict[str, Any],
) -> None:
    assert isinstance(normalise_failure(failure, 1).subject, str)
    coordination = normalise_coordination(log)
    for item in coordination.failed_items:
        assert next(iter(failed_item_to_dict(item))) == "task_id"
    assert normalise_waypoint(waypoint, "wp.yaml").source == "wp.yaml"
    assert isinstance(normalise_escalations(escalations), tuple)


def test_circular_delegation_issue_names_the_cycle() -> None:
    raw = {
        "classification": "BLOCKED",
        "coordination_validation": {
            "circular_delegation_detected": "true",
            "cycle": ["cagents:tech-lead", "cagents:backend-developer", "cagents:tech-lead"],
        },
    }
    report = normalise_report(raw)
    cycle = (
        "Circular delegation detected: "
        "cagents:tech-lead -> cagents:backend-developer -> cagents:tech-lead"
    )
    # The report is BLOCKED and names no reason: its critical issue is blocked, with its own
    # words as why.
    assert report.issues == (
        Issue(
            severity=Severity.CRITICAL,
            type="circular_delegation",
            description=cycle,
            classification=Verdict.BLOCKED,
            blocked_reason=f"the validator's verdict is BLOCKED, with no reason given; this issue: "
            f"{cycle}",
        ),
    )
    assert report.extra == FrozenMap()
    assert report.verdict is Verdict.BLOCKED


def test_truncated_task_and_blocked_hint() -> None:
    log = normalise_coordination({"implementation_tasks": [{"task_id": "WI-1", "truncated": True}]})
    assert log.tasks[0].truncated is True
    waypoint = normalise_waypoint({"coordination": {"work_items": {"blocked": 2}}}, "w.yaml")
    assert (waypoint.hint_blocked, waypoint.id) == (2, "w")


# --------------------------------------------------------------------------- schema examples

EXAMPLES = Path(__file__).parent / "examples"


def _positive(kind: str) -> list[Path]:
    return sorted((EXAMPLES / kind / "positive").glob("*.yaml"))


@pytest.mark.parametrize("path", _positive("validation_report"), ids=lambda p: p.name)
def test_positive_report_examples(path: Path) -> None:
    report = normalise_report(load(path.read_text(encoding="utf-8")))
    if path.name == "unknown_stub.yaml":
        assert report.verdict is Verdict.NONE
    if report.verdict is Verdict.PASS:
        assert all(i.severity is Severity.MINOR for i in report.issues)
        assert len(report.issues) <= 3


@pytest.mark.parametrize("path", _positive("coordination_log"), ids=lambda p: p.name)
def test_positive_coordination_examples(path: Path) -> None:
    raw = load(path.read_text(encoding="utf-8"))
    log = normalise_coordination(raw)
    assert len(log.tasks) == len(raw.get("implementation_tasks") or [])
    for item in log.failed_items:
        assert normalise_failed_item(failed_item_to_dict(item), 0) == item


@pytest.mark.parametrize(
    "path", _positive("waypoint") + _positive("escalations"), ids=lambda p: p.name
)
def test_positive_waypoint_and_escalation_examples(path: Path) -> None:
    raw = load(path.read_text(encoding="utf-8"))
    if path.parent.parent.name == "escalations":
        assert len(normalise_escalations(raw)) == len(raw.get("escalations") or [])
    else:
        waypoint = normalise_waypoint(raw, str(path))
        assert waypoint.source == str(path)
        if path.name == "legacy_hook.yaml":  # an older hook put next_action at the top level
            assert waypoint.next_action == "Resume from unknown phase after context restored"
            assert "next_action" not in waypoint.extra
