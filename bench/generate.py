"""Deterministic, realistic tool-failure logs for the benchmark (rules §2.1, §18).

`write_canonical` writes the canonical block-list form; `write_dialect` writes byte for byte what
cAgents' hook (tool-failure-tracker.cjs) appends, raw backslashes and control characters included.
Both render the same entries for a given seed, so the two files describe the same history.
"""

from __future__ import annotations

import argparse
import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

DIALECT_HEADER = "# Tool Failure Log\n# Session: {session}\n\nfailures:"
_START = datetime(2026, 8, 5, 14, 0, 0, tzinfo=UTC)
_AGENTS = (
    "3f9c2a71-8d4e-4b6a-9e21-7c5d0f1a2b34",
    "a4f1c2d9e8b7",
    "executor-1",
    "executor-2",
    "b81e0c55-27d3-4f0a-8c6e-9d1f2a3b4c5d",
    "validator",
)
_FILES = (
    "/home/dev/webapp/src/auth/token-store.ts",
    "/home/dev/webapp/src/api/handler.ts",
    "/home/dev/webapp/package-lock.json",
    "src/components/Button.tsx",
    "tests/auth/refresh.test.ts",
    "D:\\a\\app\\util.c",
    "C:\\Users\\dev\\project\\src\\index.ts",
    "C:\\build\\out\\new\\tmp\\report.json",
    "/srv/app/config/settings.py",
    "lib/parser/lexer.rs",
)
_APPROACHES = (
    "null check addition",
    "retry with backoff",
    "rewrite import path",
    "increase timeout",
    "read file first",
    "narrow grep pattern",
)
_LONG = (
    "File content ({n} tokens) exceeds maximum allowed tokens (25000). Please use offset and "
    "limit parameters to read specific portions of the file, or use the GrepTool to search for "
    "specific content."
)
_ERRORS = (
    "TypeError: Cannot read properties of undefined (reading '{word}') at {file}:{line}:{col}",
    "SyntaxError: Unexpected token '<' in JSON at position {line}",
    "SyntaxError: invalid syntax ({word}.py, line {line})",
    "Error: connect ETIMEDOUT 10.0.{col}.{line}:443",
    "ENOENT: no such file or directory, open '{file}'",
    "Command failed with exit code 1 {file}({line},{col}): error C2065: '{word}': undeclared",
    "Command failed with exit code 2 grep: Unmatched ( or \\( in pattern '\\d+(\\.{word}'",
    "String to replace not found in file.\nString: printf('%s\\n', {word});",
    'Command failed with exit code 1 "{word}" is not defined  \u25cf {word} \u203a fails at '
    "line {line}",
    "Command failed with exit code 1 \x1b[31mFAIL\x1b[0m {file} > {word} (line {line})",
    "File has not been read yet. Read it first before writing to it.",
    "",
    _LONG,
    "Command failed with exit code 1  FAIL  tests/auth/refresh.test.ts > refresh > rotates once "
    "TypeError: Cannot read properties of undefined (reading '{word}')     at AuthService.refresh "
    "({file}:{line}:{col})     at processTicksAndRejections (node:internal/process/task_queues)",
)
# Relative frequencies of _ERRORS: ANSI colour codes (raw ESC) and empty errors are rarer.
_WEIGHTS = (6, 4, 3, 4, 5, 3, 2, 3, 2, 1, 4, 1, 5, 5)
_WORDS = ("refreshToken", "userId", "config", "handler", "parseArgs", "token", "session")
_TOOLS = ("Edit", "Edit", "Write", "Bash", "Bash", "Read", "Read", "Grep")
_OUTCOMES = ("failure",) * 8 + ("partial", "success")


@dataclass(frozen=True, slots=True)
class Entry:
    """One generated failure, before rendering."""

    tool: str
    error: str
    timestamp: str
    file_path: str | None
    agent_id: str
    task_id: str
    outcome: str
    approach: str
    recoverable: bool
    read_only: bool
    input_digest: str


def entries(n: int, seed: int = 0) -> Iterator[Entry]:
    """`n` realistic entries, the same ones for the same seed."""
    rng = random.Random(seed)
    moment = _START
    for index in range(n):
        tool = rng.choice(_TOOLS)
        file_path = None if tool == "Bash" or rng.random() < 0.05 else rng.choice(_FILES)
        error = rng.choices(_ERRORS, _WEIGHTS)[0].format(
            word=rng.choice(_WORDS),
            file=rng.choice(_FILES),
            line=rng.randint(1, 2000),
            col=rng.randint(1, 120),
            n=rng.randint(25001, 99999),
        )[:200]  # the hook cuts errors to 200 characters; canonical logs do the same here
        moment += timedelta(milliseconds=rng.randint(50, 90_000))
        digest = hashlib.blake2b(f"{seed}:{index}:{tool}".encode(), digest_size=8).hexdigest()
        yield Entry(
            tool=tool,
            error=error,
            timestamp=moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z",
            file_path=file_path,
            agent_id=rng.choice(_AGENTS),
            task_id=f"WI-{rng.randint(1, 40)}",
            outcome=rng.choice(_OUTCOMES),
            approach=rng.choice(_APPROACHES),
            recoverable=rng.random() >= 0.1,
            read_only=tool in ("Read", "Grep"),
            input_digest=digest,
        )


def _quote(value: str) -> str:
    """A YAML single-quoted scalar (the only escape is a doubled quote)."""
    return "'" + value.replace("'", "''") + "'"


def canonical_entry(entry: Entry) -> str:
    """One canonical block-list item, indented under `failures:`."""
    lines = [f"  - tool: {entry.tool}", f"    error: {_quote(_canonical_error(entry.error))}"]
    lines.append(f"    timestamp: {_quote(entry.timestamp)}")
    if entry.file_path is not None:
        lines.append(f"    file_path: {_quote(entry.file_path)}")
    lines += [
        f"    agent_id: {_quote(entry.agent_id)}",
        f"    task_id: {_quote(entry.task_id)}",
        f"    outcome: {entry.outcome}",
        f"    approach: {_quote(entry.approach)}",
        f"    recoverable: {'true' if entry.recoverable else 'false'}",
        f"    read_only: {'true' if entry.read_only else 'false'}",
        f"    input_digest: {_quote(entry.input_digest)}",
    ]
    return "\n".join(lines) + "\n"


def _canonical_error(error: str) -> str:
    """Single quotes cannot carry a newline or ESC verbatim, so the canonical writer drops them."""
    return error.replace("\n", " ").replace("\x1b", "")


def canonical_value(entry: Entry) -> dict[str, object]:
    """What `canonical_entry(entry)` loads back as."""
    value: dict[str, object] = {
        "tool": entry.tool,
        "error": _canonical_error(entry.error),
        "timestamp": entry.timestamp,
    }
    if entry.file_path is not None:
        value["file_path"] = entry.file_path
    value.update(
        agent_id=entry.agent_id,
        task_id=entry.task_id,
        outcome=entry.outcome,
        approach=entry.approach,
        recoverable=entry.recoverable,
        read_only=entry.read_only,
        input_digest=entry.input_digest,
    )
    return value


def dialect_entry(
    tool: str,
    file_path: str | None,
    error: str,
    timestamp: str,
    agent_id: str,
    recoverable: bool,
) -> str:
    """The hook's template, verbatim: raw text inside double quotes, nothing escaped."""
    text = f'\n- tool: "{tool}"'
    if file_path:
        text += '\n  file_path: "' + file_path.replace('"', "'") + '"'
    safe_error = error[:200].replace('"', "'").replace("\n", " ")
    text += f'\n  error: "{safe_error}"\n  timestamp: "{timestamp}"\n  agent_id: "{agent_id}"'
    return text + f"\n  recoverable: {'true' if recoverable else 'false'}\n"


def dialect_value(entry: Entry) -> dict[str, object]:
    """What the hook's rules read back from `dialect_entry` for this entry."""
    value: dict[str, object] = {"tool": entry.tool}
    if entry.file_path:
        value["file_path"] = entry.file_path.replace('"', "'")
    value.update(
        error=entry.error[:200].replace('"', "'").replace("\n", " "),
        timestamp=entry.timestamp,
        agent_id=entry.agent_id,
        recoverable=entry.recoverable,
    )
    return value


def write_canonical(path: Path | str, n: int, seed: int = 0) -> Path:
    """Write a canonical tool_failures.yaml of `n` entries."""
    path = Path(path)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write("# Tool failures (canonical form), generated by bench/generate.py\nfailures:\n")
        out.writelines(canonical_entry(entry) for entry in entries(n, seed))
    return path


def write_dialect(path: Path | str, n: int, seed: int = 0) -> Path:
    """Write a tool_failures.yaml of `n` entries exactly as cAgents' hook does."""
    path = Path(path)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(DIALECT_HEADER.format(session=f"act_bench-seed-{seed}_260805_001"))
        for e in entries(n, seed):
            out.write(
                dialect_entry(e.tool, e.file_path, e.error, e.timestamp, e.agent_id, e.recoverable)
            )
    return path


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.generate --entries N --form canonical|dialect OUT`."""
    parser = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__)
    parser.add_argument("out", type=Path, help="file to write")
    parser.add_argument("--entries", type=int, default=100_000, metavar="N")
    parser.add_argument("--form", choices=("canonical", "dialect"), default="canonical")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    writer = write_canonical if args.form == "canonical" else write_dialect
    writer(args.out, args.entries, args.seed)
    print(f"wrote {args.entries} {args.form} entries to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
