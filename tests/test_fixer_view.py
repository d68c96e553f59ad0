"""A decision's fixer is the typed `Fixer` view: everything a remediation reads of the fix it
runs (its command, scope, bounds, or the built-in fix and its template), chosen from the
policy's `fix:` entries (docs/policy.md)."""

from __future__ import annotations

from selfcorrect.core.classify import IssueClassifier, IssueDecision
from selfcorrect.core.model import Issue, Severity
from selfcorrect.core.policy_views import Fixer
from selfcorrect.core.state import IssueState
from selfcorrect.effects.remediation import fix_scope
from tests.helpers import policy_with

FIXES = [
    {"command": ["absent", "{target}"], "applies_to": ["*.py"]},  # not installed
    {"command": ["eslint", "--fix", "{files}"], "applies_to": ["*.ts"]},  # another file type
    {
        "command": ["ruff", "--fix", "{target}"],
        "applies_to": ["*.py"],
        "scope": ["src/*.py", "tests/*.py"],
        "max_changed_lines": 7,
        "timeout_s": 3,
    },
]


def decide(target: str, fixes: list[dict[str, object]]) -> IssueDecision:
    policy = policy_with(issue_types={"linting_errors": {"fix": fixes}})
    classifier = IssueClassifier(policy, lambda program: program in ("ruff", "eslint"))
    issue = Issue(Severity.MAJOR, "F401 unused import", "linting_errors", "L1", target=target)
    return classifier.decide(issue, IssueState(), "digest")


def test_the_first_installed_fixer_for_the_file_is_the_decisions_typed_fixer() -> None:
    decision = decide("src/a.py", FIXES)
    assert decision.fixer == Fixer(
        command=("ruff", "--fix", "{target}"),
        applies_to=("*.py",),
        max_changed_lines=7,
        timeout_s=3.0,
        scope=("src/*.py", "tests/*.py"),
    )
    # The remediation reads its scope from the view: what the fix may change.
    assert fix_scope(decision) == ["src/*.py", "tests/*.py"]


def test_a_fixer_without_scope_may_change_only_the_issues_target() -> None:
    decision = decide("./src/b.py", [{"command": ["ruff", "{target}"]}])
    assert decision.fixer == Fixer(("ruff", "{target}"), ("*",), None, None)
    assert fix_scope(decision) == ["src/b.py"]


def test_no_installed_fixer_for_the_file_is_none() -> None:
    assert decide("src/a.rs", FIXES).fixer is None


def test_a_built_in_fix_names_its_strategy_and_template_and_runs_no_command() -> None:
    fixer = Fixer.built_in("restructure", "templates/doc.md")
    assert (fixer.builtin, fixer.template, fixer.command, fixer.scope) == (
        "restructure",
        "templates/doc.md",
        (),
        (),
    )
    assert (fixer.max_changed_lines, fixer.timeout_s) == (None, None)
