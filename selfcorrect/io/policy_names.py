"""Every name the policy uses, held against this machine (docs/rules.md §3): each command's
program (the validator, `checks.commands`, fixers, `agent.command`, `tools`), each strategy, and
each `checks.templates` template. A wrong name is an error at its line and column, with the
installed name closest to it.

Only what the user's file names is held to it: a command or strategy equal to the shipped
defaults' own at the same key is the defaults' (the linting fixers name ruff, eslint and
prettier, and a machine without eslint just has no fixer for those files; docs/policy.md,
"Fixers"). `check` reports them all; `run` and `validate` refuse the programs a validation
starts (the validator and the check commands), so a typo there is a policy error, exit 2, never
an issue handed to a fixer or a run that waits forever for a report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.core.policy import Policy, suggest
from selfcorrect.core.policy_commands import commands_of
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents
from selfcorrect.io.policy_file import default_policy_data, shipped_commands
from selfcorrect.io.programs import closest, locate
from selfcorrect.io.project_root import project_root
from selfcorrect.io.trust import key_positions

Position = Callable[[str], tuple[int, int]]


def wrong_names(folder: Path, policy: Policy, policy_file: Path) -> list[Diagnostic]:
    """Every wrong name the user's policy uses, in file order (`check`)."""
    where = _lazy_positions(policy_file)
    display = documents.display_path(policy_file)
    root = project_root(folder)
    found = _missing_programs(policy, root, where, display, lambda _key: True)
    found += _unknown_strategies(policy, folder, where, display)
    found += _missing_templates(policy, root, where, display)
    return sorted(found, key=lambda d: (d.line, d.col))


def refuse_unstartable_validation(
    folder: Path, policy: Policy, policy_file: Path, *, validator: bool = True
) -> None:
    """InputError (exit 2, nothing run or written) when a check command, or with `validator`
    the validator, names a program that is not installed: the validation could not start
    (`run` starts the validator, `validate` the check commands)."""
    if not (validator and policy.validator.command) and not policy.checks.commands:
        return  # nothing to look for: no policy build, no file read (rules §18)
    found = _missing_programs(
        policy,
        project_root(folder),
        _lazy_positions(policy_file),
        documents.display_path(policy_file),
        lambda key: (validator and key == "validator.command") or key.startswith("checks.com"),
    )
    if found:
        raise InputError(found)


def _lazy_positions(policy_file: Path) -> Position:
    """Positions in the policy file, which is parsed again only once a name is wrong."""
    found: list[Position] = []

    def position(key: str) -> tuple[int, int]:
        if not found:
            found.append(key_positions(policy_file))
        return found[0](key)

    return position


def _missing_programs(
    policy: Policy, root: Path, where: Position, display: str, wanted: Callable[[str], bool]
) -> list[Diagnostic]:
    shipped = shipped_commands()
    found = []
    for key, argv in commands_of(policy).items():
        if not wanted(key) or not argv or list(shipped.get(key) or ()) == argv:
            continue  # the defaults' own command: not the user's to install (docs above)
        program = argv[0]
        if locate(program, root) is not None:
            continue
        hint = closest(program, root) if program.strip() else None
        mean = f" (did you mean {hint!r}?)" if hint else ""
        if "/" in program or "\\" in program:
            what = f"no executable file {program!r} from the project root"
        else:
            what = f"no program {program!r} on PATH"
        found.append(
            Diagnostic(
                display,
                *where(_first_word(key, policy)),
                f"{key}: {what}{mean}: install it, or correct the name",
            )
        )
    return found


def _first_word(key: str, policy: Policy) -> str:
    """The key of a command's program (its argv's first item) in the policy file."""
    if key.startswith("checks.commands["):
        return f"{key}.command[0]"
    if ".fix[" in key:  # `fix:` is a list of fixers, or one fixer
        section, name = key.split(".")[:2]  # `issue_types.<name>.fix[i]`
        kind = section.removesuffix("s")
        rule = next((r for r in policy.rules() if (r.kind, r.name) == (kind, name)), None)
        fix = rule.definition.get("fix") if rule is not None else None
        return f"{key}.command[0]" if not isinstance(fix, Mapping) else f"{key[:-3]}.command[0]"
    if key.startswith("tools."):
        return f"{key}.command[0]"
    return f"{key}[0]"


def _unknown_strategies(
    policy: Policy, folder: Path, where: Position, display: str
) -> list[Diagnostic]:
    defaults: Mapping[str, Any] = default_policy_data().get("issue_types") or {}
    named = [
        (rule.name, rule.strategy)
        for rule in policy.rules()
        if rule.kind == "issue_type"
        and rule.strategy
        and rule.strategy != (defaults.get(rule.name) or {}).get("strategy")
    ]
    if not named:
        return []
    from selfcorrect.io.prompts import strategy_names

    known = strategy_names(folder / layout.TEMPLATES)
    found = []
    for name, strategy in named:
        if strategy in known:
            continue
        hint = suggest(str(strategy), known)
        mean = f"did you mean {hint!r}? " if hint else ""
        found.append(
            Diagnostic(
                display,
                *where(f"issue_types.{name}.strategy"),
                f"issue_types.{name}.strategy: no strategy {strategy!r}; {mean}a strategy is a "
                f"template strategies/<name>.md.j2, shipped or in {layout.TEMPLATES}/ beside "
                f"this file (known: {', '.join(known)})",
            )
        )
    return found


def _missing_templates(
    policy: Policy, root: Path, where: Position, display: str
) -> list[Diagnostic]:
    from selfcorrect.io.workspace import resolve_inside

    found = []
    for index, entry in enumerate(policy.checks.templates):
        template = str(entry.get("template", ""))
        path = resolve_inside(root, template, argument=False)
        if path is not None and path.is_file():
            continue
        found.append(
            Diagnostic(
                display,
                *where(f"checks.templates[{index}].template"),
                f"checks.templates[{index}].template: no file {template!r} in the project "
                "(the path is from the project root)",
            )
        )
    return found


__all__ = ["refuse_unstartable_validation", "wrong_names"]
