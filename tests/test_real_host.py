"""The hooks under the real Claude Code CLI, against a scripted model (docs/hooks.md,
"Tested under the real host").

Each test installs selfcorrect's hooks in a fresh project with `selfcorrect install
claude-code`, runs one headless session (`claude -p`) whose model is tests/real_host.py's
scripted server, and checks what the model was sent and what landed in the workflow files, in
selfcorrect's own words, never the CLI's. Without the pinned CLI the tests skip, saying how to
install it; under CI=true (`.ci/run` installs it) its absence fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.io import documents
from tests.helpers import git
from tests.real_host import ModelServer, claude_binary, run_session, text, tool_use
from tests.test_hooks import COORDINATION, make_project

WAIT_S = 120
LEAD = "LEAD-SESSION"  # the marker of the lead's conversation in the scripted model
SUB = "SUBAGENT-SESSION"
# WI-1 is assigned to an agent type, with no agent id: its subagents are bound by the hooks.
COORDINATION = COORDINATION.replace('agent_id: "agent-1"', "assigned_to: builder")


@pytest.fixture
def claude() -> Path:
    return claude_binary()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with a workflow folder, two tasks, and selfcorrect's hooks installed."""
    root = make_project(tmp_path, COORDINATION)
    (root / "broken.py").write_text("import sys\nsys.exit('broken: no config')\n", "utf-8")
    selfcorrect(root, "install", "claude-code", "-q")
    return root


def selfcorrect(root: Path, *args: str, codes: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode in codes, done.stdout + done.stderr
    return done.stdout


def session(claude: Path, root: Path, script: dict[str, list[Any]]) -> ModelServer:
    server = ModelServer(script)
    with server.running():
        done = run_session(claude, root, f"{LEAD}: do the work", server, root.parent / "home")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return server


def entries(root: Path) -> list[dict[str, Any]]:
    log = root / "workflow" / "tool_failures.yaml"
    return [r.data for r in documents.read_failure_log(log, [])]


def shadow(root: Path) -> dict[str, Any]:
    out = selfcorrect(root, "run", "workflow", "--shadow", "--format", "json", codes=(0, 1, 3))
    return json.loads(out)


RUN = "python3 broken.py"


def test_failures_are_logged_once_advised_gated_and_released_after_the_fix(
    claude: Path, project: Path
) -> None:
    fixed = {"file_path": str(project / "broken.py"), "content": "print('fixed')\n"}
    script = {
        LEAD: [
            # The same call three times, worded differently: one call repeated.
            [tool_use("toolu_run1", "Bash", command=RUN, description="Run the script")],
            [tool_use("toolu_run2", "Bash", command=RUN, description="Try again", timeout=60000)],
            [tool_use("toolu_run3", "Bash", command=RUN, description="Once more")],
            [tool_use("toolu_run4", "Bash", command=RUN, description="And again")],
            [tool_use("toolu_read", "Read", file_path=str(project / "broken.py"))],
            [tool_use("toolu_fix", "Write", **fixed)],
            [tool_use("toolu_run5", "Bash", command=RUN, description="After the fix")],
            [text("Finished.")],
        ]
    }
    server = session(claude, project, script)

    # (a) each failure once, with its tool_use_id, its agent and one digest for the three.
    logged = entries(project)
    failed = [e for e in logged if e.get("outcome", "failure") == "failure"]
    assert [e["tool_use_id"] for e in failed] == ["toolu_run1", "toolu_run2", "toolu_run3"]
    assert len({e["input_digest"] for e in failed}) == 1
    assert len({e["agent_id"] for e in failed}) == 1
    # (b) the advisory reached the model beside the third failure's result.
    advised = server.sent_after("toolu_run3")
    assert "--- [Stuck Detection] Loop detected ---" in advised
    assert "--- [Stuck Detection]" not in server.sent_after("toolu_run1").split("toolu_run2")[0]
    # (c) the fourth identical call was denied, and the model was told why.
    denied, is_error = server.tool_result("toolu_run4")
    assert "selfcorrect: this exact Bash call has failed 3 times" in denied
    # ... and after the fix succeeded, the same call ran again (and worked).
    after, is_error = server.tool_result("toolu_run5")
    assert "selfcorrect:" not in after and not is_error
    assert (project / "broken.py").read_text("utf-8") == "print('fixed')\n"
    successes = [e for e in logged if e.get("outcome") == "success"]
    assert [e["tool_use_id"] for e in successes][:1] == ["toolu_fix"]
    gate = json.loads((project / "workflow/.selfcorrect/gate.json").read_text("utf-8"))
    assert not [r for r in gate["repeats"] if r["tool"] == "Bash"]
    # The session's SessionStart started the folder's warm answerer, which answered its
    # deciding hooks, and stopped with the session: no process of ours is left.
    last = project / "workflow/.selfcorrect/warm/last.json"
    deadline = time.monotonic() + 10
    while not last.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    answerer = json.loads(last.read_text("utf-8"))
    assert answerer["served"] >= 3, answerer
    assert answerer["why"] in ("its session ended", "its host exited"), answerer


def block_wi2(root: Path) -> str:
    """WI-2 blocked on a person before the session: its agent's edits failed past the cap
    (the failure hook, run as the host runs it). Returns the escalation's id."""
    edit = {"file_path": "src/locked.py", "old_string": "x = 1", "new_string": "x = 2"}
    for n in (1, 2):
        payload = {
            "session_id": "earlier-session",
            "hook_event_name": "PostToolUseFailure",
            "agent_id": "agent-2",
            "tool_name": "Edit",
            "tool_input": edit,
            "tool_use_id": f"toolu_earlier{n}",
            "error": "TypeError: Cannot read properties of undefined (reading 'id')",
            "is_interrupt": False,
        }
        done = subprocess.run(
            [sys.executable, "-m", "selfcorrect", "hook", "claude-code", "post-tool-use-failure"],
            cwd=root,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=WAIT_S,
            env={**__import__("os").environ, "CLAUDE_PROJECT_DIR": str(root)},
        )
        assert done.returncode == 0, done.stderr
    gate = json.loads((root / "workflow/.selfcorrect/gate.json").read_text("utf-8"))
    return str(gate["blocked"]["src/locked.py"]["escalation"])


def test_a_blocked_items_file_is_denied_a_live_tasks_allowed_and_stop_held_once(
    claude: Path, project: Path
) -> None:
    escalation = block_wi2(project)
    folder = project / "workflow"
    (folder / "microtasks").mkdir()
    (folder / "microtasks" / "WI-1.yaml").write_text(
        "task_id: WI-1\nmicrotasks:\n"
        "  - {id: MT-1, kind: file_edit, description: 'Guard the app', status: pending}\n",
        encoding="utf-8",
    )
    selfcorrect(project, "run", "workflow", "-q", codes=(0, 1, 3))
    script = {
        LEAD: [
            [
                tool_use("toolu_r1", "Read", file_path=str(project / "src/locked.py")),
                tool_use("toolu_r2", "Read", file_path=str(project / "src/app.py")),
            ],
            # (d) relative and absolute spellings of the blocked item's file; the live task's.
            [tool_use("toolu_locked", "Edit", file_path="src/locked.py",
                      old_string="x = 1", new_string="x = 2")],
            [tool_use("toolu_app", "Edit", file_path=str(project / "src/app.py"),
                      old_string="print('app')", new_string="print('app', 2)")],
            [tool_use("toolu_policy", "Edit", file_path="workflow/selfcorrect.yaml",
                      old_string="retries: 2", new_string="retries: 99")],
            [text("All done.")],
            [text("Stopping now.")],
        ]
    }  # fmt: skip
    policy_before = (folder / "selfcorrect.yaml").read_bytes()
    server = session(claude, project, script)

    locked, _ = server.tool_result("toolu_locked")
    assert "selfcorrect: src/locked.py belongs to work item WI-2" in locked
    assert escalation in locked and "workflow/escalations.yaml" in locked
    assert (project / "src/locked.py").read_text("utf-8") == "x = 1\n"
    app, is_error = server.tool_result("toolu_app")
    assert "selfcorrect:" not in app and not is_error
    assert (project / "src/app.py").read_text("utf-8") == "print('app', 2)\n"
    policy, _ = server.tool_result("toolu_policy")
    assert "selfcorrect: workflow/selfcorrect.yaml is the person's" in policy
    assert (folder / "selfcorrect.yaml").read_bytes() == policy_before
    # (e) the lead's stop was held once, for WI-1's pending micro-task, then let go.
    held = "selfcorrect: work handed to you is not done yet: WI-1 has 1 pending micro-task "
    sent = [json.dumps(r["messages"], ensure_ascii=False) for r in server.conversation(LEAD)]
    # Only the last request carries it: held again, the model would have been asked again.
    assert [held in s for s in sent] == [False] * (len(sent) - 1) + [True]
    holds = json.loads((folder / ".selfcorrect/stop_holds.json").read_text("utf-8"))
    assert len(holds) == 1
    assert not (folder / ".selfcorrect/.selfcorrect").exists()


def test_a_rejected_edit_is_logged_as_stale_context_and_settings_are_restored(
    claude: Path, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / "app.py").write_text("print('app')\n", encoding="utf-8")
    git(root, "init", "-q")
    selfcorrect(root, "init", "workflow", "-q")
    mine = '{\n    "model": "opus",\n    "hooks": {"Stop": []}, "env": {"A": "1"}\n}\n'
    (root / ".claude/settings.json").write_text(mine, encoding="utf-8")
    before = (root / ".claude/settings.json").read_bytes()
    # --shared: into the person's committed settings, which uninstall gives back whole.
    selfcorrect(root, "install", "claude-code", "--shared", "-q")
    assert (root / ".claude/settings.json").read_bytes() != before
    script = {
        LEAD: [
            [tool_use("toolu_read", "Read", file_path=str(root / "app.py"))],
            # (f) rejected while its input is validated: no PreToolUse, no PostToolUseFailure.
            [tool_use("toolu_stale", "Edit", file_path=str(root / "app.py"),
                      old_string="print('gone')", new_string="print('new')")],
            [text("Done.")],
        ]
    }  # fmt: skip
    server = session(claude, root, script)
    _, is_error = server.tool_result("toolu_stale")
    assert is_error
    logged = [e for e in entries(root) if e.get("tool_use_id") == "toolu_stale"]
    assert len(logged) == 1 and logged[0]["tool"] == "Edit"
    typed = {s["subject"]: s for s in shadow(root)["subjects"]}
    assert [s["failure_type"] for s in typed.values()] == ["stale_context"], typed
    # (h) uninstall gives the person's settings back byte for byte.
    selfcorrect(root, "install", "claude-code", "--uninstall", "-q")
    assert (root / ".claude/settings.json").read_bytes() == before


# The lead's turns: an Agent call whose prompt names WI-1, then the lead is done.
DELEGATE_WI1 = [
    [tool_use("toolu_agent", "Agent", description="Build the app",
              prompt=f"{SUB}: you work on WI-1; run the build.",
              subagent_type="general-purpose", run_in_background=False)],
    [text("Delegated.")],
]  # fmt: skip


def test_a_subagents_failures_go_to_the_task_the_lead_named(claude: Path, project: Path) -> None:
    selfcorrect(project, "run", "workflow", "-q", codes=(0, 1, 3))  # the gate's state
    script = {
        LEAD: DELEGATE_WI1,
        SUB: [
            [tool_use("toolu_sub1", "Bash", command=RUN, description="Build")],
            [text("It fails.")],
        ],
    }  # fmt: skip
    server = session(claude, project, script)
    assert server.conversation(SUB), "the subagent never ran"
    logged = [e for e in entries(project) if e.get("tool_use_id") == "toolu_sub1"]
    assert len(logged) == 1
    # (g) a random subagent id, bound to the task the lead's Agent call named.
    assert logged[0]["task_id"] == "WI-1"
    assert logged[0]["agent_id"].startswith("a") and logged[0]["agent_id"] != "agent-2"


def test_without_the_cli_the_tests_skip_saying_how_to_install_it_but_fail_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SELFCORRECT_CLAUDE", str(tmp_path / "no-claude"))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"npm install .*@anthropic-ai/claude-code@"):
        claude_binary()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="is not installed"):
        claude_binary()


def test_ci_installs_the_pinned_cli() -> None:
    from tests.real_host import CLAUDE_CODE_VERSION

    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text("utf-8")
    assert f'claude_pin="{CLAUDE_CODE_VERSION}"' in ci
    assert '"@anthropic-ai/claude-code@$claude_pin"' in ci


def test_turns_belong_to_owners_under_the_real_host(claude: Path, project: Path) -> None:
    """In a fresh project (no run has written the gate's state), the lead starts a subagent
    for WI-1 that fails eight times in its one turn, then the lead works alone for three more
    sessions while WI-2's directive waits for an agent that never starts.
    - the subagent is bound to WI-1 although nothing had written gate.json before;
    - its burst is one round: it stays on step 1, below a ceiling of 5 that counts rounds;
    - the lead's turns spend nothing of WI-2, and nobody is paged for it."""
    with (project / "workflow/selfcorrect.yaml").open("a", encoding="utf-8") as policy:
        policy.write("caps:\n  max_attempts_per_subject: 5\n")
    assert not (project / "workflow/.selfcorrect/gate.json").exists()
    burst = [[tool_use(f"toolu_b{n}", "Bash", command=f"{RUN} --try {n}")] for n in range(8)]
    script = {
        LEAD: DELEGATE_WI1,
        SUB: [*burst, [text("It keeps failing.")]],
    }  # fmt: skip
    server = session(claude, project, script)
    assert server.conversation(SUB), "the subagent never ran"
    logged = [e for e in entries(project) if str(e.get("tool_use_id", "")).startswith("toolu_b")]
    assert len(logged) == 8
    assert {e["task_id"] for e in logged} == {"WI-1"}  # bound in a fresh project
    wi1 = next(s for s in shadow(project)["subjects"] if s["subject"] == "WI-1")
    # Its turn ended (a SubagentStop) with it still failing: one climb, at most, and one round.
    assert wi1["status"] != "blocked" and (wi1["ladder_step"] or 0) <= 2, wi1
    assert wi1["rounds"] == 1 and wi1["attempts"] == 8

    # WI-2's directive is out; its agent never starts. The lead works alone, three sessions,
    # and the validator re-runs after each.
    def docs_report(stamp: int) -> None:
        (project / "workflow/validation_report.yaml").write_text(
            f"status: FIXABLE\ngenerated_at: '2026-12-03T10:0{stamp}:00Z'\nvalidator: ci\n"
            "issues:\n  - id: V-1\n    type: missing_documentation\n    severity: MINOR\n"
            "    task_id: WI-2\n    target: docs/locked.md\n    description: docs missing\n",
            encoding="utf-8",
        )

    docs_report(0)
    selfcorrect(project, "run", "workflow", "-q", codes=(0, 1, 3))
    for stamp in (1, 2, 3):
        session(claude, project, {LEAD: [[text("Nothing for me to do.")]]})
        docs_report(stamp)
        selfcorrect(project, "run", "workflow", "-q", codes=(0, 1, 3))
    issue = next(i for i in shadow(project)["issues"] if i["task_id"] == "WI-2")
    assert (issue["attempts"], issue["status"]) == (0, "pending"), issue
    escalations = (project / "workflow/escalations.yaml").read_text("utf-8")
    assert "WI-2" not in escalations
