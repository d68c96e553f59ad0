"""Re-invoking the validator (rules §4 step 5), and trusting only a fresh report.

The validator runs as an argv list in the project root with SELFCORRECT_DIR set. Its report
counts only if the file was (re)written while it ran: an unchanged or older report is
*uncertain*, never PASS.

This module also decides who owns validation_report.yaml (docs/integration.md): a report that
names another validator (`validator` or `generated_by`), or that is in a cAgents dialect, is that
validator's. The built-in validator never replaces it; when the policy sets no
`validator.command`, selfcorrect cannot re-validate at all and waits for that validator's fresh
report; and the prompts' verify line names the command that writes the report, or asks for a
fresh validation when none is known.
"""

from __future__ import annotations

import hashlib
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from selfcorrect import layout
from selfcorrect.core.model import Verdict
from selfcorrect.core.normalise.report import SAFETY_NET, verdict_of
from selfcorrect.core.policy import Policy
from selfcorrect.errors import InputError
from selfcorrect.io import documents, folder_lock, last_report, yaml_nodes

if TYPE_CHECKING:  # the validator runs in a full run only; a hook needs the verify line
    from selfcorrect.io.process import Completed

BUILT_IN = "selfcorrect"  # the `validator` the built-in validator writes into its reports
# Keys only the cAgents dialects write at the top of a report (docs/integration.md).
_DIALECT_KEYS = ("classification", "overall_status", "issues_found", "acceptance_criteria_results")
# What a report that holds nothing may say: no verdict in these keys, and empty lists in the
# rest. `init`'s file (`overall_status: UNKNOWN`) is one: no validator has run.
_VERDICT_KEYS = ("status", "overall_status", "classification")
_LIST_KEYS = ("issues", "issues_found", "acceptance_criteria_results")
# The verify line when no command is known: templates/strategies/_common.md.j2 tests this prefix.
ASK_FOR_VALIDATION = "ask for a fresh validation"
_NAME_LIMIT = 80


class Revalidation(Struct, frozen=True):
    fresh: bool
    detail: str
    completed: Completed | None  # None: no validator was run


class Owner(Struct, frozen=True):
    """Who wrote validation_report.yaml: `name` as the report gives it (None when unnamed)."""

    name: str | None
    foreign: bool  # another validator's report: the built-in validator must not replace it

    def describe(self) -> str:
        if self.name:
            return f"validator {self.name!r}"
        return "another validator (its report is in a cAgents dialect)"


def _clean(name: Any) -> str | None:
    """A validator's name as agent-written text: one short line, or None."""
    if not isinstance(name, str | int | float) or isinstance(name, bool):
        return None
    line = " ".join(str(name).split()).replace("`", "'")
    if not line:
        return None
    return line if len(line) <= _NAME_LIMIT else line[: _NAME_LIMIT - 1] + "…"


def owner_of(data: Any) -> Owner:
    """The owner of a parsed report. An empty file is no one's; any other non-mapping is
    unknown, so treated as another validator's."""
    if data is None:
        return Owner(None, False)
    if not isinstance(data, Mapping):
        return Owner(None, True)
    name = _clean(data.get("validator")) or _clean(data.get("generated_by"))
    if name is not None:
        return Owner(name, name.strip().lower() != BUILT_IN)
    if _holds_nothing(data):
        return Owner(None, False)
    return Owner(None, any(key in data for key in _DIALECT_KEYS))


def _holds_nothing(data: Mapping[Any, Any]) -> bool:
    """A report no validator wrote (docs/integration.md): it names no writer, has no verdict and
    lists nothing, so replacing it loses no one's work. The file `init` writes is one, so
    `validate` on a fresh folder writes its report (docs/rules.md §14)."""
    if any(key not in (*_VERDICT_KEYS, *_LIST_KEYS, "generated_at") for key in data):
        return False
    no_verdict = all(verdict_of(data.get(key)) in (None, Verdict.NONE) for key in _VERDICT_KEYS)
    return no_verdict and not any(data.get(key) for key in _LIST_KEYS)


def report_owner(path: Path, max_bytes: int = documents.DEFAULT_MAX_BYTES) -> Owner | None:
    """The owner of the report at `path`; None when there is no file there.

    Read leniently: only to learn whose it is. A file that cannot be read is treated as another
    validator's, so nothing that may be someone else's work is ever overwritten."""
    if not path.exists() and not path.is_symlink():
        return None
    display = documents.display_path(path)
    try:
        text = yaml_nodes.decode(documents.read_limited(path, display, max_bytes), display)
        data, _ = yaml_nodes.load_text(text, display)
    except InputError:
        return Owner(None, True)
    return owner_of(data)


def _foreign_and_unrunnable(folder: Path, policy: Policy) -> Owner | None:
    """The report's owner when it is another validator's and the policy names no command to
    run it: selfcorrect cannot re-validate. None when it can."""
    if policy.validator.command:
        return None
    owner = report_owner(folder / layout.REPORT, policy.limits.max_bytes)
    stubs = {SAFETY_NET, *policy.stub_validators}
    kept = last_report.kept(folder) if owner is not None and owner.name in stubs else None
    if kept is not None:  # a stub stands in for the validator that wrote the kept report
        owner = report_owner(kept[0], policy.limits.max_bytes)
    return owner if owner is not None and owner.foreign else None


def verification_line(folder: Path, policy: Policy) -> str:
    """What a prompt's "Verify" section tells the agent to run (docs/integration.md).

    The command that writes the report, as a person types it; when the report is another
    validator's and no command is known, a request for a fresh validation by that validator."""
    owner = _foreign_and_unrunnable(folder, policy)
    if owner is None:
        return shlex.join(validator_argv(folder, policy, shown=True))
    return (
        f"{ASK_FOR_VALIDATION} from {owner.describe()}, which wrote "
        f"{layout.REPORT} (selfcorrect cannot run it: set validator.command in "
        f"{layout.POLICY} so it can)"
    )


def validator_argv(folder: Path, policy: Policy, *, shown: bool = False) -> list[str]:
    """The policy's validator, else the built-in one: the one command every caller resolves.

    Run (the default), the built-in is this very interpreter's; `shown` gives it as a person
    types it (`selfcorrect validate DIR`, DIR as given), for the prompts' verify line.
    """
    command = policy.validator.command
    if command:
        return list(command)
    if shown:
        return ["selfcorrect", "validate", str(folder)]
    # Absolute: the validator runs in the project root, not where the user typed DIR.
    return [sys.executable, "-m", "selfcorrect", "validate", str(folder.resolve())]


def _identity(path: Path) -> tuple[int, int, int, int, str] | None:
    """What changes when a file is rewritten, even with the same bytes by an atomic replace."""
    try:
        info = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size, digest


def revalidate(folder: Path, policy: Policy, root: Path) -> Revalidation:
    from selfcorrect.io.process import run_argv

    owner = _foreign_and_unrunnable(folder, policy)
    if owner is not None:
        # The built-in validator would replace that report with its own verdict on other
        # checks, and a PASS there is no verdict on the other validator's issues.
        return Revalidation(
            False,
            f"{layout.REPORT} is from {owner.describe()} and validator.command is unset: "
            "waiting for that validator's fresh report",
            None,
        )
    report = folder / layout.REPORT
    before = _identity(report)
    timeout = policy.validator.timeout_s
    # The run holds the folder's lock: the built-in validator works under it (io/folder_lock).
    env = {"SELFCORRECT_DIR": str(folder.resolve()), **folder_lock.child_env()}
    done = run_argv(validator_argv(folder, policy), root, timeout, env=env)
    after = _identity(report)
    if after is None:
        return Revalidation(
            False, f"the validator wrote no report ({done.describe(timeout)})", done
        )
    if after == before:
        return Revalidation(
            False,
            "the validator did not rewrite validation_report.yaml "
            f"({done.describe(timeout)}): the result is uncertain",
            done,
        )
    if done.timed_out:
        return Revalidation(False, f"the validator {done.describe(timeout)}", done)
    return Revalidation(True, f"fresh report ({done.describe(timeout)})", done)


__all__ = [
    "ASK_FOR_VALIDATION",
    "BUILT_IN",
    "Owner",
    "Revalidation",
    "owner_of",
    "report_owner",
    "revalidate",
    "validator_argv",
    "verification_line",
]
