"""Fixes that run, stay in scope, are undone when they hurt, and survive a crash (rules §4, §9).

Every test works on a real git repository in tmp_path, with real fixers and a real validator
script run as subprocesses; nothing is mocked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from selfcorrect.io.programs import locate
from selfcorrect.io.yaml_nodes import FastLoader
from tests.helpers import UNUSED, allow, git, journal, project

RUFF = locate("ruff")

# A validator: runs ruff on app.py and writes a canonical report (rules §2.2).
RUFF_VALIDATOR = f"""
import json, os, pathlib, subprocess
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
out = subprocess.run([{RUFF!r}, "check", "--output-format", "json", "app.py"],
                     capture_output=True, text=True).stdout
issues = [{{"id": f"R{{n}}", "type": "linting_errors", "severity": "MAJOR",
           "description": f"{{d['code']}} {{d['message']}}", "target": "app.py"}}
          for n, d in enumerate(json.loads(out or "[]"))]
status = "FIXABLE" if issues else "PASS"
(folder / "validation_report.yaml").write_text(json.dumps({{"status": status, "issues": issues}}))
"""

# A validator that counts the word BAD in app.py: each one is a CRITICAL issue.
BAD_VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
text = pathlib.Path("app.py").read_text()
issues = [{"id": "L1", "type": "linting_errors", "severity": "MINOR",
           "description": "style: line too loose", "target": "app.py"}] if "loose" in text else []
issues += [{"id": f"B{n}", "type": "acceptance_criterion_unmet", "severity": "CRITICAL",
            "description": f"BAD marker {n}", "target": "app.py"}
           for n in range(text.count("BAD"))]
(folder / "validation_report.yaml").write_text(
    json.dumps({"status": "FIXABLE" if issues else "PASS", "issues": issues}))
"""


def report(repo: Path) -> dict:
    return yaml.load((repo / "workflow" / "validation_report.yaml").read_text(), Loader=FastLoader)


def test_the_loop_reaches_pass_with_the_real_ruff_fixer(tmp_path: Path, run_line) -> None:
    assert RUFF, "the test extra installs ruff"
    repo = project(tmp_path, RUFF_VALIDATOR)

    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])

    assert result.exit_code == 0, result.stdout + result.stderr
    out = json.loads(result.stdout)
    assert (out["result"], out["cycles"]) == ("PASS", 1)
    assert (repo / "app.py").read_text() == "\nprint('hello')\n"  # ruff removed both imports
    assert report(repo)["status"] == "PASS"
    path = [(r["from"], r["to"]) for r in journal(repo) if r["event"] == "transition"]
    assert path == [
        ("observed", "classified"),
        ("classified", "preflight"),
        ("preflight", "remediating"),
        ("remediating", "verifying"),
        ("verifying", "recovered"),
    ]
    # The lint issue names no task: failed_items (the controller's work items) stays
    # untouched, byte for byte (docs/rules.md §9.6: tasks only).
    assert (repo / "workflow" / "coordination_log.yaml").read_text() == (
        "# the controller's log\ncontroller: lead   # keep\nstatus: in_progress\n"
    )


SCOPE_FIXER = """
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text("print('fixed')\\n")
pathlib.Path("other.py").write_text("x = 'written outside my scope'\\n")
pathlib.Path("workflow/coordination_log.yaml").open("a").write("# a person wrote this\\n")
"""


def test_a_fixer_outside_its_scope_is_undone_and_escalated(tmp_path: Path, run_line) -> None:
    policy = (
        f"issue_types:\n  linting_errors:\n    fix:\n      - command: [{sys.executable}, "
        "fixer.py, '{target}']\n"
    )
    repo = project(tmp_path, RUFF_VALIDATOR, policy)
    (repo / "other.py").write_text("x = 1\n")
    (repo / "fixer.py").write_text(SCOPE_FIXER)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fixer")

    result = run_line(["run", repo / "workflow", "--validate-first"])

    assert result.exit_code == 1, result.stdout + result.stderr
    assert (repo / "app.py").read_text() == UNUSED  # byte for byte
    assert (repo / "other.py").read_text() == "x = 1\n"
    # The fixer's write to the workflow folder is a violation too, and undone.
    assert "# a person wrote this" not in (repo / "workflow" / "coordination_log.yaml").read_text()
    escalations = yaml.load(
        (repo / "workflow" / "escalations.yaml").read_text(), Loader=FastLoader
    )["escalations"]
    assert "outside its scope" in escalations[0]["reason"]
    steps = [(r["from"], r["to"]) for r in journal(repo) if r["event"] == "transition"]
    assert ("verifying", "compensating") in steps and ("compensating", "escalated") in steps


def test_a_fix_that_makes_the_report_worse_is_rolled_back(tmp_path: Path, run_line) -> None:
    fixer = (
        "import pathlib, sys\np = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('loose', 'tight') + '# BAD BAD\\n')\n"
    )
    policy = (
        f"issue_types:\n  linting_errors:\n    fix:\n      - command: [{sys.executable}, "
        "fixer.py, '{target}']\n"
    )
    repo = project(tmp_path, BAD_VALIDATOR, policy, app="x = 'loose'\n")
    (repo / "fixer.py").write_text(fixer)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fixer")

    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])

    assert (repo / "app.py").read_text() == "x = 'loose'\n"  # restored
    assert [i["type"] for i in report(repo)["issues"]] == ["linting_errors"]  # re-validated
    out = json.loads(result.stdout)
    assert out["result"] == "BLOCKED" and result.exit_code == 1
    escalated = yaml.load((repo / "workflow" / "escalations.yaml").read_text(), Loader=FastLoader)[
        "escalations"
    ]
    assert "scored worse" in escalated[0]["reason"]


def test_a_validator_that_does_not_rewrite_the_report_never_yields_pass(
    tmp_path: Path, run_line
) -> None:
    repo = project(tmp_path, "pass  # writes nothing\n")
    (repo / "workflow" / "validation_report.yaml").write_text(
        "status: FIXABLE\nissues:\n  - {type: linting_errors, severity: MAJOR, "
        "description: 'F401 unused import', target: app.py}\n"
    )

    result = run_line(["run", repo / "workflow", "--format", "json"])

    out = json.loads(result.stdout)
    assert out["result"] != "PASS" and result.exit_code != 0
    assert any("uncertain" in why for why in out["why"])
    assert (repo / "app.py").read_text() == "\nprint('hello')\n"  # the fix itself did run


LOGGING_FIXER = "import pathlib, sys\npathlib.Path('fixer.log').open('a').write(repr(sys.argv))\n"


def test_hostile_targets_never_reach_a_fixer_or_a_shell(tmp_path: Path, run_line) -> None:
    policy = (
        f"issue_types:\n  linting_errors:\n    fix:\n      - command: [{sys.executable}, "
        "fixer.py, '{target}']\n        applies_to: ['*']\n"
    )
    repo = project(tmp_path, "pass\n", policy)
    (repo / "fixer.py").write_text(LOGGING_FIXER)
    hostile = [
        "--output=x",
        "../../etc/passwd",
        "/etc/passwd",
        "a; rm -rf /",
        "$(touch pwned)",
        "`touch pwned`",
        "app.py\nmore",
    ]
    issues = [
        {
            "type": "linting_errors",
            "severity": "MAJOR",
            "description": f"lint {n}",
            "target": target,
        }
        for n, target in enumerate(hostile)
    ]
    (repo / "workflow" / "validation_report.yaml").write_text(
        json.dumps({"status": "FIXABLE", "issues": issues})
    )

    result = run_line(["run", repo / "workflow", "--format", "json"])

    assert not (repo / "fixer.log").exists()  # the fixer never ran
    assert not (repo / "pwned").exists() and not Path("pwned").exists()
    assert result.exit_code == 1
    reasons = [e for e in json.loads(result.stdout)["issues"]]
    assert all(i["classification"] == "BLOCKED" for i in reasons)


SLOW_FIXER = (
    "import pathlib, sys, time\npathlib.Path('calls.log').open('a').write('x\\n')\ntime.sleep(60)\n"
)


def test_a_crash_mid_fix_is_reconciled_not_repeated(tmp_path: Path) -> None:
    policy = (
        f"issue_types:\n  linting_errors:\n    fix:\n      - command: [{sys.executable}, "
        "fixer.py, '{target}']\n"
    )
    repo = project(tmp_path, RUFF_VALIDATOR, policy)
    (repo / "fixer.py").write_text(SLOW_FIXER)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fixer")
    argv = [sys.executable, "-m", "selfcorrect", "run", str(repo / "workflow"), "--validate-first"]
    proc = subprocess.Popen(
        argv, cwd=repo, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not (repo / "calls.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (repo / "calls.log").exists(), "the fixer never started"
    # selfcorrect and its fixer, mid-remediation: the fixer runs in its own session, so a
    # process-group kill would miss it; kill the whole tree, as a container stop would.
    from tests.hardening import sigkill

    sigkill(proc, "tree")
    proc.wait()
    started = [r for r in journal(repo) if r.get("status") == "remediating"]
    assert len(started) == 1

    again = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=120)

    # Its retry is spent: the agent gets the ladder's step 1, the fixer is not run again.
    assert again.returncode == 3, again.stdout + again.stderr
    assert (repo / "calls.log").read_text() == "x\n"  # the fixer ran once, never again
    records = journal(repo)
    assert [r["attempt"] for r in records if r.get("status") == "remediating"] == [1]
    handed = [r for r in records if r.get("event") == "issue" and r.get("status") == "directive"]
    assert [(r["attempt"], r["reason"]) for r in handed] == [(2, "LADDER")]  # counted once


DOCS_VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
issues = [] if pathlib.Path("docs/auth.md").exists() else [
    {"id": "D1", "type": "missing_documentation", "severity": "MINOR",
     "description": "docs/auth.md is missing", "target": "docs/auth.md"}]
(folder / "validation_report.yaml").write_text(
    json.dumps({"status": "FIXABLE" if issues else "PASS", "issues": issues}))
"""
AGENT = """
import pathlib, sys
prompt = pathlib.Path(sys.argv[1]).read_text()
pathlib.Path("agent.log").open("a").write(sys.argv[1] + "\\n")
if "docs/auth.md" in prompt:
    pathlib.Path("docs").mkdir(exist_ok=True)
    pathlib.Path("docs/auth.md").write_text("# Auth\\n401 when the session expired.\\n")
"""


def test_the_agent_command_gets_the_prompt_and_the_loop_revalidates(
    tmp_path: Path, run_line
) -> None:
    policy = f"agent:\n  command: [{sys.executable}, agent.py]\n"
    repo = project(tmp_path, DOCS_VALIDATOR, policy)
    (repo / "agent.py").write_text(AGENT)

    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])

    assert result.exit_code == 0, result.stdout + result.stderr
    assert (repo / "docs" / "auth.md").exists()
    calls = (repo / "agent.log").read_text().splitlines()
    assert len(calls) == 1 and calls[0].endswith(".md")
    assert json.loads(result.stdout)["cycles"] == 1
    assert [r["event"] for r in journal(repo)].count("agent") == 1


STUBBORN_VALIDATOR = """
import json, os, pathlib
folder = pathlib.Path(os.environ["SELFCORRECT_DIR"])
issue = {"id": "S1", "type": "linting_errors", "severity": "MAJOR",
         "description": "E501 line too long", "target": "app.py"}
(folder / "validation_report.yaml").write_text(json.dumps({"status": "FIXABLE", "issues": [issue]}))
"""
APPENDING_FIXER = "import pathlib, sys\npathlib.Path(sys.argv[1]).open('a').write('# tried\\n')\n"


def test_issues_still_open_when_the_cycles_run_out_are_escalated(tmp_path: Path, run_line) -> None:
    policy = (
        f"caps:\n  global_cycles: 2\nissue_types:\n  linting_errors:\n    retries: 5\n"
        f"    fix:\n      - command: [{sys.executable}, fixer.py, '{{target}}']\n"
    )
    repo = project(tmp_path, STUBBORN_VALIDATOR, policy)
    (repo / "fixer.py").write_text(APPENDING_FIXER)

    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])

    out = json.loads(result.stdout)
    assert (out["result"], out["cycles"], result.exit_code) == ("BLOCKED", 2, 1)
    assert (repo / "app.py").read_text().count("# tried") == 2  # one fix per cycle, no more
    (issue,) = out["issues"]
    assert (issue["classification"], issue["reason"]) == ("BLOCKED", "CAPS_EXHAUSTED")
    escalations = yaml.load(
        (repo / "workflow" / "escalations.yaml").read_text(), Loader=FastLoader
    )["escalations"]
    assert "2 correction cycles, the global cap" in escalations[0]["reason"]
    assert run_line(["run", repo / "workflow"]).exit_code == 1  # stays blocked: no third try
    assert (repo / "app.py").read_text().count("# tried") == 2


def adr_repo(tmp_path: Path) -> Path:
    """A git repository whose ADR breaks its template: restructure_to_template fixes it."""
    repo = tmp_path / "repo"
    (repo / "docs" / "adr").mkdir(parents=True)
    (repo / "docs" / "adr" / "TEMPLATE.md").write_text(
        "# {title}\n\n## Context\n\n## Decision\n\n## Consequences\n"
    )
    (repo / "docs" / "adr" / "0001-tokens.md").write_text(
        "# Rotate refresh tokens once\n\n## Decision\nSingle-flight per session.\n\n"
        "## Context\nTwo tabs refresh at once.\n\n## Notes\nSee WI-1.\n"
    )
    (repo / "workflow").mkdir()
    (repo / "workflow" / "coordination_log.yaml").write_text(
        "controller: lead\nquestions_asked:\n  - question: Where is the token rotated?\n"
        "    delegated_to: backend\n"
        "    answer: It is rotated in src/auth/refresh.ts, inside refreshToken()"
        "\nsynthesized_solution:\n  approach: single-flight the refresh\n  rationale: one "
        "rotation per session\n  implementation_steps: [single-flight the refresh rotation]\n"
    )
    (repo / "workflow" / "selfcorrect.yaml").write_text(
        "checks:\n  templates:\n    - {glob: 'docs/adr/*.md', template: docs/adr/TEMPLATE.md}\n"
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


def test_the_built_in_restructure_loop_passes_with_the_built_in_validator(
    tmp_path: Path, run_line
) -> None:
    """restructure_to_template (rules §9.1) against `selfcorrect validate` (rules §14), both
    built in."""
    repo = adr_repo(tmp_path)

    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])

    assert result.exit_code == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["cycles"] == 1
    assert (repo / "docs" / "adr" / "0001-tokens.md").read_text() == (
        "# Rotate refresh tokens once\n\n## Context\nTwo tabs refresh at once.\n\n"
        "## Notes\nSee WI-1.\n## Decision\nSingle-flight per session.\n\n## Consequences\n\n"
    )
    assert report(repo)["status"] == "PASS"


def test_a_restructure_that_would_lose_the_title_goes_to_the_agent_instead(
    tmp_path: Path, run_line
) -> None:
    """A built-in fix never loses content (docs/policy.md): a template whose title heading
    the document's title does not fit is not applied; the agent gets the directive."""
    repo = adr_repo(tmp_path)
    template = repo / "docs" / "adr" / "TEMPLATE.md"
    template.write_text("# ADR {number}: {title}\n\n## Context\n\n## Decision\n")
    adr = repo / "docs" / "adr" / "0001-tokens.md"
    original = adr.read_bytes()

    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])

    assert result.exit_code == 3, result.stdout + result.stderr  # PENDING: handed to the agent
    assert adr.read_bytes() == original
    issues = json.loads(result.stdout)["issues"]
    issue = next(i for i in issues if i["type"] == "format_violations")
    assert issue["classification"] == "FIXABLE" and issue["reason"] == "FIXABLE"
    assert not any(r.get("event") == "transition" for r in journal(repo))  # no fix ran
    text = "".join(p.read_text() for p in (repo / "workflow" / "recovery").glob("*.md"))
    assert "Restructure to the template" in text and "never write the placeholder" in text


def test_a_read_only_document_fails_its_fix_instead_of_stopping_the_run(
    tmp_path: Path, run_line
) -> None:
    """The built-in fixer never rewrites a file without write bits: the fix fails and goes
    to a person, like any failed fix; the run is not an input error half-way through."""
    repo = adr_repo(tmp_path)
    adr = repo / "docs" / "adr" / "0001-tokens.md"
    adr.chmod(0o444)
    original = adr.read_bytes()

    result = run_line(["run", repo / "workflow", "--validate-first", "--format", "json"])

    assert result.exit_code == 1, result.stdout + result.stderr
    assert adr.read_bytes() == original
    escalations = (repo / "workflow" / "escalations.yaml").read_text()
    assert "autofix failed" in yaml.load(escalations, Loader=FastLoader)["escalations"][0]["reason"]


def test_a_fix_killed_before_its_preflight_is_no_attempt() -> None:
    """rules §9: the plan journals `remediating` before the fixes run; a kill before a fix's
    preflight leaves no transition for it, which proves it never ran (found by tests/
    test_crash.py: 91 of 200 issues were blocked without their fixer ever running)."""
    from selfcorrect.core.state import derive

    handed = {"event": "issue", "fingerprint": "lint@a.py", "status": "remediating", "attempt": 1}
    began = {"event": "transition", "fingerprint": "lint@a.py", "attempt": 1}
    never = derive([handed]).issue("lint@a.py")
    assert (never.attempts, never.status) == (0, None)
    ran = derive([handed, {**began, "from": "preflight", "to": "remediating"}]).issue("lint@a.py")
    assert (ran.attempts, ran.status) == (1, "remediating")
    refused = derive([handed, {**began, "from": "preflight", "to": "escalated"}])
    assert refused.issue("lint@a.py").attempts == 1  # preflight ran and refused: it counts


def test_temp_files_of_dead_writers_are_swept(tmp_path: Path, run_line) -> None:
    """A SIGKILL between writing a temp file and renaming it leaves `.NAME.PID.HEX.tmp`
    behind; the next run removes those whose writer is gone, never a live writer's."""
    folder = tmp_path / "workflow"
    (folder / "recovery").mkdir(parents=True)
    (folder / "coordination_log.yaml").write_text("controller: lead\n")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    stale = [
        folder / f".coordination_log.yaml.{dead}.deadbeef.tmp",
        folder / "recovery" / f".WI-2.md.{dead}.0badcafe.tmp",
    ]
    live = folder / f".coordination_log.yaml.{os.getpid()}.12345678.tmp"
    other = folder / ".notes.tmp"  # not a shape selfcorrect writes
    for path in [*stale, live, other]:
        path.write_text("half")
    assert run_line(["run", folder]).exit_code in (0, 3)
    assert [p.exists() for p in stale] == [False, False]
    assert live.exists() and other.exists()
    stale[0].write_text("half")
    assert run_line(["run", folder, "--shadow"]).exit_code in (0, 3)
    assert stale[0].exists()  # --shadow writes nothing, and removes nothing either


def test_the_default_ruff_fixer_works_outside_git(tmp_path: Path, run_line) -> None:
    """Outside git, scope is checked by content hashes of the whole tree: ruff's cache folder
    used to count as a change outside the scope and undo every fix (found by the fuzzer)."""
    assert RUFF, "the test extra installs ruff"
    project_dir = tmp_path / "plain"
    (project_dir / "workflow").mkdir(parents=True)
    (project_dir / "app.py").write_text(UNUSED)
    (project_dir / "workflow" / "validation_report.yaml").write_text(
        json.dumps(
            {
                "status": "FIXABLE",
                "issues": [
                    {
                        "id": "R1",
                        "type": "linting_errors",
                        "severity": "MAJOR",
                        "description": "F401 unused import",
                        "target": "app.py",
                    }
                ],
            }
        )
    )
    (project_dir / "validate.py").write_text(RUFF_VALIDATOR)
    (project_dir / "workflow" / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\n"
    )
    allow(project_dir / "workflow")  # no git: a person allows the validator
    result = run_line(["run", project_dir / "workflow", "--format", "json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert (project_dir / "app.py").read_text() == "\nprint('hello')\n"  # fixed, and kept


def test_a_dot_slash_target_is_the_same_file_to_the_fixer(tmp_path: Path, run_line) -> None:
    repo = tmp_path / "repo"
    (repo / "workflow").mkdir(parents=True)
    (repo / "app.py").write_text("x = 1\n")
    (repo / "fix.py").write_text(
        "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('x = 2\\n')\n"
    )
    (repo / "validate.py").write_text(
        "import json, os, pathlib\nf = pathlib.Path(os.environ['SELFCORRECT_DIR'])\n"
        "bad = 'x = 1' in pathlib.Path('app.py').read_text()\n"
        "(f / 'validation_report.yaml').write_text(json.dumps({'status': 'FIXABLE' if bad "
        "else 'PASS', 'issues': [{'type': 'linting_errors', 'severity': 'MAJOR', "
        "'description': 'E1 x', 'target': './app.py'}] if bad else []}))\n"
    )
    (repo / "workflow" / "selfcorrect.yaml").write_text(
        f"validator:\n  command: [{sys.executable}, validate.py]\nissue_types:\n"
        f"  linting_errors:\n    fix:\n      - command: [{sys.executable}, fix.py, '{{target}}']"
        "\n"
    )
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=repo, check=True, capture_output=True)
    result = run_line(["run", repo / "workflow", "--validate-first"])
    assert result.exit_code == 0, result.stdout
    assert (repo / "app.py").read_text() == "x = 2\n"
