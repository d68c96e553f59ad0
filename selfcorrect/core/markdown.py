"""Markdown headings, and restructuring a document to its template's headings (§9.1, §14).

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


def restructure(document: str, template: str) -> str:
    """The document with its sections in the template's heading order; nothing is lost.

    Each section (a heading and the lines up to the next heading) keeps its text. Sections the
    template names come first, in its order; a heading the document lacks is added, empty;
    sections the template does not name follow, in their original order.
    """
    lines = document.splitlines(keepends=True)
    marks = _scan([line.rstrip("\r\n") for line in lines])
    preamble = "".join(lines[: marks[0][0]]) if marks else document
    sections = [
        ("".join(lines[start : marks[i + 1][0] if i + 1 < len(marks) else len(lines)]), heading)
        for i, (start, heading) in enumerate(marks)
    ]
    out, used = [preamble], set()
    for wanted in headings(template):
        index = next(
            (i for i, (_, seen) in enumerate(sections) if i not in used and matches(wanted, seen)),
            None,
        )
        if index is None:
            title = wanted[1] if not PLACEHOLDER.search(wanted[1]) else wanted[1].strip("{} ")
            out.append(f"{'#' * wanted[0]} {title}\n\n")
        else:
            used.add(index)
            out.append(_ended(sections[index][0]))
    out += [_ended(text) for i, (text, _) in enumerate(sections) if i not in used]
    return "".join(part for part in out if part)


def _ended(section: str) -> str:
    return section if section.endswith("\n") else section + "\n"
