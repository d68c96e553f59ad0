"""libyaml parsing with positions: decode, compose, guard, construct.

Every YAML read goes through here. The C composer (PyYAML's CSafeLoader over libyaml) builds a
node tree once; we walk it to refuse aliases and report duplicate keys with both positions, then
construct plain Python data from the same tree. The tree also answers "where is this value?" for
schema errors, so no second parse is needed to position a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from selfcorrect.errors import Diagnostic, InputError

if not getattr(yaml, "__with_libyaml__", False):  # pragma: no cover - depends on the wheel
    raise ImportError("selfcorrect needs PyYAML built with libyaml (pip install --force PyYAML)")

_BOM = "\ufeff"
MAX_DEPTH = 100  # nesting levels a document may have (rules §17: refused before it is walked)


class FastLoader(yaml.CSafeLoader):
    """libyaml-backed safe loader: timestamps stay strings, mapping keys are their source text."""

    def construct_mapping(  # type: ignore[override]  # keys are always str here, by design
        self, node: MappingNode, deep: bool = False
    ) -> dict[str, Any]:
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    "a mapping key must be a plain value, not a list or mapping",
                    key_node.start_mark,
                )
            mapping[key_node.value] = self.construct_object(value_node, deep=deep)
        return mapping


def _timestamp_as_text(loader: FastLoader, node: Node) -> str:
    """Timestamps stay the strings they were written as (a schema checks them as text)."""
    text: str = loader.construct_yaml_str(node)
    return text


FastLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


def line_col(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of character `index` in `text`."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def decode(data: bytes, display: str) -> str:
    """Strict UTF-8 (a BOM is dropped). A bad byte is an input error at its position."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = data[: exc.start]
        line = prefix.count(b"\n") + 1
        col = len(prefix[prefix.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        bad = data[exc.start : exc.start + 1].hex()
        raise InputError(
            Diagnostic(display, line, col, f"byte 0x{bad} is not UTF-8; save the file as UTF-8")
        ) from None
    return text[1:] if text.startswith(_BOM) else text


def _yaml_error(exc: yaml.YAMLError, text: str, display: str, line_offset: int) -> Diagnostic:
    """Turn any PyYAML error into a positioned diagnostic that says what to do."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        line, col = mark.line + 1, mark.column + 1
    elif isinstance(exc, yaml.reader.ReaderError):
        line, col = line_col(text, exc.position)
    else:
        line, col = 1, 1
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    where = getattr(exc, "context_mark", None)
    if context and where is not None and getattr(exc, "problem_mark", None) is not None:
        context += f" that starts at line {where.line + 1 + line_offset}, column {where.column + 1}"
    what = f"{problem} ({context})" if context else problem
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character
        code = f"U+{char:04X}" if isinstance(char, int) else repr(char)
        what = f"unacceptable character {code}: {exc.reason}"
    tab = _indenting_tab(text, line)
    if tab is not None:  # PyYAML's words for it name no character and no fix (rules §2.1)
        return Diagnostic(display, line + line_offset, tab, f"invalid YAML: {TAB_INDENT}")
    return Diagnostic(display, line + line_offset, col, f"invalid YAML: {what}; fix the file here")


TAB_INDENT = "a tab ('\\t') indents this line, and YAML indents with spaces only: replace it"


def _indenting_tab(text: str, line: int) -> int | None:
    """The column (1-based) of a tab in the indentation of line `line` (1-based), if any."""
    lines = text.split("\n", line)
    if not 0 < line <= len(lines):
        return None
    current = lines[line - 1]
    indentation = current[: len(current) - len(current.lstrip(" \t"))]
    return indentation.index("\t") + 1 if "\t" in indentation else None


def compose(text: str, display: str, line_offset: int = 0) -> Node | None:
    """Parse one YAML document into a node tree (None when the text holds no document)."""
    loader = FastLoader(text)
    try:
        return loader.get_single_node()
    except yaml.YAMLError as exc:
        raise InputError(_yaml_error(exc, text, display, line_offset)) from None
    finally:
        loader.dispose()


def construct(node: Node, text: str, display: str, line_offset: int = 0) -> Any:
    """Plain Python data from a guarded node tree."""
    loader = FastLoader("")
    try:
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise InputError(_yaml_error(exc, text, display, line_offset)) from None
    finally:
        loader.dispose()


def _at(display: str, node: Node, offset: int, message: str, severity: str = "error") -> Diagnostic:
    return Diagnostic(
        display, node.start_mark.line + 1 + offset, node.start_mark.column + 1, message, severity
    )


def guard(
    root: Node, text: str, display: str, line_offset: int = 0, *, duplicates: str = "error"
) -> list[Diagnostic]:
    """Refuse aliases and report duplicate keys, before anything walks the data.

    `duplicates` is the severity of a duplicate key: "warning" where the last value may win
    (rules §2.2: cAgents' recheck hook writes them into validation reports).
    libyaml shares the node of an anchor with each of its aliases, so a node met twice is an
    alias. The walk never descends into a node twice, so an alias bomb costs nothing.
    """
    problems: list[Diagnostic] = []
    seen: set[int] = set()
    stack: list[tuple[Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            problems.append(_alias_diagnostic(text, display, line_offset))
            break
        seen.add(id(node))
        if depth > MAX_DEPTH:
            # No workflow file nests this deep; walking it would exhaust Python's recursion.
            message = f"nested more than {MAX_DEPTH} levels deep; flatten the document"
            problems.append(_at(display, node, line_offset, message))
            break
        if isinstance(node, MappingNode):
            first: dict[str, Node] = {}
            for key, value in node.value:
                if isinstance(key, ScalarNode) and key.value != "<<":
                    if key.value in first:
                        before = first[key.value].start_mark
                        where = (
                            f"duplicate key {key.value!r} (first at line "
                            f"{before.line + 1 + line_offset}, column {before.column + 1})"
                        )
                        what = (
                            "keep one of them"
                            if duplicates == "error"
                            else "the last value is used, as YAML readers do; keep one of them"
                        )
                        problems.append(
                            _at(display, key, line_offset, f"{where}; {what}", duplicates)
                        )
                    else:
                        first[key.value] = key
                stack.append((value, depth + 1))
                stack.append((key, depth + 1))
        elif isinstance(node, SequenceNode):
            stack.extend((child, depth + 1) for child in reversed(node.value))
    return problems


def _alias_diagnostic(text: str, display: str, line_offset: int) -> Diagnostic:
    """Find the first alias event for an exact position (only runs on the error path)."""
    line, col = 1, 1
    try:
        for event in yaml.parse(text, Loader=FastLoader):
            if isinstance(event, yaml.AliasEvent) and event.start_mark is not None:
                line, col = event.start_mark.line + 1, event.start_mark.column + 1
                break
    except yaml.YAMLError:  # the text composed, so this cannot happen; keep the fallback mark
        pass
    return Diagnostic(
        display,
        line + line_offset,
        col,
        "YAML aliases (*name) are not accepted in workflow files; write the value out in full",
    )


def node_at(root: Node, path: Sequence[str | int]) -> tuple[Node, Node | None]:
    """The node at a JSON path and the key node that names it (None for list items/root).

    Follows the path as far as it exists; with duplicate keys the last one wins, as in the data.
    """
    node, key_node = root, None
    for part in path:
        if isinstance(node, MappingNode):
            match = [(k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == part]
            if not match:
                break
            key_node, node = match[-1]
        elif isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            node, key_node = node.value[part], None
        else:
            break
    return node, key_node


def load_plain(text: str) -> Any:
    """libyaml straight to Python objects: for files selfcorrect ships, never for inputs."""
    return yaml.load(text, Loader=FastLoader)


def load_text(
    text: str, display: str, line_offset: int = 0, warnings: list[Diagnostic] | None = None
) -> tuple[Any, Node | None]:
    """compose → guard → construct, raising one InputError with every guard problem.

    With a `warnings` list, a duplicate key is a warning appended there, not an error."""
    root = compose(text, display, line_offset)
    if root is None:
        return None, None
    lenient = "error" if warnings is None else "warning"
    found = guard(root, text, display, line_offset, duplicates=lenient)
    problems = [p for p in found if p.severity == "error"]
    if warnings is not None:
        warnings.extend(p for p in found if p.severity != "error")
    if problems:
        raise InputError(problems)
    return construct(root, text, display, line_offset), root
