"""Companion mode: beside cAgents' own failure logger, log nothing twice (docs/hooks.md).

cAgents' PostToolUseFailure hook (`node "$R/.claude/hooks/run-hook.cjs" tool-failure-tracker`)
appends every failed call to the same `tool_failures.yaml`. When Claude Code runs it too (in
the project's, the local or the user's settings, or in a plugin those settings enable),
selfcorrect's failure hook appends no second entry: a failure would count twice toward every
limit. It waits (at most WAIT_S) for the cAgents entry of this call, found by its tool and the
start of its error, and decides from it.

A plugin is found as Claude Code finds it: `enabledPlugins` (`{"name@marketplace": true}`) in
the user's, the project's and the local settings, the later overriding the earlier; where it is
installed, in `~/.claude/plugins/installed_plugins.json` (`installPath`); and its hooks in its
`hooks/hooks.json` and in what its `.claude-plugin/plugin.json` names under `hooks` (a path, a
list of paths, or the hooks themselves; cAgents' names its `.claude/settings.json`). Every read
is bounded and non-blocking, and a plugin file counts only where its real path is inside
`~/.claude/plugins/` (the plugin's own folder, for the files it names): a link out of them is
not followed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from selfcorrect.core.cagents import CAGENTS_LOGGER
from selfcorrect.hooks.events import HookEvent, project_dir
from selfcorrect.io.bounded_read import read_bounded

SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
PLUGINS = Path(".claude") / "plugins"  # under the user's home
INSTALLED = "installed_plugins.json"
WAIT_S = 2.0
TAIL = 64 * 1024
MAX_SETTINGS = 4 * 1024 * 1024


def settings_files(project: str) -> list[Path]:
    """Where Claude Code reads hooks from: the project's, the local, the user's settings."""
    return [Path(project, name) for name in SETTINGS] + [Path.home() / ".claude" / "settings.json"]


def cagents_logs(event: HookEvent) -> bool:
    """Whether the cAgents failure logger runs beside us for this project: in its settings,
    or in a plugin they enable."""
    texts = [_text(path) for path in settings_files(project_dir(event))]
    if any(_logs(text) for text in texts):
        return True
    project, local, user = texts
    return any(_plugin_logs(root) for root in _enabled_roots([user, project, local]))


def _logs(text: str) -> bool:
    return "PostToolUseFailure" in text and CAGENTS_LOGGER.search(text) is not None


def _text(path: Path, within: Path | None = None) -> str:
    """The file's text, bounded; "" when it cannot be read, or (with `within`) when its real
    path is not inside `within`'s. A person's settings may be links (into their dotfiles)."""
    if within is not None and not _inside(path, within):
        return ""
    data = read_bounded(path, MAX_SETTINGS, follow=True)
    return "" if data is None else data.decode("utf-8", "replace")


def _inside(path: Path, root: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _enabled_roots(settings: list[str]) -> Iterator[Path]:
    """The folders of the installed plugins the settings enable (a later file's word wins)."""
    enabled: dict[str, bool] = {}
    for text in settings:
        named = _json(text).get("enabledPlugins")
        if isinstance(named, dict):
            enabled.update({str(k): v is True for k, v in named.items()})
    wanted = [name for name, on in enabled.items() if on]
    if not wanted:
        return
    plugins = Path.home() / PLUGINS
    installed = _json(_text(plugins / INSTALLED, within=plugins)).get("plugins")
    if not isinstance(installed, dict):
        return
    for name in wanted:
        found = installed.get(name)
        for install in found if isinstance(found, list) else [found]:  # v2: one per scope
            where = install.get("installPath") if isinstance(install, dict) else None
            if isinstance(where, str) and where and _inside(Path(where), plugins):
                yield Path(where)


def _plugin_logs(root: Path) -> bool:
    """Whether the plugin at `root` runs the cAgents logger among its hooks."""
    manifest = _json(_text(root / ".claude-plugin" / "plugin.json", within=root))
    named = manifest.get("hooks")
    if isinstance(named, dict):  # the hooks themselves
        return _logs(json.dumps(named))
    paths = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    files = [root / "hooks" / "hooks.json", *(root / p for p in paths if isinstance(p, str))]
    return any(_logs(_text(path, within=root)) for path in files)


def wait_for_entry(log: Path, fields: dict[str, str], wait_s: float = WAIT_S) -> bool:
    """Wait for the cAgents entry of this call (its tool and the start of its error in the
    log's tail, as its template writes them); False when it did not come in time."""
    start = " ".join(fields.get("error", "").split())[:40].replace('"', "'")
    wanted = f'"{fields.get("tool", "")}"'
    deadline = time.monotonic() + wait_s
    while True:
        tail = _tail(log)
        if wanted in tail and start in tail:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _tail(log: Path) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(max(os.fstat(handle.fileno()).st_size - TAIL, 0))
            return " ".join(handle.read().decode("utf-8", "replace").split())
    except OSError:
        return ""
