"""The figures of a run that reads on from the saved fold (docs/rules.md §18):

- rerun_appended: `selfcorrect run --shadow DIR` after 10 entries were appended to an N-entry
  log whose fold an earlier `selfcorrect run DIR` saved, against the first full
  `run --shadow` of the same folder (no saved fold): target at most 0.1x;
- rerun_unchanged: the same command when nothing was appended since the saved fold.

Every command is the console script as users run it, process start to exit. The first full
run is the anchor, measured in the same bench run on the same log.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import generate

RUNS = 3  # each figure is the median of this many runs


def rerun_times(
    workdir: Path, entries: int, me: Sequence[str], wall: Callable[..., float]
) -> tuple[float, float, float]:
    """(appended seconds, unchanged seconds, anchor seconds): medians of RUNS runs."""
    folder = workdir / "rerun"
    folder.mkdir()
    log = folder / "tool_failures.yaml"
    generate.write_canonical(log, entries)
    shadow = [*me, "run", "--shadow", str(folder)]
    anchor = statistics.median(wall(shadow, ok=(0, 1, 3)) for _ in range(RUNS))
    wall([*me, "run", str(folder)], ok=(0, 1, 3))  # saves .selfcorrect/log_cache.json
    appended, unchanged = [], []
    extra = list(generate.entries(entries + 10 * RUNS, seed=1))[entries:]
    for number in range(RUNS):
        unchanged.append(wall(shadow, ok=(0, 1, 3)))
        with log.open("a", encoding="utf-8") as handle:
            for entry in extra[number * 10 : number * 10 + 10]:
                handle.write(generate.canonical_entry(entry))
        start = time.perf_counter()
        wall(shadow, ok=(0, 1, 3))
        appended.append(time.perf_counter() - start)
        wall([*me, "run", str(folder)], ok=(0, 1, 3))  # the next round reads on from here
    shutil.rmtree(folder, ignore_errors=True)
    return statistics.median(appended), statistics.median(unchanged), anchor
