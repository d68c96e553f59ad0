"""The cAgents hooks' YAML dialect (rules §2.1, §2.4).

The hooks write YAML by string templating: a double-quoted value is the raw text with `"`
turned into `'` and nothing escaped, so `"D:\\a\\b"` means those backslashes, and raw control
characters may sit inside. A YAML parser would read escapes there, or refuse the file, so
double-quoted values are taken verbatim, by the hook's rule.
"""

from __future__ import annotations

import re
from typing import Any

FAILURE_HEADER = "# Tool Failure Log"
WAYPOINT_HEADER = "# Waypoint created by PreCompact hook"

# `key: "raw"` or `- key: "raw"` or `- "raw"`, the quotes being the first and last on the line.
_QUOTED_LINE = re.compile(r'^(?P<head>\s*(?:-\s+)?(?:[A-Za-z_][\w-]*:\s+)?)"(?P<raw>.*)"[ \t\r]*$')
_PLACEHOLDER = "\ue000"  # private use: printable for libyaml, never in the hooks' output


def is_dialect(text: str, header: str) -> bool:
    return text.startswith(header)


def protect_raw_values(text: str) -> tuple[str, list[str]]:
    """Swap every raw double-quoted value for a placeholder YAML can read safely.

    Returns the rewritten text (same line count, so positions hold) and the raw values, to be
    put back with `restore_raw_values` after parsing.
    """
    raws: list[str] = []
    out: list[str] = []
    for line in text.split("\n"):
        match = _QUOTED_LINE.match(line)
        if match and not match.group("head").lstrip().startswith("#"):
            out.append(f"{match.group('head')}'{_PLACEHOLDER}{len(raws)}'")
            raws.append(match.group("raw"))
        else:
            out.append(line)
    return "\n".join(out), raws


def restore_raw_values(data: Any, raws: list[str]) -> Any:
    """Put the raw values back where `protect_raw_values` left placeholders."""
    if isinstance(data, str) and data.startswith(_PLACEHOLDER):
        index = data[len(_PLACEHOLDER) :]
        return raws[int(index)] if index.isdigit() and int(index) < len(raws) else data
    if isinstance(data, dict):
        return {key: restore_raw_values(value, raws) for key, value in data.items()}
    if isinstance(data, list):
        return [restore_raw_values(item, raws) for item in data]
    return data
