"""The report's card of an open escalation keeps what a person needs once the run has written
the entry to escalations.yaml (docs/report.md, "Open escalations"): the error chain, what was
tried, the files, the type, the attempts and the rule, as it showed them while the entry was
only planned. And its counts read as English: "1 open escalation"."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.conftest import copy_example
from tests.test_session_report import cli, parse


def _card(page: str, ident: str) -> str:
    dom = parse(page)
    (card,) = [text for attrs, text in dom.find("article") if attrs.get("data-escalation") == ident]
    return " ".join(card.split())


def test_the_card_of_a_written_escalation_keeps_its_chain_tries_files_type_attempts_rule(
    tmp_path: Path,
) -> None:
    workflow = tmp_path / "workflow"
    copy_example(workflow)
    before = cli("report", workflow, "-o", tmp_path / "before.html", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    ran = cli("run", workflow, cwd=tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr  # BLOCKED: the escalation is written
    (entry,) = yaml.safe_load((workflow / "escalations.yaml").read_text("utf-8"))["escalations"]
    assert entry["error_chain"] and entry["tried"] and entry["files"]
    after = cli("report", workflow, "-o", tmp_path / "after.html", cwd=tmp_path)
    assert after.returncode == 0, after.stderr

    card = _card((tmp_path / "after.html").read_text("utf-8"), entry["id"])
    assert "the next run writes it" not in card  # this is the written entry
    assert f"Error chain ({len(entry['error_chain'])}):" in card
    for line in entry["error_chain"]:
        assert " ".join(str(line).split()) in card
    assert "Tried: " + "; ".join(entry["tried"]) in card
    assert "Files: " + ", ".join(entry["files"]) in card
    assert f"type {entry['failure_type']}" in card
    assert f"{entry['attempts']} attempts" in card
    assert f"rule {entry['rule']}" in card
    assert "work item WI-3" in card  # linked to the item it stops
    # the same card as when the entry was only planned, but for the "next run" badge
    planned = _card((tmp_path / "before.html").read_text("utf-8"), entry["id"])
    assert card == planned.replace(" the next run writes it", ""), (planned, card)


def test_one_open_escalation_is_said_as_one(tmp_path: Path) -> None:
    workflow = tmp_path / "workflow"
    copy_example(workflow)
    assert cli("run", workflow, cwd=tmp_path).returncode == 1
    done = cli("report", workflow, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    dom = parse((workflow / "report.html").read_text("utf-8"))
    headings = [" ".join(text.split()) for _, text in dom.find("h2")]
    assert "1 open escalation" in headings, headings
    assert not [h for h in headings if re.search(r"\b1 open escalations\b", h, re.I)]
    assert "1 open escalation," in done.stdout
