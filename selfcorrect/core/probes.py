"""Entries of the failure log that count nothing: probes, interrupted calls and an agent's
own verification (rules §7).

Pure. A shell call that asked a question and got "no" is an answer, not a failure: `grep`
finding nothing, `test -f` on a missing file, `diff` of two files that differ all exit 1, `ls`
of a path that is not there exits 2 (1 on macOS). Such a call is logged `outcome: probe` when
its exit status is a probe program's (`policy.probe_commands`, or `ls` of named paths): the
program alone, the last stage of a pipeline, or the last of an `&&`/`||` list whose earlier
commands are probes too or a `cd` before `&&`; its output thrown away (`2>/dev/null`,
`>/dev/null 2>&1`) or not; and its text nothing but the answer (for `ls`, only "No such file or
directory" about the paths it named). A call the person interrupted is `outcome: interrupted`.
A call that runs the verification a directive names (the validator's command, `selfcorrect
validate`, a check command of the policy) exits non-zero while any issue is open, whoever runs
it: that is the report's business, `outcome: verification`. None of them feeds a signal, a
budget or the gate. The reader applies the same rules to an entry another writer logged as a
plain failure, when the entry carries the call's `command`.

The command is agent text: it is split into words here (never run, never given to a shell), in
time linear in its length, and anything this reading cannot vouch for (a substitution, a
subshell, a `;` list, a background job, an input redirection, output sent anywhere but
`/dev/null` or the other stream) leaves the call a failure.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from itertools import pairwise

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
# Shell syntax whose effect this reading cannot vouch for: the call stays a failure.
_COMPOUND = ("$(", "`", "\n")
_OPERATORS = frozenset("();<>|&")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_LISTS = frozenset({"&&", "||"})
_PIPES = frozenset({"|", "|&"})
# Output redirections; the only target taken is /dev/null, or the other stream (`2>&1`).
_REDIRECTS = frozenset({">", ">>", ">|", ">&", "&>", "&>>"})
_NULL = "/dev/null"
# Commands before `&&` that change nothing but where the next one runs.
_NAVIGATION = frozenset({"cd", "pushd"})
# What ls says of a named path that is not there: GNU `ls: cannot access 'p': No such file or
# directory`, BSD/macOS `ls: p: No such file or directory`.
_LS_MISSING = re.compile(r"ls: (?:cannot access )?(.+): No such file or directory")
_TILDE_PATHS = 8  # `~/…` paths compared by their tail; more are not looked at
_LINE_MAX = 4096


def exit_code(error: str) -> int | None:
    """The exit code a host's failure text starts with, else None."""
    match = _EXIT.match(error)
    return int(match.group(1)) if match else None


class _Stage:
    """One simple command: its words (assignments dropped), whether it redirects anything,
    and whether its stderr ends in /dev/null."""

    __slots__ = ("quiet", "redirected", "words")

    def __init__(self, words: list[str], redirected: bool, quiet: bool) -> None:
        self.words = words
        self.redirected = redirected
        self.quiet = quiet


def _words(command: str) -> list[str] | None:
    if any(mark in command for mark in _COMPOUND):
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def _shape(command: str) -> list[tuple[str, list[_Stage]]] | None:
    """The command as an `&&`/`||` list of pipelines of simple commands, each pipeline with the
    operator before it (`""` for the first); None for anything else (module docstring)."""
    words = _words(command)
    if words is None:
        return None
    items: list[tuple[str, list[_Stage]]] = []
    pipeline: list[_Stage] = []
    current: list[str] = []
    streams = {"1": "tty", "2": "tty"}
    redirected = False
    before = ""
    at = 0
    while at <= len(words):
        word = words[at] if at < len(words) else "&&"
        if not (word and set(word) <= _OPERATORS):
            current.append(word)
            at += 1
            continue
        if word in _REDIRECTS:
            fd = current.pop() if current and current[-1] in ("1", "2") else ""
            target = words[at + 1] if at + 1 < len(words) else ""
            if not _redirect(streams, word, fd, target):
                return None
            redirected = True
            at += 2
            continue
        if word not in _LISTS and word not in _PIPES:
            return None  # ; & < << ( ) and the like
        start = 0
        while start < len(current) and _ASSIGNMENT.match(current[start]):
            start += 1
        if start == len(current):
            return None
        pipeline.append(_Stage(current[start:], redirected, streams["2"] == _NULL))
        current, streams, redirected = [], {"1": "tty", "2": "tty"}, False
        if word in _LISTS:
            items.append((before, pipeline))
            pipeline, before = [], word
        at += 1
    return items


def _redirect(streams: dict[str, str], operator: str, fd: str, target: str) -> bool:
    """Apply one output redirection to `streams`; False when its target is not taken."""
    if operator in ("&>", "&>>") or (operator == ">&" and target == _NULL and not fd):
        if target != _NULL:
            return False
        streams["1"] = streams["2"] = _NULL
        return True
    fd = fd or "1"
    if operator == ">&" and target in ("1", "2"):
        streams[fd] = streams[target]
        return True
    if target != _NULL:
        return False
    streams[fd] = _NULL
    return True


def command_words(command: str) -> list[str] | None:
    """The words of one simple command, its leading `VAR=value` assignments dropped; None for
    a pipeline, a list (`;`, `&&`), a redirection or a substitution, whose exit code may be
    another program's, or for text that does not split."""
    items = _shape(command)
    if not items or len(items) > 1 or len(items[0][1]) > 1 or items[0][1][0].redirected:
        return None
    return list(items[0][1][0].words)


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


def _ls_paths(words: list[str]) -> list[str] | None:
    """The paths an `ls` names (none: the current directory); None when it is not ls."""
    if _program(words[0]) != "ls":
        return None
    paths: list[str] = []
    options = True
    for word in words[1:]:
        if options and word == "--":
            options = False
        elif not (options and word.startswith("-") and word != "-"):
            paths.append(word)
    return paths


def _unanswered(text: str, named: list[str]) -> tuple[str, bool] | None:
    """`text` less what ls says of the paths it was given ("No such file or directory" about
    one of them, or one of them listed), and whether it said any; None for a line too long to
    be one."""
    if not named:
        return text, False
    exact = set(named)
    tails = [p[1:] for p in named if p.startswith("~/")][:_TILDE_PATHS]

    def names(path: str) -> bool:
        if len(path) > 1 and path[0] == path[-1] and path[0] in "'\"":
            path = path[1:-1]
        return path in exact or any(path.startswith("/") and path.endswith(t) for t in tails)

    kept: list[str] = []
    said = False
    for line in text.splitlines():
        if len(line) > _LINE_MAX:
            return None
        stripped = line.strip()
        missing = _LS_MISSING.fullmatch(stripped)
        if stripped and (names(stripped) or (missing and names(missing.group(1)))):
            said = True
        elif stripped:
            kept.append(line)
    return "\n".join(kept), said


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
        words = _words(command)
        if words is None:
            return False
        simple: list[str] = []
        for word in [*words, "&&"]:  # each simple command of a list or pipeline, in turn
            if not (word and set(word) <= _OPERATORS):
                simple.append(word)
                continue
            while simple and _ASSIGNMENT.match(simple[0]):
                simple.pop(0)
            spelled = _spelled(simple)
            if any(spelled[: len(v)] == v for v in self._verifications):
                return True
            simple = []
        return False

    def is_probe(self, tool: str, command: str | None, error: str) -> bool:
        """A shell call whose exit status is a probe program's "no", with nothing but its
        answer (module docstring)."""
        if tool.casefold() not in SHELL_TOOLS or not command:
            return False
        code = exit_code(error)
        if code not in (1, 2):
            return False
        items = _shape(command)
        if not items:
            return False
        for (_, pipeline), (after, _) in pairwise(items):
            last = pipeline[-1]
            if after == "&&" and len(pipeline) == 1 and self._navigates(last):
                continue
            if not (self._asks(last.words) or _ls_paths(last.words) is not None):
                return False
        last = items[-1][1][-1]
        named = [p for _, pipeline in items for p in _ls_paths(pipeline[-1].words) or ()]
        answer = _unanswered(_EXIT.sub("", error, count=1), named)
        if answer is None:
            return False
        rest, said = answer
        if _ls_paths(last.words) is not None:
            # ls answered "not there" about its paths, or with its stderr thrown away.
            return not rest and (said or last.quiet)
        return code == 1 and self._asks(last.words) and not _ERROR_WORDS.search(rest)

    def _asks(self, words: list[str]) -> bool:
        """Is this simple command one of the policy's probe programs?"""
        spelled = [_program(words[0]), *words[1:]]
        return any(tuple(spelled[: len(probe)]) == probe for probe in self._commands)

    @staticmethod
    def _navigates(stage: _Stage) -> bool:
        """`cd dir` before `&&`: it changes nothing, and says so when it fails."""
        return not stage.redirected and len(stage.words) <= 2 and stage.words[0] in _NAVIGATION

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
