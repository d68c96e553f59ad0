"""All workflow-file reads and the one write of a human-edited file (rules §2, §17).

Two kinds of file, two rules (rules §2):
- decision documents are strict: any parse, guard or schema problem is an InputError listing
  every positioned violation, and the run stops before anything is written;
- hook logs (tool_failures.yaml, waypoints) are tolerant: an unreadable entry or waypoint is a
  warning and the rest is kept.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from yaml.nodes import Node

from selfcorrect import layout
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import hook_dialect, platform, schemas, yaml_nodes
from selfcorrect.io.display import display_path
from selfcorrect.io.failure_log import RawFailure, decode_log, iter_failures
from selfcorrect.io.safe_paths import NOT_REGULAR

if TYPE_CHECKING:
    from selfcorrect.core.outputs import Escalation
    from selfcorrect.io.owned_list import OwnedList

DEFAULT_MAX_BYTES = 50 * 1024 * 1024  # policy limits.max_bytes (rules §17)
SPLICED = {"coordination_log": "failed_items", "escalations": "escalations"}  # keys we own
# Decision documents in which a duplicate key is a warning and the last value wins
# (docs/rules.md §2.2: cAgents' evidence-recheck hook writes every `reason:` line after every
# `criterion:`).
LENIENT_DUPLICATES = frozenset({"validation_report"})


class Document(Struct):
    """A loaded, guarded, schema-valid document and the node tree that positions its values."""

    path: Path
    display: str
    data: Any
    root: Node | None = None
    raw: bytes | None = None  # the bytes read, for `digest`
    warnings: list[Diagnostic] = field(default_factory=list)  # e.g. a tolerated duplicate key

    def __repr__(self) -> str:  # not the node tree and the bytes: a log's would fill a screen
        return f"Document({self.display!r}, data={self.data!r}, warnings={self.warnings!r})"

    @property
    def digest(self) -> str:
        """Of the bytes read ("" when none were kept): a document's identity is its content.
        Computed when asked, not at load: only a run needs it, and OpenSSL's load would cost
        `check` start-up 6 ms (rules §18)."""
        if self.raw is None:
            return ""
        import hashlib

        return hashlib.sha256(self.raw).hexdigest()[:16]

    def position(self, path: Sequence[str | int]) -> tuple[int, int]:
        if self.root is None:
            return 1, 1
        mark = yaml_nodes.node_at(self.root, path)[0].start_mark
        return mark.line + 1, mark.column + 1


def read_limited(path: Path, display: str, max_bytes: int, *, single: bool = False) -> bytes:
    """The file's bytes, refusing anything over `max_bytes` before reading it; `single`: and
    a file with another hard link (`tool_failures.yaml`, which agents' hooks append to)."""
    try:
        # Non-blocking, and the type checked on the descriptor: a FIFO in a file's place would
        # hang the read forever (and a device never ends).
        flags = os.O_RDONLY | platform.O_NONBLOCK | platform.O_CLOEXEC
        with open(os.open(path, flags), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InputError(Diagnostic(display, 1, 1, NOT_REGULAR))
            if single and info.st_nlink > 1:
                raise InputError(Diagnostic(display, 1, 1, shared_log(info.st_nlink)))
            if info.st_size > max_bytes:
                raise InputError(
                    Diagnostic(
                        display,
                        1,
                        1,
                        f"file is {info.st_size:,} bytes, over limits.max_bytes "
                        f"({max_bytes:,}); refusing to read it (raise limits.max_bytes in "
                        "selfcorrect.yaml if it is genuine)",
                    )
                )
            return handle.read()
    except OSError as exc:
        raise InputError(
            Diagnostic(
                display,
                1,
                1,
                f"cannot read file: {exc.strerror}; check that it exists and is readable",
            )
        ) from None


def shared_log(links: int) -> str:
    """Why a failure log with other hard links is refused (docs/containment.md): its other
    name may be a file outside the folder, whose text the run would read and repeat, and into
    which the hooks would append."""
    others = links - 1
    return (
        f"has {others} other hard link{'s' if others > 1 else ''}, so it may be a file outside "
        "the workflow folder, and selfcorrect neither reads nor appends to it: replace it with "
        "a copy of its own (cp, then mv over it)"
    )


def load_decision(
    path: Path, stem: str, *, max_bytes: int = DEFAULT_MAX_BYTES, allow_empty: bool = False
) -> Document:
    """A strict document: parse, guard (aliases, duplicates) and schema-check, or InputError."""
    display = display_path(path)
    raw = read_limited(path, display, max_bytes)
    text = yaml_nodes.decode(raw, display)
    warnings: list[Diagnostic] | None = [] if stem in LENIENT_DUPLICATES else None
    data, root = yaml_nodes.load_text(text, display, warnings=warnings)
    if root is None:
        if allow_empty:
            return Document(path, display, {}, None, raw)
        raise InputError(
            Diagnostic(
                display,
                1,
                1,
                "file is empty (no YAML document); write the document or delete the file",
            )
        )
    problems = schemas.validate(data, root, stem, display)
    if stem in SPLICED and getattr(root, "flow_style", False):
        # Judged here, at load, so a run refuses it before writing anything (and `check` too).
        problems.append(
            Diagnostic(
                display,
                root.start_mark.line + 1,
                root.start_mark.column + 1,
                f"write it as a block mapping (one `key: value` per line): selfcorrect updates "
                f"its {SPLICED[stem]} key in place and never rewrites the rest",
            )
        )
    if problems:
        raise InputError([*problems, *(warnings or ())])
    return Document(path, display, data, root, raw, warnings or [])


def load_trusted(path: Path) -> Any:
    """A file selfcorrect ships, parsed and nothing more: no guard, no schema, no positions.
    Never for a file a person or an agent writes (tests hold the shipped ones to the strict
    load)."""
    text = yaml_nodes.decode(path.read_bytes(), display_path(path))
    return yaml_nodes.load_plain(text)


def read_failure_log(
    path: Path, warnings: list[Diagnostic], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[RawFailure]:
    """Stream the readable entries of tool_failures.yaml; unreadable ones become warnings."""
    display = display_path(path)
    raw = read_limited(path, display, max_bytes, single=True)
    text = decode_log(raw, display, warnings)
    return iter_failures(text.removeprefix("\ufeff"), display, warnings)


def load_waypoint(
    path: Path, warnings: list[Diagnostic], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Document | None:
    """A waypoint (a hook log): the hook's raw quoting is honoured; problems become warnings."""
    display = display_path(path)
    try:
        text = yaml_nodes.decode(read_limited(path, display, max_bytes), display)
        raws: list[str] = []
        if hook_dialect.is_dialect(text, hook_dialect.WAYPOINT_HEADER):
            text, raws = hook_dialect.protect_raw_values(text)
        data, root = yaml_nodes.load_text(text, display)
    except InputError as exc:
        warnings.extend(_warn(exc.diagnostics, "waypoint skipped"))
        return None
    if root is None:
        warnings.append(Diagnostic(display, 1, 1, "waypoint is empty (skipped)", "warning"))
        return None
    data = hook_dialect.restore_raw_values(data, raws)
    problems = schemas.validate(data, root, "waypoint", display, severity="warning")
    if problems:
        warnings.extend(_warn(problems, "waypoint skipped"))
        return None
    return Document(path, display, data, root)


def _warn(problems: list[Diagnostic], note: str) -> list[Diagnostic]:
    return [Diagnostic(p.path, p.line, p.col, f"{p.message} ({note})", "warning") for p in problems]


def waypoint_paths(folder: Path) -> list[Path]:
    """Waypoints live in DIR/waypoints/ and, in the cAgents layout, DIR/../waypoints/
    (rules §2.4)."""
    found: list[Path] = []
    for place in (folder / layout.WAYPOINTS, folder.parent / layout.WAYPOINTS):
        if place.is_dir():
            found.extend(
                sorted(p for p in place.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
            )
    return found


def update_failed_items(
    path: Path, entries: Sequence[Mapping[str, Any]], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> bool:
    """Merge `entries` into coordination_log.yaml#failed_items; every other byte is kept."""
    from selfcorrect.io.owned_list import FAILED_ITEMS  # ruamel: only when writing

    return update_owned_list(path, FAILED_ITEMS, entries, max_bytes=max_bytes)


def failed_items_settled(
    path: Path, entries: Sequence[Mapping[str, Any]], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> bytes | None:
    """coordination_log.yaml's bytes when merging `entries` into its failed_items would
    change nothing (as `update_failed_items` leaves it); None otherwise, or unreadable."""
    from selfcorrect.io.owned_list import FAILED_ITEMS, splice

    display = display_path(path)
    try:
        data = read_limited(path, display, max_bytes)
        text = yaml_nodes.decode(data, display)
        return data if splice(text, FAILED_ITEMS, entries, display) == text else None
    except InputError:
        return None


def add_escalations(
    path: Path,
    escalations: Sequence[Escalation | Mapping[str, Any]],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> bool:
    """Add escalations not yet in escalations.yaml; existing ones, and people's edits, stay.
    A plan's typed escalation becomes its entry here (core/outputs.Escalation.to_json)."""
    from selfcorrect.io.owned_list import ESCALATIONS, splice

    entries = [e if isinstance(e, Mapping) else e.to_json() for e in escalations]
    if not entries:
        return False  # never create a file with nothing in it: it would not read back
    if not path.exists():
        header = (
            f"{schemas.modeline('escalations')}\n"
            "# Escalations: selfcorrect lists here what needs a human (docs/rules.md §10).\n"
            "# To hand one back: set `status: resolved`, say why in `evidence:` and who you\n"
            "# are in `resolved_by:`; add `retry: true` for a fresh retry budget. The next run\n"
            "# acts on it and journals it (or run `selfcorrect reset DIR --escalation ID`).\n"
            "# selfcorrect never overwrites your edits here.\n"
        )
        # Header and entries in one atomic write: a process killed between two writes would
        # leave a file of comments only, which every later run refuses as empty.
        text = splice(header, ESCALATIONS, entries, display_path(path))
        from selfcorrect.io import atomic  # only when writing

        with atomic.sidecar_lock(path):  # the lock every later update of the file takes
            created = atomic.write_new(path, text.encode("utf-8"))
        if created:
            return True
        # Someone created it meanwhile: merge into theirs.
    return update_owned_list(path, ESCALATIONS, entries, max_bytes=max_bytes)


def resolve_escalations(
    path: Path, updates: Sequence[Mapping[str, Any]], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> bool:
    """Mark existing escalations resolved (status, who, when, evidence); never adds one."""
    if not path.exists() or not updates:
        return False
    from selfcorrect.io.owned_list import RESOLUTIONS

    return update_owned_list(path, RESOLUTIONS, updates, max_bytes=max_bytes)


def update_owned_list(
    path: Path,
    spec: OwnedList,
    entries: Sequence[Mapping[str, Any]],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> bool:
    """Merge `entries` into the file's `spec.key` list; every other byte is kept.

    Atomic and compare-and-swap (io/atomic.py). The merge is redone on the bytes on disk at
    the moment of writing, so a human edit that landed meanwhile is kept. Returns True if the
    file changed.
    """
    display = display_path(path)

    def transform(current: bytes | None) -> bytes | None:
        if current is not None and not current.strip():
            # Empty now, though it was read moments ago: an editor's truncate-then-write save
            # caught half-way. Writing now would replace the file the editor is still filling.
            # Leave it; its next change brings the next run.
            return None
        if current is not None and len(current) > max_bytes:
            read_limited(path, display, max_bytes)  # raises the positioned refusal
        text = yaml_nodes.decode(current or b"", display)
        from selfcorrect.io.owned_list import splice

        new = splice(text, spec, entries, display).encode("utf-8")
        if len(new) > max_bytes and new != current:
            # Every later run would refuse to read what this one wrote: refuse it now, while
            # the file on disk is still readable.
            raise InputError(
                f"{display}: writing {spec.key} would make the file {len(new):,} bytes, over "
                f"limits.max_bytes ({max_bytes:,}), and selfcorrect would refuse to read it "
                f"back; nothing was written to it: raise limits.max_bytes in the policy, or "
                f"remove entries from {spec.key} that are done with"
            )
        return new

    from selfcorrect.io import atomic  # only when writing: `check` never loads it

    return atomic.update_file(path, transform)


def render_owned(stem: str, comment: str, data: Mapping[str, Any], to_folder: str = "") -> bytes:
    """A whole file selfcorrect owns (a report, a micro-task list) as YAML: the schema line
    editors use (relative: `to_folder` leads from the file's folder to the workflow folder), a
    comment saying who writes it, then the data (libyaml's dumper: fast, and 1.1-correct
    quoting)."""
    import yaml

    lines = [
        schemas.modeline(stem, to_folder),
        *(f"# {line}" for line in comment.splitlines()),
    ]
    body = yaml.dump(
        dict(data),
        Dumper=yaml.CSafeDumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )
    return ("\n".join(lines) + "\n" + body).encode("utf-8")
