"""`selfcorrect init DIR`: a commented policy and empty but valid inputs, never overwriting."""

from __future__ import annotations

from pathlib import Path

from selfcorrect import layout
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import atomic, documents, safe_paths
from selfcorrect.io.resources import data_dir, data_file

INPUTS = (layout.FAILURE_LOG, layout.COORDINATION_LOG, layout.REPORT, layout.ESCALATIONS)


def init_folder(folder: Path, policy_path: Path | None = None) -> tuple[list[Path], list[Path]]:
    """Create what is missing; return (created, skipped) paths."""
    if folder.exists() and not folder.is_dir():
        raise InputError(
            Diagnostic(
                documents.display_path(folder),
                1,
                1,
                "exists and is not a folder; pass a new or existing folder path",
            )
        )
    folder.mkdir(parents=True, exist_ok=True)
    safe_paths.preflight(folder)  # init writes nothing through a link either
    plan = [(policy_path or folder / layout.POLICY, data_file("templates", layout.POLICY))]
    plan += [(folder / name, data_dir("templates") / "init" / name) for name in INPUTS]
    created: list[Path] = []
    skipped: list[Path] = []
    for target, source in plan:
        written = atomic.write_new(target, source.read_bytes())
        (created if written else skipped).append(target)
    return created, skipped
