"""The project checks a run's loading needs (io/workflow_inputs.ProjectChecks): a PASS's
evidence re-checked against the project (checks/evidence.py), and whether the built-in fix can
restructure a document (checks/documents.py). The commands hand these to `load_inputs`.

Each check imports its module when it is first asked: most runs (an agent hook's above all,
docs/hooks.md) have no PASS to re-check and no document to restructure, and need neither."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from selfcorrect.core.model import Report
from selfcorrect.io.workflow_inputs import ProjectChecks


def _recheck(report: Report, root: Path) -> Iterable[Any]:
    from selfcorrect.checks.evidence import recheck

    return recheck(report, root)


def _restructurable(root: Path) -> Callable[[str, str], bool]:
    def check(target: str, template: str) -> bool:
        from selfcorrect.checks.documents import restructurable

        return restructurable(root)(target, template)

    return check


PROJECT_CHECKS = ProjectChecks(recheck=_recheck, restructurable=_restructurable)
