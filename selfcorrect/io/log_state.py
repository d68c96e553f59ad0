"""The failure log's fold, saved between processes: `.selfcorrect/log_cache.json`.

A watcher keeps a `LogCache` in memory, so each load reads only the bytes appended to
tool_failures.yaml (io/log_cursor.py). A process that lives for one event (an agent hook, run
on every failed tool call) has no memory between runs: `save_log_cache` writes its cache to the
folder and `load_log_cache` gives the next process that cache back, so its load too costs what
was appended, not what the log holds.

What is saved, one JSON object:
- `seal`: see below;
- `format` and `version`: anything else is not read;
- `policy_version`: the digest of the policy (and of the task owners) the fold was built with;
  a load under another policy rebuilds, exactly as a watcher does;
- `entries`, `warnings`: the count of entries read and the log's own warnings;
- `cursor`: where the read stopped (offsets, inode, the layout learnt) and the last entry as it
  read, to compare it when read again; the log's first 4 KiB and last 64 KiB or more are saved
  as their length and SHA-256 only, and read back from the log when the state is loaded;
- `ledger`: per subject its record (counts, the last CHAIN_LENGTH attempts, the approaches and
  files it names) and the split of tool-only subjects by failure type (core/ledger.py);
- `detector`: per subject its window (at most the largest policy window) and its four runs
  (positions at most the largest threshold or window), the split, and per agent its runs
  (core/stuck.py);
- `repeated`: the identical calls failing since their last success, at most KEEP of them
  (core/repeated_calls.py), for the hook's gate.
None of it holds an entry beyond those bounded windows and chains, so the state grows with the
subjects (and the agents and failure types), not with the log's length: a few KiB per subject,
most of it the error texts of the chain and the window. Beyond that: the distinct failing calls,
up to KEEP (about 170 KiB when every call differs); the distinct approaches and files a subject
names; and the log's warnings, which grow with its broken entries as they do in a watcher's
memory and in every full read's output. What is only an optimisation (the taxonomy, built from
the policy; the detector's text caches) is rebuilt.

The folder is writable by agents, so the state is data, never code: JSON, never pickle, and
every field is checked for its type and range before it is used (core/saved.py). A state that
does not read, whatever the reason (absent, unreadable, another version, the wrong types,
numbers out of range, a symlink, over MAX_STATE bytes), is dropped: the next load reads the whole
log, as a watcher does after a reset. A state that reads but no longer fits the log (rewritten,
truncated, replaced) is caught by the cursor's checks, with the same result.

The state is bound to the bytes it folds and to itself. The cursor holds the log's size, inode
and the digests of its first and last bytes; the file opens with `seal`, the SHA-256 of all the
rest as written, so a cursor from one save put beside the fold of another (each genuine: the
counts doubled, or the repeated calls emptied) does not read, and the log is folded afresh. The
seal is no signature: whoever can write the folder can write a state that reads, and the log
it folds too; it keeps saves apart, and it keeps a hand-spliced state from being trusted.

It never grows past the log it folds: a fold larger than the log (and than MIN_ROOM, 256 KiB, the
room any small log's fold is given) is not saved, as reading the log again costs no more than
reading such a fold (5,000 subjects, one entry each: a 1.6 MB log, a 7.6 MB fold). A state
already there is left: it is the fold of an earlier part of the log, no larger than that part
was (or MIN_ROOM), and the next load reads on from it.

It is written like every other state file (io/atomic.py): a fsynced temp file, then a rename,
never through a symlink. A symlink (or a folder, or a read-only file) where the state goes is
refused with the InputError every state file gets (exit 2, naming the path), as the journal's
append does. Two processes saving at once leave the later rename: each state is the fold of
a prefix of the log, so either lets the next load read on correctly.

The cursor's path is the folder's tool_failures.yaml as `folder / layout.FAILURE_LOG` spells it:
pass `load_inputs` the same folder (and the same policy path) as `load_log_cache`, or the load
starts over. The warnings name the log as the saving process displayed it (relative to its
working directory).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from selfcorrect import layout
from selfcorrect.core import saved
from selfcorrect.core.repeated_calls import RepeatedCalls
from selfcorrect.errors import InputError
from selfcorrect.io.atomic import replace_file
from selfcorrect.io.bounded_read import read_bounded
from selfcorrect.io.log_cursor import LogCursor, diagnostic_of, diagnostic_state
from selfcorrect.io.policy_file import load_policy
from selfcorrect.io.safe_paths import ensure_dir
from selfcorrect.io.workflow_inputs import LogCache, fresh_fold, policy_version

FORMAT = "selfcorrect-log-cache"
# 2: per-agent subjects, probes; 3: sealed, bounded; 4: repeats per agent, error keys;
# 5: each attempt's agent and whether a host's hook logged it (ladder rounds); 6: a subject's
# loop signal (rules §7)
VERSION = 6
MAX_STATE = 64 << 20  # far above what a real log's subjects need; beyond it, start afresh
# A fold may be this big whatever the log's size: a small log's fold is often larger than the
# log (a subject's record, window and runs each keep its texts), and worth saving all the same.
MIN_ROOM = 256 << 10
_SEAL = re.compile(rb'\{"seal":"([0-9a-f]{64})",')
_KEYS = (
    "format",
    "version",
    "policy_version",
    "entries",
    "warnings",
    "cursor",
    "ledger",
    "detector",
    "repeated",
)


def log_state_path(folder: Path) -> Path:
    return folder / layout.LOG_STATE


def folded_entries(folder: Path) -> int | None:
    """How many log entries the saved fold has read (every hook decides and saves it before it
    answers), without rebuilding it; None when there is none or it cannot be used."""
    try:
        data = read_bounded(log_state_path(folder), MAX_STATE)
        if data is None:
            return None
        entries = json.loads(unseal(data), object_pairs_hook=_no_duplicates).get("entries")
    except (ValueError, RecursionError, OSError, AttributeError):
        return None
    return entries if isinstance(entries, int) and not isinstance(entries, bool) else None


def load_log_cache(folder: Path, policy_path: Path | None = None) -> LogCache:
    """The cache `save_log_cache` left in `folder`, or a new empty one when there is none or
    it cannot be used. Never raises for what the file holds; never follows a symlink.

    The ledger and the detector are rebuilt with the policy `load_inputs` will use
    (`policy_path`, else the folder's), and only when it is the one the state was made with.
    """
    try:
        data = read_bounded(log_state_path(folder), MAX_STATE)
        if data is None:
            return LogCache()
        document = json.loads(unseal(data), object_pairs_hook=_no_duplicates)
        return _restore(folder, policy_path, document)
    except (ValueError, RecursionError, OSError, InputError):
        # saved.StateError, bad JSON or UTF-8, digits beyond int's limit, nesting too deep, a
        # log that cannot be read, a broken policy (load_inputs reports that one itself).
        return LogCache()


def save_log_cache(folder: Path, cache: LogCache) -> None:
    """Write `cache` to `folder/.selfcorrect/log_cache.json`, atomically (io/atomic.py).

    Raises InputError naming the path when a symlink, a folder or a read-only file is there
    (or `.selfcorrect` is a link), as for every state file; nothing is written through it.
    A cache that cannot be saved exactly (its last entry holds YAML that JSON cannot give back,
    a set or binary), or that is larger than the log it folds, is not written: the state
    already there, if any, is the fold of an earlier part of the log, which the next load
    reads on from.
    """
    try:
        document = _document(cache)
    except saved.StateError:
        return
    data = seal(document)
    folded = cache.cursor.size if cache.cursor is not None else 0
    if len(data) > min(MAX_STATE, max(folded, MIN_ROOM)):
        return  # it would outgrow the log it folds: see the module's docstring
    path = log_state_path(folder)
    ensure_dir(path.parent)  # a symlinked .selfcorrect/ is refused, never written into
    replace_file(path, data)


def seal(document: dict[str, Any]) -> bytes:
    """The state file's bytes: `document` as compact JSON, opening with its seal."""
    return seal_bytes(json.dumps(document, separators=(",", ":")).encode("ascii"))


def seal_bytes(body: bytes) -> bytes:
    """A JSON object's text with `"seal"`, the SHA-256 of that text, put first in it."""
    return b'{"seal":"' + hashlib.sha256(body).hexdigest().encode("ascii") + b'",' + body[1:]


def unseal(data: bytes) -> bytes:
    """The JSON object a sealed state holds, without its seal; StateError when the seal is
    missing or does not match the rest (another save's parts, or a hand edit)."""
    match = _SEAL.match(data)
    if match is None:
        raise saved.StateError("no seal")
    body = b"{" + data[match.end() :]
    if hashlib.sha256(body).hexdigest().encode("ascii") != match.group(1):
        raise saved.StateError("the seal does not match the state")
    return body


def _document(cache: LogCache) -> dict[str, Any]:
    document: dict[str, Any] = dict.fromkeys(_KEYS)
    document.update(format=FORMAT, version=VERSION, policy_version="", entries=0, warnings=[])
    cursor, ledger, detector, repeated = cache.cursor, cache.ledger, cache.detector, cache.repeated
    if (
        cursor is None
        or ledger is None
        or detector is None
        or repeated is None
        or cache.taxonomy is None
    ):
        return document  # no load yet: the next one reads the whole log
    document.update(
        policy_version=cache.policy_version,
        entries=cache.entries,
        warnings=[diagnostic_state(d) for d in cache.warnings],
        cursor=cursor.to_state(),
        ledger=ledger.to_state(),
        detector=detector.to_state(),
        repeated=repeated.to_state(),
    )
    return document


def _restore(folder: Path, policy_path: Path | None, document: Any) -> LogCache:
    data = saved.fields(document, _KEYS)
    if data["format"] != FORMAT or data["version"] != VERSION:
        raise saved.StateError("another format or version")
    if any(data[part] is None for part in ("cursor", "ledger", "detector", "repeated")):
        return LogCache()  # saved before any load: nothing to read on from
    version = saved.text(data["policy_version"])
    policy = load_policy(policy_path or folder / layout.POLICY)
    if not version.startswith(policy_version(policy)):
        return LogCache()  # another policy: everything would be rebuilt anyway
    taxonomy, ledger, detector = fresh_fold(policy)
    ledger.load_state(data["ledger"])
    detector.load_state(data["detector"])
    return LogCache(
        cursor=LogCursor.restore(folder / layout.FAILURE_LOG, data["cursor"]),
        policy_version=version,
        taxonomy=taxonomy,
        ledger=ledger,
        detector=detector,
        repeated=RepeatedCalls.from_state(
            data["repeated"], policy.stuck.edit_tools
        ),  # ValueError when it does not read
        entries=saved.integer(data["entries"]),
        warnings=[diagnostic_of(d) for d in saved.items(data["warnings"])],
    )


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise saved.StateError("a key given twice")
    return result


__all__ = [
    "FORMAT",
    "MAX_STATE",
    "MIN_ROOM",
    "VERSION",
    "load_log_cache",
    "log_state_path",
    "save_log_cache",
    "seal",
    "seal_bytes",
    "unseal",
]
