"""Entries of the failure log that count nothing: probes, interrupted calls and an agent's
own verification (rules §7).

Pure. A shell call that asked a question and got "no" is an answer, not a failure: `grep`
finding nothing, `test -f` on a missing file, `diff` of two files that differ all exit 1. Such
a call (its program in `policy.probe_commands`, exit code 1, no error text beyond it) is
logged `outcome: probe`; a call the person interrupted is `outcome: interrupted`. A call that
runs the verification a directive names (the validator's command, `selfcorrect validate`, a
check command of the policy) exits non-zero while any issue is open, whoever runs it: that is
the report's business, `outcome: verification`. None of them feeds a signal, a budget or the
gate. The reader applies the same rules to an entry another writer logged as a plain failure,
when the entry carries the call's `command`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

from selfcorrect.core.model import Failure, Outcome
from selfcorrect.core.unrun import not_run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from selfcorrect.core.policy import Policy

# Tools that run a shell command (Claude Code's Bash; other hosts name theirs so).
SHELL_TOOLS = frozenset({"bash", "shell", "run_shell_command"})
UNCOUNTED = frozenset(
    {Outcome.PROBE, Outcome.INTERRUPTED, Outcome.VERIFICATION, Outcome.CANCELLED, Outcome.DENIED}
)
# selfcorrect's own validator, however the agent starts it.
SELF_VALIDATE = (("selfcorrect", "validate"), ("python", "-m", "selfcorrect", "validate"))
# What separates the simple commands of a list: each may be the verification.
_LIST = re.compile(r"&&|\|\||;|\n")
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


def _program(word: str) -> str:
    """A program as the agent may spell it: `/usr/bin/grep` is grep, `python3.11` is python,
    `./tools/check.py` is tools/check.py."""
    name = word.rsplit("/", 1)[-1]
    if re.fullmatch(r"python[0-9.]*", name):
        return "python"
    return name


def _argument(word: str) -> str:
    return word[2:] if word.startswith("./") else word


def _spelled(words: Iterable[str]) -> tuple[str, ...]:
    words = list(words)
    if not words:
        return ()
    return (_program(words[0]), *(_argument(w) for w in words[1:]))


class Probes:
    """The policy's probe commands and verification commands, ready to recognise either."""

    __slots__ = ("_commands", "_verifications")

    def __init__(
        self,
        commands: Iterable[tuple[str, ...]],
        verifications: Iterable[tuple[str, ...]] = SELF_VALIDATE,
    ) -> None:
        self._commands = tuple(tuple(words) for words in commands if words)
        self._verifications = tuple(_spelled(words) for words in verifications if words)

    @classmethod
    def of(cls, policy: Policy) -> Probes:
        """The policy's probes; its verifications: the validator's command, `selfcorrect
        validate`, and each check command up to its first placeholder."""
        verifications = [*SELF_VALIDATE]
        if policy.validator.command:
            verifications.append(policy.validator.command)
        for entry in policy.checks.commands:
            argv = entry.get("command") if isinstance(entry, Mapping) else None
            if isinstance(argv, list | tuple):
                words = [str(w) for w in argv]
                cut = next((i for i, w in enumerate(words) if "{" in w), len(words))
                verifications.append(tuple(words[:cut]))
        return cls(policy.probe_commands, verifications)

    def is_verification(self, tool: str, command: str | None) -> bool:
        """A shell call that runs a verification command (any exit code): one of its simple
        commands starts with the command's words, its program spelled as the agent may."""
        if tool.casefold() not in SHELL_TOOLS or not command or not self._verifications:
            return False
        for part in _LIST.split(command):
            try:
                words = shlex.split(part.split("|", 1)[0])
            except ValueError:
                continue
            while words and _ASSIGNMENT.match(words[0]):
                words.pop(0)
            spelled = _spelled(words)
            if any(spelled[: len(v)] == v for v in self._verifications):
                return True
        return False

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
        interrupted call, nor a call that never ran (cancelled or denied: its error text says
        so, core/unrun.py), whoever logged it."""
        if failure.outcome in UNCOUNTED:
            return False
        if failure.outcome is not Outcome.FAILURE:
            return True
        if not_run(failure.error) is not None:
            return False
        extra = failure.extra
        if not extra:
            return True  # the common entry: no command, no interrupt flag
        if extra.get("is_interrupt") is True:
            return False
        command = extra.get("command")
        if not isinstance(command, str):
            return True
        if self.is_verification(failure.tool, command):
            return False
        return not self.is_probe(failure.tool, command, failure.error)
