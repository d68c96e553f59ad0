"""The workflow folder's layout: every file and folder name selfcorrect reads or writes in DIR,
spelled once (docs/integration.md describes the folder).

It imports nothing from the package, like `errors.py`, so every layer may use it: `core/`,
which labels its diagnostics and escalations with these names, stays pure and never imports
`io/`, and `io/` and the commands share the same spelling.
"""

from __future__ import annotations

from pathlib import PurePath

# Decision documents and hook logs at the top of DIR.
POLICY = "selfcorrect.yaml"
REPORT = "validation_report.yaml"
COORDINATION_LOG = "coordination_log.yaml"
ESCALATIONS = "escalations.yaml"
FAILURE_LOG = "tool_failures.yaml"
CALIBRATION = "calibration.yaml"

# Folders a run writes into besides DIR itself.
RECOVERY = "recovery"
MICROTASKS = "microtasks"
HANDOFFS = "handoffs"
# Prompt templates the user keeps to override the shipped ones.
TEMPLATES = "templates"
# Waypoints live in DIR/waypoints/ and, in the cAgents layout, DIR/../waypoints/.
WAYPOINTS = "waypoints"

# selfcorrect's own state: the journal, the locks, and the copies an undo keeps.
STATE = ".selfcorrect"
JOURNAL = PurePath(STATE) / "journal.jsonl"
FOLDER_LOCK = PurePath(STATE) / "folder.lock"
WATCH_LOCK = PurePath(STATE) / "watch.lock"
UNDONE = PurePath(STATE) / "undone"


def sidecar_lock_name(name: str) -> str:
    """The lock held beside a rewritten file while it is replaced: `.<name>.lock`."""
    return f".{name}.lock"
