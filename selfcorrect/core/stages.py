"""Rule stages (rules §13): whether a rule may act here, or only say what it would do.

Pure. `shadow` proposes and journals without executing; `canary` executes only for the paths or
subjects its `scope` lists and proposes elsewhere; `active` executes; `retired` does nothing.
The policy's global `mode: shadow` puts every rule in shadow.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from selfcorrect.core.policy import Policy, Rule
from selfcorrect.core.verification import in_scope


class Stage(enum.StrEnum):
    """A rule's stage (docs/rules.md §13). A StrEnum: it reads and compares as its word."""

    ACTIVE = "active"
    SHADOW = "shadow"
    RETIRED = "retired"
    CANARY = "canary"


ACTIVE, SHADOW, RETIRED, CANARY = Stage.ACTIVE, Stage.SHADOW, Stage.RETIRED, Stage.CANARY


def effective_stage(policy: Policy, rule: Rule | None, targets: Iterable[str | None]) -> Stage:
    """active, shadow or retired for this rule acting on these targets (paths or names)."""
    stage = Stage(rule.stage) if rule and rule.stage in Stage.__members__.values() else ACTIVE
    if stage == RETIRED:
        return RETIRED
    if policy.mode == SHADOW:
        return SHADOW
    if stage == CANARY:
        scope = rule.scope if rule else ()
        named = [t for t in targets if t]
        # The one scope rule: an entry that names a folder covers every file under it.
        inside = any(in_scope(t, scope) for t in named)
        return ACTIVE if inside else SHADOW
    return SHADOW if stage == SHADOW else ACTIVE
