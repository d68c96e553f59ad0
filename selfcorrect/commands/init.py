"""`selfcorrect init DIR`: a short commented policy, empty but valid inputs, and the schemas an
editor needs, and a `.gitignore` that keeps the folder's outputs out of git, never overwriting
a file a person may have edited.

The policy `init` writes sets nothing: it shows, commented, what users usually change and points
to docs/policy.md, so a folder never pins the defaults of the version that created it (the full
defaults stay in templates/selfcorrect.yaml, and `selfcorrect policy DIR` prints what is in
force). Each file's first line is a `yaml-language-server` modeline naming a schema copied into
DIR/.selfcorrect/schemas/: editors resolve it offline, relative to the file (docs/ci.md,
"Editor schemas").
"""

from __future__ import annotations

import os
from pathlib import Path

from selfcorrect import layout
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io import atomic, documents, safe_paths
from selfcorrect.io.resources import data_dir

INPUTS = (layout.FAILURE_LOG, layout.COORDINATION_LOG, layout.REPORT, layout.ESCALATIONS)
# The schemas of the files a workflow folder holds (the others describe selfcorrect's own
# journal and test fixtures).
EDITOR_SCHEMAS = (
    "selfcorrect",
    "validation_report",
    "tool_failures",
    "coordination_log",
    "escalations",
    "microtasks",
    "waypoint",
    "calibration",
)
MODELINE = "# yaml-language-server: $schema="
# Shipped as templates/init/gitignore: a dotfile could be left out of the wheel.
GITIGNORE = ".gitignore"


def init_folder(folder: Path, policy_path: Path | None = None) -> tuple[list[Path], list[Path]]:
    """Create what is missing; return (created, skipped) paths.

    The schema copies are selfcorrect's own: they are brought up to date with the installed
    version on every `init` (listed as created when any changed), never skipped.
    """
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
    shipped = data_dir("templates") / "init"
    policy = policy_path or folder / layout.POLICY
    plan = [(policy, _with_modeline(shipped / layout.POLICY, policy, folder, "selfcorrect"))]
    plan += [(folder / name, (shipped / name).read_bytes()) for name in INPUTS]
    # The folder's outputs are git-ignored where they are written (docs/integration.md)
    plan.append((folder / GITIGNORE, (shipped / "gitignore").read_bytes()))
    created: list[Path] = []
    skipped: list[Path] = []
    for target, data in plan:
        written = atomic.write_new(target, data)
        (created if written else skipped).append(target)
    if copy_schemas(folder):
        created.append(folder / layout.SCHEMAS)
    return created, skipped


def copy_schemas(folder: Path) -> bool:
    """Copy the workflow files' schemas into DIR/.selfcorrect/schemas/; True when any changed."""
    target = folder / layout.SCHEMAS
    safe_paths.ensure_dir(target)
    changed = False
    for stem in EDITOR_SCHEMAS:
        name = f"{stem}.schema.json"
        data = (data_dir("schemas") / name).read_bytes()
        changed |= atomic.replace_file(target / name, data)
    return changed


def _with_modeline(template: Path, target: Path, folder: Path, stem: str) -> bytes:
    """The template, its modeline pointing at the schema copy relative to where it is written
    (a --policy file outside DIR gets a path that leads back into DIR)."""
    text = template.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if not first.startswith(MODELINE):
        return text.encode("utf-8")
    schema = folder.resolve() / layout.SCHEMAS / f"{stem}.schema.json"
    relative = Path(os.path.relpath(schema, target.resolve().parent)).as_posix()
    return f"{MODELINE}{relative}\n{rest}".encode()
