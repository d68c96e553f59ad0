"""Shared fixtures: a CLI runner, the real cAgents corpus, and guards against side effects."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from selfcorrect.cli.main import main

REPO = Path(__file__).resolve().parents[1]
# A real cAgents session folder, copied unmodified into the repository. It doubles as a replay
# case, so it also holds the labels file (expected.yaml), which cAgents never writes.
CORPUS = REPO / "tests" / "replay" / "cagents-session"
LABELS = "expected.yaml"
EXAMPLES = Path(__file__).resolve().parent / "examples"
# pip's download cache lives under the real home; tests that install packages reuse it.
PIP_CACHE = Path(os.environ.get("PIP_CACHE_DIR") or Path.home() / ".cache" / "pip")


@pytest.fixture(autouse=True)
def _keep_off_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test may write to the real home directory, or read a user's git identity."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Author")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "author@example.com")
    monkeypatch.delenv("NO_COLOR", raising=False)


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_line() -> Callable[[list[str]], Result]:
    """Run `selfcorrect ARGS` in-process through the real error handler (main())."""

    def run(args: list[str]) -> Result:
        runner = CliRunner()
        holder: dict[str, int] = {}

        def invoke() -> None:
            holder["code"] = main([str(a) for a in args])

        with runner.isolation() as (out, err, _):
            invoke()
            return Result(holder["code"], out.getvalue().decode(), err.getvalue().decode())

    return run


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A private copy of the real cAgents session; returns its workflow/ folder."""
    target = tmp_path / "session"
    copy_session(target)
    return target / "workflow"


def copy_session(target: Path) -> None:
    """Copy the cAgents session to `target` as cAgents wrote it, without our replay labels,
    and writable whatever the checkout's modes: selfcorrect refuses to rewrite a file without
    write bits."""
    shutil.copytree(CORPUS, target, ignore=shutil.ignore_patterns(LABELS))
    for place in (target, *target.rglob("*")):
        place.chmod(place.stat().st_mode | 0o200)


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file below `folder` (hidden ones too) and its content hash."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
