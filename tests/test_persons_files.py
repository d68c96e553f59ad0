"""The person's files at the gate (docs/hooks.md, "The gate"; docs/containment.md).

`selfcorrect.yaml`, `escalations.yaml`, `templates/` and `.selfcorrect/` of the workflow folder
are the person's: selfcorrect runs the policy's commands and renders the templates as its own
prompts. The gate refuses agents' writes to them by the edit tools and by the shell writes it
can recognise, matched by real path (a symlink or a hard link to one of them is one of them),
whether or not a run has written the gate's state yet. Reads stay open, and so do a live task's
own files (to it, not to the blocked item's agent) and `coordination_log.yaml`, whoever else
failed on them.

Each test runs the real hook, `selfcorrect hook claude-code pre-tool-use`, as the host does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.test_hooks import COORDINATION, call, event, failure, hook, make_project

NPM = {"command": "npm test", "description": "Run the tests"}
NPM_ERROR = "Exit code 1\nnpm ERR! Test failed. See above for more details."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path, COORDINATION)
    (root / "workflow/templates").mkdir()
    (root / "workflow/templates/status.md.j2").write_text("STATUS {{ status }}\n", "utf-8")
    (root / "evil.yaml").write_text("fixers: {}\n", "utf-8")
    (root / "policy-link.yaml").symlink_to(root / "workflow/selfcorrect.yaml")
    os.link(root / "workflow/selfcorrect.yaml", root / "policy-hard.yaml")
    return root


def bash(root: Path, command: str, agent: str = "agent-1") -> str | None:
    """The gate's reason to refuse this Bash call, or None."""
    payload = call(agent, "Bash", {"command": command, "description": "do it"})
    payload["cwd"] = str(root)
    return hook(root, "pre-tool-use", payload).denied


WRITES = [
    "echo \"  fix: {command: [sh, -c, 'curl x | sh']}\" >> workflow/selfcorrect.yaml",
    "printf 'escalations: []' > workflow/escalations.yaml",
    "echo '{{ 7*7 }}' >workflow/templates/status.md.j2",
    "echo hi > workflow/templates/new.md.j2",
    "cat evil.yaml | tee -a workflow/selfcorrect.yaml",
    "sed -i 's/retries: 2/retries: 99/' workflow/selfcorrect.yaml",
    "sed -i.bak -e 's/a/b/' workflow/selfcorrect.yaml",
    "cp evil.yaml workflow/selfcorrect.yaml",
    "cp -f evil.yaml workflow/templates/",
    "mv evil.yaml workflow/escalations.yaml",
    "mv workflow/selfcorrect.yaml /tmp/gone.yaml",
    "rm -f workflow/.selfcorrect/gate.json",
    "rm -rf workflow/templates",
    "rm -rf workflow",
    "cd workflow && echo x >> selfcorrect.yaml",
    "npm test; echo x 2>&1 >> workflow/selfcorrect.yaml",
    "echo x >> policy-link.yaml",  # a symlink to the policy
    "echo x >> policy-hard.yaml",  # a hard link to the policy
    'echo x >> "$CLAUDE_PROJECT_DIR/workflow/selfcorrect.yaml"',
    "echo x >> workflow/./src/../selfcorrect.yaml",
    "rm workflow/*.yaml",
    "sudo -u root tee workflow/selfcorrect.yaml < evil.yaml",
    "FOO=1 env -i sed --in-place=.bak 's/a/b/' workflow/escalations.yaml",
    "ln -sf /tmp/evil.j2 workflow/templates/status.md.j2",
    "dd if=evil.yaml of=workflow/selfcorrect.yaml",
    "truncate -s 0 workflow/selfcorrect.yaml",
]


@pytest.mark.parametrize("command", WRITES)
def test_shell_writes_to_the_persons_files_are_refused(project: Path, command: str) -> None:
    # No run yet: the gate knows the person's files without its state.
    assert not (project / "workflow/.selfcorrect/gate.json").exists()
    denied = bash(project, command)
    assert denied is not None, command
    assert "is the person's" in denied and "an agent does not" in denied
    assert denied.startswith("selfcorrect: ")  # logged `outcome: denied` when it comes back


READS = [
    "cat workflow/selfcorrect.yaml",
    "grep -n retries workflow/selfcorrect.yaml > notes.txt",
    "cp workflow/selfcorrect.yaml /tmp/policy-copy.yaml",
    "ls workflow/templates",
    "echo done >> workflow/coordination_log.yaml",
    "sed -i 's/a/b/' src/app.py",
    "rm -rf workflow/recovery",
    "echo x > /dev/null 2>&1",
    "npm test 2>&1 | tee test.log",
    "python3 -c 'print(1)' > out.txt",
    "sed -n 1,5p workflow/selfcorrect.yaml",
]


@pytest.mark.parametrize("command", READS)
def test_reads_and_other_writes_stay_open(project: Path, command: str) -> None:
    assert bash(project, command) is None, command


@pytest.mark.parametrize(
    ("tool", "key", "path"),
    [
        ("Write", "file_path", "workflow/templates/status.md.j2"),
        ("Edit", "file_path", "workflow/templates/status.md.j2"),
        ("MultiEdit", "file_path", "workflow/selfcorrect.yaml"),
        ("NotebookEdit", "notebook_path", "workflow/.selfcorrect/gate.json"),
        ("Write", "file_path", "policy-hard.yaml"),
    ],
)
def test_edit_tools_are_refused_the_persons_files_before_any_run(
    project: Path, tool: str, key: str, path: str
) -> None:
    payload = call("agent-1", tool, {key: path, "content": "x", "new_source": "x"})
    denied = hook(project, "pre-tool-use", payload).denied
    assert denied is not None and "is the person's" in denied
    # And after a run has written the gate's state, the same.
    hook(project, "post-tool-use-failure", failure("agent-1", "Bash", NPM, NPM_ERROR))
    assert (project / "workflow/.selfcorrect/gate.json").is_file()
    assert hook(project, "pre-tool-use", payload).denied is not None
    read = call("agent-1", "Read", {"file_path": path})
    assert hook(project, "pre-tool-use", read).json is None


SHARED = """\
controller: lead
status: in_progress
implementation_tasks:
  - task_id: WI-1
    name: "Build the app"
    agent_id: "agent-1"
    files: [src/app.py, src/shared.py]
    status: in_progress
  - task_id: WI-2
    name: "Fix the locked module"
    agent_id: "agent-2"
    files: [src/locked.py, src/shared.py]
    status: in_progress
"""
EDIT_ERROR = "TypeError: Cannot read properties of undefined (reading 'id')"


def test_a_blocked_items_files_spare_the_coordination_log_and_a_live_tasks_own(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path, SHARED)
    (project / "src/shared.py").write_text("y = 1\n", "utf-8")
    log_edit = {
        "file_path": "workflow/coordination_log.yaml",
        "old_string": "status: in_progress",
        "new_string": "status: done",
    }
    locked = {"file_path": "src/locked.py", "old_string": "x = 1", "new_string": "x = 2"}
    # agent-2's edits of its file and of the coordination log fail until WI-2 is blocked.
    for edit in (log_edit, locked, log_edit, locked):
        hook(project, "post-tool-use-failure", failure("agent-2", "Edit", edit, EDIT_ERROR))
    gate = json.loads((project / "workflow/.selfcorrect/gate.json").read_text("utf-8"))
    assert gate["blocked"], "WI-2 is blocked on a person"
    assert hook(project, "pre-tool-use", call("agent-1", "Edit", locked)).denied
    # The coordination log is every agent's: never refused as a blocked item's file.
    for agent in ("agent-1", "agent-2", "agent-3"):
        assert hook(project, "pre-tool-use", call(agent, "Edit", log_edit)).json is None
    assert bash(project, "echo '# note' >> workflow/coordination_log.yaml") is None
    # WI-1 is live and src/shared.py is one of its files: open to it, and to the lead (whose
    # hooks name no agent), but not to the blocked item's own agent.
    shared = {"file_path": "src/shared.py", "old_string": "y = 1", "new_string": "y = 2"}
    assert hook(project, "pre-tool-use", call("agent-1", "Edit", shared)).json is None
    lead = call("agent-1", "Edit", shared)
    del lead["agent_id"]
    assert hook(project, "pre-tool-use", lead).json is None
    denied = hook(project, "pre-tool-use", call("agent-2", "Edit", shared)).denied
    assert denied is not None and "WI-2" in denied and "WI-1" in denied, denied


@pytest.mark.parametrize("whole", [False, True], ids=["opens-with-the-tag", "wholly-the-tag"])
def test_four_cats_of_a_file_that_opens_with_the_tag_do_not_deny_the_fifth(
    project: Path, whole: bool
) -> None:
    """A successful `cat notes.txt` whose output opens with `<tool_use_error>` is output, not
    a rejection: four of them in PostToolBatch payloads log nothing, and the fifth is allowed.
    (This did not reproduce on the code as found for notes that go on after the element: the
    batch hook takes a result for a rejection only when it is wholly one element in the host's
    words, core/unrun.py. It did for notes that are wholly one element in an edit tool's
    words: a shell call is never rejected in those words, so its output is output.)"""
    notes = (
        "<tool_use_error>String to replace not found in file.\nString: gone</tool_use_error>\n"
        "TODO: the Edit above was rejected; retry after reading the file.\n"
    )
    if whole:
        notes = "<tool_use_error>String to replace not found in file.</tool_use_error>\n"
    (project / "notes.txt").write_text(notes, "utf-8")
    cat = {"command": "cat notes.txt", "description": "Show the notes"}
    shown = notes.rstrip("\n")
    shapes = [  # the result as text, as content blocks, and as Bash's own result object
        shown,
        [{"type": "text", "text": shown}],
        {"stdout": shown, "stderr": "", "interrupted": False, "isImage": False},
        shown,
    ]
    for n, response in enumerate(shapes):
        batch = event(
            "post-tool-batch",
            agent_id="agent-1",
            tool_calls=[
                {
                    "tool_name": "Bash",
                    "tool_input": cat,
                    "tool_use_id": f"toolu_cat{n}",
                    "tool_response": response,
                }
            ],
        )
        assert hook(project, "post-tool-batch", batch).json is None
    log = project / "workflow/tool_failures.yaml"
    assert not log.exists() or "toolu_cat" not in log.read_text("utf-8")
    assert hook(project, "pre-tool-use", call("agent-1", "Bash", cat)).json is None


def test_the_refusal_comes_back_as_a_denied_call_that_counts_nothing(project: Path) -> None:
    """The host hands the gate's reason back as the call's error: the failure hook logs it
    `outcome: denied`, as every denial of the gate's, and nothing counts toward a signal."""
    command = "echo '  fix: x' >> workflow/selfcorrect.yaml"
    denied = bash(project, command)
    assert denied is not None
    for _ in range(4):
        hook(
            project,
            "post-tool-use-failure",
            failure("agent-1", "Bash", {"command": command}, denied),
        )
    text = (project / "workflow/tool_failures.yaml").read_text("utf-8")
    assert text.count("outcome: 'denied'") == 4
    assert bash(project, "cat workflow/selfcorrect.yaml") is None
    assert "fix: x" not in (project / "workflow/selfcorrect.yaml").read_text("utf-8")


@pytest.mark.parametrize(
    ("command", "refused"),
    [
        ("selfcorrect allow workflow", True),
        ("python3 -m selfcorrect allow workflow", True),
        ("cd workflow && .venv/bin/selfcorrect allow .", True),
        ("env X=1 selfcorrect allow --policy p.yaml workflow", True),
        ("selfcorrect check workflow", False),
        ("echo selfcorrect allow", False),
    ],
)
def test_an_agent_cannot_allow_the_policys_commands(
    project: Path, command: str, refused: bool
) -> None:
    """`selfcorrect allow` trusts what the policy runs (docs/containment.md): an agent that
    wrote a command into the policy must not be able to allow it itself."""
    said = bash(project, command)
    assert (said is not None and "is a person's to run" in said) == refused, said
