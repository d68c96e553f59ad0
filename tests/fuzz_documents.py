"""Fuzzed files for the fuzz suite (rules §2, §17, §19): YAML text, the hooks' dialect, the
mutations that break a file, and what a correct loader must say about each result.

The expectation is computed independently of the product: the data is re-read with PyYAML's
pure-Python loader and checked with jsonschema, and each byte mutation knows whether it must
break the file (a NUL, an alias, a duplicate key) or merely may (a truncation, junk bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.fuzz_strategies import json_values, schema

# --- YAML text, mutations and the expectation -------------------------------------------------


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


class _PureLoader(yaml.SafeLoader):
    """The oracle's reader: pure Python (not the product's libyaml path), timestamps as text."""


_PureLoader.add_constructor("tag:yaml.org,2002:timestamp", _PureLoader.construct_yaml_str)


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_NoAliases, allow_unicode=True, sort_keys=False, width=80)


def scalar(value: Any) -> str:
    """One scalar (or key) as YAML on one line."""
    text = yaml.dump(value, Dumper=_NoAliases, allow_unicode=True, width=10**9)
    return text.split("\n")[0]


# Files selfcorrect writes one key of must be block mappings: a flow mapping cannot be
# updated in place without rewriting the person's text (rules §2.3), so it is refused at load.
SPLICED = ("coordination_log", "escalations")


def schema_valid(stem: str, raw: bytes) -> bool:
    """The oracle: is `raw` one non-empty document that the schema accepts?"""
    try:
        text = raw.decode("utf-8")
        data = yaml.load(text, Loader=_PureLoader)
        root = yaml.compose(text, Loader=_PureLoader)
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return False
    if stem in SPLICED and getattr(root, "flow_style", False):
        return False
    return data is not None and Draft202012Validator(schema(stem)).is_valid(data)


@dataclass(frozen=True)
class Doc:
    """One fuzzed file: its bytes, and what a correct loader must say about it."""

    data: bytes
    expect: str  # "valid", "invalid" (exit 2 is required) or "unknown"
    how: str  # the mutation, shown when a property fails


_BOMB = "zz0: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"zz{n}: &{chr(97 + n)} [{', '.join([f'*{chr(96 + n)}'] * 9)}]\n" for n in range(1, 7)
)
# Appended to (or put around) a document, each of these must make it invalid.
BREAKS: dict[str, Any] = {
    "nul": lambda t, k: t + b"zz: \x00\n",
    "escape": lambda t, k: b"# \x1b[2J\n" + t,
    "bad_utf8": lambda t, k: b"#\xff\xfe\n" + t,
    "surrogate": lambda t, k: t + b"zz: \xed\xa0\x80\n",
    "duplicate_key": lambda t, k: t + dump({k: None}).encode(),
    "alias": lambda t, k: t + b"zz_anchor: &x [1]\nzz_alias: *x\n",
    "alias_bomb": lambda t, k: t + _BOMB.encode(),
    "python_tag": lambda t, k: t + b"zz: !!python/object/apply:os.system ['true']\n",
    "nesting_1000": lambda t, k: t + b"zz: " + b"[" * 1000 + b"]" * 1000 + b"\n",
}
# These may or may not break it.
MAYBE: dict[str, Any] = {
    "truncate": lambda t, n: t[: n % (len(t) + 1)],
    "junk": lambda t, n: (
        t[: n % (len(t) + 1)] + bytes([n % 256, n * 7 % 256]) + t[n % (len(t) + 1) :]
    ),
    "binary": lambda t, n: bytes((n * i * 31 + 7) % 256 for i in range(64)),
    "tabs": lambda t, n: t.replace(b"\n  ", b"\n\t"),
    "flow_junk": lambda t, n: t + b"{[}]:\n",
    "control_in_value": lambda t, n: t.replace(b": ", b": \x1b", 1),
}
# These keep the document's meaning.
SAME: dict[str, Any] = {
    "none": lambda t: t,
    "bom": lambda t: b"\xef\xbb\xbf" + t,
    "crlf": lambda t: t.replace(b"\n", b"\r\n"),
    "comment": lambda t: "# \u202e hostile comment {{ x }} ::error::x\n".encode() + t,
}


@st.composite
def mutate(draw: st.DrawFn, data: Any, stem: str, *, empty_ok: bool = False) -> Doc:
    """`data` as a file, possibly broken; the expectation follows from the oracle and the
    mutation. Deep nesting is written as text: PyYAML's dumper would recurse."""
    kind = draw(st.sampled_from(["same", "same", "wrong_type", "break", "maybe", "deep", "empty"]))
    if kind == "wrong_type":
        data = draw(wrong_types(data))
    raw = dump(data).encode()
    first_key = next(iter(data), "zz") if isinstance(data, dict) else "zz"
    if kind in ("same", "wrong_type"):
        how = draw(st.sampled_from(sorted(SAME))) if kind == "same" else "wrong_type"
        expect = "valid" if schema_valid(stem, raw) or (empty_ok and data is None) else "invalid"
        return Doc(SAME.get(how, SAME["none"])(raw), expect, how)
    if kind == "break":
        how = draw(st.sampled_from(sorted(BREAKS)))
        return Doc(BREAKS[how](raw, first_key), "invalid", how)
    if kind == "empty":
        body = draw(st.sampled_from([b"", b"# only a comment\n", b"\n\n", b"---\n"]))
        return Doc(body, "valid" if empty_ok else "invalid", "empty")
    if kind == "deep" and isinstance(data, dict) and data:
        # A deeply nested value where the schema expects something else (libyaml stops at 1000).
        depth = draw(st.sampled_from([200, 500, 900, 990, 999, 1000, 5000]))
        key = draw(st.sampled_from(sorted(data)))
        rest = dump({k: v for k, v in data.items() if k != key}).encode() if len(data) > 1 else b""
        opening, closing = draw(st.sampled_from([(b"[", b"]"), (b"{a: ", b"}")]))
        value = opening * depth + b"1" + closing * depth
        line = scalar(key).encode() + b": " + value + b"\n"
        return Doc(line + rest, "invalid" if depth >= 1000 else "unknown", f"deep_{depth}")
    how = draw(st.sampled_from(sorted(MAYBE)))
    return Doc(MAYBE[how](raw, draw(st.integers(0, 10_000))), "unknown", how)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    return [path, *(p for key, child in children for p in _paths(child, (*path, key)))]


@st.composite
def wrong_types(draw: st.DrawFn, data: Any) -> Any:
    """`data` with one value, anywhere, replaced by a value of any type."""
    path = draw(st.sampled_from(_paths(data)))
    new = draw(json_values(2))
    if not path:
        return new
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return data


# --- the cAgents hooks' dialect (rules §2.1, §2.4): raw double-quoted values --------------------


def hook_raw(value: Any, sanitise: bool = True) -> str:
    """A value as the hook writes it: `"` becomes `'`, newlines become spaces, nothing else."""
    text = "" if value is None else str(value)
    return text.replace('"', "'").replace("\n", " ") if sanitise else text


def hook_entry(entry: dict[str, Any], sanitise: bool) -> str:
    """One entry by the failure hook's template (unknown fields are not written)."""
    lines = [f'- tool: "{hook_raw(entry.get("tool"), sanitise)}"']
    if "file_path" in entry:
        lines.append(f'  file_path: "{hook_raw(entry["file_path"], sanitise)}"')
    lines += [
        f'  error: "{hook_raw(entry.get("error"), sanitise)[:200]}"',
        f'  timestamp: "{hook_raw(entry.get("timestamp"), sanitise)}"',
        f'  agent_id: "{hook_raw(entry.get("agent_id"), sanitise)}"',
        f"  recoverable: {'false' if entry.get('recoverable') is False else 'true'}",
    ]
    return "\n".join(lines)


def hook_log(entries: list[tuple[dict[str, Any], str]]) -> bytes:
    """A hook-dialect log; each entry is written `hook`, `raw` (unsanitised) or `yaml`."""
    out = ["# Tool Failure Log", "# Session: fuzz_260806_001", "", "failures:"]
    for entry, style in entries:
        text = dump([entry]).rstrip("\n") if style == "yaml" else hook_entry(entry, style == "hook")
        out += [text, ""]
    return "\n".join(out).encode()


def hook_waypoint(data: Any, sanitise: bool) -> bytes:
    """A waypoint as the pre-compaction hook writes it: its header, raw quoted strings."""
    lines = ["# Waypoint created by PreCompact hook", "# fuzz"]

    def emit(value: Any, indent: str, head: str) -> None:
        if isinstance(value, dict) and value:
            lines.append(head.rstrip())
            for key, child in value.items():
                emit(child, indent + "  ", f"{indent}{scalar(key)}: ")
        elif isinstance(value, list) and value:
            lines.append(head.rstrip())
            for child in value:
                emit(child, indent + "  ", f"{indent}- ")
        elif isinstance(value, str):
            lines.append(f'{head}"{hook_raw(value, sanitise)}"')
        else:
            lines.append(head + scalar(value))

    if isinstance(data, dict):
        for key, child in data.items():
            emit(child, "  ", f"{scalar(key)}: ")
    else:
        emit(data, "", "")
    return ("\n".join(lines) + "\n").encode()


# --- failure logs the hook appends to (rules §2.1; docs/hooks.md "The failure log") -------------
# Valid entries whose values span lines: block scalars, quoted values folded over lines, raw
# dialect values continued on a second line; each line may look like an entry (`- left-pad`,
# `  - tool: x`) or a key. Written as PyYAML writes them (canonical) or as the template does.

_LOOK_ALIKES = ("- left-pad", "  - tool: x", "- ", "key: value", "  # not a comment", "---")
_CHARS = st.characters(codec="utf-8", categories=("L", "N", "Zs"), include_characters="-:#'|>\\")
_LINE = st.one_of(st.text(_CHARS, max_size=30), st.sampled_from(_LOOK_ALIKES))


class _Styled(yaml.SafeDumper):
    """PyYAML's writer with each string's style chosen by the fuzzer (see `_styled`)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent(dumper: _Styled, data: Any) -> Any:
    style = data.style if isinstance(data, _Text) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style=style)


class _Text(str):
    style: str | None = None


_Styled.add_representer(_Text, _represent)


@st.composite
def _styled_text(draw: st.DrawFn) -> _Text:
    """A value of one to five lines, to be written plain, single- or double-quoted, or as a
    literal or folded block scalar (PyYAML falls back to a style that can hold it)."""
    # Not ending in blank lines: a `|+` block scalar's trailing empty lines, at the end of an
    # entry, are not kept by the reader (they are read as the space between entries).
    lines = draw(st.lists(_LINE, min_size=1, max_size=5).filter(lambda ls: ls[-1].strip()))
    text = _Text("\n".join(lines) + draw(st.sampled_from(["", "\n"])))
    text.style = draw(st.sampled_from([None, "'", '"', "|", ">"]))
    return text


_STAMPS = st.sampled_from(["2026-12-03T06:00:00Z", "2026-12-03T06:00:01.500Z"])
_KEYS = st.sampled_from(["file_path", "agent_id", "approach"])


@st.composite
def canonical_entry(draw: st.DrawFn) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "tool": draw(st.sampled_from(["Bash", "Edit", "- Read"])),
        "error": draw(_styled_text()),
        "timestamp": draw(_STAMPS),
    }
    for key in draw(st.lists(_KEYS, unique=True, max_size=3)):
        entry[key] = draw(_styled_text())
    return entry


def canonical_log(entries: list[dict[str, Any]], indent: int) -> str:
    """A canonical log: `failures:` and each entry as PyYAML writes a one-item list, every line
    moved right by `indent` (which changes no value)."""
    out = ["# a hand-written header", "failures:"]
    for entry in entries:
        text = yaml.dump([entry], Dumper=_Styled, allow_unicode=True, sort_keys=False, width=40)
        lines = text.rstrip("\n").split("\n")
        assert lines[-1] != "...", text  # one document's end: not within a log
        out += [" " * indent + line if line else line for line in lines]
    return "\n".join(out) + "\n"


# A raw dialect value's continuation line: not blank, not the start of an entry or a field,
# and no line but the last ends with the closing quote (rules §2.1, the template's reading).
_RAW_LINE = st.text(st.characters(codec="utf-8", categories=("L", "N", "Zs", "P")), max_size=30)


@st.composite
def dialect_entry(draw: st.DrawFn) -> dict[str, Any]:
    def raw() -> str:
        first = draw(_RAW_LINE.filter(lambda s: '"' not in s))
        if not draw(st.booleans()):
            return first
        second = draw(
            st.one_of(_RAW_LINE, st.sampled_from(["  - left-pad", "- left", "  x: y"])).filter(
                lambda s: s.strip() and '"' not in s and not s.startswith(("- ", "  recoverable: "))
            )
        )
        return first + "\n" + second

    return {"tool": draw(st.sampled_from(["Bash", "Edit"])), "error": raw(), "file_path": raw()}


def dialect_log(entries: list[dict[str, Any]]) -> str:
    """A log in cAgents' dialect, each entry by its template, raw values as they are."""
    out = ["# Tool Failure Log", "# Session: fuzz", "", "failures:"]
    for entry in entries:
        out += [
            f'- tool: "{entry["tool"]}"',
            f'  file_path: "{entry["file_path"]}"',
            f'  error: "{entry["error"]}"',
            '  timestamp: "2026-12-03T06:00:00Z"',
            '  agent_id: "a1"',
            "  recoverable: true",
            "",
        ]
    return "\n".join(out) + "\n"


def appended_fields() -> st.SearchStrategy[dict[str, str]]:
    """What the failure hook appends: any text, in its keys' order."""
    text = st.one_of(_RAW_LINE, st.text(max_size=40), st.sampled_from(_LOOK_ALIKES))
    return st.fixed_dictionaries(
        {"tool": st.sampled_from(["Bash", "Edit"]), "error": text, "timestamp": _STAMPS},
        optional={"file_path": text, "agent_id": text, "input_digest": st.just("0123abcd")},
    )
