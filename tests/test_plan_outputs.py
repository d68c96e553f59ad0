"""What a plan writes, byte for byte: escalations.yaml and the journal (docs/architecture.md).

The plan holds typed values (escalations, journal records) and only io/ turns them into the
file's entries. These runs cover every kind of escalation a planner builds (a subject at ladder
step 6 with its stack traces, an issue with its fingerprint, a task with its checkpoint, a
circuit with the fixes that opened it) under a fixed clock, and compare the files and the JSON
object's escalations with those the code wrote before the plan was typed
(tests/plan_outputs/): not with what the code writes now.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from selfcorrect.cli.run_report import run_json
from selfcorrect.commands.run import RunOutcome, correction_run
from selfcorrect.core.journal_records import FailedItemsEvent, Stamped, SubjectEvent
from selfcorrect.core.outputs import Escalation
from tests.helpers import edits, fixable_report, folder_with, git, project
from tests.test_circuits import STRAY_FIXER, VALIDATOR, Clock
from tests.test_tool_failure_ladder import TASKS

EXPECTED = Path(__file__).resolve().parent / "plan_outputs"


def _runs(folder: Path, clock: Clock, count: int, **options: Any) -> RunOutcome:
    outcome = None
    for _ in range(count):
        outcome = correction_run(folder, clock=clock, **options)
        clock.now += timedelta(minutes=1)
    assert outcome is not None
    return outcome


def _failure(error: str, minute: int) -> dict[str, Any]:
    return {
        "tool": "Edit",
        "error": error,
        "timestamp": f"2026-11-29T10:{minute:02d}:00Z",
        "task_id": "WI-1",
    }


def ladder(tmp_path: Path) -> tuple[Path, RunOutcome]:
    """A runtime error climbs steps 1 to 5, then step 6 pages a person with its stack traces."""
    folder = tmp_path / "workflow"
    folder.mkdir(parents=True)
    (folder / "coordination_log.yaml").write_text(TASKS)
    kinds = [
        f"{name}: {n}\n    at refresh (src/auth/refresh.ts:{n}:7)\n    at main (src/index.ts:3:1)"
        for n, name in enumerate(["TypeError", "ReferenceError", "RangeError", "TypeError"], 1)
    ]
    errors = [_failure(kinds[n % 4], n) for n in range(3)]
    log = folder / "tool_failures.yaml"
    clock = Clock()
    outcome = None
    for minute in range(3, 12):
        log.write_text(yaml.safe_dump({"failures": errors}, sort_keys=False))
        outcome = _runs(folder, clock, 1)
        if (folder / "escalations.yaml").exists():
            break
        errors.append(_failure(kinds[minute % 4], minute))
    assert outcome is not None and outcome.plan.escalations
    return folder, outcome


def unfinished(tmp_path: Path) -> tuple[Path, RunOutcome]:
    """25 pending items: past max_microtasks, the task is escalated with its checkpoint."""
    folder = folder_with(tmp_path, edits(25))
    return folder, _runs(folder, Clock(), 2)


def drift(tmp_path: Path) -> tuple[Path, RunOutcome]:
    """Low-confidence classifications open a circuit; its issues are blocked (CIRCUIT_OPEN)."""
    folder = tmp_path / "workflow"
    folder.mkdir()
    (folder / "selfcorrect.yaml").write_text(
        "issue_types:\n  missing_documentation:\n    patterns:\n"
        "      - {regex: 'could use (more )?words', confidence: 0.5}\n"
    )
    parts = ("the intro", "the API section", "the glossary", "the FAQ", "the changelog")
    fixable_report(
        folder,
        *(
            {"id": f"P{n}", "severity": "MINOR", "description": f"{part} could use more words"}
            for n, part in enumerate(parts)
        ),
    )
    return folder, _runs(folder, Clock(), 2)


LINT_POLICY = f"""
issue_types:
  linting_errors:
    version: v1  # its hash would hold the interpreter's path: the ids would differ by machine
    retries: 1
    fix:
      command: [{sys.executable}, fixer.py, "{{target}}"]
"""


def failed_fixes(tmp_path: Path) -> tuple[Path, RunOutcome]:
    """Two fixes fail verification: both issues are blocked (FIX_FAILED), the rule's circuit
    opens with them as its evidence, and the third fix is refused (CIRCUIT_OPEN)."""
    repo = project(tmp_path, VALIDATOR, LINT_POLICY)
    for name in ("a.py", "b.py", "c.py"):
        (repo / name).write_text("import os\n")
    (repo / "lint.txt").write_text("a.py b.py c.py")
    (repo / "fixer.py").write_text(STRAY_FIXER)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "lint")
    folder = repo / "workflow"
    return folder, _runs(folder, Clock(), 2, validate_first=True)


SCENARIOS: dict[str, Callable[[Path], tuple[Path, RunOutcome]]] = {
    "ladder": ladder,
    "unfinished": unfinished,
    "drift": drift,
    "failed_fixes": failed_fixes,
}


def _stable(text: str, tmp_path: Path, runs: list[str]) -> str:
    """The text with what differs between machines and runs named: the temporary folder, the
    interpreter, each run's random trace id (and the attempt keys made from it), which write of
    the report a run made (inode and mtime), and digests of commands that hold those paths."""
    text = text.replace(str(tmp_path), "<tmp>").replace(sys.executable, "<python>")
    for number, run in enumerate(runs):
        text = text.replace(run, f"<run {number}>")
    text = re.sub(r'"report_stamp": "\d+:\d+(?::\d+)?"', '"report_stamp": "<inode:mtime>"', text)
    text = re.sub(r'"attempt_key": "[0-9a-f]{16}"', '"attempt_key": "<trace|fix>"', text)
    return re.sub(r'"digest": "[0-9a-f]{16,}"', '"digest": "<digest>"', text)


def outputs(folder: Path, outcome: RunOutcome, tmp_path: Path) -> dict[str, str]:
    """escalations.yaml, the journal, and the JSON object's escalations, made comparable."""
    journal = (folder / ".selfcorrect" / "journal.jsonl").read_text(encoding="utf-8")
    runs = list(dict.fromkeys(json.loads(line).get("run", "") for line in journal.splitlines()))
    runs = [run for run in runs if re.fullmatch(r"[0-9a-f]{12}", run)]
    shown = json.dumps(run_json(outcome)["escalations"], indent=1, ensure_ascii=False) + "\n"
    return {
        "escalations.yaml": _stable((folder / "escalations.yaml").read_text(), tmp_path, runs),
        "journal.jsonl": _stable(journal, tmp_path, runs),
        "run.json": _stable(shown, tmp_path, runs),
    }


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_files_a_plan_writes_are_those_written_before_it_was_typed(
    name: str, tmp_path: Path
) -> None:
    folder, outcome = SCENARIOS[name](tmp_path)
    for file, text in outputs(folder, outcome, tmp_path).items():
        expected = (EXPECTED / name / file).read_text(encoding="utf-8")
        assert text == expected, f"{name}/{file} differs"


def test_the_scenarios_cover_every_kind_of_escalation_and_its_extra_fields() -> None:
    """The fixtures hold what they claim: each kind, a fingerprint, a ladder step, stack traces,
    a checkpoint beyond the run's own, and a circuit's failed fixes."""
    entries = [
        entry
        for name in SCENARIOS
        for entry in yaml.safe_load((EXPECTED / name / "escalations.yaml").read_text())[
            "escalations"
        ]
    ]
    assert {e["kind"] for e in entries} == {"subject", "issue", "task", "circuit"}
    assert any(e.get("stack_traces") for e in entries)
    assert any(e.get("ladder_step") == 6 for e in entries)
    assert any(e.get("fingerprint") for e in entries)
    assert any(e["kind"] == "task" and e["checkpoints"] for e in entries)
    assert any(e["kind"] == "circuit" and e["attempts"] >= 2 for e in entries)


def test_a_plans_escalations_are_typed_and_frozen(tmp_path: Path) -> None:
    """Built whole by their planner (no entry is changed after it was made), and read only."""
    _folder, outcome = failed_fixes(tmp_path)
    plan = outcome.plan
    assert plan.escalations and all(isinstance(e, Escalation) for e in plan.escalations)
    escalation = plan.escalations[0]
    with pytest.raises(AttributeError):
        escalation.reason = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        escalation.files[0] = "changed"  # type: ignore[index]
    with pytest.raises(AttributeError):
        plan.escalations.append(escalation)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        plan.escalations = ()  # type: ignore[misc]


def test_a_plans_journal_holds_typed_frozen_records(tmp_path: Path) -> None:
    """Records as their classes until io/journal.py writes them; the folds read them as they
    are (core/journal_records.typed)."""
    _folder, outcome = ladder(tmp_path)
    journal = outcome.plan.journal
    assert [type(r) for r in journal] == [SubjectEvent, FailedItemsEvent]
    assert all(isinstance(r, Stamped) and r.run and r.at for r in journal)
    with pytest.raises(AttributeError):
        journal[0].at = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        journal.append(journal[0])  # type: ignore[attr-defined]


def regenerate(root: Path) -> None:  # pragma: no cover - run by hand, never by the suite
    """Write tests/plan_outputs/ again. Only for a deliberate change of a file's format."""
    for name, scenario in SCENARIOS.items():
        tmp = root / name
        tmp.mkdir(parents=True)
        folder, outcome = scenario(tmp)
        (EXPECTED / name).mkdir(parents=True, exist_ok=True)
        for file, text in outputs(folder, outcome, tmp).items():
            (EXPECTED / name / file).write_text(text, encoding="utf-8")
