"""Tell a person: run `notify.command` for each escalation due (docs/rules.md §10).

After a run has written `escalations.yaml`, each open escalation new to the notifier is sent
once, and once more as a reminder when still open `notify.remind_after_h` hours after it was
sent (core/notifications.py decides which). The command is a policy command: argv, never a
shell, in the project root, within `notify.timeout_s`, run only when trusted (the run refused an
untrusted one before anything ran: io/trust.py). It gets the escalation's entry, as the file
holds it, as JSON on stdin, and `SELFCORRECT_NOTICE` (`new` or `reminder`),
`SELFCORRECT_ESCALATION` (its id) and `SELFCORRECT_ESCALATIONS` (the file) in its environment.
Each run of it is journaled (a `notified` record) before the next starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.clock import Clock, stamp
from selfcorrect.core.journal_records import NotifiedEvent
from selfcorrect.core.model import EscalationStatus
from selfcorrect.core.normalise import normalise_escalations
from selfcorrect.core.notifications import due
from selfcorrect.core.policy import Policy
from selfcorrect.errors import InputError
from selfcorrect.io import documents, journal


def notify(
    folder: Path,
    policy: Policy,
    root: Path,
    clock: Clock,
    record: Callable[[NotifiedEvent], None],
) -> list[NotifiedEvent]:
    """Send every notice due now; the records of the runs, each already journaled."""
    if policy.notify.command is None:
        return []
    entries = _open_entries(folder, policy.limits.max_bytes)
    if not entries:
        return []
    # The journal as it stands (the run holds the folder's lock): what any run sent before.
    notices = due(entries, journal.read_journal(folder, []), policy.notify, clock())
    if not notices:
        return []
    from selfcorrect.io.process import run_argv  # only a run that sends loads it

    argv = list(policy.notify.command)
    shown = documents.display_path(folder / layout.ESCALATIONS)
    timeout = policy.notify.timeout_s
    done: list[NotifiedEvent] = []
    for notice in notices:
        body = json.dumps(entries[notice.escalation], ensure_ascii=False, default=str)
        env = {
            "SELFCORRECT_NOTICE": notice.notice,
            "SELFCORRECT_ESCALATION": notice.escalation,
            "SELFCORRECT_ESCALATIONS": shown,
        }
        ran = run_argv(argv, root, timeout, env=env, stdin=body.encode("utf-8") + b"\n")
        event = NotifiedEvent(
            escalation=notice.escalation,
            notice=notice.notice,
            argv=argv,
            exit=ran.returncode,
            outcome=ran.describe(timeout),
        )
        record(event)
        done.append(event)
    return done


def _open_entries(folder: Path, max_bytes: int) -> dict[str, Mapping[str, Any]]:
    """Each open escalation's entry as escalations.yaml holds it, by id, in file order. A file
    that does not load sends nothing (the run that read it said why)."""
    path = folder / layout.ESCALATIONS
    if not path.is_file():
        return {}
    try:
        data = documents.load_decision(path, "escalations", max_bytes=max_bytes).data
    except (InputError, OSError):
        return {}
    raw = [e for e in (data or {}).get("escalations") or () if isinstance(e, Mapping)]
    return {
        escalation.id: entry
        for escalation, entry in zip(normalise_escalations(data or {}), raw, strict=False)
        if escalation.status is EscalationStatus.OPEN
    }


def recorder(folder: Path, clock: Clock, run: str) -> Callable[[NotifiedEvent], None]:
    """Journal each notice as it is sent: a crash between two never sends one twice."""
    from msgspec.structs import replace

    def record(event: NotifiedEvent) -> None:
        journal.append(folder, [replace(event, at=stamp(clock), run=run, actor="selfcorrect")])

    return record


__all__ = ["notify", "recorder"]
