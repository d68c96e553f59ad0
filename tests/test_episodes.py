"""What an episode bounds (docs/rules.md §4): its correction cycles, a person's guidance, and
how often an issue may come back before a person is asked. An episode ends with a passing
report or a person's reset. The folds are tested on journal records; the loop through
`selfcorrect run` is in tests/test_loop_rules.py and tests/test_recurrence.py."""

from __future__ import annotations

from typing import Any

from selfcorrect.core.state import derive

AT = "2026-12-03T10:00:00Z"


def reset(name: str, evidence: str) -> dict[str, Any]:
    return {
        "event": "reset",
        "via": "cli",
        "kind": "subject",
        "name": name,
        "evidence": evidence,
        "retry": True,
        "subjects": [],
        "actor": "ana",
        "at": AT,
    }


PASSED = {"event": "success", "source": "report", "report_digest": "d|s", "subjects": []}


def test_a_persons_words_last_until_a_passing_report_ends_their_episode() -> None:
    given = [reset("WI-3", "move the route below app.use(auth)")]
    assert derive(given).guidance["WI-3"].evidence == "move the route below app.use(auth)"
    assert derive([*given, PASSED]).guidance == {}
    closed = {"event": "episode", "status": "closed", "at": AT}
    assert derive([*given, closed]).guidance == {}
    # Words given after the PASS belong to the new episode.
    later = derive([*given, PASSED, reset("WI-3", "use the new session API")])
    assert later.guidance["WI-3"].evidence == "use the new session API"
