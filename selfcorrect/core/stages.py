"""Rule stages (rules §13): whether a rule may act here, or only say what it would do.

Pure. `shadow` proposes and journals without executing; `canary` executes only for the paths or
subjects its `scope` lists and proposes elsewhere; `active` executes; `retired` does nothing.
The policy's global `mode: shadow` puts every rule in shadow.
"""

from __future__ import annotations

from collections.abc import Iterable

from selfcorrect.core.policy import Policy, Rule
from selfcorrect.core.verification import in_scope

ACTIVE = "active"
SHADOW = "shadow"
RETIRED = "retired"
CANARY = "canary"


def effective_stage(policy: Policy, rule: Rule | None, targets: Iterable[str | None]) -> str:
    """active, shadow or retired for this rule acting on these targets (paths or names)."""
    stage = rule.stage if rule else ACTIVE
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
