"""`selfcorrect install claude-code`: selfcorrect's agent hooks in Claude Code's settings.

Claude Code reads hooks from `.claude/settings.json` in the project (committed),
`.claude/settings.local.json` (personal) and `~/.claude/settings.json` (every project of a
user): `{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command", "command": ...}]}]}}`.
Install adds one matcher group per event to the file that keeps the command working in every
clone (docs/hooks.md, "Where install writes"); uninstall takes out exactly what install added.
The file is another program's, and a person's: it is edited by span (io/json_spans.py), so
every byte outside selfcorrect's entries stays as it was, and a hook is selfcorrect's when its
command runs `selfcorrect hook claude-code …` (`is_ours`).
"""

from __future__ import annotations

import difflib
import json
import os
import posixpath
import re
import shlex
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from msgspec import Struct, field

from selfcorrect.core.cagents import CAGENTS_LOGGER
from selfcorrect.errors import Diagnostic, InputError, WriteConflict
from selfcorrect.io import atomic, json_spans
from selfcorrect.io.cagents_logger import cagents_loggers
from selfcorrect.io.documents import display_path
from selfcorrect.io.json_spans import Node, Style
from selfcorrect.io.safe_paths import ensure_dir, environment, refuse_link
from selfcorrect.layout import DEFAULT_FOLDER

PREFIX = "selfcorrect hook claude-code "  # what every command selfcorrect installs runs
# A command is selfcorrect's when it runs `selfcorrect hook claude-code …` by any path (the
# absolute path install writes, a bare name written by an older version, `python -m`).
_OURS = re.compile(
    r"""(?:^|[/\\\s'"])selfcorrect['"]?\s+hook\s+(?:claude-code|gemini|codex)(?:\s|$)"""
)
# The host's event, the hook's name on selfcorrect's command line, the matcher for every tool
# when the event takes one (the others reject a "matcher" key as meaningless), and the hook's
# timeout: the gate answers in milliseconds, the others may wait for the folder's lock.
# Claude Code's timeouts are in seconds, its matcher a tool name or "*".
EVENTS: tuple[tuple[str, str, str | None, int], ...] = (
    ("PostToolUseFailure", "post-tool-use-failure", "*", 60),
    ("PostToolUse", "post-tool-use", "*", 60),
    ("PostToolBatch", "post-tool-batch", None, 60),
    ("PreToolUse", "pre-tool-use", "*", 10),
    ("PreCompact", "pre-compact", None, 60),
    ("SubagentStart", "subagent-start", None, 60),
    ("SubagentStop", "subagent-stop", None, 60),
    ("Stop", "stop", None, 60),
    ("SessionStart", "session-start", None, 10),
    ("SessionEnd", "session-end", None, 10),
)
# Gemini CLI's (its hooks reference): timeouts in milliseconds, matchers regular expressions.
GEMINI_EVENTS: tuple[tuple[str, str, str | None, int], ...] = (
    ("BeforeTool", "before-tool", ".*", 10_000),
    ("AfterTool", "after-tool", ".*", 60_000),
    ("AfterAgent", "after-agent", None, 60_000),
    ("PreCompress", "pre-compress", None, 60_000),
    ("SessionStart", "session-start", None, 10_000),
    ("SessionEnd", "session-end", None, 10_000),
)
# Codex CLI's (its hooks.json: Claude Code's event names and shape, timeouts in seconds), in
# Claude Code's order: the events both hosts name alike keep one order (`_ORDER`).
CODEX_EVENTS: tuple[tuple[str, str, str | None, int], ...] = (
    ("PostToolUse", "post-tool-use", "*", 60),
    ("PreToolUse", "pre-tool-use", "*", 10),
    ("PreCompact", "pre-compact", None, 60),
    ("SubagentStop", "subagent-stop", None, 60),
    ("Stop", "stop", None, 60),
    ("SessionStart", "session-start", None, 10),
)
HOST_EVENTS = {"claude-code": EVENTS, "gemini": GEMINI_EVENTS, "codex": CODEX_EVENTS}
SETTINGS_FOLDER = {"claude-code": ".claude", "gemini": ".gemini", "codex": ".codex"}
# The variable holding the project's root when the host runs a hook; Codex sets none, and its
# hook finds the project from the event's cwd (hooks/events.project_dir).
PROJECT_VARIABLE = {"claude-code": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}
# The project's settings files of each host, the committed one first: Claude Code also reads a
# personal `settings.local.json`; Gemini CLI has no such file (docs/hooks.md); Codex CLI reads
# its hooks from `hooks.json`, the user's as the project's.
PROJECT_SETTINGS = {
    "claude-code": ("settings.json", "settings.local.json"),
    "gemini": ("settings.json",),
    "codex": ("hooks.json",),
}
_ALL_EVENTS = CODEX_EVENTS + EVENTS + GEMINI_EVENTS
# Every event in the order install adds them. Both hosts name their session events SessionStart
# and SessionEnd, last in each table: each is kept at its last place, so each host's events
# keep their own order here. What install writes for an event is looked up by host (`_spec`).
_ORDER = [
    event for at, (event, *_) in enumerate(_ALL_EVENTS)
    if all(event != later for later, *_ in _ALL_EVENTS[at + 1 :])
]  # fmt: skip
# The Claude Code version the hooks were tested with, and the events older versions may lack.
TESTED_WITH = "2.1.332"
NEWER_EVENTS = ("PostToolUseFailure", "PostToolBatch", "SubagentStart")
# Another PostToolUseFailure hook that writes tool_failures.yaml too (cAgents' own logger).
_OTHER_LOGGER = re.compile(r"cagents|tool_failures|tool-failure-tracker", re.IGNORECASE)
_UNSAFE = frozenset('"\\$`')  # a quote, and what the shell expands inside double quotes


class Change(Struct):
    event: str
    action: str  # "added", "updated" or "removed"
    command: str


class InstallResult(Struct):
    path: Path
    display: str
    uninstall: bool
    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    written: bool = False
    created: bool = False  # the settings file did not exist
    deleted: bool = False  # uninstall removes the file install created
    folder_removed: bool = False  # ... and the settings folder it leaves empty
    diff: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def folder_word(folder: str, variable: str | None = "CLAUDE_PROJECT_DIR") -> str:
    """The workflow folder as the hook's last argument, `"$CLAUDE_PROJECT_DIR"/DIR`: found
    from the project root wherever Claude Code runs the hook. Raises ValueError (a usage error)
    for a folder outside the project, or one the shell would read as more than a path."""
    if not folder:
        raise ValueError("give the workflow folder relative to the project root, e.g. workflow")
    if folder.startswith("/") or re.match(r"^[A-Za-z]:", folder):
        raise ValueError(f"{folder!r} is absolute: give it relative to the project root")
    if ".." in folder.split("/"):
        raise ValueError(f"{folder!r} contains '..': give a folder inside the project")
    bad = sorted({ch for ch in folder if ch in _UNSAFE or not ch.isprintable()})
    if bad:
        shown = " ".join(repr(ch) for ch in bad)
        raise ValueError(
            f"{folder!r} contains {shown}, which the shell Claude Code runs hooks in would "
            "interpret: rename the folder or give it without those characters"
        )
    prefix = f'"${variable}"/' if variable else ""
    return prefix + shlex.quote(posixpath.normpath(folder))


def hook_commands(
    folder: str | None, program: str | None = None, host: str = "claude-code"
) -> dict[str, str]:
    """Each event's command; `folder` (checked by `folder_word`) becomes the last argument,
    `program` (default: the selfcorrect running now, by absolute path) the first."""
    tail = f" {folder_word(folder, PROJECT_VARIABLE.get(host))}" if folder is not None else ""
    head = self_command()[0] if program is None else program
    return {event: f"{head} hook {host} {name}{tail}" for event, name, _, _ in HOST_EVENTS[host]}


def self_command(project: Path | None = None, host: str = "claude-code") -> tuple[str, bool]:
    """The selfcorrect running now as a hook's first words, and whether they travel: inside
    `project` (its .venv) they are `"$CLAUDE_PROJECT_DIR"/…`, which every clone that installs
    selfcorrect at the same place runs; elsewhere the absolute path, one machine's (Claude Code
    runs hooks with its own PATH, where a bare `selfcorrect` may be missing: exit 127 on every
    call, a silent gate). docs/hooks.md, "Where install writes"."""
    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script) == "selfcorrect" and os.path.isfile(script):
        program, tail = os.path.abspath(script), ""
    else:
        program, tail = sys.executable, " -m selfcorrect"
    inside = _inside(program, project) if project is not None else None
    variable = PROJECT_VARIABLE.get(host)  # Codex names no root: its hooks run by full path
    word = None if inside is None or variable is None else _folder_word_or_none(inside, variable)
    if word is not None:
        return word + tail, True
    return shlex.quote(program) + tail, False


def _inside(program: str, project: Path) -> str | None:
    """`program`'s path relative to `project` when it is inside it (its folder compared by real
    path, its own name kept: a venv's `python` is a link out of the project), else None."""
    folder, root = os.path.realpath(os.path.dirname(program)), os.path.realpath(project)
    if os.path.commonpath([folder, root]) != root:
        return None
    return Path(os.path.relpath(folder, root), os.path.basename(program)).as_posix()


def require_workflow_folder(project: Path, folder: str | None) -> None:
    """Refuse (InputError, exit 2) to install hooks for a workflow folder that is not there:
    every hook would then say "no workflow folder here" where nobody reads it."""
    name = folder or DEFAULT_FOLDER
    path = project / name
    if not path.is_dir():
        given = "--folder names" if folder else "the hooks use"
        raise InputError(
            f"{display_path(path)}: no such workflow folder ({given} {name}/), so every hook "
            f"would do nothing: create it with `selfcorrect init {shlex.quote(name)}`"
            f"{'' if folder else ' (or give yours with --folder DIR)'}, then install again"
        )


def is_ours(command: str) -> bool:
    return _OURS.search(command) is not None


def host_notes(version_of: Callable[[], str | None] | None = None) -> list[str]:
    """What install says about the Claude Code it finds (`claude --version`), if any."""
    found = (version_of or _claude_version)()
    if found is None:
        return []
    return [
        f"note: Claude Code {found} found; selfcorrect's hooks were tested with {TESTED_WITH}. "
        f"{', '.join(NEWER_EVENTS)} need a version that has them (2.1 does); an older one "
        "skips those hooks: no validation-phase failures, no subagent attribution."
    ]


def _claude_version() -> str | None:
    import shutil
    import subprocess

    claude = shutil.which("claude")
    if claude is None:
        return None
    try:
        done = subprocess.run(
            [claude, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"\s*(\d+\.\d+\.\d+)", done.stdout)
    return match.group(1) if done.returncode == 0 and match else None


def settings_path(
    project: Path, user: bool, host: str = "claude-code", *, local: bool = False
) -> Path:
    """The settings file install writes: the user's, the project's committed one, or (`local`)
    Claude Code's personal `settings.local.json`."""
    if user:
        return Path.home() / SETTINGS_FOLDER[host] / PROJECT_SETTINGS[host][0]
    return project / SETTINGS_FOLDER[host] / PROJECT_SETTINGS[host][1 if local else 0]


def settings_paths(project: Path, user: bool, host: str = "claude-code") -> list[Path]:
    """Every settings file of one scope that may hold selfcorrect's hooks: uninstall's."""
    if user:
        return [settings_path(project, user, host)]
    return [project / SETTINGS_FOLDER[host] / name for name in PROJECT_SETTINGS[host]]


def machine_path_notes(path: Path, program: str, host: str) -> list[str]:
    """What install says when a shared settings file gets this machine's path."""
    variable = PROJECT_VARIABLE.get(host)
    if variable is None:  # Codex and Copilot name no project root to a hook's command
        return [
            f"note: {display_path(path)} is shared with the project, and its hooks run "
            f"selfcorrect by this machine's path ({program}): a clone without selfcorrect "
            "there gets a failing hook on every call. Keep the file out of git, or install "
            "with --user instead"
        ]
    return [
        f"note: {display_path(path)} is shared with the project, and its hooks now run "
        f"selfcorrect by this machine's path ({program}): a clone without selfcorrect there "
        "gets a failing hook on every call. Install selfcorrect inside the project (e.g. its "
        f'.venv) and install again for a command every clone runs ("${variable}"/…)'
        + ("" if host == "gemini" else ", or install without --shared (settings.local.json)")
    ]


def local_notes(path: Path, project: Path) -> list[str]:
    """A note when the personal settings file is one git would commit: Claude Code asks git
    to ignore the file only when it creates it itself."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "check-ignore", "-q", str(path)],
            cwd=project, capture_output=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 1:  # 0: ignored; 128: no git repository (or no git)
        return []
    return [
        f"note: {display_path(path)} holds this machine's path and is personal, but git does "
        f"not ignore it: add {path.relative_to(project).as_posix()} to .gitignore"
    ]


def install(
    path: Path, commands: dict[str, str], *, uninstall: bool = False, dry_run: bool = False
) -> InstallResult:
    """Install (or uninstall) the hooks in the settings file at `path`; write nothing when
    nothing changes or on `dry_run`. Invalid settings and a symlink raise InputError (exit 2)
    before anything is written."""
    display = display_path(path)
    result = InstallResult(path, display, uninstall, dry_run)
    _refuse_links(path)
    before = atomic.read_or_none(path)
    result.created = before is None

    def transform(current: bytes | None) -> bytes | None:
        text = None if current is None else _decode(current, display)
        new, result.changes = (
            _uninstall_exactly(text, display) if uninstall else _install(text, commands, display)
        )
        return None if new is None else new.encode("utf-8")

    after = transform(before)
    if not uninstall:
        result.warnings = _double_logging(after or before, display)
    if after is None:
        return result
    if uninstall and before is not None and _created_by_install(before, result.changes, display):
        result.deleted = True  # install made the file: removing what it added removes it
        result.diff = _diff(before, None, display)
        if not dry_run:
            result.written = _delete_unchanged(path, before)
        result.folder_removed = remove_if_empty(path.parent, path.name, dry_run)
        return result
    result.diff = _diff(before, after, display)
    if dry_run:
        return result
    ensure_dir(path.parent)
    result.written = atomic.update_file(path, transform, lock=False)
    return result


def _commands(removed: list[Change]) -> dict[str, str]:
    """What install would have been given to add the hooks uninstall removed, in EVENTS order
    (empty when install could not have added them: an event it does not know)."""
    if any(change.event not in _ORDER for change in removed):
        return {}
    found = {change.event: change.command for change in removed}
    return {event: found[event] for event in _ORDER if event in found}


def _created_by_install(data: bytes, removed: list[Change], display: str) -> bool:
    commands = _commands(removed)
    fresh, _ = _install(None, commands, display)
    return bool(commands) and fresh is not None and fresh.encode("utf-8") == data


def _delete_unchanged(path: Path, data: bytes) -> bool:
    """Remove the file unless it changed since it was read (an editor saved meanwhile)."""
    with environment(path):
        if atomic.read_or_none(path) != data:
            raise WriteConflict(f"{path} changed while selfcorrect read it; nothing removed")
        os.unlink(path)
    return True


def remove_if_empty(folder: Path, removed: str, dry_run: bool) -> bool:
    """Remove `folder` when the settings file install had created was all it held: install
    made it, and uninstall leaves no empty folder behind."""
    with environment(folder):
        try:
            left = [name for name in os.listdir(folder) if not (dry_run and name == removed)]
            if left:
                return False
            if not dry_run:
                os.rmdir(folder)
        except OSError:
            return False  # a file appeared meanwhile, or the folder is not ours to remove
    return True


def _refuse_links(path: Path) -> None:
    """Neither `.claude/` nor the settings file may be a symlink: selfcorrect never writes
    through a link it did not make (the message names the link and its target)."""
    refuse_link(path.parent)
    refuse_link(path)
    try:
        info = os.stat(path.parent)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"{display_path(path.parent)}: is not a folder: move what is there away")


# --- editing the text --------------------------------------------------------------------------


def _spec(event: str, command: str | None) -> tuple[str, str | None, int] | None:
    """(hook name, matcher, timeout) that install writes for `event`, in the host that
    `command` names (`hook gemini …` or `hook claude-code …`)."""
    found = _HOOK_WORDS.search(command or "")
    host = found.group(1) if found is not None else "claude-code"
    return next(((name, m, t) for e, name, m, t in HOST_EVENTS[host] if e == event), None)


def _group(event: str, command: str) -> dict[str, object]:
    spec = _spec(event, command)
    assert spec is not None, event
    _, matcher, timeout = spec
    hook = {"type": "command", "command": command, "timeout": timeout}
    return {"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}


def _install(
    text: str | None, commands: dict[str, str], display: str
) -> tuple[str | None, list[Change]]:
    """The new text (None: unchanged) and what changed. A new file is written neatly, two
    spaces; an existing one gets one matcher group per event appended where Claude Code looks."""
    if text is None:
        data = {event: [_group(event, command)] for event, command in commands.items()}
        changes = [Change(event, "added", command) for event, command in commands.items()]
        return json.dumps({"hooks": data}, indent=2) + "\n", changes
    original, changes = text, []
    root = _load(text, display)
    style = Style.of(text, root)
    if _hooks(root, text, display) is None:
        text = json_spans.append(text, root, {}, style, key="hooks")
        root = _load(text, display)
    for event, command in commands.items():
        hooks = _hooks(root, text, display)
        assert hooks is not None
        groups = hooks.member(event)
        ours = _ours(groups, event, text) if groups is not None else []
        if any(entry.value == command for _, _, entry in ours):
            continue
        if groups is None:
            text = json_spans.append(text, hooks, [_group(event, command)], style, key=event)
            changes.append(Change(event, "added", command))
        elif ours:  # installed with another folder: that command now names this one
            text = json_spans.replace(text, ours[0][2], command, style)
            changes.append(Change(event, "updated", command))
        else:
            text = json_spans.append(text, groups, _group(event, command), style)
            changes.append(Change(event, "added", command))
        root = _load(text, display)
    return (None if text == original else text), changes


def _uninstall_exactly(text: str | None, display: str) -> tuple[str | None, list[Change]]:
    """Uninstall; an event whose list install found empty (`"Stop": []`) keeps its empty
    list, when installing again into that gives back the very file we started from."""
    new, changes = _uninstall(text, display)
    commands = _commands(changes)
    if new is None or text is None or not commands or _install(new, commands, display)[0] == text:
        return new, changes
    # Install appends the events it adds after the ones it found, so the events it found
    # come first: keep the first k of them, for the k that gives the file back.
    hooks = _hooks(_load(text, display), text, display)
    ours = [key.text for key in (hooks.keys if hooks is not None else []) if key.text in commands]
    for k in range(1, len(ours) + 1):
        kept, _ = _uninstall(text, display, keep_empty=frozenset(ours[:k]))
        if kept is not None and _install(kept, commands, display)[0] == text:
            return kept, changes
    return new, changes


def _uninstall(
    text: str | None, display: str, *, keep_empty: frozenset[str] = frozenset()
) -> tuple[str | None, list[Change]]:
    """The text without selfcorrect's hooks: each entry, a matcher group left holding nothing
    else, an event install added that is left with no group (`_drop_added_events`); `hooks`
    itself only when it would be left empty and installing again would give back the very
    file we started from (install added it)."""
    if text is None:
        return None, []
    original, changes = text, []
    emptied: list[str] = []  # events whose list our removals left empty
    root = _load(text, display)
    while True:
        hooks = _hooks(root, text, display)
        found = [
            (i, g, e, command)
            for i, (key, groups) in enumerate(
                zip(hooks.keys, hooks.items, strict=True) if hooks is not None else []
            )
            for g, e, command in _ours(groups, key.text, text)
        ]
        if hooks is None or not found:
            break
        index, group_index, entry_index, command = found[0]
        event = hooks.keys[index].text
        groups = hooks.items[index]
        group = groups.items[group_index]
        entries = group.member("hooks")
        assert entries is not None and command.value is not None
        changes.append(Change(event, "removed", command.value))
        keys = {key.text for key in group.keys}
        if len(entries.items) > 1 or not keys <= {"matcher", "hooks"}:
            text = json_spans.remove(text, entries, entry_index)
        elif len(groups.items) > 1 or event in keep_empty:
            text = json_spans.remove(text, groups, group_index)
        else:
            text = json_spans.remove(text, groups, group_index)
            if len(groups.items) == 1:
                emptied.append(event)
        root = _load(text, display)
    changes.sort(key=lambda c: _ORDER.index(c.event) if c.event in _ORDER else len(_ORDER))
    text = _drop_added_events(text, emptied, display)
    root = _load(text, display)
    hooks = _hooks(root, text, display)
    if changes and hooks is not None and not hooks.items:
        at = root.index("hooks")
        assert at is not None
        without = json_spans.remove(text, root, at)
        commands = _commands(changes)
        again, _ = _install(without, commands, display)
        if commands and again == original:
            text = without
    return (None if text == original else text), changes


def _drop_added_events(text: str, emptied: list[str], display: str) -> str:
    """`text` without the event lists install added, which our removals left empty. Install
    appends the events it adds after all others, in EVENTS order: so, of the emptied lists in
    file order, the longest tail in that order is install's, and a list before it was there
    before (a person's `"Stop": []` stays)."""
    order = _ORDER
    hooks = _hooks(_load(text, display), text, display)
    listed = [key.text for key in hooks.keys if key.text in emptied] if hooks is not None else []
    added: list[str] = []
    for event in reversed(listed):
        if added and order.index(event) >= order.index(added[0]):
            break
        added.insert(0, event)
    return _without_events(text, added, display)


def _without_events(text: str, events: list[str], display: str) -> str:
    for event in events:
        hooks = _hooks(_load(text, display), text, display)
        at = hooks.index(event) if hooks is not None else None
        if hooks is not None and at is not None:
            text = json_spans.remove(text, hooks, at)
    return text


def _ours(groups: Node, event: str, text: str) -> list[tuple[int, int, Node]]:
    """(group index, entry index, command node) of each of selfcorrect's hooks in an event:
    an entry exactly as install writes it for that event (any folder), nothing more. A hook a
    person wrote that merely starts like ours (another event's, extra arguments, extra keys)
    is theirs: install never updates it and uninstall never removes it."""
    found = []
    for g, group in enumerate(groups.items):
        entries = group.member("hooks") if group.kind == "object" else None
        if entries is None or entries.kind != "array":
            continue
        for e, entry in enumerate(entries.items):
            command = entry.member("command") if entry.kind == "object" else None
            spec = _spec(event, command.value) if command is not None else None
            if command is None or spec is None:
                continue
            if _installed_entry(entry, command.value, text, spec[0], spec[2]):
                found.append((g, e, command))
    return found


def _installed_entry(entry: Node, command: str | None, text: str, name: str, timeout: int) -> bool:
    """Is `entry` exactly what install writes for the hook `name`: `type` and `command` (any
    path to selfcorrect, the hook's name, at most the folder argument), and the hook's own
    `timeout` when there is one (an older install wrote none)?"""
    keys = {key.text for key in entry.keys}
    if keys not in ({"type", "command"}, {"type", "command", "timeout"}):
        return False
    kind, given_timeout = entry.member("type"), entry.member("timeout")
    if kind is None or kind.value != "command" or command is None or not is_ours(command):
        return False
    if given_timeout is not None and text[given_timeout.start : given_timeout.end] != str(timeout):
        return False
    found = _HOOK_WORDS.search(command)
    if found is None or found.group(2) != name:
        return False
    rest = found.group(3).strip()
    if not rest:
        return True
    variable = PROJECT_VARIABLE.get(found.group(1))
    prefix = f'"${variable}"/' if variable else ""
    if not rest.startswith(prefix):
        return False
    try:
        given = shlex.split(rest.removeprefix(prefix))
    except ValueError:
        return False
    return len(given) == 1 and _folder_word_or_none(given[0], variable) == rest


_HOOK_WORDS = re.compile(r"\bhook\s+(claude-code|gemini|codex)\s+(\S+)(.*)$")


def _folder_word_or_none(folder: str, variable: str | None = "CLAUDE_PROJECT_DIR") -> str | None:
    try:
        return folder_word(folder, variable)
    except ValueError:
        return None


def _double_logging(data: bytes | None, display: str) -> list[str]:
    """A warning for each PostToolUseFailure hook of another logger of tool_failures.yaml
    (cAgents' own is no second logger: `companion_notes` says what it means)."""
    if data is None:
        return []
    settings = json.loads(data.decode("utf-8"))
    groups = settings.get("hooks", {}).get("PostToolUseFailure", [])
    warnings = []
    for group in groups if isinstance(groups, list) else []:
        entries = group.get("hooks") if isinstance(group, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            command = entry.get("command") if isinstance(entry, dict) else None
            if (
                isinstance(command, str)
                and not is_ours(command)
                and _OTHER_LOGGER.search(command)
                and not CAGENTS_LOGGER.search(command)
            ):
                warnings.append(
                    f"warning: {display} also has a PostToolUseFailure hook that logs tool "
                    f"failures ({command}); with selfcorrect's, each failure is written to "
                    "tool_failures.yaml twice and counts twice against its retry budget: "
                    "remove one of them (`selfcorrect install claude-code --uninstall` "
                    "removes selfcorrect's)"
                )
    return warnings


def companion_notes(project: Path) -> list[str]:
    """What install says when Claude Code runs cAgents' own failure logger for `project` (its
    settings, or a plugin they enable): the question the failure hook asks (companion mode)."""
    found = list(cagents_loggers(project))
    if not found:
        return []
    places = " and ".join(
        f"in {_shown(where.file)}"
        if where.plugin is None
        else f"in the plugin {where.plugin} (enabled in {_shown(where.enabled_in or where.file)};"
        f" its hooks: {_shown(where.file)})"
        for where in found
    )
    return [
        f"note: cAgents' failure logger already runs for this project, {places}. selfcorrect's "
        "failure hook will run beside it in companion mode: it decides from cAgents' entry of "
        "each failed call and appends no entry of its own, so each failure is counted once "
        '(docs/hooks.md, "Beside the cAgents hook")'
    ]


def _shown(path: Path) -> str:
    """A path as messages show it, and one in the user's home as `~/…`."""
    shown = display_path(path)
    if not os.path.isabs(shown):
        return shown
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return shown


# --- reading the file --------------------------------------------------------------------------


def _decode(data: bytes, display: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8")
        line, col = json_spans.line_col(good, len(good))
        raise InputError(
            Diagnostic(
                display,
                line,
                col,
                "not UTF-8 text, which Claude Code's settings must be: save the file as "
                "UTF-8 and run again",
            )
        ) from exc


def _load(text: str, display: str) -> Node:
    """The file's tree; a file that is not settings JSON is a positioned InputError."""
    try:
        root = json_spans.scan(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            Diagnostic(
                display,
                exc.lineno,
                exc.colno,
                f"not valid JSON ({exc.msg}): Claude Code cannot read it either; fix it and "
                "run again",
            )
        ) from exc
    except RecursionError as exc:
        raise InputError(
            Diagnostic(display, 1, 1, "nested too deeply to read: simplify it and run again")
        ) from exc
    if root.kind != "object":
        raise _shape(text, display, root, "the settings", 'an object ({"hooks": {...}})')
    _unique(text, display, root, "hooks")
    return root


def _hooks(root: Node, text: str, display: str) -> Node | None:
    """The `hooks` object, each event's value checked to be a list; None when absent."""
    hooks = root.member("hooks")
    if hooks is None:
        return None
    if hooks.kind != "object":
        raise _shape(text, display, hooks, '"hooks"', 'an object of events ({"Stop": [...]})')
    for key, groups in zip(hooks.keys, hooks.items, strict=True):
        _unique(text, display, hooks, key.text)
        if groups.kind != "array":
            raise _shape(
                text,
                display,
                groups,
                f'"hooks"."{key.text}"',
                'a list of matcher groups ([{"hooks": [...]}])',
            )
    return hooks


def _unique(text: str, display: str, node: Node, name: str) -> None:
    keys = [key for key in node.keys if key.text == name]
    if len(keys) > 1:
        line, col = json_spans.line_col(text, keys[1].start)
        raise InputError(
            Diagnostic(
                display,
                line,
                col,
                f'"{name}" appears {len(keys)} times, and Claude Code reads only the last: '
                "merge them into one and run again",
            )
        )


def _shape(text: str, display: str, node: Node, what: str, wanted: str) -> InputError:
    line, col = json_spans.line_col(text, node.start)
    found = {"object": "an object", "array": "a list", "string": "a string"}.get(
        node.kind, text[node.start : node.end]
    )
    return InputError(
        Diagnostic(
            display,
            line,
            col,
            f"{what} is {found}, but Claude Code expects {wanted}: fix it and run again",
        )
    )


def _diff(before: bytes | None, after: bytes | None, display: str) -> list[str]:
    """The change as a unified diff, one line per list item (line endings stripped)."""
    old = [] if before is None else before.decode("utf-8").splitlines(keepends=True)
    new = [] if after is None else after.decode("utf-8").splitlines(keepends=True)
    source = "/dev/null" if before is None else display
    lines = []
    for line in difflib.unified_diff(old, new, source, "/dev/null" if after is None else display):
        lines.append(line.rstrip("\r\n"))
        if not line.endswith("\n"):
            lines.append("\\ No newline at end of file")
    return lines


# What another host's install (commands/install_copilot.py) shares with this one.
install_diff = _diff
refuse_links = _refuse_links
delete_unchanged = _delete_unchanged

__all__ = [
    "CODEX_EVENTS",
    "EVENTS",
    "GEMINI_EVENTS",
    "PREFIX",
    "Change",
    "InstallResult",
    "companion_notes",
    "delete_unchanged",
    "folder_word",
    "hook_commands",
    "host_notes",
    "install",
    "install_diff",
    "is_ours",
    "local_notes",
    "machine_path_notes",
    "refuse_links",
    "remove_if_empty",
    "require_workflow_folder",
    "self_command",
    "settings_path",
    "settings_paths",
]
