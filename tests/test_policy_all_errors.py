"""Every policy error is reported at once, positioned, with did-you-mean for type names
(rules §3): three typos take one run to see, not three."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import example

THREE_TYPOS = """\
caps: {global_cycle: 3}
issue_types:
  linting_error: {retries: 2}
failure_types:
  runtime_eror: {retries: 2}
"""


def test_three_typos_one_run_three_positioned_errors(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    (folder / "selfcorrect.yaml").write_text(THREE_TYPOS)
    policy = f"{folder}/selfcorrect.yaml"
    for command in (["check", folder], ["run", folder]):
        result = run_line(command)
        assert result.exit_code == 2
        shown = (result.stdout + result.stderr).splitlines()  # check: stdout; run: stderr
        problems = [line for line in shown if line.startswith(policy)]
        assert problems == [
            f"{policy}:1:8: caps.global_cycle: unknown key; did you mean 'global_cycles'?",
            f"{policy}:3:18: issue_types.linting_error: unknown issue type; did you mean "
            "'linting_errors'? (a new type of your own needs `strategy:`)",
            f"{policy}:5:17: failure_types.runtime_eror: unknown failure type; did you mean "
            "'runtime_error'? (a new type of your own needs `retries` and `at_limit`)",
        ], shown
    assert not (folder / ".selfcorrect").exists()  # nothing written


def test_a_new_type_of_ones_own_is_no_typo(tmp_path: Path, run_line) -> None:
    folder = example(tmp_path)
    (folder / "selfcorrect.yaml").write_text(
        "issue_types:\n  flaky_snapshot: {retries: 1}\n"  # no known type is close
    )
    result = run_line(["check", folder])
    assert "issue_types.flaky_snapshot: no strategy (set `strategy:`" in result.stdout
    assert "did you mean" not in result.stdout
