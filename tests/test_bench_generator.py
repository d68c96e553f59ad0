"""The benchmark's generators write what they claim, and `python -m bench` runs (no timings)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from selfcorrect.errors import Diagnostic
from selfcorrect.io.documents import read_failure_log
from tests.conftest import CORPUS

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # bench/ is not in the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import generate, hooks, rerun
from bench.run import FIGURES, _selfcorrect, _wall, table

REPO = Path(__file__).resolve().parents[1]
CORPUS_LOG = CORPUS / "workflow" / "tool_failures.yaml"
CANONICAL_KEYS = {
    "tool", "error", "timestamp", "agent_id", "task_id", "outcome", "approach", "recoverable",
    "read_only", "input_digest",
}  # fmt: skip


def read_back(path: Path) -> tuple[list[dict], list[Diagnostic]]:
    warnings: list[Diagnostic] = []
    return [entry.data for entry in read_failure_log(path, warnings)], warnings


def test_canonical_log_loads_with_libyaml_to_the_generated_values(tmp_path: Path) -> None:
    path = generate.write_canonical(tmp_path / "tool_failures.yaml", 300, seed=7)
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    expected = [generate.canonical_value(e) for e in generate.entries(300, seed=7)]
    assert data["failures"] == expected
    for entry in data["failures"]:
        assert CANONICAL_KEYS <= set(entry) <= CANONICAL_KEYS | {"file_path"}
    assert any("\\" in entry.get("file_path", "") for entry in data["failures"])
    assert {entry["outcome"] for entry in data["failures"]} == {"failure", "partial", "success"}
    assert path.read_text(encoding="utf-8").count("\n  - tool: ") == 300


def test_canonical_log_reads_back_through_selfcorrect_without_warnings(tmp_path: Path) -> None:
    path = generate.write_canonical(tmp_path / "tool_failures.yaml", 200)
    entries, warnings = read_back(path)
    assert warnings == []
    assert entries == [generate.canonical_value(e) for e in generate.entries(200)]


def test_generators_are_deterministic_for_a_seed(tmp_path: Path) -> None:
    for writer in (generate.write_canonical, generate.write_dialect):
        first = writer(tmp_path / "a.yaml", 50, seed=3).read_bytes()
        assert writer(tmp_path / "b.yaml", 50, seed=3).read_bytes() == first
        assert writer(tmp_path / "c.yaml", 50, seed=4).read_bytes() != first


def test_dialect_entry_is_the_hooks_template_byte_for_byte() -> None:
    text = generate.dialect_entry(
        "Edit",
        "D:\\a\\app\\util.c",
        'TypeError: "x" is undefined\nat line 3',
        "2026-08-05T14:00:30.012Z",
        "executor-1",
        False,
    )
    assert text == (
        '\n- tool: "Edit"'
        '\n  file_path: "D:\\a\\app\\util.c"'
        "\n  error: \"TypeError: 'x' is undefined at line 3\""
        '\n  timestamp: "2026-08-05T14:00:30.012Z"'
        '\n  agent_id: "executor-1"'
        "\n  recoverable: false\n"
    )
    no_path = generate.dialect_entry("Bash", None, "e" * 250, "t", "a", True)
    assert no_path == '\n- tool: "Bash"\n  error: "' + "e" * 200 + '"\n  timestamp: "t"' + (
        '\n  agent_id: "a"\n  recoverable: true\n'
    )


def test_dialect_entries_match_the_real_hooks_output() -> None:
    """Two entries of the corpus log, written by the real hook, rebuilt by the template."""
    real = CORPUS_LOG.read_text(encoding="utf-8")
    assert real.startswith("# Tool Failure Log\n# Session: ")
    agent = "3f9c2a71-8d4e-4b6a-9e21-7c5d0f1a2b34"
    first = generate.dialect_entry(
        "Read",
        "/home/dev/webapp/src/auth/token-store.ts",
        "File does not exist. Note: your current working directory is /home/dev/webapp.",
        "2026-08-05T14:00:30.012Z",
        agent,
        True,
    )
    second = generate.dialect_entry(
        "Bash",
        None,
        "Command failed with exit code 127\n/bin/bash: line 1: pnpm: command not found",
        "2026-08-05T14:01:00.014Z",
        agent,
        True,
    )
    assert "\nfailures:" + first + second in real


def test_dialect_file_has_the_hooks_header(tmp_path: Path) -> None:
    text = generate.write_dialect(tmp_path / "t.yaml", 2).read_text(encoding="utf-8")
    assert text.startswith("# Tool Failure Log\n# Session: ")
    assert '\n\nfailures:\n- tool: "' in text
    assert text.count("\n\n- tool: ") == 1


@pytest.mark.parametrize(
    ("file_path", "error"),
    [
        ("D:\\a\\app\\util.c", "ENOENT"),  # `\a` is a YAML escape: a bell, not the path
        (None, "grep: Unmatched ( or \\( in pattern '\\d+'"),  # unknown escape
        (None, "\x1b[31mFAIL\x1b[0m tests/a.test.ts"),  # raw ESC
    ],
)
def test_raw_dialect_values_defeat_libyaml(
    tmp_path: Path, file_path: str | None, error: str
) -> None:
    text = generate.DIALECT_HEADER.format(session="s") + generate.dialect_entry(
        "Bash", file_path, error, "2026-08-05T14:00:30.012Z", "a", True
    )
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return
    entry = data["failures"][0]
    assert (entry.get("file_path"), entry["error"]) != (file_path, error)


def test_generated_dialect_log_is_not_libyaml_readable(tmp_path: Path) -> None:
    text = generate.write_dialect(tmp_path / "t.yaml", 300).read_text(encoding="utf-8")
    assert "\x1b" in text and "\\a" in text and "\\d" in text
    with pytest.raises(yaml.YAMLError):
        yaml.load(text, Loader=yaml.CSafeLoader)


def test_selfcorrect_reads_every_dialect_entry_with_its_raw_text(tmp_path: Path) -> None:
    path = generate.write_dialect(tmp_path / "tool_failures.yaml", 500, seed=11)
    entries, warnings = read_back(path)
    assert warnings == []
    assert entries == [generate.dialect_value(e) for e in generate.entries(500, seed=11)]
    assert any("\x1b" in entry["error"] for entry in entries)
    assert any(entry["recoverable"] is False for entry in entries)
    assert any("file_path" not in entry for entry in entries)


def test_generate_cli_writes_the_requested_form(tmp_path: Path) -> None:
    out = tmp_path / "d.yaml"
    assert generate.main(["--entries", "5", "--form", "dialect", str(out)]) == 0
    assert out.read_bytes() == generate.write_dialect(tmp_path / "e.yaml", 5).read_bytes()


def test_bench_runs_and_reports_every_figure_as_json() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--entries", "200", "--repeat", "1", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["entries"] == 200
    assert set(report["figures"]) == set(FIGURES)
    for name, figure in report["figures"].items():
        assert isinstance(figure["ratio"], float) and math.isfinite(figure["ratio"]), name
        assert isinstance(figure["met"], bool), name


@pytest.mark.parametrize("scenario", ["repeating", "distinct"])
def test_the_soak_runs_and_reports_the_state_it_leaves(scenario: str) -> None:
    runs = ["--runs", "12", "--every", "6", "--scenario", scenario, "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.soak", *runs],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [row["runs"] for row in report["rows"]] == [6, 12]
    last = report["rows"][-1]
    assert last["log_bytes"] > 0 and last["log_cache_bytes"] > 0
    assert last["state_bytes"] == sum(last["files"].values())
    assert report["bounded"] is True


def test_the_success_measurement_logs_one_success_per_call(tmp_path: Path) -> None:
    """Each measured success hook call really logs: one failure hook reopens the agent's
    streak before it, and the log gains exactly one success per call (warm-up included)."""
    env = hooks.environment()
    hooks.success_logging_times(tmp_path, 10, _selfcorrect(), env, runs=3, keep=True)
    log = tmp_path / "success-logging" / "workflow" / "tool_failures.yaml"
    entries, warnings = read_back(log)
    assert warnings == []
    assert len(entries) == 10 + 2 * 4  # the log's 10, then a failure and a success per call
    new = entries[10:]
    assert [e.get("outcome") for e in new[1::2]] == ["success"] * 4
    assert all("outcome" not in e for e in new[0::2])
    assert {e["agent_id"] for e in new} == {hooks.STREAK_AGENT}
    assert hooks.successes(log) == 4


def test_the_success_measurement_aborts_when_a_call_does_not_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call whose agent has no open streak is not logged: the bench says so and stops."""
    unlisted = dict(hooks._streak_success(0), agent_id="someone-else")
    monkeypatch.setattr(hooks, "_streak_success", lambda number: unlisted)
    with pytest.raises(SystemExit, match="did not end the streak"):
        hooks.success_logging_times(tmp_path, 10, _selfcorrect(), hooks.environment(), runs=1)


@pytest.mark.parametrize("form", rerun.FORMS)
def test_the_rerun_measurement_runs_on_each_form(tmp_path: Path, form: str) -> None:
    found = rerun.rerun_times(tmp_path, 30, _selfcorrect(), _wall, form, runs=1)
    assert set(found) == {"full", "small", "unchanged", "appended"}
    assert all(isinstance(v, float) and v > 0 for v in found.values())
    assert list(tmp_path.iterdir()) == []  # its folders are removed


def test_the_rerun_appends_in_the_hooks_dialect(tmp_path: Path) -> None:
    """The dialect rerun appends entries as the hook writes them: the reader takes them."""
    _, append = rerun._writers("dialect")
    log = generate.write_dialect(tmp_path / "tool_failures.yaml", 5)
    extra = list(generate.entries(8, seed=1))[5:]
    with log.open("a", encoding="utf-8", newline="\n") as handle:
        handle.writelines(append(e) for e in extra)
    entries, warnings = read_back(log)
    assert warnings == []
    assert entries[5:] == [generate.dialect_value(e) for e in extra]


@pytest.mark.parametrize(
    ("full", "small", "anchor", "target", "named"),
    [
        (10.0, 0.2, 10.0, 0.1, "anchor: full run"),  # 1.0 s allowed > 0.3 s
        (3.6, 0.26, 0.26, 1.5, "anchor: 10-entry run"),  # 0.39 s allowed > 0.36 s
    ],
)
def test_the_rerun_target_is_the_larger_allowance(
    full: float, small: float, anchor: float, target: float, named: str
) -> None:
    allowance = rerun.Allowance.larger(full, small)
    assert (allowance.anchor, allowance.target) == (anchor, target)
    assert allowance.note.startswith(named)


def test_the_table_says_which_rerun_allowance_applied() -> None:
    from bench.run import _allowed_row

    row = _allowed_row("rerun_unchanged_dialect", 0.49, rerun.Allowance.larger(3.6, 0.26))
    assert row.target == 1.5 and row.anchor == 0.26 and not row.met
    printed = table([row])
    assert "<= 1.5x" in printed
    assert "anchor: 10-entry run; 1.5x of it (0.390 s) > 0.1x the full run (0.360 s)" in printed
