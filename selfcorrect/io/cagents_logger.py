"""Where cAgents' own failure logger runs for a project (docs/hooks.md, "Beside the cAgents hook").

One question, asked by the failure hook (companion mode: log nothing twice) and by `selfcorrect
install claude-code` (to say so): does Claude Code run cAgents' PostToolUseFailure hook (`node
"$R/.claude/hooks/run-hook.cjs" tool-failure-tracker`) for this project? It may, from the
project's, the local or the user's settings, or from a plugin those settings enable.

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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from msgspec import Struct

from selfcorrect.core.cagents import CAGENTS_LOGGER
from selfcorrect.io.bounded_read import read_bounded

SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
PLUGINS = Path(".claude") / "plugins"  # under the user's home
INSTALLED = "installed_plugins.json"
MAX_SETTINGS = 4 * 1024 * 1024


class CagentsLogger(Struct, frozen=True):
    """One place cAgents' failure logger runs from: a settings file, or an enabled plugin."""

    file: Path  # the settings file, or the plugin's file holding the hook
    plugin: str | None = None  # the plugin's "name@marketplace"
    enabled_in: Path | None = None  # the settings file whose word enabled the plugin


def settings_files(project: Path) -> list[Path]:
    """Where Claude Code reads hooks from: the project's, the local, the user's settings."""
    return [project / name for name in SETTINGS] + [Path.home() / ".claude" / "settings.json"]


def cagents_loggers(project: Path) -> Iterator[CagentsLogger]:
    """Each place cAgents' failure logger runs from for `project`: the settings files first,
    then the enabled plugins (read only when asked for: `next()` stops at the first)."""
    paths = settings_files(project)
    texts = [_text(path) for path in paths]
    for path, text in zip(paths, texts, strict=True):
        if _logs(text):
            yield CagentsLogger(path)
    (project_path, local_path, user_path), (project_text, local_text, user_text) = paths, texts
    settings = [(user_path, user_text), (project_path, project_text), (local_path, local_text)]
    for name, root, enabled_in in _enabled_roots(settings):
        found = _plugin_logs(root)
        if found is not None:
            yield CagentsLogger(found, name, enabled_in)


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


def _enabled_roots(settings: list[tuple[Path, str]]) -> Iterator[tuple[str, Path, Path]]:
    """(name, folder, the settings file that enabled it) of each installed plugin the settings
    enable (a later file's word wins)."""
    enabled: dict[str, Path | None] = {}
    for path, text in settings:
        named = _json(text).get("enabledPlugins")
        if isinstance(named, dict):
            enabled.update({str(k): path if v is True else None for k, v in named.items()})
    wanted = {name: path for name, path in enabled.items() if path is not None}
    if not wanted:
        return
    plugins = Path.home() / PLUGINS
    installed = _json(_text(plugins / INSTALLED, within=plugins)).get("plugins")
    if not isinstance(installed, dict):
        return
    for name, enabled_in in wanted.items():
        found = installed.get(name)
        for install in found if isinstance(found, list) else [found]:  # v2: one per scope
            where = install.get("installPath") if isinstance(install, dict) else None
            if isinstance(where, str) and where and _inside(Path(where), plugins):
                yield name, Path(where), enabled_in


def _plugin_logs(root: Path) -> Path | None:
    """The file of the plugin at `root` that runs the cAgents logger among its hooks (its
    manifest when it holds the hooks themselves), or None."""
    manifest_path = root / ".claude-plugin" / "plugin.json"
    named = _json(_text(manifest_path, within=root)).get("hooks")
    if isinstance(named, dict):  # the hooks themselves
        return manifest_path if _logs(json.dumps(named)) else None
    paths = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    files = [root / "hooks" / "hooks.json", *(root / p for p in paths if isinstance(p, str))]
    return next((path for path in files if _logs(_text(path, within=root))), None)
