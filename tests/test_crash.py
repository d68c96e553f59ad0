"""kill -9 at random points of many runs (rules §9, §19): nothing torn, lost or repeated.

A git repository with a workflow folder: 30 stuck subjects in a canonical `tool_failures.yaml`,
people's comments in the log, `coordination_log.yaml` and `selfcorrect.yaml`, a validator
script, and a SLOW autofixer (it rewrites its target in steps, sleeping 0-200 ms between
writes) for an issue on every `mod_*.py` that still says `import os`. Each round appends
failures and adds a module, starts `python -m selfcorrect run DIR` as a real process, and kills
it with SIGKILL at a seeded random moment: a delay after the start, after a fixer started, or
right after one of atomic.py's temp files appeared (mid-write). The kill takes one of three
shapes: the selfcorrect process alone, its process group (selfcorrect and git), or the whole
tree it started, as a container or cgroup kill would (fixers and the validator run in their
own session: nothing else reaches them). After each kill:

- every YAML file in the folder parses, and every decision document loads strictly;
- every line a person wrote (each commented line) is still in its file, byte for byte;
- no failed_items entry repeats a task_id, no escalation repeats an id;
- the journal reads, and each kill adds at most one unreadable (torn) line;
- every temp file beside the files was made by a killed process (atomic.py names it
  `.<name>.<pid>.<hex>.tmp`); after the last run, which completes, none is left at all;
- every process the killed run had started (seen in /proc before the kill) finishes on its own
  within ORPHAN_S seconds. A third of the rounds start the next run without waiting for them.

Then one last run to completion (exit 0, 1 or 3; never 2 or 4), and the rules §19 invariants, read
from the journal. For a fingerprint, a *remediation* is a `preflight → remediating` transition
(fsynced before the fixer starts), a *hand-out* an `issue` record with status `remediating`
or `directive`, and the *count* the attempts `core.state.derive` folds from the whole journal:

1. no remediation repeated: at most one remediation per (fingerprint, attempt);
2. no attempt key reused: at most one remediation per `attempt_key` (trace + fingerprint +
   rule version: two in one run would be a retry inside the run);
3. no attempt counted twice: each hand-out is numbered one past the attempts started before it
   (a directive starts when handed out). A skipped number is an attempt counted twice or one
   that never ran; a number reused after its remediation started is an attempt not counted;
4. no attempt counted that never started: count <= remediations. A remediation whose run died
   after its transition is *uncertain* and counts (conservatively, rules §9); one whose run died
   before its transition certainly never ran;
5. attempts within the budget: remediations <= `retries` of the issue type (1);
6. every ladder round handed out once: a subject's `recovering` records climb strictly;
7. no failure counted twice: a `subject` record's `attempt` equals the subject's failures in
   the log up to the record's `log_position`.

Long profile (rules §19 asks for 200 kills and 1,000 edits and runs):
    SELFCORRECT_CRASH_RUNS=200 SELFCORRECT_EDITS=1000 SELFCORRECT_SOAK_ROUNDS=1000 \\
        .venv/bin/python -m pytest tests/test_crash.py tests/test_concurrency.py \\
        tests/test_watch_soak.py
A failure names its seed; SELFCORRECT_CRASH_SEED=<seed> replays the same choices (the moments
a kill lands on still vary with the machine's timing).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from selfcorrect.core.state import derive
from selfcorrect.errors import Diagnostic
from selfcorrect.io.documents import load_decision
from selfcorrect.io.journal import read_journal
from tests.hardening import (
    Kill,
    duplicates,
    failure_entry,
    failure_positions,
    human_lines,
    kind,
    load,
    missing_lines,
    project_digest,
    sigkill,
    temp_files,
    temp_pid,
    unparsable_yaml,
    wait_gone,
    working_in,
)

RUNS = int(os.environ.get("SELFCORRECT_CRASH_RUNS", "20"))
SEED = int(os.environ.get("SELFCORRECT_CRASH_SEED") or random.SystemRandom().randrange(10**6))
ORPHAN_S = 20.0  # a fixer takes under a second; this only bounds a hang
KILL_WITHIN_S = 1.4  # about one run: start-up, analysis, a fix, the re-validation
RETRIES = 1  # linting_errors' default budget
SUBJECTS = 30
HUMAN_FILES = ("coordination_log.yaml", "selfcorrect.yaml", "tool_failures.yaml")
DECISIONS = ("coordination_log", "escalations", "selfcorrect")

FIXER = """
import os, pathlib, random, shutil, subprocess, sys, time
scratch = pathlib.Path({scratch!r})
log, target = scratch / "fixer.log", pathlib.Path(sys.argv[1])
behaviour = (scratch / "behaviour").read_text().strip()
with log.open("a") as out:
    out.write(f"start {{sys.argv[1]}} {{os.getpid()}}\\n")
if behaviour == "detach":  # a child in its own session, that would write after the fix
    child = subprocess.Popen([sys.executable, "-c", {late!r}], start_new_session=True)
    with (scratch / "pids").open("a") as out:
        out.write(f"{{child.pid}}\\n")
lines = target.read_text().splitlines(keepends=True)
for n in range(len(lines)):  # one write per line, a random pause before each
    time.sleep(random.uniform(0, 0.2))
    kept = [line for i, line in enumerate(lines) if i > n or "import os" not in line]
    target.write_text("".join(kept))
if behaviour == "commit":
    subprocess.run(["git", "commit", "-qam", "the fixer commits"], capture_output=True)
elif behaviour == "ignored":
    with open(".env", "a") as out:
        out.write("TOKEN=stolen\\n")
elif behaviour == "symlink":  # the folder becomes a link to somewhere else
    shutil.rmtree("pkg", ignore_errors=True)
    os.symlink(scratch / "elsewhere", "pkg")
elif behaviour == "flood":
    for _ in range(100):
        sys.stdout.write("x" * 65535 + "\\n")
"""
LATE = "import pathlib, time; time.sleep(60); pathlib.Path('README.md').write_text('evil')"
# What a round's fixer does besides its fix (rules §19: a hostile fixer changes nothing).
BEHAVIOURS = ("slow", "detach", "commit", "ignored", "symlink", "flood")
HOSTILE_RUNS = int(os.environ.get("SELFCORRECT_HOSTILE_RUNS", "1"))  # up to 5: one each
# The validator writes its report atomically, from a scratch folder outside the project: a
# killed validator must not be what tears a file.
VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
issues = [{{"id": p.stem, "type": "linting_errors", "severity": "MAJOR",
           "description": "F401 os imported but unused", "target": p.name}}
          for p in sorted(pathlib.Path(".").glob("mod_*.py")) if "import os" in p.read_text()]
tmp = pathlib.Path({scratch!r}) / f"report.{{os.getpid()}}"
tmp.write_text(json.dumps({{"status": "FIXABLE" if issues else "PASS", "issues": issues}}))
os.replace(tmp, folder / "validation_report.yaml")
"""
POLICY = """\
# Policy for the crash test. A person wrote these comments; selfcorrect never rewrites this file.
validator:
  command: [{python}, validate.py]   # the project's own validator
issue_types:
  linting_errors:
    fix:
      # the slow fixer: it pauses between writes, so kills land mid-fix
      - command: [{python}, fix.py, '{{target}}']
circuit:
  # lenient on purpose: the fixes must keep running after the failures the kills cause
  verification_failures: 1000000
  target_recurrences: 1000000
  min_calls: 1000000
"""
COORDINATION = """\
# Coordination log for the crash test (written by the controller agent; people edit it too).
# selfcorrect owns only failed_items; every comment in this file is a person's.
schema_version: "1"
controller: lead   # the tech lead: keep this comment where it is
status: in_progress
questions_asked:
  # asked on Monday, answered by the backend agent
  - question: "Why does POST /login crash?"
    delegated_to: backend
    answer: "req.user is undefined when the session expired"   # confirmed by QA
implementation_tasks:
  - task_id: WI-0
    name: "Guard the handler against a missing user"
    status: in_progress   # a person: blocked on review
failed_items:
  - task_id: WI-0
    # a person: ops is looking at WI-0, do not page again
    failure_type: runtime_error
    attempts: 1
    final_status: recovering
# a person's closing note, after selfcorrect's block
"""
LOG_HEADER = """\
# yaml-language-server: $schema=https://selfcorrect.dev/schemas/tool_failures.schema.json
# Tool failure log, appended by the agents' hook (canonical form).
# A person's note: WI-7 and WI-13 share a flaky fixture.
failures:
"""


def build(tmp_path: Path, subjects: int = SUBJECTS) -> tuple[Path, Path]:
    """The repository (committed) and its workflow folder; a scratch folder beside them."""
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    folder = repo / "workflow"
    folder.mkdir(parents=True)
    scratch.mkdir()
    (repo / "fix.py").write_text(FIXER.format(scratch=str(scratch), late=LATE))
    (scratch / "behaviour").write_text("slow")
    (scratch / "elsewhere").mkdir()
    (repo / "README.md").write_text("# the project\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "util.py").write_text("X = 1\n")
    (repo / ".gitignore").write_text(".env\n")
    (repo / ".env").write_text("TOKEN=mine\n")
    (repo / "validate.py").write_text(VALIDATOR.format(scratch=str(scratch)))
    (folder / "selfcorrect.yaml").write_text(POLICY.format(python=sys.executable))
    (folder / "coordination_log.yaml").write_text(COORDINATION)
    entries = [failure_entry(n, n // 3) for n in range(3 * subjects)]  # three each: stuck
    entries.insert(subjects, "  # a person: the entries below came in during the outage\n")
    (folder / "tool_failures.yaml").write_text(LOG_HEADER + "".join(entries))
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
    return repo, folder


def add_work(
    repo: Path, folder: Path, rng: random.Random, round_no: int, subjects: int = SUBJECTS
) -> None:
    """What agents do between runs: new failures for stuck subjects, a new lint issue."""
    log = folder / "tool_failures.yaml"
    count = log.read_text().count("  - id: TF-")
    with log.open("a") as out:
        for n in range(count, count + rng.randint(1, 2)):
            out.write(failure_entry(n, rng.randrange(subjects)))
    (repo / f"mod_{round_no}.py").write_text(f"import os  # 1\nimport os  # 2\nx = {round_no}\n")


def run_argv(folder: Path) -> list[str]:
    return [sys.executable, "-m", "selfcorrect", "run", str(folder)]


def fixer_starts(repo: Path) -> int:
    log = repo.parent / "scratch" / "fixer.log"
    return log.read_text().count("start ") if log.exists() else 0


def writing(folder: Path) -> bool:
    """A write to the folder is under way: one of atomic.py's temp files exists right now."""
    for place in (folder, folder / "recovery"):
        if place.is_dir() and any(name.endswith(".tmp") for name in os.listdir(place)):
            return True
    return False


@pytest.mark.tampered_journal(torn_lines=True)  # a kill mid-append tears a line
def test_kill_minus_nine_at_random_points(tmp_path: Path) -> None:
    try:
        kill_rounds(tmp_path)
    except Exception as exc:  # an input error or a timeout names no seed of its own
        raise AssertionError(
            f"seed {SEED} (replay with SELFCORRECT_CRASH_SEED={SEED}): {exc}"
        ) from exc


def kill_rounds(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    repo, folder = build(tmp_path)
    human = {name: human_lines((folder / name).read_text()) for name in HUMAN_FILES}
    killed: set[int] = set()
    orphans: Counter[str] = Counter()  # "kill shape: program" that kept running after a kill
    torn = finished = 0
    scratch = tmp_path / "scratch"
    for round_no in range(RUNS):
        tag = f"seed {SEED}, round {round_no}"
        add_work(repo, folder, rng, round_no)
        (scratch / "behaviour").write_text(rng.choice(BEHAVIOURS))
        overlap = rng.random() < 1 / 3  # the next run starts while the orphans still run
        head = git_head(repo)
        kill = run_and_kill(repo, folder, rng)
        detached = wait_pids_gone(scratch / "pids", ORPHAN_S)
        assert not detached, f"{tag}: a fixer's detached child outlived its run: {detached}"
        if kill is None:
            finished += 1  # the run ended before its kill: the next round judges it
            assert git_head(repo) == head, f"{tag}: a completed run left the fixer's commit"
            continue
        killed.add(kill.pid)
        orphans.update(f"{kill.how}: {kind(p)}" for p in kill.spared())
        if kill.how == "tree" or not overlap:
            stuck = wait_gone(kill.children, ORPHAN_S)
            assert not stuck, f"{tag}: still running {ORPHAN_S}s after the kill: {stuck}"
        warnings: list[Diagnostic] = []
        read_journal(folder, warnings)  # never raises on a torn line
        assert len(warnings) <= torn + 1, f"{tag}: one kill tore several lines: {warnings}"
        torn = len(warnings)
        check_files(repo, folder, human, killed, tag)
    stuck = wait_gone(working_in(repo), ORPHAN_S)
    assert not stuck, f"seed {SEED}: processes of killed runs still running: {stuck}"
    print(f"seed {SEED}: {RUNS} rounds, {finished} ended before the kill; spared: {orphans}")

    head = git_head(repo)
    final = subprocess.run(
        [*run_argv(folder), "--format", "json"], cwd=repo, capture_output=True, timeout=180
    )
    assert git_head(repo) == head, f"seed {SEED}: the final run left the fixer's commit"
    assert final.returncode in (0, 1, 3), f"seed {SEED}: final run: {final.stderr[-2000:]!r}"
    json.loads(final.stdout)
    check_files(repo, folder, human, killed, f"seed {SEED}, final run")
    check_journal(folder)
    assert not wait_gone(working_in(repo), ORPHAN_S), f"seed {SEED}: the final run left processes"
    left = [str(p.relative_to(repo)) for p in temp_files(repo)]
    assert not left, f"seed {SEED}: temp files of killed runs, still there after a full run: {left}"


# Dies by SIGKILL right after the first rename or link that puts a file in place as
# escalations.yaml: the narrowest window between two writes of one file.
KILLED_AFTER_FIRST_WRITE = """
import os, signal, sys
from pathlib import Path
from selfcorrect.io import documents

def dying(call):
    def wrapped(src, dst, *args, **kwargs):
        call(src, dst, *args, **kwargs)
        if str(dst).endswith("escalations.yaml"):
            os.kill(os.getpid(), signal.SIGKILL)
    return wrapped

os.link, os.replace = dying(os.link), dying(os.replace)
entry = {"id": "ESC-1", "kind": "subject", "subject": "WI-1", "reason": "stuck", "status": "open"}
documents.add_escalations(Path(sys.argv[1]), [entry])
"""


def test_a_kill_while_escalations_yaml_is_created_leaves_a_readable_file(tmp_path: Path) -> None:
    """The first escalation creates the file. Written as a header and then the entries, a kill
    between the two left comments only, and every later run refused the folder ("file is
    empty", exit 2) until a person deleted the file."""
    path = tmp_path / "escalations.yaml"
    died = subprocess.run([sys.executable, "-c", KILLED_AFTER_FIRST_WRITE, str(path)], check=False)
    assert died.returncode == -9
    document = load_decision(path, "escalations")  # strict: InputError if torn or empty
    assert [e["id"] for e in document.data["escalations"]] == ["ESC-1"]


def test_hostile_fixers_leave_the_project_as_it_was(tmp_path: Path) -> None:
    """Completed runs with fixers drawn from the hostile behaviours (rules §19): the project
    is byte for byte its snapshot outside the fixes' targets, HEAD is where it was, and no
    process of a fixer is alive."""
    rng = random.Random(SEED)
    repo, folder = build(tmp_path, subjects=1)  # the fixes are what is tested: a quick run
    scratch = tmp_path / "scratch"
    human = {name: human_lines((folder / name).read_text()) for name in HUMAN_FILES}
    for round_no, behaviour in enumerate(rng.sample(BEHAVIOURS[1:], HOSTILE_RUNS)):
        tag = f"seed {SEED}, {behaviour} fixer"
        add_work(repo, folder, rng, round_no, subjects=1)
        (scratch / "behaviour").write_text(behaviour)
        targets = [p.name for p in repo.glob("mod_*.py")]
        before, head = project_digest(repo, targets), git_head(repo)
        argv = [*run_argv(folder), "--validate-first", "--format", "json"]
        done = subprocess.run(argv, cwd=repo, capture_output=True, timeout=180)
        assert done.returncode in (0, 1, 3), f"{tag}: {done.stderr[-2000:]!r}"
        assert fixer_starts(repo) > 0, f"{tag}: no fixer ran"
        assert project_digest(repo, targets) == before, f"{tag}: the project changed"
        assert git_head(repo) == head, f"{tag}: HEAD moved"
        assert not wait_pids_gone(scratch / "pids", 0), f"{tag}: a detached child lives"
        assert not working_in(repo), f"{tag}: processes left in the project"
        check_files(repo, folder, human, set(), tag)


def git_head(repo: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    return done.stdout.strip()


def wait_pids_gone(pidfile: Path, timeout: float) -> list[int]:
    """The pids listed in `pidfile` (a fixer's detached children) still alive after `timeout`."""
    pids = [int(p) for p in pidfile.read_text().split()] if pidfile.exists() else []
    deadline = time.monotonic() + timeout
    while True:
        living = [pid for pid in pids if pid_alive(pid)]
        if not living or time.monotonic() >= deadline:
            return living
        time.sleep(0.02)


def pid_alive(pid: int) -> bool:
    """Running, not a zombie (a zombie has finished; its parent just has not reaped it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def run_and_kill(repo: Path, folder: Path, rng: random.Random) -> Kill | None:
    """Start a run and SIGKILL it at a random moment; None if it ended before that moment.

    The moment is a delay after the start ("clock"), after a fixer started ("fix"), or just
    after a temp file of atomic.py appeared in the folder ("write": mid-write).
    """
    argv = run_argv(folder) + (["--validate-first"] if rng.random() < 0.5 else [])
    aim = rng.choice(["clock", "fix", "write"])
    delay = rng.uniform(0, {"clock": KILL_WITHIN_S, "fix": 0.25, "write": 0.001}[aim])
    how = rng.choice(["process", "group", "tree"])
    fixers = fixer_starts(repo)
    proc = subprocess.Popen(
        argv, cwd=repo, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    armed, start = aim == "clock", time.monotonic()
    while proc.poll() is None:
        now = time.monotonic()
        hit = writing(folder) if aim == "write" else fixer_starts(repo) > fixers
        if not armed and (hit or now - start > 3):
            armed, start = True, now  # the delay counts from the moment aimed at
        if armed and now - start >= delay:
            break
        time.sleep(0.0005)
    kill = sigkill(proc, how)
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode(errors="replace")
    return kill


def check_files(
    repo: Path, folder: Path, human: dict[str, list[str]], killed: set[int], tag: str
) -> None:
    bad = unparsable_yaml(folder)
    assert not bad, f"{tag}: YAML that no longer parses: {bad}"
    for stem in DECISIONS:
        if (folder / f"{stem}.yaml").exists():
            load_decision(folder / f"{stem}.yaml", stem)  # strict: InputError with positions
    for name, lines in human.items():
        lost = missing_lines(lines, (folder / name).read_text())
        assert not lost, f"{tag}: a person's lines gone from {name}: {lost}"
    items = (load(folder / "coordination_log.yaml") or {}).get("failed_items")
    assert not duplicates(items, "task_id"), f"{tag}: failed_items repeat: {items}"
    escalations = (load(folder / "escalations.yaml") or {}).get("escalations")
    assert not duplicates(escalations, "id"), f"{tag}: escalation ids repeat"
    strays = [p for p in temp_files(repo) if temp_pid(p) not in killed]
    assert not strays, f"{tag}: temp files that no kill explains: {strays}"


def check_journal(folder: Path) -> None:
    """The seven invariants of the module docstring, each its own assertion."""
    records, tag = read_journal(folder, []), f"seed {SEED}"
    runs = [r for r in records if _remediation(r)]
    started: dict[str, set[int]] = defaultdict(set)
    for r in runs:
        started[r["fingerprint"]].add(r["attempt"])
    pairs = Counter((r["fingerprint"], r["attempt"]) for r in runs)
    repeated = [pair for pair, n in pairs.items() if n > 1]
    assert not repeated, f"{tag}: 1. remediation repeated (fingerprint, attempt): {repeated}"
    keys = [key for key, n in Counter(r.get("attempt_key") for r in runs).items() if n > 1]
    assert not keys, f"{tag}: 2. one attempt_key started several remediations: {keys}"

    so_far: dict[str, set[int]] = defaultdict(set)
    misnumbered = []  # (fingerprint, attempt handed out, attempts started before it)
    for r in records:
        if _remediation(r):
            so_far[r["fingerprint"]].add(r["attempt"])
        elif r.get("event") == "issue" and r.get("status") in ("remediating", "directive"):
            if r["attempt"] != len(so_far[r["fingerprint"]]) + 1:
                misnumbered.append((r["fingerprint"], r["attempt"], len(so_far[r["fingerprint"]])))
            if r["status"] == "directive":
                so_far[r["fingerprint"]].add(r["attempt"])
    assert not misnumbered, f"{tag}: 3. attempts counted twice or not at all: {misnumbered}"
    # An attempt is a fix that started, or a directive handed to the agent (a fix's retries
    # spent hand the task to the recovery ladder: docs/rules.md §5).
    handed = defaultdict(set, {fp: set(a) for fp, a in started.items()})
    for r in records:
        if r.get("event") == "issue" and r.get("status") == "directive":
            handed[r["fingerprint"]].add(r["attempt"])
    counted = {fp: issue.attempts for fp, issue in derive(records).issues.items()}
    phantom = {fp: (n, sorted(handed[fp])) for fp, n in counted.items() if n > len(handed[fp])}
    assert not phantom, f"{tag}: 4. attempts counted, never started (count, started): {phantom}"
    over = {fp: sorted(a) for fp, a in started.items() if len(a) > RETRIES}
    assert not over, f"{tag}: 5. more remediations than the {RETRIES} retries allow: {over}"

    # A passing report recovers what was on the ladder and starts its counts again (a
    # `success` record, docs/rules.md §9.1): a climb after it is a new one.
    climbs: dict[str, list[int]] = defaultdict(list)
    since: dict[str, int] = defaultdict(lambda: -1)  # the latest success baseline, per subject
    truth = failure_positions(folder)
    wrong = []
    for r in records:
        if r.get("event") == "success":
            for baseline in r.get("subjects") or ():
                climbs[baseline["subject"]] = []
                since[baseline["subject"]] = baseline["log_position"]
        if r.get("event") == "subject" and r.get("status") == "recovering":
            climbs[r["subject"]].append(int(r["ladder_step"]))
        if r.get("event") == "subject":
            low, high = since[r["subject"]], r["log_position"]
            if r.get("attempt") != sum(low < p <= high for p in truth[r["subject"]]):
                wrong.append((r["subject"], r["log_position"], r["attempt"]))
        again = {s: steps for s, steps in climbs.items() if steps != sorted(set(steps))}
        assert not again, f"{tag}: 6. a ladder round handed out twice: {again}"
    assert not wrong, f"{tag}: 7. failures counted twice or missed (subject, at, count): {wrong}"


def _remediation(record: dict[str, Any]) -> bool:
    """A `preflight → remediating` transition: fsynced just before the fixer starts."""
    step = (record.get("event"), record.get("from"), record.get("to"))
    return step == ("transition", "preflight", "remediating")


def test_a_run_sweeps_a_killed_writers_temp_files_wherever_it_writes(tmp_path: Path) -> None:
    """A kill between a temp file's write and its rename leaves the temp file: the next run
    removes those of dead writers in every folder it writes to, `.selfcorrect/` and the undone
    copies of a fix included (the random kills above once left one in `undone/`)."""
    from tests.helpers import example

    folder = example(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    pid = int(dead.stdout)
    places = [folder, folder / ".selfcorrect", folder / ".selfcorrect" / "undone"]
    for place in places:
        place.mkdir(parents=True, exist_ok=True)
    stale = [place / f"..env.058cc9621985.{pid}.d057ab50.tmp" for place in places]
    live = folder / ".selfcorrect" / f".gate.json.{os.getpid()}.0badcafe.tmp"  # a live writer
    for path in [*stale, live]:
        path.write_bytes(b"half a file")
    done = subprocess.run([sys.executable, "-m", "selfcorrect", "run", str(folder)],
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode in (0, 1, 3), done.stderr
    assert [p for p in stale if p.exists()] == []
    assert live.exists()  # never a file a running writer may still rename
