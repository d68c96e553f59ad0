"""The shipped data files (schemas/, templates/), found through one helper.

In a wheel they live at `selfcorrect/_data/<kind>/` (pyproject maps them in). In a source
checkout or an editable install they are the repo's top-level folders.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from selfcorrect.errors import ResourceMissing

_PACKAGE = Path(__file__).resolve().parents[1]  # selfcorrect/: never zipped (a wheel installs
_SOURCE_ROOT = _PACKAGE.parent  # files), so importlib.resources' 4 ms import buys nothing here


@cache
def data_dir(kind: str) -> Path:
    """The folder holding shipped `kind` files ("schemas" or "templates")."""
    packaged = _PACKAGE / "_data" / kind
    if packaged.is_dir():
        return packaged
    source = _SOURCE_ROOT / kind
    if source.is_dir():
        return source
    raise ResourceMissing(
        f"selfcorrect's {kind}/ folder is missing from the installation; reinstall selfcorrect"
    )


def data_file(kind: str, name: str) -> Path:
    """One shipped file, or a clear error naming what is missing."""
    path = data_dir(kind) / name
    if not path.is_file():
        raise ResourceMissing(f"shipped file {kind}/{name} is missing; reinstall selfcorrect")
    return path
