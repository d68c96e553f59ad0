"""`subagent-stop` and `stop`: an agent does not stop with work handed to it (docs/hooks.md).

A subagent stopping while its task has pending micro-tasks or an open directive (a recovery
prompt selfcorrect handed out and no fresh report has answered) is told to carry on, with the
files to read: `decision: block`. The lead agent (`stop`) is held back for any task's open
work, as it hands the work out. Each directive holds an agent back once (remembered in
`.selfcorrect/stop_holds.json`), and never when the event says a stop hook is already active,
so an agent that cannot go on is never looped. Reads only the gate's state.

A stop that is let through is the end of that agent's turn: it is journaled (a `turn` record),
and the ladder climbs, and a fresh report spends a directive's attempt, only after one
(docs/rules.md §5, §8). A hold and the stop that ends the work it asked for (the host says
`stop_hook_active`) are one turn: the held stop records nothing. The turn names the tasks the
stopping agent owns: a subagent's bound or assigned task, the lead's own tasks (assigned to the
controller or to nobody), never a task whose agent has not had its turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.core.plural import count
from selfcorrect.hooks.answers import block_stop
from selfcorrect.hooks.events import HookEvent
from selfcorrect.hooks.gate_file import NotRegular, read_state

MAX_HOLDS = 1000  # remembered directives; the oldest are forgotten first


def answer_subagent(event: HookEvent, folder: Path) -> dict[str, Any] | None:
    return answer(event, folder, subagent=True)


def answer_lead(event: HookEvent, folder: Path) -> dict[str, Any] | None:
    return answer(event, folder, subagent=False)


def answer(event: HookEvent, folder: Path, *, subagent: bool) -> dict[str, Any] | None:
    from selfcorrect.hooks.batch import from_transcript

    if from_transcript(event, folder):  # a host with no PostToolBatch: its rejected calls
        from selfcorrect.hooks.failure import decide

        decide(folder)
    held, tasks = _hold(event, folder, subagent=subagent)
    if held is not None and not subagent:  # the lead, held: it is told what waits, too
        from selfcorrect.hooks.gate_file import read_state_or_none
        from selfcorrect.hooks.waiting import waiting_note, with_note

        held = with_note(held, waiting_note(str(folder), read_state_or_none(folder)), "Stop")
    if held is None:  # held back, the agent goes on: its turn ends at the stop that follows
        _record_turn(event, folder, subagent=subagent, tasks=tasks)
    return held


def _hold(
    event: HookEvent, folder: Path, *, subagent: bool
) -> tuple[dict[str, Any] | None, list[str]]:
    """(the answer holding the agent back, or None; the tasks the stopping agent works on)."""
    try:
        state = read_state(folder)
    except NotRegular as exc:
        from selfcorrect.hooks.answers import note

        note(f"{exc}; the stop was let through")
        return None, []
    tasks = state.tasks if state is not None else {}
    if not tasks:
        return None, []
    from selfcorrect.hooks.binding import bound_task

    agent = event.text("agent_id")
    bound = bound_task(agent, str(folder)) if subagent else None
    # The lead is held for every task's open work, as it hands the work out; its turn ends
    # only the tasks it owns (core/owners.py).
    mine = [
        str(task)
        for task, facts in sorted(tasks.items())
        if (subagent and (agent in (facts.get("agents") or []) or task == bound))
        or (not subagent and facts.get("lead") is True)
    ]
    if event.stop_hook_active:
        return None, mine  # the host is already continuing because of a stop hook: no loops
    held_for = sorted(tasks) if not subagent else mine
    open_work = [work for task in held_for for work in _open_work(str(task), tasks[task])]
    fresh = _hold_once(folder, open_work)
    if not fresh:
        return None, mine
    todo = "; ".join(text for _, text in fresh)
    return block_stop(f"selfcorrect: work handed to you is not done yet: {todo}."), mine


def _record_turn(event: HookEvent, folder: Path, *, subagent: bool, tasks: list[str]) -> None:
    """Journal the end of the agent's turn (under the folder's lock when it comes in time; an
    append is one line either way, and a lost turn would hold the ladder back)."""
    import time

    from selfcorrect.core.journal_records import TurnEvent
    from selfcorrect.io import folder_lock, journal, last_report
    from selfcorrect.io.log_state import folded_entries

    if not (folder / layout.JOURNAL).is_file():
        return  # no run has been here: nothing was handed out, no round to end
    agent = event.text("agent_id") if subagent else event.text("session_id")
    record = TurnEvent(
        agent=agent,
        lead=not subagent,
        tasks=tasks,
        report_stamp=last_report.stamp(folder / layout.REPORT),
        log_position=folded_entries(folder),
        at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        run="hook",
        actor="selfcorrect",
    )
    try:
        with folder_lock.hold(folder, TURN_WAIT_S, "hook"):
            journal.append(folder, [record])
    except folder_lock.FolderBusy:
        journal.append(folder, [record])


TURN_WAIT_S = 5.0


def _open_work(task: str, facts: dict[str, Any]) -> list[tuple[str, str]]:
    """(hold key, what to do) of the task's open work: its micro-tasks (its prompt names them:
    one hold), else its directive."""
    pending = facts.get("microtasks_pending")
    directive, prompt = facts.get("directive"), facts.get("prompt")
    if isinstance(pending, int) and pending > 0:
        where = facts.get("microtasks")
        named = f" ({prompt} names them)" if isinstance(prompt, str) else ""
        return [
            (
                f"{task}|microtasks|{pending}|{where}",
                f"{task} has {count(pending, 'pending micro-task')} "
                f"in {where}: do them and mark each done{named}",
            )
        ]
    if isinstance(directive, str) and isinstance(prompt, str):
        if facts.get("waiting") is True:  # nobody is acting on it: the lead starts its agent
            todo = (
                f"{task} is waiting for its agent, which has had no turn since its directive: "
                f"start it (an Agent call naming {task}, with {prompt}), or say why not"
            )
            return [(f"{task}|directive|{directive}", todo)]
        return [(f"{task}|directive|{directive}", f"{task}: follow {prompt}")]
    return []


def _hold_once(folder: Path, open_work: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The open work not held back for before, now remembered as held (compare-and-swap:
    two subagents stopping at once never both hold for one directive)."""
    from selfcorrect.hooks.remembered import first_time

    fresh = set(first_time(folder / layout.STOP_HOLDS, [key for key, _ in open_work], MAX_HOLDS))
    return [(key, todo) for key, todo in open_work if key in fresh]
