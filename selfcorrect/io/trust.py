"""Whether the policy's commands may run: shipped, committed, or allowed by a person.

The policy is a file in the workflow folder, and agents write files there: an agent that adds
`checks.commands: [[sh, -c, "…"]]` to `selfcorrect.yaml` would have the next run execute it.
So a command the policy names runs only when it is trusted (docs/containment.md, "Trust"):
- it is the shipped defaults' own;
- or it is the version committed in git (HEAD's copy of the policy file);
- or a person allowed it with `selfcorrect allow DIR`, which journals the commands with who
  allowed them (a `commands` record whose run is `allow`).
Anything else is an untrusted change: `run`, `validate` and `check` run none of it, say what
changed and how to allow it, and exit 2 having written nothing. It is the model direnv uses
for `.envrc`. Settings that run nothing (caps, patterns, thresholds) need no allowing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfcorrect import layout
from selfcorrect.core import policy_commands
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents
from selfcorrect.io.policy_file import default_policy_data, shipped_commands

if TYPE_CHECKING:
    from selfcorrect.core.journal_records import CommandsEvent
    from selfcorrect.core.policy import Policy

GIT_WAIT_S = 10.0
_KEY = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def untrusted(
    folder: Path, policy: Policy, policy_file: Path, history: Iterable[Any] | None = None
) -> list[Diagnostic]:
    """Each command of the policy that nothing trusts, positioned at its key in the policy
    file; none when every command is shipped, committed or allowed."""
    commands = policy_commands.commands_of(policy)
    where = policy_commands.untrusted(commands, shipped_commands())
    if where:  # only then is the journal read, and then git asked: most meet nothing new
        from selfcorrect.io import journal

        records = list(history) if history is not None else journal.read_journal(folder, [])
        allowed = policy_commands.allowed(records)
        where = policy_commands.untrusted({key: commands[key] for key in where}, allowed)
    if where:
        committed = committed_commands(policy_file)
        where = policy_commands.untrusted({key: commands[key] for key in where}, committed)
    if not where:
        return []
    display = documents.display_path(policy_file)
    position = _positions(policy_file)
    folder_shown = documents.display_path(folder)
    found = []
    for key in where:
        line, col = position(key)
        found.append(
            Diagnostic(
                display,
                line,
                col,
                f"{key} is {policy_commands.spell(commands[key])}, which is not trusted: it is "
                f"not the committed version of this file and no person allowed it (agents can "
                f"write this file). Check it (`git diff {display}`), then run `selfcorrect allow "
                f"{folder_shown}`; nothing was run or written",
            )
        )
    return found


def refuse_untrusted(
    folder: Path, policy: Policy, policy_file: Path, history: Iterable[Any] | None = None
) -> None:
    """Raise InputError (exit 2, nothing written) when a command of the policy is untrusted."""
    problems = untrusted(folder, policy, policy_file, history)
    if problems:
        raise InputError(problems)


def allow(folder: Path, policy: Policy, at: str) -> CommandsEvent | None:
    """Record the policy's commands as allowed by the person running this; the record, or
    None when they already were."""
    from selfcorrect.core.journal_records import CommandsEvent
    from selfcorrect.io import journal

    commands = policy_commands.commands_of(policy)
    records = journal.read_journal(folder, [])
    if dict(policy_commands.allowed(records)) == commands:
        return None
    event = CommandsEvent(
        digest=policy_commands.digest(commands),
        commands=commands,
        at=at,
        run=policy_commands.ALLOW,
        actor=_who(),
    )
    journal.append(folder, [event])
    return event


def committed_commands(policy_file: Path) -> dict[str, list[str]] | None:
    """The commands of the policy file as committed (HEAD), or None: no git, not committed,
    or not a policy that loads."""
    import subprocess

    where = policy_file.resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(where), "show", f"HEAD:./{policy_file.name}"],
            capture_output=True,
            timeout=GIT_WAIT_S,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    from selfcorrect.core.policy import build_policy
    from selfcorrect.io import yaml_nodes

    try:
        text = yaml_nodes.decode(done.stdout, layout.POLICY)
        data = yaml_nodes.load_plain(text)
        committed = build_policy(default_policy_data(), data if data is not None else None)
    except Exception:  # a committed file that does not load trusts nothing
        return None
    return policy_commands.commands_of(committed)


def _positions(policy_file: Path) -> Any:
    """key (`checks.commands[0]`) -> (line, col) of it in the policy file; (1, 1) unknown."""
    try:
        document = documents.load_decision(policy_file, "selfcorrect", allow_empty=True)
    except (InputError, OSError):
        return lambda _key: (1, 1)

    def position(key: str) -> tuple[int, int]:
        path: list[str | int] = [int(index) if index else name for name, index in _KEY.findall(key)]
        while path:
            try:
                return document.position(path)
            except (KeyError, IndexError, TypeError, AttributeError):
                path = path[:-1]
        return 1, 1

    return position


def _who() -> str:
    import getpass

    try:
        return f"person:{getpass.getuser()}"
    except (KeyError, OSError):
        return "person"


__all__ = ["allow", "committed_commands", "refuse_untrusted", "untrusted"]
