"""The GitHub Action (action.yml) runs as a runner would run it: its steps in order, with its
inputs, `$GITHUB_OUTPUT`, `$GITHUB_ACTION_PATH` and the `if:` conditions (docs/ci.md, "The
selfcorrect action"). As in tests/test_docs.py, `uses:` steps cannot run here: setup-python is
this interpreter, and the upload is checked as the SARIF file it would upload."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import PIP_CACHE, REPO
from tests.test_docs import condition, environment, workspace, yaml_blocks


@functools.cache
def action() -> dict[str, Any]:
    """action.yml, read when a test needs it (collection reads no file)."""
    data: dict[str, Any] = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    return data


EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")
WAIT_S = 600  # the install step builds a wheel: a bound on a hang, never a timing assertion


def expand(
    text: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]], temp: Path
) -> str:
    """`${{ inputs.x }}`, `${{ runner.temp }}` and `${{ steps.s.outputs.o }}`, as GitHub does."""

    def value(match: re.Match[str]) -> str:
        parts = match[1].split(".")
        if parts[0] == "inputs":
            return inputs[parts[1]]
        if parts == ["runner", "temp"]:
            return str(temp)
        if parts[0] == "steps" and parts[2] == "outputs":
            return outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"tests/test_action.py cannot evaluate ${{{{ {match[1]} }}}}")

    return EXPRESSION.sub(value, text)


def play_action(
    root: Path, given: dict[str, str], install: dict[str, str] | None = None
) -> tuple[list[tuple[str, int, str]], dict[str, dict[str, str]]]:
    """Run the action's steps in `root` (the caller's workspace) until one fails.

    `install` is the environment the install step runs with; None skips it (the checkout's
    selfcorrect, first on PATH, is the one installed)."""
    unknown = set(given) - set(action()["inputs"])
    assert not unknown, f"action.yml has no input {unknown}"
    inputs = {name: str(spec.get("default", "")) for name, spec in action()["inputs"].items()}
    inputs |= given
    temp = root.parent / f"{root.name}-runner-temp"
    temp.mkdir()
    outputs: dict[str, dict[str, str]] = {}
    ran: list[tuple[str, int, str]] = []
    for step in action()["runs"]["steps"]:
        name = step.get("name", step.get("uses", ""))
        if "if" in step and not condition(step["if"], outputs):
            continue
        uses = step.get("uses", "")
        if "setup-python" in uses:  # this interpreter, never put on the job's PATH
            assert expand(step["with"]["python-version"], inputs, outputs, temp)
            assert step["with"]["update-environment"] is False
            outputs[step["id"]] = {"python-path": sys.executable}
            continue
        if "actions/cache" in uses:  # what it would cache: pip's folder, under a versioned key
            assert Path(expand(step["with"]["path"], inputs, outputs, temp)).is_absolute()
            assert expand(step["with"]["key"], inputs, outputs, temp).startswith(
                "selfcorrect-pip-Linux-"
            )
            continue
        if "upload-sarif" in uses:
            sarif = Path(expand(step["with"]["sarif_file"], inputs, outputs, temp))
            log = json.loads(sarif.read_text(encoding="utf-8"))
            assert log["version"] == "2.1.0" and log["runs"][0]["tool"]["driver"]["name"]
            ran.append((name, 0, expand(step["with"]["category"], inputs, outputs, temp)))
            continue
        assert step["shell"] == "bash" and not uses, step
        installing = "pip install" in step["run"]
        if installing and install is None:  # the checkout's selfcorrect, beside this python
            outputs[step["id"]] = {"bin": str(Path(sys.executable).parent)}
            continue
        github_output = temp / "github_output"
        github_output.write_text("", encoding="utf-8")
        env = environment() | (install if installing else {})
        env |= {"GITHUB_OUTPUT": str(github_output), "GITHUB_ACTION_PATH": str(REPO)}
        env |= {"GITHUB_PATH": str(temp / "github_path"), "GITHUB_ENV": str(temp / "github_env")}
        env |= {"GITHUB_STEP_SUMMARY": str(temp / "step_summary.md")}  # the job's summary page
        env |= {"RUNNER_TEMP": str(temp), "RUNNER_OS": "Linux"}
        for key, raw in step.get("env", {}).items():
            env[key] = expand(str(raw), inputs, outputs, temp)
        assert "${{" not in step["run"], "inputs reach a script through env:, never pasted in"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
        lines = github_output.read_text(encoding="utf-8").splitlines()
        outputs[step.get("id", "")] = dict(line.split("=", 1) for line in lines)
        ran.append((name, done.returncode, done.stdout + done.stderr))
        if done.returncode:
            break
    # The job's own Python and PATH are the caller's: no step changed them for later steps
    assert not (temp / "github_path").exists() and not (temp / "github_env").exists()
    return ran, outputs


def test_the_action_installs_from_its_checkout_uploads_sarif_and_fails_when_blocked(
    tmp_path: Path,
) -> None:
    """Every step for real, the install included: the `python` that setup-python would put first
    on PATH is a fresh venv's, and pip builds selfcorrect into it from the action's own folder
    ($GITHUB_ACTION_PATH); the later steps run what it installed."""
    install = {"PIP_CACHE_DIR": str(PIP_CACHE), "PYTHONPATH": ""}
    root = workspace(tmp_path / "repo")
    ran, outputs = play_action(root, {}, install)
    bin_dir = Path(outputs["install"]["bin"])
    assert bin_dir == tmp_path / "repo-runner-temp" / "selfcorrect-venv" / "bin"
    assert [(name, code) for name, code, _ in ran] == [
        ("Pip cache key", 0),
        ("Install selfcorrect", 0),
        ("Correction run", 0),
        ("Upload SARIF", 0),
        ("Fail unless PASS or PENDING", 1),  # the example folder is BLOCKED
    ], ran
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import selfcorrect; print(selfcorrect.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert Path(where).is_relative_to(bin_dir.parent)  # installed, not this checkout
    assert outputs["selfcorrect"]["exit"] == "1"
    assert "::error::selfcorrect run exited 1" in ran[-1][2]
    assert "workflow/escalations.yaml" in ran[-1][2]


def pending_folder(root: Path, name: str) -> None:
    folder = root / name
    failures = [
        {
            "tool": "Edit",
            "error": f"SyntaxError: Unexpected token '}}' in config.json at line {n}",
            "timestamp": f"2026-11-29T10:0{n}:00Z",
            "task_id": "T-9",
            "file_path": "config.json",
        }
        for n in range(1, 4)
    ]
    subprocess.run(
        [sys.executable, "-m", "selfcorrect", "init", "-q", str(folder)], check=True, cwd=root
    )
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump({"failures": failures}), encoding="utf-8"
    )


def test_a_pending_folder_passes_the_job_and_args_reach_the_run(tmp_path: Path) -> None:
    root = workspace(tmp_path / "repo")
    pending_folder(root, "agents/wf")
    ran, outputs = play_action(root, {"folder": "agents/wf", "args": "--shadow --max-cycles 1"})
    assert [(name, code) for name, code, _ in ran] == [
        ("Pip cache key", 0),
        ("Correction run", 0),
        ("Upload SARIF", 0),
    ]
    assert outputs["selfcorrect"]["exit"] == "3"  # PENDING: agents are at work, not a failure
    assert not (root / "agents" / "wf" / "recovery").exists()  # --shadow reached the run
    assert ran[-1][2] == "selfcorrect/agents/wf"  # the upload's category is the folder's


def test_invalid_input_fails_the_job_without_an_upload(tmp_path: Path) -> None:
    root = workspace(tmp_path / "repo")
    ran, outputs = play_action(root, {"args": "--no-such-option"})
    assert [(name, code) for name, code, _ in ran] == [
        ("Pip cache key", 0),
        ("Correction run", 0),
        ("Fail unless PASS or PENDING", 1),
    ]
    assert outputs["selfcorrect"]["exit"] == "2"
    assert "2 invalid input" in ran[-1][2]


def test_ci_md_uses_the_action_with_inputs_it_has() -> None:
    uses = [
        step
        for block in yaml_blocks("ci.md")
        if isinstance(block, dict)
        for job in block.get("jobs", {}).values()
        for step in job["steps"]
        if str(step.get("uses", "")).split("@")[0].endswith("/selfcorrect")
    ]
    assert uses, "docs/ci.md shows no job that uses the action"
    for step in uses:
        assert set(step.get("with", {})) <= set(action()["inputs"]), step


def test_the_action_runs_selfcorrect_run_with_sarif() -> None:
    scripts = " ".join(step.get("run", "") for step in action()["runs"]["steps"])
    assert '"$BIN/selfcorrect" run "$FOLDER" --format github --sarif "$SARIF"' in scripts
    assert action()["runs"]["using"] == "composite"
    uses: list[Any] = [step.get("uses", "") for step in action()["runs"]["steps"]]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    assert any(u.startswith("actions/setup-python@") for u in uses)


def test_upload_sarif_false_skips_the_upload_and_still_fails_when_blocked(tmp_path: Path) -> None:
    root = workspace(tmp_path / "repo")
    ran, outputs = play_action(root, {"upload-sarif": "false"})
    assert [(name, code) for name, code, _ in ran] == [
        ("Pip cache key", 0),
        ("Correction run", 0),
        ("Fail unless PASS or PENDING", 1),  # no upload; the example is still BLOCKED
    ]
    assert outputs["selfcorrect"]["upload"] == "false"


def test_args_are_split_as_a_shell_would_without_expanding_anything(tmp_path: Path) -> None:
    hostile = workspace(tmp_path / "hostile")
    ran, outputs = play_action(hostile, {"args": "--max-cycles 1 $(touch pwned)"})
    # `$(touch pwned)` is text: two (refused) arguments, never a command
    assert outputs["selfcorrect"]["exit"] == "2"
    assert "unexpected extra arguments ($(touch pwned))" in ran[1][2]
    assert not (hostile / "pwned").exists()
    root = workspace(tmp_path / "repo")
    (root / "ci policy.yaml").write_text("mode: shadow\n", encoding="utf-8")
    ran, outputs = play_action(root, {"args": '--policy "ci policy.yaml" --shadow'})
    # the quoted path reached the run whole: its policy (every rule in shadow) was read, so the
    # example is PENDING rather than BLOCKED (split on spaces, `"ci` was no file: exit 2)
    assert outputs["selfcorrect"]["exit"] == "3", ran


def test_every_action_the_action_uses_is_pinned_by_commit() -> None:
    uses = [step["uses"] for step in action()["runs"]["steps"] if "uses" in step]
    assert {u.split("@")[0] for u in uses} == {
        "actions/setup-python",
        "actions/cache",
        "github/codeql-action/upload-sarif",
    }
    for ref in uses:
        assert re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", ref), ref
    text = (REPO / "action.yml").read_text(encoding="utf-8")
    for ref in uses:  # the tag each commit is, beside it, for a person updating them
        assert re.search(re.escape(ref) + r" # v\d+\.\d+\.\d+\n", text), ref


def test_ci_md_installs_from_the_repository_not_a_package_index() -> None:
    ci = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    source = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]["Source"]
    assert f'"selfcorrect @ git+{source}@REF"' in ci
    assert "not published on a package index" in ci
    assert not re.search(r"pip install (-\S+ )*selfcorrect\b(?! @)", ci)  # never from PyPI
