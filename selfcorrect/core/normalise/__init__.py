"""One normaliser per input shape (rules §2): loaded YAML mappings → the records of `model`.

Pure functions: no I/O, no YAML. Input is assumed to have passed the JSON Schema, but odd
schema-valid values (numbers for text, "true" strings, missing optional blocks) never crash a
normaliser. The cAgents dialect and the canonical form of the same facts give equal records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from selfcorrect.core.frozen import EMPTY, freeze_map, thaw
from selfcorrect.core.model import (
    EffectState,
    Escalation,
    EscalationStatus,
    FailedItem,
    Failure,
    Outcome,
    PendingItem,
    PendingKind,
    Waypoint,
)
from selfcorrect.core.normalise.coerce import (
    ID_KEYS,
    choice,
    entries,
    flag,
    integer,
    leftover,
    lookup,
    mapping,
    nonblank,
    number,
    records,
    rest,
    text,
    text_or,
    texts,
    word,
)
from selfcorrect.core.normalise.coordination import normalise_coordination, normalise_failed_item
from selfcorrect.core.normalise.report import normalise_report

__all__ = [
    "failed_item_to_dict",
    "normalise_coordination",
    "normalise_escalations",
    "normalise_failed_item",
    "normalise_failure",
    "normalise_report",
    "normalise_waypoint",
]

_FAILURE_KEYS = (
    "tool",
    "error",
    "timestamp",
    "file_path",
    "agent_id",
    "recoverable",
    "id",
    "task_id",
    "outcome",
    "failure_type",
    "code",
    "approach",
    "input_digest",
    "read_only",
    "effect_state",
    "context_usage",
)
_WAYPOINT_KEYS = (
    "id",
    "type",
    "phase",
    "created_at",
    "trigger",
    "task_id",
    "coordination",
    "recovery",
    "completed",
    "pending",
    "partial_outputs",
    "context_usage",
)
_COORDINATION_HINTS = ("controller", "status", "questions_pending", "has_synthesis", "work_items")
_COUNTS = ("completed", "in_progress", "pending", "blocked")
_RECOVERY_KEYS = ("read_files", "resume_phase", "next_action")
_PENDING_KEYS = ("id", "kind", "target", "description", "acceptance_criteria")
_ESCALATION_KEYS = (
    "id",
    "subject",
    "reason",
    "status",
    "retry",
    "false_positive",
    "failure_type",
    "attempts",
    "ladder_step",
    "error_chain",
    "tried",
    "files",
    "checkpoints",
    "rule",
    "rule_version",
    "created_at",
    "resolved_at",
    "resolved_by",
    "evidence",
)


_FAILURE_KEY_SET = frozenset(_FAILURE_KEYS)


def _str(value: Any, default: str) -> str:
    # The common case (a schema-valid string) skips the general coercion: this runs for every
    # entry of a 100,000-entry log (rules §18).
    return value if type(value) is str else text_or(value, default)


def _present(value: Any) -> str | None:
    if type(value) is str:
        return value if value.strip() else None
    return None if value is None else nonblank(value)


def normalise_failure(raw: Mapping[Any, Any], index: int) -> Failure:
    """One tool_failures.yaml entry (rules §2.1); `index` is its position in the list."""
    get = raw.get
    ident, file_path, agent_id = get("id"), get("file_path"), get("agent_id")
    task_id, read_only = get("task_id"), get("read_only")
    recoverable, outcome, failure_type = get("recoverable"), get("outcome"), get("failure_type")
    code, approach, digest = get("code"), get("approach"), get("input_digest")
    effect, usage = get("effect_state"), get("context_usage")
    # Absent keys and schema-valid values skip the general coercions (the same answers): this
    # runs for every entry of the log, and a hook writes only six of these keys. The fields go
    # in their order, not by name: naming 18 arguments costs more than the rest of this.
    return Failure(
        (None if ident is None else _present(ident)) or str(index),  # id
        index,
        _str(get("tool"), ""),  # tool
        _str(get("error"), ""),  # error
        _str(get("timestamp"), ""),  # timestamp
        None if file_path is None else _present(file_path),  # file_path
        None if agent_id is None else _present(agent_id),  # agent_id
        recoverable if type(recoverable) is bool else flag(recoverable),  # recoverable
        None if task_id is None else _present(task_id),  # task_id
        # An unreadable outcome counts as a failure: the default, and the one that is watched.
        Outcome.FAILURE if outcome is None else _outcome(outcome),  # outcome
        None if failure_type is None else word(failure_type),  # failure_type
        None if code is None else _present(code),  # code: typed codes (ETIMEDOUT) keep their case
        None if approach is None else text(approach),  # approach
        None if digest is None else _present(digest),  # input_digest
        read_only is True or (read_only is not None and flag(read_only) is True),  # read_only
        None if effect is None else lookup(EffectState, effect),  # effect_state
        None if usage is None else number(usage),  # context_usage
        EMPTY if _FAILURE_KEY_SET.issuperset(raw) else rest(raw, _FAILURE_KEYS),  # extra
    )


_OUTCOMES = {member.value: member for member in Outcome}


def _outcome(value: Any) -> Outcome:
    known = _OUTCOMES.get(value) if type(value) is str else None
    return choice(Outcome, value, Outcome.FAILURE) if known is None else known


def _pending(raw: Any, index: int) -> PendingItem:
    if not isinstance(raw, Mapping):  # a bare string is a description of work of unknown kind
        return PendingItem(id=str(index), description=text(raw))
    return PendingItem(
        id=nonblank(raw.get("id")) or str(index),
        kind=choice(PendingKind, raw.get("kind"), PendingKind.OTHER),
        target=nonblank(raw.get("target")),
        description=text(raw.get("description")),
        acceptance_criteria=texts(raw.get("acceptance_criteria")),
        extra=rest(raw, _PENDING_KEYS),
    )


def _stem(source: str) -> str:
    """File name without folder or .yaml/.yml suffix: a waypoint's id when it names none."""
    name = source.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def normalise_waypoint(raw: Mapping[Any, Any], source: str) -> Waypoint:
    """One waypoint (rules §2.4); `source` is where it was read from."""
    coordination = mapping(raw.get("coordination"))
    counts = mapping(coordination.get("work_items"))
    recovery = mapping(raw.get("recovery"))

    extra = leftover(raw, _WAYPOINT_KEYS)
    next_action = recovery.get("next_action")
    if next_action is None:  # older hooks wrote it at the top level
        next_action = extra.pop("next_action", None)
    # Keep what the nested blocks hold beyond the fields read from them.
    nested = leftover(coordination, _COORDINATION_HINTS)
    if nested_counts := leftover(counts, _COUNTS):
        nested["work_items"] = nested_counts
    if nested:
        extra["coordination"] = nested
    if nested_recovery := leftover(recovery, _RECOVERY_KEYS):
        extra["recovery"] = nested_recovery

    return Waypoint(
        source=source,
        id=nonblank(raw.get("id")) or _stem(source),
        type=word(raw.get("type")),
        phase=nonblank(raw.get("phase")),
        created_at=text(raw.get("created_at")),
        trigger=nonblank(raw.get("trigger")),
        task_id=nonblank(raw.get("task_id")),
        controller=nonblank(coordination.get("controller")),
        coordination_status=word(coordination.get("status")),
        hint_questions_pending=integer(coordination.get("questions_pending")),
        hint_completed=integer(counts.get("completed")),
        hint_in_progress=integer(counts.get("in_progress")),
        hint_pending=integer(counts.get("pending")),
        hint_blocked=integer(counts.get("blocked")),
        has_synthesis=flag(coordination.get("has_synthesis")),
        read_files=texts(recovery.get("read_files")),
        resume_phase=nonblank(recovery.get("resume_phase")),
        next_action=text(next_action),
        completed=texts(raw.get("completed"), ID_KEYS),
        pending=tuple(
            _pending(item, index) for index, item in enumerate(entries(raw.get("pending")))
        ),
        partial_outputs=records(raw.get("partial_outputs")),
        context_usage=number(raw.get("context_usage")),
        extra=freeze_map(extra),
    )


def _escalation(raw: Mapping[Any, Any], index: int) -> Escalation:
    return Escalation(
        id=nonblank(raw.get("id")) or str(index),
        subject=text_or(raw.get("subject"), ""),
        reason=text_or(raw.get("reason"), ""),
        # Only an explicit "resolved" closes an escalation; anything else keeps it open.
        status=choice(EscalationStatus, raw.get("status"), EscalationStatus.OPEN),
        retry=flag(raw.get("retry")) is True,
        false_positive=flag(raw.get("false_positive")) is True,
        failure_type=word(raw.get("failure_type")),
        attempts=max(integer(raw.get("attempts")) or 0, 0),
        ladder_step=integer(raw.get("ladder_step")),
        # Attempts are records (approach, outcome, error): kept whole, not flattened to text.
        error_chain=records(raw.get("error_chain")),
        tried=texts(raw.get("tried")),
        files=texts(raw.get("files")),
        checkpoints=texts(raw.get("checkpoints")),
        rule=nonblank(raw.get("rule")),
        rule_version=nonblank(raw.get("rule_version")),
        created_at=text(raw.get("created_at")),
        resolved_at=text(raw.get("resolved_at")),
        resolved_by=nonblank(raw.get("resolved_by")),
        evidence=text(raw.get("evidence")),
        extra=rest(raw, _ESCALATION_KEYS),
    )


def normalise_escalations(raw: Mapping[Any, Any]) -> tuple[Escalation, ...]:
    """escalations.yaml → its entries, in file order; non-mapping items are skipped."""
    items = entries(raw.get("escalations"))
    return tuple(
        _escalation(item, index) for index, item in enumerate(items) if isinstance(item, Mapping)
    )


def failed_item_to_dict(item: FailedItem) -> dict[str, Any]:
    """A `failed_items` entry as plain data, keys in rules §9.6 order, extra keys after.

    Optional keys that are None (failure_type, escalation_context) are left out.
    """
    out: dict[str, Any] = {"task_id": item.task_id}
    if item.failure_type is not None:
        out["failure_type"] = item.failure_type
    out["attempts"] = item.attempts
    out["error_summary"] = item.error_summary
    out["recovery_actions_taken"] = list(item.recovery_actions_taken)
    out["final_status"] = item.final_status.value
    if item.escalation_context is not None:
        out["escalation_context"] = item.escalation_context
    for key, value in item.extra.pairs:
        out.setdefault(key, thaw(value))  # a human's own keys survive our rewrite
    return out
