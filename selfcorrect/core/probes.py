"""Entries of the failure log that count nothing: probes and interrupted calls (rules §7).

Pure. A shell call that asked a question and got "no" is an answer, not a failure: `grep`
finding nothing, `test -f` on a missing file, `diff` of two files that differ all exit 1. Such
a call (its program in `policy.probe_commands`, exit code 1, no error text beyond it) is
logged `outcome: probe`; a call the person interrupted is `outcome: interrupted`. Neither feeds
a signal, a budget or the gate. The reader applies the same rule to an entry another writer
logged as a plain failure, when the entry carries the call's `command`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from selfcorrect.core.model import Failure, Outcome

# Tools that run a shell command (Claude Code's Bash; other hosts name theirs so).
SHELL_TOOLS = frozenset({"bash", "shell", "run_shell_command"})
UNCOUNTED = frozenset({Outcome.PROBE, Outcome.INTERRUPTED})
# What a host writes for a call that exited non-zero: "Exit code 1", "exited with code 1".
_EXIT = re.compile(
    r"\A\s*(?:error:\s*)?(?:command\s+failed\s+with\s+)?exit(?:ed\s+with)?\s+(?:code|status)"
    r"\s*:?\s*(\d+)\b",
    re.IGNORECASE,
)
# Words that make the rest of the text an error, not just the answer's output (diff's lines).
_ERROR_WORDS = re.compile(
    r"error|fatal|denied|no\s+such\s+file|not\s+found|invalid|usage:|unrecognized|illegal"
    r"|cannot|can't|traceback|exception|permission",
    re.IGNORECASE,
)
# Shell syntax after which the exit code may not be the probe's own.
_COMPOUND = ("$(", "`")
_OPERATORS = frozenset("();<>|&")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def exit_code(error: str) -> int | None:
    """The exit code a host's failure text starts with, else None."""
    match = _EXIT.match(error)
    return int(match.group(1)) if match else None


def command_words(command: str) -> list[str] | None:
    """The words of one simple command, its leading `VAR=value` assignments dropped; None for
    a pipeline, a list (`;`, `&&`), a redirection or a substitution, whose exit code may be
    another program's, or for text that does not split."""
    if any(mark in command for mark in _COMPOUND):
        return None
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    if any(word and set(word) <= _OPERATORS for word in words):
        return None
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    return words or None


class Probes:
    """The policy's probe commands, ready to recognise a probe."""

    __slots__ = ("_commands",)

    def __init__(self, commands: Iterable[tuple[str, ...]]) -> None:
        self._commands = tuple(tuple(words) for words in commands if words)

    def is_probe(self, tool: str, command: str | None, error: str) -> bool:
        """A shell call of a probe program that exited 1 with nothing but its answer."""
        if tool.casefold() not in SHELL_TOOLS or not command or exit_code(error) != 1:
            return False
        rest = _EXIT.sub("", error, count=1)
        if _ERROR_WORDS.search(rest):
            return False
        words = command_words(command)
        if not words:
            return False
        words[0] = words[0].rsplit("/", 1)[-1]  # /usr/bin/grep is grep
        return any(tuple(words[: len(probe)]) == probe for probe in self._commands)

    def counted(self, failure: Failure) -> bool:
        """Does this entry count toward signals, budgets and the gate? Not a probe or an
        interrupted call, whoever logged it."""
        if failure.outcome in UNCOUNTED:
            return False
        if failure.outcome is not Outcome.FAILURE:
            return True
        extra = failure.extra
        if not extra:
            return True  # the common entry: no command, no interrupt flag
        if extra.get("is_interrupt") is True:
            return False
        command = extra.get("command")
        if not isinstance(command, str):
            return True
        return not self.is_probe(failure.tool, command, failure.error)
