"""Appending one entry to `tool_failures.yaml`, as the agent hook does (docs/hooks.md).

The log is append-only and may hold 100,000 entries, so an append reads at most its first
4 KiB and its last 64 KiB, never the whole file, and writes only the new bytes (one `write` on
an `O_APPEND` descriptor, under the log's sidecar lock so parallel hooks land one after the
other, whole and in order). The only rewrite is of a log that holds no entry yet (`init`'s
`failures: []`), done atomically.

An entry is written in the log's own form, so every reader reads it as written:
- in the cAgents hook's dialect (a log that opens with `# Tool Failure Log`), as its template
  does: `- key: "raw value"`, a double quote turned into `'`, nothing escaped;
- in the canonical form, as single-quoted YAML scalars, indented like the entries before it.
Either way a value is one line: control characters become spaces (agent text is data).

The entries' column is the reader's (io/failure_log.py): that of the first entry after
`failures:`, found from the log's start, never from a line near its end, which may be inside
a value (a block scalar holding `- left-pad`, a quoted string or a raw dialect value spanning
lines). In the dialect it is the template's, column 0. An append the reader would not read back
is refused, not written: after a top-level key that ends the list, or into a `failures:` that is
not a block list. So is an append past `limits.max_bytes` (`run` would refuse the whole log),
and one to a log with another hard link (it would write a file outside the folder, rules §17).
An entry lands whole or not at all: a write the disk cuts short is truncated away.

The log holds one entry per identity: an entry whose `tool_use_id` (else `event_id`, the hook's
hash of an event without one) is in the log's last IDENTITY_TAIL bytes already is not appended
again. So an event may be delivered more than once (the warm answerer took it and gave no
answer in time, and the hook ran it in-process: docs/hooks.md) and be logged once; the check and
the write are one step under the log's lock.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from selfcorrect.errors import InputError
from selfcorrect.io import atomic, failure_spool, platform
from selfcorrect.io.documents import DEFAULT_MAX_BYTES, display_path
from selfcorrect.io.failure_log import ends_list, find_layout
from selfcorrect.io.hook_dialect import FAILURE_HEADER
from selfcorrect.io.safe_paths import open_nofollow, refuse_shared

HEAD = 4 * 1024
TAIL = 64 * 1024
IDENTITY_TAIL = 256 * 1024  # where an entry of the same identity is looked for (as batch's)
IDENTITY_KEYS = ("tool_use_id", "event_id")
MAX_VALUE = 2000  # characters of one value; the error text of a failed build can be megabytes
KEEP_END = 1000  # of which the last: build tools print the decisive line last
CANONICAL_HEADER = "# Tool failure log (docs/rules.md §2.1), appended by agent hooks.\nfailures:\n"
_NO_ENTRIES = re.compile(r"(?m)^failures:[ \t]*(\[\s*\]|null|~)?[ \t]*(#.*)?$")
_ITEM = re.compile(r"(?m)^( *)- ")
_FAILURES = re.compile(r"(?m)^failures:")


class LogRefused(InputError):
    """The append would not be read back, or not be read at all: nothing was written."""


def one_line(value: object) -> str:
    """Agent text as one printable line, capped: its first and last KEEP_END characters, the
    elision marked between them (docs/hooks.md, "Error text keeps its end")."""
    text = "".join(c if c.isprintable() else " " for c in str(value))
    if len(text) > MAX_VALUE:
        head, tail = text[: MAX_VALUE - KEEP_END], text[-KEEP_END:]
        text = f"{head} … [{len(text) - MAX_VALUE} characters elided] … {tail}"
    return text


def render_entry(fields: Mapping[str, str], *, dialect: bool, indent: int) -> str:
    """The entry's lines, in the log's form (see the module's docstring)."""
    lines = []
    for number, (key, value) in enumerate(fields.items()):
        text = one_line(value)
        if dialect:
            rendered = '"' + text.replace('"', "'") + '"'
        else:
            rendered = "'" + text.replace("'", "''") + "'"
        lead = " " * indent + ("- " if number == 0 else "  ")
        lines.append(f"{lead}{key}: {rendered}\n")
    return "".join(lines)


def append_failure(
    log: Path,
    fields: Mapping[str, str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    said: Callable[[str], None] | None = None,
) -> bool:
    """Append one entry (its keys in order) to the log, creating the log if needed; False
    (nothing written) when an entry of the same identity is in the log's tail already.

    Entries kept while the log's lock was held by a stopped process are logged first
    (io/failure_spool.py); when the lock's holder is stopped now, this entry is kept in turn
    (True: it will be logged). `said` hears why a kept entry could not be logged.

    Raises LogRefused (nothing written) when the entry would not be read back, would take the
    log past `max_bytes`, or would be written to a file with another hard link; and the refusal
    every written file gets for a symlink or what is not a regular file.
    """
    try:
        with atomic.sidecar_lock(log):
            log_waiting_locked(log, max_bytes=max_bytes, said=said)
            return _append_locked(log, fields, max_bytes)
    except atomic.HolderStopped:
        try:
            failure_spool.keep(log, fields)
        except failure_spool.SpoolFull as exc:
            raise LogRefused(f"{exc}; the failure was not logged") from None
        return True


def log_waiting(
    log: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, said: Callable[[str], None] | None = None
) -> None:
    """Log the entries kept beside the log (a run does, before it reads the log), unless the
    lock's holder is still stopped: then they keep waiting."""
    if not failure_spool.any_waiting(log):
        return
    with contextlib.suppress(atomic.HolderStopped), atomic.sidecar_lock(log):
        log_waiting_locked(log, max_bytes=max_bytes, said=said)


def log_waiting_locked(log: Path, *, max_bytes: int, said: Callable[[str], None] | None) -> None:
    if not failure_spool.any_waiting(log):
        return
    for path, kept in failure_spool.waiting(log):
        if kept is not None:
            try:
                _append_locked(log, kept, max_bytes)
            except LogRefused as exc:
                if said is not None:
                    said(f"{exc} (it waited in {display_path(path.parent)})")
        failure_spool.done(path)


def _append_locked(log: Path, fields: Mapping[str, str], max_bytes: int) -> bool:
    """The append itself, under the log's lock (see `append_failure`)."""
    _prepare(log)
    fd = open_nofollow(log, os.O_RDWR | os.O_APPEND | platform.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        try:
            refuse_shared(fd, log)  # a regular file with no other name, as the journal
        except InputError as exc:
            if stat.S_ISREG(info.st_mode):  # a hard link: refused, but the log still reads
                raise LogRefused(str(exc)) from None
            raise
        size = info.st_size
        # A byte-order mark is no part of the log's text, as its readers see it.
        head = _read_at(fd, 0, HEAD).removeprefix("\ufeff")
        tail = _read_at(fd, max(size - TAIL, 0), TAIL)
        tail = tail.removeprefix("\ufeff") if size <= TAIL else tail
        dialect = head.startswith(FAILURE_HEADER)
        if _logged(fd, size, tail, fields):
            return False
        text = "" if not tail or tail.endswith("\n") else "\n"
        indent = 0 if dialect else _item_indent(fd, log, size, head)
        if indent is None:  # no `failures:` line at all: start the list
            text += "failures:\n"
            indent = 2
        elif not dialect:
            _refuse_ended_list(log, tail, indent, size <= TAIL)
        if dialect and _ITEM.search(tail):
            text += "\n"  # the hook's template leaves a blank line between entries
        text += render_entry(fields, dialect=dialect, indent=indent)
        data = text.encode("utf-8")
        if size + len(data) > max_bytes:
            raise LogRefused(
                f"{display_path(log)}: this entry would take the log past limits.max_bytes "
                f"({max_bytes:,} bytes; it holds {size:,}), and `run` refuses a log that "
                "big; the failure was not logged: move the log away (archive it; the next "
                "failure starts a new one) or raise limits.max_bytes in selfcorrect.yaml"
            )
        _write_whole(fd, log, data, size)
    finally:
        os.close(fd)
    return True


def _logged(fd: int, size: int, tail: str, fields: Mapping[str, str]) -> bool:
    """Whether an entry of the log's last IDENTITY_TAIL bytes has this entry's identity: its
    line as either form writes it (canonical quotes, the dialect's, or a plain scalar)."""
    key = next((k for k in IDENTITY_KEYS if fields.get(k)), None)
    if key is None:
        return False
    value = one_line(fields[key])
    if size > TAIL:
        tail = _read_at(fd, max(size - IDENTITY_TAIL, 0), IDENTITY_TAIL)
    if value not in tail:
        return False  # the common case, found without a pattern
    forms = ("'" + value.replace("'", "''") + "'", '"' + value.replace('"', "'") + '"', value)
    spelled = "|".join(re.escape(form) for form in forms)
    line = rf"(?m)^[ \t]*(?:- )?{key}:[ \t]*(?:{spelled})[ \t]*\r?$"
    return re.search(line, tail) is not None


def _write_whole(fd: int, log: Path, data: bytes, size: int) -> None:
    """Write all of `data` at the log's end, or none of it: a write the disk cuts short (a
    full disk, a quota) is undone, the log truncated back to its `size`, so no torn entry is
    left for every later reader to skip (docs/containment.md, "Odd inputs")."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):  # a file that will not shrink: said below
            os.ftruncate(fd, size)
        raise LogRefused(
            f"{display_path(log)}: the entry could not be written whole ({exc.strerror or exc}); "
            "nothing of it was kept, and the failure was not logged"
        ) from None


def _item_indent(fd: int, log: Path, size: int, head: str) -> int | None:
    """The column of the entries' `-` as the reader finds it: that of the first entry after
    `failures:` (read from the log's start, as far as that entry; 2 when the list is still
    empty), or None when the log has no `failures:` line."""
    text, offset = head, HEAD
    while True:
        whole = offset >= size
        lines = (text if whole else text[: text.rfind("\n") + 1]).split("\n")
        layout = find_layout(lines)
        if layout is not None and layout.item_indent is not None:
            return layout.item_indent
        if layout is not None and any(_content(line) for line in lines[layout.first :]):
            break  # `failures:` holds something that is not a block list
        if layout is None and _FAILURES.search(text):
            break  # `failures: [...]`, a flow list, or a value on its line
        if whole:
            return None if layout is None else 2
        text += _read_at(fd, offset, TAIL)
        offset += TAIL
    raise LogRefused(
        f"{display_path(log)}: `failures:` does not hold a block list (one `- ` entry per "
        "line), so an entry appended at the end would not be read; the failure was not "
        "logged: write the list in block style (docs/rules.md §2.1)"
    )


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _refuse_ended_list(log: Path, tail: str, indent: int, whole: bool) -> None:
    """Refuse when a line in the tail ends the list (a top-level key after it, as the reader
    sees it): an entry appended after that line would not be read back."""
    lines = tail.split("\n")
    if not whole:
        lines = lines[1:]  # the first line of a tail may be cut
    starts = [n for n, line in enumerate(lines) if line.startswith("failures:")]
    for line in lines[starts[-1] + 1 if starts else 0 :]:
        if ends_list(line, indent):
            raise LogRefused(
                f"{display_path(log)}: the failures list ends before the file does (at "
                f"{line.strip()[:60]!r}), and the hook appends at the end, where the entry "
                "would not be read; the failure was not logged: move that line above "
                "`failures:`"
            )


def _read_at(fd: int, offset: int, size: int) -> str:
    """`size` bytes from `offset` (lseek and read, not pread: Windows has no pread; the
    position does not matter to an O_APPEND write, and we hold the log's lock)."""
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size).decode("utf-8", "replace")


def _prepare(log: Path) -> None:
    """Create a missing log; turn an entry-less `failures: []` into `failures:` (atomically:
    the only rewrite, of a log with nothing in it to lose)."""
    try:
        info = os.lstat(log)
    except FileNotFoundError:
        atomic.write_new(log, CANONICAL_HEADER.encode("utf-8"))
        return
    if info.st_size > TAIL or not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        return  # a log that big has entries; a link, a FIFO, a hard link is refused on open
    text = (atomic.read_or_none(log) or b"").decode("utf-8", "replace")
    match = _NO_ENTRIES.search(text)
    if match is not None and match.group(1) is not None and not _ITEM.search(text):
        rewritten = text[: match.start()] + "failures:" + text[match.end() :]
        atomic.replace_file(log, rewritten.encode("utf-8"))
