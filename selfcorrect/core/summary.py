"""What failed, in one line: the summary every output shows of an error or an issue's evidence.

`failed_items` (`error_summary`), the error chains of `escalations.yaml`, the prompts' "What
failed" and error chain, the hooks' stuck advisories and the JSON's descriptions all show a
failure's text through `summary` (docs/rules.md §9.6), so none of them can show the command
echo (`$ python -m pytest -q`, `+ pytest`, npm's `> node test.js`) or the progress dots
(`....F..  [100%]`) where another shows the cause. The decisive line comes first:

1. pytest's result lines (`FAILED tests/test_x.py::test_y - AssertionError: …`, `ERROR …`),
   every one, in order;
2. else the last line that names an error: an exception (`TypeError: …`, the last line of a
   traceback), `error:`/`Error:` (mypy, tsc, gcc), `fatal:`, followed by the lines its tool
   printed right after it while they fit (a JavaScript stack's frames: where it happened);
3. else a linter's diagnostics (ruff's `F401 [*] `os` imported but unused`), every one;
4. else the text without its echoes and progress lines; else the text as it is.

A hook joins an output's lines into one (io/failure_append.one_line), so a long line is read
in the segments its tools printed (a result line, an exception, a location) before the choice.
A text that is still too long keeps its head and its tail, the elision marked between them.
Pure; agent text is data: it is matched against, never run.
"""

from __future__ import annotations

import re
from collections import deque

from selfcorrect.core.text_window import window

SUMMARY_CHARS = 200
ELISION = " … "

# What names an error or exception in a line of output: "URLError:", "Exception", "FAILED",
# "error:", "fatal:". Case matters for the names, so that "Command failed" or "0 errors" in a
# progress line is not taken for the cause.
_NAMES_ERROR = re.compile(r"Error\b|Exception\b|\bFAILED\b|(?i:\berror:|\bfatal:)")
# pytest's result line for one test or file (the "short test summary info").
_RESULT = re.compile(r"(?:FAILED|ERROR)\s+[\w./\\-]+(?:::|\.py\b)")
# A linter's diagnostic: ruff's `F401 [*] `os` imported but unused` (after its path in the
# concise form, `bad.py:1:8: F401 …`), flake8's, pylint's `C0114`.
_DIAGNOSTIC = re.compile(r"(?:\S+:\d+:\d+:\s+)?[A-Z]{1,4}\d{3,4}\b(?!\.)")
# A line that only repeats the command: a shell's prompt (`$ `, `PS> `), `set -x` (`+ `), npm's
# and pytest's `> ` (the script run, the failing source line).
_ECHO = re.compile(r"(?:\$|\+|>|PS>)(?:\s|$)")
# pytest's progress dots (`..F.s  [ 40%]`); separators (`=== FAILURES ===`) are read in _noise.
_PROGRESS = re.compile(r"[.FEsxX]+(?:\s+\[\s*\d+%\])?")
_RULE = frozenset("=_-~*#!")
# Where a joined output's next line started: before a result line; before an exception that
# ends a traceback ("raise TypeError(x) TypeError: x"), a location (`bad.py:2: error: …`,
# `a.ts(3,5): error TS2339`), a linter's code, its location arrow (`--> bad.py:1:8`) or its
# count (`Found 2 errors.`), unless it follows " - " or ":" (the rest of
# "FAILED t.py::x - KeyError: 'a'" stays whole). Each space run is taken once, from its start:
# a run of spaces never costs its square.
_SEGMENT = re.compile(
    r"(?<!\s)\s++(?=(?:FAILED|ERROR)\s+[\w./\\-]+(?:::|\.py\b))"
    r"|(?<![\s:-])\s++(?="
    r"(?:\w+\.)*+[A-Z]\w*(?:Error|Exception|Interrupt)(?:\s\[\w+\])?:\s"
    r"|[\w./\\-]+(?:\(\d+,\d+\)|(?::\d+){1,2}):\s"
    r"|[A-Z]{1,4}\d{3,4}\s|-->\s|Found\s\d+\serrors?\b)"
)


def summary(text: str, limit: int = SUMMARY_CHARS) -> str:
    """What failed in `text`, on one line of at most `limit` characters (see the module)."""
    lines = [part for line in window(text).splitlines() for part in _segments(line, limit)]
    results = [line for line in lines if _RESULT.match(line)]
    if results:
        return clip("; ".join(dict.fromkeys(results)), limit)
    named = deque(
        (i for i, x in enumerate(lines) if _NAMES_ERROR.search(x) and not _noise(x)), maxlen=1
    )
    if named:
        return _with_where(lines, named[0], limit)
    diagnostics = [line for line in lines if _DIAGNOSTIC.match(line)]
    if diagnostics:
        return clip("; ".join(dict.fromkeys(diagnostics)), limit)
    told = [line for line in lines if not _noise(line)]
    return clip(" ".join(told) if told else text, limit)


def _with_where(lines: list[str], at: int, limit: int) -> str:
    """The line naming the error, then what its tool printed right after it (a stack's frames,
    the location) while it fits: the cause first, where it happened behind it."""
    cause = clip(lines[at], limit)
    for line in lines[at + 1 :]:
        if _noise(line) or _NAMES_ERROR.search(line):
            break
        longer = f"{cause} {' '.join(line.split())}"
        if len(longer) > limit:
            break
        cause = longer
    return cause


def clip(text: str, limit: int = SUMMARY_CHARS) -> str:
    """`text` on one line; past `limit` characters, its head and its tail with the elision
    marked between them (a cause sits at the start of a line, the value that failed at its
    end)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    room = max(limit - len(ELISION), 2)
    head = flat[: room - room // 2].rstrip()
    tail = flat[len(flat) - room // 2 :].lstrip()
    return f"{head}{ELISION}{tail}"


def _segments(line: str, limit: int) -> list[str]:
    """A line as its tool printed it: a long one, or one that starts with a command echo, is
    split where a joined line started."""
    line = line.strip()
    if len(line) <= limit and not _ECHO.match(line):
        return [line] if line else []
    return [part.strip() for part in _SEGMENT.split(line) if part and part.strip()]


def _noise(line: str) -> bool:
    """A command echo or progress output: never what failed."""
    if _ECHO.match(line) or _PROGRESS.fullmatch(line):
        return True
    return len(line) >= 3 and _RULE.issuperset(line[:3]) and _RULE.issuperset(line[-3:])


__all__ = ["ELISION", "SUMMARY_CHARS", "clip", "summary"]
