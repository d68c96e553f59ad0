"""One measurement in a fresh process: `python bench/measure.py WHAT PATH N`.

Prints JSON `{"seconds": ..., "peak_kb": ..., "count": ...}`. `peak_kb` is the process's peak
resident size minus its size right after the imports, so it is the measured work's own peak.
WHAT is one of:
- `libyaml`: `yaml.load(text, Loader=yaml.CSafeLoader)`; the file is read before the clock starts
  (its text still counts in the memory peak); `libyaml-nogc` does the same with the garbage
  collector off, libyaml's best case (rules §18: about half the time);
- `read`: `list(read_failure_log(path, warnings))`, file reading included;
- `stream`: the same reader, consumed one entry at a time without keeping any (memory figure);
- `append`: with a warm log cache (a watcher), loading and deciding after 10 entries are
  appended to the log; its count is the log's size before the append;
- `analyze`: the whole analysis of a run (`io/workflow_inputs.load_inputs` and
  `core/decisions.decide`: read, type every failure, feed the ledger and the stuck detector,
  decide every subject) on a folder holding the log.
This file imports nothing from `bench`, so it runs the same from any working directory.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from pathlib import Path

import yaml

from selfcorrect.errors import Diagnostic
from selfcorrect.io.documents import read_failure_log


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(what: str, path: Path) -> tuple[float, int]:
    """Run one measurement; returns (seconds, entries seen)."""
    if what in ("libyaml", "libyaml-nogc"):
        text = path.read_text(encoding="utf-8")
        if what == "libyaml-nogc":
            gc.disable()
        start = time.perf_counter()
        data = yaml.load(text, Loader=yaml.CSafeLoader)
        seconds = time.perf_counter() - start
        return seconds, len(data["failures"])
    warnings: list[Diagnostic] = []
    if what == "analyze":
        return _analyze(path)
    if what == "append":
        return _append(path)
    start = time.perf_counter()
    if what == "read":
        count = len(list(read_failure_log(path, warnings)))
    elif what == "stream":
        count = sum(1 for _ in read_failure_log(path, warnings))
    else:
        raise SystemExit(
            f"unknown measurement {what!r}; use libyaml, libyaml-nogc, read, stream or analyze"
        )
    seconds = time.perf_counter() - start
    if warnings:
        raise SystemExit(f"reader warned: {warnings[0]} (+{len(warnings) - 1} more)")
    return seconds, count


def _analyze(path: Path) -> tuple[float, int]:
    import tempfile

    from selfcorrect.core.decisions import decide
    from selfcorrect.io.workflow_inputs import load_inputs

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "tool_failures.yaml").symlink_to(path.resolve())
        start = time.perf_counter()
        analysis = decide(load_inputs(Path(folder)), now="", run_id="bench")
        seconds = time.perf_counter() - start
    if analysis.warnings:
        raise SystemExit(f"analysis warned: {analysis.warnings[0]}")
    return seconds, analysis.log_entries


APPENDED = (
    "  - tool: Edit\n    error: 'TypeError: x is undefined at handler.ts:{n}'\n"
    "    timestamp: '2026-11-29T12:00:0{n}Z'\n    task_id: WI-9\n    file_path: src/h.ts\n"
)


def _append(path: Path) -> tuple[float, int]:
    """A watcher's incremental run: analyze with a warm cache after 10 entries are appended."""
    import shutil
    import tempfile

    from selfcorrect.core.decisions import decide
    from selfcorrect.io.workflow_inputs import LogCache, load_inputs

    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "tool_failures.yaml"
        shutil.copyfile(path, log)
        cache = LogCache()
        decide(load_inputs(Path(folder), None, cache), now="", run_id="bench")  # earlier runs
        with log.open("a", encoding="utf-8") as out:
            out.writelines(APPENDED.format(n=n) for n in range(10))
        start = time.perf_counter()
        analysis = decide(load_inputs(Path(folder), None, cache), now="", run_id="bench")
        seconds = time.perf_counter() - start
    return seconds, analysis.log_entries - 10


def main(argv: list[str] | None = None) -> int:
    what, path, expected = (argv if argv is not None else sys.argv[1:])[:3]
    baseline = _peak_kb()
    seconds, count = measure(what, Path(path))
    peak = _peak_kb() - baseline
    if count != int(expected):
        raise SystemExit(f"{what} saw {count} entries, expected {expected}")
    print(json.dumps({"what": what, "seconds": seconds, "peak_kb": peak, "count": count}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
