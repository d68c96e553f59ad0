"""Where each validation issue and each subject's latest failure stands in its file, and where
the workflow folder stands in the repository: what CI formats point at (docs/ci.md, "Lines").

Read only for the machine formats (`--format json|github|sarif|junit`): the text report needs
no line, and a watcher's runs never pay for a second read of the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from msgspec import Struct
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from selfcorrect import layout
from selfcorrect.core.model import Issue
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import documents
from selfcorrect.io.project_root import repository_root


class EntryAt(Struct, frozen=True):
    """A failure entry's first line (1-based) in tool_failures.yaml, and the file it names."""

    line: int
    file: str | None


def folder_in_repository(folder: Path) -> str | None:
    """The workflow folder relative to the repository root (the git work tree holding it, else
    the project root), so every path a CI format prints is relative to one place, wherever the
    run was started (a monorepo package's `workflow/` is `packages/app/workflow`, even when the
    package is its own project root); None outside it."""
    try:
        relative = folder.resolve().relative_to(repository_root(folder)).as_posix()
    except ValueError:
        return None
    return relative if relative != "." else None


def in_repository(path: str) -> str:
    """A path as printed (relative to the working directory) made relative to the repository
    root holding it, for annotations GitHub resolves from there; as it was outside."""
    try:
        resolved = Path(path).resolve()
        return resolved.relative_to(repository_root(resolved.parent)).as_posix()
    except (ValueError, OSError):
        return path


def issue_lines(folder: Path, issues: Sequence[Issue], max_bytes: int) -> list[int | None]:
    """Each issue's line in validation_report.yaml: the first mapping that carries its id (else
    its description, else its acceptance criterion), whatever the dialect nests it in; None
    for an issue the report spells nowhere as one entry."""
    path = folder / layout.REPORT
    if not issues or not path.exists():
        return [None] * len(issues)
    try:
        root = documents.load_decision(path, "validation_report", max_bytes=max_bytes).root
    except InputError:
        return [None] * len(issues)  # the run read it a moment ago; a changed file is no line
    by_id: dict[str, int] = {}
    by_text: dict[str, int] = {}
    for node in _mappings(root):
        line = node.start_mark.line + 1
        values = {k.value: v.value for k, v in node.value if isinstance(v, ScalarNode)}
        if isinstance(values.get("id"), str):
            by_id.setdefault(values["id"], line)
        for key in ("description", "issue", "message", "detail", "criterion"):
            if isinstance(values.get(key), str):
                by_text.setdefault(values[key], line)
    return [
        by_id.get(issue.id or "")
        or by_text.get(issue.description)
        or by_text.get(issue.criterion or "")
        for issue in issues
    ]


def failure_entries(folder: Path, latest: Mapping[str, int], max_bytes: int) -> dict[str, EntryAt]:
    """Each subject's latest failure (`latest`: subject -> its index in the log) as it stands
    in tool_failures.yaml: its line and the file it names."""
    path = folder / layout.FAILURE_LOG
    wanted: dict[int, list[str]] = {}
    for subject, index in latest.items():
        if index >= 0:
            wanted.setdefault(index, []).append(subject)
    found: dict[str, EntryAt] = {}
    if not wanted or not path.exists():
        return found
    warnings: list[Diagnostic] = []  # the run reported them already
    try:
        for raw in documents.read_failure_log(path, warnings, max_bytes=max_bytes):
            for subject in wanted.pop(raw.index, ()):
                named = raw.data.get("file_path")
                found[subject] = EntryAt(raw.line, named if isinstance(named, str) else None)
            if not wanted:
                break
    except InputError:
        pass  # the log changed since the run read it: the entries found so far stand
    return found


def _mappings(node: Node | None) -> Iterable[MappingNode]:
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, MappingNode):
            yield current
            stack.extend(v for _, v in reversed(current.value))
        elif isinstance(current, SequenceNode):
            stack.extend(reversed(current.value))
