"""The suite runs on a user's fresh clone, with nothing beside it.

CI clones the repository into an empty temporary folder and runs the README's test command
there (.ci/run). These tests keep the three promises that makes possible: CI runs exactly the
README's command, no test reaches outside the repository for a fixture, and collection reads
no fixture file (a missing one fails its own test, never the whole collection).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

# Where a fixture outside the repository would come from: the steering folder beside a
# developer's checkout, or a path opened on one machine. (Absolute paths as data, an agent's
# `file_path: /home/dev/...`, are fine: nothing opens them.)
OUTSIDE = re.compile(
    r"""parents?\s*(?:\[\s*\d+\s*\])?\s*/\s*["']shared"""
    r"""|\.\./shared"""
    r"""|(?:Path|open)\(\s*["']/(?!(?:etc|dev|proc|sys)\b)"""
)


def sh_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", markdown, flags=re.M | re.S)


def readme_commands() -> tuple[str, str]:
    """The README's two commands: a run on the shipped example, then the whole test suite
    (without the `# exit N` comment a command may end with)."""
    blocks = sh_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    first, second = (re.sub(r"\s+#[^'\"]*$", "", b.strip()) for b in blocks[:2])
    return first, second


def test_ci_runs_exactly_the_readme_commands_in_order() -> None:
    run_example, run_tests = readme_commands()
    assert "selfcorrect run workflow/" in run_example and "pytest" in run_tests
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in ci.splitlines() if line and not line.startswith("#")]
    # The first may carry `|| first=$?` (it exits 1 on purpose); its text is the README's.
    first = next(i for i, line in enumerate(commands) if line.startswith(run_example + " "))
    assert commands[first] == run_example + " || first=$?"
    assert commands[-1] == run_tests and first < len(commands) - 1
    assert "git clone" in ci and "mktemp -d" in ci  # ...in a fresh clone, nothing beside it


# Every test copies the shipped example through tests/conftest.py's copy_example (tracked files,
# as committed), never workflow/ as it is: the README's first command leaves its outputs there.
SHIPPED_FOLDER = re.compile(r"""(?:REPO|parents\[1\])\s*/\s*["']workflow["']""")


def test_no_test_reads_the_example_folder_as_a_run_left_it() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in [*(REPO / "tests").rglob("*.py"), *(REPO / "bench").rglob("*.py")]
        if path not in (Path(__file__), REPO / "tests" / "conftest.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SHIPPED_FOLDER.search(line)
    ]
    assert offenders == []
    assert SHIPPED_FOLDER.search('shutil.copytree(REPO / "workflow", folder)')


def test_no_test_reads_a_fixture_outside_the_repository() -> None:
    sources = [*(REPO / "tests").rglob("*.py"), *(REPO / "bench").rglob("*.py")]
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sources
        if path != Path(__file__)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []


def test_the_pattern_catches_the_paths_it_exists_for() -> None:
    for line in (
        'CORPUS = REPO.parent / "shared" / "corpus"',
        'Path(__file__).parents[2] / "shared"',
        'log = Path("/work/shared/corpus/cagents-session/workflow/tool_failures.yaml")',
        "see ../shared/corpus",
    ):
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search('hostile = "../../etc/passwd"')
    assert not OUTSIDE.search('entry = hook_entry("Write", "EACCES", "/tmp/odd name.txt")')


def test_collection_reads_no_fixture(tmp_path: Path) -> None:
    """Test modules copied without a single fixture, data file or shipped folder still
    collect: no module reads a file when it is imported."""
    (tmp_path / "tests").mkdir()
    for module in (REPO / "tests").glob("*.py"):
        shutil.copy(module, tmp_path / "tests" / module.name)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    assert re.search(r"^\d+ tests collected", collected.stdout, flags=re.M)
