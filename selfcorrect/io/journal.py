"""The journal: `.selfcorrect/journal.jsonl`, one fsynced JSON record per decision or transition.

Append-only. Every derived fact (attempt counts, ladder positions, what was already handed out)
is computed from it by `core.state`, so a restart never loses or double-counts anything. A torn
last line (a crash mid-append) is reported and ignored, never fatal.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from selfcorrect import layout
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import platform, schemas
from selfcorrect.io.documents import display_path
from selfcorrect.io.safe_paths import ensure_dir, environment, open_nofollow, refuse_shared

if TYPE_CHECKING:
    from selfcorrect.core.journal_records import Stamped

JOURNAL = Path(layout.JOURNAL)


def journal_path(folder: Path) -> Path:
    return folder / JOURNAL


def read_journal(folder: Path, warnings: list[Diagnostic]) -> list[dict[str, Any]]:
    """Every readable record, in order; unreadable lines become warnings."""
    try:
        return read_journal_file(journal_path(folder), warnings)
    except FileNotFoundError:
        return []


def read_journal_file(path: Path, warnings: list[Diagnostic]) -> list[dict[str, Any]]:
    """A journal anywhere (a copy kept for replay, say). FileNotFoundError when there is none;
    InputError (exit 2, naming it) when it is not a regular file or cannot be read.

    A record that cannot be used (torn, too long, nested too deep, the wrong types) is skipped
    with a positioned warning: a tampered journal never stops a command, `reset` included
    (docs/architecture.md: a torn line is a warning). No line longer than MAX_RECORD is ever
    held in memory whole.
    """
    records: list[dict[str, Any]] = []
    with _open_regular(path) as handle:
        number = 0
        while line := handle.readline(MAX_RECORD + 1):
            number += 1
            if len(line) > MAX_RECORD and not line.endswith(b"\n"):
                while (rest := handle.readline(1 << 16)) and not rest.endswith(b"\n"):
                    pass  # the rest of an overlong line, read and dropped piecewise
                _skip(warnings, path, number, f"journal record ignored: over {MAX_RECORD} bytes")
                continue
            if line.strip():
                record, problem = _parse(line)
                if problem:
                    _skip(warnings, path, number, problem)
                elif record is not None:
                    records.append(record)
    return records


# A record is a few hundred bytes (agent text in it is capped, limits.max_text), but a reset
# names every subject it covers: 16 MiB holds about 100,000 of them. A longer line is a
# tampered one, and reading it whole once cost 4 bytes of memory for each of its bytes.
MAX_RECORD = 16 << 20
MAX_DEPTH = 32  # the deepest record selfcorrect writes is 4 levels


def _open_regular(path: Path) -> BinaryIO:
    try:
        fd = os.open(path, os.O_RDONLY | platform.O_CLOEXEC | platform.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _unreadable(path, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _unreadable(path, "not a regular file")
    return os.fdopen(fd, "rb")


def _unreadable(path: Path, why: str) -> InputError:
    return InputError(
        Diagnostic(
            display_path(path),
            1,
            1,
            f"cannot read the journal: {why}; move it aside (selfcorrect starts a new one, "
            "forgetting attempts and escalations it counted) or restore it from a backup",
        )
    )


def _parse(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """The record on a line, or why it is skipped."""
    try:
        record = json.loads(line)
    except RecursionError:
        return None, f"journal record ignored: nested deeper than {MAX_DEPTH} levels"
    except (ValueError, UnicodeDecodeError):
        return None, "unreadable journal line ignored (a run was interrupted mid-write?)"
    if not isinstance(record, dict):
        return None, "journal record ignored: not a JSON object"
    if _too_deep(record):
        return None, f"journal record ignored: nested deeper than {MAX_DEPTH} levels"
    wrong = _against_schema(record)
    if wrong:  # a hand edit gone wrong: every fold trusts the schema's types
        return None, f"journal record ignored: {wrong}"
    return record, ""


def _against_schema(record: Mapping[str, Any]) -> str | None:
    """What is wrong with a record of a kind this version knows, by schemas/journal.schema.json
    (the same schema the record classes are held to); None when nothing is. A kind a newer
    version wrote is left to the folds, which pass it over."""
    from selfcorrect.core.journal_records import KINDS  # not on `check`'s start-up path

    if record.get("event") not in KINDS:
        return None
    check = schemas.fast_check("journal")
    if check is not None and check(record):
        return None
    errors = sorted(schemas.validator("journal").iter_errors(record), key=lambda e: list(e.path))
    if not errors:
        return None
    error = errors[0]
    where = schemas.dotted(error.path)
    if error.validator == "type" or error.validator == "const":
        return f"`{where}` has the wrong type"
    if error.validator == "required":
        return f"a `{record.get('event')}` record needs {error.message.split(' ')[0]}"
    return f"`{where}`: {error.message[:120]}"


def _too_deep(record: Any) -> bool:
    level: list[Any] = [record]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for value in level
            if isinstance(value, (dict, list))
            for child in (value.values() if isinstance(value, dict) else value)
        ]
        if not level:
            return False
    return True


def _skip(warnings: list[Diagnostic], path: Path, number: int, message: str) -> None:
    warnings.append(Diagnostic(str(path), number, 1, message, "warning"))


def append(folder: Path, records: Iterable[Stamped | Mapping[str, Any]]) -> int:
    """Append records, each on its own line, and fsync before returning. Returns the count.
    A typed record (core/journal_records.py, a plan's) is written as its `to_json()`."""
    plain = (dict(r) if isinstance(r, Mapping) else r.to_json() for r in records)
    lines = [json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in plain]
    if not lines:
        return 0
    path = journal_path(folder)
    ensure_dir(path.parent)  # a symlinked .selfcorrect/ is refused, never written into
    fd = open_nofollow(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)  # read: the torn-tail check
    try:
        refuse_shared(fd, path)
        with environment(path):
            size = os.fstat(fd).st_size
            try:
                # A torn previous line must not swallow this record: start on a fresh line.
                if size and platform.pread(fd, 1, size - 1) != b"\n":
                    os.write(fd, b"\n")
                for line in lines:
                    _write_all(fd, line.encode("utf-8"))
                    os.fsync(fd)
            except OSError:
                # A full disk mid-record: cut the torn tail off again, so no half record
                # stays behind (the records already fsynced are kept).
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, _durable_size(fd, size))
                raise
    finally:
        os.close(fd)
    return len(lines)


def _write_all(fd: int, data: bytes) -> None:
    """os.write may write part of it (a size limit, a signal); the rest, or the error."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _durable_size(fd: int, before: int) -> int:
    """Bytes up to the last complete line at or after `before`."""
    now = os.fstat(fd).st_size
    tail = platform.pread(fd, now - before, before)
    return before + tail.rfind(b"\n") + 1 if b"\n" in tail else before
