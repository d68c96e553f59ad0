"""The figures of a run that reads on from the saved fold (docs/rules.md §18), on each form of
the log (canonical, and the hook's dialect):

- rerun_appended[_dialect]: `selfcorrect run --shadow DIR` after 10 entries were appended (in
  the log's own form, as a writer of that form appends them) to an N-entry log whose fold an
  earlier `selfcorrect run DIR` saved;
- rerun_unchanged[_dialect]: the same command when nothing was appended since the saved fold.

The target of every rerun row is the larger of two allowances: 0.1x of the first full
`run --shadow` of that log (no saved fold), or 1.5x of `run --shadow` on a 10-entry log of the
same form (a run's own fixed cost: start-up, policy, rendering, which no fold saves). Both are
measured here, medians of RUNS runs interleaved with ours; the row's anchor is the one whose
allowance is larger, and its target that allowance's ratio (`Allowance`).

Every command is the console script as users run it, process start to exit.
"""

from __future__ import annotations

import shutil
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import generate

RUNS = 3  # each figure is the median of this many runs
APPENDED = 10  # entries appended before each `rerun_appended` run
FULL_SHARE = 0.1  # the rerun may cost this share of the first full run ...
SMALL_SHARE = 1.5  # ... or this multiple of a run on a SMALL-entry log, whichever is larger
SMALL = 10
FORMS = ("canonical", "dialect")
OK = (0, 1, 3)  # `run` exits 1 or 3 on these logs: blocked or pending work


@dataclass(frozen=True)
class Allowance:
    """The rerun target that applies: the anchor measured, and the ratio allowed of it."""

    anchor: float  # seconds of the run the allowance is a share of
    target: float  # the ratio allowed
    note: str  # which allowance applied, and the other one, for the table

    @classmethod
    def larger(cls, full: float, small: float) -> Allowance:
        """0.1x the full run or 1.5x the 10-entry run, whichever allows more."""
        by_full, by_small = FULL_SHARE * full, SMALL_SHARE * small
        if by_full >= by_small:
            note = (
                f"anchor: full run; {FULL_SHARE:g}x of it ({by_full:.3f} s) >= "
                f"{SMALL_SHARE:g}x the {SMALL}-entry run ({by_small:.3f} s)"
            )
            return cls(full, FULL_SHARE, note)
        note = (
            f"anchor: {SMALL}-entry run; {SMALL_SHARE:g}x of it ({by_small:.3f} s) > "
            f"{FULL_SHARE:g}x the full run ({by_full:.3f} s)"
        )
        return cls(small, SMALL_SHARE, note)


def _writers(form: str) -> tuple[Callable[[Path, int], Path], Callable[[generate.Entry], str]]:
    """The log writer of `form`, and how one more entry is appended in that form."""
    if form == "canonical":
        return generate.write_canonical, generate.canonical_entry
    if form == "dialect":

        def dialect(e: generate.Entry) -> str:  # as the hook appends it
            return generate.dialect_entry(
                e.tool, e.file_path, e.error, e.timestamp, e.agent_id, e.recoverable
            )

        return generate.write_dialect, dialect
    raise ValueError(f"unknown form {form!r}; use one of {', '.join(FORMS)}")


def rerun_times(
    workdir: Path,
    entries: int,
    me: Sequence[str],
    wall: Callable[..., float],
    form: str = "canonical",
    runs: int = RUNS,
) -> dict[str, float]:
    """Medians of `runs` runs, in seconds: `appended` and `unchanged` (ours), `full` (the first
    full `run --shadow` of the same N-entry log, no saved fold) and `small` (`run --shadow` on
    a SMALL-entry log of the same form), the four interleaved round by round."""
    write, append = _writers(form)
    folder = workdir / f"rerun-{form}"
    full_folder = workdir / f"rerun-{form}-full"  # the same log, never a saved fold
    small_folder = workdir / f"rerun-{form}-small"
    for place in (folder, full_folder, small_folder):
        place.mkdir()
    log = write(folder / "tool_failures.yaml", entries)
    shutil.copyfile(log, full_folder / "tool_failures.yaml")
    write(small_folder / "tool_failures.yaml", SMALL)
    shadow = [*me, "run", "--shadow", str(folder)]
    full_shadow = [*me, "run", "--shadow", str(full_folder)]
    small_shadow = [*me, "run", "--shadow", str(small_folder)]
    save = [*me, "run", str(folder)]  # writes .selfcorrect/log_cache.json: the saved fold
    wall(small_shadow, ok=OK)  # warm the page cache and the bytecode; not counted
    wall(save, ok=OK)
    if not (folder / ".selfcorrect" / "log_cache.json").is_file():
        raise SystemExit(f"bench: `selfcorrect run {folder}` saved no fold")
    extra = list(generate.entries(entries + APPENDED * runs, seed=1))[entries:]
    found: dict[str, list[float]] = {"full": [], "small": [], "unchanged": [], "appended": []}
    for number in range(runs):
        found["full"].append(wall(full_shadow, ok=OK))
        found["small"].append(wall(small_shadow, ok=OK))
        found["unchanged"].append(wall(shadow, ok=OK))
        with log.open("a", encoding="utf-8", newline="\n") as handle:
            for entry in extra[number * APPENDED : (number + 1) * APPENDED]:
                handle.write(append(entry))
        found["appended"].append(wall(shadow, ok=OK))
        wall(save, ok=OK)  # the next round reads on from here
    if (full_folder / ".selfcorrect").exists():
        raise SystemExit(f"bench: `run --shadow` wrote into {full_folder}: the anchor had a fold")
    _check(log, entries + APPENDED * runs)
    for place in (folder, full_folder, small_folder):
        shutil.rmtree(place, ignore_errors=True)
    return {key: statistics.median(values) for key, values in found.items()}


def _check(log: Path, expected: int) -> None:
    """The log the reruns read holds every appended entry, read back without a warning: the
    appends were in the form its reader takes, so the reruns read what they were meant to."""
    from selfcorrect.errors import Diagnostic
    from selfcorrect.io.documents import read_failure_log

    warnings: list[Diagnostic] = []
    count = sum(1 for _ in read_failure_log(log, warnings))
    if warnings or count != expected:
        said = f"; it warned: {warnings[0]}" if warnings else ""
        raise SystemExit(f"bench: {log} holds {count} entries, expected {expected}{said}")
