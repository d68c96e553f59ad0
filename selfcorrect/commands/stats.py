"""`selfcorrect stats DIR`: per-rule-version figures and calibration, read from the journal.

Reads `DIR/.selfcorrect/journal.jsonl` and nothing else: the policy is not needed (every record
names its rule and version), and nothing is written. The counting is `core.stats` and
`core.calibration`; a torn journal line is a warning kept in the result, never fatal.
"""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct, field

from selfcorrect.core.calibration import CalibrationRow, calibrate
from selfcorrect.core.stats import RuleStats, rule_stats
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents
from selfcorrect.io.journal import read_journal


class StatsResult(Struct, frozen=True):
    rules: list[RuleStats]
    calibration: list[CalibrationRow]
    journal_records: int  # readable records folded
    warnings: list[Diagnostic] = field(default_factory=list)


def folder_stats(folder: Path) -> StatsResult:
    """Fold DIR's journal; InputError (exit 2) when DIR is not a folder."""
    if not folder.is_dir():
        raise InputError(
            Diagnostic(
                documents.display_path(folder),
                1,
                1,
                "not a folder; pass the workflow folder (the one holding validation_report.yaml)",
            )
        )
    warnings: list[Diagnostic] = []
    records = read_journal(folder, warnings)
    return StatsResult(rule_stats(records), calibrate(records), len(records), warnings)
