"""The project checks a run's loading needs (io/workflow_inputs.ProjectChecks): a PASS's
evidence re-checked against the project (checks/evidence.py), and whether the built-in fix can
restructure a document (checks/documents.py). The commands hand these to `load_inputs`."""

from __future__ import annotations

from selfcorrect.checks.documents import restructurable
from selfcorrect.checks.evidence import recheck
from selfcorrect.io.workflow_inputs import ProjectChecks

PROJECT_CHECKS = ProjectChecks(recheck=recheck, restructurable=restructurable)
