"""Rewrite one top-level list key we own, and not a byte of anything else in the file.

`coordination_log.yaml` belongs to humans and agents except its `failed_items` key;
`escalations.yaml` is ours except the fields people edit. Rather than round-trip a whole file
(ruamel would re-flow it), we find the key's block with libyaml's marks, round-trip only that
block with ruamel (so comments inside entries survive and entries update in place), and splice
it back between the untouched bytes before and after it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.resolver import Resolver

from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import yaml_nodes


class OwnedList(Struct, frozen=True):
    """How one owned list is written."""

    key: str  # the top-level key
    identity: str  # the entry key that identifies an entry
    quoted: frozenset[str] = frozenset()  # string values always double-quoted
    flow_lists: bool = True  # list values as [a, b] (the seed's shape) or block lists
    update_existing: bool = True  # False: entries already present are never touched
    append_new: bool = True  # False: only entries already present are updated


FAILED_ITEMS = OwnedList(
    "failed_items", "task_id", frozenset({"error_summary", "escalation_context"})
)
ESCALATIONS = OwnedList(
    "escalations", "id", frozenset({"reason"}), flow_lists=False, update_existing=False
)
# `selfcorrect reset` marks existing escalations resolved; it never adds a partial entry.
RESOLUTIONS = OwnedList(
    "escalations", "id", frozenset({"reason", "evidence"}), flow_lists=False, append_new=False
)


_DOCUMENT_END = re.compile(r"\.\.\.(?:[ \t]|#|$)")


def _document_end(root: Node, lines: Sequence[str]) -> int:
    """The line of the `...` end marker, or the line count when there is none.

    The file is one document (compose refused a second one), so a `...` at column 0 after the
    root mapping can only be its end marker; what follows it is comments. An entry written
    after it would be a second document nobody could read.
    """
    for number in range(root.end_mark.line, len(lines)):
        if _DOCUMENT_END.match(lines[number]):
            return number
    return len(lines)


def _block_bounds(text: str, key_name: str, display: str) -> tuple[int, int, int] | None:
    """Line span [start, end) of the key's block and where the document ends, or None when
    the file holds no document at all."""
    root = yaml_nodes.compose(text, display)
    if root is None:
        return None
    if not isinstance(root, MappingNode) or root.flow_style:
        raise InputError(
            Diagnostic(
                display,
                1,
                1,
                f"the file must be a block mapping (key: value lines) so selfcorrect can update "
                f"{key_name} without touching the rest",
            )
        )
    lines = text.splitlines(keepends=True)
    last = _document_end(root, lines)
    keys = [k for k, _ in root.value if isinstance(k, ScalarNode)]
    for position, key in enumerate(keys):
        if key.value != key_name:
            continue
        start = key.start_mark.line
        end = keys[position + 1].start_mark.line if position + 1 < len(keys) else last
        # Blank lines and column-0 comments just above the next key belong to that key.
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
            end -= 1
        return start, end, last
    return last, last, last


def _represent_float(representer: Any, value: float) -> Any:
    """Floats as YAML 1.1 spells them: ruamel's `5e-324` would read back as a string."""
    if value != value:
        text = ".nan"
    elif value in (float("inf"), float("-inf")):
        text = ".inf" if value > 0 else "-.inf"
    else:
        text = repr(value).lower()
        if "." not in text and "e" in text:
            text = text.replace("e", ".0e", 1)
    return representer.represent_scalar("tag:yaml.org,2002:float", text)


def _yaml(offset: int) -> YAML:
    rt = YAML(typ="rt")
    rt.representer.add_representer(float, _represent_float)
    rt.preserve_quotes = True
    rt.width = 4096  # never fold an agent's long error text
    rt.indent(mapping=2, sequence=offset + 2, offset=offset)
    return rt


_PLAIN_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")
_YAML11 = Resolver()


def _scalar(value: Any) -> Any:
    """Strings stay plain only when every YAML 1.1 reader sees the same string.

    ruamel writes YAML 1.2, where `yes` or `0x1F` are plain strings; libyaml (and every 1.1
    reader) would turn them into a bool or a number, and raw NEL/LS characters into line breaks.
    Anything but a simple word is double-quoted, with escapes.
    """
    if not isinstance(value, str):
        return value
    plain = (
        _PLAIN_SAFE.fullmatch(value)
        and _YAML11.resolve(ScalarNode, value, (True, False)) == "tag:yaml.org,2002:str"
    )
    return value if plain else DoubleQuotedScalarString(value)


def _styled(spec: OwnedList, key: str, value: Any) -> Any:
    if isinstance(value, str) and key in spec.quoted:
        return DoubleQuotedScalarString(value)
    if isinstance(value, list | tuple):
        seq = CommentedSeq(
            DoubleQuotedScalarString(v) if isinstance(v, str) else _scalar(v) for v in value
        )
        if spec.flow_lists:
            seq.fa.set_flow_style()
        return seq
    return _scalar(value)


def _same(current: Any, value: Any) -> bool:
    if isinstance(value, list | tuple):
        return isinstance(current, list) and list(current) == list(value)
    # 1 == True in Python; a bool and a number are never the same value here.
    return current == value and isinstance(current, bool) == isinstance(value, bool)


def _merge(spec: OwnedList, items: CommentedSeq, entries: Sequence[Mapping[str, Any]]) -> bool:
    """Update entries with the same identity in place, append the rest; True if anything changed."""
    # Compared as text: a human's `task_id: 3` is the same work item as our "3".
    by_id = {str(item.get(spec.identity)): item for item in items if isinstance(item, CommentedMap)}
    changed = False
    for entry in entries:
        item = by_id.get(str(entry[spec.identity]))
        if item is not None and not spec.update_existing:
            continue
        if item is None and not spec.append_new:
            continue
        if item is None:
            item = by_id[str(entry[spec.identity])] = CommentedMap()
            items.append(item)
        for key, value in entry.items():
            if key not in item or not _same(item[key], value):
                item[key] = _styled(spec, key, value)
                changed = True
    return changed


def _item_offset(block: str) -> int:
    for line in block.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped.startswith("-"):
            return len(line) - len(stripped)
    return 2


def splice(text: str, spec: OwnedList, entries: Sequence[Mapping[str, Any]], display: str) -> str:
    """`text` with `entries` merged into its `spec.key` block (the same text if nothing changed)."""
    if not entries:
        return text
    bounds = _block_bounds(text, spec.key, display)
    lines = text.splitlines(keepends=True)
    start, end, last = bounds or (len(lines), len(lines), len(lines))
    if bounds is None or start == last:  # the key is absent: a new block where the document ends
        block = f"{spec.key}:\n"
        if start and not lines[start - 1].endswith("\n"):
            lines[start - 1] += "\n"
    else:
        block = "".join(lines[start:end])
    rt = _yaml(_item_offset(block))
    document = rt.load(block)
    items = document.get(spec.key)
    if not isinstance(items, CommentedSeq):
        items = CommentedSeq()
        document[spec.key] = items
    if not _merge(spec, items, entries):
        return text
    out = io.StringIO()
    rt.dump(document, out)
    return "".join(lines[:start]) + out.getvalue() + "".join(lines[end:])
