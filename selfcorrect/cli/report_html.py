"""How `report` shows a session: one self-contained HTML page (docs/report.md). No decisions.

The page is rendered from templates/report.html.j2 in Jinja2's sandbox with autoescape on: every
value comes from agents' files or a hand-editable journal, so all of it is text, never markup
(`<script>` in an error message arrives as `&lt;script&gt;`), and the template cannot reach
Python internals. The page loads nothing: its CSS is inline, it has no script, and its
Content-Security-Policy forbids every fetch, so a value that slipped through could not load
anything either.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io.resources import data_dir

if TYPE_CHECKING:
    from jinja2 import Environment

    from selfcorrect.commands.report import SessionReport

TEMPLATE = "report.html.j2"

# What each status means to the person reading: shown in the summary and above each group.
MEANING = {
    "blocked": "a person is needed: read the escalation, then reset it with evidence",
    "skipped": "an external dependency failed: logged and skipped, the session goes on",
    "recovering": "selfcorrect handed out a fix or a recovery prompt and is waiting for it",
    "pending": "a directive is with an agent; nothing moves until the files change",
    "failing": "failures under the retry budget: observed, nothing handed out yet",
    "recovered": "fixed after selfcorrect acted (or nothing fails any more)",
    "ok": "failed before, succeeds now",
}


def render_report(report: SessionReport) -> str:
    from jinja2 import TemplateError

    from selfcorrect.commands.report import EVENTS_SHOWN, STATUS_ORDER

    groups = [
        {
            "status": status,
            "meaning": MEANING.get(status, ""),
            "items": [w for w in report.items if w.status == status],
        }
        for status in STATUS_ORDER
    ]
    anchors = {w.name: f"item-{index}" for index, w in enumerate(report.items, 1)}
    context: dict[str, Any] = {
        "report": report,
        "groups": [g for g in groups if g["items"]],
        "anchors": anchors,
        "statuses": [(s, report.counts["statuses"].get(s, 0)) for s in STATUS_ORDER],
        "failures": report.counts["failures"].most_common(),
        "failures_total": sum(report.counts["failures"].values()),
        "fixes": {k: report.counts["fixes"].get(k, 0) for k in ("verified", "undone", "refused")},
        "resets": report.counts["events"].get("reset", 0),
        "ladder": report.counts["events"].get("ladder", 0),
        "events_shown": EVENTS_SHOWN,
        "meaning": MEANING,
    }
    try:
        return _environment().get_template(TEMPLATE).render(context)
    except (TemplateError, TypeError, ValueError, LookupError, AttributeError) as exc:
        path = str(data_dir("templates") / TEMPLATE)
        line = getattr(exc, "lineno", None) or 1
        raise InputError(
            Diagnostic(
                path,
                line,
                1,
                f"the report template failed: {type(exc).__name__}: {exc}; "
                "reinstall selfcorrect or restore the shipped template",
            )
        ) from exc


@lru_cache(maxsize=1)
def _environment() -> Environment:
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(
        loader=FileSystemLoader(str(data_dir("templates"))),
        undefined=StrictUndefined,
        autoescape=True,  # every value is text: `<` arrives as `&lt;`
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["slug"] = _slug
    env.filters["thousands"] = _thousands
    return env


def _slug(value: object) -> str:
    """A CSS-class-safe word (statuses and event kinds are ours, but never trust a value)."""
    return re.sub(r"[^a-z0-9_-]+", "-", str(value).lower()) or "x"


def _thousands(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)
