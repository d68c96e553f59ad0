"""Failures that wait beside the log while its lock is held by a stopped process (docs/hooks.md,
"The warm answerer").

A warm answerer stopped (SIGSTOP, Ctrl-Z, a debugger) in the middle of an append holds the failure
log's lock and will not let go by itself. A hook does not wait for it: it keeps the entry here,
`.selfcorrect/spool/`, one file per identity (its `tool_use_id`, else its `event_id`, else a hash
of the entry), and the next appender that holds the lock (a later hook, the answerer let go on, a
`run`) logs every waiting entry before its own, in the order they were kept, and removes each file.
The log holds one entry per identity, so an entry kept here and also delivered again is logged once.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from selfcorrect import layout
from selfcorrect.io import atomic
from selfcorrect.io.display import display_path
from selfcorrect.io.safe_paths import ensure_dir, open_nofollow

MAX_WAITING = 4096  # entries kept at once: past that the failure is not logged, and said
MAX_ENTRY = 256 * 1024  # bytes of one kept entry (its values are capped at 2,000 characters)
IDENTITY_KEYS = ("tool_use_id", "event_id")


class SpoolFull(Exception):
    """MAX_WAITING entries wait already: this one is not kept."""


def spool_dir(log: Path) -> Path:
    return log.parent / layout.SPOOL


def keep(log: Path, fields: Mapping[str, str]) -> None:
    """Keep the entry until an appender can log it; an entry of its identity kept already is
    not kept twice."""
    folder = spool_dir(log)
    ensure_dir(folder)
    if len(os.listdir(folder)) >= MAX_WAITING:
        raise SpoolFull(
            f"{display_path(folder)}: {MAX_WAITING:,} failures wait for the log's lock already"
        )
    identity = next((fields[k] for k in IDENTITY_KEYS if fields.get(k)), None)
    if identity is None:
        identity = json.dumps(dict(fields), sort_keys=True)
    import hashlib  # here: the hooks that never keep an entry do not pay for it

    name = hashlib.sha256(identity.encode("utf-8", "replace")).hexdigest()[:40] + ".json"
    atomic.write_new(folder / name, json.dumps(dict(fields), ensure_ascii=False).encode())


def any_waiting(log: Path) -> bool:
    """Whether an entry is kept (one stat call when none is: the common case)."""
    try:
        return stat.S_ISDIR(os.lstat(spool_dir(log)).st_mode) and bool(os.listdir(spool_dir(log)))
    except OSError:
        return False


def waiting(log: Path) -> Iterator[tuple[Path, dict[str, str] | None]]:
    """Each kept entry, oldest first, with its fields (None for a file that is not one: a
    stray, a torn or a planted file, removed by the caller all the same)."""
    folder = spool_dir(log)
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return  # none kept; a link or a file planted there is never followed
        listing = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    kept = []
    for entry in listing:
        if entry.name.endswith(".json") and not entry.name.startswith("."):
            with contextlib.suppress(OSError):
                kept.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    for _, name in sorted(kept):
        path = folder / name
        yield path, _read(path)


def _read(path: Path) -> dict[str, str] | None:
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_ENTRY + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        fields = json.loads(data) if len(data) <= MAX_ENTRY else None
    except ValueError:
        return None
    if not isinstance(fields, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in fields.items()
    ):
        return None
    return fields


def done(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
