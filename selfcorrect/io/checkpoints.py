"""A checkpoint of the project: a git commit object, written without touching the work tree,
the index, any branch or any ref (docs/rules.md §8, "Checkpoints").

The files are added to a temporary index (`GIT_INDEX_FILE`, started from a copy of the real
index so unchanged files are not read again), new files included and `.gitignore` respected;
`git write-tree` and `git commit-tree` (HEAD as parent, when there is one) make the commit.
No ref names it, so `git status` and `git for-each-ref` are as they were; the journal keeps
its id. The cost: git's garbage collection may prune an unreferenced commit once it is older
than `gc.pruneExpire` (two weeks by default); `git tag NAME <id>` keeps one a person wants.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

GIT_WAIT_S = 60.0  # adding a large tree's new files takes a while; never forever
# A fixed identity: a checkpoint works where no user.name is configured (CI, a fresh clone).
IDENTITY = {
    "GIT_AUTHOR_NAME": "selfcorrect",
    "GIT_AUTHOR_EMAIL": "selfcorrect@localhost",
    "GIT_COMMITTER_NAME": "selfcorrect",
    "GIT_COMMITTER_EMAIL": "selfcorrect@localhost",
}


def record_checkpoint(root: Path, message: str) -> str | None:
    """The id of a new commit object holding the project at `root` as it is now; None outside
    a git work tree, or when git fails (a checkpoint is a help, never a reason to stop)."""
    if not any((p / ".git").exists() for p in (root, *root.parents)):
        return None  # no repository: nothing to ask git
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", **IDENTITY}
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # a hook's own, not ours
        env.pop(name, None)
    top = _git(root, env, "rev-parse", "--show-toplevel")
    index = _git(root, env, "rev-parse", "--git-path", "index")  # relative to `root`
    if not top or not index:
        return None
    head = _git(root, env, "rev-parse", "-q", "--verify", "HEAD^{commit}")
    with tempfile.TemporaryDirectory(prefix="selfcorrect-checkpoint-") as scratch:
        temporary = Path(scratch) / "index"
        if (root / index).is_file():
            shutil.copyfile(root / index, temporary)
        env["GIT_INDEX_FILE"] = str(temporary)
        if _git(Path(top), env, "add", "-A", "--", ".") is None:
            return None
        tree = _git(Path(top), env, "write-tree")
        if not tree:
            return None
        parent = ["-p", head] if head else []
        return _git(Path(top), env, "commit-tree", "--no-gpg-sign", *parent, "-m", message, tree)


def _git(cwd: Path, env: dict[str, str], *args: str) -> str | None:
    """git's output, stripped; None when it failed or did not start."""
    try:
        done = subprocess.run(
            # No hook, no fsmonitor: .git/config is writable by any agent in the project, and
            # a program it names would run as selfcorrect (docs/containment.md).
            ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            timeout=GIT_WAIT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace").strip()


__all__ = ["record_checkpoint"]
