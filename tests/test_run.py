"""`selfcorrect run`: the decisions a user sees, end to end on real files (rules §4-§9.6, §16)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import copy_example, tree_digest
from tests.helpers import allow, example, load, prompt_body

COORDINATION = """\
# Coordination log (hand-kept header comment)
controller: cagents:tech-lead   # lead agent
status: in_progress

implementation_tasks:
  - task_id: WI-3
    name: "Guard the login handler"   # quoted on purpose
    files: [src/handler.ts]
    status: in_progress
  - task_id: T-9
    name: 'Parse the config'
    status: in_progress
# trailing comment block
# stays put
"""

SEED_APPROACHES = ["stack trace analysis", "null check addition", "input validation"]
SEED_ERROR = "TypeError: Cannot read property 'id' of undefined at handler.ts:45"


def failure(
    task: str, error: str, minute: int, approach: str | None = None, **extra: object
) -> dict:
    entry: dict = {
        "tool": "Edit",
        "error": error,
        "timestamp": f"2026-11-29T10:{minute:02d}:00Z",
        "task_id": task,
        "file_path": "src/handler.ts",
        "agent_id": "executor-1",
    }
    if approach:
        entry["approach"] = approach
    entry.update(extra)
    return entry


def write_log(folder: Path, entries: list[dict]) -> None:
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump({"failures": entries}, sort_keys=False)
    )


def make_folder(tmp_path: Path, entries: list[dict], report: str | None = None) -> Path:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(COORDINATION)
    write_log(folder, entries)
    if report is not None:
        (folder / "validation_report.yaml").write_text(report)
    return folder


def seed_entries() -> list[dict]:
    return [failure("WI-3", SEED_ERROR, i, a) for i, a in enumerate(SEED_APPROACHES)]


PAGE_AT_THE_LIMIT = "failure_types:\n  runtime_error:\n    at_limit: escalate\n"


def test_the_seed_example_reproduces_exactly(tmp_path: Path, run_line) -> None:
    # The rules §9.6 shape: a policy that pages a person once runtime errors spend their retries
    # (the default climbs the ladder first: the next test).
    folder = make_folder(tmp_path, seed_entries())
    (folder / "selfcorrect.yaml").write_text(PAGE_AT_THE_LIMIT)

    result = run_line(["run", folder])

    assert result.exit_code == 1, result.stdout + result.stderr
    items = load(folder / "coordination_log.yaml")["failed_items"]
    assert len(items) == 1
    entry = items[0]
    assert {
        k: entry[k]
        for k in (
            "task_id",
            "failure_type",
            "attempts",
            "error_summary",
            "recovery_actions_taken",
            "final_status",
        )
    } == {
        "task_id": "WI-3",
        "failure_type": "runtime_error",
        "attempts": 3,
        "error_summary": SEED_ERROR,
        "recovery_actions_taken": SEED_APPROACHES,
        "final_status": "blocked",
    }
    assert "3 failed attempts (limit 3)" in entry["escalation_context"]
    assert list(entry) == [
        "task_id",
        "failure_type",
        "attempts",
        "error_summary",
        "recovery_actions_taken",
        "final_status",
        "escalation_context",
    ]
    escalations = load(folder / "escalations.yaml")["escalations"]
    assert [(e["subject"], e["status"], e["failure_type"], e["attempts"]) for e in escalations] == [
        ("WI-3", "open", "runtime_error", 3)
    ]
    assert escalations[0]["tried"] == SEED_APPROACHES
    assert (
        len(escalations[0]["error_chain"]) == 3 and SEED_ERROR in escalations[0]["error_chain"][0]
    )
    assert "src/handler.ts" in escalations[0]["files"]
    assert "BLOCKED" in result.stdout and "WI-3" in result.stdout

    before = tree_digest(folder)
    again = run_line(["run", folder])
    assert again.exit_code == 1
    assert tree_digest(folder) == before  # a second run changes nothing, journal included
    assert "Nothing new to write." in again.stdout


def test_three_runtime_errors_get_the_ladder_not_a_person(tmp_path: Path, run_line) -> None:
    # Before revision 2 the third TypeError went straight to "3/3 blocked", with no prompt.
    folder = make_folder(tmp_path, seed_entries())

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout + result.stderr  # handed to an agent
    assert not (folder / "escalations.yaml").exists()
    (entry,) = load(folder / "coordination_log.yaml")["failed_items"]
    assert (entry["task_id"], entry["final_status"], entry["attempts"]) == ("WI-3", "recovering", 3)
    prompt = prompt_body(folder / "recovery" / "WI-3.md")
    assert prompt.startswith("STUCK RECOVERY for WI-3:")  # three of one TypeError: a signal
    assert "TRY: Step 1 — Re-read everything" in prompt


def test_comments_and_formatting_survive_except_failed_items(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries())
    run_line(["run", folder])
    text = (folder / "coordination_log.yaml").read_text()
    head, _, _ = text.partition("failed_items:\n")
    assert head == COORDINATION  # appended after the last byte, everything above untouched


def test_a_real_log_keeps_every_byte_outside_its_failed_items_block(corpus: Path, run_line) -> None:
    """The corpus log has failed_items in the middle, with human keys after it."""
    log = corpus / "coordination_log.yaml"
    original = log.read_text()
    before_block, _, rest = original.partition("failed_items:\n")
    after_block = rest[rest.index("architecture_question:") :]
    (corpus / "validation_report.yaml").unlink()  # keep this run about the failure log
    log.write_text(
        original.replace("status: in_progress\n", "status: in_progress   # keep me, said Ana\n", 1)
    )

    result = run_line(["run", corpus])

    assert result.exit_code in (1, 3), result.stderr
    text = log.read_text()
    assert text != original.replace(
        "status: in_progress\n", "status: in_progress   # keep me, said Ana\n", 1
    )
    new_before, _, new_rest = text.partition("failed_items:\n")
    assert new_before == before_block.replace(
        "status: in_progress\n", "status: in_progress   # keep me, said Ana\n", 1
    )
    assert new_rest[new_rest.index("architecture_question:") :] == after_block
    items = load(log)["failed_items"]
    assert [i["task_id"] for i in items[:2]] == ["WI-4", "WI-2"]  # human entries kept in place
    assert len({i["task_id"] for i in items}) == len(items)  # never duplicated


def test_syntax_errors_climb_the_ladder_one_round_at_a_time(tmp_path: Path, run_line) -> None:
    errors = [
        failure(
            "T-9",
            f"SyntaxError: Unexpected token '}}' in config.json at line {n}",
            n,
            f"approach {n}",
            file_path="config.json",
        )
        for n in range(1, 4)
    ]
    folder = make_folder(tmp_path, errors)

    first = run_line(["run", folder])
    assert first.exit_code == 3, first.stdout
    status, _, prompt = (folder / "recovery" / "T-9.md").read_text().partition("\n\n")
    assert status.startswith("STATUS: recovering — ")  # the item's one status comes first
    assert prompt.startswith("STUCK RECOVERY for T-9:\nPrevious 3 attempts failed.")
    assert "TRY: Step 1 — Re-read everything" in prompt

    same = run_line(["run", folder])  # nothing new in the log: still step 1, no new record
    assert same.exit_code == 3
    assert "TRY: Step 1 " in (folder / "recovery" / "T-9.md").read_text()

    names = [
        "Review the execution log",
        "Combine successes",
        "Try the opposite",
        "Radical simplification",
    ]
    for round_number, name in enumerate(names, start=2):
        errors.append(
            failure(
                "T-9",
                "SyntaxError: Unexpected token",
                10 + round_number,
                f"approach {10 + round_number}",
                file_path="config.json",
            )
        )
        write_log(folder, errors)
        result = run_line(["run", folder])
        assert result.exit_code == 3, (round_number, result.stdout)
        assert f"TRY: Step {round_number} — {name}" in (folder / "recovery" / "T-9.md").read_text()

    errors.append(
        failure("T-9", "SyntaxError: Unexpected token", 30, "approach 30", file_path="config.json")
    )
    write_log(folder, errors)
    sixth = run_line(["run", folder])
    assert sixth.exit_code == 1
    assert load(folder / "escalations.yaml")["escalations"][0]["subject"] == "T-9"
    item = load(folder / "coordination_log.yaml")["failed_items"][0]
    assert (item["task_id"], item["final_status"]) == ("T-9", "blocked")
    records = (folder / ".selfcorrect" / "journal.jsonl").read_text().splitlines()
    steps = [r["ladder_step"] for r in map(json.loads, records) if r["event"] == "subject"]
    assert steps == [1, 2, 3, 4, 5, 6]  # every round journaled once, none twice


def test_a_prompt_never_suggests_an_approach_already_tried(tmp_path: Path, run_line) -> None:
    errors = [
        failure("T-9", "SyntaxError: bad", n, approach, file_path="c.json")
        for n, approach in enumerate(["re-read the file", "review the log", "add a null check"])
    ]
    folder = make_folder(tmp_path, errors)
    run_line(["run", folder])
    prompt = (folder / "recovery" / "T-9.md").read_text()
    try_line = next(line for line in prompt.splitlines() if line.startswith("TRY:"))
    for approach in ("re-read the file", "review the log", "add a null check"):
        assert approach not in try_line
        assert approach in prompt.split("DO NOT repeat:", 1)[1].splitlines()[0]


REPORT_CIRCULAR = """\
classification: BLOCKED
confidence: 0.9
coordination_validation:
  circular_delegation_detected: true
issues_found:
  critical: []
"""


def test_circular_delegation_is_blocked_on_the_first_run(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, [], REPORT_CIRCULAR)
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    (issue,) = report["issues"]
    # The validator's own BLOCKED comes first (rules §5); the type would block it as well.
    assert (issue["type"], issue["classification"], issue["reason"]) == (
        "circular_delegation",
        "BLOCKED",
        "VALIDATOR_BLOCKED",
    )
    assert report["result"] == "BLOCKED"
    assert (
        load(folder / "escalations.yaml")["escalations"][0]["failure_type"] == "circular_delegation"
    )


def docs_report(issue_id: str, generated_at: str) -> str:
    return (
        f"status: FIXABLE\ngenerated_at: '{generated_at}'\nissues:\n"
        f"  - id: {issue_id}\n    type: missing_documentation\n    severity: MINOR\n"
        f"    description: docs/auth.md is missing\n    target: docs/auth.md\n"
    )


def test_spent_retries_stay_spent_when_the_validator_renumbers(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, [], docs_report("V-1", "2026-11-29T10:00:00Z"))

    first = run_line(["run", folder, "--format", "json"])
    assert first.exit_code == 3
    assert json.loads(first.stdout)["issues"][0]["classification"] == "FIXABLE"
    directive = next((folder / "recovery").glob("missing_documentation*.md")).read_text()
    assert "docs/auth.md is missing" in directive

    unchanged = run_line(["run", folder, "--format", "json"])  # same report: counts nothing
    # The directive is out (attempt 1 of 1); none is spent until a fresh report judges it.
    assert json.loads(unchanged.stdout)["issues"][0]["attempts"] == 0
    assert unchanged.exit_code == 3

    (folder / "validation_report.yaml").write_text(docs_report("V-7", "2026-11-29T11:00:00Z"))
    fresh = run_line(["run", folder, "--format", "json"])
    issue = json.loads(fresh.stdout)["issues"][0]
    # Renumbered, it is the same issue: its one attempt stays spent, and its task takes the
    # recovery ladder (a fresh budget would have said FIXABLE with attempt 1 of 1 again).
    assert (issue["id"], issue["classification"], issue["reason"], issue["attempts"]) == (
        "V-7",
        "FIXABLE",
        "LADDER",
        1,
    )
    assert issue["ladder_step"] == 1
    assert fresh.exit_code == 3


def test_an_external_dependency_is_skipped_and_the_run_goes_on(tmp_path: Path, run_line) -> None:
    folder = make_folder(
        tmp_path,
        [failure("WI-4", "connect ECONNREFUSED 127.0.0.1:5432", 1)],
        "status: PASS\nissues: []\n",
    )
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code == 0  # skipped, logged, and nothing else is wrong
    subject = json.loads(result.stdout)["subjects"][0]
    assert (subject["failure_type"], subject["status"]) == ("external_dependency", "skipped")
    item = load(folder / "coordination_log.yaml")["failed_items"][0]
    assert (item["task_id"], item["final_status"]) == ("WI-4", "skipped")
    assert not (folder / "escalations.yaml").exists()


def test_paging_reads_are_never_counted(tmp_path: Path, run_line) -> None:
    reads = [
        {
            "tool": "Read",
            "error": "File content (25040 tokens) exceeds maximum allowed tokens (25000)",
            "timestamp": f"2026-11-29T10:{n:02d}:00Z",
            "file_path": "package-lock.json",
            "read_only": True,
        }
        for n in range(12)
    ]
    folder = make_folder(tmp_path, reads, "status: PASS\nissues: []\n")
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code == 0
    (subject,) = json.loads(result.stdout)["subjects"]
    assert (subject["status"], subject["attempts"], subject["signals"]) == ("recovered", 0, [])


def test_input_error_stops_the_run_before_any_write(tmp_path: Path, run_line) -> None:
    folder = make_folder(tmp_path, seed_entries(), "status: PASS\nissues: [\n")
    before = tree_digest(tmp_path)
    result = run_line(["run", folder])
    assert result.exit_code == 2
    assert "validation_report.yaml:" in result.stderr
    assert tree_digest(tmp_path) == before


def test_shadow_on_the_real_session_writes_nothing_and_lists_every_subject(
    corpus: Path, run_line
) -> None:
    before = tree_digest(corpus.parent)
    result = run_line(["run", corpus, "--shadow", "--format", "json"])
    assert result.exit_code in (0, 1, 3), result.stderr
    assert tree_digest(corpus.parent) == before
    report = json.loads(result.stdout)
    assert report["shadow"] is True and report["written"] == []
    subjects = {s["subject"]: s for s in report["subjects"]}
    assert "/home/dev/webapp/package-lock.json" in subjects
    assert subjects["/home/dev/webapp/package-lock.json"]["failure_type"] == "resource_exhaustion"
    assert all(s["failure_type"] for s in report["subjects"])
    # a tool-only subject is one per failure type and agent: a skipped outage hides no TypeError
    lead = " · 3f9c2a71-8d4e-4b6a-9e21-7c5d0f1a2b34"
    assert {f"WebFetch · external_dependency{lead}", f"Grep · external_dependency{lead}"} <= set(
        subjects
    )
    assert {
        f"Bash · {kind}{lead}" for kind in ("runtime_error", "timeout", "external_dependency")
    } <= set(subjects)
    assert "Bash" not in subjects


def test_a_user_template_overrides_the_shipped_one(tmp_path: Path, run_line) -> None:
    errors = [failure("T-9", "SyntaxError: x", n, f"a{n}") for n in range(3)]
    folder = make_folder(tmp_path, errors)
    (folder / "templates").mkdir()
    (folder / "templates" / "stuck_recovery.md.j2").write_text(
        "OURS {{ work_item_id }} step {{ next_step.step }}\n"
    )
    allow(folder)  # the person's override
    run_line(["run", folder])
    status, _, ours = (folder / "recovery" / "T-9.md").read_text().partition("\n\n")
    assert status.startswith("STATUS: recovering") and ours == "OURS T-9 step 1\n"


def test_status_shows_attempts_ladder_step_and_last_decision(tmp_path: Path, run_line) -> None:
    errors = [failure("T-9", "SyntaxError: x", n, f"a{n}") for n in range(3)]
    folder = make_folder(tmp_path, errors)
    run_line(["run", folder])
    before = tree_digest(folder)
    result = run_line(["status", folder, "--format", "json"])
    assert result.exit_code == 3  # PENDING, as a run would be (status exits like run)
    assert tree_digest(folder) == before
    (subject,) = [s for s in json.loads(result.stdout)["subjects"] if s["subject"] == "T-9"]
    assert subject["ladder_step"] == 1
    assert subject["last_decision"]["reason"] == "STUCK_FIRST_DETECTION"
    text = run_line(["status", folder]).stdout
    assert (
        "T-9  syntax_error  recovering  attempts 3, no limit; ladder step 1; last decision "
        "STUCK_FIRST_DETECTION" in text
    )


def test_an_issue_gone_from_a_fresh_report_is_marked_recovered(tmp_path: Path, run_line) -> None:
    report = docs_report("V-1", "2026-11-29T10:00:00Z") + "    task_id: T-9\n"  # a task's issue
    folder = make_folder(tmp_path, [], report)
    run_line(["run", folder])
    item = load(folder / "coordination_log.yaml")["failed_items"][0]
    assert (item["final_status"], item["error_summary"]) == (
        "pending",  # handed to the agents: waiting for their work and a fresh report
        "docs/auth.md is missing",
    )

    (folder / "validation_report.yaml").write_text(
        "status: PASS\ngenerated_at: '2026-11-29T12:00:00Z'\nissues: []\n"
    )
    result = run_line(["run", folder])

    assert result.exit_code == 0, result.stdout
    item = load(folder / "coordination_log.yaml")["failed_items"][0]
    assert item["final_status"] == "recovered"
    assert item["error_summary"] == "docs/auth.md is missing"  # the history stays
    assert run_line(["run", folder]).exit_code == 0


def test_a_stuck_subject_that_succeeds_is_marked_recovered(tmp_path: Path, run_line) -> None:
    errors = [failure("T-9", "SyntaxError: x", n, f"a{n}") for n in range(3)]
    folder = make_folder(tmp_path, errors, "status: PASS\nissues: []\n")
    assert run_line(["run", folder]).exit_code == 3
    errors.append(
        {
            "tool": "Edit",
            "error": "",
            "timestamp": "2026-11-29T11:00:00Z",
            "task_id": "T-9",
            "outcome": "success",
        }
    )
    write_log(folder, errors)
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code == 0
    subject = json.loads(result.stdout)["subjects"][0]
    assert (subject["status"], subject["attempts"]) == ("recovered", 0)
    item = load(folder / "coordination_log.yaml")["failed_items"][0]
    assert (item["final_status"], item["attempts"]) == ("recovered", 3)


def test_the_shipped_example_runs_as_the_readme_says(tmp_path: Path, run_line) -> None:

    folder = tmp_path / "workflow"
    copy_example(folder)
    result = run_line(["run", folder, "--format", "json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    states = {s["subject"]: (s["failure_type"], s["status"]) for s in report["subjects"]}
    assert states["WI-3"] == ("runtime_error", "blocked")
    assert states["WI-4"] == ("external_dependency", "skipped")
    assert states["package-lock.json"][1] == "recovered"  # a paging read, never counted
    assert [i["classification"] for i in report["issues"]] == ["FIXABLE"] * 4
    assert [i["type"] for i in report["issues"]][2] == "missing_documentation"  # by pattern
    names = sorted(p.name for p in (folder / "recovery").iterdir())
    assert names == sorted(report["plan"]["recovery_files"]) == ["WI-3.md", "WI-4.md"]
    text = run_line(["run", folder]).stdout
    assert text.startswith("BLOCKED  selfcorrect run")
    assert "Nothing new to write." in text


def test_a_pass_is_not_taken_on_trust(tmp_path: Path, run_line) -> None:
    """rules §2.2: cited evidence of a PASS is re-checked against the project."""
    report = (
        "classification: PASS\noverall_confidence: 0.9\nissues: []\n"
        "acceptance_criteria_results:\n"
        "  - criterion: Migration created\n    met: true\n    verification_method: file_exists\n"
        "    evidence: migrations/001_tokens.sql\n"
        "  - criterion: Handler guarded\n    met: true\n    verification_method: file_contains\n"
        "    evidence: 'src/handler.ts:2 - if (!req.user)'\n"
    )
    folder = make_folder(tmp_path, [], report)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "handler.ts").write_text(
        "export function h(req) {\n  if (!req.user) return 401;\n}\n"
    )
    result = run_line(["run", folder, "--format", "json"])
    issues = json.loads(result.stdout)["issues"]
    assert [(i["type"], i["target"]) for i in issues] == [
        ("acceptance_criterion_unmet", "migrations/001_tokens.sql")
    ]
    assert result.exit_code == 3  # handed to an agent, not PASS

    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "001_tokens.sql").write_text("create table tokens ();\n")
    assert run_line(["run", folder]).exit_code == 0


def test_touching_or_copying_the_report_spends_no_attempt(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    run_line(["run", folder])
    report = folder / "validation_report.yaml"
    text = report.read_text()
    report.unlink()
    report.write_text(text)  # a new inode and mtime, the same content (git checkout, cp)
    before = tree_digest(folder)
    result = run_line(["run", folder, "--format", "json"])
    assert tree_digest(folder) == before  # seen again: counts nothing, writes nothing
    # Nothing spent: the copy is the same report seen again (JSON attempts count spent ones).
    assert {i["attempts"] for i in json.loads(result.stdout)["issues"]} == {0}


def test_a_second_run_on_the_real_session_writes_nothing(corpus: Path, run_line) -> None:
    run_line(["run", corpus])
    before = tree_digest(corpus.parent)
    assert "Nothing new to write." in run_line(["run", corpus]).stdout
    assert tree_digest(corpus.parent) == before
