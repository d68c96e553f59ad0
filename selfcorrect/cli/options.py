"""Options every command spells the same way (rules §16)."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import click

from selfcorrect.errors import ExitCode

F = TypeVar("F", bound=Callable[..., Any])


class Common(NamedTuple):
    """What the shared options decided, handed to every command body. A named tuple, not a
    frozen dataclass: as immutable, without a dataclass's class creation at every start-up."""

    policy: Path | None
    color: bool
    verbosity: int  # -1 quiet, 0 normal, 1+ verbose


def _use_color(choice: str) -> bool:
    """--color always/never decide; `auto` is off under NO_COLOR, on under FORCE_COLOR (set and
    not empty: a CI log that renders ANSI), off on a terminal that says it has no colour
    (TERM=dumb), else on only for a terminal. NO_COLOR wins."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


# One type for every command's --policy: click names each new Path type through gettext, a
# look-up for message catalogues that costs start-up time once per command (rules §18).
_POLICY_FILE = click.Path(path_type=Path, dir_okay=False)


def common_options(func: F) -> F:
    """--policy, --color, -v/-q; the command receives them as one `common` argument."""

    decorators = [
        click.option(
            "--policy",
            type=_POLICY_FILE,
            help="Policy file. Default: DIR/selfcorrect.yaml (built-in defaults if absent).",
        ),
        click.option(
            "--color",
            type=click.Choice(["auto", "always", "never"]),
            default="auto",
            show_default=True,
            help="Colour output; auto honours NO_COLOR, then FORCE_COLOR.",
        ),
        click.option("-v", "--verbose", count=True, help="Say more."),
        click.option(
            "-q", "--quiet", is_flag=True, help="Say only what matters (errors, results)."
        ),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def make_common(policy: Path | None, color: str, verbose: int, quiet: bool) -> Common:
    return Common(policy=policy, color=_use_color(color), verbosity=-1 if quiet else verbose)


def format_option(*choices: str) -> Callable[[F], F]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help="Output format; machine formats go to stdout alone.",
    )


def _found_when_omitted(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path:
    """DIR as given, else the workflow folder found from the current folder upward."""
    if value is not None:
        return value
    from selfcorrect.cli.workflow_folder import find_workflow_folder

    found = find_workflow_folder(Path.cwd())
    return Path(os.path.relpath(found)) if found.is_relative_to(Path.cwd()) else found


def folder_argument(func: F) -> F:
    """DIR, the workflow folder: optional, found as git finds .git when omitted (said in the
    command's --help)."""
    from selfcorrect.cli.workflow_folder import OMITTED

    if func.__doc__:
        func.__doc__ = f"{inspect.cleandoc(func.__doc__)}\n\n{OMITTED}"
    return click.argument(
        "folder",
        metavar="[DIR]",
        required=False,
        type=click.Path(path_type=Path, file_okay=False),
        callback=_found_when_omitted,
    )(func)


new_folder_argument = click.argument(
    "folder", metavar="DIR", type=click.Path(path_type=Path, file_okay=False)
)


def pending_ok_option(func: F) -> F:
    """--pending-ok: PENDING exits 0, for a gate that fails only on BLOCKED or invalid input."""
    return click.option(
        "--pending-ok",
        is_flag=True,
        help="Exit 0, not 3, when the run is PENDING (work handed to agents, the folder's "
        "normal state while they work): a pre-commit hook or CI step then fails only on "
        "BLOCKED (1) or invalid input (2). A run whose validator could not start still "
        "exits 3.",
    )(func)


def pending_exit(code: int, pending_ok: bool) -> int:
    """The exit code of a run under --pending-ok (docs/ci.md, "pre-commit")."""
    return int(ExitCode.PASS) if pending_ok and code == ExitCode.PENDING else code


def wait_option(func: F) -> F:
    """--wait S: how long to wait for another selfcorrect process holding the folder."""
    return click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=60.0,
        show_default=True,
        metavar="S",
        help="Seconds to wait while another run, watcher run, reset or validate holds DIR's "
        "lock, or another program one of its file locks; past that, exit 2 naming its pid "
        "(nothing written).",
    )(func)
