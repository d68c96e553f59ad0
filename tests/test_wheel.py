"""The built wheel carries schemas/ and templates/ and works from outside the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from tests.conftest import CORPUS, PIP_CACHE, REPO


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
    )


def test_wheel_installs_into_a_fresh_venv_and_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PIP_CACHE_DIR": str(PIP_CACHE), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    dist = tmp_path / "dist"
    built = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        tmp_path,
        env,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("selfcorrect-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "selfcorrect/_data/schemas/tool_failures.schema.json" in names
    assert "selfcorrect/_data/templates/selfcorrect.yaml" in names
    assert "selfcorrect/_data/templates/init/escalations.yaml" in names

    venv.create(tmp_path / "venv", with_pip=True)
    bin_dir = tmp_path / "venv" / "bin"
    installed = run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp_path, env
    )
    assert installed.returncode == 0, installed.stderr

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    cli = str(bin_dir / "selfcorrect")
    init = run([cli, "init", "wf"], outside, env)
    assert init.returncode == 0, init.stderr
    assert "created wf/selfcorrect.yaml" in init.stdout
    check = run([cli, "check", "wf"], outside, env)
    assert check.returncode == 0, check.stdout + check.stderr
    corpus = run([cli, "check", str(CORPUS / "workflow")], outside, env)
    assert corpus.returncode == 0, corpus.stdout + corpus.stderr
    where = run(
        [
            str(bin_dir / "python"),
            "-c",
            "import selfcorrect.io.resources as r; print(r.data_dir('schemas'))",
        ],
        outside,
        env,
    )
    assert "site-packages/selfcorrect/_data/schemas" in where.stdout
