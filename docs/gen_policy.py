"""Print docs/policy.md, the policy reference, from the schema and the shipped defaults.

The schema (schemas/selfcorrect.schema.json) says what each key is: its type, its allowed values
and a one-line meaning. The commented default policy (templates/selfcorrect.yaml) says what each
key is set to, and its comments say why. This script joins the two, one section per top-level key
and one table per mapping, so the reference cannot drift from either: tests/test_docs.py fails
when docs/policy.md differs from a fresh run of

    python docs/gen_policy.py > docs/policy.md

The template is block YAML written by hand, so its comments are read line by line: the comment
lines directly above a key, and the comment after its value, belong to that key. Values are read
with ruamel. The output depends on those two files alone (no dates, no paths of this machine).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "selfcorrect.schema.json"
TEMPLATE = REPO / "templates" / "selfcorrect.yaml"
INIT_TEMPLATE = REPO / "templates" / "init" / "selfcorrect.yaml"
EXTEND = "extend_"
REGENERATE = "python docs/gen_policy.py > docs/policy.md"
# $defs that read better by their name than spelled out.
NAMED = {"argv": "argv list", "nullable_argv": "argv list or null", "regex": "regex"}
NAMED |= {"globs": "list of globs", "fixer": "fixer", "fixer_fields": "fixer"}
NAMED |= {"issue_pattern": "pattern"}
LONG = 60  # a list longer than this (as YAML flow) is listed below its table
KEY = re.compile(r"^(?P<indent> *)(?P<key>[\w$-]+):(?P<rest>\s.*|)$")
ITEM = re.compile(r"^ +(?P<mark>\d+\.|-) (?P<text>.*)$")
TITLE = re.compile(r"^-{3}\s*(?P<title>.*?)\s*-*$")
ENTRY_KEY = re.compile(r"^  (?P<names>\w+(?:, \w+)*)\s{2,}(?P<text>\S.*)$")
CHOICE = re.compile(r"^\s+(?P<name>\w+)\s+- (?P<text>.*)$")
ENUM_ONLY = re.compile(
    r"^[\w`]+(?: \| [\w`]+)+$"
)  # "coordination | output_quality": the type says it
PLAIN = re.compile(r"^[A-Za-z0-9_./*$-][\w ./*$-]*$")
RESERVED = {"null", "true", "false", "yes", "no", "on", "off", "~"}
ANCHOR = "#how-your-file-combines-with-the-defaults"


@dataclass(frozen=True)
class Notes:
    """The template's comments on one key: the lines directly above it, and the one after it."""

    above: tuple[str, ...]
    inline: str


def read_notes(text: str) -> tuple[list[str], dict[tuple[str, ...], Notes]]:
    """The file's header comment, and the comments of every mapping key that is not in a list."""
    lines = text.splitlines()
    first_blank = lines.index("")
    header = [_uncomment(x) for x in lines[:first_blank] if "yaml-language-server" not in x]
    notes: dict[tuple[str, ...], Notes] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] = []
    in_list: int | None = None  # the column of the `- ` of the list being skipped
    for line in lines[first_blank:]:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if stripped.startswith("#"):
            pending.append(_uncomment(stripped))
            continue
        skip = in_list is not None and (indent > in_list or stripped.startswith("- "))
        if not skip:
            in_list = indent if stripped.startswith("- ") else None
            match = KEY.match(line)
            if match and in_list is None:
                while stack and stack[-1][0] >= indent:
                    stack.pop()
                stack.append((indent, match["key"]))
                path = tuple(key for _, key in stack)
                notes[path] = Notes(tuple(pending), _inline_comment(match["rest"]))
        pending = []
    while header and not header[0].strip():
        header.pop(0)
    return header, notes


def _uncomment(line: str) -> str:
    text = line.strip()[1:]
    return (text[1:] if text.startswith(" ") else text).rstrip()


def _inline_comment(rest: str) -> str:
    """The comment after a value: the first `#` after a space, outside quotes."""
    quote = ""
    for i, ch in enumerate(rest):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and rest[i - 1 : i] in ("", " ", "\t"):
            return rest[i + 1 :].strip()
    return ""


def entry_keys(lines: tuple[str, ...]) -> dict[str, str]:
    """The `Keys of each entry:` block of a comment, as key → text."""
    keys: dict[str, list[str]] = {}
    current: list[str] = []
    inside = False
    for line in lines:
        if line.strip() == "Keys of each entry:":
            inside = True
        elif inside and (match := ENTRY_KEY.match(line)):
            current = [match["text"]]
            for name in match["names"].split(", "):
                keys[name] = current
        elif inside and line.startswith("   ") and current:
            choice = CHOICE.match(line)
            current.append(f"`{choice['name']}`: {choice['text']};" if choice else line.strip())
        else:
            inside = False
    return {k: " ".join(v).rstrip(";") for k, v in keys.items()}


def prose(lines: tuple[str, ...]) -> list[str]:
    """A comment block as markdown: paragraphs, list items, and examples as YAML blocks.

    The section title (`--- … ---`) and the `Keys of each entry:` block are left out: the first
    is the section's opening line, the second goes into the table of the entry's keys.
    """
    out: list[str] = [""]
    example = False
    for line in lines:
        if line.strip() == "Keys of each entry:":
            break
        if example and line.startswith("  "):
            out.append(line[2:])
            continue
        if example:
            out.extend(["```", ""])
            example = False
        item = ITEM.match(line)
        if TITLE.match(line.strip()):
            continue
        if not line.strip():
            out.append("")
        elif item:
            out.extend(
                ["", line.strip()] if out[-1] and not ITEM.match(" " + out[-1]) else [line.strip()]
            )
        elif out[-1]:
            out[-1] += " " + line.strip()
        else:
            out.append(line.strip())
        if line.rstrip().endswith(("Example:", "Examples:")):
            out.extend(["", "```yaml"])
            example = True
    if example:
        out.append("```")
    text = "\n".join(out).strip()
    return [*re.sub(r"\n{3,}", "\n\n", text).split("\n"), ""] if text else []


def flow(value: Any) -> str:
    """A value as YAML flow text, the way a person would write it in selfcorrect.yaml."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if PLAIN.match(text) and text.lower() not in RESERVED and not text.endswith(" "):
        return text
    return "'" + text.replace("'", "''") + "'"


def cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("|", "\\|").strip()


def code(value: Any) -> str:
    """A default in a table: code, except prose (a recovery text, a directive)."""
    if isinstance(value, str) and " " in value and len(value) > 40 and "\\" not in value:
        return cell(value)
    return "`" + cell(flow(value)) + "`"


def _sentence(text: str) -> str:
    text = text.replace("the header of this file", f"[the notes on rollout]({ANCHOR})")
    return text.replace("this file", "`templates/selfcorrect.yaml`").strip()


class Doc:
    """The schema with its references resolved, the template's notes, and the page being written."""

    def __init__(self, schema: dict[str, Any], notes: dict[tuple[str, ...], Notes]) -> None:
        self.defs: dict[str, Any] = schema["$defs"]
        self.notes = notes
        self.out: list[str] = []

    def emit(self, *lines: str) -> None:
        self.out.extend(lines)

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self.emit("| " + " | ".join(header) + " |", "|" + "---|" * len(header))
        self.emit(*["| " + " | ".join(row) + " |" for row in rows], "")

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """The node merged over the $def it references (the node's own keys win)."""
        if "$ref" not in node:
            return node
        target = self.resolve(self.defs[node["$ref"].rsplit("/", 1)[1]])
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}

    def type_of(self, node: dict[str, Any]) -> str:
        ref = node.get("$ref", "").rsplit("/", 1)[-1]
        full = self.resolve(node)
        if "enum" in full:
            return "one of " + _enum(full["enum"])
        kinds = full.get("type", [])
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if ref in NAMED and not {"array", "object"} <= set(kinds):
            return NAMED[ref]
        return " or ".join(self._kind(kind, full, ref) for kind in kinds) or "any"

    def _kind(self, kind: str, node: dict[str, Any], ref: str) -> str:
        if kind == "array":
            return "list of " + self.type_of(node.get("items", {}))
        if kind == "object":
            return NAMED.get(ref, "mapping")
        if kind in ("integer", "number"):
            low, high = node.get("minimum"), node.get("maximum")
            if "exclusiveMinimum" in node:
                return f"{kind} > {node['exclusiveMinimum']}"
            if low is not None:
                return f"{kind} {low} to {high}" if high is not None else f"{kind} ≥ {low}"
        return "regex" if node.get("format") == "regex" else kind

    def meaning(self, node: dict[str, Any], path: tuple[str, ...], comment: str = "") -> str:
        """The template's comment on the key, else (or where it only points) the schema's."""
        note = self.notes.get(path)
        if not comment and note:
            comment = " ".join([*note.above, note.inline])
        described = self.resolve(node).get("description", "")
        comment = comment.strip()
        if not comment or ENUM_ONLY.match(comment):
            comment = described
        elif comment.startswith("see "):
            comment = f"{described} See {comment[4:]}"
        return cell(_sentence(comment))


def _enum(values: list[Any]) -> str:
    """Enum values with case variants folded: CRITICAL, Critical, critical → `CRITICAL`."""
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(flow(value).upper(), flow(value))
    folded = len(seen) < len(values)
    return ", ".join(f"`{v}`" for v in seen.values()) + (" (any case)" if folded else "")


def _long(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and len(flow(value)) > LONG


def render_mapping(doc: Doc, path: tuple[str, ...], node: dict[str, Any], value: Any) -> None:
    """One table for a mapping's keys, then a subsection for each nested mapping or item type."""
    props: dict[str, Any] = doc.resolve(node)["properties"]
    values = value if isinstance(value, dict) else {}
    rows = []
    for key, sub in props.items():
        default = code(values.get(key)) if key in values else "not set"
        if "properties" in doc.resolve(sub) and key in values:
            default = "below"
        elif _long(values.get(key)):
            default = f"{len(values[key])} items, below"
        rows.append([f"`{key}`", cell(doc.type_of(sub)), default, doc.meaning(sub, (*path, key))])
    doc.table(["key", "type", "default", "meaning"], rows)
    for key in props:
        if _long(values.get(key)):
            doc.emit(f"Default `{'.'.join((*path, key))}`:", "")
            doc.emit(*[f"- `{flow(v)}`" for v in values[key]], "")
    for key, sub in props.items():
        full = doc.resolve(sub)
        if "properties" in full or "properties" in doc.resolve(full.get("items", {})):
            here = (*path, key)
            item = "" if "properties" in full else " (each item)"
            doc.emit(f"### `{'.'.join(here)}`{item}", "", full.get("description", ""), "")
            if item:
                render_items(doc, here, full, values.get(key) or [])
            else:
                render_mapping(doc, here, sub, values.get(key))


def render_items(doc: Doc, path: tuple[str, ...], node: dict[str, Any], value: list[Any]) -> None:
    """A list of mappings: a table of the item's keys, then the default items, one row each."""
    item = doc.resolve(node["items"])
    need = set(item.get("required", []))
    rows = [
        [f"`{key}`", cell(doc.type_of(sub)), "yes" if key in need else "no", doc.meaning(sub, ())]
        for key, sub in item["properties"].items()
    ]
    doc.table(["key", "type", "required", "meaning"], rows)
    if value:
        _matrix(doc, f"Default `{'.'.join(path)}`, in order:", list(item["properties"]), value)


def _matrix(doc: Doc, title: str, columns: list[str], rows: list[dict[str, Any]]) -> None:
    used = [c for c in columns if any(c in row for row in rows)]
    doc.emit(title, "")
    doc.table(used, [[code(row[c]) if c in row else "" for c in used] for row in rows])


def render_named(doc: Doc, path: tuple[str, ...], node: dict[str, Any], value: Any) -> None:
    """A mapping of name → rule (issue_types, failure_types, tools): its keys, then the defaults."""
    entry = doc.resolve(node["additionalProperties"])
    value = value or {}
    keys = entry_keys(doc.notes[path].above if path in doc.notes else ())
    used = [k for k in entry["properties"] if any(k in rule for rule in value.values())]
    rows = []
    for key, sub in entry["properties"].items():
        default = "per entry, below" if key in used else "not set"
        text = doc.meaning(sub, (), keys.get(key, ""))
        rows.append([f"`{key}`", cell(doc.type_of(sub)), default, text])
    doc.emit(f"### Keys of each entry in `{path[0]}`", "")
    doc.table(["key", "type", "default", "meaning"], rows)
    if not value:
        doc.emit(f"Default: `{flow(value)}` (none).", "")
        return
    short = [k for k in used if all(not _nested(rule.get(k)) for rule in value.values())]
    same = [k for k in short if len({flow(rule.get(k, ...)) for rule in value.values()}) == 1]
    columns = [k for k in short if k not in same]
    rows = []
    for name, rule in value.items():
        notes = [(k, doc.notes.get((*path, name, k))) for k in rule]
        why = "; ".join(f"`{k}`: {n.inline}" for k, n in notes if n and n.inline)
        cells = [code(rule[k]) if k in rule else "" for k in columns]
        rows.append([f"`{name}`", *cells, cell(why)])
    doc.emit(f"### Default `{path[0]}`", "")
    doc.table(["name", *columns, "notes"], rows)
    if same:
        first = next(iter(value.values()))
        text = ", ".join(f"`{k}: {flow(first[k])}`" for k in same)
        doc.emit(f"Every default entry has {text}.", "")
    for key in (k for k in used if k not in short):
        items = [
            {"name": name, **item}
            for name, rule in value.items()
            for item in ([rule[key]] if isinstance(rule.get(key), dict) else rule.get(key) or [])
        ]
        columns = list(dict.fromkeys(k for item in items for k in item))
        _matrix(doc, f"Default `{key}` of each entry, in order:", columns, items)


def _nested(value: Any) -> bool:
    return isinstance(value, list | dict) and bool(value)


def render_key(doc: Doc, key: str, node: dict[str, Any], defaults: dict[str, Any]) -> None:
    """One top-level key: its title, the template's comment, then its tables."""
    full = doc.resolve(node)
    note = doc.notes.get((key,), Notes((), ""))
    titles = [m["title"] for line in note.above if (m := TITLE.match(line.strip()))]
    text = prose(note.above)
    intro = titles or ([] if text else [full.get("description", "").rstrip(".")])
    doc.emit(f"## `{key}`", "", *[f"{t}." for t in intro[:1]], *([""] if intro else []), *text)
    value = defaults.get(key)
    extra = full.get("additionalProperties")
    if "properties" in full:
        render_mapping(doc, (key,), node, value)
    elif isinstance(extra, dict) and "properties" in doc.resolve(extra):
        render_named(doc, (key,), full, value)
    elif isinstance(extra, dict):
        doc.emit(f"Each entry: {cell(doc.type_of(extra))}. {extra.get('description', '')}", "")
        rows = []
        for name, item in (value or {}).items():
            inline = doc.notes.get((key, name), Notes((), "")).inline
            rows.append([f"`{name}`", code(item), cell(inline)])
        doc.table(["name", "value", "note"], rows)
    elif "properties" in doc.resolve(full.get("items", {})):
        render_items(doc, (key,), full, value or [])
    else:
        default = code(value) if key in defaults else "not set"
        meaning = cell(full.get("description", ""))
        doc.table(
            ["key", "type", "default", "meaning"],
            [[f"`{key}`", doc.type_of(node), default, meaning]],
        )


def split_extends(node: Any, path: tuple[str, ...] = ()) -> list[str]:
    """Remove every `extend_<list>` key from the schema (in place), returning where each was:
    they are described once, in their own section, not as a row of every table."""
    found: list[str] = []
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            for key in [k for k in props if k.startswith(EXTEND)]:
                found.append(".".join((*path, key)))
                del props[key]
        for key, value in node.items():
            if key == "$defs" and isinstance(value, dict):
                for name, sub in value.items():
                    where = {"issue_type": ("issue_types", "<name>")}.get(name, ("$defs", name))
                    found += split_extends(sub, where)
            elif key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    found += split_extends(sub, (*path, name))
            elif key not in ("$defs", "properties"):
                found += split_extends(value, path)
    return found


def extend_section(found: list[str]) -> list[str]:
    keys = ", ".join(f"`{k}`" for k in sorted(found))
    return [
        "## Adding to a default list: `extend_<list>`",
        "",
        "A list you write replaces the default list. To keep the defaults and add to them, write "
        "`extend_<list>:` beside where the list would go: its items are appended to the default "
        "list (after your own `<list>:`, when you write both). Appended patterns are tried after "
        "the default ones, so a pattern that must win over a default one needs the whole list "
        "instead. `selfcorrect policy DIR` prints the result. One more failure pattern:",
        "",
        "```yaml",
        "extend_patterns:",
        "  - {regex: 'FLAKY-DB-\\d+', type: external_dependency, confidence: 0.9}",
        "issue_types:",
        "  linting_errors:",
        "    extend_patterns: [{regex: 'stylelint', confidence: 0.9}]",
        "```",
        "",
        f"The lists that can be extended: {keys}.",
        "",
    ]


def init_section() -> list[str]:
    text = INIT_TEMPLATE.read_text(encoding="utf-8").rstrip("\n")
    return [
        "## What `selfcorrect init` writes",
        "",
        "A short file with every key commented out, so a new folder runs on the built-in "
        "defaults and never pins the defaults of the version that created it. Uncomment what "
        "you change; `selfcorrect policy DIR` prints the policy in force. Its first line points "
        "editors (yaml-language-server) at the schema copy `init` puts in "
        "`.selfcorrect/schemas/`, so completion and checking work offline.",
        "",
        "```yaml",
        *text.splitlines(),
        "```",
        "",
    ]


def generate() -> str:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    extends = split_extends(schema)
    text = TEMPLATE.read_text(encoding="utf-8")
    defaults = YAML(typ="safe", pure=True).load(text)
    unknown = sorted(set(defaults) - set(schema["properties"]))
    if unknown:  # the template and the schema disagree: the reference would lie
        raise SystemExit(f"templates/selfcorrect.yaml has keys the schema lacks: {unknown}")
    header, notes = read_notes(text)
    doc = Doc(schema, notes)
    doc.emit(
        "# Policy reference: `selfcorrect.yaml`",
        "",
        f"<!-- Generated by docs/gen_policy.py: do not edit. Regenerate: {REGENERATE} -->",
        "",
        "Every key of the policy file, its type, its built-in default and what it does. The types "
        "come from `schemas/selfcorrect.schema.json`; the defaults and the reasons for them from "
        "`templates/selfcorrect.yaml`, the built-in policy. " + schema["description"],
        "",
        "## How your file combines with the defaults",
        "",
        "From the top of `templates/selfcorrect.yaml`:",
        "",
        "```text",
        *header,
        "```",
        "",
        *extend_section(extends),
        *init_section(),
        "## Keys",
        "",
    )
    for key, node in schema["properties"].items():
        anchor = re.sub(r"[^a-z0-9_-]", "", key.lower())
        doc.emit(f"- [`{key}`](#{anchor}): {cell(doc.resolve(node).get('description', ''))}")
    doc.emit("")
    for key, node in schema["properties"].items():
        render_key(doc, key, node, defaults)
    return "\n".join(doc.out).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate())
