"""The commands a policy runs, and whether they changed since the last run (rules §17).

The policy is a file in the workflow folder, and agents write files there: an agent that puts
`checks.commands: [[sh, -c, "…"]]` into `selfcorrect.yaml` has its command run by the next
`selfcorrect validate`. The gate keeps agents' edit tools off the file; and every run and
validate journals the digest of the policy's commands (a `commands` record), so when they
change the next run says which, and that an agent may have made the change. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from selfcorrect import layout
from selfcorrect.errors import Diagnostic

if TYPE_CHECKING:
    from selfcorrect.core.journal_records import CommandsEvent
    from selfcorrect.core.policy import Policy


def commands_of(policy: Policy) -> dict[str, list[str]]:
    """Every command the policy can run or hand agents to run, by where it is written:
    `checks.commands[0]`, `validator.command`, `agent.command`, `notify.command`,
    `issue_types.<name>.fix[0]`, `tools.<name>` (a repair tool a prompt offers agents)."""
    found: dict[str, list[str]] = {}
    for i, check in enumerate(policy.checks.commands):
        found[f"checks.commands[{i}]"] = _argv(check.get("command") if _is_map(check) else check)
    if policy.validator.command:
        found["validator.command"] = list(policy.validator.command)
    if policy.agent.command:
        found["agent.command"] = list(policy.agent.command)
    if policy.notify.command:
        found["notify.command"] = list(policy.notify.command)
    for tool in policy.tools:
        found[f"tools.{tool.name}"] = list(tool.command)
    for rule in policy.rules():
        fixers = rule.definition.get("fix") or ()
        for i, fixer in enumerate([fixers] if _is_map(fixers) else fixers):
            if _is_map(fixer):
                found[f"{rule.kind}s.{rule.name}.fix[{i}]"] = _argv(fixer.get("command"))
    return found


def digest(commands: Mapping[str, list[str]]) -> str:
    import hashlib  # `check` reads commands without digesting them: start-up counts

    text = json.dumps(commands, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def record(commands: Mapping[str, list[str]]) -> CommandsEvent:
    """The journal record of the policy's commands (stamped when written)."""
    from selfcorrect.core.journal_records import CommandsEvent

    return CommandsEvent(digest=digest(commands), commands=dict(commands))


def last_recorded(history: Iterable[Any]) -> CommandsEvent | None:
    from selfcorrect.core.journal_records import CommandsEvent, typed

    last = None
    for event in typed(history):
        if isinstance(event, CommandsEvent):
            last = event
    return last


def baseline(history: Iterable[Any], shipped: Mapping[str, list[str]]) -> Mapping[str, Any]:
    """The commands as last recorded; the shipped defaults' before any record."""
    last = last_recorded(history)
    if last is None:
        return shipped
    return last.commands if isinstance(last.commands, Mapping) else {}


ALLOW = "allow"  # the `run` of a commands record a person wrote with `selfcorrect allow`


def allowed(history: Iterable[Any]) -> Mapping[str, Any]:
    """The commands a person last allowed (`selfcorrect allow`), or none."""
    from selfcorrect.core.journal_records import CommandsEvent, typed

    last: Mapping[str, Any] = {}
    for event in typed(history):
        if isinstance(event, CommandsEvent) and event.run == ALLOW:
            last = event.commands if isinstance(event.commands, Mapping) else {}
    return last


def untrusted(commands: Mapping[str, list[str]], *trusted: Mapping[str, Any] | None) -> list[str]:
    """Where a command differs from every trusted version of it (the shipped defaults', the
    committed policy's, what a person allowed), in policy order. A removed command runs
    nothing, so it needs no trust."""
    return [
        key
        for key, argv in commands.items()
        if not any(
            source is not None and list(source.get(key) or ()) == list(argv) for source in trusted
        )
    ]


def changed(before: Mapping[str, Any], commands: Mapping[str, list[str]]) -> list[str]:
    """Where the commands differ from `before`, in policy order."""
    keys = dict.fromkeys([*before, *commands])
    return [key for key in keys if list(before.get(key) or ()) != list(commands.get(key) or ())]


def warning(before: Mapping[str, Any], commands: Mapping[str, list[str]]) -> Diagnostic | None:
    """The warning a run and validate give when the policy's commands changed."""
    where = changed(before, commands)
    if not where:
        return None
    shown = "; ".join(
        f"{key} {'is now ' + _spell(commands[key]) if key in commands else 'was removed'}"
        for key in where[:10]
    )
    more = f" (and {len(where) - 10} more)" if len(where) > 10 else ""
    return Diagnostic(
        layout.POLICY,
        1,
        1,
        f"the policy's commands changed since the last run (or differ from the defaults, before "
        f"any): {shown}{more}. Agents can write "
        "this file, so an agent may have changed them: check that a person made this change "
        "(`git diff` the file) before selfcorrect runs them again",
        severity="warning",
    )


def _spell(argv: list[str]) -> str:
    return json.dumps(argv, ensure_ascii=False)[:300]


def _argv(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(part) for part in value] if isinstance(value, list | tuple) else []


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def spell(argv: Sequence[str]) -> str:
    """A command as the messages show it: its argv as JSON, cut at 300 characters."""
    return _spell(list(argv))


__all__ = [
    "ALLOW",
    "allowed",
    "baseline",
    "changed",
    "commands_of",
    "digest",
    "last_recorded",
    "record",
    "spell",
    "untrusted",
    "warning",
]
