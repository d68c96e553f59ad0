"""Who owns a work item, whose turn may spend its attempts (docs/rules.md §8, "Whose turn").

Every task has one owner: the agent its coordination log names (`agent_id`), or the subagent
the lead started for it (bound by the hooks); the lead when it is assigned to the controller or
to no agent at all. A task assigned to an agent type whose agent never started is owned by that
agent, which has had no turn: the lead's stops spend none of its attempts. Nobody acting is
made visible instead (`idle`): after `caps.idle_rounds` lead turns with no turn of its owner the
item is waiting (the lead's stop hook names it), after as many more a person is paged, once. Pure.
"""

from __future__ import annotations

from msgspec.structs import replace

from selfcorrect.core.classify import IssueDecision, IssueReason
from selfcorrect.core.model import IssueStatus, Task, Verdict
from selfcorrect.core.state import IssueState, State

WAITING_FOR_OWNER = "waiting for its agent"


def owned_by_lead(task: Task, controller: str | None) -> bool:
    """Is the lead this task's owner: no agent named, and assigned to the controller or to no
    agent type?"""
    if task.agent_id:
        return False
    assigned = (task.assigned_to or "").strip()
    return not assigned or (controller is not None and assigned == controller.strip())


def idle(decision: IssueDecision, prior: IssueState, state: State, rounds: int) -> IssueDecision:
    """An issue whose directive is out, and whose owner has had no turn in `rounds` of the
    lead's turns, is waiting (no attempt spent); in twice as many, IDLE: a person decides who
    does it. Only where the host reports turns; a lead-owned task is never idle."""
    awaiting = decision.reason is IssueReason.AWAITING_AGENT
    if not awaiting or prior.status != IssueStatus.DIRECTIVE or rounds <= 0:
        return decision
    if not state.host_reports_turns or prior.work_item is None:
        return decision
    lead_turns = state.lead_turns_without_owner(prior.seq, prior.work_item)
    since = f"since its directive ({prior.at})" if prior.at else "since its directive"
    if lead_turns >= 2 * rounds:
        return replace(
            decision,
            classification=Verdict.BLOCKED,
            reason=IssueReason.IDLE,
            detail=f"its agent has had no turn in {lead_turns} of the lead's turns {since}: "
            "nobody is working on it; a person decides who does",
            new=True,
        )
    if lead_turns >= rounds:
        return replace(
            decision,
            reason=IssueReason.WAITING,
            detail=f"{WAITING_FOR_OWNER}: no turn of its owner {since}; the lead should start "
            f"it (an Agent call naming {prior.work_item}) or say why not",
        )
    return decision
