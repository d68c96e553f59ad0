"""The policy as a file: shipped defaults (templates/selfcorrect.yaml) merged with the user's."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfcorrect import layout
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents
from selfcorrect.io.bounded_read import read_bounded
from selfcorrect.io.resources import data_file

if TYPE_CHECKING:
    from selfcorrect.core.policy import Policy


@cache
def default_policy_data() -> dict[str, Any]:
    """The built-in defaults: the same commented file `init` copies for users.

    Shipped and trusted, so read without positions or a schema pass (a third of `check`'s
    work); tests/test_policy.py holds it to the strict load and the schema instead.
    """
    data: dict[str, Any] = documents.load_trusted(data_file("templates", layout.POLICY))
    return data


def _with_meaning(path: Path, invalid: InputError) -> InputError:
    """A policy the schema refused, with what its meaning check finds too: every problem of
    the file reported at once, in file order (three typos take one run to see, not three).
    A file that does not even parse, or that the meaning check cannot follow, has only the
    first pass's problems."""
    from selfcorrect.core.policy import build_policy
    from selfcorrect.io import yaml_nodes

    display = documents.display_path(path)
    try:
        data, root = yaml_nodes.load_text(yaml_nodes.decode(path.read_bytes(), display), display)
    except (InputError, OSError):
        return invalid
    if root is None or not isinstance(data, dict):
        return invalid
    located = documents.Document(path, display, data, root)
    try:
        build_policy(default_policy_data(), data, located.position)
    except InputError as meaning:
        found = list(invalid.diagnostics)
        found += [
            Diagnostic(display, d.line, d.col, d.message)
            for d in meaning.diagnostics
            if (d.line, d.col, d.message) not in {(f.line, f.col, f.message) for f in found}
        ]
        return InputError(sorted(found, key=lambda d: (d.line, d.col)))
    except Exception:  # schema-invalid data the meaning check cannot follow: the schema's word
        return invalid
    return invalid


def unedited(path: Path) -> bool:
    """The file `init` wrote (every key commented), or the full defaults, byte for byte: it says
    exactly the defaults, so it needs no parse (a third of `check`'s work on a fresh folder)."""
    shipped = [data_file("templates", name) for name in (f"init/{layout.POLICY}", layout.POLICY)]
    try:
        size = path.stat().st_size
        return any(
            size == same.stat().st_size and path.read_bytes() == same.read_bytes()
            for same in shipped
        )
    except OSError:
        return False


def max_bytes_of(path: Path) -> int:
    """The policy's limits.max_bytes, the one value `check` needs of it (rules §17).

    A file that says exactly the defaults needs neither its parse nor the defaults' build
    (with the policy model's import, a quarter of `check`'s start-up, rules §18): its value is
    documents.DEFAULT_MAX_BYTES, which tests/test_policy.py holds equal to the defaults'. Any
    other file is loaded, and checked, in full.
    """
    if unedited(path):
        return documents.DEFAULT_MAX_BYTES
    return load_policy(path).limits.max_bytes


def load_policy(path: Path | None) -> Policy:
    """Defaults merged with the user's policy file (absent or empty file: defaults only).

    The policy is deeply read-only, so a process that loads the same file with the same bytes
    again (an agent hook loads it for its cursor, its entry and its run) gets the same object,
    its derived views built once. A file that cannot be read small and plain is loaded anew."""
    key = _identity(path)
    if key is not None and _LAST and _LAST[0][0] == key:
        return _LAST[0][1]
    policy = _load_policy(path)
    if key is not None:
        _LAST[:] = [(key, policy)]
    return policy


_LAST: list[tuple[tuple[str, bytes | None], Policy]] = []  # the last policy loaded, by bytes
_MAX_KEYED = 1 << 20


def _identity(path: Path | None) -> tuple[str, bytes | None] | None:
    """The policy file as its path and bytes (None: no file); None when it is not a small
    regular file (the full load then says what is wrong with it)."""
    if path is None or not os.path.lexists(path):
        return str(path), None
    data = read_bounded(path, _MAX_KEYED, linked_folder=True)
    return None if data is None else (str(path), data)


def _load_policy(path: Path | None) -> Policy:
    from selfcorrect.core.policy import build_policy  # not at import: see max_bytes_of

    user = None
    doc = None
    if path is not None and path.exists() and not unedited(path):
        try:
            doc = documents.load_decision(path, "selfcorrect", allow_empty=True)
        except InputError as exc:
            raise _with_meaning(path, exc) from None
        user = doc.data
    # A problem in a key the user wrote is shown where they wrote it; one that comes from the
    # defaults alone has no place in their file.
    locate = doc.position if doc is not None and doc.root is not None else (lambda _p: (1, 1))
    try:
        return build_policy(default_policy_data(), user, locate)
    except InputError as exc:
        # build_policy cannot know the file name; show the user's file.
        display = documents.display_path(path) if path else layout.POLICY
        raise InputError(
            [Diagnostic(display, d.line, d.col, d.message) for d in exc.diagnostics]
        ) from None


@cache
def shipped_commands() -> dict[str, list[str]]:
    """The commands of the shipped defaults alone: the baseline before any run recorded the
    policy's own (core/policy_commands.py)."""
    from selfcorrect.core.policy import build_policy
    from selfcorrect.core.policy_commands import commands_of

    return commands_of(build_policy(default_policy_data(), None))
