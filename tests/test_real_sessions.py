"""Real sessions, read and decided right (issue 28; docs/rules.md §2, §2.2, §5, §6, §7).

The inputs are the replay corpus's cases from cAgents (tests/replay/*/README.md and the header
of each file say where each came from): cAgents' own fixtures verbatim, and reports and logs
built as cAgents' agent definitions and hooks write them. Each test copies what it needs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from msgspec.structs import replace

from selfcorrect.core.issue_owners import owned
from selfcorrect.core.ledger import Ledger, subject_of
from selfcorrect.core.model import Failure, Issue, Outcome, Severity, Task, Verdict
from selfcorrect.core.normalise import normalise_coordination, normalise_report
from selfcorrect.core.probes import Probes, command_words
from selfcorrect.core.taxonomy import Taxonomy, normalise_error
from selfcorrect.errors import InputError
from selfcorrect.io import documents
from selfcorrect.io.workflow_inputs import load_inputs
from selfcorrect.io.workspace import resolve_inside
from tests.conftest import REPO
from tests.helpers import policy_with
from tests.test_hooks import failure, hook, project  # noqa: F401  (project: a fixture)

CORPUS = REPO / "tests" / "replay"
# The cases issue 28 added, each a valid input that must read (check exits 0).
REAL = (
    "cagents-act-sample",
    "cagents-team-mode",
    "recheck-two-failures",
    "debug-mode-severities",
    "debug-mode-blocked",
    "dialect-b-blocked",
    "canonical-blocked-bare",
    "safety-net-stub",
    "safety-net-stub-in-progress",
    "issue-of-skipped-task",
    "exploration-probes",
    "real-typing",
)


def case(tmp_path: Path, name: str) -> Path:
    """A private copy of a corpus case, without its labels (a workflow folder as agents left it)."""
    target = tmp_path / name / "workflow"
    shutil.copytree(CORPUS / name, target, ignore=shutil.ignore_patterns("expected.yaml"))
    return target


# --------------------------------------------------------------------------- reading (§2)


@pytest.mark.parametrize("name", REAL)
def test_every_real_input_is_read(name: str, tmp_path: Path, run_line) -> None:
    folder = case(tmp_path, name)

    result = run_line(["check", folder])

    assert result.exit_code == 0, result.stdout + result.stderr
    assert " 0 errors" in result.stdout + result.stderr


def test_a_duplicate_key_in_a_report_is_a_positioned_warning_and_the_last_value_wins(
    tmp_path: Path, run_line
) -> None:
    folder = case(tmp_path, "recheck-two-failures")

    result = run_line(["check", folder])
    report = load_inputs(folder).report

    out = result.stdout + result.stderr
    assert result.exit_code == 0
    assert "validation_report.yaml:39:7: warning: duplicate key 'reason' (first at line 38" in out
    assert report is not None
    unmet = [i.description for i in report.issues if i.type == "acceptance_criterion_unmet"]
    # PyYAML's reading: the second item holds the last `reason`; the first has none.
    assert unmet == [
        "Acceptance criterion not met: Migration for refresh_tokens table created "
        "(evidence: migrations/20261202_add_refresh_tokens.sql)",
        "Acceptance criterion not met: Unit tests pass (evidence: tests pass; recheck: "
        "test_result: evidence lacks captured output (no count/exit-code/runner name): "
        '"tests pass")',
    ]


def test_other_decision_documents_stay_strict_about_duplicate_keys(tmp_path: Path) -> None:
    log = tmp_path / "coordination_log.yaml"
    log.write_text("controller: lead\nstatus: done\nstatus: in_progress\n", encoding="utf-8")

    with pytest.raises(InputError) as raised:
        documents.load_decision(log, "coordination_log")

    (problem,) = raised.value.diagnostics
    assert (problem.line, problem.col, problem.severity) == (3, 1, "error")
    assert "duplicate key 'status'" in problem.message


def test_tasks_keyed_id_and_title_read_as_task_id_and_name() -> None:
    data = documents.load_decision(
        CORPUS / "cagents-act-sample" / "coordination_log.yaml", "coordination_log"
    ).data

    tasks = normalise_coordination(data).tasks

    assert [(t.task_id, t.name) for t in tasks] == [
        ("CT-1", "Implement JWT auth middleware"),
        ("CT-2", "Implement role guards"),
        ("CT-3", "Write test suite"),
    ]
    assert tasks[0].acceptance_criteria == (
        "Middleware validates tokens and attaches user to request",
    )


def test_team_mode_evidence_mappings_read_as_text() -> None:
    data = documents.load_decision(
        CORPUS / "cagents-team-mode" / "coordination_log.yaml", "coordination_log"
    ).data

    (item,) = normalise_coordination(data).work_item_status

    assert (item.id, item.status, item.evidence) == ("TASK-01", "completed", "User model exists")


def test_severities_in_any_case_and_with_synonyms() -> None:
    folder = CORPUS / "debug-mode-severities"
    data = documents.load_decision(folder / "validation_report.yaml", "validation_report").data

    report = normalise_report(data)

    by_id = {issue.id: issue.severity for issue in report.issues if issue.id}
    assert by_id == {
        "D-1": Severity.MAJOR,  # HIGH
        "D-2": Severity.MAJOR,  # medium
        "D-3": Severity.MINOR,  # Low
        "D-4": Severity.MINOR,  # INFO
    }


# --------------------------------------------------------------------------- stub PASS (§2.2)


@pytest.mark.parametrize("name", ["safety-net-stub", "safety-net-stub-in-progress"])
def test_the_safety_net_stub_is_no_pass(name: str, tmp_path: Path, run_line) -> None:
    folder = case(tmp_path, name)

    result = run_line(["run", folder, "--format", "json"])

    assert result.exit_code == 3, result.stdout  # PENDING, never PASS (0)
    data = json.loads(result.stdout)
    assert data["result"] == "PENDING"
    assert "the report is a stub, uncertain (written by verify-completion-hook-safety-net" in (
        json.dumps(data["why"])
    )


def test_a_stub_writer_the_policy_names_is_no_verdict(tmp_path: Path) -> None:
    raw = {"status": "PASS", "validator": "ci-placeholder", "issues": []}

    assert normalise_report(raw).verdict is Verdict.PASS
    stubbed = normalise_report(raw, frozenset({"ci-placeholder"}))
    assert stubbed.verdict is Verdict.NONE
    assert stubbed.stub == "written by ci-placeholder: no validator ran"
    # The same through the policy key, as a run reads it.
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "validation_report.yaml").write_text(json.dumps(raw), encoding="utf-8")
    (folder / "selfcorrect.yaml").write_text(
        "extend_stub_validators: [ci-placeholder]\n", encoding="utf-8"
    )
    report = load_inputs(folder).report
    assert report is not None and report.verdict is Verdict.NONE


# --------------------------------------------------------------------------- BLOCKED (§5)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("dialect-b-blocked", "Escalate: the driver choice is a product decision (next: hitl)"),
        ("debug-mode-blocked", "The crash is in the vendored libsodium build"),
        ("canonical-blocked-bare", "The staging database is on the wrong major version"),
    ],
)
def test_a_validators_blocked_verdict_is_honoured(
    name: str, reason: str, tmp_path: Path, run_line
) -> None:
    folder = case(tmp_path, name)

    result = run_line(["run", folder, "--format", "json"])

    assert result.exit_code == 1, result.stdout  # BLOCKED
    data = json.loads(result.stdout)
    assert data["issues"], data
    for issue in data["issues"]:
        assert issue["status"] == "blocked"
        assert issue["reason"] == "VALIDATOR_BLOCKED"
        # The report's verdict, shown as the validator's, with the validator's own reason.
        assert f"the validator's verdict is BLOCKED: {reason}" in issue["detail"], issue


def test_an_itemised_blocked_report_keeps_its_fixable_items_but_never_a_critical_one() -> None:
    raw = {
        "status": "BLOCKED",
        "issues": [
            {"severity": "MAJOR", "description": "lint", "classification": "BLOCKED"},
            {"severity": "MAJOR", "description": "coverage"},
            {"severity": "CRITICAL", "description": "data loss", "classification": "FIXABLE"},
        ],
    }

    issues = normalise_report(raw).issues

    assert [i.classification for i in issues] == [Verdict.BLOCKED, None, Verdict.BLOCKED]


# --------------------------------------------------------------------------- issue owners


TASKS = (
    Task("WI-1", acceptance_criteria=("Refresh is single-flighted per session",)),
    Task("WI-2", acceptance_criteria=("Migration for refresh_tokens table created",)),
    Task("WI-3", acceptance_criteria=("Unit tests pass",), files=("tests/auth/",)),
    Task("WI-4", deliverables=("docs/api.md",), expected_deliverables=("docs/*.md",)),
)


@pytest.mark.parametrize(
    ("issue", "task"),
    [
        # the criterion quoted word for word, case and spacing aside, inside the description
        (
            Issue(Severity.MAJOR, 'Not met: "migration for  refresh_tokens table created."'),
            "WI-2",
        ),
        # the issue's own criterion, even a short one
        (Issue(Severity.MAJOR, "x", criterion="Unit tests pass"), "WI-3"),
        # a short criterion inside a description is a coincidence, not a quote
        (Issue(Severity.MAJOR, "Unit tests pass but coverage is low"), None),
        # the target inside a declared folder (a line suffix and ./ dropped)
        (Issue(Severity.MAJOR, "flaky", target="./tests/auth/refresh.test.ts:12"), "WI-3"),
        # a deliverable, or a file a glob of expected deliverables covers
        (Issue(Severity.MINOR, "typo", target="docs/api.md"), "WI-4"),
        (Issue(Severity.MINOR, "typo", target="docs/other.md"), "WI-4"),
        (Issue(Severity.MINOR, "typo", target="src/elsewhere.ts"), None),
        # a task_id the validator gave stands
        (
            Issue(Severity.MAJOR, "Unit tests pass", criterion="Unit tests pass", task_id="WI-9"),
            "WI-9",
        ),
    ],
)
def test_an_issue_without_task_belongs_to_the_one_task_it_quotes_or_names(
    issue: Issue, task: str | None
) -> None:
    (tied,) = owned([issue], TASKS)

    assert tied.task_id == task


def test_two_tasks_quoting_the_same_criterion_tie_nothing() -> None:
    same = ("Lock released in finally block",)
    tasks = (Task("WI-1", acceptance_criteria=same), Task("WI-2", acceptance_criteria=same))

    (issue,) = owned([Issue(Severity.MAJOR, "x", criterion=same[0])], tasks)

    assert issue.task_id is None


def test_an_issue_of_a_skipped_task_gets_no_directive(tmp_path: Path, run_line) -> None:
    folder = case(tmp_path, "issue-of-skipped-task")

    result = run_line(["run", folder, "--format", "json"])

    data = json.loads(result.stdout)
    (issue,) = data["issues"]
    assert issue["fingerprint"] == "acceptance_criterion_unmet#WI-2~6ba8a3"
    assert issue["status"] == "skipped"
    # One prompt, WI-2's, and it says not to work on WI-2: no second prompt asks to fix it.
    assert sorted(p.name for p in (folder / "recovery").iterdir()) == ["WI-2.md"]
    prompt = (folder / "recovery" / "WI-2.md").read_text(encoding="utf-8")
    assert "Do not work on WI-2 now" in prompt
    assert "Migration for refresh_tokens" not in prompt


# --------------------------------------------------------------------------- probes (§7)


PROBES = Probes(policy_with().probe_commands)


@pytest.mark.parametrize(
    ("command", "error", "probe"),
    [
        ("grep -rn TODO src", "Exit code 1", True),
        ("rg -n 'a|b' src", "Exit code 1", True),  # a | inside quotes is not a pipeline
        ("test -f migrations/0009.sql", "Exit code 1", True),
        ("[ -d build ]", "Exit code 1", True),
        ("diff a.txt b.txt", "Exit code 1\n3c3\n< 100\n---\n> 120", True),
        ("LC_ALL=C /usr/bin/grep -q x f", "Exit code 1", True),
        ("command -v pnpm", "Exit code 1", True),
        ("git diff --quiet -- src", "Exit code 1", True),
        ("git grep -n refresh", "Exit code 1", True),
        ("git diff -- src", "Exit code 1", False),  # not the --quiet probe
        ("git status", "Exit code 1", False),
        ("grep -rn TODO nodir", "Exit code 2\ngrep: nodir: No such file or directory", False),
        ("grep -rn TODO src", "Exit code 1\ngrep: src/x: Permission denied", False),
        ("cat log | grep ERROR", "Exit code 1", True),  # the pipeline's status is grep's
        ("make && grep -q ok out", "Exit code 1", False),  # make may have failed
        ("grep -q $(cat pattern) f", "Exit code 1", False),
        ("npm test", "Exit code 1", False),
        ("grep -rn TODO src", "", False),  # no exit code: cannot tell
    ],
)
def test_a_probe_is_a_query_that_answered_no(command: str, error: str, probe: bool) -> None:
    assert PROBES.is_probe("Bash", command, error) is probe


def test_only_shell_calls_are_probes() -> None:
    assert not PROBES.is_probe("Grep", "grep -rn TODO src", "Exit code 1")
    assert command_words("FOO=1 BAR=2 grep x") == ["grep", "x"]
    assert command_words("echo 'unterminated") is None


def test_probes_and_interrupted_calls_count_nothing_whoever_logged_them(tmp_path: Path) -> None:
    folder = case(tmp_path, "exploration-probes")

    inputs = load_inputs(folder)

    # 11 entries: 9 answers or interruptions (6 logged so by other writers), 2 real errors.
    assert inputs.log.entries == 11
    assert sorted(inputs.log.records) == [
        "Bash · runtime_error · a1b2c3d4",  # pnpm: command not found
        "Bash · stale_context · e5f6a7b8",  # grep: src/legacy: No such file or directory
    ]
    assert all(r.failures_total == 1 for r in inputs.log.records.values())


def test_the_failure_hook_logs_a_probe_and_an_interruption_and_says_nothing(
    project: Path,  # noqa: F811
) -> None:
    grep = failure("agent-9", "Bash", {"command": "grep -rn refreshToken src"}, "Exit code 1")
    stopped = {**failure("agent-9", "Bash", {"command": "npm test"}, "Exit code 130")}
    stopped["is_interrupt"] = True

    answers = [hook(project, "post-tool-use-failure", payload) for payload in (grep, stopped)]
    for number in range(3):  # the same probe again and again: never stuck, never refused
        again = {**grep, "tool_use_id": f"{grep['tool_use_id']}-{number}"}  # each call its id
        answers.append(hook(project, "post-tool-use-failure", again))

    assert [(a.code, a.json) for a in answers] == [(0, None)] * 5
    log = documents.read_failure_log(project / "workflow" / "tool_failures.yaml", [])
    assert [raw.data["outcome"] for raw in log] == [
        "probe",
        "interrupted",
        "probe",
        "probe",
        "probe",
    ]
    # Nothing was decided on them, so the gate has nothing to refuse.
    assert not (project / "workflow" / ".selfcorrect" / "gate.json").exists()
    again = hook(project, "pre-tool-use", {**grep, "hook_event_name": "PreToolUse"})
    assert again.json is None


def test_a_real_failure_is_still_logged_as_one(project: Path) -> None:  # noqa: F811
    bad = failure(
        "agent-9", "Bash", {"command": "grep -rn x nodir"}, "Exit code 2\ngrep: nodir: No such file"
    )

    hook(project, "post-tool-use-failure", bad)

    (entry,) = documents.read_failure_log(project / "workflow" / "tool_failures.yaml", [])
    assert "outcome" not in entry.data


# --------------------------------------------------------------------------- who owns


def bash(agent: str | None, error: str, index: int, outcome: Outcome = Outcome.FAILURE) -> Failure:
    return Failure(
        tool="Bash",
        error=error,
        timestamp="",
        index=index,
        id=str(index),
        agent_id=agent,
        outcome=outcome,
    )


def test_a_task_less_failure_is_a_subject_per_agent_tool_and_type() -> None:
    ledger = Ledger()
    entries = [
        bash("agent-a", "pnpm: command not found", 0),
        bash("agent-a", "pnpm: command not found", 1),
        bash("agent-b", "pnpm: command not found", 2),
        bash("agent-a", "ok", 3, Outcome.SUCCESS),  # agent A's success lifts A's, not B's
        bash(None, "pnpm: command not found", 4),
    ]
    for entry in entries:
        ledger.feed(entry, "unknown")

    totals = {subject: r.failures_total for subject, r in ledger.records.items()}
    assert totals == {
        "Bash · unknown · agent-a": 0,
        "Bash · unknown · agent-b": 1,
        "Bash · unknown": 1,
    }
    assert subject_of(bash("agent-b", "x", 5), "timeout") == "Bash · timeout · agent-b"


# --------------------------------------------------------------------------- typing (§6)


TAXONOMY = Taxonomy(policy_with())


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ('✘ [ERROR] Expected ";" but found "}"    src/Login.tsx:42:4:', "syntax_error"),
        ("Controllers/Auth.cs(57,38): error CS1002: ; expected", "syntax_error"),
        (
            "expect(received).toBe(expected) // Object.is equality  Expected: 401 Received: 200",
            "runtime_error",
        ),
        ("Expected: true\nReceived: false", "runtime_error"),
        ("MCP error -32000: Connection closed", "external_dependency"),
        ("MCP server 'github': connection closed unexpectedly", "external_dependency"),
    ],
)
def test_real_failure_texts_are_typed(error: str, kind: str) -> None:
    assert TAXONOMY.classify_text(error).failure_type == kind


def test_three_http_statuses_on_three_urls_are_three_errors() -> None:
    texts = [
        f"Request failed with status code {status} for https://api.acme.dev/{path}"
        for status, path in (("404", "a"), ("401", "b/c"), ("500", "d"))
    ]

    assert len({normalise_error(text) for text in texts}) == 3
    # The same status on other URLs and at other lines is the same error.
    assert normalise_error("HTTP 503 at x.ts:4 https://a.dev/x") == normalise_error(
        "HTTP 503 at x.ts:9 https://b.dev/y/z"
    )


def test_a_subjects_type_is_its_streaks_type() -> None:
    ledger = Ledger()
    for index in range(3):
        entry = replace(bash("agent-a", f"TypeError at jwt.ts:{index}", index), task_id="WI-25")
        ledger.feed(entry, "runtime_error")
    stale = replace(bash("agent-a", "String to replace not found", 3), task_id="WI-25")
    ledger.feed(replace(stale, tool="Edit", file_path="src/auth/jwt.ts"), "stale_context")

    (record,) = ledger.records.values()
    assert record.latest_type == "runtime_error"
    assert record.attempts == {"runtime_error": 3, "stale_context": 1}


@pytest.mark.parametrize("path", ["C:\\Users\\dev\\app\\x.c", "C:/Users/dev/x.c", "d:x.c"])
def test_a_windows_drive_path_is_never_inside_the_project(path: str, tmp_path: Path) -> None:
    assert resolve_inside(tmp_path, path) is None


def test_a_windows_path_is_never_given_as_a_scope(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "tool_failures.yaml").write_text(
        "failures:\n"
        + "".join(
            f"  - tool: Write\n    error: 'EPERM: operation not permitted ({n})'\n"
            f"    timestamp: '2026-12-02T09:1{n}:00Z'\n"
            "    file_path: 'C:\\Users\\dev\\app\\dist\\main.js'\n"
            for n in range(3)
        ),
        encoding="utf-8",
    )

    result = run_line(["run", folder])

    assert result.exit_code == 3, result.stdout
    (prompt,) = (folder / "recovery").iterdir()
    scope = prompt.read_text(encoding="utf-8").split("## Scope\n", 1)[1].split("\n## ", 1)[0]
    assert scope.startswith("No files were recorded as in scope"), scope
    assert (
        'Dropped from the scope: "C:\\Users\\dev\\app\\dist\\main.js" leaves the project' in scope
    )


# --------------------------------------------------------------------------- replay labels (§13)


def test_replay_scores_a_refused_folder_it_labels_readable(tmp_path: Path, run_line) -> None:
    corpus = tmp_path / "replay"
    shutil.copytree(CORPUS / "cagents-act-sample", corpus / "cagents-act-sample")
    log = corpus / "cagents-act-sample" / "coordination_log.yaml"
    log.write_text(log.read_text().replace("  - id: CT-2\n", "  - ident: CT-2\n"))

    result = run_line(["replay", corpus, "--format", "json"])

    assert result.exit_code == 0, result.stderr
    (case_,) = json.loads(result.stdout)["cases"]
    assert (case_["read"], case_["verdict"]) == ("refused", None)
    assert {
        "kind": "case",
        "name": "folder",
        "aspect": "read",
        "labelled": "ok",
        "decided": "refused",
    } in case_["mismatches"]
    assert "coordination_log.yaml:" in case_["warnings"][0]["path"] + ":"


def test_replay_scores_the_verdict_and_the_issue_task(tmp_path: Path, run_line) -> None:
    corpus = tmp_path / "replay"
    shutil.copytree(CORPUS / "recheck-two-failures", corpus / "case")
    labels = corpus / "case" / "expected.yaml"
    text = labels.read_text(encoding="utf-8")
    labels.write_text(
        text.replace("verdict: PENDING", "verdict: PASS").replace("task: WI-3  ", "task: WI-1  "),
        encoding="utf-8",
    )

    result = run_line(["replay", corpus, "--format", "json"])

    scores = {s["detector"]: s for s in json.loads(result.stdout)["scores"]}
    assert (scores["verdict:PASS"]["fn"], scores["verdict:PENDING"]["fp"]) == (1, 1)
    assert (scores["issue_task"]["tp"], scores["issue_task"]["fp"], scores["issue_task"]["fn"]) == (
        2,
        1,
        1,
    )
