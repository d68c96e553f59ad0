"""Streaming reader for tool_failures.yaml, the append-only hook log (rules §2.1, §18).

The log can hold 100,000 entries, so it is never built as one document. The canonical form is
cut into one chunk per top-level list item and each chunk is parsed alone by libyaml; the hook's
dialect is read line by line by its template, with no YAML parser at all. Either way only the
current entry is alive, and an entry that cannot be read is a warning with its position while
the others flow on. `iter_items` can start at any entry with the log's own positions, so a
watcher reads only what was appended (io/log_cursor.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from functools import cache
from typing import Any, NamedTuple, TypeVar

from msgspec import Struct

from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import schemas, yaml_nodes
from selfcorrect.io.hook_dialect import FAILURE_HEADER
from selfcorrect.io.yaml_nodes import TAB_INDENT

_FAILURES_KEY = re.compile(r"^failures:[ \t]*(#.*)?\r?$")
_MAX_CONTINUATION = 50  # lines one raw quoted value may span (a path with newlines)


class RawFailure(Struct, frozen=True):
    """One readable, schema-valid entry, where it stands in the file."""

    index: int  # position in the failures list (the default id, rules §2.1)
    line: int
    data: dict[str, Any]


# One top-level entry as read: (list index, 0-based first line, the entry or None if skipped).
# Skipped entries are items too, so a tail reader knows where the last entry began.
Item = tuple[int, int, RawFailure | None]


# A named tuple, not a frozen dataclass: as immutable, and a dataclass's class creation costs
# start-up a millisecond (rules §18).
class Layout(NamedTuple):
    """How a log's entries are written: what reading a tail of it later needs to know."""

    dialect: bool  # the hook's template (read by its rules), else canonical YAML
    first: int  # 0-based line after `failures:`
    item_indent: int | None  # column of the entries' `-`; None until the list has an entry


def find_layout(lines: list[str]) -> Layout | None:
    """The layout of a log split into lines; None when it has no `failures:` line."""
    start = next((i for i, line in enumerate(lines) if _FAILURES_KEY.match(line)), None)
    if start is None:
        return None
    if lines[0].startswith(FAILURE_HEADER):
        return Layout(True, start + 1, 0)
    return Layout(False, start + 1, _list_indent(lines, start + 1))


# --- progress: how far a whole-log read got, for a terminal to show (cli/progress.py) ---------
# Called with (entries read so far, fraction of the log's lines read) every PROGRESS_EVERY
# entries and once at the end with 1.0. A context variable, not a parameter, so the command line
# can ask for it without every layer between it and this reader passing it along; None (the
# default) costs one check per PROGRESS_EVERY entries.
Progress = Callable[[int, float], None]
T = TypeVar("T", bound=tuple[Any, ...])
PROGRESS: ContextVar[Progress | None] = ContextVar("failure_log_progress", default=None)
PROGRESS_EVERY = 2048


def iter_failures(text: str, display: str, warnings: list[Diagnostic]) -> Iterator[RawFailure]:
    """Every readable entry of a failure log, in log order; problems go to `warnings`."""
    lines = text.split("\n")
    layout = find_layout(lines)
    if layout is None or layout.item_indent is None:
        # No block list to stream (flow style, a nested mapping): parse it all, if anything.
        if layout is None or _has_content(lines, layout.first):
            yield from _whole_document(text, display, warnings)
        return
    items = iter_items(
        lines, layout.first, display, warnings, dialect=layout.dialect, indent=layout.item_indent
    )
    for _index, _line, entry in with_progress(items, len(lines)):
        if entry is not None:
            yield entry


def with_progress(items: Iterator[T], total_lines: int) -> Iterator[T]:
    """`items` (index, line, entry) as they come, telling PROGRESS how far the read got; the
    items themselves when nothing listens (no generator layer per entry on the fast path)."""
    progress = PROGRESS.get()
    return items if progress is None else _reporting(items, total_lines, progress)


def _reporting(items: Iterator[T], total_lines: int, progress: Progress) -> Iterator[T]:
    index = -1
    for item in items:
        index, line = item[0], item[1]
        if index % PROGRESS_EVERY == 0:
            progress(index, line / max(total_lines, 1))
        yield item
    progress(index + 1, 1.0)


def iter_items(
    lines: list[str],
    first: int,
    display: str,
    warnings: list[Diagnostic],
    *,
    dialect: bool,
    indent: int,
    base: int = 0,
    first_index: int = 0,
) -> Iterator[Item]:
    """The entries of a block list from `lines[first]` on, one item per entry, lazily.

    `lines` may be a tail of the log: `base` is the log line of `lines[0]` and `first_index` the
    list index of the first entry, so positions are the log's own. `first` must be at an entry's
    start or between entries (after `failures:`, or a line where an entry begins), and `indent`
    the column of the entries' `-` (0 in the dialect).
    """
    if dialect:
        return _dialect(lines, first, display, warnings, base, first_index)
    return _canonical(lines, first, indent, display, warnings, base, first_index)


def decode_log(
    raw: bytes, display: str, warnings: list[Diagnostic], *, base: int = 0, new_from: int = 0
) -> str:
    """A log's bytes as text, `base` being the log line of their first line.

    One bad byte must not blind the tool: it reads as U+FFFD, and the first one at or after
    `new_from` is a warning (a tail reader passes where its new bytes begin, so a byte reported
    by an earlier read is not reported again).
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        raw[new_from:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = new_from + exc.start
        warnings.append(
            Diagnostic(
                display,
                base + raw.count(b"\n", 0, at) + 1,
                1,
                f"byte 0x{raw[at : at + 1].hex()} is not UTF-8; read as U+FFFD",
                "warning",
            )
        )
    return raw.decode("utf-8", "replace")


def _has_content(lines: list[str], first: int) -> bool:
    return any(line.strip() and not line.lstrip().startswith("#") for line in lines[first:])


# --- canonical form: one libyaml parse per list item ------------------------------------------


def _list_indent(lines: list[str], first: int) -> int | None:
    """The column of the list's `-` when the first content line opens a block list item
    (a line indented with a tab is skipped: it is one broken entry, not the list's layout)."""
    for line in lines[first:]:
        stripped = line.lstrip(" ")
        if not stripped.strip() or stripped.startswith(("#", "\t")):
            continue
        return len(line) - len(stripped) if stripped.startswith("-") else None
    return None


def ends_list(line: str, indent: int) -> bool:
    """Whether `line` ends a block list whose `-` stand at column `indent` (a line at column 0
    that is no entry of it: a top-level key, most often), as the reader below sees it."""
    stripped = line.lstrip(" ")
    if not stripped.strip() or stripped.startswith(("#", "\t")):
        return False
    return len(line) == len(stripped) and not stripped.startswith("-")


# (start, end) line span of one list item, and why it cannot be read as an entry, if it
# cannot: (0-based line, 0-based column, what is wrong).
_Span = tuple[int, int, tuple[int, int, str] | None]


def _item_spans(lines: list[str], first: int, indent: int) -> Iterator[_Span]:
    """[start, end) line spans of the top-level list items (their `-` at column `indent`).

    A line at column 0 that is not one of them ends the list (the next top-level key). A line
    indented wrongly, with a tab or with too few or too many spaces for its `-`, is YAML no
    parser reads, but it does not end the list: it belongs to the entry it stands in (or opens
    one, when it is a `-`), and costs that entry only (rules §2.1). A tab deeper in an entry
    may be a block scalar's text, so it is left to the parser.
    """
    start: int | None = None
    problem: tuple[int, int, str] | None = None
    end = len(lines)
    for number in range(first, len(lines)):
        line = lines[number]
        stripped = line.lstrip(" ")
        if not stripped.strip() or stripped.startswith("#"):
            continue
        depth = len(line) - len(stripped)
        if depth == indent and stripped.startswith("-"):
            if start is not None:
                yield start, number, problem
            start, problem = number, None
        elif depth <= indent + 1 and (stripped.startswith("\t") or stripped.startswith("-")):
            if start is None or stripped.lstrip(" \t").startswith("-"):
                if start is not None:
                    yield start, number, problem
                start, problem = number, None
            problem = problem or (number, depth, _misplaced(stripped, depth, indent))
        elif depth == 0:
            end = number  # the next top-level key ends the list
            break
        elif depth < indent and start is not None:
            problem = problem or (number, depth, _misplaced(stripped, depth, indent))
    if start is not None:
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        yield start, end, problem


def _misplaced(stripped: str, depth: int, indent: int) -> str:
    if stripped.startswith("\t"):
        return TAB_INDENT
    if stripped.startswith("-"):
        return (
            f"this entry's '-' is at column {depth + 1}, the list's at column {indent + 1}: "
            "indent it like the other entries"
        )
    return f"this line is left of the entries' '-' (column {indent + 1}): indent it under its key"


def _canonical(
    lines: list[str],
    first: int,
    indent: int,
    display: str,
    warnings: list[Diagnostic],
    base: int,
    first_index: int,
) -> Iterator[Item]:
    for index, (start, end, problem) in enumerate(_item_spans(lines, first, indent), first_index):
        if problem is not None:
            line, col, what = problem
            warnings.append(
                Diagnostic(
                    display,
                    base + line + 1,
                    col + 1,
                    f"failures[{index}]: {what} (entry skipped)",
                    "warning",
                )
            )
            yield index, base + start, None
            continue
        chunk = "\n".join(lines[start:end]) + "\n"
        yield index, base + start, _parse_chunk(chunk, index, base + start, display, warnings)


def _parse_chunk(
    chunk: str, index: int, offset: int, display: str, warnings: list[Diagnostic]
) -> RawFailure | None:
    try:
        data, root = yaml_nodes.load_text(chunk, display, offset)
    except InputError as exc:
        warnings.extend(_as_warnings(exc.diagnostics, f"entry failures[{index}] skipped"))
        return None
    entry = data[0] if isinstance(data, list) and len(data) == 1 else data
    if not entry_is_valid(entry):
        problems = schemas.validate(
            entry,
            root,
            "tool_failures",
            display,
            fragment="/$defs/failure",
            base=("failures", index),
            node_path=(0,),
            line_offset=offset,
            severity="warning",
        )
        if problems:
            warnings.extend(_as_warnings(problems, "entry skipped"))
            return None
    return RawFailure(index, offset + 1, entry)


def _as_warnings(problems: list[Diagnostic], note: str) -> list[Diagnostic]:
    return [
        Diagnostic(p.path, p.line, p.col, f"{_name_tab(p.message)} ({note})", "warning")
        for p in problems
    ]


def _name_tab(message: str) -> str:
    """libyaml's "found a tab character": say which character (rules §2.1)."""
    return message.replace("a tab character", "a tab character ('\\t')", 1)


def _whole_document(text: str, display: str, warnings: list[Diagnostic]) -> Iterator[RawFailure]:
    """Fallback for logs not shaped as a block list (flow style, odd layouts): parse it all."""
    try:
        data, root = yaml_nodes.load_text(text, display)
    except InputError as exc:
        warnings.extend(_as_warnings(exc.diagnostics, "log unreadable"))
        return
    if data is None:
        return
    problems = schemas.validate(data, root, "tool_failures", display, severity="warning")
    bad = {p.message.split(":")[0] for p in problems}
    warnings.extend(problems)
    items = data.get("failures") if isinstance(data, dict) else None
    for index, entry in enumerate(items if isinstance(items, list) else []):
        if not any(b == f"failures[{index}]" or b.startswith(f"failures[{index}].") for b in bad):
            node = yaml_nodes.node_at(root, ("failures", index))[0] if root is not None else None
            yield RawFailure(index, node.start_mark.line + 1 if node else 1, entry)


# --- the hook's dialect: read by its template, no YAML parser ----------------------------------

# A raw value never runs into a blank line, a new entry or another field of the template.
_FIELD_STARTS = (
    "- ",
    '  error: "',
    '  timestamp: "',
    '  agent_id: "',
    "  recoverable: ",
    '  file_path: "',
)


def _ends_value(line: str) -> bool:
    return not line.strip() or line.startswith(_FIELD_STARTS)


_SCALARS = {"true": True, "false": False, "null": None, "~": None, "": None}


def _dialect(
    lines: list[str],
    first: int,
    display: str,
    warnings: list[Diagnostic],
    base: int = 0,
    first_index: int = 0,
) -> Iterator[Item]:
    index = first_index
    number = first
    total = len(lines)
    while number < total:
        line = lines[number]
        if not line:  # the blank line after each entry: nothing to read or report
            number += 1
            continue
        tab = None if line.startswith("- ") else _leading_tab(line)
        if tab is not None and _tabbed(line):
            # An entry indented with a tab: it alone is skipped, up to the next blank line or
            # entry, with one warning.
            start, number = number, number + 1
            while number < total and lines[number].strip() and not lines[number].startswith("- "):
                number += 1
            warnings.append(
                Diagnostic(
                    display,
                    base + start + 1,
                    tab + 1,
                    f"failures[{index}]: {TAB_INDENT} (entry skipped)",
                    "warning",
                )
            )
            yield index, base + start, None
            index += 1
            continue
        if not line.startswith("- "):
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                warnings.append(
                    Diagnostic(
                        display,
                        base + number + 1,
                        1 if tab is None else tab + 1,
                        "line outside any failure entry ignored; entries start with '- tool:'"
                        if tab is None
                        else f"{TAB_INDENT} (line outside any failure entry ignored)",
                        "warning",
                    )
                )
            number += 1
            continue
        start = number
        exact = _template_entry(lines, number)
        if exact is not None:  # the hook's exact template: the common case, read in one match
            entry, number = exact
            yield index, base + start, RawFailure(index, base + start + 1, entry)
            index += 1
            continue
        entry, number, readable = _dialect_entry(lines, number)
        parsed: RawFailure | None
        tabbed = None if readable else _first_tab(lines, start, number)
        if tabbed is not None:  # YAML would refuse it too: say which character, where
            warnings.append(
                Diagnostic(
                    display,
                    base + tabbed[0] + 1,
                    tabbed[1] + 1,
                    f"failures[{index}]: {TAB_INDENT} (entry skipped)",
                    "warning",
                )
            )
            parsed = None
        elif not readable:  # not the hook's template: let YAML try, it may be a canonical entry
            end = number
            while end > start + 1 and not lines[end - 1].strip():
                end -= 1
            chunk = "\n".join(lines[start:end])
            parsed = _parse_chunk(chunk, index, base + start, display, warnings)
        elif entry_is_valid(entry):
            parsed = RawFailure(index, base + start + 1, entry)
        else:
            missing = [k for k in ("tool", "error", "timestamp") if k not in entry]
            what = (
                f"required key '{missing[0]}' is missing"
                if missing
                else "a value has the wrong type"
            )
            warnings.append(
                Diagnostic(
                    display,
                    base + start + 1,
                    1,
                    f"failures[{index}]: {what} (entry skipped)",
                    "warning",
                )
            )
            parsed = None
        yield index, base + start, parsed
        index += 1


def _leading_tab(line: str) -> int | None:
    """The column (0-based) of a tab in the line's indentation, if there is one."""
    body = line.lstrip(" \t")
    at = line.find("\t", 0, len(line) - len(body))
    return None if at < 0 else at


def _tabbed(line: str) -> bool:
    """Whether `line` opens an entry indented with a tab (it ends the entry before it)."""
    return (
        line[:1] in (" ", "\t")
        and _leading_tab(line) is not None
        and (line.lstrip(" \t").startswith("- "))
    )


def _first_tab(lines: list[str], start: int, end: int) -> tuple[int, int] | None:
    """(line, column) of the first tab in the indentation of `lines[start:end]`."""
    for number in range(start, end):
        at = _leading_tab(lines[number])
        if at is not None:
            return number, at
    return None


# The template of cAgents' tool-failure-tracker.cjs. A value is everything up to the last quote
# on its line (the hook turns " into ' in errors and paths, and never escapes anything).
_TEMPLATE = re.compile(
    r'- tool: "(?P<tool>[^\n]+)"\n'
    r'(?:  file_path: "(?P<file_path>[^\n]*)"\n)?'
    r'  error: "(?P<error>[^\n]*)"\n'
    r'  timestamp: "(?P<timestamp>[^\n]+)"\n'
    r'  agent_id: "(?P<agent_id>[^\n]*)"\n'
    r"  recoverable: (?P<recoverable>true|false)"
)


def _template_entry(lines: list[str], number: int) -> tuple[dict[str, Any], int] | None:
    """The entry at `number` if it is exactly the hook's template, and the line after it."""
    size = (
        6 if lines[number + 1 : number + 2] and lines[number + 1].startswith("  file_path:") else 5
    )
    after = number + size
    if after < len(lines) and lines[after].strip() and not lines[after].startswith("- "):
        return None  # more lines belong to this entry: not the bare template
    match = _TEMPLATE.fullmatch("\n".join(lines[number:after]))
    if match is None:
        return None
    entry = match.groupdict()
    if entry["file_path"] is None:  # the one optional line
        del entry["file_path"]
    entry["recoverable"] = entry["recoverable"] == "true"
    if not entry["tool"]:
        return None
    return entry, after


def _dialect_entry(lines: list[str], number: int) -> tuple[dict[str, Any], int, bool]:
    """Read one templated entry starting at `number`; returns (entry, next line, readable)."""
    entry: dict[str, Any] = {}
    readable = True
    total = len(lines)
    first = True
    while number < total:
        line = lines[number]
        if first or (line.startswith("  ") and not line.startswith("   ")):
            body = line[2:]
        elif line.startswith("- ") or not line.strip() or line.startswith("#") or _tabbed(line):
            break
        else:
            readable = False
            number += 1
            continue
        first = False
        key, sep, rest = body.partition(": ")
        if not sep and body.endswith(":"):
            key, rest = body[:-1], ""
        elif not sep or not key.isidentifier() or key in entry:
            readable = False
            number += 1
            continue
        number += 1
        if rest.startswith('"'):
            closed = rest.rstrip(" \t\r")
            parts = [rest[1:]]
            # A value's closing quote is the last character of its last line.
            while (
                not (len(closed) > 1 and closed.endswith('"'))
                and len(parts) < _MAX_CONTINUATION
                and number < total
                and not _ends_value(lines[number])
            ):
                closed = lines[number].rstrip(" \t\r")
                parts.append(lines[number])
                number += 1
            if not (closed.endswith('"') and (len(parts) > 1 or len(closed) > 1)):
                readable = False
                continue
            raw = "\n".join(parts)
            entry[key] = raw[: raw.rstrip(" \t\r").rfind('"')]
        elif rest.strip() in _SCALARS:
            entry[key] = _SCALARS[rest.strip()]
        else:
            readable = False
    return entry, number, readable


# --- the entry schema as a predicate -----------------------------------------------------------
# jsonschema costs ~100 µs an entry; this check costs ~2 µs. It must accept exactly what
# schemas/tool_failures.schema.json#/$defs/failure accepts (a hypothesis test holds them
# together); only entries it rejects go through jsonschema, for the positioned message.

_STRINGS = ("approach", "input_digest", "failure_type", "agent_id")


@cache
def _enum_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The entry schema's own enum regexes, searched the way jsonschema searches them."""
    properties = schemas.schema("tool_failures")["$defs"]["failure"]["properties"]
    return tuple(
        (key, re.compile(properties[key]["pattern"])) for key in ("outcome", "effect_state")
    )


def _is_int(value: Any) -> bool:
    return (type(value) is int) or (type(value) is float and value.is_integer())


def entry_is_valid(entry: Any) -> bool:
    if type(entry) is not dict:
        return False
    get = entry.get
    tool = get("tool")
    if (
        type(tool) is not str
        or not tool
        or type(get("error")) is not str
        or type(get("timestamp")) is not str
    ):
        return False
    for key in _STRINGS:
        if key in entry and type(entry[key]) is not str:
            return False
    for key in ("recoverable", "read_only"):
        if key in entry and type(entry[key]) is not bool:
            return False
    for key in ("id", "task_id", "code"):
        if key in entry and type(entry[key]) is not str and not _is_int(entry[key]):
            return False
    if (
        "file_path" in entry
        and entry["file_path"] is not None
        and type(entry["file_path"]) is not str
    ):
        return False
    for key, pattern in _enum_patterns():
        if key in entry and (type(entry[key]) is not str or not pattern.search(entry[key])):
            return False
    if "context_usage" in entry:
        usage = entry["context_usage"]
        # Written as jsonschema compares, so NaN passes both.
        if type(usage) not in (int, float) or usage < 0 or usage > 1:
            return False
    return True
