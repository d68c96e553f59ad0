"""What the last run or agent hook left on disk, so it is not made again:
`.selfcorrect/output_memo.json`.

An agent hook decides on every failed call (docs/hooks.md), and most calls change no prompt and
no `failed_items` entry: the file is already on disk as the run would write it. A rerun,
`status` and `report` (shadow runs, which read the memo and write nothing) are the same case.
Making it again costs Jinja2 (its import and the templates' compilation) for the prompts and
ruamel (a round-trip of the list) for `failed_items`, most of what a hook's decision costs. So
a run remembers, for each output, a key of what it was made from and the SHA-256 of the bytes:

- a recovery file: the templates it was rendered with (each one's name, type, size, change times
  and inode, the person's overrides included) and each template's context. When the key is the
  same and the file still has that digest, the file's text is the rendering: it is read back,
  and nothing is rendered or written;
- `coordination_log.yaml`'s `failed_items`: the entries merged into it, and the file's bytes
  once merging them again was checked to change nothing. When the entries and the bytes are
  those again, the merge would change nothing again (it is a function of the two): it is not
  done.

Anything else (a new decision, a changed template, a file edited by a person, a value that has
no exact key) makes the output as before. The memo holds no text, only digests: a hand-edited
memo can at most make an output be made again, or keep a file whose bytes are the ones it
names. It is read bounded and never through a link (io/bounded_read.py), and written like every
state file (io/atomic.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from selfcorrect import __version__, layout
from selfcorrect.io.atomic import replace_file
from selfcorrect.io.bounded_read import read_bounded
from selfcorrect.io.resources import data_dir
from selfcorrect.io.safe_paths import ensure_dir

FORMAT = "selfcorrect-output-memo"
VERSION = 1
MAX_MEMO = 1 << 20
MAX_OUTPUT = 16 << 20  # a file larger than this is made again, never read back
MAX_TEMPLATES = 512  # more template files than this are not keyed: render
MEMO = Path(layout.STATE) / "output_memo.json"
Calls = Sequence[tuple[str, Mapping[str, Any]]]  # (template name, context) rendered in order


class _NoKey(Exception):
    """A value JSON cannot pin down exactly: make the output, remember nothing."""


class OutputMemo:
    """The outputs of the last run or hook: per recovery file and per owned list, the key of
    what it was made from and the digest of its bytes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.known = _load(folder / MEMO)
        self.now: dict[str, dict[str, list[str]]] = {"files": {}, "lists": {}}
        self._templates: str | None = None

    def text(self, name: str, calls: Calls, render: Callable[[], str]) -> str:
        """The text of recovery file `name` rendered from `calls`: the file's own bytes when
        it holds what `calls` rendered last time, else `render()`."""
        key = self._prompt_key(calls)
        known = self.known["files"].get(name)
        if key is not None and known is not None and known[0] == key:
            held = _held(self.folder / layout.RECOVERY / name, known[1])
            if held is not None:
                self.now["files"][name] = known
                return held
        text = render()
        if key is not None:
            self.now["files"][name] = [key, _digest(text.encode("utf-8"))]
        return text

    def merge(
        self,
        path: Path,
        entries: Sequence[Mapping[str, Any]],
        merge: Callable[[], bool],
        settled: Callable[[], bytes | None],
    ) -> bool:
        """`merge()` (True when it changed the file at `path`), unless these `entries` were
        merged into these very bytes already; `settled()` gives the bytes when merging again
        would change nothing (None when it would)."""
        try:
            key = _key([__version__, _exact(list(entries))])
        except _NoKey:
            return merge()
        name = path.name
        before = _file_digest(path)
        if before is not None and self.known["lists"].get(name) == [key, before]:
            self.now["lists"][name] = [key, before]
            return False
        changed = merge()
        held = settled()
        if held is not None:
            self.now["lists"][name] = [key, _digest(held)]
        return changed

    def save(self) -> None:
        """Remember this run's outputs (only those: one not made now is forgotten)."""
        if self.now == self.known:
            return
        path = self.folder / MEMO
        ensure_dir(path.parent)
        document = {"format": FORMAT, "version": VERSION, **self.now}
        replace_file(path, json.dumps(document, sort_keys=True).encode("ascii"))

    def _prompt_key(self, calls: Calls) -> str | None:
        if self._templates is None:
            self._templates = _templates(self.folder / layout.TEMPLATES)
        if not self._templates:
            return None
        try:
            body = [[name, _exact(context)] for name, context in calls]
        except _NoKey:
            return None
        return _key([__version__, self._templates, body])


def _exact(value: Any) -> Any:
    """`value` as JSON that tells apart everything a template or a merge can: for a key."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise _NoKey
        return {"m": [[k, _exact(v)] for k, v in value.items()]}  # order kept: loops see it
    if isinstance(value, (list, tuple)):
        return {"l" if isinstance(value, list) else "t": [_exact(v) for v in value]}
    raise _NoKey  # an object: made each time


def _templates(overrides: Path) -> str:
    """What every template is (its name, type, size, change times and inode; folders and
    links too), the person's overrides first; "" when it cannot be said (unreadable, or more
    files than MAX_TEMPLATES)."""
    seen: list[list[Any]] = []
    for kind, root in (("override", overrides), ("shipped", data_dir("templates"))):
        try:
            if kind == "override":
                if not os.path.isdir(overrides):
                    continue
                folder_info = os.lstat(overrides)  # a folder swapped for a link is refused
                seen.append([kind, folder_info.st_mode, folder_info.st_ino])
            for folder, dirs, files in os.walk(root):
                dirs.sort()  # a linked folder is listed here (its link), never walked
                for name in [*dirs, *sorted(files)]:
                    info = os.lstat(os.path.join(folder, name))
                    rel = os.path.relpath(os.path.join(folder, name), root)
                    seen.append(
                        [kind, rel, info.st_mode, info.st_size, info.st_mtime_ns,
                         info.st_ctime_ns, info.st_ino]
                    )  # fmt: skip
                    if kind == "override" and stat.S_ISREG(info.st_mode):
                        # Allowing an override renders it instead of the built-in one.
                        seen[-1].append(_trusted(os.path.join(folder, name)))
                if len(seen) > MAX_TEMPLATES:
                    return ""
        except OSError:
            return ""
    return _key(seen)


def _trusted(path: str) -> bool:
    from selfcorrect.io.trust import trusted_template

    return trusted_template(path)


def _held(path: Path, digest: str) -> str | None:
    """The file's text when its bytes have `digest`, else None."""
    data = read_bounded(path, MAX_OUTPUT)
    if data is None or _digest(data) != digest:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _file_digest(path: Path) -> str | None:
    data = read_bounded(path, MAX_OUTPUT, linked_folder=True)
    return None if data is None else _digest(data)


def _load(path: Path) -> dict[str, dict[str, list[str]]]:
    """The memo as this version writes it; empty when it does not read exactly so."""
    empty: dict[str, dict[str, list[str]]] = {"files": {}, "lists": {}}
    data = read_bounded(path, MAX_MEMO)
    if data is None:
        return empty
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return empty
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return empty
    if document.get("version") != VERSION:
        return empty
    return {part: _pairs(document.get(part)) for part in empty}


def _pairs(value: Any) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        return {}
    return {
        name: entry
        for name, entry in value.items()
        if isinstance(entry, list) and len(entry) == 2 and all(isinstance(p, str) for p in entry)
    }


def _key(value: Any) -> str:
    return _digest(json.dumps(value, ensure_ascii=True).encode("ascii"))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
