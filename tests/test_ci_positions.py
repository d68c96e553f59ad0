"""CI formats point at lines and explain their rules (docs/ci.md, "Lines"): every path relative
to the repository root, also when run from a monorepo package; rules with a full description,
help and a link into this repository's docs/."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO, copy_example
from tests.helpers import git
from tests.test_ci_messages import sarif_errors


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A monorepo with the example under packages/app/workflow; the run starts in packages/app."""
    repo = tmp_path / "mono"
    (repo / "packages" / "app").mkdir(parents=True)
    git(repo, "init", "-q")
    copy_example(repo / "packages" / "app" / "workflow")
    monkeypatch.chdir(repo / "packages" / "app")
    return repo


def test_from_a_monorepo_package_every_path_is_relative_to_the_repository(
    package: Path, run_line
) -> None:
    data = json.loads(run_line(["run", "workflow", "--shadow", "--format", "json"]).stdout)
    assert data["workflow_dir"] == "packages/app/workflow"
    sarif = json.loads(run_line(["run", "workflow", "--shadow", "--format", "sarif"]).stdout)
    assert sarif_errors(sarif) == []
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in sarif["runs"][0]["results"]
    }
    assert "packages/app/workflow/validation_report.yaml" in uris
    assert "packages/app/workflow/tool_failures.yaml" in uris
    assert not any(uri.startswith("workflow/") for uri in uris), uris
    github = run_line(["run", "workflow", "--shadow", "--format", "github"]).stdout
    assert "file=packages/app/workflow/tool_failures.yaml,line=13," in github
    assert "file=workflow/" not in github


def _slugs(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    heads = re.findall(r"^#+ (.+)$", markdown, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", head.lower()).replace(" ", "-") for head in heads}


def test_every_rule_has_help_pointing_into_this_repositorys_docs(tmp_path: Path, run_line) -> None:
    copy_example(tmp_path / "workflow")
    sarif = json.loads(
        run_line(["run", tmp_path / "workflow", "--shadow", "--format", "sarif"]).stdout
    )
    assert sarif_errors(sarif) == []
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == urls["Source"]
    rules = driver["rules"]
    assert {r["id"] for r in rules} >= {"test_coverage_low", "failure/runtime_error"}
    for rule in rules:
        kind = rule["id"].removeprefix("failure/")
        assert kind in rule["fullDescription"]["text"]
        assert "selfcorrect reset" in rule["help"]["text"]
        page, _, anchor = (
            rule["helpUri"].removeprefix(urls["Source"] + "/blob/main/").partition("#")
        )
        assert (REPO / page).is_file(), rule["helpUri"]
        assert anchor in _slugs((REPO / page).read_text(encoding="utf-8")), rule["helpUri"]


TYPO_POLICY = "caps: {global_cycle: 3}\n"


@pytest.fixture
def mistyped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example with a mistyped policy key; the test runs from beside the folder."""
    copy_example(tmp_path / "workflow")
    (tmp_path / "workflow" / "selfcorrect.yaml").write_text(TYPO_POLICY)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "workflow"


def test_check_speaks_github_and_sarif_and_github_is_the_default_under_actions(
    mistyped: Path, run_line, monkeypatch: pytest.MonkeyPatch
) -> None:
    github = run_line(["check", "workflow", "--format", "github"])
    assert github.exit_code == 2
    assert github.stdout == (
        "::error file=workflow/selfcorrect.yaml,line=1,col=8,title=selfcorrect input error"
        "::caps.global_cycle: unknown key; did you mean 'global_cycles'?\n"
    )
    sarif = json.loads(run_line(["check", "workflow", "--format", "sarif"]).stdout)
    assert sarif_errors(sarif) == []
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "workflow/selfcorrect.yaml"},
        "region": {"startLine": 1, "startColumn": 8},
    }
    assert sarif["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"].endswith("#2-inputs")

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert run_line(["check", "workflow"]).stdout == github.stdout  # as yamllint does
    text = run_line(["check", "workflow", "--format", "text"]).stdout
    assert text.startswith("workflow/selfcorrect.yaml:1:8: caps.global_cycle")


def test_an_invalid_policy_under_run_format_github_is_an_annotation_on_stdout(
    mistyped: Path, run_line
) -> None:
    result = run_line(["run", "workflow", "--format", "github"])
    assert result.exit_code == 2
    assert result.stdout.startswith("::error file=workflow/selfcorrect.yaml,line=1,col=8,")
    assert "did you mean 'global_cycles'?" in result.stdout
    assert not (mistyped / ".selfcorrect").exists()  # nothing written
