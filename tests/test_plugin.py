"""The repository is a Claude Code plugin (docs/hooks.md, "The Claude Code plugin"):
`.claude-plugin/plugin.json` and `hooks/hooks.json` install the hooks `selfcorrect install
claude-code` installs, and they work under the real CLI loaded with `--plugin-dir`.

The real-host test runs like tests/test_real_host.py's: the pinned CLI against a scripted
model on loopback; without the CLI it skips, saying how to install it (under CI=true it fails).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from selfcorrect.commands import install as installer
from tests.real_host import ModelServer, claude_binary, run_session, text, tool_use
from tests.test_hooks import COORDINATION, make_project
from tests.test_real_host import LEAD, RUN, entries

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def claude() -> Path:
    return claude_binary()


def test_the_plugins_hooks_are_the_ones_install_writes() -> None:
    """Same events, matchers and timeouts; the command is `selfcorrect` from PATH, whose
    hooks use workflow/ under $CLAUDE_PROJECT_DIR, as an install without --folder does."""
    plugin = json.loads((REPO / "hooks/hooks.json").read_text("utf-8"))
    written, _ = installer._install(
        None, installer.hook_commands(None, "selfcorrect"), "hooks.json"
    )
    assert written is not None
    assert plugin["hooks"] == json.loads(written)["hooks"]
    assert [e for e, *_ in installer.EVENTS] == list(plugin["hooks"])
    manifest = json.loads((REPO / ".claude-plugin/plugin.json").read_text("utf-8"))
    assert manifest["name"] == "selfcorrect"
    # Claude Code finds hooks/hooks.json at the plugin's root unless the manifest names others.
    assert "hooks" not in manifest
    # The repository is its own marketplace: `/plugin install selfcorrect@selfcorrect`.
    market = json.loads((REPO / ".claude-plugin/marketplace.json").read_text("utf-8"))
    assert market["name"] == "selfcorrect"
    assert [(p["name"], p["source"]) for p in market["plugins"]] == [("selfcorrect", "./")]


def test_the_plugin_logs_a_failure_once_and_its_gate_denies_the_repeat(
    claude: Path, tmp_path: Path
) -> None:
    """A project with a workflow folder and no install: the session loads the repository as a
    plugin; its failing Bash call is logged once per failure, and the same call, repeated past
    the gate's threshold, is denied before it runs."""
    project = make_project(tmp_path, COORDINATION)
    (project / "broken.py").write_text("import sys\nsys.exit('broken: no config')\n", "utf-8")
    assert not (project / ".claude").exists()
    script = {
        LEAD: [
            [tool_use("toolu_run1", "Bash", command=RUN, description="Run the script")],
            [tool_use("toolu_run2", "Bash", command=RUN, description="Try again")],
            [tool_use("toolu_run3", "Bash", command=RUN, description="Once more")],
            [tool_use("toolu_run4", "Bash", command=RUN, description="And again")],
            [text("Finished.")],
        ]
    }
    server = ModelServer(script)
    with server.running():
        done = run_session(
            claude,
            project,
            f"{LEAD}: do the work",
            server,
            tmp_path / "home",
            plugin_dir=REPO,
            path_first=Path(sys.executable).parent,  # the plugin runs `selfcorrect` from PATH
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    failed = [e for e in entries(project) if e.get("outcome", "failure") == "failure"]
    assert [e["tool_use_id"] for e in failed] == ["toolu_run1", "toolu_run2", "toolu_run3"]
    assert len({e["input_digest"] for e in failed}) == 1
    denied, _ = server.tool_result("toolu_run4")
    assert "selfcorrect: this exact Bash call has failed 3 times" in denied
    assert not (project / ".claude").exists()  # nothing was installed into the settings
