"""The watch-mode figures of rules §18, each against its anchor measured in the same run.

- append: a watcher's incremental analysis after 10 entries are appended to an N-entry log,
  against the same append to a 10-entry log (target at most 2x);
- latency: a real `selfcorrect watch --format json` in a subprocess; the time from an atomic
  save of the log to its run line (printed after the outputs are written), p50 and p95, against
  the debounce interval (target: p95 under debounce + 100 ms).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue

from bench import generate

DEBOUNCE_MS = 50
SAVES = 40


def append_times(workdir: Path, entries: int, repeat: int, measure) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median seconds of the incremental analysis: big log, and the 10-entry anchor."""
    big = generate.write_canonical(workdir / "append-big.yaml", entries)
    small = generate.write_canonical(workdir / "append-small.yaml", 10)
    ours, anchor = [], []
    for _ in range(repeat):
        ours.append(measure("append", big, entries)["seconds"])
        anchor.append(measure("append", small, 10)["seconds"])
    return statistics.median(ours), statistics.median(anchor)


def latencies(workdir: Path) -> list[float]:
    """Seconds from each atomic save to its run line, for SAVES saves."""
    folder = workdir / "watch-latency" / "workflow"
    folder.mkdir(parents=True)
    log = folder / "tool_failures.yaml"
    generate.write_dialect(log, 10)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "selfcorrect",
            "watch",
            str(folder),
            "--format",
            "json",
            "--debounce",
            str(DEBOUNCE_MS),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: Queue[tuple[float, dict[str, object]]] = Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put((time.perf_counter(), json.loads(line)))

    threading.Thread(target=read, daemon=True).start()
    found: list[float] = []
    try:
        lines.get(timeout=60)  # the start-up run
        for n in range(SAVES):
            text = log.read_text() + generate.dialect_entry(
                "Edit", f"src/f{n}.ts", f"TypeError at {n}", "2026-11-29T12:00:00Z", "a", True
            )
            tmp = log.with_name(".tool_failures.yaml.swp")
            tmp.write_text(text)
            start = time.perf_counter()
            os.replace(tmp, log)  # an editor's atomic save
            while True:
                at, run = lines.get(timeout=30)
                if "tool_failures.yaml" in run.get("trigger", ()):  # type: ignore[operator]
                    found.append(at - start)
                    break
            time.sleep(0.2)
    except Empty as exc:
        raise SystemExit("bench: the watcher did not report a run within 30 s") from exc
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(folder.parent, ignore_errors=True)
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]
