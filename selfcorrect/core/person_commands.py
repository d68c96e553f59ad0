"""The `selfcorrect reset` lines a person copies into a shell to hand work back after acting on
it (docs/policy.md, "Human control"): `status` lists them, the CI job summary and annotations
show them. Ids and rule names come from files an agent may edit: each is shell-quoted, so a
line runs as shown. Pure, and light to import (a CI renderer's start-up loads it)."""

from __future__ import annotations

import shlex


def reset_escalation(folder: str, escalation: str) -> str:
    """Hand back one open escalation, with evidence of what the person changed."""
    return (
        f"selfcorrect reset {shlex.quote(folder)} --escalation {shlex.quote(escalation)} "
        '--evidence "what you changed"'
    )


def reset_rule(folder: str, rule: str) -> str:
    """Close a rule's open circuit, with evidence of why it is safe."""
    return (
        f"selfcorrect reset {shlex.quote(folder)} --rule {shlex.quote(rule)} "
        '--evidence "why it is safe"'
    )
