"""Escalations reach a person (docs/rules.md §10): `notify.command` runs once per new open
escalation with the escalation as JSON on stdin, once more as a reminder after
`notify.remind_after_h`, never for a resolved one, never while untrusted; and the lead's next
hook answer says an escalation waits.

Real programs: a Python script that records its argv, stdin and environment, and a fake `gh`
on PATH, so `gh issue create`'s argv shape is run without a network. The shipped example ends
with WI-3 blocked and one escalation open.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from selfcorrect.commands.run import correction_run
from selfcorrect.io.yaml_nodes import FastLoader
from tests.helpers import allow, example, records

START = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
RECORDER = """\
import json, os, sys
with open(sys.argv[1], "a", encoding="utf-8") as out:
    out.write(json.dumps({
        "argv": sys.argv[2:],
        "stdin": sys.stdin.read(),
        "notice": os.environ.get("SELFCORRECT_NOTICE"),
        "escalation": os.environ.get("SELFCORRECT_ESCALATION"),
    }) + "\\n")
"""


def at(hours: float):
    return lambda: START + timedelta(hours=hours)


def received(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def escalations(folder: Path) -> list[dict]:
    return yaml.load((folder / "escalations.yaml").read_text(), Loader=FastLoader)["escalations"]


def with_notify(folder: Path, argv: list[str], *, trusted: bool = True) -> None:
    policy = folder / "selfcorrect.yaml"
    shown = json.dumps(argv)
    policy.write_text(policy.read_text() + f"\nnotify:\n  command: {shown}\n  remind_after_h: 24\n")
    if trusted:
        allow(folder)


@pytest.fixture
def told(tmp_path: Path) -> tuple[Path, Path]:
    """The example with a recording notifier, trusted; (folder, what the notifier got)."""
    folder = example(tmp_path)
    script = tmp_path / "record.py"
    script.write_text(RECORDER)
    got = tmp_path / "received.jsonl"
    with_notify(folder, [sys.executable, str(script), str(got), "--flag"])
    return folder, got


def test_each_new_escalation_is_sent_once_with_its_entry_on_stdin(told) -> None:
    folder, got = told
    outcome = correction_run(folder, clock=at(0))

    (sent,) = received(got)
    (open_one,) = escalations(folder)
    assert sent["argv"] == ["--flag"]
    assert (sent["notice"], sent["escalation"]) == ("new", open_one["id"])
    body = json.loads(sent["stdin"])
    assert body == open_one  # the entry exactly as escalations.yaml holds it
    assert body["subject"] == "WI-3" and body["status"] == "open"
    assert [n.escalation for n in outcome.notified] == [open_one["id"]]
    (record,) = [r for r in records(folder) if r["event"] == "notified"]
    assert (record["escalation"], record["notice"], record["exit"]) == (open_one["id"], "new", 0)

    correction_run(folder, clock=at(1))  # a later run, the same escalation still open
    correction_run(folder, clock=at(2))
    assert len(received(got)) == 1


def test_an_escalation_still_open_after_remind_after_h_is_sent_once_more(told) -> None:
    folder, got = told
    correction_run(folder, clock=at(0))
    correction_run(folder, clock=at(23.5))
    assert [s["notice"] for s in received(got)] == ["new"]

    correction_run(folder, clock=at(24))
    correction_run(folder, clock=at(72))  # one reminder, never a second

    sent = received(got)
    assert [s["notice"] for s in sent] == ["new", "reminder"]
    assert sent[1]["stdin"] == sent[0]["stdin"]


def test_a_resolved_escalation_gets_no_reminder(told) -> None:
    folder, got = told
    correction_run(folder, clock=at(0))
    path = folder / "escalations.yaml"
    path.write_text(
        path.read_text().replace(
            "    status: open\n",
            "    status: resolved\n    evidence: the middleware sets req.user now\n"
            "    resolved_by: bo\n",
        )
    )

    correction_run(folder, clock=at(1))  # acts on the person's edit
    correction_run(folder, clock=at(48))

    assert [s["notice"] for s in received(got)] == ["new"]
    assert all(e["status"] != "open" for e in escalations(folder))


def test_an_untrusted_notify_command_runs_nothing_and_says_how_to_allow_it(
    tmp_path: Path, run_line
) -> None:
    folder = example(tmp_path)
    script = tmp_path / "record.py"
    script.write_text(RECORDER)
    got = tmp_path / "received.jsonl"
    with_notify(folder, [sys.executable, str(script), str(got)], trusted=False)

    result = run_line(["run", folder])

    assert result.exit_code == 2
    assert "notify.command" in result.stderr and "selfcorrect allow" in result.stderr
    assert not got.exists()
    assert not (folder / "escalations.yaml").exists()  # nothing written either

    allow(folder)  # a person looked
    assert run_line(["run", folder]).exit_code == 1
    assert [s["notice"] for s in received(got)] == ["new"]


FAKE_GH = """\
#!{python}
import json, sys
with open({out!r}, "a", encoding="utf-8") as out:
    out.write(json.dumps({{"argv": sys.argv, "stdin": sys.stdin.read()}}) + "\\n")
print("https://github.com/acme/app/issues/7")
"""


def test_gh_issue_create_gets_its_argv_and_the_body_on_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    got = tmp_path / "gh.jsonl"
    gh = bin_dir / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable, out=str(got)))
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    folder = example(tmp_path)
    title = "selfcorrect: an escalation waits"
    with_notify(folder, ["gh", "issue", "create", "--title", title, "--body-file", "-"])

    correction_run(folder, clock=at(0))

    (call,) = received(got)
    assert call["argv"][0].endswith("/gh")
    assert call["argv"][1:] == ["issue", "create", "--title", title, "--body-file", "-"]
    assert json.loads(call["stdin"])["id"] == escalations(folder)[0]["id"]
    (record,) = [r for r in records(folder) if r["event"] == "notified"]
    assert record["outcome"] == "exited with code 0"


def test_the_leads_next_hook_answer_says_an_escalation_waits_once(tmp_path: Path) -> None:
    from tests.test_hooks import event, hook, hook_modules

    folder = example(tmp_path)
    correction_run(folder, clock=at(0))  # no notify command: the lead is told all the same
    (open_one,) = escalations(folder)

    def success(**who: str) -> dict:
        return event(
            "post-tool-use",
            tool_name="Read",
            tool_input={"file_path": str(tmp_path / "README.md")},
            tool_response={"content": "ok"},
            tool_use_id="toolu_read",
            **who,
        )

    assert hook(tmp_path, "post-tool-use", success(agent_id="sub-1"), folder=folder).json is None
    said = hook(tmp_path, "post-tool-use", success(), folder=folder).context

    assert said is not None
    assert open_one["id"] in said and "WI-3" in said and "waits for a person" in said
    assert "escalations.yaml" in said
    # Told once: the lead's next answers say nothing more of it, and the success hook's fast
    # path stays the standard library's while the escalation waits.
    assert hook(tmp_path, "post-tool-use", success(), folder=folder).json is None
    heavy = ("msgspec", "yaml", "click", "jinja2", "typing", "hashlib")
    stdout, loaded = hook_modules(tmp_path, "post-tool-use", success(), heavy)
    assert stdout == "" and loaded == []


def test_the_leads_stop_hold_names_the_waiting_escalation_too(tmp_path: Path) -> None:
    from tests.test_hooks import COORDINATION, MAKE, MAKE_ERROR, event, failure, hook, make_project

    root = make_project(tmp_path, COORDINATION)
    for _ in range(3):  # WI-1 gets a directive; WI-2 spends its runtime errors: a person's
        hook(root, "post-tool-use-failure", failure("agent-1", "Bash", MAKE, MAKE_ERROR))
        edit = {"file_path": "src/locked.py", "old_string": "x", "new_string": "y"}
        error = "TypeError: Cannot read properties of undefined (reading 'id')"
        hook(root, "post-tool-use-failure", failure("agent-2", "Edit", edit, error))
    (open_one,) = escalations(root / "workflow")

    stop = event("stop", stop_hook_active=False)
    held = hook(root, "stop", stop).json

    assert held is not None and held["decision"] == "block"
    assert "WI-1" in held["reason"]  # the work handed out, as before
    assert open_one["id"] in held["reason"] and "waits for a person" in held["reason"]
