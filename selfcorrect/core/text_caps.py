"""How much agent text a prompt, an escalation or the journal carries: `limits.max_text` bytes.

A 45 MB issue description was once copied whole into a prompt. Text an agent wrote is cut at
the policy's limit (4 KiB by default), and the cut says how many bytes were left out and where
the whole text is, so nothing is hidden, only not repeated (docs/policy.md, `limits`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

# A subject or fingerprint names a work item in the journal, failed_items and escalations: an
# agent's 2 MB file_path must not become a 2 MB name in every record (docs/policy.md, limits).
MAX_KEY = 1024
MARK = " more bytes (the whole text: "
# A text cut once is cut again by no later pass: its head is within the limit, and what follows
# it is the mark and a place, a few hundred bytes at most.
_MARK_ROOM = 512
IDENTITY = ", text #"
_KEPT = re.compile(r", text #([0-9a-f]{6,64})\)\Z")


def cap_text(text: str, limit: int, where: str) -> str:
    """Agent text as prompts and escalations carry it: at most `limit` bytes of UTF-8, then
    how much was left out and where the whole text is (docs/policy.md, `limits.max_text`)."""
    if len(text) * 4 <= limit:  # cannot be over: no need to encode a short text
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit or (len(data) <= limit + _MARK_ROOM and MARK in text[-_MARK_ROOM:]):
        return text
    head = data[:limit].decode("utf-8", "ignore")
    rest = len(data) - len(head.encode("utf-8", "surrogatepass"))
    return f"{head}… {rest}{MARK}{where})"


def cap_identified(text: str, limit: int, where: str, identity: Callable[[str], str]) -> str:
    """`cap_text`, the cut text naming the whole one's `identity` in its mark (`, text #…`):
    a copy that keeps the cut text only still names the issue the whole text named
    (core/classify.fingerprint reads it back with `kept_identity`)."""
    capped = cap_text(text, limit, where)
    if capped is text:
        return text
    return cap_text(text, limit, f"{where}{IDENTITY}{identity(text)}")


def kept_identity(text: str) -> str | None:
    """The whole text's identity a `cap_identified` mark names, or None."""
    if MARK not in text[-_MARK_ROOM:]:
        return None
    found = _KEPT.search(text)
    return found.group(1) if found else None


def cap_all(value: Any, limit: int, where: str) -> Any:
    """Every string in a context (mappings and lists walked), capped."""
    if isinstance(value, str):
        return cap_text(value, limit, where)
    if isinstance(value, Mapping):
        return {key: cap_all(item, limit, where) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [cap_all(item, limit, where) for item in value]
    return value


def bounded_key(text: str) -> str:
    """`text` when at most MAX_KEY characters, else its start and a hash of the whole: as
    stable and distinct as the text, and small enough for every record that names it."""
    if len(text) <= MAX_KEY:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[:256]}…#{digest}"


__all__ = ["MAX_KEY", "bounded_key", "cap_all", "cap_identified", "cap_text", "kept_identity"]
