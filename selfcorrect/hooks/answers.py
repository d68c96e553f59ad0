"""Answers in Claude Code's documented hook output shapes (schemas/claude_code_hooks.schema.json).

Every answer is one JSON object on stdout with exit 0: the host ignores stdout on exit 2, and a
hook must never break the agent. Nothing to say is no output at all.
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # not `from typing import`: typing costs the gate 8 ms

if TYPE_CHECKING:
    from typing import Any

MAX_CONTEXT = 9_000  # characters of additionalContext: the agent reads it on every failure


def deny(reason: str) -> dict[str, Any]:
    """PreToolUse: refuse the call and tell the agent why."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def failure_context(text: str) -> dict[str, Any]:
    """PostToolUseFailure: context the agent reads beside the failed call's result."""
    return _context("PostToolUseFailure", text)


def success_context(text: str) -> dict[str, Any]:
    """PostToolUse: context the agent reads beside the successful call's result (a loop named,
    hooks/loops.py)."""
    return _context("PostToolUse", text)


def _context(event: str, text: str) -> dict[str, Any]:
    if len(text) > MAX_CONTEXT:
        text = text[:MAX_CONTEXT] + f"\n… {len(text) - MAX_CONTEXT} more characters"
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def block_stop(reason: str) -> dict[str, Any]:
    """Stop and SubagentStop: keep the agent working, and tell it on what."""
    return {"decision": "block", "reason": reason}


def say(answer: dict[str, Any] | None) -> None:
    if answer is not None:
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def note(message: str) -> None:
    """One line on stderr: the host shows it to the person, never to the agent."""
    line = " ".join(message.split())
    sys.stderr.write(f"selfcorrect hook: {line}\n")
    sys.stderr.flush()
