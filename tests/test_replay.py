"""`selfcorrect replay`: the scoring maths, the labelled corpus as a CI gate, and read-only replay.

The corpus in tests/replay/ is labelled by reading the files, not from selfcorrect's output;
tests/replay/baseline.yaml records the figures it reaches now (rules §13).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from selfcorrect.commands.replay import find_cases
from selfcorrect.core.scoring import (
    IssueLabel,
    IssueSeen,
    Labels,
    Score,
    SubjectLabel,
    SubjectSeen,
    baseline_figures,
    below_baseline,
    labels_from,
    match_issue,
    score_case,
    total,
)
from tests.conftest import CORPUS as SESSION
from tests.conftest import REPO, tracked_example, tree_digest

CORPUS = REPO / "tests" / "replay"
BASELINE = CORPUS / "baseline.yaml"

# ----------------------------------------------------------------------------- scoring maths


@pytest.mark.parametrize(
    ("tp", "fp", "fn", "precision", "recall"),
    [
        (0, 0, 0, None, None),  # nothing predicted, nothing labelled: both undefined
        (0, 3, 0, 0.0, None),  # only false alarms: no positives to recall
        (0, 0, 2, None, 0.0),  # never predicted: precision undefined, not 1.0
        (2, 1, 1, 2 / 3, 2 / 3),
        (5, 0, 0, 1.0, 1.0),
    ],
)
def test_precision_and_recall(tp: int, fp: int, fn: int, precision, recall) -> None:
    score = Score("stuck", tp, fp, fn)
    assert (score.precision, score.recall) == (precision, recall)


@pytest.mark.parametrize(
    ("tp", "fp", "floored"),
    [(29, 71, 0.29), (5, 3, 0.62), (2, 1, 0.66), (1, 0, 1.0), (0, 4, 0.0), (0, 0, None)],
)
def test_figures_are_rounded_down_without_float_error(tp: int, fp: int, floored) -> None:
    assert Score("x", tp, fp).floored("precision") == floored  # 0.29 * 100 is 28.999...


def seen(subject: str, *signals: str, failure_type: str = "unknown", status: str = "failing"):
    return SubjectSeen(subject, frozenset(signals), failure_type, status)


def counts(label: SubjectLabel | IssueLabel, subjects=(), issues=()) -> dict[str, tuple]:
    labels = Labels(
        "",
        (label,) if isinstance(label, SubjectLabel) else (),
        (label,) if isinstance(label, IssueLabel) else (),
    )
    scores, _ = score_case(labels, subjects, issues)
    return {s.detector: (s.tp, s.fp, s.fn) for s in scores}


NOT_STUCK = SubjectLabel("WI-1", stuck=False, signals=frozenset())


@pytest.mark.parametrize(
    ("label", "decided", "expected"),
    [
        # a true negative is counted nowhere
        (NOT_STUCK, [seen("WI-1")], {}),
        # a signal that must not fire, firing
        (
            NOT_STUCK,
            [seen("WI-1", "edit_loop")],
            {"stuck": (0, 1, 0), "signal:edit_loop": (0, 1, 0)},
        ),
        # some right, one missed, one extra
        (
            SubjectLabel(
                "WI-1", True, frozenset({"consecutive_failures", "repeated_error"}), None, None
            ),
            [seen("WI-1", "consecutive_failures", "edit_loop")],
            {
                "stuck": (1, 0, 0),
                "signal:consecutive_failures": (1, 0, 0),
                "signal:repeated_error": (0, 0, 1),
                "signal:edit_loop": (0, 1, 0),
            },
        ),
        # stuck labelled without signals: only `stuck` is scored
        (SubjectLabel("WI-1", stuck=True), [seen("WI-1")], {"stuck": (0, 0, 1)}),
        # a wrong type: FN for the labelled class, FP for the decided one
        (
            SubjectLabel("WI-1", failure_type="runtime_error"),
            [seen("WI-1", failure_type="unknown")],
            {"failure_type:runtime_error": (0, 0, 1), "failure_type:unknown": (0, 1, 0)},
        ),
        (
            SubjectLabel("WI-1", failure_type="timeout", status="recovering"),
            [seen("WI-1", failure_type="timeout", status="recovering")],
            {"failure_type:timeout": (1, 0, 0), "subject_status:recovering": (1, 0, 0)},
        ),
        # a labelled subject replay never saw: every labelled positive is missed
        (
            SubjectLabel("WI-9", True, frozenset({"review_loop"}), "unknown", "recovering"),
            [seen("WI-1", "review_loop")],
            {
                "stuck": (0, 0, 1),
                "signal:review_loop": (0, 0, 1),
                "failure_type:unknown": (0, 0, 1),
                "subject_status:recovering": (0, 0, 1),
            },
        ),
        (
            SubjectLabel("WI-1", status="blocked"),
            [seen("WI-1", status="failing")],
            {"subject_status:blocked": (0, 0, 1), "subject_status:failing": (0, 1, 0)},
        ),
    ],
)
def test_subject_scoring(label: SubjectLabel, decided, expected) -> None:
    assert counts(label, subjects=decided) == expected


def issue(fingerprint: str, type_: str, classification: str, id_: str | None = None):
    return IssueSeen(fingerprint, id_, type_, classification)


LINT = issue("linting_errors@src/a.py#WI-3", "linting_errors", "FIXABLE", "V-1")


@pytest.mark.parametrize(
    ("label", "decided", "expected"),
    [
        # BLOCKED is the positive class of `classification`
        (IssueLabel("V-1", classification="BLOCKED"), [LINT], {"classification": (0, 0, 1)}),
        (
            IssueLabel("V-1", classification="FIXABLE"),
            [issue("x", "unclassified", "BLOCKED", "V-1")],
            {"classification": (0, 1, 0)},
        ),
        (IssueLabel("V-1", classification="FIXABLE"), [LINT], {}),
        (
            IssueLabel("linting_errors@src/a.py#WI-3", "linting_errors", "FIXABLE"),
            [LINT],
            {"issue_type:linting_errors": (1, 0, 0)},
        ),
        # mistyped: the fingerprint's type part differs, the rest still finds the issue
        (
            IssueLabel("test_coverage_low@src/a.py#WI-3", "test_coverage_low"),
            [LINT],
            {"issue_type:test_coverage_low": (0, 0, 1), "issue_type:linting_errors": (0, 1, 0)},
        ),
        # labelled, but not in the report at all
        (IssueLabel("V-7", "vague_answers"), [LINT], {"issue_type:vague_answers": (0, 0, 1)}),
    ],
)
def test_issue_scoring(label: IssueLabel, decided, expected) -> None:
    assert counts(label, issues=decided) == expected


def test_an_ambiguous_fingerprint_matches_nothing() -> None:
    twins = [
        issue("linting_errors@src/a.py", "linting_errors", "FIXABLE"),
        issue("test_coverage_low@src/a.py", "test_coverage_low", "FIXABLE"),
    ]
    assert match_issue("missing_documentation@src/a.py", twins) is None
    assert match_issue("linting_errors@src/a.py", twins) is twins[0]  # exact match first
    assert match_issue("V-1", twins) is None  # an id is never taken for a fingerprint tail


def test_labels_from_a_document() -> None:
    labels = labels_from(
        {
            "subjects": {
                "a": {"stuck": False},
                "b": {"signals": ["edit_loop"]},
                "c": {"stuck": True},
                "d": None,
            },
            "issues": {"V-2": {"classification": "blocked"}},
        }
    )
    a, b, c, d = labels.subjects
    assert (a.stuck, a.signals) == (False, frozenset())  # a negative for every signal
    assert (b.stuck, b.signals) == (True, frozenset({"edit_loop"}))  # signals imply stuck
    assert (c.stuck, c.signals) == (True, None)  # signals not labelled: not scored
    assert (d.stuck, d.signals, d.failure_type) == (None, None, None)
    assert labels.issues == (IssueLabel("V-2", None, "BLOCKED"),)


def test_totals_sum_per_detector_in_a_stable_order() -> None:
    summed = total(
        [
            Score("issue_type:b", 1, 0, 0),
            Score("signal:tool_loop", 0, 1, 0),
            Score("stuck", 1, 0, 0),
            Score("signal:consecutive_failures", 2, 0, 1),
            Score("stuck", 0, 2, 3),
        ]
    )
    assert summed == (
        Score("stuck", 1, 2, 3),
        Score("signal:consecutive_failures", 2, 0, 1),
        Score("signal:tool_loop", 0, 1, 0),
        Score("issue_type:b", 1, 0, 0),
    )


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ({"stuck": {"precision": 0.75, "recall": 0.5}}, []),  # equal holds
        ({"stuck": {"precision": 0.76}}, [("stuck", "precision", 0.76, 0.75)]),
        ({"stuck": {"recall": 0.6}}, [("stuck", "recall", 0.6, 0.5)]),
        # a detector no case scores any more: every recorded figure became undefined
        ({"signal:tool_loop": {"recall": 0.5}}, [("signal:tool_loop", "recall", 0.5, None)]),
        ({"classification": {"precision": 1.0}}, [("classification", "precision", 1.0, None)]),
        ({"stuck": {}}, []),  # nothing recorded, nothing checked
    ],
)
def test_below_baseline(recorded, expected) -> None:
    scores = [Score("stuck", 3, 1, 3), Score("classification", 0, 0, 2)]
    drops = below_baseline(scores, recorded)
    assert [(d.detector, d.figure, d.recorded, d.measured) for d in drops] == expected


def test_baseline_figures_leave_undefined_ones_out() -> None:
    figures = baseline_figures([Score("stuck", 2, 1, 0), Score("classification", 0, 0, 2)])
    assert figures == {
        "stuck": {"precision": 0.66, "recall": 1.0},
        "classification": {"recall": 0.0},
    }


# ----------------------------------------------------------------------------- the corpus


def test_the_corpus_holds_its_baseline(run_line) -> None:
    """The CI gate: `selfcorrect replay tests/replay --baseline tests/replay/baseline.yaml`."""
    result = run_line(["replay", CORPUS, "--baseline", BASELINE])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "every recorded figure holds" in result.stdout
    assert len(find_cases(CORPUS)) >= 8


def test_the_corpus_has_the_real_session_and_the_example(run_line) -> None:
    cases = {case.relative_to(CORPUS).as_posix() for case in find_cases(CORPUS)}
    assert {"cagents-session/workflow", "example-workflow"} <= cases
    # The session case is the one session fixture every other test reads, and the example case
    # is the shipped example as it is today: a label can never be scored against a stale copy.
    assert SESSION == CORPUS / "cagents-session"
    example = tracked_example()
    copied = {p.name for p in (CORPUS / "example-workflow").glob("*.yaml")} - {"expected.yaml"}
    assert sorted(example) == sorted(copied)
    for name, content in example.items():
        assert (CORPUS / "example-workflow" / name).read_bytes() == content


def test_a_flipped_label_fails_the_gate_and_names_the_detector(tmp_path: Path, run_line) -> None:
    corpus = tmp_path / "replay"
    shutil.copytree(CORPUS, corpus)
    labels = corpus / "external-dependency" / "expected.yaml"
    text = labels.read_text(encoding="utf-8")
    flipped = text.replace("failure_type: syntax_error  ", "failure_type: runtime_error ")
    assert flipped != text
    labels.write_text(flipped, encoding="utf-8")

    result = run_line(["replay", corpus, "--baseline", corpus / "baseline.yaml"])

    assert result.exit_code == 1
    drops = result.stdout.split("Below baseline")[1].splitlines()[1:]
    # The decided type was right, the label now says otherwise: exactly these two dropped.
    assert [line.split(":", 2)[:2] for line in drops] == [
        ["  failure_type", "runtime_error recall"],
        ["  failure_type", "syntax_error precision"],
    ]
    assert all(line.endswith(", recorded 1.00") for line in drops)


def test_a_bad_label_file_exits_2_with_its_position(tmp_path: Path, run_line) -> None:
    case = tmp_path / "case"
    case.mkdir()
    (case / "expected.yaml").write_text(
        "subjects:\n  WI-3:\n    stuck: true\n    signals: [edit_loop, edit_loops]\n"
    )
    result = run_line(["replay", tmp_path])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "expected.yaml:4:26: subjects.WI-3.signals[1]: must be one of" in result.stderr


def test_a_bad_baseline_exits_2_with_its_position(tmp_path: Path, run_line) -> None:
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text("detectors:\n  stuck: {precision: 84}\n")
    result = run_line(["replay", CORPUS / "edit-loop", "--baseline", baseline])
    assert result.exit_code == 2
    assert "baseline.yaml:2:22: detectors.stuck.precision: 84 is out of range" in result.stderr


@pytest.mark.parametrize("case", ["example-workflow", "cagents-session"])
def test_replay_changes_no_byte_of_the_folder(tmp_path: Path, run_line, case: str) -> None:
    root = tmp_path / case
    shutil.copytree(CORPUS / case, root)
    folder = root / "workflow" if case == "cagents-session" else root
    # A real run first, so the folder has a journal, recovery prompts and escalations.
    assert run_line(["run", folder]).exit_code in (1, 3)
    assert (folder / ".selfcorrect" / "journal.jsonl").stat().st_size > 0
    files = tree_digest(root)
    entries = sorted(str(p.relative_to(root)) for p in root.rglob("*"))

    result = run_line(["replay", folder, "-v"])

    assert result.exit_code == 0, result.stderr
    assert tree_digest(root) == files
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == entries


def test_json_output_has_stable_keys(tmp_path: Path, run_line) -> None:
    case = tmp_path / "dialect-b-report"
    shutil.copytree(CORPUS / "dialect-b-report", case)
    labels = case / "expected.yaml"
    # A wrong label, so that the case has a mismatch to show and an undefined precision.
    labels.write_text(
        labels.read_text().replace(
            "type: unclassified           # a redesign", "type: vague_answers  # a redesign"
        )
    )
    result = run_line(["replay", case, "--format", "json", "--baseline", BASELINE])
    data = json.loads(result.stdout)
    assert set(data) == {"cases", "texts", "scores", "journals", "baseline"}
    (case,) = data["cases"]
    assert set(case) == {
        "path",
        "labelled",
        "description",
        "read",
        "failures",
        "verdict",
        "subjects",
        "issues",
        "stuck",
        "scores",
        "mismatches",
        "warnings",
    }
    assert set(case["issues"][0]) == {
        "fingerprint",
        "id",
        "type",
        "classification",
        "reason",
        "task",
    }
    assert {"kind", "name", "aspect", "labelled", "decided"} == set(case["mismatches"][0])
    scores = {s["detector"]: s for s in data["scores"]}
    assert scores["issue_type:vague_answers"] == {
        "detector": "issue_type:vague_answers",
        "tp": 0,
        "fp": 0,
        "fn": 1,
        "precision": None,  # undefined is null, never 1.0
        "recall": 0.0,
    }
    # One case is not the whole corpus: figures recorded for other detectors are undefined.
    assert data["baseline"]["ok"] is False
    assert set(data["baseline"]["drops"][0]) == {"detector", "figure", "recorded", "measured"}
    assert result.exit_code == 1


def test_verbose_shows_what_was_labelled_and_what_was_decided(tmp_path: Path, run_line) -> None:
    (tmp_path / "tool_failures.yaml").write_text(
        "failures:\n"
        "  - {tool: Bash, error: 'TypeError: x is undefined', timestamp: t, task_id: A}\n"
    )
    (tmp_path / "expected.yaml").write_text(
        "subjects:\n  A: {stuck: true, failure_type: timeout}\n"
    )
    result = run_line(["replay", tmp_path, "-v"])
    assert result.exit_code == 0
    assert "subject A: stuck labelled stuck, decided not stuck" in result.stdout
    assert "subject A: failure_type labelled timeout, decided runtime_error" in result.stdout
    assert "failure_type:timeout" in result.stdout.split("DETECTOR")[1]


def test_an_unlabelled_folder_shows_decisions_escaped(tmp_path: Path, run_line) -> None:
    (tmp_path / "tool_failures.yaml").write_text(
        "failures:\n"
        + '  - {tool: Edit, error: boom, timestamp: t, file_path: "src/\\e[31mred.ts"}\n' * 3
    )
    result = run_line(["replay", tmp_path])
    assert result.exit_code == 0
    assert "(no labels)" in result.stdout
    assert "subject src/\\x1b[31mred.ts: unknown, recovering" in result.stdout  # stuck: ladder
    assert "\x1b" not in result.stdout
    assert "nothing to score" in result.stdout


def test_the_folder_policy_applies_unless_policy_is_given(tmp_path: Path, run_line) -> None:
    case = CORPUS / "circular-delegation"
    own = json.loads(run_line(["replay", case, "--format", "json"]).stdout)
    empty = tmp_path / "selfcorrect.yaml"
    empty.write_text("{}\n")
    other = json.loads(run_line(["replay", case, "--format", "json", "--policy", empty]).stdout)
    assert [i["type"] for i in own["cases"][0]["issues"] if i["id"] == "V-3"] == ["flaky_test"]
    assert [i["type"] for i in other["cases"][0]["issues"] if i["id"] == "V-3"] == ["unclassified"]


def test_cases_are_found_one_and_two_levels_deep(tmp_path: Path) -> None:
    for relative in ("a", "b/c", "d/e/f"):
        (tmp_path / relative).mkdir(parents=True)
        (tmp_path / relative / "expected.yaml").write_text("{}\n")
    assert find_cases(tmp_path) == [tmp_path / "a", tmp_path / "b" / "c"]
    assert find_cases(tmp_path / "a") == [tmp_path / "a"]
    assert find_cases(tmp_path / "d") == [tmp_path / "d" / "e" / "f"]
    (tmp_path / "empty").mkdir()
    assert find_cases(tmp_path / "empty") == [tmp_path / "empty"]  # replayed, unlabelled


def test_a_journal_is_counted_per_rule_version(tmp_path: Path, run_line) -> None:
    folder = tmp_path / "wf"
    shutil.copytree(CORPUS / "example-workflow", folder)
    assert run_line(["run", folder]).exit_code in (1, 3)
    copied = tmp_path / "ci-artifact.jsonl"
    copied.write_bytes((folder / ".selfcorrect" / "journal.jsonl").read_bytes() + b'{"torn')

    for path in (folder / ".selfcorrect" / "journal.jsonl", copied):
        result = run_line(["replay", path, "--format", "json"])
        assert result.exit_code == 0
        (found,) = json.loads(result.stdout)["journals"]
        rules = {r["rule"]: r for r in found["rules"]}
        # (the report's issues belong to WI-3 and WI-4, which the log stops first: no hand-out)
        assert rules["failure_type:external_dependency"]["detections"] == 1
        assert rules["failure_type:runtime_error"]["detections"] == 1
    assert "ci-artifact.jsonl:" in result.stderr and "unreadable journal line" in result.stderr


def test_a_path_that_is_neither_folder_nor_journal_exits_2(tmp_path: Path, run_line) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    result = run_line(["replay", other])
    assert result.exit_code == 2
    assert "notes.txt:1:1: not a workflow folder" in result.stderr
    assert run_line(["replay"]).exit_code == 2  # PATH is required
    assert run_line(["replay", tmp_path / "missing"]).exit_code == 2


# ------------------------------------------------------------------ labelled real failure texts

TEXTS = """\
description: three texts
texts:
  - text: "  File \\"a.py\\", line 3\\nSyntaxError: invalid syntax"
    type: syntax_error
    source: owner/repo#1
  - text: "Error: the frobnicator gave up"
    type: runtime_error
    source: owner/repo#2
  - text: "TypeError: x is not a function"
    type: external_dependency
    source: owner/repo#3
  - text: "ETIMEDOUT while reading the socket"
    type: external_dependency
    also: [timeout]
    source: owner/repo#4
"""


def test_labelled_texts_are_typed_right_untyped_or_wrong(tmp_path: Path, run_line) -> None:
    corpus = tmp_path / "texts"
    corpus.mkdir()
    (corpus / "real.texts.yaml").write_text(TEXTS, encoding="utf-8")

    data = json.loads(run_line(["replay", tmp_path, "--format", "json"]).stdout)

    # Only the text file: the folder holding it is not also replayed as a workflow folder.
    assert data["cases"] == []
    (texts,) = data["texts"]
    assert (texts["texts"], texts["right"], texts["untyped"], texts["wrong"]) == (4, 2, 1, 1)
    assert [(m["name"], m["labelled"], m["decided"]) for m in texts["misses"]] == [
        ("#2 (owner/repo#2)", "runtime_error", "unknown"),
        ("#3 (owner/repo#3)", "external_dependency", "runtime_error"),
    ]
    (typing,) = [s for s in data["scores"] if s["detector"] == "typing"]
    assert (typing["tp"], typing["fp"], typing["fn"]) == (2, 1, 2)
    assert typing["precision"] == 2 / 3 and typing["recall"] == 0.5


def test_a_wrong_type_fails_the_typing_baseline(tmp_path: Path, run_line) -> None:
    texts = tmp_path / "real.texts.yaml"
    texts.write_text(TEXTS, encoding="utf-8")
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text("detectors:\n  typing: {precision: 1.00, recall: 0.25}\n")

    result = run_line(["replay", texts, "--baseline", baseline, "-v"])

    assert result.exit_code == 1
    assert "real.texts.yaml  4 texts typed: 2 right, 1 untyped, 1 wrong" in result.stdout
    assert "#3 (owner/repo#3): labelled external_dependency, decided runtime_error" in result.stdout
    assert "  typing precision: 0.66, recorded 1.00" in result.stdout


def test_a_bad_text_label_exits_2_with_its_position(tmp_path: Path, run_line) -> None:
    texts = tmp_path / "real.texts.yaml"
    texts.write_text(TEXTS.replace("type: syntax_error", "type: syntax"), encoding="utf-8")
    result = run_line(["replay", texts])
    assert result.exit_code == 2
    assert "real.texts.yaml:4:11: texts[0].type: must be one of" in result.stderr
