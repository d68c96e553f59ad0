"""`selfcorrect policy DIR`: the policy in force for DIR, the defaults merged with DIR's file.

What a run decides with, printed whole: every `extend_<list>` applied, nothing left to look up
in docs/policy.md. The output is itself a valid selfcorrect.yaml (writing it back changes no
decision), YAML by default or JSON with `--format json`. Writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.core.frozen import thaw
from selfcorrect.io.policy_file import load_policy


def effective_policy(folder: Path, policy_path: Path | None = None) -> dict[str, Any]:
    """The merged policy as plain data (an invalid policy file raises its positioned error)."""
    data: dict[str, Any] = thaw(load_policy(policy_path or folder / layout.POLICY).data)
    return data


def render(data: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    import yaml

    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True, width=100)
