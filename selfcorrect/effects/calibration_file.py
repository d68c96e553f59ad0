"""`DIR/calibration.yaml`: the learned strategy outcomes, written from the journal (rules §13).

The journal is the source of truth; this file is its readable summary for people and for tools
that want the figures without folding the journal (`core.calibration` computes them). It is a
pure function of the journal, carries no timestamp, and is replaced only when its bytes change,
so a rerun over unchanged inputs writes nothing, and a watcher never sees a write of ours that
says nothing new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec.structs import asdict

from selfcorrect import layout
from selfcorrect.core.calibration import CalibrationRow, calibrate
from selfcorrect.core.journal_records import Stamped
from selfcorrect.io import atomic, documents

COMMENT = (
    "Learned strategy outcomes (docs/rules.md §13): per failure type or issue type and per\n"
    "strategy or ladder step, the attempts handed out and the verified recoveries that followed.\n"
    "selfcorrect writes this file from .selfcorrect/journal.jsonl; edits here are overwritten."
)


def calibration_path(folder: Path) -> Path:
    return folder / layout.CALIBRATION


def render_calibration(rows: Sequence[CalibrationRow], record_count: int) -> bytes:
    return documents.render_owned(
        "calibration",
        COMMENT,
        {"calibration": [asdict(row) for row in rows], "updated_from": record_count},
    )


def write_calibration(folder: Path, records: Sequence[Stamped | Mapping[str, Any]]) -> bool:
    """Write calibration.yaml from every journal record (in order), typed (a plan's) or as
    read. True if the file changed.

    Nothing is written while nothing has been handed out (no rows): an untouched folder gains
    no file.
    """
    rows = calibrate(records)
    if not rows:
        return False
    return atomic.replace_file(calibration_path(folder), render_calibration(rows, len(records)))
