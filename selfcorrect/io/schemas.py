"""JSON Schema validation with `file:line:col` positions and did-you-mean for unknown keys.

Schemas are the shipped files in schemas/ (Draft 2020-12). Positions come from the libyaml node
tree the document was built from (yaml_nodes.node_at), so a schema error costs no re-parse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import Any

from yaml.nodes import Node

from selfcorrect.errors import Diagnostic
from selfcorrect.io import fastschema, yaml_nodes
from selfcorrect.io.resources import data_file

STEMS = (
    "selfcorrect",
    "validation_report",
    "tool_failures",
    "coordination_log",
    "waypoint",
    "escalations",
    "microtasks",
    "calibration",
    "expected",
    "replay_baseline",
    "failure_texts",
)


@cache
def schema(stem: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(data_file("schemas", f"{stem}.schema.json").read_text())
    return loaded


def schema_id(stem: str) -> str:
    return str(schema(stem)["$id"])


def modeline(stem: str, to_folder: str = "") -> str:
    """The `yaml-language-server` line of a file selfcorrect writes: the schema copy `init`
    keeps in the workflow folder's .selfcorrect/schemas/, relative to the file, as init's own
    modelines are, so editors resolve it offline (the schemas' `$id` URLs resolve nowhere).
    `to_folder` leads from the file's folder to the workflow folder ("" at its top, "../" one
    level down)."""
    return f"# yaml-language-server: $schema={to_folder}.selfcorrect/schemas/{stem}.schema.json"


@cache
def validator(stem: str, fragment: str = "") -> Any:
    # jsonschema is heavy to import (~40 ms); only commands that validate pay for it.
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    root = schema(stem)
    if not fragment:
        return Draft202012Validator(root)
    registry: Registry[Any] = Registry().with_resource(root["$id"], Resource.from_contents(root))
    return Draft202012Validator({"$ref": f"{root['$id']}#{fragment}"}, registry=registry)


@cache
def fast_check(stem: str, fragment: str = "") -> Callable[[Any], bool] | None:
    """The compiled yes/no check for a schema, or None when it cannot be compiled."""
    try:
        return fastschema.compile_schema(schema(stem), fragment)
    except fastschema.Unsupported:
        return None


def dotted(path: Iterable[str | int]) -> str:
    """`issues[0].severity` for a JSON path; `document` for the root."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "document"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# Compiled when a message needs them (re caches them), not at import: start-up counts
# (docs/rules.md §18).
_CHOICE_CLASS = r"\[(.)(.)\]"
_CHOICES = r"^\^\(?([A-Za-z_|-]+)\)?\$$"


def _choices(pattern: str) -> str | None:
    """`^([Pp][Aa][Ss][Ss]|...)$` (a case-insensitive enum) → `PASS, ...`."""
    match = re.match(_CHOICES, re.sub(_CHOICE_CLASS, r"\1", pattern))
    return ", ".join(match.group(1).split("|")) if match else None


def _message(error: Any) -> str:
    where = dotted(error.absolute_path)
    kind, instance = error.validator, error.instance
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.validator_value
        return f"{where}: required key '{missing}' is missing; add it"
    if kind == "type":
        wanted = error.validator_value
        wanted = " or ".join(wanted) if isinstance(wanted, list) else wanted
        return f"{where}: must be {wanted}, got {type(instance).__name__} {_short(instance)}"
    if kind == "enum":
        choices = ", ".join(map(str, error.validator_value))
        return f"{where}: must be one of {choices}, got {_short(instance)}"
    if kind == "pattern":
        named = _choices(error.validator_value)
        if named:
            return f"{where}: must be one of {named} (any case), got {_short(instance)}"
        return f"{where}: {_short(instance)} does not match {error.validator_value!r}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{where}: {_short(instance)} is out of range ({kind} {error.validator_value})"
    if kind == "minLength":
        return f"{where}: must not be empty"
    text = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    return f"{where}: {text}"


def _unknown_keys(error: Any) -> list[str]:
    known = set(error.schema.get("properties", {}))
    patterns = [re.compile(p) for p in error.schema.get("patternProperties", {})]
    return [k for k in error.instance if k not in known and not any(p.search(k) for p in patterns)]


def _specific(errors: Iterable[Any]) -> Iterable[Any]:
    """Replace anyOf/oneOf failures by their most relevant branch error."""
    from jsonschema.exceptions import best_match

    for error in errors:
        if error.validator in ("anyOf", "oneOf") and error.context:
            yield best_match(error.context)
        else:
            yield error


def validate(
    data: Any,
    root: Node | None,
    stem: str,
    display: str,
    *,
    fragment: str = "",
    base: Sequence[str | int] = (),
    node_path: Sequence[str | int] = (),
    line_offset: int = 0,
    severity: str = "error",
) -> list[Diagnostic]:
    """Every schema violation of `data`, positioned at the offending key or value.

    `base` prefixes the reported location (e.g. `failures[7]` for one log entry); `node_path`
    leads from `root` to the node `data` was built from.
    """
    check = fast_check(stem, fragment)
    if check is not None and check(data):
        return []  # valid: no need to import jsonschema for messages
    problems: list[Diagnostic] = []
    for error in _specific(validator(stem, fragment).iter_errors(data)):
        path = [*node_path, *error.absolute_path]
        if error.validator == "additionalProperties":
            for key in _unknown_keys(error):
                node = _key_node(root, [*path, key])
                from selfcorrect.core.policy import suggest  # a misspelt key only

                hint = suggest(key, error.schema.get("properties", {}))
                where = dotted([*base, *error.absolute_path, key])
                tip = f"did you mean '{hint}'?" if hint else "remove it or check the spelling"
                problems.append(
                    _diag(display, node, line_offset, f"{where}: unknown key; {tip}", severity)
                )
            continue
        node = yaml_nodes.node_at(root, path)[0] if root is not None else None
        message = _message(error)
        if base:
            message = f"{dotted([*base, *error.absolute_path])}{message[message.index(':') :]}"
        problems.append(_diag(display, node, line_offset, message, severity))
    return problems


def _key_node(root: Node | None, path: Sequence[str | int]) -> Node | None:
    if root is None:
        return None
    node, key = yaml_nodes.node_at(root, path)
    return key or node


def _diag(display: str, node: Node | None, offset: int, message: str, severity: str) -> Diagnostic:
    if node is None:
        return Diagnostic(display, 1 + offset, 1, message, severity)
    mark = node.start_mark
    return Diagnostic(display, mark.line + 1 + offset, mark.column + 1, message, severity)
