"""What the crash and concurrency tests (rules §19) share: processes, leftovers, human bytes.

Both tests drive real selfcorrect processes and judge what they leave behind from the outside:
which processes still run (from /proc, no psutil), which temp files lie beside the files (named
the way io/atomic.py names them), whether every YAML file parses, whether failed_items or
escalations repeat an entry, and whether every line a person wrote is still there, byte for
byte. The concurrency test also traces selfcorrect's own reads and writes (TRACER).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# io/atomic.py's _write_temp: `.<name>.<pid>.<8 hex>.tmp` beside the target.
ATOMIC_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp$")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    state: str  # R, S, D, Z (finished, not reaped), T (stopped), ...
    cmdline: str


def process_table() -> dict[int, Proc]:
    """Every process on the machine, from /proc."""
    table: dict[int, Proc] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            raw = stat.read_text()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # it exited while we looked
        fields = raw[raw.rindex(")") + 2 :].split()  # after `pid (comm) `: comm may hold ")"
        pid = int(stat.parent.name)
        table[pid] = Proc(pid, int(fields[1]), int(fields[2]), fields[0], cmdline.strip())
    return table


def descendants(pid: int) -> list[Proc]:
    """Every live process below `pid`."""
    table, found, frontier = process_table(), [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p in table.values() if p.ppid == parent and p.state != "Z"]
        found += children
        frontier += [c.pid for c in children]
    return found


def alive(proc: Proc) -> bool:
    """Still running (a zombie has finished), and still that program (pids are reused)."""
    now = process_table().get(proc.pid)
    return now is not None and now.state != "Z" and now.cmdline == proc.cmdline


def wait_gone(procs: Iterable[Proc], timeout: float) -> list[Proc]:
    """Wait until none of `procs` runs; those still running after `timeout`."""
    pending, deadline = list(procs), time.monotonic() + timeout
    while (pending := [p for p in pending if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return pending


def working_in(folder: Path) -> list[Proc]:
    """Live processes whose working directory is `folder` or below it."""
    found = []
    for proc in process_table().values():
        with contextlib.suppress(OSError):
            cwd = Path(os.readlink(f"/proc/{proc.pid}/cwd"))
            if proc.state != "Z" and cwd.is_relative_to(folder.resolve()):
                found.append(proc)
    return found


def kind(proc: Proc) -> str:
    """What a child process was, in a word, for the report."""
    return next((w for w in ("fix.py", "validate.py", "git") if w in proc.cmdline), proc.cmdline)


@dataclass(frozen=True)
class Kill:
    pid: int
    children: list[Proc]  # every process below it at the moment of the kill
    how: str  # process | group | tree

    def spared(self) -> list[Proc]:
        """The children this kill did not reach, and which still run."""
        if self.how == "tree":
            return []
        hit = self.pid if self.how == "group" else -1
        return [p for p in self.children if p.pgid != hit and alive(p)]


def signal_quietly(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def sigkill(proc: subprocess.Popen[bytes], how: str) -> Kill | None:
    """SIGKILL a command started in its own session: the process alone, its process group, or
    everything it started (a container or cgroup kill). None if it had ended already."""
    signal_quietly(proc.pid, signal.SIGSTOP)  # hold it still while we look at its children
    if proc.poll() is not None:
        return None
    children = descendants(proc.pid)
    for child in children if how == "tree" else ():
        signal_quietly(child.pid, signal.SIGKILL)
    if how == "group":
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    return Kill(proc.pid, children, how)


def project_digest(repo: Path, scope: Iterable[str] = ()) -> dict[str, str]:
    """Every file a fixer could touch outside its `scope`: ignored files, `.git` refs, config,
    hooks and HEAD, the policy; symlinks as links, folders as folders. Not the run's own outputs
    (the rest of workflow/), nor what git itself rewrites (objects, reflogs, the index)."""
    out: dict[str, str] = {}
    skip = set(scope)
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel in skip or rel.startswith(("workflow/", ".git/objects/", ".git/logs/")):
            continue
        if rel in (".git/index", ".git/COMMIT_EDITMSG", ".git/ORIG_HEAD"):
            continue
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            out[rel + "/"] = "dir"
    out["workflow/selfcorrect.yaml"] = (repo / "workflow" / "selfcorrect.yaml").read_text()
    return out


def temp_files(root: Path) -> list[Path]:
    """Temp files below `root`, outside .git: atomic.py's, or anything else named *.tmp."""
    return sorted(
        path
        for path in root.rglob("*")
        if (path.name.endswith(".tmp") or ATOMIC_TEMP.match(path.name))
        and ".git" not in path.relative_to(root).parts
    )


def temp_pid(path: Path) -> int | None:
    """The pid of the process that made an atomic.py temp file, None for other temp files."""
    match = ATOMIC_TEMP.match(path.name)
    return int(match["pid"]) if match else None


def unparsable_yaml(folder: Path) -> dict[str, str]:
    """Every *.yaml below `folder` that PyYAML's safe loader refuses, with the error."""
    bad = {}
    for path in sorted(folder.rglob("*.yaml")):
        try:
            yaml.safe_load(path.read_bytes())
        except yaml.YAMLError as exc:
            bad[str(path.relative_to(folder))] = str(exc).splitlines()[0]
    return bad


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_bytes()) if path.exists() else None


def human_lines(text: str) -> list[str]:
    """The lines of `text` that carry a comment: a person's words, kept byte for byte."""
    return [line for line in text.splitlines(keepends=True) if "#" in line]


def missing_lines(expected: Iterable[str], text: str) -> list[str]:
    """Lines of `expected` that `text` no longer holds as whole lines (endings included)."""
    have = Counter(text.splitlines(keepends=True))
    return [line for line in expected if have[line] == 0]


def duplicates(entries: Any, key: str) -> list[str]:
    """Values of `key` that several entries of a YAML list carry (compared as text)."""
    counts = Counter(str(e.get(key)) for e in entries or () if isinstance(e, dict))
    return sorted(value for value, n in counts.items() if n > 1)


# One error text per failure type of the default taxonomy (rules §6), so subjects of every kind
# get stuck: a ladder that climbs (syntax_error), budgets that end in a block, a skip, a
# simplification (resource_exhaustion) and a decomposition (timeout).
ERRORS = (
    "TypeError: Cannot read property 'id' of undefined at handler.ts:45",
    "SyntaxError: Unexpected token } in JSON at position 12",
    "connect ETIMEDOUT 10.0.3.17:6379",
    "ENOSPC: no space left on device, write",
    "npm ERR! code ENOTFOUND npm ERR! network request failed",
    "the agent reported something odd",
)


def failure_entry(n: int, subject: int) -> str:
    """Entry `n` of a canonical tool_failures.yaml (rules §2.1), for subject `WI-<subject>`."""
    return (
        f'  - id: TF-{n:05d}\n    tool: Edit\n    error: "{ERRORS[subject % len(ERRORS)]}"\n'
        f'    timestamp: "2026-11-29T10:{n // 60 % 60:02d}:{n % 60:02d}Z"\n'
        f'    task_id: WI-{subject}\n    file_path: src/f{subject}.ts\n    approach: "try {n}"\n\n'
    )


def failure_positions(folder: Path) -> dict[str, list[int]]:
    """Subject -> the positions (list indices) of its entries in tool_failures.yaml."""
    positions: dict[str, list[int]] = {}
    for index, entry in enumerate((load(folder / "tool_failures.yaml") or {})["failures"]):
        positions.setdefault(str(entry["task_id"]), []).append(index)
    return positions


# A `sitecustomize` for the watcher under test (through PYTHONPATH): it wraps atomic.py's
# reads, temp files and os.replace to log what selfcorrect read, what it wrote and when it
# committed, on the machine-wide monotonic clock the test's editor uses too. It only observes.
TRACER = """
import hashlib, json, os, time
from pathlib import Path

_trace = os.environ.pop("SELFCORRECT_TEST_TRACE", None)  # the watcher only, not its children
if _trace:
    from selfcorrect.io import atomic

    _dir = Path(_trace)
    (_dir / "blobs").mkdir(parents=True, exist_ok=True)
    _events = open(_dir / "events.jsonl", "a", buffering=1)
    _read, _temp, _replace = atomic.read_or_none, atomic._write_temp, os.replace

    def _blob(data):
        sha = hashlib.sha256(data or b"").hexdigest()
        if not (_dir / "blobs" / sha).exists():
            (_dir / "blobs" / sha).write_bytes(data or b"")
        return sha

    def read_or_none(path):
        data = _read(path)
        _events.write(json.dumps({"op": "read", "name": Path(path).name, "blob": _blob(data)}))
        _events.write("\\n")
        return data

    def write_temp(path, data, mode):
        tmp = _temp(path, data, mode)
        _events.write(json.dumps({"op": "temp", "tmp": str(tmp), "t": time.monotonic_ns()}))
        _events.write("\\n")
        return tmp

    def replace(src, dst, *args, **kwargs):
        blob = _blob(Path(src).read_bytes())
        _replace(src, dst, *args, **kwargs)
        event = {"op": "replace", "name": Path(dst).name, "src": str(src), "blob": blob}
        _events.write(json.dumps({**event, "t": time.monotonic_ns()}) + "\\n")

    atomic.read_or_none, atomic._write_temp, os.replace = read_or_none, write_temp, replace
"""


@dataclass(frozen=True)
class Write:
    """One compare-and-swap write selfcorrect committed, as the tracer saw it."""

    start: int  # monotonic ns: its temp file was complete (the re-read comes after)
    end: int  # monotonic ns: the replace was done
    read: str  # the bytes it read and found unchanged just before replacing
    wrote: str


def tracer_env(trace: Path) -> dict[str, str]:
    """Environment variables that make a `python -m selfcorrect` started now trace itself."""
    site = trace / "site"
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(TRACER)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "SELFCORRECT_TEST_TRACE": str(trace)}


def traced_writes(trace: Path, name: str) -> list[Write]:
    """Every write of the file `name` through io/atomic.py's update_file, in order."""
    writes, temps, last_read = [], {}, ""
    for event in map(json.loads, (trace / "events.jsonl").read_text().splitlines()):
        if event["op"] == "temp":
            temps[event["tmp"]] = event["t"]
        elif event["op"] == "read" and event["name"] == name:
            last_read = (trace / "blobs" / event["blob"]).read_text()
        elif event["op"] == "replace" and event["name"] == name and event["src"] in temps:
            wrote = (trace / "blobs" / event["blob"]).read_text()
            writes.append(Write(temps[event["src"]], event["t"], last_read, wrote))
    return writes
