"""How `stats` shows the journal's figures: a table per rule version, or one JSON object.

`--format json` prints one stable object (keys never renamed; new keys may be added):
  rules            one object per (rule, rule_version), in the order the journal first shows
                   them: rule, rule_version ("" when no record named one), detections,
                   preflight_rejections, remediations, verified_recoveries, compensations,
                   circuit_opens, recurrences, false_positives (integers), and precision
                   (a number from 0 to 1, or null when no detection was marked a false positive);
                   definitions in core/stats.py
  calibration      one object per (type, strategy): type, strategy (a strategy name or
                   "ladder:N"), attempts, recoveries; what calibration.yaml holds
  journal_records  the number of readable journal records folded
Unreadable journal lines are warnings on stderr in every format.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click
from msgspec.structs import asdict

from selfcorrect.cli.options import Common
from selfcorrect.cli.run_report import table
from selfcorrect.cli.words import printable

if TYPE_CHECKING:
    from selfcorrect.commands.stats import StatsResult

HEADER = [
    "RULE",
    "VERSION",
    "DETECTED",
    "REJECTED",
    "REMEDIATED",
    "RECOVERED",
    "COMPENSATED",
    "CIRCUIT",
    "RECURRED",
    "PRECISION",
]


def stats_json(result: StatsResult) -> dict[str, Any]:
    return {
        "rules": [asdict(r) for r in result.rules],
        "calibration": [asdict(row) for row in result.calibration],
        "journal_records": result.journal_records,
    }


def show_stats(result: StatsResult, fmt: str, common: Common, journal: str) -> None:
    for warning in result.warnings:
        click.echo(printable(str(warning)), err=True)
    if fmt == "json":
        click.echo(json.dumps(stats_json(result), indent=2, ensure_ascii=False))
        return
    if not result.journal_records:
        click.echo(f"no journal yet ({journal} does not exist or holds no record)")
        return
    if not result.rules:
        click.echo(f"no rule decisions yet in {result.journal_records} journal records")
        return
    lines = [f"Per rule version, from {result.journal_records} journal records ({journal}):"]
    rows = [HEADER] + [
        [
            printable(r.rule),
            printable(r.rule_version) or "-",
            *(
                str(n)
                for n in (
                    r.detections,
                    r.preflight_rejections,
                    r.remediations,
                    r.verified_recoveries,
                    r.compensations,
                    r.circuit_opens,
                    r.recurrences,
                )
            ),
            "-" if r.precision is None else f"{r.precision:.2f}",
        ]
        for r in result.rules
    ]
    lines += table(rows, common)
    if result.calibration and common.verbosity >= 0:
        lines += ["", "Calibration: what each strategy or ladder step recovered:"]
        calibration = [["TYPE", "STRATEGY", "ATTEMPTS", "RECOVERED"]] + [
            [printable(c.type), printable(c.strategy), str(c.attempts), str(c.recoveries)]
            for c in result.calibration
        ]
        lines += table(calibration, common)
    click.echo("\n".join(lines), color=common.color)
