"""Output-quality checks of the built-in validator (rules §14), on real files and real processes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.checks.quality import (
    command_findings,
    coverage_findings,
    docs_findings,
    headings,
    template_findings,
)
from selfcorrect.core.policy import Policy, build_policy
from selfcorrect.io.policy_file import default_policy_data, load_policy
from tests.hardening import process_table, wait_gone

PY = sys.executable


@pytest.fixture
def policy() -> Policy:
    return load_policy(None)


def run(root: Path, policy: Policy, *entries: dict[str, Any], timeout_s: float = 30) -> list[Any]:
    return command_findings(list(entries), root, policy, timeout_s=timeout_s)


# --------------------------------------------------------------------------- commands


def test_failing_command_is_a_finding_of_its_type_with_output_tail(
    tmp_path: Path, policy: Policy
) -> None:
    code = "import sys; print('lint: 2 errors'); sys.exit(1)"
    (finding,) = run(tmp_path, policy, {"type": "linting_errors", "command": [PY, "-c", code]})
    assert finding.type == "linting_errors"
    assert finding.severity == "MAJOR"  # the policy's default for linting_errors
    assert "exited with code 1" in finding.description
    assert "lint: 2 errors" in finding.description
    assert PY in finding.description  # names the command


def test_passing_command_finds_nothing(tmp_path: Path, policy: Policy) -> None:
    entry = {"type": "linting_errors", "command": [PY, "-c", "print('all good')"]}
    assert run(tmp_path, policy, entry) == []


def test_command_runs_in_the_project_root(tmp_path: Path, policy: Policy) -> None:
    code = "import os, sys; print('cwd=' + os.getcwd()); sys.exit(2)"
    (finding,) = run(tmp_path, policy, {"type": "linting_errors", "command": [PY, "-c", code]})
    assert f"cwd={tmp_path.resolve()}" in finding.description
    assert "exited with code 2" in finding.description


def test_stdin_is_closed(tmp_path: Path, policy: Policy) -> None:
    code = "import sys; data = sys.stdin.read(); print('read', len(data)); sys.exit(1)"
    (finding,) = run(tmp_path, policy, {"type": "linting_errors", "command": [PY, "-c", code]})
    assert "read 0" in finding.description


def test_timeout_kills_the_command_and_its_children(tmp_path: Path, policy: Policy) -> None:
    # The grandchild inherits the output: a pipe-based runner would wait for it to exit, and it
    # would then have written `survived` on its way out. Killed, it writes nothing.
    grandchild = (
        "import os, pathlib, time; pathlib.Path('pid').write_text(str(os.getpid())); "
        "time.sleep(30); pathlib.Path('survived').write_text('yes')"
    )
    code = (
        "import subprocess, sys, time; print('started', flush=True); "
        f"subprocess.Popen([sys.executable, '-c', {grandchild!r}]); time.sleep(60)"
    )
    entry = {"type": "linting_errors", "command": [PY, "-c", code], "timeout_s": 1}
    (finding,) = run(tmp_path, policy, entry, timeout_s=300)
    assert "timed out after 1s" in finding.description
    assert "started" in finding.description
    # The grandchild is reaped by init once killed; the wait bounds a hang, it times nothing.
    grandchild_proc = process_table().get(int((tmp_path / "pid").read_text()))
    assert grandchild_proc is None or wait_gone([grandchild_proc], timeout=10) == []
    assert not (tmp_path / "survived").exists()


def test_default_timeout_applies(tmp_path: Path, policy: Policy) -> None:
    entry = {"type": "linting_errors", "command": [PY, "-c", "import time; time.sleep(60)"]}
    (finding,) = run(tmp_path, policy, entry, timeout_s=0.5)
    assert "timed out after 0.5s" in finding.description
    assert "(no output)" in finding.description


def test_program_not_installed_is_a_finding(tmp_path: Path, policy: Policy) -> None:
    entry = {"type": "linting_errors", "command": ["no-such-linter-4b1d", "src"]}
    (finding,) = run(tmp_path, policy, entry)
    assert "not found" in finding.description
    assert "no-such-linter-4b1d" in finding.description


def test_output_tail_is_bounded_and_control_characters_replaced(
    tmp_path: Path, policy: Policy
) -> None:
    code = (
        "import sys\n"
        "for i in range(500): print(f'line {i} ' + 'x' * 50)\n"
        "print('\\x1b[31mred\\x1b[0m bell\\x07 nul\\x00 tab\\tend')\n"
        "sys.exit(3)"
    )
    (finding,) = run(tmp_path, policy, {"type": "linting_errors", "command": [PY, "-c", code]})
    tail = finding.description.split("output tail:\n", 1)[1]
    assert len(tail) <= 2000
    assert len(tail.split("\n")) <= 20
    assert "line 499" in tail and "line 100 " not in tail
    assert "\x1b" not in tail and "\x07" not in tail and "\x00" not in tail
    assert "red bell\ufffd nul\ufffd tab\tend" in tail


def test_target_placeholder_is_replaced(tmp_path: Path, policy: Policy) -> None:
    (tmp_path / "src").mkdir()
    code = "import sys; print('argv', sys.argv[1:]); sys.exit(1)"
    entry = {
        "type": "linting_errors",
        "command": [PY, "-c", code, "{target}", "--path={target}"],
        "target": "src",
    }
    (finding,) = run(tmp_path, policy, entry)
    assert "argv ['src', '--path=src']" in finding.description
    assert finding.target == "src"


HOSTILE = ["--output=x", "-rf", "../../etc/passwd", "/etc/passwd", "a; rm -rf /", "$(touch pwned)"]


@pytest.mark.parametrize("target", HOSTILE)
def test_hostile_target_is_refused_and_nothing_runs(
    tmp_path: Path, policy: Policy, target: str
) -> None:
    code = "open('ran', 'w').write('x')"
    entry = {"type": "linting_errors", "command": [PY, "-c", code, "{target}"], "target": target}
    (finding,) = run(tmp_path, policy, entry)
    assert "not run" in finding.description and "refused" in finding.description
    assert finding.target is None
    assert not (tmp_path / "ran").exists()
    assert not (tmp_path / "pwned").exists()
    assert not Path("pwned").exists()


def test_shell_syntax_in_an_existing_path_stays_a_literal_argument(
    tmp_path: Path, policy: Policy
) -> None:
    (tmp_path / "$(touch pwned)").write_text("x")
    code = "import sys; print('got', sys.argv[1]); sys.exit(1)"
    entry = {"type": "t", "command": [PY, "-c", code, "{target}"], "target": "$(touch pwned)"}
    (finding,) = run(tmp_path, policy, entry)
    assert "got $(touch pwned)" in finding.description
    assert not (tmp_path / "pwned").exists()


def test_target_placeholder_without_target_is_refused(tmp_path: Path, policy: Policy) -> None:
    entry = {"type": "linting_errors", "command": [PY, "-c", "open('ran','w')", "{target}"]}
    (finding,) = run(tmp_path, policy, entry)
    assert "no target" in finding.description
    assert not (tmp_path / "ran").exists()


def test_symlinked_target_leaving_the_project_is_refused(tmp_path: Path, policy: Policy) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "out").symlink_to(tmp_path)
    entry = {"type": "t", "command": [PY, "-c", "open('ran','w')", "{target}"], "target": "out"}
    (finding,) = run(root, policy, entry)
    assert "refused" in finding.description
    assert not (root / "ran").exists()


def test_severity_comes_from_the_policy(tmp_path: Path) -> None:
    policy = build_policy(
        default_policy_data(), {"issue_types": {"linting_errors": {"severity": "MINOR"}}}
    )
    fail = [PY, "-c", "raise SystemExit(1)"]
    findings = run(
        tmp_path,
        policy,
        {"type": "linting_errors", "command": fail},
        {"type": "x", "command": fail},
    )
    assert [f.severity for f in findings] == ["MINOR", "MAJOR"]  # unknown type: MAJOR


# --------------------------------------------------------------------------- coverage


def coverage_json(path: Path, total: float, files: dict[str, float]) -> None:
    doc = {
        "meta": {"format": 3},
        "files": {n: {"summary": {"percent_covered": p}} for n, p in files.items()},
        "totals": {"percent_covered": total, "percent_covered_display": str(round(total))},
    }
    path.write_text(json.dumps(doc))


COBERTURA = """<?xml version="1.0" ?>
<coverage version="7.4" line-rate="{rate}" branch-rate="0" lines-valid="100" lines-covered="61">
  <packages><package name="src" line-rate="{rate}"><classes>
    <class name="a.py" filename="src/a.py" line-rate="0.2"><lines/></class>
    <class name="b.py" filename="src/b.py" line-rate="0.95"><lines/></class>
  </classes></package></packages>
</coverage>
"""


def test_coverage_json_below_minimum_names_least_covered_files(
    tmp_path: Path, policy: Policy
) -> None:
    files = {"src/a.py": 12.5, "src/b.py": 40.0, "src/c.py": 99.0}
    coverage_json(tmp_path / "coverage.json", 61.04, files)
    cfg = {"report": "coverage.json", "min_percent": 80}
    (finding,) = coverage_findings(cfg, tmp_path, policy)
    assert finding.type == "test_coverage_low" and finding.severity == "MAJOR"
    assert "61.0%" in finding.description and "80%" in finding.description
    assert "src/a.py 12.5%, src/b.py 40.0%" in finding.description
    assert "src/c.py" not in finding.description


def test_coverage_json_at_or_above_minimum_passes(tmp_path: Path, policy: Policy) -> None:
    coverage_json(tmp_path / "coverage.json", 80.0, {"src/a.py": 80.0})
    assert coverage_findings({"report": "coverage.json", "min_percent": 80}, tmp_path, policy) == []


def test_cobertura_below_and_above_minimum(tmp_path: Path, policy: Policy) -> None:
    (tmp_path / "coverage.xml").write_text(COBERTURA.format(rate="0.61"))
    (finding,) = coverage_findings({"report": "coverage.xml", "min_percent": 80}, tmp_path, policy)
    assert "61.0%" in finding.description and "src/a.py 20.0%" in finding.description
    assert "src/b.py" not in finding.description
    (tmp_path / "coverage.xml").write_text(COBERTURA.format(rate="0.85"))
    assert coverage_findings({"report": "coverage.xml", "min_percent": 80}, tmp_path, policy) == []


def test_missing_coverage_report_is_a_finding(tmp_path: Path, policy: Policy) -> None:
    (finding,) = coverage_findings({"report": "coverage.json", "min_percent": 80}, tmp_path, policy)
    assert finding.type == "test_coverage_low" and finding.severity == "MAJOR"
    assert "not found" in finding.description and "coverage json" in finding.description
    assert finding.target == "coverage.json"


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"totals": {}}',
        '{"totals": {"percent_covered": "lots"}}',
        "<coverage/>",
        "<nope line-rate='0.9'/>",
        "<coverage line-rate='0.9'>",
        "plain text",
        "",
    ],
)
def test_unreadable_coverage_report_is_a_finding(
    tmp_path: Path, policy: Policy, content: str
) -> None:
    (tmp_path / "cov").write_text(content)
    (finding,) = coverage_findings({"report": "cov", "min_percent": 10}, tmp_path, policy)
    assert "unreadable" in finding.description


def test_cobertura_with_entity_bomb_is_refused_unexpanded(tmp_path: Path, policy: Policy) -> None:
    levels = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 12))
    bomb = (
        f'<?xml version="1.0"?><!DOCTYPE coverage [<!ENTITY l0 "lol">{levels}]>'
        '<coverage line-rate="0.1"><x>&l11;</x></coverage>'
    )
    (tmp_path / "coverage.xml").write_text(bomb)
    # Expanded, the bomb is 10^11 copies of "lol": refusing it unexpanded is what lets this end.
    (finding,) = coverage_findings({"report": "coverage.xml", "min_percent": 80}, tmp_path, policy)
    assert "DOCTYPE" in finding.description
    assert "lol" not in finding.description


def test_utf16_cobertura_is_refused(tmp_path: Path, policy: Policy) -> None:
    (tmp_path / "c.xml").write_bytes(COBERTURA.format(rate="0.9").encode("utf-16"))
    (finding,) = coverage_findings({"report": "c.xml", "min_percent": 80}, tmp_path, policy)
    assert "unreadable" in finding.description


@pytest.mark.parametrize("report", ["../coverage.json", "/etc/passwd", "link/coverage.json"])
def test_coverage_report_outside_the_project_is_refused(
    tmp_path: Path, policy: Policy, report: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    coverage_json(tmp_path / "coverage.json", 10.0, {})
    (root / "link").symlink_to(tmp_path)
    (finding,) = coverage_findings({"report": report, "min_percent": 80}, root, policy)
    assert finding.description.startswith("refused") and finding.target is None


def test_no_coverage_config_checks_nothing(tmp_path: Path, policy: Policy) -> None:
    assert coverage_findings(None, tmp_path, policy) == []


# --------------------------------------------------------------------------- docs


def test_docs_present_missing_and_empty(tmp_path: Path, policy: Policy) -> None:
    (tmp_path / "README.md").write_text("# Project\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "empty.md").write_text("")
    (tmp_path / "docs" / "blank.md").write_text("  \n\n")
    required = ["README.md", "docs/api.md", "docs/empty.md", "docs/blank.md", "docs"]
    findings = docs_findings({"required": required}, tmp_path, policy)
    assert [(f.type, f.severity, f.target) for f in findings] == [
        ("missing_documentation", "MINOR", "docs/api.md"),
        ("missing_documentation", "MINOR", "docs/empty.md"),
        ("missing_documentation", "MINOR", "docs/blank.md"),
    ]
    assert "missing: docs/api.md" in findings[0].description
    assert "empty: docs/empty.md" in findings[1].description


def test_docs_outside_the_project_are_refused_never_read(tmp_path: Path, policy: Policy) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "secret.md").write_text("top secret")
    (root / "leak.md").symlink_to(tmp_path / "secret.md")
    required = ["../secret.md", str(tmp_path / "secret.md"), "leak.md"]
    findings = docs_findings({"required": required}, root, policy)
    assert len(findings) == 3
    assert all(f.description.startswith("refused") and f.target is None for f in findings)
    assert not any("top secret" in f.description for f in findings)


def test_no_docs_config_checks_nothing(tmp_path: Path, policy: Policy) -> None:
    assert docs_findings(None, tmp_path, policy) == []
    assert docs_findings({"required": []}, tmp_path, policy) == []


# --------------------------------------------------------------------------- templates

TEMPLATE = "# {title}\n\nintro\n\n## Status\n\n## Context\n\n## Decision ##\n\n## Consequences\n"


@pytest.fixture
def adr(tmp_path: Path) -> Path:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "adr.md").write_text(TEMPLATE)
    (tmp_path / "docs" / "adr").mkdir(parents=True)
    return tmp_path / "docs" / "adr"


def check(root: Path, policy: Policy) -> list[Any]:
    entries = [{"glob": "docs/adr/*.md", "template": "templates/adr.md"}]
    return template_findings(entries, root, policy)


def test_headings_parse_levels_and_skip_code_fences() -> None:
    text = "# A\n#notaheading\n```sh\n# comment\n```\n  ## B  ##\n~~~~\n# C\n~~~\n~~~~\n###\n"
    assert headings(text) == [(1, "A"), (2, "B"), (3, "")]


def test_document_with_headings_in_order_passes(adr: Path, policy: Policy) -> None:
    (adr / "001.md").write_text(
        "# ADR 1: Use Postgres\n## Status\nok\n## Context\n### Extra detail\n"
        "## Notes\n## decision\n## Consequences\n## Appendix\n"
    )
    assert check(adr.parents[1], policy) == []


def test_missing_heading_is_reported(adr: Path, policy: Policy) -> None:
    (adr / "002.md").write_text("# ADR 2\n## Status\n## Context\n## Consequences\n")
    (finding,) = check(adr.parents[1], policy)
    assert finding.type == "format_violations" and finding.severity == "MINOR"
    assert finding.target == "docs/adr/002.md"
    assert "'## Decision' is missing" in finding.description
    assert "# {title} > ## Status > ## Context > ## Decision > ## Consequences" in (
        finding.description
    )


def test_out_of_order_heading_is_reported(adr: Path, policy: Policy) -> None:
    (adr / "003.md").write_text("# ADR 3\n## Context\n## Status\n## Decision\n## Consequences\n")
    (finding,) = check(adr.parents[1], policy)
    assert "docs/adr/003.md" in finding.description
    assert "'## Context' is out of order" in finding.description


def test_heading_level_matters(adr: Path, policy: Policy) -> None:
    (adr / "004.md").write_text("# ADR 4\n## Status\n### Context\n## Decision\n## Consequences\n")
    (finding,) = check(adr.parents[1], policy)
    assert "'## Context' is missing" in finding.description


def test_headings_inside_code_do_not_count(adr: Path, policy: Policy) -> None:
    body = "# ADR\n## Status\n```\n## Context\n```\n## Decision\n## Consequences\n"
    (adr / "005.md").write_text(body)
    (finding,) = check(adr.parents[1], policy)
    assert "'## Context' is missing" in finding.description


def test_each_document_is_checked(adr: Path, policy: Policy) -> None:
    good = "# T\n## Status\n## Context\n## Decision\n## Consequences\n"
    (adr / "a.md").write_text(good)
    (adr / "b.md").write_text("# T\n")
    (adr / "c.txt").write_text("not matched by the glob")
    assert [f.target for f in check(adr.parents[1], policy)] == ["docs/adr/b.md"]


def test_missing_template_is_a_finding(tmp_path: Path, policy: Policy) -> None:
    entries = [{"glob": "*.md", "template": "templates/none.md"}]
    (finding,) = template_findings(entries, tmp_path, policy)
    assert "not found" in finding.description


def test_template_paths_outside_the_project_are_refused(adr: Path, policy: Policy) -> None:
    root = adr.parents[1]
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("no headings at all")
    (adr / "escape.md").symlink_to(outside / "x.md")
    entries = [
        {"glob": "docs/adr/*.md", "template": "../t.md"},
        {"glob": "docs/adr/*.md", "template": "/etc/passwd"},
        {"glob": "../outside/*.md", "template": "templates/adr.md"},
        {"glob": str(outside / "*.md"), "template": "templates/adr.md"},
        {"glob": "docs/adr/*.md", "template": "templates/adr.md"},
    ]
    findings = template_findings(entries, root, policy)
    assert len(findings) == 5
    assert all("refused" in f.description and f.target is None for f in findings)
    assert "escape.md" in findings[-1].description


def test_no_templates_configured(tmp_path: Path, policy: Policy) -> None:
    assert template_findings([], tmp_path, policy) == []
    assert template_findings(None, tmp_path, policy) == []


def test_checks_do_not_change_the_working_directory(tmp_path: Path, policy: Policy) -> None:
    before = os.getcwd()
    run(tmp_path, policy, {"type": "t", "command": [PY, "-c", "raise SystemExit(1)"]})
    assert os.getcwd() == before


def test_checks_read_the_policy_frozen_configuration(tmp_path: Path) -> None:
    user = {
        "checks": {
            "commands": [{"type": "linting_errors", "command": [PY, "-c", "raise SystemExit(4)"]}],
            "coverage": {"report": "coverage.json", "min_percent": 50},
            "docs": {"required": ["README.md"]},
            "templates": [{"glob": "*.md", "template": "t.md"}],
        }
    }
    policy = build_policy(default_policy_data(), user)
    checks = policy.get("checks")
    (tmp_path / "t.md").write_text("# Title\n## Usage\n")
    findings = [
        *command_findings(checks["commands"], tmp_path, policy, timeout_s=30),
        *coverage_findings(checks["coverage"], tmp_path, policy),
        *docs_findings(checks["docs"], tmp_path, policy),
        *template_findings(checks["templates"], tmp_path, policy),
    ]
    assert [f.type for f in findings] == [
        "linting_errors",
        "test_coverage_low",
        "missing_documentation",
    ]  # t.md itself is the only *.md and carries its own headings
