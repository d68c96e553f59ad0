"""The README's two commands, in the order written, in a fresh clone (what .ci/run does).

The first command runs selfcorrect on the shipped example, which leaves its outputs in
workflow/ and rewrites coordination_log.yaml's failed_items; the second runs the whole suite,
which must pass on that folder. Slow: it installs the package twice and runs every test.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PIP_CACHE, REPO
from tests.test_hermetic_suite import readme_commands

# Set in the suite the test starts, where this test would otherwise start itself again.
NESTED = "SELFCORRECT_README_IN_ORDER"


def test_the_readme_commands_pass_in_the_order_written(tmp_path: Path) -> None:
    if os.environ.get(NESTED):
        pytest.skip("this is the suite the README's second command runs inside this test")
    clone = tmp_path / "selfcorrect"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], check=True)
    env = {**os.environ, "PIP_CACHE_DIR": str(PIP_CACHE), NESTED: "1"}
    env.pop("VIRTUAL_ENV", None)
    run_example, run_tests = readme_commands()

    def bash(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=3600,
        )

    first = bash(run_example)
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]  # BLOCKED
    assert (clone / "workflow" / "escalations.yaml").is_file()
    assert subprocess.run(
        ["git", "status", "--porcelain", "workflow/"], cwd=clone, capture_output=True, text=True
    ).stdout.strip()  # the run changed the example folder
    second = bash(run_tests)
    assert second.returncode == 0, second.stdout[-6000:] + second.stderr[-3000:]
    assert " passed" in second.stdout
