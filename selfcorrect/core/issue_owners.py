"""Which task a validator issue belongs to, when the validator names none (rules §5, "Who owns a
problem").

Pure. Validators rarely write `task_id`, but an unmet criterion usually quotes the task's own
acceptance criterion word for word, or names a file the task declared. Without the tie, a task
on hold is told "do not work on WI-2" while the issue about WI-2's migration is handed to an
agent under its fingerprint. An issue is tied:
1. to the task whose acceptance criterion it quotes (case, whitespace, quotes and trailing
   punctuation folded), else
2. to the task its description names: its `task_id` as a whole word (`WI-3:`, not `WI-31`;
   an id of digits alone names nothing), or its `name` quoted. cAgents v12's validator writes
   issues as `severity`, `description` and `suggested_fix` only, so its description is the one
   place an issue can name its task; else
3. to the task whose `files`, `deliverables` or `expected_deliverables` contain its target,
— in each step only when exactly one task matches; otherwise it stays the validator's.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence

from msgspec.structs import replace

from selfcorrect.core.model import Issue, Task

# A criterion this short ("Tests pass") is quoted by accident in many descriptions: it ties an
# issue only through the issue's own `criterion`, never by appearing inside its description.
MIN_QUOTED = 16
_SPACE = re.compile(r"\s+")
_EDGES = "\"'`\u201c\u201d\u2018\u2019 .,;:!?"
_LINE = re.compile(r":\d+(?::\d+)?$")


def folded(text: str) -> str:
    """Text as a quote is compared: case and runs of whitespace folded, quotes and trailing
    punctuation stripped."""
    return _SPACE.sub(" ", text).casefold().strip(_EDGES)


def _path(text: str) -> str:
    """A target or a declared file as a comparable path: `./`, backslashes, `:line` dropped."""
    path = _LINE.sub("", text.strip().replace("\\", "/"))
    while path.startswith("./"):
        path = path[2:]
    return path


def _quotes(issue: Issue, task: Task) -> bool:
    own = folded(issue.criterion) if issue.criterion else ""
    words = folded(" ".join(t for t in (issue.criterion, issue.description) if t))
    for criterion in task.acceptance_criteria:
        wanted = folded(criterion)
        if not wanted:
            continue
        if wanted == own or (len(wanted) >= MIN_QUOTED and wanted in words):
            return True
    return False


def _names(issue: Issue, task: Task) -> bool:
    """Does the issue's text name the task: its id as a whole word, or its name quoted?"""
    text = " ".join(t for t in (issue.criterion, issue.description) if t)
    ident = task.task_id.strip()
    whole = rf"(?<![\w-]){re.escape(ident)}(?![\w-])"
    if ident and not ident.isdigit() and re.search(whole, text, re.IGNORECASE):
        return True
    name = folded(task.name) if task.name else ""
    return len(name) >= MIN_QUOTED and name in folded(text)


def _contains(declared: str, target: str) -> bool:
    """Does a declared file, folder or glob contain the target?"""
    place = _path(declared)
    if not place:
        return False
    if place == target or fnmatch.fnmatchcase(target, place):
        return True
    return target.startswith(place.rstrip("/") + "/")


def _holds(task: Task, target: str) -> bool:
    declared = (*task.files, *task.deliverables, *task.expected_deliverables)
    return any(_contains(entry, target) for entry in declared)


def _only(tasks: Iterable[Task]) -> str | None:
    found = {task.task_id for task in tasks}
    return next(iter(found)) if len(found) == 1 else None


def owner(issue: Issue, tasks: Sequence[Task]) -> str | None:
    """The one task the issue belongs to, or None (ambiguous, or nothing matches)."""
    quoted = _only(task for task in tasks if _quotes(issue, task))
    if quoted is not None:
        return quoted
    named = _only(task for task in tasks if _names(issue, task))
    if named is not None:
        return named
    target = _path(issue.target) if issue.target else ""
    return _only(task for task in tasks if _holds(task, target)) if target else None


def owned(issues: Iterable[Issue], tasks: Sequence[Task]) -> tuple[Issue, ...]:
    """The issues, each without `task_id` given the one task it belongs to, when there is one."""
    out = []
    for issue in issues:
        task = None if issue.task_id or not tasks else owner(issue, tasks)
        out.append(replace(issue, task_id=task) if task else issue)
    return tuple(out)
