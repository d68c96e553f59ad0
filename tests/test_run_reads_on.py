"""`selfcorrect run` reads on from the fold the last run or hook saved (docs/architecture.md).

A run saves the failure log's fold in `.selfcorrect/log_cache.json`; the next run, status or
report reads only the bytes appended since. What it decides must be what a full read decides:
these tests compare the two on the same folder, with real commands and real files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import git

WAIT_S = 120


def failures(start: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "tool": "Bash" if n % 3 else "Edit",
            "error": f"TypeError: cannot read 'id' of undefined (call {n})",
            "timestamp": f"2026-12-03T10:{n // 60:02d}:{n % 60:02d}Z",
            "task_id": f"WI-{n % 4}",
            "file_path": f"src/m{n % 5}.py",
        }
        for n in range(start, start + count)
    ]


def shadow(folder: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", str(folder), "--shadow", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    data = json.loads(done.stdout)
    data.pop("written", None)
    data.pop("workflow_dir", None)  # the copy's folder has another name
    return data


def test_a_run_after_an_append_decides_what_a_full_read_decides(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    folder = root / "workflow"
    folder.mkdir()
    log = folder / "tool_failures.yaml"
    log.write_text(yaml.safe_dump({"failures": failures(0, 30)}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "run", str(folder), "-q"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    saved = folder / ".selfcorrect" / "log_cache.json"
    assert saved.is_file()  # the run saved its fold
    text = log.read_text("utf-8")
    appended = yaml.safe_dump({"failures": failures(30, 10)}).split("\n", 1)[1]
    log.write_text(text + appended, encoding="utf-8")
    read_on = shadow(folder)
    assert saved.is_file()  # a shadow run reads the fold and writes nothing
    whole = tmp_path / "whole"
    shutil.copytree(folder, whole)
    (whole / ".selfcorrect" / "log_cache.json").unlink()
    assert read_on == shadow(whole)
    subjects = {s["subject"]: s for s in read_on["subjects"]}
    assert sum(s["attempts"] for s in subjects.values()) == 40  # every entry, once
