"""The evidence re-check (rules §2.2): file_exists / file_contains citations against the project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from selfcorrect.checks.evidence import check_evidence, parse_citation, recheck
from selfcorrect.core.model import Verdict
from selfcorrect.core.normalise import normalise_report

REFRESH_TS = [
    "import { lock } from './lock';",
    "",
    "export async function refreshToken(...)",  # line 3, as the corpus report cites it
    "  const pending = new Map();",
    "  if (pending.has(id)) return pending.get(id);",
    "  const p = doRefresh(id);",
    "  pending.set(id, p);",
    "  try { return await p; }",
    "  finally { pending.delete(id); }",
    "}",
    "",
    "export default refreshToken;",
]


def session(corpus: Path) -> Path:
    """The copied session folder (project root) with src/auth/refresh.ts of 12 lines."""
    root = corpus.parent
    (root / "src" / "auth").mkdir(parents=True)
    (root / "src" / "auth" / "refresh.ts").write_text("\n".join(REFRESH_TS) + "\n")
    return root


def report_of(*criteria: dict[str, Any], classification: str = "PASS") -> Any:
    return normalise_report(
        {"classification": classification, "acceptance_criteria_results": list(criteria)}
    )


def test_corpus_session_citations_are_rechecked(corpus: Path) -> None:
    root = session(corpus)
    (root / "docs").mkdir()
    (root / "docs" / "auth.md").write_text("# Auth\n")
    raw = yaml.safe_load((corpus / "validation_report.yaml").read_text(encoding="utf-8"))
    findings = recheck(normalise_report(raw), root)
    by_target = {f.target: f for f in findings}
    assert len(findings) == 2
    # file_contains at line 3 holds; test_result / metric_check claims are not re-checked.
    assert all("single-flighted" not in f.description for f in findings)
    migration = by_target["migrations/20260805_add_refresh_tokens.sql"]
    assert migration.type == "acceptance_criterion_unmet" and migration.severity == "MAJOR"
    assert "Migration for refresh_tokens table created" in migration.description
    assert "cited path does not exist: migrations/20260805_add_refresh_tokens.sql" in (
        migration.description
    )
    line99 = by_target["src/auth/refresh.ts"]
    assert "ログアウトしない" in line99.description
    assert "line 99 out of range for src/auth/refresh.ts (12 lines)" in line99.description


def test_corpus_without_the_source_file_fails_the_file_contains_criterion(corpus: Path) -> None:
    raw = yaml.safe_load((corpus / "validation_report.yaml").read_text(encoding="utf-8"))
    findings = recheck(normalise_report(raw), corpus.parent)
    assert any(
        "single-flighted" in f.description
        and "does not exist: src/auth/refresh.ts" in f.description
        for f in findings
    )


@pytest.mark.parametrize(
    ("evidence", "holds"),
    [
        ("src/auth/refresh.ts:3 - export async function refreshToken", True),
        ("src/auth/refresh.ts:4 - export async function refreshToken", True),  # off by one
        ("src/auth/refresh.ts:5 - export async function refreshToken", True),  # off by two
        ("src/auth/refresh.ts:6 - export async function refreshToken", False),  # too far
        ("src/auth/refresh.ts:3 - export   async function refreshToken(...)", True),
        ("src/auth/refresh.ts:9 - finally { pending.delete(...); }", True),
        ("`src/auth/refresh.ts:3` - `export async function refreshToken`", True),
        ("src/auth/refresh.ts:3-4 - refreshToken(...) const pending", True),  # spans lines
        ("src/auth/refresh.ts:12", True),
        ("src/auth/refresh.ts - pending.delete", True),  # no line: anywhere in the file
        ("src/auth/refresh.ts - console.log", False),
        ("src/auth/refresh.ts:3 - function logout", False),
        ("src/auth/refresh.ts:13", False),
        ("src/auth/refresh.ts:0 - import", False),
    ],
)
def test_file_contains(corpus: Path, evidence: str, holds: bool) -> None:
    root = session(corpus)
    problem, target = check_evidence("file_contains", evidence, root)
    assert (problem is None) is holds, problem
    assert target == "src/auth/refresh.ts"


def test_snippet_not_found_message(corpus: Path) -> None:
    root = session(corpus)
    problem, _ = check_evidence("file_contains", "src/auth/refresh.ts:3 - function logout", root)
    assert problem is not None
    assert problem.startswith("snippet not found at src/auth/refresh.ts:3")


def test_out_of_range_message(corpus: Path) -> None:
    root = session(corpus)
    problem, _ = check_evidence("file_contains", "src/auth/refresh.ts:99 - x", root)
    assert problem == "line 99 out of range for src/auth/refresh.ts (12 lines)"


@pytest.mark.parametrize(
    "evidence", ["../../etc/passwd", "/etc/passwd", "/etc/passwd:1 - root", "../x.ts:1 - a"]
)
@pytest.mark.parametrize("method", ["file_exists", "file_contains"])
def test_paths_outside_the_project_are_refused(tmp_path: Path, evidence: str, method: str) -> None:
    root = tmp_path / "project"
    root.mkdir()
    report = report_of(
        {"criterion": "c", "met": True, "verification_method": method, "evidence": evidence}
    )
    (finding,) = recheck(report, root)
    assert "refused" in finding.description and finding.target is None


def test_symlink_escaping_the_project_is_refused_never_read(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("password=hunter2\n")
    (root / "cfg").symlink_to(tmp_path)
    report = report_of(
        {
            "criterion": "c",
            "met": True,
            "verification_method": "file_contains",
            "evidence": "cfg/secret.txt:1 - password=hunter2",
        }
    )
    (finding,) = recheck(report, root)
    assert "refused" in finding.description


def test_only_claimed_file_criteria_are_rechecked(tmp_path: Path) -> None:
    report = report_of(
        {
            "criterion": "unmet",
            "met": False,
            "verification_method": "file_exists",
            "evidence": "missing.txt",
        },
        {
            "criterion": "tests",
            "met": True,
            "verification_method": "test_result",
            "evidence": "missing.txt",
        },
        {"criterion": "implicit", "verification_method": "File-Exists", "evidence": "gone.md"},
        {"criterion": "empty", "met": True, "verification_method": "file_exists"},
        classification="PASS",
    )
    findings = recheck(report, tmp_path)
    assert [f.description.split(" (")[0] for f in findings] == [
        "Acceptance criterion not met: implicit",  # no `met` under a PASS: claimed met
        "Acceptance criterion not met: empty",
    ]
    assert "no evidence cited" in findings[1].description
    # The same unstated criterion in a report that does not claim PASS is not a claim.
    assert (
        report_of(
            {"criterion": "x", "verification_method": "file_exists", "evidence": "gone.md"},
            classification="FAIL",
        ).claimed
        is Verdict.FAIL
    )
    assert (
        recheck(
            report_of(
                {"criterion": "x", "verification_method": "file_exists", "evidence": "gone.md"},
                classification="FAIL",
            ),
            tmp_path,
        )
        == []
    )


def test_file_exists_accepts_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "auth.md").write_text("x")
    for evidence in ("docs/auth.md", "docs", "./docs/auth.md", "docs/auth.md - updated"):
        assert check_evidence("file_exists", evidence, tmp_path) == (
            None,
            parse_citation(evidence).path,
        )


def test_file_contains_on_a_folder_fails(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    problem, _ = check_evidence("file_contains", "src:1 - x", tmp_path)
    assert problem == "cited path is not a regular file: src"


def test_agent_text_in_descriptions_is_made_safe(tmp_path: Path) -> None:
    report = report_of(
        {
            "criterion": "bad\x1b[2Jname\x07",
            "met": True,
            "verification_method": "file_exists",
            "evidence": "no\x07such",
        }
    )
    (finding,) = recheck(report, tmp_path)
    assert "\x1b" not in finding.description and "\x07" not in finding.description


def test_parse_citation_forms() -> None:
    assert parse_citation("src/a.ts:3 - export x").line == 3
    assert parse_citation("src/a.ts:3 - export x").snippet == "export x"
    assert parse_citation("src/a.ts:3-5").end == 5
    assert parse_citation("'docs/auth.md'").path == "docs/auth.md"
    assert parse_citation("src/a.ts:3: a - b").snippet == "a - b"
