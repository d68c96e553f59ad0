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

The workflow folder's override templates (`templates/`) are rendered as selfcorrect's own
prompts, so they are trusted the same way: committed in git, or allowed (the allow record
keeps each one's digest). A hook meeting an untrusted one renders the built-in template and
says so (io/prompts.py); `run` and `check` refuse it like a command.
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
    folder: Path,
    policy: Policy,
    policy_file: Path,
    history: Iterable[Any] | None = None,
    *,
    templates: bool = True,
) -> list[Diagnostic]:
    """Each command of the policy that nothing trusts, positioned at its key in the policy
    file, then each override template nothing trusts; none when every one is shipped,
    committed or allowed."""
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
    found: list[Diagnostic] = []
    if where:
        display = documents.display_path(policy_file)
        folder_shown = documents.display_path(folder)
        position = key_positions(policy_file)
        for key in where:
            line, col = position(key)
            found.append(
                Diagnostic(
                    display,
                    line,
                    col,
                    f"{key} is {policy_commands.spell(commands[key])}, which is not trusted: it "
                    f"is not the committed version of this file and no person allowed it "
                    f"(agents can write this file). Check it (`git diff {display}`), then run "
                    f"`selfcorrect allow {folder_shown}`; nothing was run or written",
                )
            )
    return found + (untrusted_templates(folder, history) if templates else [])


def untrusted_templates(folder: Path, history: Iterable[Any] | None) -> list[Diagnostic]:
    """Each override template nothing trusts, as a diagnostic at its first line."""
    overrides = template_digests(folder)
    if not overrides:
        return []
    allowed = _allowed_templates(folder, history)
    found = []
    for name, digest in overrides.items():
        path = folder / TEMPLATES / name
        if allowed.get(name) == digest or committed_digest(path) == digest:
            continue
        found.append(
            Diagnostic(
                documents.display_path(path),
                1,
                1,
                "this override template is not trusted: it is not the committed version and no "
                "person allowed it (agents can write templates/, and selfcorrect renders it as "
                f"its own prompt). Check it, then run `selfcorrect allow "
                f"{documents.display_path(folder)}`; nothing was run or written",
            )
        )
    return found


def trusted_template(path: str | Path) -> bool:
    """Whether override template `path` (in a workflow folder's templates/) may be rendered:
    its bytes are the committed ones or those a person allowed. Remembered per state of the
    file and of the journal (a long-lived process, the warm answerer or a watcher, sees a later
    `selfcorrect allow`)."""
    target = Path(path)
    folder = _workflow_of(target)
    try:
        info = target.stat()
    except OSError:
        return False
    try:
        said = os.stat(folder / ".selfcorrect" / "journal.jsonl") if folder else None
    except OSError:
        said = None  # no journal yet: nothing allowed
    key = (
        str(target),
        info.st_ino,
        info.st_mtime_ns,
        info.st_size,
        said.st_size if said else -1,
        said.st_mtime_ns if said else -1,
    )
    known = _TRUSTED.get(key)
    if known is None:
        digest = _digest(target)
        name = target.relative_to(folder / TEMPLATES).as_posix() if folder else ""
        known = digest is not None and (
            (folder is not None and _allowed_templates(folder, None).get(name) == digest)
            or committed_digest(target) == digest
        )
        _TRUSTED[key] = known
    return known


def refuse_untrusted(
    folder: Path,
    policy: Policy,
    policy_file: Path,
    history: Iterable[Any] | None = None,
    *,
    templates: bool = True,
) -> None:
    """Raise InputError (exit 2, nothing written) when a command of the policy is untrusted,
    or (with `templates`) an override template."""
    problems = untrusted(folder, policy, policy_file, history, templates=templates)
    if problems:
        raise InputError(problems)


def allow(folder: Path, policy: Policy, at: str) -> CommandsEvent | None:
    """Record the policy's commands and the override templates as allowed by the person
    running this; the record, or None when they already were."""
    from selfcorrect.core.journal_records import CommandsEvent
    from selfcorrect.io import journal

    commands = policy_commands.commands_of(policy)
    templates = template_digests(folder)
    records = journal.read_journal(folder, [])
    if dict(policy_commands.allowed(records)) == commands and (
        _allowed_templates(folder, records) == templates
    ):
        return None
    event = CommandsEvent(
        digest=policy_commands.digest(commands),
        commands=commands,
        templates=templates,
        at=at,
        run=policy_commands.ALLOW,
        actor=_who(),
    )
    journal.append(folder, [event])
    return event


TEMPLATES = layout.TEMPLATES
_TRUSTED: dict[tuple[str, int, int, int, int, int], bool] = {}
_MAX_TEMPLATES = 200  # override files looked at; more is not a folder of prompt templates


def template_digests(folder: Path) -> dict[str, str]:
    """Each override template under `folder`/templates (its name there) -> its digest."""
    root = folder / TEMPLATES
    if not root.is_dir() or root.is_symlink():
        return {}
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*"))[:_MAX_TEMPLATES]:
        if path.is_file() and not path.is_symlink():
            digest = _digest(path)
            if digest is not None:
                found[path.relative_to(root).as_posix()] = digest
    return found


def _digest(path: Path) -> str | None:
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def _workflow_of(template: Path) -> Path | None:
    """The workflow folder whose templates/ holds `template`, or None."""
    for parent in template.parents:
        if parent.name == TEMPLATES:
            return parent.parent
    return None


def _allowed_templates(folder: Path, history: Iterable[Any] | None) -> dict[str, str]:
    from selfcorrect.core.journal_records import CommandsEvent, typed
    from selfcorrect.io import journal

    records = history if history is not None else journal.read_journal(folder, [])
    last: dict[str, str] = {}
    for event in typed(records):
        if isinstance(event, CommandsEvent) and event.run == policy_commands.ALLOW:
            last = dict(event.templates or {})
    return last


def committed_digest(path: Path) -> str | None:
    """The digest of `path` as committed (HEAD), or None (no git, not committed)."""
    import hashlib

    shown = _git_show(path)
    return None if shown is None else hashlib.sha256(shown).hexdigest()[:16]


def _git_show(path: Path) -> bytes | None:
    import subprocess

    where = path.resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(where), "show", f"HEAD:./{path.name}"],
            capture_output=True,
            timeout=GIT_WAIT_S,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def committed_commands(policy_file: Path) -> dict[str, list[str]] | None:
    """The commands of the policy file as committed (HEAD), or None: no git, not committed,
    or not a policy that loads."""
    shown = _git_show(policy_file)
    if shown is None:
        return None
    from selfcorrect.core.policy import build_policy
    from selfcorrect.io import yaml_nodes

    try:
        text = yaml_nodes.decode(shown, layout.POLICY)
        data = yaml_nodes.load_plain(text)
        committed = build_policy(default_policy_data(), data if data is not None else None)
    except Exception:  # a committed file that does not load trusts nothing
        return None
    return policy_commands.commands_of(committed)


def key_positions(policy_file: Path) -> Any:
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


__all__ = ["allow", "committed_commands", "key_positions", "refuse_untrusted", "untrusted"]
