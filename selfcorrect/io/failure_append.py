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
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from selfcorrect.io import atomic, platform
from selfcorrect.io.hook_dialect import FAILURE_HEADER
from selfcorrect.io.safe_paths import open_nofollow, refusal

HEAD = 4 * 1024
TAIL = 64 * 1024
MAX_VALUE = 2000  # characters of one value; the error text of a failed build can be megabytes
KEEP_END = 1000  # of which the last: build tools print the decisive line last
CANONICAL_HEADER = "# Tool failure log (docs/rules.md §2.1), appended by agent hooks.\nfailures:\n"
_NO_ENTRIES = re.compile(r"(?m)^failures:[ \t]*(\[\s*\]|null|~)?[ \t]*(#.*)?$")
_ITEM = re.compile(r"(?m)^( *)- ")
_FAILURES = re.compile(r"(?m)^failures:")


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


def append_failure(log: Path, fields: Mapping[str, str]) -> None:
    """Append one entry (its keys in order) to the log, creating the log if needed."""
    with atomic.sidecar_lock(log):
        _prepare(log)
        fd = open_nofollow(log, os.O_RDWR | os.O_APPEND | platform.O_CLOEXEC)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise refusal(log, "is not a regular file: the hook appends to a file")
            head = _read_at(fd, 0, HEAD)
            tail = _read_at(fd, max(info.st_size - TAIL, 0), TAIL)
            dialect = head.startswith(FAILURE_HEADER)
            text = ""
            if info.st_size <= TAIL and _FAILURES.search(tail) is None:
                text += ("" if not tail or tail.endswith("\n") else "\n") + "failures:\n"
            elif tail and not tail.endswith("\n"):
                text += "\n"
            items = _ITEM.findall(tail)
            indent = len(items[-1]) if items else (0 if dialect else 2)
            if dialect and items:
                text += "\n"  # the hook's template leaves a blank line between entries
            text += render_entry(fields, dialect=dialect, indent=indent)
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


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
    if info.st_size > TAIL or not stat.S_ISREG(info.st_mode):
        return  # a log that big has entries; a link or a FIFO is refused on open
    text = (atomic.read_or_none(log) or b"").decode("utf-8", "replace")
    match = _NO_ENTRIES.search(text)
    if match is not None and match.group(1) is not None and not _ITEM.search(text):
        rewritten = text[: match.start()] + "failures:" + text[match.end() :]
        atomic.replace_file(log, rewritten.encode("utf-8"))
