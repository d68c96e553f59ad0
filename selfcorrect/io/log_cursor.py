"""Reading tool_failures.yaml from where the last read stopped (rules §15, §18).

The hook log is append-only in both of its forms, so a watcher need only parse the bytes
appended since its last read: then an append costs what it appends, not what the log holds.
A `LogCursor` remembers how far it read, and enough to notice cheaply when the bytes it read
are no longer there: the file's inode and size, its first 4 KiB, and its last 64 KiB before
that size (reaching back, at least, to the start of the last entry). When any of them changed
(a rewrite, a truncation, an atomic replace), the read starts over and says so (`reset`).
An edit in the middle of a large log that keeps the inode, the size, the head and the tail is
not seen: that is the price of not reading the log.

The rules of a read:
- Only complete lines are read. Bytes after the last newline are left for the next read, as a
  hook may be mid-append; when such a partial line does not open a new entry, the last entry
  may still be growing, so it is held back (neither it nor its warnings are passed on) and is
  read again, whole, next time.
- The straddling entry: an append may add lines to the last entry passed on (a continuation,
  or the rest of an entry whose write was cut at a newline). So each read starts again at the
  start of the last entry it passed on and parses it once more: read the same (the same entry,
  the same warnings) it is skipped; read differently, what was derived from it is stale and the
  read starts over from the beginning (`reset`). Writers append whole entries, so this is rare.
- A log with no block list to stream yet (no `failures:` line, no entry, flow style) is read
  whole every time, each read a reset.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from msgspec import Struct
from msgspec.structs import replace

from selfcorrect.core import saved
from selfcorrect.errors import Diagnostic
from selfcorrect.io import documents, platform
from selfcorrect.io.failure_log import (
    Item,
    RawFailure,
    decode_log,
    find_layout,
    iter_failures,
    iter_items,
    with_progress,
)

_HEAD = 4 * 1024
_TAIL = 64 * 1024
_KEEP = 1024 * 1024  # bytes a full read keeps from the log's end


class _Seen(Struct, frozen=True):
    """The last entry passed on, as it read; compared when it is read again."""

    entry: RawFailure | None
    warnings: tuple[Diagnostic, ...]


# (list index, 0-based line, how it read or None if held back) of the last entry of a read
_Last = tuple[int, int, _Seen | None]


class LogCursor(Struct):
    """How far a failure log has been read, and what is needed to read on from there."""

    path: Path
    size: int = 0  # bytes consumed: everything up to the last newline read
    inode: int | None = None  # None: no usable previous read, the next read is whole
    next_index: int = 0  # list index of the first entry not yet passed on
    next_line: int = 0  # 0-based line at `size` (the lines consumed)
    tail_check: bytes = b""  # the bytes before `size`: the last 64 KiB or from `resume_offset`
    head_check: bytes = b""  # the first up-to-4 KiB
    dialect: bool | None = None  # what the first full read learnt
    item_indent: int | None = None
    # Where the next read starts to parse: at the last entry read (passed on or held back), or
    # where the last read stopped when no entry was seen; with its list index and 0-based line.
    resume_offset: int = 0
    resume_index: int = 0
    resume_line: int = 0
    seen: _Seen | None = None  # the entry at resume_offset as passed on; None if held back

    def read(
        self, warnings: list[Diagnostic], *, max_bytes: int
    ) -> tuple[bool, Iterator[RawFailure]]:
        """(reset, entries): every entry when `reset`, else only those appended since.

        The entries stream; problems go to `warnings` as they are met. The cursor moves on when
        the iterator is exhausted; an iteration left unfinished makes the next read whole.
        """
        display = documents.display_path(self.path)
        known, self.inode = self.inode, None
        try:
            with _open_log(self.path) as handle:
                info = os.fstat(handle.fileno())
                if (
                    not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes or info.st_nlink > 1
                ):  # raises the refusal
                    documents.read_limited(self.path, display, max_bytes, single=True)
                if known == info.st_ino and info.st_size >= self.size:
                    tail = self._tail(handle, info.st_ino, display, warnings)
                    if tail is not None:
                        return False, tail
                handle.seek(0)
                raw = handle.read()
        except FileNotFoundError:
            return True, iter(())
        except OSError:
            documents.read_limited(self.path, display, max_bytes, single=True)  # the error
            raise
        return True, self._whole(raw, info.st_ino, display, warnings)

    # --- saved between processes (io/log_state.py) ---------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """Where the read stopped, as JSON data. The head and tail checks are saved as their
        length and SHA-256, not as bytes (the tail alone is 64 KiB or more): `restore` reads
        them back from the log. saved.StateError when the last entry's raw data holds what
        JSON cannot give back equal (a YAML set or binary)."""
        seen = None
        if self.seen is not None:
            entry = self.seen.entry
            if entry is not None and not saved.plain(entry.data):
                raise saved.StateError("the last entry's data is not plain JSON")
            seen = {
                "entry": None if entry is None else [entry.index, entry.line, entry.data],
                "warnings": [diagnostic_state(d) for d in self.seen.warnings],
            }
        return {
            "size": self.size,
            "inode": self.inode,
            "next_index": self.next_index,
            "next_line": self.next_line,
            "head": _check_state(self.head_check),
            "tail": _check_state(self.tail_check),
            "dialect": self.dialect,
            "item_indent": self.item_indent,
            "resume_offset": self.resume_offset,
            "resume_index": self.resume_index,
            "resume_line": self.resume_line,
            "seen": seen,
        }

    @classmethod
    def restore(cls, path: Path, state: Any) -> LogCursor:
        """The cursor `to_state` gave, reading `path` on. Every field is checked (saved.
        StateError when one does not read). The head and tail bytes are read back from the log
        and must hash as saved; when they do not (or the log is gone), the cursor forgets
        where it stopped and its next read is whole, a reset, as after any rewrite."""
        data = saved.fields(state, _CURSOR)
        integer, small = saved.integer, saved.optional(saved.integer)
        cursor = cls(
            path,
            size=integer(data["size"]),
            inode=_inode(data["inode"]),
            next_index=integer(data["next_index"]),
            next_line=integer(data["next_line"]),
            dialect=_bool_or_none(data["dialect"]),
            item_indent=small(data["item_indent"]),
            resume_offset=integer(data["resume_offset"]),
            resume_index=integer(data["resume_index"]),
            resume_line=integer(data["resume_line"]),
            seen=_seen_of(data["seen"]),
        )
        head, tail = _check_of(data["head"]), _check_of(data["tail"])
        if cursor.inode is None:
            return cursor  # no usable read to go on from: the next one is whole anyway
        if (
            head[0] > min(_HEAD, cursor.size)
            or tail[0] > cursor.size
            or cursor.resume_offset > cursor.size
            or cursor.resume_offset < cursor.size - tail[0]
            or cursor.dialect is None
            or cursor.item_indent is None
            or cursor.item_indent > _MAX_INDENT  # " " * indent is built per read
        ):
            raise saved.StateError("the cursor's offsets do not fit together")
        checks = _read_checks(path, cursor.inode, cursor.size, head[0], tail[0])
        if checks is None or (_digest(checks[0]), _digest(checks[1])) != (head[1], tail[1]):
            cursor.inode = None  # the log changed since: read it whole
            return cursor
        cursor.head_check, cursor.tail_check = checks
        return cursor

    # --- a full read --------------------------------------------------------------------------

    def _whole(
        self, raw: bytes, inode: int, display: str, warnings: list[Diagnostic]
    ) -> Iterator[RawFailure]:
        end = raw.rfind(b"\n") + 1
        found: list[Diagnostic] = []
        text = decode_log(raw, display, found).removeprefix("\ufeff")
        if found and end < len(raw) and found[0].line > raw.count(b"\n", 0, end):
            found = []  # a character cut in the partial last line: it is read when whole
        warnings.extend(found)
        # Only the end of the bytes is needed later (to place the last entry and for the tail
        # check): keep that, not a second copy of the whole log beside its text and lines.
        keep = max(0, end - _KEEP)
        anchor = (0, 0) if keep == 0 else None
        done = _Done(raw[keep:end], keep, end, 0, raw[:_HEAD], inode, anchor)
        del raw
        lines = text.split("\n")
        partial, lines[-1] = lines[-1], ""
        layout = find_layout(lines)
        if layout is None or layout.item_indent is None:
            # Nothing to stream from yet: read it as the plain reader does, and whole next time.
            yield from iter_failures(text, display, warnings)
            return
        del text
        self.dialect, self.item_indent = layout.dialect, layout.item_indent
        self.next_index = 0
        sink: list[Diagnostic] = []
        items = iter_items(
            lines, layout.first, display, sink, dialect=layout.dialect, indent=layout.item_indent
        )
        done = replace(done, end_line=len(lines) - 1)
        hold = _holds(partial, layout.item_indent)
        items = with_progress(items, len(lines))  # a whole read shows how far it got
        yield from self._stream(done, items, sink, warnings, hold=hold, old_lines=0)

    # --- reading on from the last read --------------------------------------------------------

    def _tail(
        self, handle: BinaryIO, inode: int, display: str, warnings: list[Diagnostic]
    ) -> Iterator[RawFailure] | None:
        """The entries appended since the last read, or None if the bytes it read changed."""
        head = handle.read(_HEAD)
        buf_offset = self.size - len(self.tail_check)
        handle.seek(buf_offset)
        buf = handle.read()
        if not head.startswith(self.head_check) or not buf.startswith(self.tail_check):
            return None
        region = buf[self.resume_offset - buf_offset :]  # from the last entry's start
        if self.seen is not None and len(region) == self.size - self.resume_offset:
            self.inode = inode  # not a byte more: nothing to do
            return iter(())
        cut = region.rfind(b"\n") + 1
        early: list[Diagnostic] = []  # said only if the read goes on from here
        new_from = self.size - self.resume_offset
        text = decode_log(region[:cut], display, early, base=self.resume_line, new_from=new_from)
        lines = text.split("\n")
        sink: list[Diagnostic] = []
        assert self.dialect is not None and self.item_indent is not None
        items = iter_items(
            lines,
            0,
            display,
            sink,
            dialect=self.dialect,
            indent=self.item_indent,
            base=self.resume_line,
            first_index=self.resume_index,
        )
        carried: _Last | None = None
        if self.seen is not None:
            # The entry passed on last time is read again: it may have grown since.
            first = next(items, None)
            if first is None or first[:2] != (self.resume_index, self.resume_line):
                return None
            if _Seen(first[2], tuple(sink)) != self.seen:
                return None  # it changed: what was derived from it is stale
            sink.clear()
            carried = (self.resume_index, self.resume_line, self.seen)
        end = self.resume_offset + cut
        end_line = self.resume_line + len(lines) - 1
        anchor = (self.resume_offset - buf_offset, self.resume_line)  # where parsing began
        done = _Done(buf, buf_offset, end, end_line, head, inode, anchor)
        hold = _holds(region[cut:].decode("utf-8", "replace"), self.item_indent)
        return self._stream(
            done,
            items,
            sink,
            warnings,
            hold=hold,
            old_lines=self.next_line,
            carried=carried,
            early=early,
        )

    # --- both -----------------------------------------------------------------------------------

    def _stream(
        self,
        done: _Done,
        items: Iterator[Item],
        sink: list[Diagnostic],
        warnings: list[Diagnostic],
        *,
        hold: bool,
        old_lines: int,
        carried: _Last | None = None,
        early: list[Diagnostic] | None = None,
    ) -> Iterator[RawFailure]:
        """Pass the entries on, then remember where this read stopped."""
        warnings.extend(early or ())
        last = yield from _deliver(items, sink, warnings, hold=hold, old_lines=old_lines)
        self._commit(done, last or carried)

    def _commit(self, done: _Done, last: _Last | None) -> None:
        buf, buf_offset, end, end_line = done.buf, done.buf_offset, done.end, done.end_line
        if last is None:  # no entry seen: the next read starts where this one stopped
            self.resume_offset, self.resume_line, self.resume_index = end, end_line, self.next_index
            self.seen = None
        else:
            index, line, seen = last
            at = _line_start(buf, end - buf_offset, end_line, line, done.anchor)
            if at is None:
                return  # the last entry began before the bytes kept: the next read is whole
            self.resume_offset, self.resume_line, self.resume_index = buf_offset + at, line, index
            self.seen = seen
            self.next_index = index + 1 if seen is not None else index
        self.size, self.next_line = end, end_line
        tail_from = max(0, min(self.resume_offset, end - _TAIL))
        self.tail_check = buf[tail_from - buf_offset : end - buf_offset]
        self.head_check = done.head[: min(_HEAD, end)]
        self.inode = done.inode


_MAX_INDENT = 1 << 16  # the column of a log's `-`; a saved state claiming more is not used
_CURSOR = (
    "size",
    "inode",
    "next_index",
    "next_line",
    "head",
    "tail",
    "dialect",
    "item_indent",
    "resume_offset",
    "resume_index",
    "resume_line",
    "seen",
)


def _digest(data: bytes) -> str:
    import hashlib  # only to save or restore: a watcher's reads never pay for OpenSSL's load

    return hashlib.sha256(data).hexdigest()


def _check_state(data: bytes) -> list[Any]:
    return [len(data), _digest(data)]


def _check_of(state: Any) -> tuple[int, str]:
    pair = saved.items(state, 2)
    if len(pair) != 2:
        raise saved.StateError("a check is a (length, sha256) pair")
    return saved.integer(pair[0]), saved.text(pair[1])


def _inode(value: Any) -> int | None:
    """st_ino is unsigned: 64 bits on POSIX, up to 128 on Windows (ReFS)."""
    return None if value is None else saved.integer(value, 0, 2**128 - 1)


def _bool_or_none(value: Any) -> bool | None:
    if value is not None and type(value) is not bool:
        raise saved.StateError(f"expected true, false or null, got {value!r:.40}")
    return value


def diagnostic_state(diagnostic: Diagnostic) -> list[Any]:
    """A Diagnostic as JSON data: [path, line, col, message, severity]."""
    d = diagnostic
    return [d.path, d.line, d.col, d.message, d.severity]


def diagnostic_of(state: Any) -> Diagnostic:
    """A Diagnostic saved as [path, line, col, message, severity]."""
    values = saved.items(state, 5)
    if len(values) != 5:
        raise saved.StateError(f"a diagnostic has 5 fields, not {len(values)}")
    path, line, col, message, severity = values
    return Diagnostic(
        saved.text(path),
        saved.integer(line),
        saved.integer(col),
        saved.text(message),
        saved.text(severity),
    )


def _seen_of(state: Any) -> _Seen | None:
    if state is None:
        return None
    data = saved.fields(state, ("entry", "warnings"))
    warnings = tuple(diagnostic_of(d) for d in saved.items(data["warnings"]))
    if data["entry"] is None:
        return _Seen(None, warnings)
    values = saved.items(data["entry"], 3)
    if len(values) != 3:
        raise saved.StateError(f"an entry has 3 fields, not {len(values)}")
    index, line, raw = values
    entry = RawFailure(saved.integer(index), saved.integer(line), saved.mapping(raw))
    return _Seen(entry, warnings)


def _open_log(path: Path) -> BinaryIO:
    """The log, opened without blocking: a FIFO in its place must not hang the read (the
    caller checks the type on the descriptor, and the positioned refusal says what it is)."""
    flags = os.O_RDONLY | platform.O_NONBLOCK | platform.O_CLOEXEC
    return open(os.open(path, flags), "rb")


def _read_checks(
    path: Path, inode: int, size: int, head: int, tail: int
) -> tuple[bytes, bytes] | None:
    """The log's first `head` bytes and the `tail` bytes before `size`, if it is still the
    file (`inode`) and still that long; None otherwise or when it cannot be read (the read
    that follows says why)."""
    try:
        with _open_log(path) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_ino != inode or info.st_size < size:
                return None
            first = handle.read(head)
            handle.seek(size - tail)
            last = handle.read(tail)
    except OSError:
        return None
    return first, last


class _Done(Struct, frozen=True):
    """What one read covered: `buf` holds the file's bytes from `buf_offset` to at least `end`,
    the offset just after the last newline read, which starts 0-based line `end_line`."""

    buf: bytes
    buf_offset: int
    end: int
    end_line: int
    head: bytes  # the file's first bytes
    inode: int
    anchor: tuple[int, int] | None  # a known line start in `buf`: (offset in buf, line)


def _deliver(
    items: Iterator[Item],
    sink: list[Diagnostic],
    warnings: list[Diagnostic],
    *,
    hold: bool,
    old_lines: int,
) -> Generator[RawFailure, None, _Last | None]:
    """Pass the entries on, one behind, so that the last can be held back with its warnings.

    Warnings reach `sink` while an item is read; those on its lines are its own, those before
    (lines outside any entry) are passed on unless an earlier read saw them (`old_lines`).
    Returns the last item's index, line and how it read (None if held back).
    """
    pending: tuple[Item, tuple[Diagnostic, ...]] | None = None
    for item in items:
        own: tuple[Diagnostic, ...] = ()
        if sink:
            own = tuple(d for d in sink if d.line > item[1])
            before = [d for d in sink if d.line <= item[1] and d.line > old_lines]
            sink.clear()
        else:
            before = []
        if pending is not None:
            warnings.extend(pending[1])
            if pending[0][2] is not None:
                yield pending[0][2]
        warnings.extend(before)
        pending = item, own
    after = [d for d in sink if d.line > old_lines]  # lines outside any entry, after the last
    sink.clear()
    if pending is None:
        warnings.extend(after)
        return None
    (index, line, entry), own = pending
    if hold:
        warnings.extend(after)
        return index, line, None
    warnings.extend(own)
    if entry is not None:
        yield entry
    warnings.extend(after)
    return index, line, _Seen(entry, own)


def _holds(partial: str, indent: int) -> bool:
    """Whether a partial last line may still belong to the last entry (so hold it back)."""
    return bool(partial) and not partial.startswith(" " * indent + "-")


def _line_start(
    data: bytes, end: int, end_line: int, line: int, anchor: tuple[int, int] | None
) -> int | None:
    """Offset in `data` of the start of `line`, walking back from `end` (the start of
    `end_line`): costs the bytes between, not the bytes before. `anchor` is a known (offset,
    line) start; None when `data` does not reach back to `line`."""
    if anchor is not None and anchor[1] == line:
        return anchor[0]
    at = end
    for _ in range(end_line - line):
        found = data.rfind(b"\n", 0, at - 1) if at > 0 else -1
        if found < 0:
            return None
        at = found + 1
    return at
