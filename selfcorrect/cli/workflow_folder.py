"""Is DIR a workflow folder? Said before any command reads it (docs/integration.md).

`selfcorrect check .` from a project's root used to check 0 files and exit 0, and `run` on it
handed work to no one. A folder with no workflow file in it is an input error that says so and,
when a `workflow/` folder is near (a child or a sibling), names it. A path that does not exist
says so plainly, without a made-up `:1:1:` position.
"""

from __future__ import annotations

import os
from pathlib import Path

from selfcorrect import layout
from selfcorrect.errors import InputError
from selfcorrect.io.real_paths import linked_out

# Anything selfcorrect, a validator or an agent hook leaves in a workflow folder.
MARKERS = (
    layout.POLICY,
    layout.REPORT,
    layout.FAILURE_LOG,
    layout.COORDINATION_LOG,
    layout.ESCALATIONS,
    layout.CALIBRATION,
    layout.WAYPOINTS,
    layout.MICROTASKS,
    layout.RECOVERY,
    layout.HANDOFFS,
    layout.STATE,
)
NEAR_NAME = layout.DEFAULT_FOLDER
# Where the upward search stops: the project's root, as git stops at its repository's.
PROJECT_MARK = ".git"
OMITTED = (
    "DIR, when omitted, is found from the current folder upward, as git finds .git: the "
    "folder the project's hook settings name (.claude/settings.json, settings.local.json), "
    "else a workflow/ folder holding a workflow file."
)


def has_workflow_file(folder: Path) -> bool:
    return any((folder / name).exists() for name in MARKERS)


def nearby(folder: Path) -> Path | None:
    """A `workflow/` folder beside or below `folder` that holds a workflow file."""
    for candidate in (folder / NEAR_NAME, folder.parent / NEAR_NAME):
        if candidate != folder and candidate.is_dir() and has_workflow_file(candidate):
            return candidate
    return None


def require_workflow_folder(folder: Path, shown: str, *, workflow_file: bool = True) -> None:
    """InputError (exit 2, nothing written) unless `folder` is a folder with a workflow file
    (only a folder, when not `workflow_file`). `shown` is the folder as the user named it."""
    if not folder.exists():
        raise InputError(f"{shown}: no such folder; pass the workflow folder (see --help)")
    if not folder.is_dir():
        raise InputError(
            f"{shown}: not a folder; pass the workflow folder (the one holding "
            f"{layout.REPORT}), not a file in it"
        )
    linked = linked_out(folder)
    if linked is not None:
        target, home = linked
        raise InputError(
            f"{shown}: is a symbolic link to {target}, outside the project it is in ({home}); "
            "selfcorrect would take the link's target for the project and act on files "
            "outside yours: pass the real folder, or move it into the project"
        )
    if not workflow_file or has_workflow_file(folder):
        return
    near = nearby(folder)
    hint = (
        f"the workflow folder nearby is {_spelled(near, folder, shown)}: pass that instead"
        if near is not None
        else f"pass the folder your agents write them to, or start one with "
        f"`selfcorrect init {shown}`"
    )
    raise InputError(
        f"{shown}: not a workflow folder: none of {layout.REPORT}, {layout.FAILURE_LOG}, "
        f"{layout.COORDINATION_LOG}, {layout.POLICY} or {layout.ESCALATIONS} is in it; {hint}"
    )


def _spelled(near: Path, folder: Path, shown: str) -> str:
    """The nearby folder, spelled from what the user typed (`workflow`, `../workflow`)."""
    up = () if near.parent == folder else (os.pardir,)
    return os.path.normpath(os.path.join(shown, *up, near.name))


def find_workflow_folder(start: Path) -> Path:
    """The workflow folder of the project `start` is in (a command run without DIR): in
    `start` and each folder above it up to the project's root (the one holding .git), the
    folder the hook settings name there, else its `workflow/` if it holds a workflow file
    (docs/integration.md, "Finding DIR"). InputError (exit 2) naming `init` when none."""
    from selfcorrect.io.host_settings import hooked_folder

    for place in (start, *start.parents):
        named = hooked_folder(place)
        if named is not None:
            return named
        candidate = place / NEAR_NAME
        if candidate.is_dir() and has_workflow_file(candidate):
            return candidate
        if (place / PROJECT_MARK).exists():
            break
    raise InputError(
        f"no workflow folder found from {start} up to the project's root: no {NEAR_NAME}/ "
        "folder with a workflow file, and no hook settings naming one; pass DIR, or start one "
        f"with `selfcorrect init {NEAR_NAME}/`"
    )
