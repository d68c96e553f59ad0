"""The user documentation is executable: every command in docs/*.md runs here, for real.

How a doc is read (in document order, one fresh workspace per doc, so state carries over from one
command to the next exactly as it would for a reader following the page):

- every line of a ```sh block is a command (a trailing backslash continues it; `#` lines are
  comments);
- every `$ `-prefixed line of a plain ``` (or ```console) block is a command, and the lines after
  it, up to the next `$ ` line or the end of the block, are the output the doc shows;
- a block whose info string carries `file=PATH` (```python file=.claude/hooks/hook.py) is written
  to PATH before the commands after it run.
- ```text, ```yaml and ```json blocks without `file=` never run. Commands that cannot run here
  (installing from PyPI, GitHub Actions, `pre-commit run`, which needs the network) live there,
  and the tests at the end of this file check them another way.

Expected exit code: a trailing `# exit N` comment on the command, parsed here; no comment means 0.

Shown output must be the real output (stdout, then stderr), line for line, except:
- a line that is exactly `...` stands for any number of lines, none included;
- `…` (U+2026, the placeholder) inside a line matches any text within that line: timestamps,
  times of day, run ids, and the trimmed tail of a long line;
- trailing spaces, and blank lines at the start and end of the output, are ignored.

The workspace is a git repository (so the walkthrough's `git checkout`/`git clean` restore works)
holding a copy of the example `workflow/` with the repository's .gitignore, and the real cAgents
session (tests/replay/cagents-session) at cagents-memory/sessions/<id>/, as cAgents lays them out.
`selfcorrect` and `python3` are this checkout's: the folder of sys.executable leads PATH.
A `selfcorrect watch` command without `--once` is started, and stopped with SIGINT once it has
printed its first line (its start-up run); its exit code is then checked like any other.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from selfcorrect import __version__
from tests.conftest import copy_example, copy_session, shipped_example

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SESSION = "cagents-memory/sessions/act_fix-auth-token-refresh_260805_001"
EXIT = re.compile(r"(?:^|\s)#\s*exit\s+(\d+)\b")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<info>.*)$")
WAIT_S = 60  # a bound on a hung command, never a timing assertion
RUNNABLE_DOCS = {"walkthrough.md", "integration.md", "ci.md", "report.md", "commands.md"}


@dataclass(frozen=True)
class Step:
    """One thing a doc does: run a command (exit code, shown output), or write a file."""

    line: int
    command: str = ""
    exit: int = 0
    shown: tuple[str, ...] | None = None
    path: str = ""
    content: str = ""


@dataclass
class Block:
    info: str
    line: int
    body: list[str] = field(default_factory=list)


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a markdown text, with their info strings and first lines."""
    found: list[Block] = []
    current: Block | None = None
    fence = ""
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line.strip())
        if current is None and match:
            current, fence = Block(match["info"].strip(), number + 1), match["fence"]
        elif current is not None and line.strip() == fence:
            found.append(current)
            current = None
        elif current is not None:
            current.body.append(line)
    return found


def command_step(command: str, line: int, shown: list[str] | None = None) -> Step:
    found = EXIT.findall(command)
    code = int(found[-1]) if found else 0
    return Step(line, command=command, exit=code, shown=None if shown is None else tuple(shown))


def steps(text: str) -> list[Step]:
    """Everything a doc runs or writes, in order."""
    out: list[Step] = []
    for block in blocks(text):
        words = block.info.split()
        target = next((w[5:] for w in words if w.startswith("file=")), "")
        if target:
            out.append(Step(block.line, path=target, content="\n".join(block.body) + "\n"))
        elif words[:1] == ["sh"]:
            out.extend(_sh_commands(block))
        elif words[:1] in ([], ["console"]):
            out.extend(_session(block))
    return out


def _sh_commands(block: Block) -> list[Step]:
    out: list[Step] = []
    pending = ""
    for offset, line in enumerate(block.body):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending += "\n"  # bash joins the lines, as in a terminal
            continue
        out.append(command_step(pending, block.line + offset))
        pending = ""
    return out


def _session(block: Block) -> list[Step]:
    out: list[Step] = []
    command, start, shown = "", 0, list[str]()
    for offset, line in enumerate(block.body):
        if line.startswith("$ "):
            if command:
                out.append(command_step(command, start, shown))
            command, start, shown = line[2:], block.line + offset, []
        elif command:
            shown.append(line)
    if command:
        out.append(command_step(command, start, shown))
    return out


def _line_pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in shown.rstrip().split("…")))


def mismatch(shown: tuple[str, ...], output: str) -> str:
    """Why the real output does not match what the doc shows ('' when it does)."""
    actual = [line.rstrip() for line in output.strip("\n").splitlines()]
    wanted = list(shown)
    while wanted and not wanted[0].strip():
        wanted.pop(0)
    while wanted and not wanted[-1].strip():
        wanted.pop()
    segments: list[list[str]] = [[]]
    for line in wanted:
        if line.strip() == "...":
            segments.append([])
        else:
            segments[-1].append(line)
    position = 0
    for index, segment in enumerate(segments):
        top = len(actual) - len(segment)
        low, high = position, top
        if index == 0:
            high = min(high, 0)  # no `...` first: the output starts here
        if index == len(segments) - 1:
            low = max(low, top)  # no `...` last: the output ends here
        found = next((s for s in range(low, high + 1) if _fits(segment, actual, s)), None)
        if found is None:
            return "these shown lines are not in the output, in this order:\n" + "\n".join(segment)
        position = found + len(segment)
    return ""


def _fits(segment: list[str], actual: list[str], start: int) -> bool:
    if start < 0 or start + len(segment) > len(actual):
        return False
    pairs = zip(segment, actual[start : start + len(segment)], strict=True)
    return all(_line_pattern(want).fullmatch(got) for want, got in pairs)


def workspace(root: Path) -> Path:
    """A git repository with the example folder and the real cAgents session, as docs assume."""
    copy_example(root / "workflow")
    shutil.copy(REPO / ".gitignore", root / ".gitignore")
    copy_session(root / SESSION)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "example"]):
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=root, check=True)
    return root


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(LC_ALL="C.UTF-8", PYTHONUTF8="1", USER="ana")
    env.pop("NO_COLOR", None)
    env.pop("FORCE_COLOR", None)
    return env


def run(step: Step, root: Path) -> tuple[int, str]:
    """Run one command in the workspace: its exit code, and stdout followed by stderr."""
    if re.search(r"\bselfcorrect watch\b", step.command) and "--once" not in step.command:
        return _run_watch(step, root)
    done = subprocess.run(
        ["bash", "-c", step.command],
        cwd=root,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stdout + done.stderr


def _run_watch(step: Step, root: Path) -> tuple[int, str]:
    """Start a long-running watcher, wait for its start-up run's line, then press Ctrl-C."""
    with subprocess.Popen(
        ["bash", "-c", step.command],
        cwd=root,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    ) as proc:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], WAIT_S)
        first = proc.stdout.readline() if ready else ""
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:  # deaf to Ctrl-C: a failure, but leave no process
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        return proc.returncode, first + out + err


def play(doc: Path, root: Path) -> None:
    """Follow a doc from top to bottom; fail at the first step that does not do what it says."""
    for step in steps(doc.read_text(encoding="utf-8")):
        where = f"{doc.name}:{step.line}"
        if step.path:
            target = root / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.content, encoding="utf-8")
            continue
        code, output = run(step, root)
        assert code == step.exit, (
            f"{where}: `{step.command}` exited {code}, the doc says {step.exit}\n{output}"
        )
        if step.shown is not None:
            problem = mismatch(step.shown, output)
            assert not problem, f"{where}: `{step.command}`: {problem}\n--- real output:\n{output}"


def test_shown_output_must_match_line_for_line_except_the_placeholders() -> None:
    output = "BLOCKED  run (exit 1)\n\nESC-da5aeb28  WI-3: blocked\nWritten:\n  a.yaml\n"
    assert mismatch(("BLOCKED  run (exit 1)", "", "ESC-…  WI-3: …", "..."), output) == ""
    assert mismatch(("...", "  a.yaml"), output) == ""
    assert mismatch(("BLOCKED  run (exit 1)", "...", "Written:", "  a.yaml"), output) == ""
    assert mismatch(("BLOCKED  run (exit 1)",), output)  # the rest is not shown, nor `...`
    assert mismatch(("...", "ESC-…  WI-4: …", "..."), output)  # a different line
    assert mismatch(("...", "Written:", "ESC-…", "..."), output)  # out of order
    assert mismatch(("...", "  a.yaml", "  b.yaml"), output)  # a line the output lacks


def test_commands_exit_codes_files_and_outputs_are_read_from_the_markdown() -> None:
    text = "\n".join(
        [
            "```sh",
            "# a comment",
            "selfcorrect run workflow/   # exit 1: BLOCKED",
            "echo one \\",
            "  two",
            "```",
            "```python file=hooks/x.py",
            "print('x')",
            "```",
            "```",
            "$ selfcorrect status workflow/",
            "Now: BLOCKED",
            "$ false   # exit 1",
            "```",
            "```text",
            "$ pip install selfcorrect",
            "```",
        ]
    )
    found = steps(text)
    assert [(s.command, s.exit, s.shown, s.path) for s in found] == [
        ("selfcorrect run workflow/   # exit 1: BLOCKED", 1, None, ""),
        ("echo one \\\n  two", 0, None, ""),
        ("", 0, None, "hooks/x.py"),
        ("selfcorrect status workflow/", 0, ("Now: BLOCKED",), ""),
        ("false   # exit 1", 1, (), ""),
    ]
    assert found[2].content == "print('x')\n"


def test_a_doc_whose_command_does_not_do_what_it_says_fails(tmp_path: Path) -> None:
    doc = tmp_path / "wrong.md"
    doc.write_text("```sh\nselfcorrect run workflow/\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="exited 1, the doc says 0"):
        play(doc, workspace(tmp_path / "root"))


def runnable_docs() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md") if steps(p.read_text(encoding="utf-8")))


def test_the_user_docs_have_commands_to_run() -> None:
    assert {p.name for p in runnable_docs()} >= RUNNABLE_DOCS


@pytest.mark.parametrize("doc", runnable_docs(), ids=lambda p: p.name)
def test_every_command_in_the_doc_does_what_the_doc_says(doc: Path, tmp_path: Path) -> None:
    play(doc, workspace(tmp_path))


VENV_SELFCORRECT = ".venv/bin/selfcorrect"


def readme_steps(text: str) -> list[Step]:
    """The README's steps as a clone runs them, once installed: an install command keeps only
    what it runs after installing (`... && .venv/bin/selfcorrect run workflow/`), and the test
    suite's own command is left to .ci/run, which runs the README's two commands in order in a
    fresh clone (tests/test_hermetic_suite.py keeps them the README's)."""
    out = []
    for step in steps(text):
        if "pip install" in step.command:
            after = step.command.rsplit(" && ", 1)[-1]
            if not after.startswith(VENV_SELFCORRECT):
                continue  # `... && .venv/bin/python -m pytest`: this very suite
            step = command_step(after, step.line, list(step.shown or []) or None)
        out.append(step)
    return out


README = REPO / "README.md"
QUICK_START = "Quick start in your own project"


def section(text: str, heading: str) -> str:
    """A `## heading` section of a markdown text, its heading line included ('' if none)."""
    match = re.search(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", text, flags=re.M | re.S)
    return match[0] if match else ""


def test_the_readme_does_what_it_says(tmp_path: Path) -> None:
    """The README's commands, in order, on the example, outputs compared (its install commands'
    tails, with the interpreter's installed `selfcorrect` as the venv's). The quick start runs
    in a project of its own (test_quick_start_walks_as_written)."""
    root = workspace(tmp_path)
    venv_bin = root / VENV_SELFCORRECT
    venv_bin.parent.mkdir(parents=True)
    venv_bin.symlink_to(Path(sys.executable).parent / "selfcorrect")
    text = README.read_text(encoding="utf-8")
    quick = section(text, QUICK_START)
    found = readme_steps(text.replace(quick, "\n" * quick.count("\n")))  # lines stay numbered
    commands = [step.command for step in found]
    assert commands[0] == ".venv/bin/selfcorrect run workflow/   # exit 1", commands
    assert any("stats workflow/" in c for c in commands) and any("reset" in c for c in commands)
    for step in found:
        code, output = run(step, root)
        assert code == step.exit, f"README.md:{step.line}: `{step.command}` exited {code}\n{output}"
        if step.shown is not None:
            problem = mismatch(step.shown, output)
            assert not problem, f"README.md:{step.line}: {problem}\n--- real output:\n{output}"


def test_policy_reference_is_generated_from_the_schema_and_the_defaults() -> None:
    fresh = subprocess.run(
        [sys.executable, str(DOCS / "gen_policy.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=WAIT_S,
    ).stdout
    current = (DOCS / "policy.md").read_text(encoding="utf-8")
    assert current == fresh, (
        "docs/policy.md is stale: run `python docs/gen_policy.py > docs/policy.md` "
        "from the repository root (with the venv's python)"
    )


# --- the blocks that cannot run as they are, checked another way ------------------------------


def yaml_blocks(doc: str) -> list[Any]:
    text = (DOCS / doc).read_text(encoding="utf-8")
    return [yaml.safe_load("\n".join(b.body)) for b in blocks(text) if b.info == "yaml"]


def file_block(doc: str, path: str) -> str:
    found = [s.content for s in steps((DOCS / doc).read_text(encoding="utf-8")) if s.path == path]
    assert len(found) == 1, f"{doc} has no single block for {path}"
    return found[0]


def test_the_hook_commands_install_writes_run_as_claude_code_would(tmp_path: Path) -> None:
    """integration.md §2: the settings `install` writes hold commands that work from any folder,
    with only $CLAUDE_PROJECT_DIR to find the project (Claude Code runs them through a shell)."""
    root = workspace(tmp_path / "project")
    env = environment() | {"CLAUDE_PROJECT_DIR": str(root)}
    subprocess.run(
        ["selfcorrect", "install", "claude-code", "-q"],
        cwd=root,
        env=env,
        check=True,
        timeout=WAIT_S,
    )
    subprocess.run(
        ["selfcorrect", "run", "workflow", "-q"], cwd=root, env=env, timeout=WAIT_S, check=False
    )
    # selfcorrect is outside the project: its absolute path, in the personal settings file.
    settings = json.loads((root / ".claude/settings.local.json").read_text(encoding="utf-8"))

    def command(event: str) -> str:
        [entry] = settings["hooks"][event]
        [hook] = entry["hooks"]
        return str(hook["command"])

    def host(event: str, payload: dict[str, object]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command(event)],
            cwd=tmp_path,  # Claude Code may run hooks from elsewhere: paths come from the env
            env=env,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )

    edit = {"tool_name": "Edit", "tool_input": {"file_path": str(root / "src/handler.ts")}}
    gate = host("PreToolUse", edit)
    assert gate.returncode == 0 and gate.stderr == ""
    assert json.loads(gate.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "ESC-da5aeb28" in gate.stdout  # the example's WI-3 is blocked on a person
    failed = host("PostToolUseFailure", {"tool_name": "Bash", "error": "EACCES: open"})
    assert failed.returncode == 0 and failed.stderr == ""
    assert "EACCES" in (root / "workflow" / "tool_failures.yaml").read_text(encoding="utf-8")
    for event in ("PreCompact", "SubagentStop", "Stop"):
        done = host(event, {"session_id": "s", "stop_hook_active": False})
        assert done.returncode == 0 and done.stderr == "", (event, done.stderr)


def test_pre_commit_hooks_run_what_the_docs_say(tmp_path: Path) -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    documented = {s.command.split("#")[0].strip() for s in steps_of("integration.md")}
    root = workspace(tmp_path)
    expected = {"selfcorrect-check": 0, "selfcorrect-run": 1}  # the example is BLOCKED
    for hook in hooks:
        command = " ".join([hook["entry"], *hook["args"]])
        assert command in documented, f"docs/integration.md does not show `{command}`"
        assert re.match(hook["files"], "workflow/tool_failures.yaml")
        before = tree(root / "workflow")
        done = subprocess.run(
            command.split(), cwd=root, env=environment(), capture_output=True, timeout=WAIT_S
        )
        assert done.returncode == expected[hook["id"]], done.stderr
        assert tree(root / "workflow") == before, f"{hook['id']} wrote in the folder"
    for config in yaml_blocks("ci.md"):
        if isinstance(config, dict) and "repos" in config:
            ids = {h["id"] for repo in config["repos"] for h in repo["hooks"]}
            assert ids == {hook["id"] for hook in hooks}


def steps_of(doc: str) -> list[Step]:
    return steps((DOCS / doc).read_text(encoding="utf-8"))


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


OUTPUT = re.compile(r"steps\.(\w+)\.outputs\.(\w+)")


def condition(expression: str, outputs: dict[str, dict[str, str]]) -> bool:
    """The two `if:` forms docs/ci.md uses, evaluated the way GitHub Actions does."""

    def value(reference: str) -> str:
        step, name = reference.split(".")[1::2]
        return outputs.get(step, {}).get(name, "")

    listed = re.fullmatch(r"contains\(fromJSON\('(.*)'\), (steps\.\w+\.outputs\.\w+)\)", expression)
    if listed:
        return value(listed[2]) in json.loads(listed[1])
    terms = [
        re.fullmatch(r"(steps\.\w+\.outputs\.\w+) (!=|==) '(\w*)'", t.strip())
        for t in expression.split("&&")
    ]
    assert all(terms), f"tests/test_docs.py cannot evaluate `if: {expression}`: teach it"
    return all((value(t[1]) == t[3]) == (t[2] == "==") for t in terms if t)


def test_the_github_actions_steps_in_ci_md_run_and_fail_the_job_when_blocked(
    tmp_path: Path,
) -> None:
    """The documented job's `run:` steps, in order, on the example (BLOCKED), with their `if:`
    conditions: the SARIF is written and uploaded, then the last step fails the job. The
    annotations-only variant fails its step. (`pip install selfcorrect` needs PyPI: skipped.)"""
    [job] = [
        b["jobs"]["selfcorrect"]["steps"]
        for b in yaml_blocks("ci.md")
        if isinstance(b, dict) and "selfcorrect" in b.get("jobs", {})
    ]
    [variant] = [b for b in yaml_blocks("ci.md") if isinstance(b, list)]
    ran = play_job(job, workspace(tmp_path / "job"))
    assert ran[-1] == (job[-1]["name"], 1), ran  # only the last step fails
    assert ("Upload SARIF", 0) in ran
    assert play_job(variant, workspace(tmp_path / "variant")) == [("Correction run", 1)]


def play_job(job: list[dict[str, Any]], root: Path) -> list[tuple[str, int]]:
    """Run a job's steps like a runner (bash -eo pipefail, $GITHUB_OUTPUT) until one fails."""
    outputs: dict[str, dict[str, str]] = {}
    ran: list[tuple[str, int]] = []
    for step in job:
        if "if" in step and not condition(step["if"], outputs):
            continue
        if "upload-sarif" in step.get("uses", ""):
            log = json.loads((root / step["with"]["sarif_file"]).read_text(encoding="utf-8"))
            assert log["version"] == "2.1.0" and log["runs"][0]["results"]
            ran.append((step["name"], 0))
        if "run" not in step or "pip install" in step["run"]:
            continue
        github_output = root / "github_output"
        github_output.write_text("", encoding="utf-8")
        env = environment() | {"GITHUB_OUTPUT": str(github_output)}
        for name, raw in step.get("env", {}).items():
            env[name] = OUTPUT.sub(lambda m: outputs[m[1]][m[2]], raw.strip("${} "))
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
        lines = github_output.read_text(encoding="utf-8").splitlines()
        outputs[step.get("id", "")] = dict(line.split("=", 1) for line in lines)
        ran.append((step.get("name", step["run"]), done.returncode))
        if done.returncode:
            break
    return ran


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def headings(text: str) -> set[str]:
    """GitHub's anchors for the headings of a markdown text (outside code blocks)."""
    anchors: set[str] = set()
    fenced = False
    for line in text.splitlines():
        fenced ^= bool(FENCE.match(line.strip()))
        if not fenced and (match := re.match(r"#{1,6} (.*)", line)):
            words = re.sub(r"[^\w\- ]", "", match[1].strip().lower())
            anchors.add(words.replace(" ", "-"))
    return anchors


def test_links_between_the_docs_lead_somewhere() -> None:
    for doc in [README, REPO / "bench" / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            name, _, anchor = target.partition("#")
            path = (doc.parent / name) if name else doc
            assert path.is_file(), f"{doc.name}: link to missing {target}"
            if anchor and path.suffix == ".md":
                found = headings(path.read_text(encoding="utf-8"))
                assert anchor in found, f"{doc.name}: no heading for #{anchor} in {path.name}"


def test_nothing_claims_init_writes_every_default(run_line) -> None:
    """init writes a short, commented policy (rules §16): the README, `init --help` and the
    example policy say so, and the policy's comment counts cycles per episode, as they are."""
    help_text = run_line(["init", "--help"]).stdout
    for text in (
        help_text,
        (REPO / "README.md").read_text(encoding="utf-8"),
        (DOCS / "commands.md").read_text(encoding="utf-8"),
        (DOCS / "how-it-works.md").read_text(encoding="utf-8"),
        (shipped_example() / "selfcorrect.yaml").read_text(encoding="utf-8"),
    ):
        assert "every default, and why" not in text and "every default and the reason" not in text
        assert "full, commented default policy" not in text
    assert "a short selfcorrect.yaml" in " ".join(help_text.split())
    init_policy = (REPO / "templates" / "init" / "selfcorrect.yaml").read_text(encoding="utf-8")
    assert "correction cycles per episode" in init_policy and "cycles per run" not in init_policy


# --- the README: short, a quick start a new user can follow, one way to name a version --------

README_MAX_LINES = 250
QUICK_START_COMMANDS = [
    "selfcorrect init workflow/",
    "selfcorrect allow workflow/",
    "selfcorrect install claude-code",
    "selfcorrect run workflow/ --validate-first",
    "selfcorrect status workflow/",
    "selfcorrect report workflow/",
]
# The policy file the quick start's yaml block is added to (the README says so before it).
POLICY = "workflow/selfcorrect.yaml"


def test_the_readme_is_short_and_its_sections_come_in_the_order_a_new_user_needs() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < README_MAX_LINES
    order = [QUICK_START, "When a run is BLOCKED", "The example tour"]
    starts = [text.find(f"\n## {heading}\n") for heading in order]
    assert -1 not in starts and starts == sorted(starts), starts
    # the two commands come first, before any section (.ci/run runs them)
    assert text.index(".venv/bin/selfcorrect run workflow/") < starts[0]


@dataclass(frozen=True)
class QuickStep:
    """One step of the quick start: a command, or the policy snippet added to the policy."""

    line: int
    command: str = ""
    policy: str = ""


def quick_start(text: str) -> list[QuickStep]:
    """The quick start's ```sh commands and its one ```yaml block, in the order written."""
    out: list[QuickStep] = []
    body = section(text, QUICK_START)
    offset = text.index(body) if body else 0
    first_line = text[:offset].count("\n")
    for block in blocks(body):
        if block.info == "sh":
            out.extend(QuickStep(first_line + s.line, s.command) for s in _sh_commands(block))
        elif block.info == "yaml":
            out.append(QuickStep(first_line + block.line, policy="\n".join(block.body) + "\n"))
    return out


def installs_selfcorrect(command: str) -> bool:
    return "pip install" in command


def test_the_quick_start_lists_its_commands_in_the_order_a_user_runs_them() -> None:
    text = README.read_text(encoding="utf-8")
    found = quick_start(text)
    assert found and installs_selfcorrect(found[0].command), found
    assert INSTALL_URL.search(found[0].command), found[0].command
    commands = [EXIT.split(step.command)[0].strip() for step in found if step.command]
    assert [c for c in commands if c.startswith("selfcorrect ")] == QUICK_START_COMMANDS
    [policy] = [i for i, step in enumerate(found) if step.policy]
    kinds = ["policy" if s.policy else s.command.split("#")[0].strip() for s in found]
    assert kinds.index("selfcorrect init workflow/") < policy < kinds.index(QUICK_START_COMMANDS[1])
    checks = yaml.safe_load(found[policy].policy)["checks"]["commands"]
    assert {entry["command"][0] for entry in checks} == {"pytest", "ruff"}
    assert POLICY in section(text, QUICK_START)


CALC = {
    # one unused import ruff removes (F401), one undefined name it cannot fix (F821), a bug
    "src/calc/__init__.py": "",
    # not in __init__.py, where ruff's fix of an unused import is unsafe (a re-export?)
    "src/calc/core.py": (
        "import os\n\n\ndef add(a, b):\n    return a - b\n\n\n"
        "def total(values):\n    return sum(valuez)\n"
    ),
    "tests/test_calc.py": (
        "from calc.core import add, total\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_total():\n    assert total([1, 2]) == 3\n"
    ),
    "pyproject.toml": '[project]\nname = "calc"\nversion = "0"\n\n'
    '[tool.pytest.ini_options]\npythonpath = ["src"]\n',
    ".gitignore": ".venv/\n__pycache__/\n.pytest_cache/\n.ruff_cache/\n",
}
FIXED_CALC = "def add(a, b):\n    return a + b\n\n\ndef total(values):\n    return sum(values)\n"


def new_project(root: Path) -> Path:
    """A user's own small project: a git repository, a package, a failing test; no selfcorrect."""
    for rel, content in CALC.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content, encoding="utf-8")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "calc"]):
        subprocess.run(
            [
                "git",
                "-c",
                "init.defaultBranch=main",
                "-c",
                "user.name=ana",
                "-c",
                "user.email=ana@example.org",
                *args,
            ],
            cwd=root,
            check=True,
        )
    return root


def test_quick_start_walks_as_written(tmp_path: Path) -> None:
    """The README's quick start, its commands and its policy snippet taken from the README, in
    a fresh project with real pytest and ruff (the venv's, first on PATH, as for a user who
    installed selfcorrect into the project's environment): ruff fixes what it can and that fix
    is kept, the agent is handed what ruff left, and after the agent's fix the run passes."""
    root = new_project(tmp_path / "calc")
    text = README.read_text(encoding="utf-8")
    codes: dict[str, int] = {}
    for step in quick_start(text):
        where = f"README.md:{step.line}"
        if step.policy:
            with (root / POLICY).open("a", encoding="utf-8") as policy:
                policy.write(step.policy)
            continue
        if installs_selfcorrect(step.command):
            continue  # needs the network: selfcorrect is this checkout's, on PATH
        code, output = run(Step(step.line, command=step.command), root)
        codes[EXIT.split(step.command)[0].strip()] = code
        if "selfcorrect run " not in step.command and "selfcorrect status " not in step.command:
            assert code == 0, f"{where}: `{step.command}` exited {code}\n{output}"
    first = codes["selfcorrect run workflow/ --validate-first"]
    assert first in (1, 3), codes  # a verdict, never "invalid input"
    assert codes["selfcorrect status workflow/"] == first
    assert (root / "workflow" / "report.html").is_file()
    verdict = yaml.safe_load((root / "workflow/validation_report.yaml").read_text(encoding="utf-8"))
    assert verdict.get("status") in {"PASS", "FIXABLE", "BLOCKED"}, (
        f"run --validate-first left no verdict (init's stub taken for a report?): {verdict}"
    )
    source = (root / "src/calc/core.py").read_text(encoding="utf-8")
    assert "import os" not in source, "ruff's partial fix (the unused import) was undone"
    assert "valuez" in source  # what ruff cannot fix is left for the agent
    prompts = {
        p.name: p.read_text(encoding="utf-8") for p in (root / "workflow/recovery").glob("*.md")
    }
    handed = [
        name
        for name, prompt in prompts.items()
        if "F821" in prompt and not prompt.startswith("STATUS: blocked")
    ]
    assert handed, f"no agent directive names what ruff left (F821):\n{prompts}"
    # the agent's fix, then the quick start's run again: PASS
    (root / "src/calc/core.py").write_text(FIXED_CALC, encoding="utf-8")
    again, output = run(Step(0, command="selfcorrect run workflow/ --validate-first"), root)
    assert again == 0, output


# One repository URL and one scheme for what is pinned (docs/ci.md, "Versions and refs").
REPOSITORY = "https://github.com/OWNER/selfcorrect"
INSTALL_URL = re.compile(r"git\+https://github\.com/OWNER/selfcorrect@REF\b")
ANY_REPOSITORY = re.compile(r"github\.com/[\w.-]+/selfcorrect\b|[\w.-]+/selfcorrect@[\w.-]+")
PINS = re.compile(r"(?:uses:\s*[\w.-]+/selfcorrect@|rev:\s*|selfcorrect@)([\w.-]+)")


def user_docs() -> list[Path]:
    return [
        README,
        REPO / "bench" / "README.md",
        *(p for p in sorted(DOCS.glob("*.md")) if p.name != "architecture.md"),
    ]


def test_every_snippet_names_one_repository_and_pins_it_one_way() -> None:
    named, pins = set(), set()
    for doc in user_docs():
        text = doc.read_text(encoding="utf-8")
        named |= {m[0] for m in ANY_REPOSITORY.finditer(text)}
        for block in blocks(text):
            pins |= {
                m[1]
                for m in PINS.finditer("\n".join(block.body))
                if "selfcorrect" in m[0] or "rev:" in m[0]
            }
    assert named == {"github.com/OWNER/selfcorrect", "OWNER/selfcorrect@REF"}, named
    assert pins == {"REF"}, pins
    ci = " ".join((DOCS / "ci.md").read_text(encoding="utf-8").split())
    assert "a release tag once one is released, else a commit sha" in ci
    # the scheme's premise, as the docs state it: no release yet, a development version
    assert f"its version is a development one, `{__version__}`" in ci
    assert ".dev" in __version__
    tags = subprocess.run(["git", "tag"], cwd=REPO, capture_output=True, text=True, check=False)
    assert tags.stdout.strip() == "", "a release is tagged: say so in docs/ci.md and use its tag"


def test_after_the_install_commands_selfcorrect_is_named_bare() -> None:
    """The README's two commands install into .venv/ and say so; every other command on the
    README and in the docs is `selfcorrect ...`, as a user whose environment holds it types it.
    (Prose may still name the path: rules.md says how an agent may spell the program.)"""
    for doc in user_docs():
        found = blocks(doc.read_text(encoding="utf-8"))
        if doc == README:
            assert [b.info for b in found[:2]] == ["sh", "sh"]  # the two commands
            found = found[2:]
        for block in found:
            assert ".venv/bin/selfcorrect" not in "\n".join(block.body), (doc.name, block.line)


def replay_json(folder: str) -> dict[str, Any]:
    done = subprocess.run(
        ["selfcorrect", "replay", folder, "--format", "json"],
        cwd=REPO,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_replay_figures_in_the_docs_are_what_replay_prints() -> None:
    prose = " ".join((DOCS / "commands.md").read_text(encoding="utf-8").split())
    texts = {s["detector"]: s for s in replay_json("tests/replay/failure-texts/")["scores"]}
    typing = texts["typing"]
    total = typing["tp"] + typing["fn"]
    percent = round(100 * typing["tp"] / total)
    assert f"{typing['tp']} of {total} real failure texts" in prose
    assert f"({percent} %), **none wrongly**" in prose and typing["fp"] == 0
    assert f"the other {typing['fn']} are `unknown`" in prose
    sessions = replay_json("tests/replay/real-sessions/")
    scores = {s["detector"]: s for s in sessions["scores"]}
    counted = scores["failures_counted"]
    assert f"**{len(sessions['cases'])} real Claude Code sessions**" in prose
    assert counted["fp"] == 0 and f"{counted['tp']} failures counted of {counted['tp']}" in prose
    assert sum(case["failures"] for case in sessions["cases"]) == counted["tp"]
    for name in ("consecutive_failures", "repeated_error", "agent_retry", "tool_loop"):
        assert scores[f"signal:{name}"]["precision"] == scores[f"signal:{name}"]["recall"] == 1
    assert scores.get("verdict:BLOCKED", {"fp": 0})["fp"] == 0  # no false BLOCKED


def test_the_readmes_measured_figures_are_what_replay_prints() -> None:
    """The README's short "Measured" section says what `replay` prints, the loops that succeed
    included: they never fire on the real sessions (where none is labelled), and both are found
    on the constructed session."""
    prose = " ".join(
        section(
            README.read_text(encoding="utf-8"), "Measured on inputs nobody on the project wrote"
        ).split()
    )
    typing = {s["detector"]: s for s in replay_json("tests/replay/failure-texts/")["scores"]}[
        "typing"
    ]
    total = typing["tp"] + typing["fn"]
    assert f"{typing['tp']} of {total} real failure texts" in prose and typing["fp"] == 0
    sessions = replay_json("tests/replay/real-sessions/")
    scores = {s["detector"]: s for s in sessions["scores"]}
    assert f"**{len(sessions['cases'])} real Claude Code sessions**" in prose
    counted = scores["failures_counted"]
    assert f"{counted['tp']} failures counted of {counted['tp']}" in prose and counted["fp"] == 0
    for name in ("repeated_call", "alternation"):
        assert f"signal:{name}" not in scores  # nothing fired, nothing labelled
        built = {s["detector"]: s for s in replay_json("tests/replay/success-loops/")["scores"]}
        assert built[f"signal:{name}"]["precision"] == built[f"signal:{name}"]["recall"] == 1
    assert "neither fires" in prose and "both score 1.00 and 1.00" in prose


def test_the_bench_figures_say_when_and_on_what_they_were_measured() -> None:
    """The Performance table is a measurement, not the tool's output: its date, machine and code
    stand beside it (bench/README.md), and no user doc repeats its figures."""
    bench = (REPO / "bench" / "README.md").read_text(encoding="utf-8")
    measured = " ".join(section(bench, "The last measured run").split())
    assert re.search(r"on \d{4}-\d{2}-\d{2}, on the 2-core development machine", measured)
    assert re.search(r"of the code of commit [0-9a-f]{7,40} \(version [\w.]+\)", measured)
    for doc in user_docs()[:1] + user_docs()[2:]:
        assert "| ours | anchor | ratio | target |" not in doc.read_text(encoding="utf-8"), doc
