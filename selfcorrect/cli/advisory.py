"""The stuck advisories on a terminal: the hook-shaped blocks, coloured (docs/rules.md §8).

What each block says is decided in core/advisories.py from the run's work-item decisions; here
they are shown. A block is shown for a new detection only (one the journal does not hold yet:
a first detection, a new ladder round, a new block), at most MAX_BLOCKS of them; `-v` shows
every stuck subject. `--format json` carries every firing as `advisories`, with `new`.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from selfcorrect.cli.words import count
from selfcorrect.core.advisories import Advisory, block_lines

MAX_BLOCKS = 10  # a 100,000-entry log once printed 47 blocks, 720 lines


def advisory_lines(
    found: Sequence[Advisory], folder: str, *, verbose: bool = False, shadow: bool = False
) -> list[str]:
    """One hook-shaped block per stuck subject (new detections only unless `verbose`, at most
    MAX_BLOCKS unless `verbose`); agent text is escaped, paths are the folder's. Under
    `shadow` nothing was written, so the paths are named as what a run would write."""
    subjects: dict[str, list[Advisory]] = {}
    for advisory in found:
        subjects.setdefault(advisory.subject, []).append(advisory)
    shown = [group for group in subjects.values() if verbose or any(a.new for a in group)]
    seen = len(subjects) - len(shown)
    more = 0 if verbose else max(0, len(shown) - MAX_BLOCKS)
    lines: list[str] = []
    for group in shown[: len(shown) - more]:
        lines += block_lines(group, folder, click.style, shadow=shadow)
    notes = []
    if more:
        notes.append(f"{count(more, 'more stuck subject')} detected now: see the table above")
    if seen:
        notes.append(f"{count(seen, 'stuck subject')} already reported by an earlier run")
    if notes:
        lines.append("  (" + "; ".join(notes) + "; -v shows every one)")
    return lines
