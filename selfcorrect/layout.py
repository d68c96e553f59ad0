"""The workflow folder's layout: every file and folder name selfcorrect reads or writes in DIR,
spelled once (docs/integration.md describes the folder).

It imports nothing from the package, like `errors.py`, so every layer may use it: `core/`,
which labels its diagnostics and escalations with these names, stays pure and never imports
`io/`, and `io/` and the commands share the same spelling.
"""

from __future__ import annotations

import re
from pathlib import PurePath

# The workflow folder a project has when nothing names another: what the hooks, the Action and
# pre-commit default to, and what a command without DIR looks for (docs/integration.md;
# hooks/dispatch.py spells it again, so the gate imports nothing more).
DEFAULT_FOLDER = "workflow"

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
# The failure log's fold, saved for the next process to read on from (io/log_state.py).
LOG_STATE = PurePath(STATE) / "log_cache.json"
FOLDER_LOCK = PurePath(STATE) / "folder.lock"
WATCH_LOCK = PurePath(STATE) / "watch.lock"
UNDONE = PurePath(STATE) / "undone"
# What the agent hooks read (docs/hooks.md): written by every run, read by the gate alone.
GATE = PurePath(STATE) / "gate.json"
# The last report a validator wrote (not a stub), with its digest and write: while a stub that
# says no validator ran is on disk, decisions stand on it (docs/rules.md §5).
LAST_REPORT = PurePath(STATE) / "last_report.yaml"
LAST_REPORT_ID = PurePath(STATE) / "last_report.json"
# The directives a stop hook already held an agent back for: each holds it back once.
STOP_HOLDS = PurePath(STATE) / "stop_holds.json"
# Failures a hook could not append because the log's lock was held by a stopped process: each
# waits here, one file per identity, until the next appender logs it (io/failure_spool.py).
SPOOL = PurePath(STATE) / "spool"
# Copies of the shipped schemas that `init` writes, for editors' `$schema=` modelines.
SCHEMAS = PurePath(STATE) / "schemas"
# The locks held while a file selfcorrect shares with people is rewritten (coordination_log.yaml,
# escalations.yaml): inside .selfcorrect/, which users ignore already, so `git status` stays clean.
SIDECAR_LOCKS = PurePath(STATE) / "locks"


def sidecar_lock(name: str) -> PurePath:
    """The lock held while DIR/<name> is rewritten, relative to DIR:
    `.selfcorrect/locks/<name>.lock`."""
    return SIDECAR_LOCKS / f"{name}.lock"


def sidecar_lock_name(name: str) -> str:
    """Where versions before 0.2 kept that lock, beside the file: `.<name>.lock`. A writer
    removes such a leftover (io/atomic.py); nothing takes it any more."""
    return f".{name}.lock"


def work_item_file(work_item: str, suffix: str = ".md") -> str:
    """A work item's file name in recovery/, microtasks/ and handoffs/; odd names get a hash so
    two never collide.

    Never hidden and never starting with `-`: a name like `-rf.md` would read as an option to
    any command a person or an agent runs on it.
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", work_item).lstrip("._-").rstrip("._")[:80] or "item"
    if safe != work_item:
        import hashlib  # here: OpenSSL's load would cost every command's start-up (rules §18)

        safe += "-" + hashlib.sha256(work_item.encode()).hexdigest()[:6]
    return f"{safe}{suffix}"
