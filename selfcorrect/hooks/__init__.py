"""Agent hooks: selfcorrect inside the agent's loop (docs/hooks.md).

Kept import-free: the gate (`pre-tool-use`) answers on every tool call and must stay within a
few milliseconds of Python's own start-up.
"""
