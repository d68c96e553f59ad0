"""What an episode bounds (docs/rules.md §4): its correction cycles, a person's guidance, and
how often an issue may come back before a person is asked. An episode ends with a passing
report or a person's reset. The folds are tested on journal records, then the loop through
`selfcorrect run` (the cycles and the guidance through it: tests/test_loop_rules.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from selfcorrect.core.classify import IssueClassifier, IssueReason
from selfcorrect.core.decisions import decide
from selfcorrect.core.inputs import Inputs
from selfcorrect.core.model import Issue, Severity, Verdict
from selfcorrect.core.normalise import normalise_report
from selfcorrect.core.state import derive
from selfcorrect.io.policy_file import load_policy
from tests.helpers import USAGE_MISSING, fixable_report, load, records

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


# --- An issue that keeps coming back (docs/rules.md §5) ------------------------------------


def issue_record(status: str, at: str, attempt: int = 1) -> dict[str, Any]:
    return {
        "event": "issue",
        "fingerprint": DOCS,
        "work_item": "WI-4",
        "type": "missing_documentation",
        "status": status,
        "attempt": attempt,
        "report_digest": at,
        "reason": status.upper(),
        "rule": "issue_type:missing_documentation",
        "rule_version": "v1",
        "at": at,
    }


DOCS = "missing_documentation@docs/app.md#WI-4"


def came_back(times: int) -> list[dict[str, Any]]:
    """Handed out, then resolved and back `times` times: the records a journal holds."""
    found = [issue_record("directive", "t0")]
    for n in range(1, times + 1):
        found += [issue_record("resolved", f"r{n}"), issue_record("directive", f"b{n}")]
    return found


def test_an_issues_returns_count_per_episode() -> None:
    twice = derive(came_back(2)).issue(DOCS)
    assert (twice.recurrences, twice.returns) == (2, (("r1", "b1"), ("r2", "b2")))
    # A PASS, or a person's reset, ends the episode: its returns count again from none.
    for end in (PASSED, reset("WI-4", "the docs generator is fixed")):
        after = derive([*came_back(2), end, issue_record("directive", "b3")]).issue(DOCS)
        assert (after.recurrences, after.returns) == (2, ())


def back_again(times: int) -> Any:
    """The decision on the report that brings DOCS back after `times` earlier returns."""
    prior = derive([*came_back(times), issue_record("resolved", "now-resolved")]).issue(DOCS)
    issue = Issue(
        severity=Severity.MINOR,
        description="docs/app.md has no usage section",
        type="missing_documentation",
        target="docs/app.md",
        task_id="WI-4",
    )
    return IssueClassifier(load_policy(None), lambda _program: True).decide(issue, prior, "new")


def test_a_return_gets_a_fresh_budget_until_the_cap_then_a_person_decides() -> None:
    second = back_again(1)
    assert (second.classification, second.reason, second.attempts) == (
        Verdict.FIXABLE,
        IssueReason.FIXABLE,
        1,
    )
    assert second.recurrences == 2 and "this came back after being fixed (2 times)" in (
        second.detail
    )
    third = back_again(2)  # caps.max_recurrences: 3 returns in one episode
    assert (third.classification, third.reason, third.attempts) == (
        Verdict.BLOCKED,
        IssueReason.RECURRING,
        0,
    )
    assert "3 times in this episode (caps.max_recurrences 3)" in third.detail
    assert third.returns == (("r1", "b1"), ("r2", "b2"), ("now-resolved", ""))


COORDINATION = """\
controller: lead
status: in_progress
implementation_tasks:
  - task_id: WI-4
    name: "Document the app"
    files: [docs/app.md]
    status: in_progress
"""


def test_an_issue_back_three_times_in_one_episode_goes_to_a_person(
    tmp_path: Path, run_line
) -> None:
    """A resolved issue that came back got a fresh budget every time, for ever. Each return
    still does, and its prompt says it came back; the third in one episode is RECURRING,
    escalated with every return in its error chain."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(COORDINATION)
    docs = USAGE_MISSING

    def report(n: int, *issues: dict[str, Any]) -> dict[str, Any]:
        # Another finding keeps every report FIXABLE: one episode, no PASS.
        other = {**docs, "id": f"O-{n}", "task_id": None, "target": f"docs/o{n}.md"}
        fixable_report(folder, *issues, other)
        out = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
        return next((i for i in out["issues"] if i["fingerprint"].endswith("#WI-4")), out)

    prompt = folder / "recovery" / "WI-4.md"
    report(0, docs)  # handed out
    for back in (1, 2):
        report(2 * back - 1)  # resolved by a fresh report without it
        again = report(2 * back, docs)
        assert (again["classification"], again["attempts"]) == ("FIXABLE", 0), again
        times = "1 time" if back == 1 else "2 times"
        assert f"This came back after being fixed ({times})" in prompt.read_text()
    report(5)
    third = report(6, docs)
    assert (third["classification"], third["reason"]) == ("BLOCKED", "RECURRING"), third
    assert prompt.read_text().startswith("STATUS: blocked")
    (escalation,) = [e for e in load(folder / "escalations.yaml")["escalations"]]
    assert escalation["subject"] == "WI-4" and escalation["status"] == "open"
    returns = escalation["error_chain"][1:]
    assert [line.split(":", 1)[0] for line in returns] == ["return 1", "return 2", "return 3"]
    assert all("resolved 20" in line and "came back 20" in line for line in returns), returns
    blocked = [r for r in records(folder) if r.get("reason") == "RECURRING"]
    assert len(blocked) == 1  # journaled once; a rerun keeps it blocked, writing nothing
    assert report(6, docs)["reason"] == "RECURRING"
    assert len([r for r in records(folder) if r.get("reason") == "RECURRING"]) == 1


def test_out_of_cycles_an_issue_says_how_many_the_episode_spent() -> None:
    """A run that starts at the cap ran no cycle itself: the reason said "after 0"."""
    lint = {"id": "L1", "type": "linting_errors", "severity": "MAJOR", "target": "a.py"}
    report = normalise_report({"status": "FIXABLE", "issues": [{**lint, "description": "F401"}]})
    cycles = [{"event": "validated", "detail": "fresh", "cycle": True, "at": AT}] * 3
    inputs = Inputs("workflow", load_policy(None), report=report, history=tuple(cycles))
    decided = decide(inputs, now=AT, run_id="r", installed=lambda _p: True, at_cap=True)
    (issue,) = decided.issues
    assert issue.reason is IssueReason.CAPS_EXHAUSTED
    assert issue.detail == "still open after 3 correction cycles, the global cap"
