"""What selfcorrect knows of cAgents' own hooks, shared by install and the hooks (docs/hooks.md,
"Beside cAgents")."""

from __future__ import annotations

import re

# cAgents' failure logger, as its settings run it (and older spellings of its script).
# (In a settings file the quote after the script's path is JSON-escaped: `\"`.)
CAGENTS_LOGGER = re.compile(
    r"run-hook\.cjs(?:\\?[\"'])?\s+tool-failure-tracker|tool-failure-tracker\."
)
