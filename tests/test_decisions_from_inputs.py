"""The core decides from `Inputs` alone: load once, then no file, process or clock is touched.

The shipped example and the real cAgents session are loaded into `Inputs`; the project's
files are put behind a dict-backed `ProjectView`; then every way to reach the disk or start a
process fails the test, and `decide` and `build_plan` must still give what a run gives.
"""

from __future__ import annotations

import builtins
import io
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from selfcorrect.core.decisions import Decisions, decide
from selfcorrect.core.inputs import Inputs, ProjectView
from selfcorrect.core.plan import build_plan
from selfcorrect.io.documents import load_trusted
from selfcorrect.io.workflow_inputs import load_inputs
from tests.conftest import CORPUS, copy_example, copy_session

NOW = "2026-12-01T12:00:00Z"


class TouchedTheDisk(AssertionError):
    pass


@contextmanager
def no_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every file open, stat, listing and process start raises, for the block's duration."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise TouchedTheDisk(f"the core reached for the disk: {args[:1]}")

    with monkeypatch.context() as patch:
        for module, name in (
            (builtins, "open"),
            (io, "open"),
            (os, "open"),
            (os, "stat"),
            (os, "lstat"),
            (os, "scandir"),
            (os, "listdir"),
            (subprocess, "Popen"),
        ):
            patch.setattr(module, name, refuse)
        yield


def offline(inputs: Inputs, root: Path) -> Inputs:
    """The same inputs with the project answered from memory, as a test would build them."""
    files = {
        str(p.relative_to(root)): p.read_text(errors="replace")
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }
    folders = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()}
    return replace(
        inputs,
        project=ProjectView(
            exists=lambda rel: rel in files or rel in folders,
            size_of=lambda rel: len(files[rel]) if rel in files else None,
            place=lambda path: path if not os.path.isabs(path) and ".." not in path else None,
        ),
    )


def decided(inputs: Inputs) -> Decisions:
    return decide(inputs, now=NOW, run_id="test", installed=lambda _program: True)


def summary(decisions: Decisions) -> dict[str, Any]:
    plan = build_plan(decisions)
    return {
        "subjects": {d.subject: (d.failure_type, d.status.value) for d in decisions.subjects},
        "issues": {
            d.fingerprint: (d.classification.value, d.reason.value) for d in decisions.issues
        },
        "items": {w: i.status.value for w, i in plan.work_items.items()},
        "failed_items": [e["task_id"] for e in plan.failed_items],
        "escalations": sorted(e.id for e in plan.escalations),
        "result": plan.result.value,
    }


def test_the_shipped_example_is_decided_without_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "workflow"
    copy_example(folder)
    inputs = offline(load_inputs(folder), tmp_path)
    with_disk = summary(decided(inputs))

    with no_disk(monkeypatch):
        decisions = decided(inputs)
        without = summary(decisions)

    assert without == with_disk
    assert without["subjects"]["WI-3"] == ("runtime_error", "blocked")
    assert without["subjects"]["WI-4"] == ("external_dependency", "skipped")
    assert without["items"] == {"WI-3": "blocked", "WI-4": "skipped"}
    assert without["result"] == "BLOCKED"
    assert len(without["issues"]) == 4
    with pytest.raises(TouchedTheDisk), no_disk(monkeypatch):  # the guard itself works
        Path(folder / "selfcorrect.yaml").read_bytes()


def test_the_cagents_session_is_decided_without_the_disk_as_its_labels_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_session(tmp_path / "session")
    folder = tmp_path / "session" / "workflow"
    inputs = offline(load_inputs(folder), tmp_path / "session")
    with_disk = summary(decided(inputs))

    with no_disk(monkeypatch):
        without = summary(decided(inputs))

    assert without == with_disk
    labels = load_trusted(CORPUS / "workflow" / "expected.yaml")["subjects"]
    for subject, label in labels.items():
        if "status" in label and subject in without["subjects"]:
            assert without["subjects"][subject][1] == label["status"], subject
    assert {s for s in labels if s in without["subjects"]}  # the labels name real subjects
