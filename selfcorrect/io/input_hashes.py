"""What the watcher reacts to (rules §15): which paths are inputs, and what their contents are.

The watcher is blind to its own writes and to the validator it starts because it never trusts
an event alone: an event only wakes it, and a run starts when some input's content hash differs
from the one recorded after the previous run. Editors' temp files, lock files and selfcorrect's
own outputs (.selfcorrect/, recovery/, handoffs/) never even wake it.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from selfcorrect import layout

# Decision documents and hook logs at the top of DIR (rules §1).
TOP_INPUTS = frozenset(
    {layout.POLICY, layout.REPORT, layout.FAILURE_LOG, layout.COORDINATION_LOG, layout.ESCALATIONS}
)
WAYPOINT_SUFFIXES = (".yaml", ".yml")
ABSENT = "absent"
# A file modified this recently may change again within the same mtime tick without its stat
# changing (git's "racily clean" problem): its hash is not cached, so it is re-read next time.
RACY_NS = 1_000_000_000

Snapshot = dict[str, str]  # input label (path relative to DIR) -> sha256 of its bytes


def _ignored_name(name: str) -> bool:
    """Editor and selfcorrect scratch files: `.x.tmp`, `.x.lock`, `.x.swp`, `x~`."""
    return name.startswith(".") or name.endswith("~")


class WatchedInputs:
    """The input files of one workflow folder, and the content hashes of what is there now."""

    def __init__(self, folder: Path, policy_path: Path | None) -> None:
        self.folder = folder.resolve()
        self.outer_waypoints = self.folder.parent / layout.WAYPOINTS  # docs/integration.md
        self.policy = policy_path.resolve() if policy_path is not None else None
        self._cache: dict[Path, tuple[tuple[int, int, int, int], str]] = {}

    def watched_dirs(self) -> list[tuple[Path, bool]]:
        """(directory, recursive) pairs to hand to the observer."""
        dirs = [(self.folder, True)]
        if self.outer_waypoints.is_dir():
            dirs.append((self.outer_waypoints, False))
        policy_dir = self.policy.parent if self.policy is not None else self.folder
        if not policy_dir.is_relative_to(self.folder) and policy_dir not in {d for d, _ in dirs}:
            dirs.append((policy_dir, False))  # a --policy file kept outside DIR
        return dirs

    def label(self, path: Path) -> str | None:
        """`path` relative to DIR (`../waypoints/x.yaml` for outer waypoints) if it is an input."""
        if self.policy is not None and path == self.policy:
            return self._relative(path)
        if path.is_relative_to(self.folder):
            parts = path.relative_to(self.folder).parts
            if not parts or any(_ignored_name(part) for part in parts):
                return None
            top, name = parts[0], parts[-1]
            if len(parts) == 1 and name in TOP_INPUTS:
                return name
            if len(parts) == 2 and top == layout.WAYPOINTS and name.endswith(WAYPOINT_SUFFIXES):
                return "/".join(parts)
            if len(parts) == 2 and top == layout.MICROTASKS and name.endswith(".yaml"):
                return "/".join(parts)
            if len(parts) >= 2 and top == layout.TEMPLATES:
                return "/".join(parts)
            return None
        if path.parent == self.outer_waypoints and not _ignored_name(path.name):
            return (
                f"../{layout.WAYPOINTS}/{path.name}"
                if path.name.endswith(WAYPOINT_SUFFIXES)
                else None
            )
        return None

    def relevant(self, raw: str, *, is_directory: bool) -> bool:
        """Whether an event on `raw` may have changed an input (cheap: no file is read)."""
        if not raw:
            return False
        path = Path(raw)
        if is_directory:
            # A folder of inputs appearing, vanishing or renamed, or DIR itself going away.
            if path == self.folder or path == self.outer_waypoints:
                return True
            if not path.is_relative_to(self.folder):
                return False
            parts = path.relative_to(self.folder).parts
            return parts[0] in (layout.WAYPOINTS, layout.MICROTASKS, layout.TEMPLATES) and not any(
                _ignored_name(part) for part in parts
            )
        return self.label(path) is not None

    def files(self) -> list[Path]:
        """Every input file present now."""
        found = [self.folder / name for name in sorted(TOP_INPUTS)]
        for place in (self.folder / layout.WAYPOINTS, self.outer_waypoints):
            found += _listing(place, recursive=False)
        found += _listing(self.folder / layout.MICROTASKS, recursive=False)
        found += _listing(self.folder / layout.TEMPLATES, recursive=True)
        if self.policy is not None:
            found.append(self.policy)
        return [path for path in found if self.label(path) is not None and path.is_file()]

    def snapshot(self) -> Snapshot:
        """Label -> content hash of every input; unchanged files are not re-read (stat cache)."""
        current: Snapshot = {}
        cache: dict[Path, tuple[tuple[int, int, int, int], str]] = {}
        for path in self.files():
            label = self.label(path)
            # A report's identity is its bytes *and* the write that made them (as in analysis):
            # a validator that re-ran and found the same thing wrote a fresh report, news for a run.
            digest = self._digest(path, cache, stamped=label == layout.REPORT)
            if digest is not None and label is not None:
                current[label] = digest
        self._cache = cache  # only files present now: the cache cannot grow without bound
        return current

    def _digest(
        self, path: Path, cache: dict[Path, tuple[tuple[int, int, int, int], str]], *, stamped: bool
    ) -> str | None:
        try:
            info = path.stat()
            key = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            hit = self._cache.get(path)
            if hit is not None and hit[0] == key:
                cache[path] = hit
                return hit[1]
            with path.open("rb") as handle:  # streamed: a big log is never held in memory
                digest = hashlib.file_digest(handle, "sha256").hexdigest()
            if stamped:
                digest += f"@{info.st_ino}:{info.st_mtime_ns}"
        except FileNotFoundError:
            return None
        except OSError as exc:  # unreadable now: a distinct value, so a later fix is a change
            return f"unreadable: {exc.strerror}"
        if time.time_ns() - info.st_mtime_ns > RACY_NS:
            cache[path] = (key, digest)
        return digest

    def _relative(self, path: Path) -> str:
        try:
            return os.path.relpath(path, self.folder)
        except ValueError:
            return str(path)


def _listing(place: Path, *, recursive: bool) -> list[Path]:
    if not place.is_dir():
        return []
    found = place.rglob("*") if recursive else place.iterdir()
    return sorted(found)


def changed(recorded: Snapshot, current: Snapshot) -> list[str]:
    """Labels whose content differs (created, deleted or edited)."""
    return sorted(
        label
        for label in recorded.keys() | current.keys()
        if recorded.get(label, ABSENT) != current.get(label, ABSENT)
    )


__all__ = ["ABSENT", "Snapshot", "WatchedInputs", "changed"]
