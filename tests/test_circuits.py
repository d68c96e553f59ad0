"""Circuit breakers (rules §10): a rule that keeps failing stops itself until a person says go.

The pure fold is table-tested on journal records stamped by a fake clock; the acceptance path
runs real fixers on a real git repository, with the clock injected and no sleeps.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from selfcorrect.commands.run import correction_run
from selfcorrect.core.circuits import CircuitReason, fold_circuits
from selfcorrect.io.policy_file import load_policy
from tests.conftest import tree_digest
from tests.helpers import fixable_report, git, journal, load, project, records

RULE, VERSION = "issue_type:linting_errors", "v1"
T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
POLICY = load_policy(None)


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def failed_verification(seconds: float, **extra: object) -> dict:
    return {
        "event": "transition",
        "from": "verifying",
        "to": "compensating",
        "rule": RULE,
        "rule_version": VERSION,
        "at": at(seconds),
        **extra,
    }


def trips(records: list[dict]) -> list[CircuitReason]:
    return [t.reason for t in fold_circuits(records).trips(POLICY)]


@pytest.mark.parametrize(
    ("gap", "opens"), [(0, True), (599, True), (600, True), (601, False), (3600, False)]
)
def test_two_failed_verifications_open_only_within_the_window(gap: int, opens: bool) -> None:
    records = [failed_verification(0), failed_verification(gap)]
    assert (CircuitReason.VERIFICATION_FAILURES in trips(records)) is opens


def test_one_failed_compensation_opens_at_once() -> None:
    records = [
        {
            "event": "transition",
            "from": "compensating",
            "to": "circuit_open",
            "rule": RULE,
            "rule_version": VERSION,
            "at": at(0),
        }
    ]
    assert trips(records) == [CircuitReason.COMPENSATION_FAILED]


def test_the_same_target_three_times_in_one_run_opens() -> None:
    def remediating(run: str) -> dict:
        return {
            "event": "transition",
            "from": "preflight",
            "to": "remediating",
            "fingerprint": "linting_errors@a.py",
            "rule": RULE,
            "rule_version": VERSION,
            "run": run,
            "at": at(0),
        }

    assert trips([remediating("r1"), remediating("r1")]) == []
    assert trips([remediating("r1"), remediating("r2"), remediating("r3")]) == []
    assert trips([remediating("r1")] * 3) == [CircuitReason.TARGET_RECURRENCE]


def issue(status: str, attempt: int = 1, confidence: float = 1.0, **extra: object) -> dict:
    return {
        "event": "issue",
        "status": status,
        "attempt": attempt,
        "rule": RULE,
        "rule_version": VERSION,
        "evidence": {"confidence": confidence},
        "at": at(0),
        **extra,
    }


def fix(status: str, target: str, attempt: int = 1, **extra: object) -> dict:
    """An issue record of `linting_errors@target`: a fix of ours handed out (`remediating`),
    an agent's directive, or a report's verdict on either."""
    return issue(status, attempt, fingerprint=f"linting_errors@{target}", **extra)


def test_a_failure_rate_over_the_limit_opens_with_the_fixes_that_failed() -> None:
    # 5 judged fixes (circuit.min_calls), 3 failed: 0.6 > max_failure_rate 0.5.
    handed = [fix("remediating", t) for t in "abcde"]
    judged = [*handed, fix("resolved", "a"), fix("resolved", "b")]
    judged += [fix("remediating", t, attempt=2, at=at(60)) for t in "cde"]
    (trip,) = fold_circuits(judged).trips(POLICY)
    assert trip.reason is CircuitReason.FAILURE_RATE
    assert "3 of its last 5 fixes failed (rate 0.60), over circuit.max_failure_rate 0.5" in (
        trip.detail
    )
    assert [(f.fingerprint, f.attempt, f.at) for f in trip.evidence] == [
        (f"linting_errors@{t}", 1, at(60)) for t in "cde"
    ]
    assert trips(judged[:5] + judged[6:]) == []  # 4 judged fixes: too few to judge a rate
    assert trips([*handed, *(fix("resolved", t) for t in "abc"), *judged[-2:]]) == []


def test_an_agent_failing_to_fix_its_issues_never_trips_the_rules_circuit() -> None:
    """Seen: the first agent attempts of several tasks failing (a fresh report still
    carrying each issue) opened acceptance_criterion_unmet's circuit for every task. Those
    are the agents' attempts: the issue's budget and the task's ladder count them."""
    tasks = [f"WI-{n}" for n in range(6)]
    handed = [fix("directive", t) for t in tasks]
    failed = [fix("directive", t, attempt=2) for t in tasks]
    spent = [fix("blocked", t, attempt=2, reason="MAXIMUM_ATTEMPTS_REACHED") for t in tasks]
    assert trips([*handed, *failed, *spent]) == []
    # The same rule's own fixes still count: an agent's directive, then our fixes failing.
    ours = [fix("remediating", t, attempt=3) for t in tasks]
    again = [fix("remediating", t, attempt=4) for t in tasks]
    assert trips([*handed, *failed, *ours, *again]) == [CircuitReason.FAILURE_RATE]


def test_confidence_drift_below_min_confidence_opens() -> None:
    drifting = [issue("directive", confidence=0.55)] * 5
    assert trips(drifting) == [CircuitReason.CONFIDENCE_DRIFT]
    steady = [issue("directive", confidence=0.9)] * 4 + [issue("directive", confidence=0.5)]
    assert trips(steady) == []


def test_only_a_reset_closes_a_circuit_and_spends_the_old_evidence() -> None:
    records = [
        failed_verification(0),
        failed_verification(10),
        {"event": "circuit", "status": "open", "rule": RULE, "rule_version": VERSION},
    ]
    board = fold_circuits(records)
    assert board.is_open(RULE, VERSION) and board.trips(POLICY) == []
    # A year later it is still open: elapsed time never closes a circuit.
    assert fold_circuits([*records, issue("resolved", at=at(3.2e7))]).is_open(RULE, VERSION)
    reset = {"event": "reset", "rules": ["linting_errors"], "evidence": "fixed the fixer"}
    after = fold_circuits([*records, reset])
    assert not after.is_open(RULE, VERSION)
    assert after.trips(POLICY) == []  # the failures before the reset do not reopen it
    assert after.epoch(RULE, VERSION) == 1
    again = fold_circuits([*records, reset, failed_verification(20), failed_verification(30)])
    assert [t.reason for t in again.trips(POLICY)] == [CircuitReason.VERIFICATION_FAILURES]


# --- The acceptance path: real fixers, a real repository, an injected clock ---------------

# Each lint issue's fixer strays outside its scope, so its verification fails and it is undone.
STRAY_FIXER = """
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text("x = 1\\n")
pathlib.Path("stray.py").write_text("written outside the fix's scope\\n")
"""
GOOD_FIXER = """
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text("x = 1\\n")
"""
# Reports one lint issue per file listed in lint.txt that still contains "import os".
VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
issues = [{"id": f"L{n}", "type": "linting_errors", "severity": "MAJOR",
           "description": "F401 unused import", "target": name}
          for n, name in enumerate(pathlib.Path("lint.txt").read_text().split())
          if "import os" in pathlib.Path(name).read_text()]
(folder / "validation_report.yaml").write_text(
    json.dumps({"status": "FIXABLE" if issues else "PASS", "issues": issues}))
"""
LINT_POLICY = f"""
issue_types:
  linting_errors:
    retries: 1
    fix:
      command: [{sys.executable}, fixer.py, "{{target}}"]
"""


class Clock:
    """A fake clock: set `now` to move it."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def lint_project(tmp_path: Path, files: list[str]) -> Path:
    repo = project(tmp_path, VALIDATOR, LINT_POLICY)
    for name in files:
        (repo / name).write_text("import os\n")
    (repo / "lint.txt").write_text(" ".join(files))
    (repo / "fixer.py").write_text(STRAY_FIXER)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "lint")
    return repo


def issues_by_target(outcome) -> dict[str, tuple[str, str]]:
    return {
        d.issue.target: (d.classification.value, d.reason.value) for d in outcome.decisions.issues
    }


def run(repo: Path, clock: Clock, **options: object):
    return correction_run(repo / "workflow", clock=clock, validate_first=True, **options)


def test_a_fixer_failing_twice_opens_its_circuit_until_a_reset(tmp_path: Path, run_line) -> None:
    repo = lint_project(tmp_path, ["a.py", "b.py", "c.py"])
    clock = Clock()

    first = run(repo, clock)

    decided = issues_by_target(first)
    assert decided["a.py"] == ("BLOCKED", "FIX_FAILED")
    assert decided["b.py"] == ("BLOCKED", "FIX_FAILED")
    # Two failed verifications within the window: the third fix never starts.
    assert decided["c.py"] == ("BLOCKED", "CIRCUIT_OPEN")
    assert (repo / "c.py").read_text() == "import os\n"
    assert not (repo / "stray.py").exists()  # both strays were undone
    records = journal(repo)
    (opened,) = [r for r in records if r["event"] == "circuit"]
    assert (opened["rule"], opened["reason"]) == (
        "issue_type:linting_errors",
        "VERIFICATION_FAILURES",
    )
    escalated = (repo / "workflow" / "escalations.yaml").read_text()
    assert "kind: circuit" in escalated and opened["escalation"] in escalated
    assert first.plan.result.value == "BLOCKED"

    # A restart, an hour later, with a new lint issue: the circuit is still open.
    (repo / "d.py").write_text("import os\n")
    (repo / "lint.txt").write_text("a.py b.py c.py d.py")
    clock.now += timedelta(hours=1)
    second = run(repo, clock)
    assert issues_by_target(second)["d.py"] == ("BLOCKED", "CIRCUIT_OPEN")
    assert (repo / "d.py").read_text() == "import os\n"
    assert sum(r["event"] == "circuit" for r in journal(repo)) == 1  # opened once

    # No evidence, no reset.
    assert run_line(["reset", repo / "workflow", "--rule", "linting_errors"]).exit_code == 2
    assert not any(r["event"] == "reset" for r in journal(repo))
    result = run_line(
        [
            "reset",
            repo / "workflow",
            "--rule",
            "linting_errors",
            "--evidence",
            "fixer.py no longer writes stray.py",
            "--actor",
            "ana",
        ]
    )
    assert result.exit_code == 0, result.stderr
    assert "status: resolved" in (repo / "workflow" / "escalations.yaml").read_text()

    (repo / "fixer.py").write_text(GOOD_FIXER)  # what the person fixed
    third = run(repo, clock)
    decided = issues_by_target(third)
    assert "c.py" not in decided and "d.py" not in decided  # fixed, and gone from the report
    assert (repo / "c.py").read_text() == (repo / "d.py").read_text() == "x = 1\n"
    # a.py and b.py stay blocked: their own fixes failed, which a rule reset does not undo.
    assert decided["a.py"] == ("BLOCKED", "FIX_FAILED")


@pytest.mark.parametrize(("minutes", "opens"), [(5, True), (11, False)])
def test_the_window_is_measured_on_the_injected_clock(
    tmp_path: Path, minutes: int, opens: bool
) -> None:
    repo = lint_project(tmp_path, ["a.py"])
    clock = Clock()
    run(repo, clock)  # a.py's fix fails verification at T0
    (repo / "b.py").write_text("import os\n")
    (repo / "lint.txt").write_text("a.py b.py")
    clock.now += timedelta(minutes=minutes)
    run(repo, clock)  # b.py's fix fails `minutes` later
    opened = [r for r in journal(repo) if r["event"] == "circuit"]
    assert bool(opened) is opens
    (repo / "c.py").write_text("import os\n")
    (repo / "lint.txt").write_text("a.py b.py c.py")
    clock.now += timedelta(minutes=minutes)
    third = run(repo, clock)
    # Open: c.py is never fixed. Closed: c.py's fix runs (and fails, like the others).
    expected = ("BLOCKED", "CIRCUIT_OPEN") if opens else ("BLOCKED", "FIX_FAILED")
    assert issues_by_target(third)["c.py"] == expected


def test_circuit_open_is_in_the_json_of_a_run(tmp_path: Path, run_line) -> None:
    repo = lint_project(tmp_path, ["a.py", "b.py", "c.py"])
    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    reasons = {i["reason"] for i in out["issues"]}
    assert "CIRCUIT_OPEN" in reasons
    assert any(e["reason"].startswith("circuit open") for e in out["escalations"])


def test_status_lists_the_open_circuit_until_it_is_reset(tmp_path: Path, run_line) -> None:
    repo = lint_project(tmp_path, ["a.py", "b.py", "c.py"])
    run(repo, Clock())
    result = run_line(["status", repo / "workflow", "--format", "json"])
    (circuit,) = json.loads(result.stdout)["open_circuits"]
    assert (circuit["rule"], circuit["reason"]) == (RULE, "VERIFICATION_FAILURES")
    assert "Open circuits" in run_line(["status", repo / "workflow"]).stdout
    reset = ["reset", repo / "workflow", "--rule", RULE, "--evidence", "fixer repaired"]
    assert run_line(reset).exit_code == 0
    assert (
        json.loads(run_line(["status", repo / "workflow", "--format", "json"]).stdout)[
            "open_circuits"
        ]
        == []
    )


def test_confidence_drift_opens_the_circuit_through_real_runs(tmp_path: Path, run_line) -> None:
    """A person's loose pattern types validator prose with confidence 0.5: each guess is
    below min_confidence, and their mean opens the rule's circuit, so even a properly
    typed issue of that rule waits for a person (rules §10, issue 10)."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "selfcorrect.yaml").write_text(
        "issue_types:\n  missing_documentation:\n    patterns:\n"
        "      - {regex: 'could use (more )?words', confidence: 0.5}\n"
    )
    parts = ("the intro", "the API section", "the glossary", "the FAQ", "the changelog")
    prose = [
        {"id": f"P{n}", "severity": "MINOR", "description": f"{part} could use more words"}
        for n, part in enumerate(parts)
    ]
    report = folder / "validation_report.yaml"
    report.write_text(json.dumps({"status": "FIXABLE", "issues": prose}))
    first = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
    # Five guesses below min_confidence open the circuit in the run that makes them; the
    # guesses themselves are then blocked by it (rules §5 puts the circuit before the confidence).
    assert {i["reason"] for i in first["issues"]} == {"CIRCUIT_OPEN"}
    assert [r["reason"] for r in journal(folder.parent) if r["event"] == "circuit"] == [
        "CONFIDENCE_DRIFT"
    ]

    typed = {
        "id": "D1",
        "type": "missing_documentation",
        "severity": "MINOR",
        "description": "docs/api.md is missing",
        "target": "docs/api.md",
    }
    report.write_text(json.dumps({"status": "FIXABLE", "issues": [*prose, typed]}))
    second = json.loads(run_line(["run", folder, "--format", "json"]).stdout)

    (opened,) = [r for r in journal(folder.parent) if r["event"] == "circuit"]
    assert opened["reason"] == "CONFIDENCE_DRIFT"
    assert opened["rule"] == "issue_type:missing_documentation"
    decided = {i["id"]: i["reason"] for i in second["issues"]}
    assert decided["D1"] == "CIRCUIT_OPEN"
    assert any(e["kind"] == "circuit" for e in second["escalations"])


def test_confidence_drift_opens_in_the_run_that_records_it(tmp_path: Path, run_line) -> None:
    """The circuit used to open one run late, so a second run over unchanged inputs wrote."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "selfcorrect.yaml").write_text(
        "issue_types:\n  missing_documentation:\n    patterns:\n"
        "      - {regex: 'could use (more )?words', confidence: 0.5}\n"
    )
    parts = ("the intro", "the API section", "the glossary", "the FAQ", "the changelog")
    fixable_report(
        folder,
        *(
            {"id": f"P{n}", "severity": "MINOR", "description": f"{part} could use more words"}
            for n, part in enumerate(parts)
        ),
    )
    first = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
    assert [r["reason"] for r in records(folder) if r["event"] == "circuit"] == ["CONFIDENCE_DRIFT"]
    assert any(e["kind"] == "circuit" for e in first["escalations"])
    before = tree_digest(folder)
    second = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
    assert tree_digest(folder) == before
    assert any(e["kind"] == "circuit" for e in second["escalations"])  # still listed


def test_a_circuits_escalation_carries_the_fixes_that_opened_it(tmp_path: Path) -> None:
    """A person read `error_chain: [FAILURE_RATE]`, `tried: []`, `attempts: 0`: nothing said
    which fixes failed, when or why."""
    repo = lint_project(tmp_path, ["a.py", "b.py", "c.py"])
    run(repo, Clock())
    listed = load(repo / "workflow" / "escalations.yaml")["escalations"]
    (circuit,) = [e for e in listed if e["kind"] == "circuit"]
    assert circuit["attempts"] == 2
    detail, *fixes = circuit["error_chain"]
    assert detail == "verification failed 2 times within 600 s"
    assert [f.split(" ", 1)[1].split(":", 1)[0] for f in fixes] == [
        "linting_errors@a.py (fix attempt 1)",
        "linting_errors@b.py (fix attempt 1)",
    ]
    assert all("verification failed: " in f and "stray.py" in f for f in fixes), fixes
    assert circuit["tried"] == ["fix of linting_errors@a.py", "fix of linting_errors@b.py"]
    assert circuit["files"] == ["a.py", "b.py"]
    (opened,) = [r for r in journal(repo) if r["event"] == "circuit"]
    assert [e["fingerprint"] for e in opened["evidence"]] == [
        "linting_errors@a.py",
        "linting_errors@b.py",
    ]


def test_agents_failing_their_first_attempts_leave_the_rule_on(tmp_path: Path, run_line) -> None:
    """Seen: the first agent attempts of several tasks failing disabled
    acceptance_criterion_unmet for every task. An agent's attempt is the agent's."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    tasks = [f"WI-{n}" for n in range(6)]
    unmet = [
        {
            "id": f"V-{n}",
            "type": "acceptance_criterion_unmet",
            "severity": "MAJOR",
            "description": f"{task}'s handler still crashes on a missing user",
            "task_id": task,
            "estimated_minutes": 10,
        }
        for n, task in enumerate(tasks)
    ]
    fixable_report(folder, *unmet)
    assert run_line(["run", folder]).exit_code == 3  # six directives out, attempt 1
    # The agents had their turn; the validator's next report still carries every issue.
    (folder / "validation_report.yaml").write_text(
        json.dumps({"status": "FIXABLE", "generated_at": "2026-12-03T10:00:00Z", "issues": unmet})
    )
    out = json.loads(run_line(["run", folder, "--format", "json"]).stdout)
    assert not [r for r in records(folder) if r["event"] == "circuit"]
    assert not [e for e in out["escalations"] if e["kind"] == "circuit"]
    assert {i["reason"] for i in out["issues"]} == {"FIXABLE"}
    assert {i["attempts"] for i in out["issues"]} == {1}  # the second attempt is out


def test_a_prompt_cites_only_open_escalations_after_a_reset_under_an_open_circuit(
    tmp_path: Path, run_line
) -> None:
    """Reproduction 4 of the one-decision work: c.py's issue is blocked because its rule's
    circuit is open; a person resets c.py's escalation (not the circuit), so it is blocked again
    at once, for the same reason, under a new escalation. Its prompt, the JSON and gate.json
    cite only escalations open in escalations.yaml, never the one just resolved."""
    repo = lint_project(tmp_path, ["a.py", "b.py", "c.py"])
    clock = Clock()
    first = run(repo, clock)
    assert issues_by_target(first)["c.py"] == ("BLOCKED", "CIRCUIT_OPEN")
    folder = repo / "workflow"

    def c_escalations() -> list[dict]:
        entries = load(folder / "escalations.yaml")["escalations"]
        return [e for e in entries if "c.py" in str(e.get("fingerprint") or "")]

    (before,) = c_escalations()
    reset = ["reset", folder, "--escalation", before["id"], "--evidence", "looked at c.py"]
    assert run_line(reset).exit_code == 0
    clock.now += timedelta(minutes=1)
    result = run_line(["run", folder, "--format", "json"])
    opened = {
        e["id"] for e in load(folder / "escalations.yaml")["escalations"] if e["status"] == "open"
    }
    assert before["id"] not in opened
    (issue,) = [i for i in json.loads(result.stdout)["issues"] if i["target"] == "c.py"]
    assert issue["status"] == "blocked" and issue["escalation"] in opened
    prompt = next(p for p in (folder / "recovery").glob("*.md") if "c.py" in p.read_text())
    cited = {w.strip(".,;:()") for w in prompt.read_text().split() if w.startswith("ESC-")}
    assert cited and cited <= opened, (cited, opened)
    gate = json.loads((folder / ".selfcorrect" / "gate.json").read_text())
    assert {owner["escalation"] for owner in gate["blocked"].values()} <= opened
