"""A new user's own project: `init`, then `validate`, then `run --validate-first`, each a real
process of the CLI, as the quick start writes them (docs/rules.md §14, docs/integration.md).

The report `init` writes says no validator has run: it is no one's report, so the built-in
validator replaces it, while a report another validator wrote stays protected."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import USAGE_MISSING, cli_process, fixable_report, git, load

UNKNOWN_STUB = Path(__file__).parent / "examples" / "validation_report" / "positive"


def new_project(tmp_path: Path) -> Path:
    """A git repository with a small package and nothing of selfcorrect's yet."""
    repo = tmp_path / "calc"
    (repo / "calc").mkdir(parents=True)
    (repo / "calc" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    return repo


def test_validate_on_a_fresh_folder_writes_its_report(tmp_path: Path) -> None:
    repo = new_project(tmp_path)
    assert cli_process(repo, "init", "wf").returncode == 0
    validated = cli_process(repo, "validate", "wf")
    assert validated.returncode == 0, validated.stderr
    assert "another validator" not in validated.stderr
    report = load(repo / "wf" / "validation_report.yaml")
    assert report["status"] == "PASS" and report["validator"] == "selfcorrect"

    ran = cli_process(repo, "run", "wf")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("PASS")


def test_run_validate_first_on_a_fresh_folder_reaches_a_verdict(tmp_path: Path) -> None:
    repo = new_project(tmp_path)
    assert cli_process(repo, "init", "wf").returncode == 0
    ran = cli_process(repo, "run", "wf", "--validate-first")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("PASS") and "No verdict yet" not in ran.stdout
    assert load(repo / "wf" / "validation_report.yaml")["validator"] == "selfcorrect"


def test_a_stub_another_writer_names_stays_protected(tmp_path: Path) -> None:
    """The verify-completion hook's stub names its writer: it is that pipeline's report."""
    repo = new_project(tmp_path)
    assert cli_process(repo, "init", "wf").returncode == 0
    report = repo / "wf" / "validation_report.yaml"
    report.write_bytes((UNKNOWN_STUB / "unknown_stub.yaml").read_bytes())
    before = report.read_bytes()
    refused = cli_process(repo, "validate", "wf")
    assert refused.returncode == 2 and "verify-completion-hook" in refused.stderr
    assert report.read_bytes() == before


def test_a_pass_has_no_empty_why_line(tmp_path: Path) -> None:
    repo = new_project(tmp_path)
    assert cli_process(repo, "init", "wf").returncode == 0
    ran = cli_process(repo, "run", "wf", "--validate-first")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Why:" not in ran.stdout, ran.stdout


def test_the_header_shows_the_exit_code_pending_ok_returns(tmp_path: Path) -> None:
    """The pre-commit hook's run: work handed to an agent is PENDING, and exits 0."""
    repo = new_project(tmp_path)
    assert cli_process(repo, "init", "wf").returncode == 0
    fixable_report(repo / "wf", USAGE_MISSING)
    ran = cli_process(repo, "run", "wf", "--pending-ok")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines()[0] == "PENDING  selfcorrect run wf  (exit 0)"
    plain = cli_process(repo, "run", "wf")
    assert plain.returncode == 3
    assert plain.stdout.splitlines()[0] == "PENDING  selfcorrect run wf  (exit 3)"


def test_a_reset_of_an_unknown_subject_lists_the_known_ones(tmp_path: Path) -> None:
    repo = new_project(tmp_path)
    assert cli_process(repo, "init", "wf").returncode == 0
    fixable_report(repo / "wf", USAGE_MISSING)
    assert cli_process(repo, "run", "wf").returncode == 3
    reset = cli_process(repo, "reset", "wf", "--subject", "WI-5", "--evidence", "checked")
    assert reset.returncode == 2
    assert "known: WI-4" in reset.stderr, reset.stderr
