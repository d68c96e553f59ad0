"""Journaling the policy's commands (core/policy_commands.py): `run` and `validate` record
them when they differ from the last record (the shipped defaults' before any), so the next one
can say which changed (docs/containment.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from selfcorrect.core import policy_commands
from selfcorrect.core.policy import Policy
from selfcorrect.errors import Diagnostic
from selfcorrect.io import journal
from selfcorrect.io.policy_file import shipped_commands


def remember(
    folder: Path, policy: Policy, history: Iterable[Any], stamp: Mapping[str, Any]
) -> bool:
    """Append a `commands` record when the commands changed. Call under the folder's lock,
    with the journal as read under it, once the command has done its work."""
    commands = policy_commands.commands_of(policy)
    if not policy_commands.changed(policy_commands.baseline(history, shipped_commands()), commands):
        return False
    event = replace(policy_commands.record(commands), **stamp)
    return journal.append(folder, [event]) > 0


def check(folder: Path, policy: Policy, policy_file: str) -> tuple[Diagnostic | None, list[Any]]:
    """The warning when the policy's commands changed since the last run or validate, and
    the journal it was read from (for `remember`)."""
    history = list(journal.read_journal(folder, []))  # a tampered line: run and status say so
    before = policy_commands.baseline(history, shipped_commands())
    notice = policy_commands.warning(before, policy_commands.commands_of(policy))
    return (None if notice is None else replace(notice, path=policy_file)), history


__all__ = ["check", "remember"]
