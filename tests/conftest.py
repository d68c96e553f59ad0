"""Shared fixtures: a CLI runner, the real cAgents corpus, and guards against side effects."""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from selfcorrect.cli.main import main
from selfcorrect.io.resources import data_file

REPO = Path(__file__).resolve().parents[1]
# A real cAgents session folder, copied unmodified into the repository. It doubles as a replay
# case, so it also holds the labels file (expected.yaml), which cAgents never writes.
CORPUS = REPO / "tests" / "replay" / "cagents-session"
LABELS = "expected.yaml"
EXAMPLES = Path(__file__).resolve().parent / "examples"
JOURNAL_SCHEMA = data_file("schemas", "journal.schema.json")  # shipped: through the package
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
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture(autouse=True)
def _journals_match_the_schema(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every journal line a test made selfcorrect write is a record the schema describes.

    No production hook: after the test, every `.selfcorrect/journal.jsonl` under its tmp_path
    is checked. A test that writes a hostile journal on purpose says so with
    `@pytest.mark.tampered_journal`; one that only tears lines (a kill mid-append) with
    `@pytest.mark.tampered_journal(torn_lines=True)`, and its whole records are still checked.
    """
    yield
    tmp = request.node.funcargs.get("tmp_path") if hasattr(request.node, "funcargs") else None
    marker = request.node.get_closest_marker("tampered_journal")
    if tmp is None or (marker is not None and not marker.kwargs.get("torn_lines")):
        return
    torn = marker is not None
    problems = [p for path in _journals_under(Path(tmp)) for p in journal_problems(path, torn)]
    if problems:
        pytest.fail("journal records outside schemas/journal.schema.json:\n" + "\n".join(problems))


JOURNAL_LINES_CHECKED = [0]  # reported at the end of the session


@functools.cache
def _journal_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(JOURNAL_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def journal_problems(path: Path, torn_lines: bool = False) -> list[str]:
    """Each line of a journal that is not a record of schemas/journal.schema.json, and why.
    With `torn_lines`, a line that is not JSON at all (a torn append) is no problem."""
    validator = _journal_validator()
    problems: list[str] = []
    try:
        data = path.read_bytes()
    except OSError:  # a test made it unreadable on purpose; the reader's tests cover that
        return []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        JOURNAL_LINES_CHECKED[0] += 1
        try:
            record = json.loads(line)
        except ValueError as exc:
            if not torn_lines:
                problems.append(f"{path}:{number}: not a JSON record ({exc})")
            continue
        for error in validator.iter_errors(record):
            where = "/".join(str(p) for p in error.absolute_path) or "(record)"
            problems.append(f"{path}:{number}: {where}: {error.message}")
    return problems


def _journals_under(root: Path) -> Iterator[Path]:
    """Regular journal files only: a test may leave a FIFO or a symlink where one would be."""
    for top, _dirs, files in os.walk(root):
        if Path(top).name == ".selfcorrect" and "journal.jsonl" in files:
            path = Path(top) / "journal.jsonl"
            if stat.S_ISREG(path.lstat().st_mode):
                yield path


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if JOURNAL_LINES_CHECKED[0]:
        terminalreporter.write_line(
            f"journal lines checked against the schema: {JOURNAL_LINES_CHECKED[0]}"
        )


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


@functools.cache
def tracked_example() -> dict[str, bytes]:
    """The shipped example folder as committed: the files git tracks under workflow/, with the
    content staged in the index. The README's first command runs on that folder, leaving its
    outputs beside the inputs and rewriting coordination_log.yaml's failed_items; a test that
    copied the folder as it is would start from that run's state. Outside a git checkout (an
    unpacked archive) the folder's files are taken as they are."""
    if not (REPO / ".git").exists():
        return {p.name: p.read_bytes() for p in sorted((REPO / "workflow").glob("*.yaml"))}
    listing = subprocess.run(
        ["git", "ls-files", "-s", "-z", "--", "workflow/"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    files: dict[str, bytes] = {}
    for row in filter(None, listing.split("\0")):
        meta, _, path = row.partition("\t")
        blob = meta.split()[1]
        content = subprocess.run(
            ["git", "cat-file", "blob", blob], cwd=REPO, capture_output=True, check=True
        ).stdout
        files[path.removeprefix("workflow/")] = content
    return files


@functools.cache
def shipped_example() -> Path:
    """A read-only tests' copy of the shipped example (tracked files only, as committed), made
    once per session in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="selfcorrect-example-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return copy_example(folder)


def copy_example(target: Path) -> Path:
    """Write the shipped example (tracked files only, as committed) into the folder `target`;
    returns `target`."""
    for name, content in tracked_example().items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(content)
    return target


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file below `folder` (hidden ones too) and its content hash."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
