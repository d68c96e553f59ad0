"""Re-invoking the validator (SPEC §4 step 5), and trusting only a fresh report.

The validator runs as an argv list in the project root with SELFCORRECT_DIR set. Its report
counts only if the file was (re)written while it ran: an unchanged or older report is
*uncertain*, never PASS.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from selfcorrect import layout
from selfcorrect.core.policy import Policy
from selfcorrect.io import folder_lock
from selfcorrect.io.process import Completed, run_argv


@dataclass(frozen=True)
class Revalidation:
    fresh: bool
    detail: str
    completed: Completed


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


__all__ = ["Revalidation", "revalidate", "validator_argv"]
