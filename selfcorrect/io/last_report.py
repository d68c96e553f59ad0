"""The last report a validator wrote, kept while a stub stands in its place (docs/rules.md §5).

A stub (cAgents' safety net writes one when no validator agent ran) says nothing about the work:
it is no PASS, and it resolves nothing. So each run that read a real report keeps a copy of it,
with its digest and which write it was, under `.selfcorrect/`; a later run that finds a stub on
disk decides on that copy, exactly as if the validator's report were still there: the same
report seen again counts nothing. The copy holds each text within `limits.max_text`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from selfcorrect import layout
from selfcorrect.errors import InputError
from selfcorrect.io import atomic, documents
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


def keep(folder: Path, digest: str, write: str, *, max_text: int, max_bytes: int) -> bool:
    """Copy validation_report.yaml when it is the report this run decided on (`digest`) and
    the copy holds another one (`write`: its stamp). True if the copy was written.

    The copy is the report as read, each text cut within `max_text` bytes (a hostile report's
    texts are not kept whole under `.selfcorrect/`, docs/containment.md "Odd inputs"): a text
    cut names the whole text's identity, so an issue keeps its name (core/text_caps.py)."""
    held = _identity(folder)
    if held is not None and held[0] == digest:
        return False  # the same report (touched or copied, it is no new verdict)
    try:
        doc = documents.load_decision(
            folder / layout.REPORT, "validation_report", max_bytes=max_bytes
        )
    except (InputError, OSError):
        return False
    if doc.raw is None or doc.digest != digest:
        return False  # rewritten since the run read it: the next run keeps that one
    where = f"{layout.REPORT} as the validator wrote it"
    kept_data = _capped(doc.data, max_text, where)
    text = yaml.safe_dump(kept_data, allow_unicode=True, sort_keys=False, width=4096)
    data = (COPY_HEADER + text).encode("utf-8")
    ensure_dir((folder / layout.LAST_REPORT).parent)
    atomic.replace_file(folder / layout.LAST_REPORT, data)
    copy = hashlib.sha256(data).hexdigest()[:16]
    identity = json.dumps({"digest": digest, "stamp": write, "copy": copy}) + "\n"
    atomic.replace_file(folder / layout.LAST_REPORT_ID, identity.encode("utf-8"))
    return True


COPY_HEADER = "# The validator's last report as selfcorrect decided on it (io/last_report.py).\n"


def _capped(value: Any, limit: int, where: str) -> Any:
    """Every text within `limit` bytes, a cut one naming the whole one's identity."""
    from selfcorrect.core.classify import words_identity
    from selfcorrect.core.text_caps import cap_identified

    if isinstance(value, str):
        return cap_identified(value, limit, where, words_identity)
    if isinstance(value, dict):
        return {key: _capped(item, limit, where) for key, item in value.items()}
    if isinstance(value, list):
        return [_capped(item, limit, where) for item in value]
    return value


def kept(folder: Path) -> tuple[Path, str, str] | None:
    """The copy, its report's write stamp and its report's digest, when one is kept and is
    the copy recorded (an older copy, the report's bytes, is recorded by its digest)."""
    identity = _identity(folder)
    data = atomic.read_or_none(folder / layout.LAST_REPORT)
    if identity is None or data is None:
        return None
    digest, stamp, copy = identity
    if hashlib.sha256(data).hexdigest()[:16] != copy:
        return None  # not the copy we made: ignored
    return folder / layout.LAST_REPORT, stamp, digest


def _identity(folder: Path) -> tuple[str, str, str] | None:
    try:
        data = json.loads(atomic.read_or_none(folder / layout.LAST_REPORT_ID) or b"null")
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    digest, stamp, copy = data.get("digest"), data.get("stamp"), data.get("copy")
    copy = digest if copy is None else copy
    if isinstance(digest, str) and isinstance(stamp, str) and isinstance(copy, str):
        return digest, stamp, copy
    return None
