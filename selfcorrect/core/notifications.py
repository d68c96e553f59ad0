"""Which open escalations to send to a person now (docs/rules.md §10, "Escalations reach a
person").

`notify.command` gets each open escalation once when it is new to it, and once more, a
reminder, when it is still open `notify.remind_after_h` hours after it was sent. What was sent
is read from the journal's `notified` records, so "once" holds across runs and watchers. A
send whose command failed is tried again by later runs, at most `MAX_TRIES` times in all: a
broken notifier does not run on every event a watcher sees. Pure: no I/O, the clock passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from msgspec import Struct

from selfcorrect.core.circuits import moment
from selfcorrect.core.journal_records import NotifiedEvent, typed
from selfcorrect.core.policy_views import Notify

NEW, REMINDER = "new", "reminder"
MAX_TRIES = 3  # failed runs of the command for one notice, before it is given up


class Notice(Struct, frozen=True):
    """One escalation to send: its id, and `new` or `reminder`."""

    escalation: str
    notice: str


class Sent(Struct, frozen=True):
    """What the journal says was sent of one escalation."""

    sent_at: datetime | None = None  # its `new` notice, when a run of the command worked
    reminded: bool = False
    tries: tuple[int, int] = (0, 0)  # failed runs: of its new notice, of its reminder


def sent(history: Iterable[Any]) -> dict[str, Sent]:
    """Each escalation's sends, from the journal's `notified` records."""
    found: dict[str, Sent] = {}
    for record in typed(history):
        if not isinstance(record, NotifiedEvent):
            continue
        was = found.get(record.escalation, Sent())
        new = record.notice == NEW
        if record.exit == 0:
            if new:
                was = Sent(was.sent_at or moment(record.at), was.reminded, was.tries)
            else:
                was = Sent(was.sent_at, True, was.tries)
        else:
            tried_new, tried_reminder = was.tries
            tries = (tried_new + 1, tried_reminder) if new else (tried_new, tried_reminder + 1)
            was = Sent(was.sent_at, was.reminded, tries)
        found[record.escalation] = was
    return found


def due(
    open_ids: Iterable[str], history: Iterable[Any], notify: Notify, now: datetime
) -> list[Notice]:
    """The notices to send now, in escalations.yaml order: each open escalation never sent
    (`new`), and each sent `remind_after_h` hours ago or more and not reminded (`reminder`).
    A resolved or superseded escalation is not open: nothing is sent for it."""
    if notify.command is None:
        return []
    known = sent(history)
    notices: list[Notice] = []
    for ident in dict.fromkeys(open_ids):
        was = known.get(ident, Sent())
        if was.sent_at is None:
            if was.tries[0] < MAX_TRIES:
                notices.append(Notice(ident, NEW))
        elif (
            notify.remind_after_h is not None
            and not was.reminded
            and was.tries[1] < MAX_TRIES
            and now - was.sent_at >= timedelta(hours=notify.remind_after_h)
        ):
            notices.append(Notice(ident, REMINDER))
    return notices


__all__ = ["MAX_TRIES", "NEW", "REMINDER", "Notice", "Sent", "due", "sent"]
