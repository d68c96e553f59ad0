"""The last report a validator wrote, kept while a stub stands in its place (docs/rules.md §5).

A stub (cAgents' safety net writes one when no validator agent ran) says nothing about the work:
it is no PASS, and it resolves nothing. So each run that read a real report keeps a copy of it,
with its digest and which write it was, under `.selfcorrect/`; a later run that finds a stub on
disk decides on that copy, exactly as if the validator's report were still there: the same
report seen again counts nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from selfcorrect import layout
from selfcorrect.io import atomic
from selfcorrect.io.safe_paths import ensure_dir


def stamp(path: Path) -> str:
    """Which write of the report this is: its inode, modification time in nanoseconds and size,
    `ino:mtime_ns:size` ("" when absent); never whole seconds, so two writes in one second
    differ (docs/rules.md §5). Light to import: the stop hooks record it with each turn.
    Older journals hold `ino:mtime_ns`: core.state.same_write compares the two spellings."""
    try:
        info = path.stat()
    except OSError:
        return ""
    return f"{info.st_ino}:{info.st_mtime_ns}:{info.st_size}"


def keep(folder: Path, digest: str, write: str) -> bool:
    """Copy validation_report.yaml when it is the report this run decided on (`digest`) and
    the copy holds another one (`write`: its stamp). True if the copy was written."""
    held = _identity(folder)
    if held is not None and held[0] == digest:
        return False  # the same report (touched or copied, it is no new verdict)
    data = atomic.read_or_none(folder / layout.REPORT)
    if data is None or hashlib.sha256(data).hexdigest()[:16] != digest:
        return False  # rewritten since the run read it: the next run keeps that one
    ensure_dir((folder / layout.LAST_REPORT).parent)
    atomic.replace_file(folder / layout.LAST_REPORT, data)
    identity = json.dumps({"digest": digest, "stamp": write}) + "\n"
    atomic.replace_file(folder / layout.LAST_REPORT_ID, identity.encode("utf-8"))
    return True


def kept(folder: Path) -> tuple[Path, str] | None:
    """The copy and its write's stamp, when one is kept and matches its recorded digest."""
    identity = _identity(folder)
    data = atomic.read_or_none(folder / layout.LAST_REPORT)
    if identity is None or data is None:
        return None
    digest, stamp = identity
    if hashlib.sha256(data).hexdigest()[:16] != digest:
        return None  # not the copy we made: ignored
    return folder / layout.LAST_REPORT, stamp


def _identity(folder: Path) -> tuple[str, str] | None:
    try:
        data = json.loads(atomic.read_or_none(folder / layout.LAST_REPORT_ID) or b"null")
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    digest, stamp = data.get("digest"), data.get("stamp")
    return (digest, stamp) if isinstance(digest, str) and isinstance(stamp, str) else None
