"""Every schema against its positive and negative example files (tests/examples/<stem>/).

A negative file's first line says where the diagnostic must point and what it must say:
`# expect: LINE:COL SUBSTRING`, or `# expect: LINE:COL warning: SUBSTRING` for a problem that
is reported and read past (a hook log's bad entry, a duplicate key in a report).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents
from tests.conftest import EXAMPLES

HOOK_LOGS = {"tool_failures", "waypoint"}
EXPECT = re.compile(r"^# expect: (\d+):(\d+) (.+)$")


def examples(kind: str) -> list[Path]:
    return sorted(EXAMPLES.glob(f"*/{kind}/*.yaml"))


def diagnostics_for(path: Path, stem: str) -> list[Diagnostic]:
    warnings: list[Diagnostic] = []
    try:
        if stem == "tool_failures":
            list(documents.read_failure_log(path, warnings))
        elif stem == "waypoint":
            documents.load_waypoint(path, warnings)
        else:
            warnings.extend(documents.load_decision(path, stem).warnings)
    except InputError as exc:
        return exc.diagnostics
    return warnings


def test_there_are_examples_for_every_input_schema() -> None:
    stems = {p.parent.parent.name for p in examples("positive")} & {
        p.parent.parent.name for p in examples("negative")
    }
    assert stems >= {
        "tool_failures",
        "validation_report",
        "coordination_log",
        "waypoint",
        "escalations",
        "microtasks",
    }


@pytest.mark.parametrize(
    "path", examples("positive"), ids=lambda p: f"{p.parent.parent.name}/{p.name}"
)
def test_positive_example_is_accepted(path: Path) -> None:
    assert diagnostics_for(path, path.parent.parent.name) == []


@pytest.mark.parametrize(
    "path", examples("negative"), ids=lambda p: f"{p.parent.parent.name}/{p.name}"
)
def test_negative_example_is_reported_at_its_exact_position(path: Path, tmp_path: Path) -> None:
    stem = path.parent.parent.name
    match = EXPECT.match(path.read_text(encoding="utf-8", errors="replace").splitlines()[0])
    assert match, f"{path} must start with '# expect: LINE:COL SUBSTRING'"
    line, col, fragment = int(match[1]), int(match[2]), match[3]
    warned = fragment.startswith("warning: ")
    fragment = fragment.removeprefix("warning: ")
    copy = tmp_path / path.name  # hook-dialect files are read by their header, keep bytes
    shutil.copyfile(path, copy)

    found = diagnostics_for(copy, stem)

    assert found, f"{path.name}: no diagnostic at all"
    assert [(d.line, d.col) for d in found][:1] == [(line, col)], [str(d) for d in found]
    assert fragment in found[0].message
    expected_severity = "warning" if stem in HOOK_LOGS or warned else "error"
    assert found[0].severity == expected_severity
