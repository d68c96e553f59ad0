"""Output-quality checks of the built-in validator (rules §14); each returns findings.

The configuration comes from the policy, yet paths are still checked: nothing that resolves
outside the project root is read, and commands run as argv lists, never through a shell (rules §17).
"""

from __future__ import annotations

from selfcorrect.checks._common import clean, inside, read_text, refused, severity_of
from selfcorrect.checks.commands import command_findings
from selfcorrect.checks.coverage import coverage_findings
from selfcorrect.checks.documents import docs_findings, headings, template_findings

__all__ = [
    "clean",
    "command_findings",
    "coverage_findings",
    "docs_findings",
    "headings",
    "inside",
    "read_text",
    "refused",
    "severity_of",
    "template_findings",
]
