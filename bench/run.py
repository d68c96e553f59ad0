"""The rules §18 benchmark: every figure as a ratio against an anchor measured in the same run.

Run `python -m bench` (or `python bench/run.py`) from the repository root; `--help` for options.
Each timed measurement runs in a fresh subprocess (bench/measure.py) so that garbage, caches and
memory peaks of one never skew another. See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

if __package__ in (None, ""):  # `python bench/run.py`: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import generate, hooks, rerun, watching

BENCH = Path(__file__).resolve().parent
MEASURE = BENCH / "measure.py"
MIN_STARTUP_RUNS = 10

# name -> (label, target as a ratio (docs/rules.md §18), informational only)
FIGURES: dict[str, tuple[str, float, bool]] = {
    "startup_version": ("start-up: selfcorrect --version", 2.0, False),
    "startup_check": ("start-up: selfcorrect check (small dir)", 2.0, False),
    "canonical_read": ("canonical read+check of N entries", 1.5, False),
    "dialect_read": ("dialect read+check of N entries", 0.25, False),
    "canonical_analysis": ("canonical full analysis of N entries", 1.5, False),
    "dialect_analysis": ("dialect full analysis of N entries", 0.25, False),
    "canonical_e2e": ("run --shadow, canonical, start to exit", 1.5, False),
    "dialect_e2e": ("run --shadow, dialect, start to exit", 0.25, False),
    "append_incremental": ("append 10 entries: N-entry vs 10-entry log", 2.0, False),
    "latency_p50": ("change → outputs written, p50 vs debounce", 3.0, True),
    "latency_p95": ("change → outputs written, p95 vs debounce", 3.0, False),
    "memory_canonical": ("peak memory, canonical (streamed)", 0.25, True),
    "memory_dialect": ("peak memory, dialect (streamed)", 0.25, True),
    "hook_gate_p95": ("hook gate (pre-tool-use), p95 vs python -c 'import json'", 2.0, False),
    "hook_failure": ("failure hook: N-entry vs 10-entry log", 3.0, False),
    "hook_success_p95": ("success hook (not listed), p95 vs python -c 'import json'", 2.0, False),
    "hook_failure_p95": (
        "failure hook, session, 10-entry log, p95 vs python -c 'import json'",
        3.0,  # through the warm answerer, every deciding hook within 3x (docs/rules.md §18)
        False,
    ),
    "hook_failure_cold_p95": (
        "failure hook, no session (in-process), p95 vs python -c 'import json'",
        6.0,  # without a session (the first half second, a host without session events)
        False,
    ),
    "hook_failure_burst": ("8 failure hooks at once: slowdown vs the machine's + 1", 1.0, False),
    "hook_success_logging_p95": (
        "success hook (open streak: logs), p95 vs python -c 'import json'",
        3.0,
        False,
    ),
    # The rerun rows' target is the larger of two allowances (bench/rerun.py, Allowance): the
    # ratio here is the first, 0.1x of the full run; each row carries the one that applied.
    "rerun_appended": ("rerun --shadow, canonical, 10 appended", rerun.FULL_SHARE, False),
    "rerun_unchanged": ("rerun --shadow, canonical, unchanged", rerun.FULL_SHARE, False),
    "rerun_appended_dialect": ("rerun --shadow, dialect, 10 appended", rerun.FULL_SHARE, False),
    "rerun_unchanged_dialect": ("rerun --shadow, dialect, unchanged", rerun.FULL_SHARE, False),
}


@dataclass
class Row:
    """One figure: our measurement, its anchor, and the ratio against its target."""

    name: str
    label: str
    ours: float
    anchor: float
    unit: str
    target: float
    informational: bool
    note: str = ""  # what the anchor and target are when the row's own rule picked them

    @property
    def ratio(self) -> float:
        if not self.anchor:
            # A peak too small to see (maxrss moves in KB; a tiny log never lifts it past the
            # imports' own peak): nothing measured on either side is a ratio of 0, not inf.
            return 0.0 if not self.ours else float("inf")
        return self.ours / self.anchor

    @property
    def met(self) -> bool:
        return self.ratio <= self.target

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "ratio": self.ratio, "met": self.met}


def _row(name: str, ours: float, anchor: float, unit: str) -> Row:
    label, target, informational = FIGURES[name]
    return Row(name, label, ours, anchor, unit, target, informational)


def _allowed_row(name: str, ours: float, allowance: rerun.Allowance) -> Row:
    """A row whose anchor and target are the allowance that applied (the rerun rows)."""
    label, _, informational = FIGURES[name]
    return Row(
        name, label, ours, allowance.anchor, "s", allowance.target, informational, allowance.note
    )


def _progress(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


# Start-up is measured as users meet it: pip byte-compiles what it installs, and an editable
# install writes its caches on the first run. A PYTHONDONTWRITEBYTECODE inherited from the
# shell would make every run of ours compile its sources while click's stay compiled.
_CACHED = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(command: Sequence[str], ok: Sequence[int] = (0,)) -> float:
    """Wall seconds of one subprocess, which must exit with a code in `ok`."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=_CACHED)
    seconds = time.perf_counter() - start
    if done.returncode not in ok:
        raise SystemExit(f"bench: {' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return seconds


def _selfcorrect() -> list[str]:
    """The command users type: the console script beside this interpreter."""
    script = Path(sys.executable).with_name("selfcorrect")
    return [str(script)] if script.exists() else [sys.executable, "-m", "selfcorrect"]


def _shadow_folder(workdir: Path, name: str, log: Path) -> Path:
    """A workflow folder holding only `log` as its failure log (a copy: inputs are files)."""
    folder = workdir / name
    folder.mkdir()
    shutil.copyfile(log, folder / "tool_failures.yaml")
    return folder


def shadow_seconds(folder: Path) -> dict[str, float]:
    """`selfcorrect run --shadow DIR` as users run it: process start to exit, rendering
    included (it exits 1 or 3 on these logs: blocked or pending work)."""
    return {"seconds": _wall([*_selfcorrect(), "run", "--shadow", str(folder)], ok=(0, 1, 3))}


def startup_rows(workdir: Path, runs: int) -> list[Row]:
    """Median wall time of the two start-up commands vs `python -c "import click"`."""
    folder = workdir / "small-workflow"
    me = _selfcorrect()
    _wall([*me, "init", str(folder)])
    commands = {
        "anchor": [sys.executable, "-c", "import click"],
        "startup_version": [*me, "--version"],
        "startup_check": [*me, "check", str(folder)],
    }
    times: dict[str, list[float]] = {key: [] for key in commands}
    for command in commands.values():  # warm the page cache once; not counted
        _wall(command)
    for _ in range(runs):  # interleaved, so drift hits every command alike
        for key, command in commands.items():
            times[key].append(_wall(command))
    anchor = statistics.median(times["anchor"])
    return [
        _row(name, statistics.median(times[name]), anchor, "s")
        for name in ("startup_version", "startup_check")
    ]


def watch_rows(workdir: Path, entries: int, repeat: int) -> list[Row]:
    """The watch figures (rules §18). Latency's anchor is the debounce: the target p95 is
    debounce + 100 ms, which at 50 ms is 3x the anchor."""
    _progress(f"incremental append to {entries:,}- and 10-entry logs")
    ours, anchor = watching.append_times(workdir, entries, repeat, measure)
    _progress(f"change-to-output latency over {watching.SAVES} saves")
    seen = watching.latencies(workdir)
    debounce = watching.DEBOUNCE_MS / 1000
    return [
        _row("append_incremental", ours, anchor, "s"),
        _row("latency_p50", watching.percentile(seen, 0.5), debounce, "s"),
        _row("latency_p95", watching.percentile(seen, 0.95), debounce, "s"),
    ]


def hook_rows(workdir: Path, entries: int) -> list[Row]:
    """The agent-hook figures (rules §18): the gate against Python's start-up with json, and
    the failure hook on a big log against a 10-entry one."""
    me, env = _selfcorrect(), hooks.environment()
    _progress(f"hook gate and success hook, {hooks.GATE_RUNS} calls each, {entries:,}-entry log")
    quick = hooks.gate_times(workdir, entries, me, env)
    # On a 10-entry log in a session, as the failure hook's own figure: what a deciding hook
    # costs the agent. The decision's share that grows with the log is the rerun rows'.
    _progress(f"success hook that logs (open streak), {hooks.GATE_RUNS} calls, in a session")
    logging = hooks.success_logging_times(workdir, 10, me, env)
    _progress(f"failure hook, {hooks.FAILURE_RUNS} calls on {entries:,}- and 10-entry logs")
    big, small = hooks.failure_times(workdir, entries, me, env)
    _progress(f"failure hook alone, and {hooks.PARALLEL} at once, on a 10-entry log")
    burst = hooks.failure_alone_and_together(workdir, me, env)
    return [
        _row("hook_gate_p95", *quick["pre-tool-use"], "s"),
        _row("hook_failure", big, small, "s"),
        _row("hook_success_p95", *quick["post-tool-use"], "s"),
        _row("hook_success_logging_p95", *logging, "s"),
        _row("hook_failure_p95", burst["alone_p95"], burst["anchor_p95"], "s"),
        _row("hook_failure_cold_p95", burst["cold_p95"], burst["anchor_p95"], "s"),
        _row("hook_failure_burst", burst["slowdown"], burst["anchor_slowdown"] + 1, "x"),
    ]


def rerun_rows(workdir: Path, entries: int, repeat: int = rerun.RUNS) -> list[Row]:
    """A run reading on from the saved fold, on each form of the log, against the larger of
    its two allowances: 0.1x the first full run, or 1.5x a run on a 10-entry log (rules §18)."""
    rows = []
    for form in rerun.FORMS:
        _progress(f"run --shadow reading on from the saved fold of a {entries:,}-entry {form} log")
        found = rerun.rerun_times(workdir, entries, _selfcorrect(), _wall, form, repeat)
        allowance = rerun.Allowance.larger(found["full"], found["small"])
        tail = "" if form == "canonical" else f"_{form}"
        rows += [
            _allowed_row(f"rerun_appended{tail}", found["appended"], allowance),
            _allowed_row(f"rerun_unchanged{tail}", found["unchanged"], allowance),
        ]
    return rows


def measure(what: str, path: Path, entries: int) -> dict[str, float]:
    """One bench/measure.py run in a fresh interpreter: {seconds, peak_kb, count}."""
    done = subprocess.run(
        [sys.executable, str(MEASURE), what, str(path), str(entries)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: measuring {what} on {path} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def read_rows(
    workdir: Path, entries: int, repeat: int, anchor: str = "libyaml"
) -> tuple[list[Row], dict[str, object]]:
    """The reading figures (time and peak memory) for N entries in both forms."""
    canonical = generate.write_canonical(workdir / "canonical.yaml", entries)
    dialect = generate.write_dialect(workdir / "dialect.yaml", entries)
    runs = {
        "libyaml": (anchor, canonical),
        "canonical": ("read", canonical),
        "dialect": ("read", dialect),
        "canonical_analysis": ("analyze", canonical),
        "dialect_analysis": ("analyze", dialect),
    }
    shadow_runs = {
        "canonical_e2e": _shadow_folder(workdir, "e2e-canonical", canonical),
        "dialect_e2e": _shadow_folder(workdir, "e2e-dialect", dialect),
    }
    results: dict[str, list[dict[str, float]]] = {key: [] for key in [*runs, *shadow_runs]}
    for turn in range(repeat):  # interleaved, as for start-up
        for key, (what, path) in runs.items():
            _progress(f"{key} read of {entries:,} entries, run {turn + 1}/{repeat}")
            results[key].append(measure(what, path, entries))
        for key, folder in shadow_runs.items():
            _progress(f"{key}: run --shadow on {entries:,} entries, run {turn + 1}/{repeat}")
            results[key].append(shadow_seconds(folder))
    _progress("streamed reads for peak memory")
    streamed = {
        "canonical": measure("stream", canonical, entries),
        "dialect": measure("stream", dialect, entries),
    }

    def median(key: str, field: str) -> float:
        return statistics.median(r[field] for r in results[key])

    anchor_s, anchor_kb = median("libyaml", "seconds"), median("libyaml", "peak_kb")
    rows = [
        _row("canonical_read", median("canonical", "seconds"), anchor_s, "s"),
        _row("dialect_read", median("dialect", "seconds"), anchor_s, "s"),
        _row("canonical_analysis", median("canonical_analysis", "seconds"), anchor_s, "s"),
        _row("dialect_analysis", median("dialect_analysis", "seconds"), anchor_s, "s"),
        _row("canonical_e2e", median("canonical_e2e", "seconds"), anchor_s, "s"),
        _row("dialect_e2e", median("dialect_e2e", "seconds"), anchor_s, "s"),
        _row("memory_canonical", streamed["canonical"]["peak_kb"], anchor_kb, "kB"),
        _row("memory_dialect", streamed["dialect"]["peak_kb"], anchor_kb, "kB"),
    ]
    extra = {
        "file_bytes": {"canonical": canonical.stat().st_size, "dialect": dialect.stat().st_size},
        "list_peak_kb": {
            "canonical": median("canonical", "peak_kb"),
            "dialect": median("dialect", "peak_kb"),
        },
        "runs": results,
    }
    return rows, extra


def _amount(value: float, unit: str) -> str:
    if unit == "x":  # a ratio already: a slowdown against the same command alone
        return f"{value:.2f}x"
    return f"{value:.3f} s" if unit == "s" else f"{value / 1024:,.0f} MB"


def table(rows: list[Row]) -> str:
    """The human-readable report."""
    head = f"{'figure':<42} {'ours':>10} {'anchor':>10} {'ratio':>7}  {'target':>8}  met"
    lines = [head, "-" * len(head)]
    for row in rows:
        met = ("yes" if row.met else "NO") + (" (informational)" if row.informational else "")
        lines.append(
            f"{row.label:<42} {_amount(row.ours, row.unit):>10} "
            f"{_amount(row.anchor, row.unit):>10} {row.ratio:>6.2f}x  "
            f"{'<= ' + format(row.target, 'g') + 'x':>8}  {met}"
        )
        if row.note:  # which of the row's allowances applied
            lines.append(f"    {row.note}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--entries",
        type=int,
        default=100_000,
        metavar="N",
        help="entries in each generated log (default 100000)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        metavar="R",
        help="runs of each reading measurement; the median is reported "
        f"(start-up uses max(R, {MIN_STARTUP_RUNS}))",
    )
    parser.add_argument(
        "--anchor-gc-off",
        action="store_true",
        help="parse the libyaml anchor with the garbage collector off (a faster, stricter anchor)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--keep", action="store_true", help="write generated files to bench/out/ and keep them"
    )
    args = parser.parse_args(argv)
    if args.entries < 1 or args.repeat < 1:
        parser.error("--entries and --repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.keep:
        workdir = BENCH / "out"
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
    else:
        workdir = Path(tempfile.mkdtemp(prefix="selfcorrect-bench-"))
    try:
        runs = max(args.repeat, MIN_STARTUP_RUNS)
        _progress(f"start-up, {runs} runs of each command")
        rows = startup_rows(workdir, runs)
        anchor = "libyaml-nogc" if args.anchor_gc_off else "libyaml"
        more, extra = read_rows(workdir, args.entries, args.repeat, anchor)
        rows += more
        rows += watch_rows(workdir, args.entries, args.repeat)
        rows += hook_rows(workdir, args.entries)
        rows += rerun_rows(workdir, args.entries, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        report = {
            "entries": args.entries,
            "repeat": args.repeat,
            "python": sys.version.split()[0],
            "anchor": anchor,
            "figures": {row.name: row.as_json() for row in rows},
            **extra,
        }
        print(json.dumps(report, indent=2))
    else:
        print(
            f"selfcorrect benchmark: N={args.entries:,} entries, median of {args.repeat} "
            f"run(s) (start-up: {runs}), Python {sys.version.split()[0]}, anchor {anchor}"
        )
        print(table(rows))
        if args.keep:
            print(f"generated files kept in {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
