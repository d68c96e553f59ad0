"""Whole real sessions, played through the hooks (docs/rules.md §7, §13; docs/hooks.md).

tests/replay/real-sessions/ holds four Claude Code sessions (2.0.76 to 2.1.53) that public
projects committed as transcripts; each folder's SOURCE.md says where it came from and what
was trimmed, and labels.md what a careful reader concludes, written before any replay.
`selfcorrect replay` plays each through the hooks (hooks/session_play.py) and scores the folder
they leave against expected.yaml.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from selfcorrect.hooks.session_play import played
from selfcorrect.io import documents
from tests.conftest import REPO

SESSIONS = REPO / "tests" / "replay" / "real-sessions"
NAMES = sorted(p.parent.name for p in SESSIONS.glob("*/expected.yaml"))


def outcomes(workflow: Path) -> Counter[str]:
    log = workflow / "tool_failures.yaml"
    return Counter(
        str(raw.data.get("outcome", "failure")) for raw in documents.read_failure_log(log, [])
    )


def test_the_corpus_has_four_real_sessions_with_sources() -> None:
    assert len(NAMES) == 4
    for name in NAMES:
        source = (SESSIONS / name / "SOURCE.md").read_text(encoding="utf-8")
        assert "github" in source.lower() or "/" in source  # a repository and path


@pytest.mark.parametrize(
    ("name", "cancelled", "denied"),
    [
        ("crypto-cleanup-hook-denials", 9, 3),
        ("stop-hook-loop-subagents", 14, 8),
        ("make-target-loop", 0, 2),
    ],
)
def test_calls_that_never_ran_are_logged_and_count_nothing(
    name: str, cancelled: int, denied: int
) -> None:
    """Observation 1 on real transcripts: the host's cancelled siblings and the project's own
    PreToolUse denials are in the log as such, and none of them is a failure."""
    with played(SESSIONS / name) as session:
        assert session is not None
        seen = outcomes(session.workflow)
    assert (seen["cancelled"], seen["denied"]) == (cancelled, denied)


def test_a_success_after_the_real_loop_ends_its_streak_and_only_such_successes_are_logged() -> None:
    """Observation 6 on a real transcript: the agent ran one failing make six times, then got
    out; the success that ended the streak is logged, and the other successful calls of the
    session (about forty) are not."""
    transcript = SESSIONS / "make-target-loop" / "transcript.jsonl"
    results = [
        block
        for line in transcript.read_text(encoding="utf-8").splitlines()
        for block in (json.loads(line).get("message") or {}).get("content") or []
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    succeeded = sum(1 for block in results if block.get("is_error") is not True)
    with played(SESSIONS / "make-target-loop") as session:
        assert session is not None
        seen = outcomes(session.workflow)
    assert succeeded > 20
    assert seen["failure"] == 8 and 1 <= seen["success"] <= 2


def test_replay_scores_the_sessions_without_a_false_count_signal_or_blocked(run_line) -> None:
    result = run_line(["replay", SESSIONS, "--format", "json"])
    data = json.loads(result.stdout)
    scores = {s["detector"]: s for s in data["scores"]}
    assert {c["path"].rsplit("/", 1)[-1] for c in data["cases"]} == set(NAMES)
    assert all(c["mismatches"] == [] for c in data["cases"]), [
        c["mismatches"] for c in data["cases"]
    ]
    # Not one call counted that should not be, nor one missed.
    assert (scores["failures_counted"]["fp"], scores["failures_counted"]["fn"]) == (0, 0)
    # No signal a careful reader would call false, and the real loop found.
    assert all(s["fp"] == 0 for name, s in scores.items() if name.startswith("signal:"))
    assert scores["stuck"]["tp"] == 1 and scores["stuck"]["fp"] == 0
    assert "verdict:BLOCKED" not in scores  # no false BLOCKED (none is labelled BLOCKED)


def test_playing_a_session_writes_nothing_in_its_case(tmp_path: Path, run_line) -> None:
    before = {p: p.read_bytes() for p in SESSIONS.rglob("*") if p.is_file()}
    run_line(["replay", SESSIONS / "make-target-loop"])
    after = {p: p.read_bytes() for p in SESSIONS.rglob("*") if p.is_file()}
    assert after == before
