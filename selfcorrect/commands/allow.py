"""`selfcorrect allow DIR`: a person trusts the policy's commands as they are now.

A command the policy names runs only when it is shipped, committed in git, or allowed here
(io/trust.py, docs/containment.md). Allowing journals the commands and who allowed them; a
later change to any of them is untrusted again until a person looks and allows it.
"""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct

from selfcorrect import layout
from selfcorrect.clock import Clock, stamp
from selfcorrect.core import policy_commands
from selfcorrect.io import documents, folder_lock, safe_paths
from selfcorrect.io.policy_file import load_policy, shipped_commands
from selfcorrect.io.trust import allow, template_digests


class Allowed(Struct, frozen=True):
    """What `allow` trusted: the policy's own commands (not the shipped ones), and whether a
    record was written (False: they were allowed already)."""

    policy: str
    commands: dict[str, list[str]]
    recorded: bool
    templates: tuple[str, ...] = ()  # the override templates allowed, by name


def allow_folder(folder: Path, policy_path: Path | None, clock: Clock) -> Allowed:
    policy_file = policy_path or folder / layout.POLICY
    policy = load_policy(policy_file)  # a policy that does not load is refused (exit 2)
    safe_paths.preflight(folder)
    with folder_lock.hold(folder, folder_lock.DEFAULT_WAIT_S, "allow"):
        event = allow(folder, policy, stamp(clock))
    commands = policy_commands.commands_of(policy)
    shipped = shipped_commands()
    own = {key: argv for key, argv in commands.items() if list(shipped.get(key) or ()) != argv}
    templates = tuple(template_digests(folder))
    return Allowed(documents.display_path(policy_file), own, event is not None, templates)


__all__ = ["Allowed", "allow_folder"]
