"""`selfcorrect report DIR`: the session as one self-contained HTML page (docs/report.md).

The page is opened in a real browser (headless Chromium, Debian's `chromium`; .ci/run installs
it when it is missing): what a person sees is the DOM Chromium builds, not our own bytes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from selfcorrect.commands.report import EVENTS_SHOWN
from selfcorrect.core.journal_records import IssueEvent, SubjectEvent, TransitionEvent
from tests.conftest import Result, copy_example, copy_session
from tests.helpers import ESCALATE_STALE_EDITS

HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"


def chromium() -> str:
    """The browser, or a failure that says how to get it (never a silent skip)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "headless Chromium is needed to test the session report in a real browser and is not "
        "installed: `apt-get install -y chromium` (Debian's package; .ci/run does this)"
    )


def browser(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on a local file, with a profile of its own under `cwd`."""
    argv = [
        chromium(),
        "--headless",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={cwd / 'profile'}",
        *(["--no-sandbox"] if os.geteuid() == 0 else []),  # root (CI) cannot use the sandbox
        *args,
    ]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


class Dom(HTMLParser):
    """The elements of a page that the assertions read: attributes and text per element."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.texts: dict[int, list[str]] = {}  # index of an open element -> text inside it
        self._open: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        if tag not in ("br", "img", "meta", "link", "input", "hr"):
            self._open.append(len(self.elements) - 1)
            self.texts[len(self.elements) - 1] = []

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            index = self._open.pop()
            if self.elements[index][0] == tag:
                break

    def handle_data(self, data: str) -> None:
        for index in self._open:
            self.texts[index].append(data)

    def find(self, tag: str, **attrs: str) -> list[tuple[dict[str, str], str]]:
        return [
            (found, "".join(self.texts.get(i, [])))
            for i, (name, found) in enumerate(self.elements)
            if name == tag and all(attr in found for attr in attrs)
        ]


def parse(html: str) -> Dom:
    dom = Dom()
    dom.feed(html)
    return dom


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real console entry point, as a person runs it."""
    return subprocess.run(
        [sys.executable, "-m", "selfcorrect", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """The cAgents session after one real run (so escalations.yaml and the journal exist),
    with one hostile failure appended: agent text that is markup and script."""
    copy_session(tmp_path / "session")
    workflow = tmp_path / "session" / "workflow"
    (workflow / "selfcorrect.yaml").write_text(ESCALATE_STALE_EDITS)  # an open escalation
    with (workflow / "tool_failures.yaml").open("a", encoding="utf-8") as log:
        log.write(
            '\n- tool: "Edit"\n'
            f"  file_path: {json.dumps('/home/dev/webapp/src/<b>bold</b>.ts')}\n"
            f"  error: {json.dumps(HOSTILE)}\n"
            '  timestamp: "2026-08-05T15:30:00.000Z"\n'
            '  agent_id: "3f9c2a71-8d4e-4b6a-9e21-7c5d0f1a2b34"\n'
            "  recoverable: true\n"
        )
    ran = cli("run", workflow, cwd=tmp_path)
    assert ran.returncode in (1, 3), ran.stderr
    return workflow


def status_of(workflow: Path, cwd: Path) -> dict[str, Any]:
    done = cli("status", workflow, "--format", "json", cwd=cwd)
    assert done.returncode in (0, 1, 3), done.stderr  # exits as a run would
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_the_fixture_session_report_in_a_real_browser(session: Path, tmp_path: Path) -> None:
    made = cli("report", session, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    page = session / "report.html"
    assert f"wrote {page.relative_to(tmp_path)}" in made.stdout

    dom = parse(browser("--dump-dom", page.as_uri(), cwd=tmp_path).stdout)
    status = status_of(session, tmp_path)

    # Every work item that is not ok is on the page, under its own heading, with its status.
    items = {
        attrs["data-item"]: (attrs, text)
        for attrs, text in dom.find("article", **{"data-item": ""})
    }
    shown = " ".join(text for _, text in items.values())
    subjects = [s for s in status["subjects"] if s["status"] != "ok"]
    assert subjects and status["issues"]
    for subject in subjects:
        assert subject["subject"] in shown, subject["subject"]
    for issue in status["issues"]:
        assert (issue["task_id"] or issue["fingerprint"]) in items, issue
    blocked = [s["subject"] for s in subjects if s["status"] == "blocked"]
    assert blocked and all(items[name][0]["data-status"] == "blocked" for name in blocked)

    # Worst status first: what needs you, what is being worked (a stuck item being worked before
    # one skipped until its outside cause goes), what is done.
    order = ["blocked", "recovering", "pending", "failing", "skipped", "recovered", "ok"]
    statuses = [attrs["data-status"] for attrs, _ in dom.find("article", **{"data-item": ""})]
    assert statuses == sorted(statuses, key=order.index)

    # Every open escalation in escalations.yaml is at the top, before the first work item.
    written = yaml.safe_load((session / "escalations.yaml").read_text(encoding="utf-8"))
    open_ids = [e["id"] for e in written["escalations"] if e.get("status", "open") == "open"]
    assert open_ids
    on_page = [
        attrs["data-escalation"] for attrs, _ in dom.find("article", **{"data-escalation": ""})
    ]
    assert set(open_ids) <= set(on_page)
    tags = [(tag, attrs) for tag, attrs in dom.elements]
    first_escalation = next(i for i, (t, a) in enumerate(tags) if "data-escalation" in a)
    first_item = next(i for i, (t, a) in enumerate(tags) if "data-item" in a)
    assert first_escalation < first_item
    (count,) = [
        text for attrs, text in dom.find("span", id="") if attrs["id"] == "open-escalations-count"
    ]
    assert int(count) == len(on_page)

    # Agent text is text: the browser built no script or image from it, and shows it as written.
    assert not dom.find("script") and not dom.find("img")
    (title,) = [text for _, text in dom.find("title")]
    assert "pwned" not in title
    assert HOSTILE in shown
    assert "/home/dev/webapp/src/<b>bold</b>.ts" in shown

    # A picture of it, as a person would see it.
    shot = tmp_path / "report.png"
    browser("--window-size=1280,2000", f"--screenshot={shot}", page.as_uri(), cwd=tmp_path)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one


def test_the_page_loads_nothing_and_prints_by_group(
    session: Path, tmp_path: Path, run_line: Callable[..., Result]
) -> None:
    out = tmp_path / "elsewhere.html"
    result = run_line(["report", session, "-o", out])
    assert result.exit_code == 0, result.stderr
    html = out.read_text(encoding="utf-8")
    assert not (session / "report.html").exists()  # -o: only where asked
    dom = parse(html)
    # Self-contained: no script, no stylesheet link, no image, and a policy forbidding fetches.
    assert not dom.find("script") and not dom.find("link") and not dom.find("img")
    links = [a["href"] for _, a in dom.elements if "href" in a]
    assert links and all(link.startswith("#") for link in links)  # within the page only
    assert not [a for _, a in dom.elements if {"src", "srcset", "action", "data"} & a.keys()]
    (policy,) = [a for a, _ in dom.find("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in policy["content"]
    # Print: each status group starts a page, and no item or escalation is cut in two.
    (style,) = [text for _, text in dom.find("style")]
    printing = style[style.index("@media print") :]
    assert "section.group { break-before: page" in printing
    assert ".item, .escalation, tr { break-inside: avoid" in printing
    groups = [a["data-status"] for a, _ in dom.find("section", **{"data-status": ""})]
    assert groups == list(dict.fromkeys(groups)) and len(groups) >= 3
    # Error texts are on the page, never folded away.
    assert not dom.find("details")
    assert dom.find("pre", **{"data-field": ""})


START = datetime(2026, 8, 5, 16, 0, tzinfo=UTC)  # after the session's last failure


def _ladder_records(subject: str, count: int) -> list[str]:
    records = [
        SubjectEvent(
            subject=subject,
            status="recovering",
            ladder_step=1 + number % 5,
            log_position=number,
            attempt=1,
            failure_type="syntax_error",
            reason="STILL_STUCK",
            rule="failure_type:syntax_error",
            rule_version="f329860d00c5",
            evidence={"signals": [], "error": f"error number {number}"},
            at=(START + timedelta(seconds=number)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            run=f"run{number}",
            actor="selfcorrect",
        ).to_json()
        for number in range(count)
    ]
    return [json.dumps(r, sort_keys=True) + "\n" for r in records]


def test_a_long_history_is_bounded_per_item(
    tmp_path: Path, run_line: Callable[..., Result]
) -> None:
    """Thousands of journal records for one item: the page shows its last events (and the
    latest of each kind) and counts the rest, so its size does not follow the journal."""
    subject = "/home/dev/webapp/config/limits.yaml"

    def page(count: int) -> tuple[str, dict[str, str], str]:
        place = tmp_path / f"s{count}"
        copy_session(place)
        workflow = place / "workflow"
        if count:
            (workflow / ".selfcorrect").mkdir()
            (workflow / ".selfcorrect" / "journal.jsonl").write_text(
                "".join(_ladder_records(subject, count)), encoding="utf-8"
            )
        result = run_line(["report", workflow])
        assert result.exit_code == 0, result.stderr
        html = (workflow / "report.html").read_text(encoding="utf-8")
        dom = parse(html)
        attrs, item = next(
            (a, text)
            for a, text in dom.find("article", **{"data-item": ""})
            if a["data-item"] == subject
        )
        return html, attrs, item

    _, attrs, _ = page(0)
    failures = int(attrs["data-events"]) + int(attrs["data-older"])  # its failures alone
    assert failures > 0
    sizes = []
    for count in (200, 4000):
        html, attrs, item = page(count)
        sizes.append(len(html))
        shown, older = int(attrs["data-events"]), int(attrs["data-older"])
        assert shown + older == failures + count  # every event shown or counted
        assert EVENTS_SHOWN <= shown <= EVENTS_SHOWN + 1  # + the latest failure
        assert f"{older} earlier events not shown" in item
        assert re.search(rf"error number {count - 1}\b", item)  # the newest is shown
        assert not re.search(r"error number 0\b", html)
        # A burst of ladder steps never hides the item's latest failure ("failure TYPE: TOOL").
        assert re.search(r"failure [a-z_]+: \w", item)
    assert sizes[1] < sizes[0] * 1.05


def test_invalid_input_exits_2_and_writes_nothing(
    corpus: Path, run_line: Callable[..., Result]
) -> None:
    report = corpus / "validation_report.yaml"
    report.write_text("status: [unclosed\n", encoding="utf-8")
    result = run_line(["report", corpus])
    assert result.exit_code == 2
    assert "validation_report.yaml:" in result.stderr
    assert not (corpus / "report.html").exists()

    missing = run_line(["report", corpus.parent / "nope"])
    assert missing.exit_code == 2 and "nope" in missing.stderr

    report.unlink()
    nowhere = run_line(["report", corpus, "-o", corpus / "no" / "such" / "r.html"])
    assert nowhere.exit_code == 2
    assert "not an existing folder" in nowhere.stderr


def test_never_written_through_a_symlink(
    corpus: Path, tmp_path: Path, run_line: Callable[..., Result]
) -> None:
    precious = tmp_path / "bashrc"
    precious.write_text("export PATH=/usr/bin\n", encoding="utf-8")
    (corpus / "report.html").symlink_to(precious)
    result = run_line(["report", corpus])
    assert result.exit_code == 2
    assert "report.html" in result.stderr and "link" in result.stderr
    assert precious.read_text(encoding="utf-8") == "export PATH=/usr/bin\n"
    assert (corpus / "report.html").is_symlink()


def test_rewrites_its_own_page_in_place(corpus: Path, run_line: Callable[..., Result]) -> None:
    assert run_line(["report", corpus]).exit_code == 0
    page = corpus / "report.html"
    page.write_text("stale", encoding="utf-8")
    assert run_line(["report", corpus]).exit_code == 0
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    leftovers = [p.name for p in corpus.iterdir() if p.name.startswith(".report.html")]
    assert leftovers == []


def test_a_persons_reset_shows_in_the_items_timeline(
    session: Path, tmp_path: Path, run_line: Callable[..., Result]
) -> None:
    written = yaml.safe_load((session / "escalations.yaml").read_text(encoding="utf-8"))
    escalation = next(e for e in written["escalations"] if e.get("status", "open") == "open")
    evidence = "the upstream middleware now passes the user <object>"
    done = run_line(
        [
            "reset",
            session,
            "--escalation",
            escalation["id"],
            "--evidence",
            evidence,
            "--actor",
            "dana",
        ]
    )
    assert done.exit_code == 0, done.stderr

    assert run_line(["report", session]).exit_code == 0
    dom = parse((session / "report.html").read_text(encoding="utf-8"))
    on_page = [a["data-escalation"] for a, _ in dom.find("article", **{"data-escalation": ""})]
    assert escalation["id"] not in on_page  # resolved: no longer at the top
    attrs, item = next(
        (a, text)
        for a, text in dom.find("article", **{"data-item": ""})
        if a["data-item"] == escalation["subject"]
    )
    assert attrs["data-status"] != "blocked"
    assert "reset by dana (cli), fresh budget" in item
    assert evidence in item  # as text: `<object>` is no element
    assert not dom.find("object")
    # The escalation that came before the reset is still in its history.
    # (its reason said in words, never as a code)
    assert re.search(r"escalation\s*escalated: [a-z]", item)


def test_fixes_verified_undone_and_refused_are_counted_and_shown(
    corpus: Path, tmp_path: Path, run_line: Callable[..., Result]
) -> None:
    """The journal's records of three autofix attempts on one issue, as the run writes them."""
    issue = status_of(corpus, tmp_path)["issues"][0]
    common: dict[str, Any] = {
        "fingerprint": issue["fingerprint"],
        "rule": f"issue_type:{issue['type']}",
        "rule_version": "v1",
        "run": "r1",
        "actor": "selfcorrect",
    }

    def transition(source: str, target: str, at: str, **evidence: Any) -> dict[str, Any]:
        return TransitionEvent(
            source=source, target=target, attempt=1, evidence=evidence, at=at, **common
        ).to_json()

    def issue_event(status: str, at: str) -> dict[str, Any]:
        return IssueEvent(
            work_item=issue["task_id"],
            type=issue["type"],
            status=status,
            attempt=1,
            report_digest=None,
            reason="FIXABLE",
            at=at,
            **common,
        ).to_json()

    records = [
        transition("preflight", "escalated", "2026-08-05T16:00:00Z", reason="out of scope"),
        issue_event("remediating", "2026-08-05T16:01:00Z"),
        transition(
            "verifying", "compensating", "2026-08-05T16:02:00Z", detail="a <i>worse</i> report"
        ),
        transition("compensating", "escalated", "2026-08-05T16:02:01Z", restored=["src/a.ts"]),
        issue_event("fixed", "2026-08-05T16:03:00Z"),
    ]
    (corpus / ".selfcorrect").mkdir()
    (corpus / ".selfcorrect" / "journal.jsonl").write_text(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in records), encoding="utf-8"
    )
    assert run_line(["report", corpus]).exit_code == 0
    dom = parse((corpus / "report.html").read_text(encoding="utf-8"))
    cards = {
        a["id"]: int(text) for a, text in dom.find("span", id="") if a["id"].startswith("fixes-")
    }
    assert cards == {"fixes-verified": 1, "fixes-undone": 1, "fixes-refused": 1}
    _, item = next(
        (a, text)
        for a, text in dom.find("article", **{"data-item": ""})
        if a["data-item"] == (issue["task_id"] or issue["fingerprint"])
    )
    order = [
        item.index("fix refused before it ran"),
        item.index("fix undone: it failed verification"),
        item.index("fix verified in scope"),
    ]
    assert order == sorted(order)  # in time order
    assert "a <i>worse</i> report" in item and not dom.find("i")


def item_fields(dom: Dom) -> dict[str, dict[str, str]]:
    """Each work item's `data-field` texts (status, next-step, last-error), read in document
    order from the DOM the browser built."""
    fields: dict[str, dict[str, str]] = {}
    current = None
    for index, (_tag, attrs) in enumerate(dom.elements):
        if "data-item" in attrs:
            current = fields.setdefault(attrs["data-item"], {})
        elif current is not None and "data-field" in attrs:
            current[attrs["data-field"]] = "".join(dom.texts.get(index, [])).strip()
    return fields


def test_each_item_shows_its_status_last_error_and_next_step_at_a_glance(
    tmp_path: Path,
) -> None:
    """The example after its first run: what needs you (WI-3, blocked), what is set aside
    (WI-4, skipped); then after a person's reset, WI-3 is being worked. Read from the DOM
    Chromium builds: no field is folded, no reason is an enum code, no time is raw UTC."""
    workflow = tmp_path / "workflow"
    copy_example(workflow)
    assert cli("run", workflow, cwd=tmp_path).returncode == 1
    assert cli("report", workflow, cwd=tmp_path).returncode == 0
    page = workflow / "report.html"
    dom = parse(browser("--dump-dom", page.as_uri(), cwd=tmp_path).stdout)
    items = item_fields(dom)
    assert items["WI-3"]["status"] == "blocked"
    assert items["WI-3"]["last-error"] == (
        "TypeError: Cannot read property 'id' of undefined at handler.ts:45"
    )
    assert items["WI-3"]["next-step"].startswith("You: read escalation ESC-da5aeb28 in ")
    assert (
        "selfcorrect reset workflow --escalation ESC-da5aeb28 --evidence"
        in (items["WI-3"]["next-step"])
    )
    assert items["WI-4"]["status"] == "skipped"
    assert "npm ERR! code ENOTFOUND" in items["WI-4"]["last-error"]
    assert items["WI-4"]["next-step"].startswith("Skipped until a later success")
    # The three questions, in order, each item under its answer
    sections = [a["id"] for a, _ in dom.find("section", **{"class": ""}) if a["class"] == "answer"]
    assert sections == ["needs-you", "being-worked", "done"]
    # Reasons in words (an issue held with its blocked task says so), times relative: nothing a
    # person must decode
    (wi3,) = [t for a, t in dom.find("article", **{"data-item": ""}) if a["data-item"] == "WI-3"]
    assert "held with its task, which is blocked" in wi3
    assert "handed to an agent" not in wi3
    shown = " ".join(text for _, text in dom.find("main"))
    for code in ("NON_RETRYABLE", "AWAITING_AGENT", "MAXIMUM_ATTEMPTS_REACHED"):
        assert code not in shown, code
    times = [text for _, text in dom.find("time") if text]
    assert times and not [t for t in times if re.fullmatch(r"\d{4}-\d\d-\d\dT.*", t)]
    # Tool failures and validation issues are counted apart
    (failures,) = [text for a, text in dom.find("table", id="") if a["id"] == "failure-types"]
    (issues,) = [text for a, text in dom.find("table", id="") if a["id"] == "issue-types"]
    assert "runtime_error" in failures and "test_coverage_low" not in failures
    assert "test_coverage_low" in issues and "runtime_error" not in issues
    (card,) = [
        t
        for a, t in dom.find("div", **{"class": ""})
        if a["class"] == "card blocked" and "open" in t
    ]
    assert card == "1open escalation"  # the count, then its noun in the singular

    # After a person's reset, WI-3 is being worked: the next step says by whom, and where
    assert (
        cli("reset", workflow, "--subject", "WI-3", "--evidence", "fixed", cwd=tmp_path).returncode
        == 0
    )
    assert cli("run", workflow, cwd=tmp_path).returncode == 3
    assert cli("report", workflow, cwd=tmp_path).returncode == 0
    items = item_fields(parse(browser("--dump-dom", page.as_uri(), cwd=tmp_path).stdout))
    assert items["WI-3"]["status"] == "recovering"
    assert items["WI-3"]["next-step"].startswith("The agent works on workflow/recovery/WI-3.md")


def test_an_item_failing_under_budget_is_not_said_to_hold_a_directive(tmp_path: Path) -> None:
    """One failure under its type's budget: nothing is decided or handed out. The page says
    pending, as `run` and `status` do, and that the agents retry on their own; never that a
    directive is with an agent (there is no recovery prompt)."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "coordination_log.yaml").write_text(
        "implementation_tasks:\n  - task_id: WI-1\n    status: in_progress\n"
    )
    (folder / "tool_failures.yaml").write_text(
        "failures:\n  - {tool: Bash, error: E404 not found, "
        'timestamp: "2026-11-29T10:00:00Z", task_id: WI-1}\n'
    )
    page = tmp_path / "report.html"
    done = cli("report", folder, "-q", "-o", page, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    dom = parse(page.read_text(encoding="utf-8"))
    (attrs, text) = dom.find("article", **{"data-item": ""})[0]
    assert attrs["data-item"] == "WI-1" and attrs["data-status"] == "pending"
    assert "The agents retry within the type's budget" in text
    assert "has its directive" not in text
    shown = json.loads(cli("run", "--shadow", folder, "--format", "json", cwd=tmp_path).stdout)
    assert [s["status"] for s in shown["subjects"]] == ["pending"]
