"""`.selfcorrect/gate.json`: what the agent hooks enforce, written by every run (docs/hooks.md).

JSON, so the gate reads it with the standard library alone. Replaced atomically and only when
its bytes change, like calibration.yaml: it carries no timestamp, so a rerun that decides the
same writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from selfcorrect import layout
from selfcorrect.core.decisions import Decisions
from selfcorrect.core.gate_state import gate_state
from selfcorrect.core.outputs import Plan
from selfcorrect.io import atomic, safe_paths
from selfcorrect.io.project_root import project_root
from selfcorrect.io.workspace import relative_to_root


def gate_path(folder: Path) -> Path:
    return folder / layout.GATE


def write_gate(folder: Path, decisions: Decisions, plan: Plan) -> bool:
    """Write the gate's state for this run's decisions; True when the file changed."""
    root = project_root(folder)
    state = {**gate_state(decisions, plan, relative_to_root(folder, root)), "project": str(root)}
    data = (json.dumps(state, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode()
    path = gate_path(folder)
    safe_paths.ensure_dir(path.parent)
    return atomic.replace_file(path, data)
