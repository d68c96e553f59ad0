"""Running a command on a fuzzed workflow folder, and the properties every run keeps (rules §16,
rules §17, §19). Shared by tests/test_fuzz.py and tests/test_hostile_input.py.

Whatever the input, a command must:
- exit 0, 1 or 3 (a correct run) or 2 (bad input), never 4 and never with a traceback;
- on exit 2, print `path:line:col: message` naming the file that was broken, and change nothing;
- exit 2 for a broken decision document, and only warn for a broken hook log;
- keep agent text from reaching the terminal raw, or reaching CI output as syntax.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from tests.conftest import tree_digest
from tests.fuzz_strategies import HOSTILE, hostile_text

BASELINE = Path(__file__).resolve().parent / "replay" / "example-workflow"
DECISION = ("selfcorrect.yaml", "validation_report.yaml", "coordination_log.yaml")
LOADS_ALL = {"check", "run", "shadow", "status", "reset", "replay"}  # read every document
VALIDATE_LOADS = ("selfcorrect.yaml", "coordination_log.yaml")  # all `validate` reads
READ_ONLY = {"check", "status", "stats", "replay", "shadow"}  # commands that write nothing
POSITIONED = re.compile(r"^(?P<where>.*?):(?P<line>\d+):(?P<col>\d+): (?P<what>.*)$", re.M)
# The workflow commands selfcorrect prints (cli/ci_formats.py): every annotation has a title;
# agent text may follow the second `::` but never start a line.
OURS = re.compile(
    r"::(error|warning|notice) (file=[^,:]*,)?(line=\d+,)?title=[^,:]*::.*"
    r"|::stop-commands::[0-9a-f]{32}|::[0-9a-f]{32}::"
)

Run = Callable[[list[Any]], Any]


def fresh_folder(factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A new root holding `workflow/`: valid copies of the example workflow's inputs."""
    root = Path(tempfile.mkdtemp(dir=factory.getbasetemp()))
    folder = root / "workflow"
    folder.mkdir()
    for name in (*DECISION, "tool_failures.yaml"):
        shutil.copy(BASELINE / name, folder / name)
    return root, folder


def state(root: Path) -> tuple[dict[str, str], list[str]]:
    """Every file's hash and every folder below `root`, hidden ones included."""
    return tree_digest(root), sorted(str(p) for p in root.rglob("*") if p.is_dir())


# Characters a terminal acts on: C0/C1 controls and DEL (ESC, NUL, CR, BEL, CSI...), the
# Unicode line and paragraph separators, and the bidirectional overrides (Trojan Source).
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def raw_controls(text: str) -> list[str]:
    return sorted(
        {
            repr(ch)
            for ch in text
            if ch not in "\n\t" and (unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI)
        }
    )


def command(name: str, folder: Path, root: Path, draw: Callable[..., Any]) -> list[Any]:
    common = ["--color", "never"]
    if name == "run":
        fmt = draw(st.sampled_from(["text", "json", "github", "sarif", "junit"]))
        return ["run", folder, "--format", fmt, *common]
    if name == "shadow":
        return ["run", folder, "--shadow", *common]
    if name == "reset":
        subject = draw(st.sampled_from(["WI-3", "src/handler.ts", "Bash", *HOSTILE[:8]]))
        evidence = draw(hostile_text().filter(str.strip))  # blank evidence is a usage error
        return ["reset", folder, "--subject", subject, "--evidence", evidence, *common]
    if name == "validate":
        return ["validate", folder, "--output", root / "report.out.yaml", *common]
    if name == "replay":
        return ["replay", folder, *common]
    fmt = draw(st.sampled_from(["text", "json"]))
    return [name, folder, "--format", fmt, *common]


def assert_sound(
    result: Any, args: list[Any], before: Any, after: Any, broken: list[str]
) -> list[re.Match[str]]:
    """The properties every command keeps on any input; returns the positioned errors."""
    name = "shadow" if "--shadow" in args else str(args[0])
    shown = f"{args!r}\nexit {result.exit_code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.exit_code in (0, 1, 2, 3), shown
    assert "Traceback" not in result.stdout + result.stderr, shown
    assert "internal error" not in result.stderr, shown
    fmt = args[args.index("--format") + 1] if "--format" in args else "text"
    assert not raw_controls(result.stderr), shown
    if fmt == "text":
        assert not raw_controls(result.stdout), shown
    diagnostics = result.stderr
    if name == "check":  # check prints its findings to stdout: they are its output
        listed = json.loads(result.stdout)["diagnostics"] if fmt == "json" else None
        diagnostics = (
            result.stdout
            if listed is None
            else "\n".join(
                # JSON carries a hostile file name raw: one line per diagnostic here
                f"{_one_line(d['path'])}:{d['line']}:{d['col']}: {_one_line(d['message'])}"
                for d in listed
                if d["severity"] == "error"
            )
        )
    errors = [m for m in POSITIONED.finditer(diagnostics) if not m["what"].startswith("warning:")]
    if result.exit_code == 2:
        assert before == after, f"exit 2 but the folder changed\n{shown}"
        assert errors or "Error:" in result.stderr, f"exit 2 without a position\n{shown}"
        for error in errors:  # the example's other inputs are valid: only ours can be named
            named = any(b in error["where"] or _one_line(b) in error["where"] for b in broken)
            # ... unless the fuzzed policy's limits.max_bytes refuses them.
            assert named or "limits.max_bytes" in error["what"], f"names a valid file\n{shown}"
    if name in READ_ONLY:
        assert before == after, f"{name} wrote something\n{shown}"
    if result.exit_code != 2:
        assert_format(fmt, result, shown)
    return errors


def _one_line(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def assert_format(fmt: str, result: Any, shown: str) -> None:
    if fmt in ("json", "sarif"):
        loaded = json.loads(result.stdout)
        assert fmt == "json" or loaded["version"] == "2.1.0", shown
    elif fmt == "junit":
        ET.fromstring(result.stdout.encode())
    elif fmt == "github":
        for stream in (result.stdout, result.stderr):
            # The runner splits lines on CR and LF, and trims leading white space.
            for line in re.split(r"\r\n|\r|\n", stream):
                if line.lstrip().startswith("::"):
                    assert OURS.fullmatch(line), f"workflow command from agent text\n{shown}"


def judge(
    run_line: Run,
    root: Path,
    folder: Path,
    name: str,
    draw: Callable[..., Any],
    broken: dict[str, str],
    decision: bool,
) -> Any:
    """Run one command on the prepared folder and hold it to the properties."""
    args = command(name, folder, root, draw)
    before = state(root)
    result = run_line(args)
    errors = assert_sound(result, args, before, state(root), list(broken))
    shown = f"{args!r} on {broken}\n{result.stdout}\n{result.stderr}"
    expect = set(broken.values())
    loads = name in LOADS_ALL or (
        name == "validate" and any(n in b for b in broken for n in VALIDATE_LOADS)
    )
    if decision and loads and expect == {"invalid"}:
        assert result.exit_code == 2 and errors, f"a broken document was accepted\n{shown}"
    if not decision or expect == {"valid"}:
        usage = not errors and "Error:" in result.stderr
        assert result.exit_code != 2 or usage, f"a valid input was refused\n{shown}"
    if name in ("run", "reset") and result.exit_code != 2:
        again = run_line(["check", folder, "--color", "never"])
        # The policy is the person's, never written by run or reset: what check says of it (a
        # command nobody allowed, a program or template this machine lacks) is no write of theirs.
        policy = f"{folder / 'selfcorrect.yaml'}:"
        written = [
            line
            for line in again.stdout.splitlines()
            if line.startswith(str(folder)) and not line.startswith(policy)
        ]
        assert again.exit_code == 0 or (again.stdout.startswith(policy) and not written), (
            f"what {name} wrote does not read back\n{again.stdout}"
        )
    return result
