"""A failure's summary keeps its cause, not its echo (docs/rules.md §9.6).

Seen in a real session: `failed_items`, the escalations' error chains and the hooks' stuck
advisories showed `$ python -m pytest -q` and pytest's progress dots where the
`FAILED tests/…::test_… - …` line was. Every text here is the real output of the real tool,
run in tmp_path (pytest, ruff, mypy, a Python traceback, `npm test`), or a real session's
(tsc), as a hook logs it: its lines joined into one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from selfcorrect.core.summary import ELISION, clip, summary
from selfcorrect.io.failure_append import one_line
from tests.helpers import allow, load

CORE = "def add(a, b):\n    return a - b\n"
TEST = (
    "from core import add\n\n\ndef test_one():\n    assert add(1, 1) == 0\n\n\n"
    "def test_add():\n    assert add(2, 2) == 4\n\n\ndef test_two():\n    assert True\n"
)
BAD = 'import os\nx: int = "a"\n'
RAISES = (
    'def f(x):\n    raise TypeError(f"add() missing 1 required positional argument: {x}")\n'
    '\n\nf("b")\n'
)
NODE_TEST = 'const assert = require("assert");\nassert.strictEqual(1 + 1, 3, "sum is wrong");\n'
# The real cAgents session's tsc failure, as its hook logged it (tests/replay/cagents-session).
TSC = (
    "error TS2339: Property 'refreshToken' does not exist on type 'Session'. "
    "src/auth/service.ts(88,23): error TS2532: Object is possibly 'undefined'."
)
PYTEST_CAUSE = "FAILED tests/test_core.py::test_add - assert 0 == 4"
MYPY_CAUSE = 'bad.py:2: error: Incompatible types in assignment (expression has type "str"'


def _output(argv: list[str], cwd: Path) -> str:
    """What the command printed (stdout and stderr, as a terminal shows them), echoed first as
    a shell with `set -x` or an agent's transcript shows it."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "NO_COLOR": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode != 0, done.stdout + done.stderr
    return f"$ {' '.join(Path(a).name if a == sys.executable else a for a in argv)}\n" + (
        done.stdout + done.stderr
    )


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each tool's real output on a small failing project."""
    root = tmp_path_factory.mktemp("project")
    (root / "tests").mkdir()
    (root / "core.py").write_text(CORE)
    (root / "tests" / "test_core.py").write_text(TEST)
    (root / "bad.py").write_text(BAD)
    (root / "raises.py").write_text(RAISES)
    python = sys.executable
    found = {
        "pytest": _output([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], root),
        "ruff": _output([python, "-m", "ruff", "check", "--no-cache", "bad.py"], root),
        "mypy": _output([python, "-m", "mypy", "--no-incremental", "bad.py"], root),
        "traceback": _output([python, "raises.py"], root),
    }
    if shutil.which("npm") and shutil.which("node"):
        node = root / "node"
        node.mkdir()
        (node / "package.json").write_text(
            json.dumps({"name": "pkg", "version": "1.0.0", "scripts": {"test": "node test.js"}})
        )
        (node / "test.js").write_text(NODE_TEST)
        found["npm"] = _output(["npm", "test"], node)
    return found


CAUSES = {
    "pytest": PYTEST_CAUSE,
    "ruff": "F401 [*] `os` imported but unused",
    "mypy": MYPY_CAUSE,
    "traceback": "TypeError: add() missing 1 required positional argument: b",
    "npm": "AssertionError [ERR_ASSERTION]: sum is wrong",
}


@pytest.mark.parametrize("tool", sorted(CAUSES))
@pytest.mark.parametrize("joined", [False, True], ids=["as printed", "as a hook logs it"])
def test_the_summary_shows_what_failed_not_the_echo_or_the_dots(
    outputs: dict[str, str], tool: str, joined: bool
) -> None:
    if tool not in outputs:
        if os.environ.get("CI") == "true":  # .ci/run's machine has npm: never a silent pass
            pytest.fail("npm is not installed")
        pytest.skip("npm is not installed")
    text = one_line(outputs[tool]) if joined else outputs[tool]
    assert text.startswith("$ ")  # the echo leads the real output

    shown = summary(text)

    assert CAUSES[tool] in shown, shown
    assert not shown.startswith("$"), shown
    assert "[100%]" not in shown and ".F." not in shown, shown
    assert len(shown) <= 200


def test_the_summary_of_a_compiler_error_is_its_error_line() -> None:
    assert summary(TSC) == TSC  # short and one line: it is the cause, whole
    assert summary(f"$ npx tsc --noEmit\n{TSC}") == TSC


def test_every_failed_test_is_named_in_order(outputs: dict[str, str]) -> None:
    two = outputs["pytest"].replace(
        PYTEST_CAUSE, f"FAILED tests/test_core.py::test_one - assert 0 == 0\n{PYTEST_CAUSE}"
    )
    assert summary(two) == (f"FAILED tests/test_core.py::test_one - assert 0 == 0; {PYTEST_CAUSE}")


def test_a_text_that_names_no_error_is_kept_without_its_echo() -> None:
    assert summary("Command failed with exit code 1") == "Command failed with exit code 1"
    assert summary("$ make deploy\n....\nno route to the staging host") == (
        "no route to the staging host"
    )
    issue = "weak synthesis: no implementation step covers task WI-2 'Emails' (status pending)"
    assert summary(issue) == issue


def test_a_long_cause_keeps_its_head_and_its_tail() -> None:
    cause = "FAILED tests/test_api.py::test_payload - AssertionError: assert {" + "'k': 1, " * 60
    cause += "'last': 2} == {'last': 3}"
    shown = summary(f"$ pytest -q\n..F  [100%]\n{cause}\n1 failed in 0.20s")

    assert len(shown) <= 200 and ELISION in shown
    assert shown.startswith("FAILED tests/test_api.py::test_payload - AssertionError")
    assert shown.endswith("'last': 2} == {'last': 3}")
    assert clip("a b", 200) == "a b"


def test_a_huge_output_is_summarised_quickly() -> None:
    # Agent text is data: spaces, dots and separators by the megabyte cost a glance.
    for text in (" " * 2_000_000 + "x", "a." * 500_000, "=" * 1_000_000, "E  " * 300_000):
        assert len(summary(text)) <= 200


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # the last line naming an error, not the command echo at the top
        ("$ make test\nbuilding...\nerror: linker failed\ndone", "error: linker failed"),
        (
            "collected 3 items\nFAILED t.py::x - KeyError: 'a'\n1 failed",
            "FAILED t.py::x - KeyError",
        ),
        ("fatal: not a git repository\n", "fatal: not a git repository"),
        ("Exception in thread main\n  at Foo.bar", "Exception in thread main"),
        # a hook joins an output's lines into one: keep it from the last error name on
        (
            "progress " * 40 + "urllib.error.URLError: Name or service not known",
            "urllib.error.URLError",
        ),
        # nothing names an error: the text as it is
        ("Command failed with exit code 1", "Command failed with exit code 1"),
    ],
)
def test_the_summary_keeps_the_last_line_that_names_an_error(text: str, kept: str) -> None:
    assert summary(text).startswith(kept)


# --------------------------------------------------------------------------- end to end


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "core.py").write_text(CORE)
    (root / "tests" / "test_core.py").write_text(TEST)
    (root / ".git").mkdir()  # the project root
    folder = root / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(
        yaml.safe_dump(
            {
                "controller": "lead",
                "status": "in_progress",
                "synthesized_solution": {
                    "approach": "Make add add",
                    "rationale": "Its test fails",
                    "implementation_steps": ["Fix add in core.py"],
                },
                "implementation_tasks": [
                    {
                        "task_id": "WI-1",
                        "name": "Fix add in core.py",
                        "agent_id": "exec-1",
                        "status": "in_progress",
                        "files": ["core.py", "tests/test_core.py"],
                    }
                ],
            },
            sort_keys=False,
        )
    )
    return folder


def test_a_validators_test_evidence_is_summarised_by_its_failed_line(
    tmp_path: Path, run_line
) -> None:
    # The built-in validator runs the project's tests; its issue quotes pytest's output tail.
    # A person is paged for it (classification BLOCKED), so the escalation shows it too.
    folder = _project(tmp_path)
    (folder / "selfcorrect.yaml").write_text(
        yaml.safe_dump(
            {
                "issue_types": {"acceptance_criterion_unmet": {"classification": "BLOCKED"}},
                "checks": {
                    "commands": [
                        {
                            "type": "acceptance_criterion_unmet",
                            "command": [
                                sys.executable,
                                "-m",
                                "pytest",
                                "-q",
                                "-p",
                                "no:cacheprovider",
                                "tests",
                            ],
                            "target": "tests/test_core.py",
                        }
                    ]
                },
            }
        )
    )
    allow(folder)  # the check command is the person's
    run_line(["validate", folder])
    [issue] = load(folder / "validation_report.yaml")["issues"]
    assert "[100%]" in issue["description"]  # the evidence: pytest's whole output tail

    result = run_line(["run", folder, "--format", "json"])

    [entry] = load(folder / "coordination_log.yaml")["failed_items"]
    [escalation] = load(folder / "escalations.yaml")["escalations"]
    [row] = json.loads(result.stdout)["issues"]
    said = (
        entry["error_summary"],
        entry["escalation_context"],
        escalation["reason"],
        escalation["error_chain"][0],
        row["description"],
    )
    for shown in said:
        assert PYTEST_CAUSE in shown, shown
        assert "[100%]" not in shown and "-m pytest" not in shown, shown


def test_a_hooks_joined_failure_is_summarised_by_its_cause_everywhere(
    tmp_path: Path, outputs: dict[str, str], run_line
) -> None:
    # Three failures of the same mypy run, as the failure hook logs them (one line each):
    # failed_items, the prompt's "What failed" and error chain, and the stuck advisory.
    folder = _project(tmp_path)
    error = one_line(outputs["mypy"])
    (folder / "tool_failures.yaml").write_text(
        yaml.safe_dump(
            {
                "failures": [
                    {
                        "tool": "Bash",
                        "agent_id": "exec-1",
                        "error": error,
                        "timestamp": f"2026-11-29T10:0{n}:00Z",
                    }
                    for n in range(3)
                ]
            }
        )
    )

    data = json.loads(run_line(["run", folder, "--format", "json"]).stdout)

    [entry] = load(folder / "coordination_log.yaml")["failed_items"]
    prompt = (folder / "recovery" / "WI-1.md").read_text()
    what_failed = next(line for line in prompt.splitlines() if line.startswith("What failed:"))
    [repeated] = [a for a in data["advisories"] if a["signal"] == "repeated_error"]
    for shown in (entry["error_summary"], what_failed, repeated["pattern"]):
        assert MYPY_CAUSE[:35] in shown, shown  # the advisory shows 80 characters
        assert "$ " not in shown and "mypy --no-incremental" not in shown, shown
