"""`selfcorrect install claude-code`: the hooks in Claude Code's settings, nothing else touched.

Every test runs the real CLI in a subprocess, in a project folder of its own, HOME pointing at
a folder of the test's too.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selfcorrect.commands import install as installer
from tests.helpers import CAGENTS_HOOKS, enable, install_plugin

REPO = Path(__file__).resolve().parents[1]
# Install writes the selfcorrect that runs it by absolute path: here `python -m selfcorrect`.
PREFIX = f"{shlex.quote(sys.executable)} -m selfcorrect hook claude-code "
EVENTS = {  # Claude Code's event: (selfcorrect's hook name, has a matcher, timeout)
    "PostToolUseFailure": ("post-tool-use-failure", True, 60),
    "PostToolUse": ("post-tool-use", True, 60),
    "PostToolBatch": ("post-tool-batch", False, 60),
    "PreToolUse": ("pre-tool-use", True, 10),
    "PreCompact": ("pre-compact", False, 60),
    "SubagentStart": ("subagent-start", False, 60),
    "SubagentStop": ("subagent-stop", False, 60),
    "Stop": ("stop", False, 60),
    "SessionStart": ("session-start", False, 10),
    "SessionEnd": ("session-end", False, 10),
}
# Install runs a selfcorrect outside the project here: its absolute path goes to the personal
# settings file (docs/hooks.md, "Where install writes"); the user's and the committed file are
# settings.json.
SETTINGS = Path(".claude") / "settings.local.json"
SHARED = Path(".claude") / "settings.json"


def cli(root: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["HOME"] = str(home or root.parent / "home")
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "selfcorrect", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "workflow").mkdir(parents=True)  # install refuses a project without one
    (tmp_path / "home").mkdir()
    return root


def write_settings(root: Path, text: str) -> bytes:
    path = root / SETTINGS
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path.read_bytes()


def command(event: str, folder_word: str = "") -> str:
    return f"{PREFIX}{EVENTS[event][0]}{folder_word}"


def assert_claude_code_shape(settings: dict[str, Any], folder_word: str = "") -> None:
    """Each event holds, among its matcher groups, exactly one of ours, as Claude Code reads
    it: {"matcher": "*", "hooks": [{"type": "command", "command": ...}]} (no matcher for the
    events without one)."""
    for event, (_, has_matcher, timeout) in EVENTS.items():
        groups = settings["hooks"][event]
        assert isinstance(groups, list)
        ours = [
            group
            for group in groups
            if any(h.get("command", "").startswith(PREFIX) for h in group["hooks"])
        ]
        expected: dict[str, Any] = {
            "hooks": [
                {"type": "command", "command": command(event, folder_word), "timeout": timeout}
            ]
        }
        if has_matcher:
            expected = {"matcher": "*", **expected}
        assert ours == [expected], event


def with_our_groups(settings: dict[str, Any], folder_word: str = "") -> dict[str, Any]:
    """`settings` as install should leave it: one group per event appended."""
    expected = json.loads(json.dumps(settings))
    hooks = expected.setdefault("hooks", {})
    for event, (_, has_matcher, timeout) in EVENTS.items():
        group: dict[str, Any] = {"matcher": "*"} if has_matcher else {}
        group["hooks"] = [
            {"type": "command", "command": command(event, folder_word), "timeout": timeout}
        ]
        hooks.setdefault(event, []).append(group)
    return expected


def only_insertions(before: str, after: str) -> bool:
    """Every character of `before` is still there, in order, and nothing was changed: the
    difference is insertions alone."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


# --- an empty project --------------------------------------------------------------------------


def test_an_empty_project_gets_a_neat_two_space_settings_file(project: Path) -> None:
    done = cli(project, "install", "claude-code")
    assert done.returncode == 0, done.stderr
    path = project / SETTINGS
    settings = json.loads(path.read_text(encoding="utf-8"))
    assert_claude_code_shape(settings)
    assert settings == with_our_groups({})
    assert path.read_text(encoding="utf-8") == json.dumps(settings, indent=2) + "\n"
    assert os.listdir(project / ".claude") == [SETTINGS.name]  # no lock file, no temp file
    lines = done.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:-1]] == [["added", e] for e in EVENTS]
    assert lines[-1] == "created .claude/settings.local.json"


def test_install_lists_the_host_in_its_help(project: Path) -> None:
    done = cli(project, "install", "--help")
    assert done.returncode == 0
    assert "claude-code" in done.stdout
    host = cli(project, "install", "claude-code", "--help")
    for option in ("--user", "--project", "--folder", "--dry-run", "--uninstall"):
        assert option in host.stdout


# --- other settings keep every byte ------------------------------------------------------------

ODD_FILES = {
    "four spaces, CRLF, no final newline": (
        '{\r\n    "model": "opus",\r\n    "hooks": {\r\n        "PreToolUse": [\r\n'
        '            {\r\n                "matcher": "Bash",\r\n                "hooks": '
        '[{"type": "command", "command": "./guard.sh"}]\r\n            }\r\n        ]\r\n'
        '    },\r\n    "env": {"A": "1"}\r\n}'
    ),
    "tabs, unicode escapes, keys out of order": (
        '{\n\t"permissions": {"allow": ["Bash(npm test)"]},\n\t"statusLine": "caf\\u00e9 \\u2603",'
        '\n\t"hooks": {\n\t\t"Stop": [\n\t\t\t{\n\t\t\t\t"hooks": [\n\t\t\t\t\t{"command": '
        '"notify-send done", "type": "command"}\n\t\t\t\t]\n\t\t\t}\n\t\t],\n\t\t"Notification"'
        ": []\n\t}\n}\n"
    ),
    "one line, no spaces": (
        '{"hooks":{"PostToolUseFailure":[{"matcher":"Edit","hooks":[{"type":"command",'
        '"command":"echo x"}]}]},"z":[1,2.50,true,null]}'
    ),
    "no hooks at all, raw unicode": '{\n  "model": "sonnet",\n  "note": "naïve ☃"\n}\n',
    "empty object": "{}",
    "hooks first, then other keys": '{\n  "hooks": {},\n  "model": "x"\n}\n',
    "empty event list and odd spacing": (
        '{ "hooks" : { "PreCompact" : [ ] , "Stop" : [\n] } , "a" : 1 }\n'
    ),
}


@pytest.mark.parametrize("text", ODD_FILES.values(), ids=ODD_FILES.keys())
def test_other_settings_and_hooks_keep_every_byte(project: Path, text: str) -> None:
    original = write_settings(project, text)
    done = cli(project, "install", "claude-code")
    assert done.returncode == 0, done.stderr
    after = (project / SETTINGS).read_bytes()
    assert only_insertions(original.decode(), after.decode())
    settings = json.loads(after)
    assert settings == with_our_groups(json.loads(original))
    assert_claude_code_shape(settings)
    if "\r\n" in text:
        assert after.count(b"\n") == after.count(b"\r\n")  # the file's line endings kept
    if text.endswith("}"):
        assert after.endswith(b"}")  # no final newline added


def test_inserted_entries_follow_the_file_indentation(project: Path) -> None:
    write_settings(project, ODD_FILES["four spaces, CRLF, no final newline"])
    cli(project, "install", "claude-code")
    text = (project / SETTINGS).read_bytes().decode()
    assert '\r\n        "Stop": [\r\n            {\r\n                "hooks": [\r\n' in text
    write_settings(project, ODD_FILES["one line, no spaces"])
    cli(project, "install", "claude-code")
    text = (project / SETTINGS).read_text(encoding="utf-8")
    assert "\n" not in text
    assert '{"matcher":"*","hooks":[{"type":"command","command":"' in text


# --- twice, and uninstall ----------------------------------------------------------------------


def test_a_second_install_writes_nothing(project: Path) -> None:
    write_settings(project, ODD_FILES["tabs, unicode escapes, keys out of order"])
    assert cli(project, "install", "claude-code").returncode == 0
    before = os.stat(project / SETTINGS)
    done = cli(project, "install", "claude-code")
    assert done.returncode == 0
    assert "already installed" in done.stdout
    after = os.stat(project / SETTINGS)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


ROUND_TRIP = {k: v for k, v in ODD_FILES.items() if "empty event list" not in k}


@pytest.mark.parametrize("text", ROUND_TRIP.values(), ids=ROUND_TRIP.keys())
def test_uninstall_gives_the_original_bytes_back(project: Path, text: str) -> None:
    original = write_settings(project, text)
    (project / "wf").mkdir()
    assert cli(project, "install", "claude-code", "--folder", "wf").returncode == 0
    done = cli(project, "install", "claude-code", "--uninstall")
    assert done.returncode == 0, done.stderr
    assert (project / SETTINGS).read_bytes() == original
    assert [line.split()[:2] for line in done.stdout.splitlines()[:-1]] == [
        ["removed", e] for e in EVENTS
    ]


def test_uninstall_keeps_an_event_list_that_was_there_before_empty(project: Path) -> None:
    """Revision 3: a person's empty `"Stop": []` is theirs; only the events install added go."""
    write_settings(project, ODD_FILES["empty event list and odd spacing"])
    cli(project, "install", "claude-code")
    cli(project, "install", "claude-code", "--uninstall")
    assert (project / SETTINGS).read_text(encoding="utf-8") == (
        '{ "hooks" : { "PreCompact" : [] , "Stop" : [] } , "a" : 1 }\n'
    )


def test_uninstall_keeps_a_lone_empty_stop_list(project: Path) -> None:
    write_settings(project, '{\n  "hooks": {\n    "Stop": []\n  }\n}\n')
    cli(project, "install", "claude-code")
    done = cli(project, "install", "claude-code", "--uninstall")
    assert done.returncode == 0, done.stderr
    assert json.loads((project / SETTINGS).read_text(encoding="utf-8")) == {"hooks": {"Stop": []}}


def test_uninstall_leaves_hand_written_look_alikes_of_our_hooks(project: Path) -> None:
    cli(project, "install", "claude-code")
    path = project / SETTINGS
    settings = json.loads(path.read_text(encoding="utf-8"))
    look_alikes = [
        {"type": "command", "command": f"{PREFIX}stop --debug"},  # extra arguments
        {"type": "command", "command": f"{PREFIX}pre-compact"},  # another event's hook
        {"type": "command", "command": f"{PREFIX}stop", "timeout": 5},  # a key of its own
    ]
    settings["hooks"]["Stop"].append({"hooks": look_alikes})
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    done = cli(project, "install", "claude-code", "--uninstall")
    assert done.returncode == 0, done.stderr
    assert [line.split()[:2] for line in done.stdout.splitlines()[:-1]] == [
        ["removed", e] for e in EVENTS
    ]  # ours, once each: before, the look-alikes went too
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "hooks": {"Stop": [{"hooks": look_alikes}]}
    }


def test_uninstall_removes_the_file_install_created_and_only_that(project: Path) -> None:
    cli(project, "install", "claude-code")
    done = cli(project, "install", "claude-code", "--uninstall")
    assert done.returncode == 0
    assert not (project / SETTINGS).exists()
    again = cli(project, "install", "claude-code", "--uninstall")
    assert again.returncode == 0
    assert "nothing to remove" in again.stdout


def test_uninstall_keeps_what_a_person_added_beside_our_hooks(project: Path) -> None:
    cli(project, "install", "claude-code")
    path = project / SETTINGS
    settings = json.loads(path.read_text(encoding="utf-8"))
    settings["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "say done"})
    settings["hooks"]["PreToolUse"][0]["timeout_note"] = "kept"
    settings["model"] = "opus"
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    done = cli(project, "install", "claude-code", "--uninstall")
    assert done.returncode == 0, done.stderr
    left = json.loads(path.read_text(encoding="utf-8"))
    assert left == {
        "hooks": {
            "PreToolUse": [{"matcher": "*", "hooks": [], "timeout_note": "kept"}],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        },
        "model": "opus",
    }


def test_an_empty_hooks_object_install_did_not_make_stays(project: Path) -> None:
    # "hooks" first: installing into the file without it would append it last, so it was the
    # user's, and uninstall leaves it (empty) where it was.
    original = write_settings(project, '{\n  "hooks": {},\n  "model": "x"\n}\n')
    cli(project, "install", "claude-code")
    cli(project, "install", "claude-code", "--uninstall")
    assert (project / SETTINGS).read_bytes() == original


def test_install_with_another_folder_updates_our_commands_in_place(project: Path) -> None:
    cli(project, "install", "claude-code")
    (project / "wf").mkdir()
    done = cli(project, "install", "claude-code", "--folder", "wf")
    assert done.returncode == 0, done.stderr
    assert [line.split()[:2] for line in done.stdout.splitlines()[:-1]] == [
        ["updated", e] for e in EVENTS
    ]
    settings = json.loads((project / SETTINGS).read_text(encoding="utf-8"))
    assert_claude_code_shape(settings, ' "$CLAUDE_PROJECT_DIR"/wf')


# --- dry run -----------------------------------------------------------------------------------


def test_dry_run_prints_a_diff_and_writes_nothing(project: Path) -> None:
    done = cli(project, "install", "claude-code", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert not (project / ".claude").exists()
    assert done.stdout.startswith("--- /dev/null\n+++ .claude/settings.local.json\n@@ -0,0 +1,")
    assert f'+            "command": "{command("Stop")}"' in done.stdout

    original = write_settings(project, ODD_FILES["one line, no spaces"])
    done = cli(project, "install", "claude-code", "--dry-run")
    assert done.returncode == 0
    assert (project / SETTINGS).read_bytes() == original
    assert "--- .claude/settings.local.json\n+++ .claude/settings.local.json\n" in done.stdout
    assert "\\ No newline at end of file" in done.stdout
    assert "dry run: .claude/settings.local.json not written" in done.stdout

    cli(project, "install", "claude-code")
    installed = (project / SETTINGS).read_bytes()
    done = cli(project, "install", "claude-code", "--uninstall", "--dry-run")
    assert done.returncode == 0
    assert (project / SETTINGS).read_bytes() == installed
    assert done.stdout.count("\n-") == 1 and done.stdout.count("\n+") == 2  # one line, changed


def test_dry_run_under_quiet_prints_only_the_diff(project: Path) -> None:
    done = cli(project, "-q", "install", "claude-code", "--dry-run")
    assert done.returncode == 0
    assert done.stdout.startswith("--- /dev/null\n") and "dry run" not in done.stdout
    assert not (project / ".claude").exists()


# --- refusals ----------------------------------------------------------------------------------

MALFORMED = {
    "invalid JSON": ('{\n  "model": "x",\n  "hooks": {,}\n}\n', "3:13", "not valid JSON"),
    "hooks not an object": ('{\n  "hooks": ["Stop"]\n}\n', "2:12", '"hooks" is a list'),
    "event not a list": (
        '{"hooks": {\n  "Stop": [],\n  "PreToolUse": {"matcher": "*"}\n}}',
        "3:17",
        '"hooks"."PreToolUse" is an object',
    ),
    "not an object": ("[1, 2]\n", "1:1", "the settings is a list"),
    "hooks twice": ('{"hooks": {}, "hooks": {}}', "1:15", '"hooks" appears 2 times'),
    "not UTF-8": ('{"a": "\udcff"}', "1:8", "not UTF-8"),
}


@pytest.mark.parametrize(("text", "where", "what"), MALFORMED.values(), ids=MALFORMED.keys())
@pytest.mark.parametrize("uninstall", [False, True], ids=["install", "uninstall"])
def test_malformed_settings_exit_2_with_the_position_and_write_nothing(
    project: Path, text: str, where: str, what: str, uninstall: bool
) -> None:
    path = project / SETTINGS
    path.parent.mkdir()
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    original = path.read_bytes()
    done = cli(project, "install", "claude-code", *(["--uninstall"] if uninstall else []))
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith(f".claude/settings.local.json:{where}: "), done.stderr
    assert what in done.stderr and "run again" in done.stderr
    assert path.read_bytes() == original
    assert os.listdir(path.parent) == [SETTINGS.name]


def test_a_symlinked_settings_file_is_refused_naming_its_target(project: Path) -> None:
    target = project.parent / "team-settings.json"
    target.write_text("{}\n", encoding="utf-8")
    (project / ".claude").mkdir()
    (project / SETTINGS).symlink_to(target)
    for extra in ([], ["--uninstall"], ["--dry-run"]):
        done = cli(project, "install", "claude-code", *extra)
        assert done.returncode == 2
        assert ".claude/settings.local.json" in done.stderr and str(target) in done.stderr
        assert "symbolic link" in done.stderr
    assert target.read_text(encoding="utf-8") == "{}\n"
    assert (project / SETTINGS).is_symlink()


def test_a_symlinked_claude_folder_is_refused(project: Path) -> None:
    elsewhere = project.parent / "elsewhere"
    elsewhere.mkdir()
    (project / ".claude").symlink_to(elsewhere)
    done = cli(project, "install", "claude-code")
    assert done.returncode == 2
    assert str(elsewhere) in done.stderr
    assert os.listdir(elsewhere) == []


# --- --folder ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "word"),
    [
        ("workflow", '"$CLAUDE_PROJECT_DIR"/workflow'),
        ("my dir/wf", "\"$CLAUDE_PROJECT_DIR\"/'my dir/wf'"),
    ],
)
def test_folder_is_the_last_argument_quoted_for_the_shell(
    project: Path, folder: str, word: str
) -> None:
    (project / folder).mkdir(parents=True, exist_ok=True)
    done = cli(project, "install", "claude-code", "--folder", folder)
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / SETTINGS).read_text(encoding="utf-8"))
    assert_claude_code_shape(settings, f" {word}")
    # The shell Claude Code runs the command in sees one argument: the folder's full path.
    line = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    shown = line.replace(command("Stop"), "printf '%s\\n'", 1)
    env = dict(os.environ, CLAUDE_PROJECT_DIR="/tmp/a project")
    out = subprocess.run(["sh", "-c", shown], env=env, capture_output=True, text=True, check=True)
    assert out.stdout == f"/tmp/a project/{folder}\n"


@pytest.mark.parametrize(
    "folder", ["/abs/wf", "../wf", "a/../../b", 'a"b', "a\\b", "a$b", "a`id`", "${HOME}", ""]
)
def test_a_folder_outside_the_project_or_with_shell_characters_is_refused(
    project: Path, folder: str
) -> None:
    done = cli(project, "install", "claude-code", "--folder", folder)
    assert done.returncode == 2
    assert "--folder" in done.stderr
    assert not (project / ".claude").exists()


# --- warnings, output, modes -------------------------------------------------------------------


@pytest.mark.parametrize(
    "other", ["python3 .cAgents/hooks/log_failure.py", "my-logger >> workflow/TOOL_FAILURES.yaml"]
)
def test_another_tool_failure_logger_is_warned_about(project: Path, other: str) -> None:
    settings = {
        "hooks": {"PostToolUseFailure": [{"hooks": [{"type": "command", "command": other}]}]}
    }
    write_settings(project, json.dumps(settings, indent=2))
    done = cli(project, "install", "claude-code", "-q")
    assert done.returncode == 0
    assert done.stdout == ""
    assert other in done.stderr and "twice" in done.stderr and "remove one" in done.stderr
    assert_claude_code_shape(json.loads((project / SETTINGS).read_text(encoding="utf-8")))


def test_no_warning_for_unrelated_hooks(project: Path) -> None:
    settings = {
        "hooks": {
            "PostToolUseFailure": [{"hooks": [{"type": "command", "command": "notify-send x"}]}],
            "PreToolUse": [{"hooks": [{"type": "command", "command": "cagents-guard"}]}],
        }
    }
    write_settings(project, json.dumps(settings))
    done = cli(project, "install", "claude-code")
    assert done.returncode == 0
    assert done.stderr == ""


# --- cAgents' own failure logger: companion mode ------------------------------------------------

CAGENTS = "cagents@cagents-marketplace"
CAGENTS_MANIFEST = {"name": "cagents", "version": "10.9.0", "hooks": "./.claude/settings.json"}
CAGENTS_FILES = {
    ".claude-plugin/plugin.json": CAGENTS_MANIFEST,
    ".claude/settings.json": CAGENTS_HOOKS,
}
PLUGIN_HOOKS = "~/.claude/plugins/cache/cagents-marketplace/cagents/10.9.0/.claude/settings.json"


def companion_notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "cAgents' failure logger" in line]


@pytest.mark.parametrize("enabled_in", ["user", "project"])
def test_an_enabled_cagents_plugin_is_named_with_what_it_means(
    project: Path, enabled_in: str
) -> None:
    """cAgents installed as a plugin and enabled (in the user's settings, registry v2; in the
    project's, registry v1): install, its dry run and a second install all say where the
    logger runs and that selfcorrect will decide without logging, each failure counted once."""
    home = project.parent / "home"
    install_plugin(home, CAGENTS, CAGENTS_FILES, v1=enabled_in == "project")
    settings = home / SHARED if enabled_in == "user" else project / SHARED
    enable(settings, {CAGENTS: True})
    shown = "~/.claude/settings.json" if enabled_in == "user" else ".claude/settings.json"
    for args in (["--dry-run"], [], ["-q"]):
        done = cli(project, "install", "claude-code", *args)
        assert done.returncode == 0, done.stderr
        [note] = companion_notes(done.stderr)
        assert f"the plugin {CAGENTS} (enabled in {shown}; its hooks: {PLUGIN_HOOKS})" in note
        assert "companion mode" in note and "appends no entry of its own" in note
        assert "counted once" in note
    assert_claude_code_shape(json.loads((project / SETTINGS).read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "case",
    ["none", "installed, not enabled", "disabled locally", "enabled, not installed", "other"],
)
def test_no_companion_note_without_an_enabled_cagents_plugin(project: Path, case: str) -> None:
    home = project.parent / "home"
    if case in ("installed, not enabled", "disabled locally"):
        install_plugin(home, CAGENTS, CAGENTS_FILES)
    if case in ("disabled locally", "enabled, not installed"):
        enable(home / SHARED, {CAGENTS: True})
    if case == "disabled locally":  # a later file's false turns the user's true off
        enable(project / ".claude/settings.local.json", {CAGENTS: False})
    if case == "other":  # an enabled plugin whose hooks log nothing
        hooks = {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "guard"}]}]}}
        install_plugin(home, "guard@team", {"hooks/hooks.json": hooks})
        enable(home / SHARED, {"guard@team": True})
    done = cli(project, "install", "claude-code")
    assert done.returncode == 0, done.stderr
    assert "cAgents" not in done.stderr


def test_the_cagents_logger_is_found_in_every_settings_file_the_hook_reads(project: Path) -> None:
    """The question the failure hook asks: the local settings (not the file install writes)
    and an enabled plugin, both named in one note."""
    home = project.parent / "home"
    local = project / ".claude/settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps(CAGENTS_HOOKS), "utf-8")
    install_plugin(home, CAGENTS, CAGENTS_FILES)
    enable(home / SHARED, {CAGENTS: True})
    done = cli(project, "install", "claude-code")
    assert done.returncode == 0, done.stderr
    [note] = companion_notes(done.stderr)
    assert "in .claude/settings.local.json and in the plugin cagents@" in note
    assert "twice" not in done.stderr  # cAgents' logger is no second logger to remove


def test_uninstall_says_nothing_of_the_cagents_logger(project: Path) -> None:
    """Without selfcorrect's hooks there is no companion mode to announce: cAgents logs alone."""
    home = project.parent / "home"
    install_plugin(home, CAGENTS, CAGENTS_FILES)
    enable(home / SHARED, {CAGENTS: True})
    assert companion_notes(cli(project, "install", "claude-code").stderr)
    for args in (["--dry-run"], []):
        done = cli(project, "install", "claude-code", "--uninstall", *args)
        assert done.returncode == 0, done.stderr
        assert "cAgents" not in done.stderr
    assert not (project / SETTINGS).exists()


def test_quiet_silences_before_or_after_the_command(project: Path) -> None:
    for args in (["-q", "install", "claude-code"], ["install", "claude-code", "--uninstall", "-q"]):
        done = cli(project, *args)
        assert done.returncode == 0
        assert (done.stdout, done.stderr) == ("", "")


def test_user_installs_in_the_home_folder(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "someone"
    home.mkdir()
    done = cli(project, "install", "claude-code", "--user", home=home)
    assert done.returncode == 0, done.stderr
    assert_claude_code_shape(json.loads((home / SHARED).read_text(encoding="utf-8")))
    assert not (project / ".claude").exists()
    assert str(home / SHARED) in done.stdout


def test_project_option_names_the_root(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "workflow").mkdir(parents=True)
    done = cli(project, "install", "claude-code", "--project", str(other))
    assert done.returncode == 0, done.stderr
    assert (other / SETTINGS).is_file() and not (project / ".claude").exists()


def test_the_write_keeps_the_file_mode_and_leaves_no_temp_file(project: Path) -> None:
    write_settings(project, '{"model": "x"}\n')
    os.chmod(project / SETTINGS, 0o600)
    assert cli(project, "install", "claude-code").returncode == 0
    assert stat.S_IMODE(os.stat(project / SETTINGS).st_mode) == 0o600
    assert os.listdir(project / ".claude") == [SETTINGS.name]


# --- any formatting: a property of the span edits themselves (in process, for speed) ---------


_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_HOOK = st.fixed_dictionaries(
    {"type": st.just("command"), "command": st.text(min_size=1, max_size=10)}
)
_GROUP = st.fixed_dictionaries(
    {"hooks": st.lists(_HOOK, min_size=1, max_size=2)}, optional={"matcher": st.text(max_size=5)}
)
_EVENT_NAMES = st.sampled_from([*EVENTS, "Notification", "SessionStart"])
_SETTINGS = st.dictionaries(
    st.text(max_size=6).filter(lambda k: k != "hooks"), _VALUES, max_size=4
).flatmap(
    lambda other: st.one_of(
        st.just(other),
        st.dictionaries(
            _EVENT_NAMES, st.lists(_GROUP, min_size=1, max_size=2), min_size=1, max_size=3
        ).map(lambda hooks: {**other, "hooks": hooks}),
    )
)
_LAYOUT = st.fixed_dictionaries(
    {
        "indent": st.sampled_from([None, 0, 1, 2, 4, "\t"]),
        "separators": st.sampled_from([(",", ":"), (", ", ": "), (",", ": "), (" , ", " : ")]),
        "ensure_ascii": st.booleans(),
        "sort_keys": st.booleans(),
    }
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_SETTINGS,
    layout=_LAYOUT,
    crlf=st.booleans(),
    final=st.booleans(),
    folder=st.sampled_from([None, "wf", "my dir"]),
)
def test_any_formatting_keeps_its_bytes_and_comes_back_whole(
    data: dict[str, Any], layout: dict[str, Any], crlf: bool, final: bool, folder: str | None
) -> None:
    text = json.dumps(data, **layout) + ("\n" if final else "")
    if crlf:
        text = text.replace("\n", "\r\n")
    commands = installer.hook_commands(folder)
    installed, changes = installer._install(text, commands, "settings.json")
    assert installed is not None and [c.action for c in changes] == ["added"] * len(EVENTS)
    assert only_insertions(text, installed)
    folder_word = "" if folder is None else " " + installer.folder_word(folder)
    assert json.loads(installed) == with_our_groups(data, folder_word)
    assert installer._install(installed, commands, "settings.json")[0] is None  # idempotent
    removed, _ = installer._uninstall(installed, "settings.json")
    assert removed == text


def test_the_hooks_run_on_a_path_without_selfcorrect(project: Path) -> None:
    """Install writes the selfcorrect that ran it by absolute path, so Claude Code's PATH need
    not hold it: each written command runs (exit 0, nothing on stderr) with PATH=/usr/bin:/bin."""
    script = Path(sys.executable).parent / "selfcorrect"
    done = subprocess.run(
        [str(script), "install", "claude-code", "-q"],
        cwd=project, capture_output=True, text=True, timeout=60,
        env={**os.environ, "HOME": str(project.parent / "home")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / SETTINGS).read_text("utf-8"))
    for event, (name, _, timeout) in EVENTS.items():
        (group,) = settings["hooks"][event]
        (entry,) = group["hooks"]
        assert entry["command"] == f"{shlex.quote(str(script))} hook claude-code {name}"
        assert entry["timeout"] == timeout
        ran = subprocess.run(
            ["/bin/sh", "-c", entry["command"]],
            cwd=project, input="{}", capture_output=True, text=True, timeout=60,
            env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(project)},
        )  # fmt: skip
        assert ran.returncode == 0, (event, ran.stderr)
        assert "not found" not in ran.stderr, (event, ran.stderr)


def test_install_notes_the_claude_code_it_finds(project: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\necho '2.0.1 (Claude Code)'\n", encoding="utf-8")
    claude.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "install", "claude-code", "-q"],
        cwd=project, capture_output=True, text=True, timeout=60,
        env={**env, "HOME": str(project.parent / "home")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Claude Code 2.0.1 found" in done.stderr and "tested with 2.1.332" in done.stderr
    assert "PostToolBatch" in done.stderr
    assert "Claude Code" not in cli(project, "install", "claude-code", "--uninstall").stderr
