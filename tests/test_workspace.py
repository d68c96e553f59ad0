"""Snapshots, diffs and restores against real throwaway git repositories (rules §9)."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selfcorrect.io.workspace as ws
from selfcorrect.core.linecount import numstat
from selfcorrect.io.workspace import (
    HEAD_KEY,
    Change,
    SnapshotTooLarge,
    WorkspaceError,
    changes,
    resolve_inside,
    restore,
    snapshot,
)
from tests.helpers import git

BINARY = bytes(range(256)) * 4
TEXT = b"one\ntwo\nthree\nfour\nfive\n"


def write(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root outside .git: its bytes and permission bits."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), mode_of(p))
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def committed(root: Path) -> Path:
    """`root`, populated and committed as a new git repository."""
    root.mkdir()
    populate(root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "x")
    return root


def populate(root: Path) -> None:
    write(root / "src" / "a.txt", TEXT)
    write(root / "src" / "tool.sh", b"#!/bin/sh\necho hi\n", 0o755)
    write(root / "notes.md", b"no trailing newline")
    write(root / "blob.bin", BINARY)
    write(root / "other.txt", b"untouched\n")
    write(root / "workflow" / "coordination_log.yaml", b"tasks: []\n")


@pytest.fixture(params=["git", "plain"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A project root, as a committed git work tree or a plain folder."""
    root = tmp_path / "project"
    root.mkdir()
    populate(root)
    if request.param == "git":
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
    return root


def by_rel(found: list[Change]) -> dict[str, Change]:
    return {c.rel: c for c in found}


def test_snapshot_kind(project: Path) -> None:
    snap = snapshot(project, ["src/a.txt"])
    assert snap.in_git == (project / ".git").is_dir()
    assert snap.images["src/a.txt"].data == TEXT
    if snap.in_git:
        assert snap.tree[HEAD_KEY] == git(project, "rev-parse", "HEAD").strip()
        assert set(snap.tree) == {HEAD_KEY}  # a clean tree: only the head commit
    else:
        assert snap.tree.keys() == files(project).keys()
    assert changes(snap) == []


def test_edit_in_and_out_of_scope_with_exact_line_counts(project: Path) -> None:
    snap = snapshot(project, ["src/a.txt"])
    write(project / "src" / "a.txt", b"one\nTWO\nthree\nfour\nfive\nsix\nseven\n")
    write(project / "other.txt", b"changed\n")
    found = by_rel(changes(snap))
    assert list(found) == ["other.txt", "src/a.txt"]
    assert (found["src/a.txt"].added, found["src/a.txt"].removed) == (3, 1)
    assert (found["other.txt"].added, found["other.txt"].removed) == (1, 1)
    assert found["other.txt"].before.data == b"untouched\n"
    assert snap.covers("src/a.txt") and not snap.covers("other.txt")


def test_line_counts_match_git_numstat(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    lines = [f"line {i}\n".encode() for i in range(200)]
    write(root / "f.txt", b"".join(lines))
    write(root / "g.txt", b"last line")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "x")
    snap = snapshot(root, [])
    edited = lines[:10] + [b"new\n"] * 3 + lines[15:100] + lines[120:] + [b"tail"]
    write(root / "f.txt", b"".join(edited))
    write(root / "g.txt", b"last line\n")  # only the missing newline added
    numstat = {
        line.split("\t")[2]: (int(line.split("\t")[0]), int(line.split("\t")[1]))
        for line in git(root, "diff", "--numstat").splitlines()
    }
    assert {c.rel: (c.added, c.removed) for c in changes(snap)} == numstat


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["a\n", "b\n", "\n", "}\n", "c"]), max_size=30),
    st.lists(st.sampled_from(["a\n", "b\n", "\n", "}\n", "d\n", "c"]), max_size=30),
)
def test_line_counts_are_minimal_and_never_above_gits_on_any_edit(
    old: list[str], new: list[str]
) -> None:
    """The count is the minimal one (the longest common subsequence of lines), which git's
    `--minimal` gives too but for rare inputs its line preprocessing counts higher (old
    `b b b b`, new `a a a a a a b a`: git 8/4, minimal 7/3), so never more than git's."""
    with tempfile.TemporaryDirectory() as folder:
        a, b = Path(folder, "a"), Path(folder, "b")
        a.write_text("".join(old))
        b.write_text("".join(new))
        done = subprocess.run(
            ["git", "diff", "--no-index", "--numstat", "--minimal", str(a), str(b)],
            capture_output=True,
            text=True,
        )
        fields = done.stdout.split()
        gits = (int(fields[0]), int(fields[1])) if fields else (0, 0)
        ours = numstat(a.read_bytes(), b.read_bytes())
        old_lines = a.read_bytes().splitlines(keepends=True)
        new_lines = b.read_bytes().splitlines(keepends=True)
        common = _longest_common(old_lines, new_lines)
        assert ours == (len(new_lines) - common, len(old_lines) - common)
        assert ours[0] <= gits[0] and ours[1] <= gits[1]


def _longest_common(old: list[bytes], new: list[bytes]) -> int:
    """The longest common subsequence's length, by the textbook table (inputs are short)."""
    table = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i, line in enumerate(old):
        for j, other in enumerate(new):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if line == other else max(table[i][j + 1], table[i + 1][j])
            )
    return table[len(old)][len(new)]


def test_created_and_deleted_files_are_seen(project: Path) -> None:
    snap = snapshot(project, ["src/a.txt"])
    write(project / "new" / "made.txt", b"a\nb\n")
    (project / "notes.md").unlink()
    (project / "blob.bin").unlink()
    found = by_rel(changes(snap))
    assert list(found) == ["blob.bin", "new/made.txt", "notes.md"]
    assert (found["new/made.txt"].added, found["new/made.txt"].removed) == (2, 0)
    assert found["new/made.txt"].before.data is None
    assert (found["notes.md"].added, found["notes.md"].removed) == (0, 1)
    assert (found["blob.bin"].added, found["blob.bin"].removed) == (0, 1)
    assert found["notes.md"].after_digest == "absent"


def test_restore_puts_everything_back_byte_for_byte(project: Path) -> None:
    before = files(project)
    snap = snapshot(project, ["src/a.txt", "src/tool.sh"])
    write(project / "src" / "a.txt", b"rewritten")
    (project / "src" / "tool.sh").chmod(0o644)  # a mode-only change
    write(project / "notes.md", b"no trailing newline\n")
    write(project / "blob.bin", BINARY[::-1])
    write(project / "created.txt", b"fixer output\n")
    write(project / "deep" / "er" / "x.txt", b"x\n")
    (project / "other.txt").unlink()
    found = changes(snap)
    assert by_rel(found)["src/tool.sh"].before.data == b"#!/bin/sh\necho hi\n"
    assert by_rel(found)["blob.bin"].added + by_rel(found)["blob.bin"].removed == 1
    report = restore(snap, found)
    assert sorted(report.restored) == sorted(c.rel for c in found)
    assert report.skipped == report.failed == []
    assert files(project) == before
    assert not list(project.rglob("*.tmp"))
    assert changes(snap) == []


def test_restore_skips_a_file_changed_again_after_the_fixer(project: Path) -> None:
    snap = snapshot(project, ["src/a.txt"])
    write(project / "src" / "a.txt", b"fixer\n")
    write(project / "made.txt", b"fixer\n")
    found = changes(snap)
    write(project / "src" / "a.txt", b"a person's edit\n")  # after the fixer exited
    (project / "made.txt").chmod(0o600)  # a mode change counts as a change too
    report = restore(snap, found)
    assert sorted(report.skipped) == ["made.txt", "src/a.txt"]
    assert report.restored == report.failed == []
    assert (project / "src" / "a.txt").read_bytes() == b"a person's edit\n"
    assert (project / "made.txt").exists()


def test_restore_reports_a_failed_write(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = snapshot(project, ["src/a.txt"])
    write(project / "src" / "a.txt", b"fixer\n")
    found = changes(snap)

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(ws.os, "replace", refuse)
    report = restore(snap, found)
    monkeypatch.undo()
    assert report.failed == ["src/a.txt"]
    assert (project / "src" / "a.txt").read_bytes() == b"fixer\n"
    assert not list(project.rglob("*.tmp"))


def test_restore_verifies_what_it_wrote(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = snapshot(project, ["src/a.txt"])
    write(project / "src" / "a.txt", b"fixer\n")
    found = changes(snap)
    real = ws._write_new
    monkeypatch.setattr(
        ws, "_write_new", lambda fd, name, data, mode: real(fd, name, data[:3], mode)
    )
    assert restore(snap, found).failed == ["src/a.txt"]


def test_restore_refuses_changes_pointing_outside(project: Path, tmp_path: Path) -> None:
    snap = snapshot(project, [])
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep\n")
    image = snapshot(project, ["other.txt"]).images["other.txt"]
    hostile = [Change(rel, 1, 0, image, "absent") for rel in ("../victim.txt", "/etc/x", "")]
    assert sorted(restore(snap, hostile).failed) == ["", "../victim.txt", "/etc/x"]
    assert victim.read_bytes() == b"keep\n"


def test_already_dirty_file_restores_to_its_dirty_bytes(tmp_path: Path) -> None:
    root = committed(tmp_path / "p")
    write(root / "other.txt", b"uncommitted work\n", 0o600)
    write(root / "scratch.txt", b"untracked work\n")
    snap = snapshot(root, ["src/a.txt"])
    assert snap.images["other.txt"].data == b"uncommitted work\n"
    assert set(snap.tree) == {"other.txt", "scratch.txt", HEAD_KEY}
    write(root / "other.txt", b"fixer\n")
    write(root / "scratch.txt", b"fixer\n")
    write(root / "src" / "a.txt", b"fixer\n")
    report = restore(snap, changes(snap))
    assert sorted(report.restored) == ["other.txt", "scratch.txt", "src/a.txt"]
    assert (root / "other.txt").read_bytes() == b"uncommitted work\n"
    assert mode_of(root / "other.txt") == 0o600
    assert (root / "scratch.txt").read_bytes() == b"untracked work\n"
    assert (root / "src" / "a.txt").read_bytes() == TEXT


def test_a_dirty_file_the_fixer_reverts_to_head_is_seen(tmp_path: Path) -> None:
    root = committed(tmp_path / "p")
    write(root / "other.txt", b"uncommitted work\n")
    snap = snapshot(root, [])
    git(root, "checkout", "--", "other.txt")  # now clean: git status no longer lists it
    assert [c.rel for c in changes(snap)] == [".git/index", "other.txt"]  # the index too
    restore(snap, changes(snap))
    assert (root / "other.txt").read_bytes() == b"uncommitted work\n"


def test_a_fixer_that_commits_is_still_seen_and_undone(tmp_path: Path) -> None:
    root = committed(tmp_path / "p")
    snap = snapshot(root, [])
    head = git(root, "rev-parse", "HEAD")
    write(root / "src" / "a.txt", b"committed by the fixer\n")
    git(root, "commit", "-q", "-am", "fixer")
    found = changes(snap)
    assert "src/a.txt" in [c.rel for c in found]
    assert {".git/index", ".git/COMMIT_EDITMSG"} <= {c.rel for c in found}  # `.git` counts
    assert not restore(snap, found).failed
    assert (root / "src" / "a.txt").read_bytes() == TEXT
    assert git(root, "rev-parse", "HEAD") == head  # the commit is undone: HEAD moved back
    assert git(root, "status", "--porcelain") == ""


def test_unignoring_a_file_never_gets_it_deleted(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    populate(root)
    write(root / ".gitignore", b"build/\n*.log\n")
    write(root / "build" / "out.txt", b"a person's build output\n")
    write(root / "run.log", b"log\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "x")
    snap = snapshot(root, [".gitignore"])
    assert {"build", "run.log"} <= set(snap.areas)
    assert snap.images["build/out.txt"].data == b"a person's build output\n"  # kept: small
    write(root / ".gitignore", b"")  # the fixer un-ignores them: they look created
    found = by_rel(changes(snap))
    assert list(found) == [".gitignore"]  # their bytes were kept, and are the same
    report = restore(snap, found.values())
    assert report.restored == [".gitignore"]
    assert (root / "build" / "out.txt").read_bytes() == b"a person's build output\n"


def test_a_folder_in_scope_captures_its_files(project: Path) -> None:
    snap = snapshot(project, ["src"])
    assert set(snap.images) >= {"src/a.txt", "src/tool.sh"}
    assert snap.scope == ("src",)
    assert snap.covers("src/new.txt") and not snap.covers("srcx/a.txt")


def test_glob_scope_captures_matching_files(project: Path) -> None:
    write(project / "node_modules" / "pkg" / "index.js", b"x\n")  # ignored by walks, not scope
    snap = snapshot(project, ["src/*.txt", "./*.md", "node_modules/pkg/index.js"])
    assert snap.scope == ("*.md", "node_modules/pkg/index.js", "src/*.txt")
    assert {"src/a.txt", "notes.md", "node_modules/pkg/index.js"} <= set(snap.images)
    assert "src/tool.sh" not in snap.images or not snap.in_git
    assert snap.covers("src/deep/b.txt")  # fnmatch: '*' crosses folders, as scope checks do
    assert not snap.covers("other.txt")
    write(project / "node_modules" / "pkg" / "index.js", b"y\n")
    assert [c.rel for c in changes(snap)] == ["node_modules/pkg/index.js"]


@pytest.mark.parametrize("scope", ["../*.txt", "/etc/*", "-*.txt", "escape/*"])
def test_glob_scope_outside_is_refused(project: Path, scope: str) -> None:
    (project / "escape").symlink_to("/etc")
    with pytest.raises(WorkspaceError, match="not a path inside"):
        snapshot(project, [scope])


def test_an_excluded_folder_is_out_of_scope_but_watched(project: Path) -> None:
    snap = snapshot(project, ["src/a.txt", "workflow/coordination_log.yaml"], exclude=["workflow"])
    assert snap.scope == ("src/a.txt",)  # never in scope, whatever the scope says
    assert not any(rel.startswith("workflow/") for rel in snap.tree)
    write(project / "workflow" / "coordination_log.yaml", b"tasks: [edited]\n")
    write(project / "workflow" / "recovery" / "t1.md", b"# directive\n")
    write(project / "src" / "__pycache__" / "a.pyc", b"\0junk")
    found = [c.rel for c in changes(snap) if not c.rel.startswith(".git/")]
    assert found == [
        "src/__pycache__/a.pyc",
        "workflow/coordination_log.yaml",
        "workflow/recovery/t1.md",
    ]
    restore(snap, changes(snap))
    assert (project / "workflow" / "coordination_log.yaml").read_bytes() == b"tasks: []\n"
    assert not (project / "workflow" / "recovery").exists() or not any(
        (project / "workflow" / "recovery").iterdir()
    )


def test_outside_git_a_huge_tree_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "p"
    populate(root)
    monkeypatch.setattr(ws, "MAX_CAPTURE", 100)
    with pytest.raises(SnapshotTooLarge, match="more than"):
        snapshot(root, [])


def test_symlinks_are_captured_as_links(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"outside\n")
    snap = snapshot(project, ["src/a.txt"])
    (project / "src" / "a.txt").unlink()
    (project / "src" / "a.txt").symlink_to(outside)  # a hostile fixer
    found = changes(snap)
    assert [c.rel for c in found] == ["src/a.txt"]
    assert restore(snap, found).restored == ["src/a.txt"]
    assert not (project / "src" / "a.txt").is_symlink()
    assert (project / "src" / "a.txt").read_bytes() == TEXT
    assert outside.read_bytes() == b"outside\n"


def test_scope_outside_the_project_is_refused(project: Path) -> None:
    with pytest.raises(WorkspaceError, match="not a path inside"):
        snapshot(project, ["../elsewhere"])


def test_broken_git_is_wrapped(tmp_path: Path) -> None:
    root = tmp_path / "p"
    populate(root)
    git(root, "init", "-q")
    (root / ".git" / "index").write_bytes(b"garbage")  # `git status` now fails
    with pytest.raises(WorkspaceError, match="git failed while reading the status"):
        snapshot(root, [])


@pytest.mark.parametrize(
    "value",
    [
        "",
        "-",
        "--output=x",
        "-rf",
        "../../etc/passwd",
        "..",
        "src/../../x",
        "/etc/passwd",
        "a\0b",
        "line\nbreak",
        "x" * 100_000,
        "escape",  # a symlink pointing outside root
        "escape/passwd",
    ],
)
def test_resolve_inside_refuses_hostile_values(tmp_path: Path, value: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "escape").symlink_to("/etc")
    assert resolve_inside(root, value) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("src/a.txt", "src/a.txt"),
        ("./src/a.txt", "src/a.txt"),
        ("src/../src/a.txt", "src/a.txt"),
        ("inner", "src"),  # a symlink that stays inside resolves to its target
        ("new/file.txt", "new/file.txt"),  # a file the fixer may create
        ("a; rm -rf /", "a; rm -rf "),  # no shell runs it: only a strange file name
        ("$(touch x)", "$(touch x)"),
    ],
)
def test_resolve_inside_accepts_paths_inside(tmp_path: Path, value: str, expected: str) -> None:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "inner").symlink_to("src")
    resolved = resolve_inside(root, value)
    assert resolved == root.resolve() / expected
    assert not (root / "x").exists()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_resolve_inside_never_raises(value: str) -> None:
    root = Path.cwd()
    resolved = resolve_inside(root, value)
    assert resolved is None or resolved.is_relative_to(root.resolve())


def _git_children() -> list[int]:
    """Child processes of this test that run git (psutil when installed, else /proc)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        children = psutil.Process().children(recursive=True)
        return [c.pid for c in children if "git" in c.name()]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:"))
        if int(ppid) == os.getpid() and b"git" in cmdline.split(b"\0")[0]:
            found.append(int(entry.name))
    return found


def test_no_git_processes_are_left_behind(tmp_path: Path) -> None:
    root = committed(tmp_path / "p")
    first = git(root, "rev-parse", "HEAD").strip()
    write(root / "other.txt", b"second commit\n")
    git(root, "commit", "-q", "-am", "y")
    write(root / "src" / "a.txt", b"dirty\n")
    before = _git_children()
    for _ in range(50):
        snap = snapshot(root, ["src/a.txt"])
        # As if the head moved since: changes() reads blobs through GitPython's cat-file.
        snap = msgspec.structs.replace(snap, tree={**snap.tree, HEAD_KEY: first})
        found = by_rel(changes(snap))
        assert found["other.txt"].before.data == b"untouched\n"
    assert _git_children() == before == []


def test_a_file_the_fixer_turned_into_a_folder_comes_back(project: Path) -> None:
    snap = snapshot(project, ["notes.md"])
    (project / "notes.md").unlink()
    write(project / "notes.md" / "inside.txt", b"x\n")
    report = restore(snap, changes(snap))
    assert (report.failed, report.skipped) == ([], [])
    assert (project / "notes.md").read_bytes() == b"no trailing newline"


def test_a_folder_swapped_for_a_symlink_is_restored_through_real_folders(
    project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / "a.txt", b"not the project's\n")
    write(project / "src" / "a.txt", b"uncommitted\n")
    snap = snapshot(project, ["src/a.txt"])
    subprocess.run(["rm", "-rf", str(project / "src")], check=True)
    (project / "src").symlink_to(elsewhere)
    report = restore(snap, changes(snap))
    assert (report.failed, report.skipped) == ([], [])
    assert not (project / "src").is_symlink()
    assert (project / "src" / "a.txt").read_bytes() == b"uncommitted\n"
    assert (elsewhere / "a.txt").read_bytes() == b"not the project's\n"


def test_a_commit_in_a_worktree_whose_repository_lies_outside_fails_loudly(
    tmp_path: Path,
) -> None:
    main = committed(tmp_path / "main")
    tree = tmp_path / "tree"
    git(main, "worktree", "add", "-q", "-b", "side", str(tree))
    snap = snapshot(tree, ["src/a.txt"])
    write(tree / "src" / "a.txt", b"committed by the fixer\n")
    git(tree, "commit", "-q", "-am", "fixer")
    found = by_rel(changes(snap))
    assert HEAD_KEY in found  # its HEAD lives in main/.git/worktrees: not put back from here
    report = restore(snap, found.values())
    assert HEAD_KEY in report.failed and "src/a.txt" in report.restored
