"""Real failure texts typed as a careful person types them (docs/rules.md §6).

tests/replay/failure-texts/ holds failure texts nobody on the project wrote: from public issues
and CI logs quoted in them (public.texts.yaml) and from the hook logs and transcripts public
projects commit (hook-logs.texts.yaml), each with its source and the type a careful person
gives it. The shipped taxonomy must type at least 90 % of them so and none wrongly.
"""

from __future__ import annotations

import json
from collections import Counter

from selfcorrect.io import documents
from tests.conftest import REPO

TEXTS = REPO / "tests" / "replay" / "failure-texts"


def labelled() -> list[dict]:
    found = []
    for path in sorted(TEXTS.glob("*.texts.yaml")):
        found += documents.load_decision(path, "failure_texts").data["texts"]
    return found


def test_the_corpus_is_large_sourced_and_varied() -> None:
    texts = labelled()
    assert len(texts) >= 150
    assert all(len(t["source"]) >= 3 for t in texts)
    repeated = [text for text, n in Counter(t["text"] for t in texts).items() if n > 1]
    assert repeated == []
    # Every type a careful person gives appears, so no class is scored on nothing.
    kinds = Counter(t["type"] for t in texts)
    assert all(kinds[kind] >= 3 for kind in kinds) and len(kinds) == 7


def test_nine_in_ten_are_typed_right_and_none_wrongly(run_line) -> None:
    result = run_line(["replay", TEXTS, "--format", "json"])
    data = json.loads(result.stdout)
    right = sum(t["right"] for t in data["texts"])
    wrong = sum(t["wrong"] for t in data["texts"])
    total = sum(t["texts"] for t in data["texts"])
    assert total == len(labelled())
    assert wrong == 0, [m for t in data["texts"] for m in t["misses"] if m["decided"] != "unknown"]
    assert right / total >= 0.90
