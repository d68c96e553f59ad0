"""Markdown headings, and restructuring a document to its template's headings (rules §9.1, §14).

Pure. The validator's template check and the built-in `restructure_to_template` fixer share
these, so what the check demands is exactly what the fix produces.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

# The closing `###` is cut by `_title`, not by a lazy `(.*?)` before `[ \t]*$`: that tried
# every split of a long run of spaces in a heading line, the square of the line.
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
PLACEHOLDER = re.compile(r"\{\{?[^{}]*\}\}?")

Heading = tuple[int, str]


def _scan(lines: list[str]) -> list[tuple[int, Heading]]:
    """(line index, heading) of every ATX heading outside fenced code blocks."""
    found: list[tuple[int, Heading]] = []
    fence = ""
    for number, line in enumerate(lines):
        mark = FENCE.match(line)
        if mark and (not fence or mark.group(1).startswith(fence)):
            fence = "" if fence else mark.group(1)
        elif not fence and (heading := HEADING.match(line)):
            found.append((number, (len(heading.group(1)), _title(heading.group(2) or ""))))
    return found


def _title(rest: str) -> str:
    """A heading's text, whitespace-folded, without its optional closing sequence (` ##`)."""
    text = rest.rstrip(" \t")
    bare = text.rstrip("#")
    if bare != text and bare[-1:] in (" ", "\t"):
        text = bare
    return " ".join(text.split())


def headings(text: str) -> list[Heading]:
    """Markdown ATX headings as (level, whitespace-folded text), skipping fenced code blocks."""
    return [heading for _, heading in _scan(text.splitlines())]


def matches(expected: Heading, seen: Heading) -> bool:
    """Same level and text (any case); a `{placeholder}` in the template matches any text (at
    least one character). Matched part by part, leftmost first: a regex of `.+` joins cost the
    square of a long heading for two placeholders, and more for more."""
    if expected[0] != seen[0]:
        return False
    first, *middle = (part.lower() for part in PLACEHOLDER.split(expected[1]))
    text = seen[1].lower()
    if not middle:
        return text == first
    *middle, last = middle
    if not text.startswith(first):
        return False
    at = len(first)
    for part in middle:
        found = text.find(part, at + 1)  # the placeholder before it takes a character or more
        if found < 0:
            return False
        at = found + len(part)
    return text.endswith(last) and len(text) - len(last) > at


def template_for(target: str, templates: Iterable[Mapping[str, Any]]) -> str | None:
    """The template the policy's `checks.templates` assigns to a document, if any."""
    for entry in templates:
        if fnmatch.fnmatchcase(target, str(entry.get("glob", ""))):
            return str(entry.get("template"))
    return None


def conforms(text: str, expected: list[Heading]) -> bool:
    """The template's headings appear in `text` in order; other headings may come between."""
    index = 0
    for heading in headings(text):
        if index < len(expected) and matches(expected[index], heading):
            index += 1
    return index == len(expected)


def restructure(document: str, template: str) -> str | None:
    """The document under the template's headings, in the template's order, or None when that
    cannot be done without losing or inventing content (docs/policy.md, built-in fixes).

    A built-in fix never loses content: the document's own title and every line it had
    survive. Each section the template names moves, with the sections the template does not
    name that follow it, to its place in the template's order; the preamble and the title stay
    first; a heading the document lacks is added, empty. None when a missing heading has a
    placeholder (its text would be invented, e.g. a title put in the title's place), when the
    title would no longer come first, or when the result still would not follow the template.
    """
    expected = headings(template)
    lines = document.splitlines(keepends=True)
    marks = _scan([line.rstrip("\r\n") for line in lines])
    if not expected or conforms(document, expected):
        return document
    ends = [start for start, _ in marks[1:]] + [len(lines)]
    sections = [
        (lines[start:end], heading) for (start, heading), end in zip(marks, ends, strict=True)
    ]
    # Which template heading each section takes: the first unused section that matches.
    taken: dict[int, int] = {}  # section index -> template position
    for position, wanted in enumerate(expected):
        index = next(
            (i for i, (_, seen) in enumerate(sections) if i not in taken and matches(wanted, seen)),
            None,
        )
        if index is not None:
            taken[index] = position
    # Blocks: a taken section and the untaken ones after it; the lead block holds the preamble
    # and everything before the first taken section (the title among them, when not taken).
    lead = lines[: marks[0][0]] if marks else lines
    blocks: dict[int, list[str]] = {}
    current = lead
    for i, (text, _) in enumerate(sections):
        if i in taken:
            current = blocks[taken[i]] = list(text)
        else:
            current.extend(text)
    out = [_ended_lines(lead)]
    for position, wanted in enumerate(expected):
        if position in blocks:
            out.append(_ended_lines(blocks[position]))
        elif PLACEHOLDER.search(wanted[1]):
            return None  # its text would be made up, and a title's would replace the real one
        else:
            out.append([f"{'#' * wanted[0]} {wanted[1]}\n", "\n"])
    result = "".join(line for block in out for line in block)
    title = headings(document)[:1]
    if headings(result)[:1] != title or not conforms(result, expected):
        return None
    if not _contains_all(_bare(result.splitlines(keepends=True)), _bare(lines)):
        return None  # a guard: by construction every line was carried over
    return result


def _ended_lines(block: list[str]) -> list[str]:
    if block and not block[-1].endswith("\n"):
        return [*block[:-1], block[-1] + "\n"]
    return block


def _bare(lines: list[str]) -> list[str]:
    return [line.rstrip("\r\n") for line in lines]


def _contains_all(result: list[str], original: list[str]) -> bool:
    """Every original line is in the result (as many times as it was in the document)."""
    counts: dict[str, int] = {}
    for line in result:
        counts[line] = counts.get(line, 0) + 1
    for line in original:
        if counts.get(line, 0) <= 0:
            return False
        counts[line] -= 1
    return True
