"""A tiny JSON scanner that keeps positions, and edits that keep every other byte in place.

For a file another program owns (Claude Code's settings.json), selfcorrect adds and removes
its own entries by inserting and cutting text at positions, never by serialising the file
again: the user's indentation, key order, escapes, line endings and final newline (or its
absence) stay exactly as they were. An insertion copies the layout of the place it goes:
the indentation of the elements beside it, or, in an empty container, its line's indentation
plus the file's indentation step; a one-line container gets a one-line insertion. Only the
whitespace inside an empty container may change (`[ ]` in an indented file), as the new
element's line breaks need it.

`scan` checks the text with `json.loads` first (its error carries the position), so the
scanner itself only ever walks valid JSON.
"""

from __future__ import annotations

import json
import re

from msgspec import Struct, field

_WS = " \t\n\r"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_INDENT = re.compile(r"[ \t]*")


class Key(Struct):
    text: str
    start: int
    end: int


class Node(Struct):
    """A JSON value at text[start:end]: an object's `keys` pair with its `items` by index."""

    kind: str  # "object", "array", "string" or "other" (number, true, false, null)
    start: int
    end: int
    keys: list[Key] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)
    value: str | None = None  # a string's decoded text

    def member(self, name: str) -> Node | None:
        """The value of key `name` (the last one, as JSON.parse reads a duplicated key)."""
        index = self.index(name)
        return None if index is None else self.items[index]

    def index(self, name: str) -> int | None:
        found = [i for i, key in enumerate(self.keys) if key.text == name]
        return found[-1] if found else None


def scan(text: str) -> Node:
    """The tree of positions of `text`; raises json.JSONDecodeError (with its position) or
    RecursionError (nested too deeply) when the text is not JSON we can read."""
    json.loads(text)
    return _Scanner(text).document()


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def document(self) -> Node:
        return self.value()

    def skip(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        self.pos = pos

    def string(self) -> tuple[int, int, str]:
        match = _STRING.match(self.text, self.pos)
        assert match is not None  # the text passed json.loads
        self.pos = match.end()
        return match.start(), match.end(), json.loads(match.group())

    def value(self) -> Node:
        self.skip()
        char = self.text[self.pos]
        if char == "{":
            return self.container("object", "}")
        if char == "[":
            return self.container("array", "]")
        if char == '"':
            start, end, value = self.string()
            return Node("string", start, end, value=value)
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ",]}" + _WS:
            self.pos += 1
        return Node("other", start, self.pos)

    def container(self, kind: str, close: str) -> Node:
        node = Node(kind, self.pos, self.pos)
        self.pos += 1
        self.skip()
        if self.text[self.pos] == close:
            self.pos += 1
            node.end = self.pos
            return node
        while True:
            if kind == "object":
                self.skip()
                start, end, key = self.string()
                node.keys.append(Key(key, start, end))
                self.skip()
                self.pos += 1  # the colon
            node.items.append(self.value())
            self.skip()
            char = self.text[self.pos]
            self.pos += 1
            if char == close:
                node.end = self.pos
                return node


def line_col(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column (in characters) of offset `pos`."""
    line_start = text.rfind("\n", 0, pos) + 1
    return text.count("\n", 0, pos) + 1, pos - line_start + 1


class Style(Struct, frozen=True):
    """How the file writes JSON, read from its top-level object."""

    newline: str  # "\n" or "\r\n"
    pretty: bool  # one element per line (else all on one line)
    unit: str  # one indentation step
    colon: str  # between a key and its value, e.g. ": " or ":"
    comma: str  # after a comma on one line, e.g. " " or ""
    ascii: bool  # non-ASCII text written as \\u escapes

    @classmethod
    def of(cls, text: str, root: Node) -> Style:
        newline = "\r\n" if "\r\n" in text else "\n"
        pretty, unit, colon, comma = True, "  ", ": ", " "
        if root.kind in ("object", "array") and root.items:
            before = _before(text, root, 0)
            pretty = "\n" in before
            if pretty:
                unit = before.rsplit("\n", 1)[1] or unit
            if root.kind == "object":
                between = text[root.keys[0].end : root.items[0].start]
                colon = between if between.strip() == ":" else colon
            if not pretty and len(root.items) > 1:
                comma = _before(text, root, 1)
        return cls(newline, pretty, unit, colon, comma, text.isascii() and "\\u" in text)

    def render(self, value: object, indent: str | None, unit: str) -> str:
        """`value` as JSON: one line when `indent` is None, else one element per line, its
        continuation lines starting with `indent`."""
        if indent is None:
            return json.dumps(
                value, ensure_ascii=self.ascii, separators=("," + self.comma, self.colon)
            )
        text = json.dumps(value, ensure_ascii=self.ascii, indent=unit, separators=(",", self.colon))
        return text.replace("\n", self.newline + indent)


def _start(node: Node, index: int) -> int:
    return node.keys[index].start if node.kind == "object" else node.items[index].start


def _before(text: str, node: Node, index: int) -> str:
    """The whitespace before element `index` (after the bracket or the comma)."""
    end = _start(node, index)
    begin = end
    while begin > 0 and text[begin - 1] in _WS:
        begin -= 1
    return text[begin:end]


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    match = _INDENT.match(text, line_start, pos)
    return match.group() if match else ""


def append(text: str, node: Node, value: object, style: Style, key: str | None = None) -> str:
    """`text` with `value` (as member `key` of an object) added as `node`'s last element."""
    opening = _line_indent(text, node.start)
    if node.items:
        before = _before(text, node, len(node.items) - 1)
        pretty = "\n" in before
        indent = before.rsplit("\n", 1)[1] if pretty else ""
        unit = indent[len(opening) :] if indent.startswith(opening) and indent != opening else ""
        unit = unit or style.unit
        separator = "," + (style.newline + indent if pretty else before or style.comma)
        element = _element(value, key, style, indent if pretty else None, unit)
        at = node.items[-1].end
        return text[:at] + separator + element + text[at:]
    # An empty container: its whitespace stays after the new element when it holds a line
    # break (the closing bracket keeps its indentation) or when the element goes on one line.
    inside = text[node.start + 1 : node.end - 1]
    if style.pretty:
        indent = opening + style.unit
        element = _element(value, key, style, indent, style.unit)
        after = inside if "\n" in inside else style.newline + opening
        inside = style.newline + indent + element + after
    else:
        inside = _element(value, key, style, None, style.unit) + inside
    return text[: node.start + 1] + inside + text[node.end - 1 :]


def _element(value: object, key: str | None, style: Style, indent: str | None, unit: str) -> str:
    rendered = style.render(value, indent, unit)
    if key is None:
        return rendered
    return json.dumps(key, ensure_ascii=style.ascii) + style.colon + rendered


def remove(text: str, node: Node, index: int) -> str:
    """`text` without `node`'s element `index` (and the comma and whitespace that went with it):
    the exact inverse of `append` for the last element; an emptied container becomes {} or []."""
    if len(node.items) == 1:
        return text[: node.start + 1] + text[node.end - 1 :]
    if index > 0:
        return text[: node.items[index - 1].end] + text[node.items[index].end :]
    return text[: _start(node, 0)] + text[_start(node, 1) :]


def replace(text: str, node: Node, value: object, style: Style) -> str:
    """`text` with the scalar `node` replaced by `value`."""
    return text[: node.start] + style.render(value, None, style.unit) + text[node.end :]


__all__ = ["Key", "Node", "Style", "append", "line_col", "remove", "replace", "scan"]
