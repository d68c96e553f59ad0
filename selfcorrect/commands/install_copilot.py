"""`selfcorrect install copilot`: selfcorrect's hooks as a Copilot CLI hook file of its own.

Copilot CLI loads every `.github/hooks/*.json` of the repository (the user's hooks:
`~/.copilot/hooks/*.json`), each `{"version": 1, "hooks": {EVENT: [{"type": "command", "bash":
…, "timeoutSec": …}]}}` (docs/hooks.md, "Copilot CLI"). So selfcorrect writes one file that is
wholly its own, `selfcorrect.json`, and never edits a file of anyone else's: install writes it
(or rewrites it for another folder), uninstall deletes it. A file of that name that holds
anything install would not write is a person's: both refuse to touch it.
"""

from __future__ import annotations

import json
from pathlib import Path

from selfcorrect.commands.install import (
    Change,
    InstallResult,
    delete_unchanged,
    folder_word,
    install_diff,
    refuse_links,
    remove_if_empty,
    self_command,
)
from selfcorrect.errors import InputError, WriteConflict
from selfcorrect.io import atomic
from selfcorrect.io.documents import display_path
from selfcorrect.io.safe_paths import ensure_dir

FILE_NAME = "selfcorrect.json"
# Copilot's event, the hook's name on selfcorrect's command line, its timeout in seconds.
COPILOT_EVENTS: tuple[tuple[str, str, int], ...] = (
    ("postToolUseFailure", "post-tool-use-failure", 60),
    ("postToolUse", "post-tool-use", 60),
    ("preToolUse", "pre-tool-use", 10),
    ("preCompact", "pre-compact", 60),
    ("subagentStop", "subagent-stop", 60),
    ("agentStop", "agent-stop", 60),
    ("sessionStart", "session-start", 10),
    ("sessionEnd", "session-end", 10),
)


def hooks_path(project: Path, user: bool) -> Path:
    if user:
        return Path.home() / ".copilot" / "hooks" / FILE_NAME
    return project / ".github" / "hooks" / FILE_NAME


def hook_commands(folder: str | None, program: str | None = None) -> dict[str, str]:
    """Each event's command; `folder` (relative to the project, where Copilot runs hooks)
    becomes the last argument, `program` (default: this selfcorrect, by absolute path) the
    first."""
    tail = f" {folder_word(folder, None)}" if folder is not None else ""
    head = self_command()[0] if program is None else program
    return {event: f"{head} hook copilot {name}{tail}" for event, name, _ in COPILOT_EVENTS}


def render(commands: dict[str, str]) -> bytes:
    timeouts = {event: timeout for event, _, timeout in COPILOT_EVENTS}
    hooks = {
        event: [{"type": "command", "bash": command, "timeoutSec": timeouts[event]}]
        for event, command in commands.items()
    }
    return (json.dumps({"version": 1, "hooks": hooks}, indent=2) + "\n").encode("utf-8")


def install(
    path: Path, commands: dict[str, str], *, uninstall: bool = False, dry_run: bool = False
) -> InstallResult:
    """Write (or, with `uninstall`, delete) selfcorrect's hook file at `path`; nothing on
    `dry_run` or when nothing changes. A file there that is not selfcorrect's raises
    InputError (exit 2) before anything is written."""
    display = display_path(path)
    result = InstallResult(path, display, uninstall, dry_run)
    refuse_links(path)
    before = atomic.read_or_none(path)
    result.created = before is None
    installed = _installed(before, display)
    if uninstall:
        if before is None:
            return result
        result.changes = [Change(e, "removed", c) for e, c in installed.items()]
        result.deleted = True
        result.diff = install_diff(before, None, display)
        if not dry_run:
            result.written = delete_unchanged(path, before)
        # No empty folder left behind: `.github/hooks/`, then `.github/` (docs/hooks.md).
        if remove_if_empty(path.parent, path.name, dry_run):
            result.folder_removed = True
            remove_if_empty(path.parent.parent, path.parent.name, dry_run)
        return result
    after = render(commands)
    if after == before:
        return result
    result.changes = [
        Change(event, "updated" if event in installed else "added", command)
        for event, command in commands.items()
    ]
    result.diff = install_diff(before, after, display)
    if dry_run:
        return result
    ensure_dir(path.parent)
    result.written = atomic.update_file(
        path, lambda current: after if current == before else _changed(path), lock=False
    )
    return result


def _installed(data: bytes | None, display: str) -> dict[str, str]:
    """The commands of the file as install wrote it (any folder); {} for no file. Anything
    else there is a person's file: InputError."""
    if data is None:
        return {}
    refusal = InputError(
        f"{display}: is not the file `selfcorrect install copilot` writes; it is left as it "
        "is: move it away, or give the hooks another file name, and run again"
    )
    try:
        found = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise refusal from None
    hooks = found.get("hooks") if isinstance(found, dict) else None
    if not isinstance(hooks, dict) or not hooks:
        raise refusal
    commands = {}
    for event, entries in hooks.items():
        command = _command(entries)
        if command is None:
            raise refusal
        commands[event] = command
    if render(commands) != data:
        raise refusal
    return commands


def _command(entries: object) -> str | None:
    if not isinstance(entries, list) or len(entries) != 1 or not isinstance(entries[0], dict):
        return None
    command = entries[0].get("bash")
    return command if isinstance(command, str) and " hook copilot " in command else None


def _changed(path: Path) -> bytes:
    raise WriteConflict(f"{path} changed while selfcorrect read it; nothing written")
