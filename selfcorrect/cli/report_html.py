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
from collections import Counter
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from selfcorrect.core.plural import count
from selfcorrect.errors import Diagnostic, InputError
from selfcorrect.io.resources import data_dir

if TYPE_CHECKING:
    from jinja2 import Environment

    from selfcorrect.commands.report import ItemTimeline, SessionReport

TEMPLATE = "report.html.j2"

# What each status means to the person reading: shown in the summary and above each group.
MEANING = {
    "blocked": "a person is needed: read the escalation, then reset it with evidence",
    "skipped": "an external dependency failed: logged and skipped, the session goes on",
    "recovering": "selfcorrect handed out a fix or a recovery prompt and is waiting for it",
    "pending": "a directive is with an agent, or its agents retry within their failure budget",
    "recovered": "fixed after selfcorrect acted (or nothing fails any more)",
    "ok": "failed before, succeeds now",
}


# The page answers three questions, in this order (docs/report.md): what needs me, what is being
# worked, what is done (or set aside). Within them, worst first: an item stuck and being worked
# comes before one that is skipped until its outside cause goes away.
SECTIONS = (
    ("needs-you", "Needs you", ("blocked",)),
    ("being-worked", "Being worked", ("recovering", "pending")),
    ("done", "Done or set aside", ("skipped", "recovered", "ok")),
)
PAGE_ORDER = tuple(status for _, _, statuses in SECTIONS for status in statuses)

# The decisions' reason codes, as a person reads them.
REASONS = {
    "FIXABLE": "handed to an agent with a directive",
    "AWAITING_AGENT": "waiting for the agent's work and a fresh report",
    "VALIDATOR_BLOCKED": "the validator says only a person can decide",
    "NON_RETRYABLE": "never retried automatically (an outside cause)",
    "ESCALATE": "its type goes straight to a person (policy strategy escalate)",
    "NO_STRATEGY": "no strategy for its type: a person decides",
    "TOO_LONG": "too long to handle automatically",
    "MAXIMUM_ATTEMPTS_REACHED": "its attempts are spent: a person decides",
    "CIRCUIT_OPEN": "its rule stopped acting (circuit open)",
    "LOW_CONFIDENCE": "classified with too little confidence to act",
    "FIX_FAILED": "a fix failed verification and was undone",
    "CAPS_EXHAUSTED": "still open after the episode's correction cycles",
    "HUMAN_RESOLVED": "a person resolved it; waiting for a fresh report",
    "RECURRING": "it keeps coming back after being fixed: a person decides",
    "UNDER_BUDGET": "failing within its retry budget: the agents retry",
    "STUCK_FIRST_DETECTION": "stuck: a recovery prompt was handed out",
    "STILL_STUCK": "still stuck: the next ladder step",
    "LADDER_EXHAUSTED": "every ladder step was tried: a person decides",
    "RETRIES_SPENT": "its retries are spent: on the recovery ladder",
    "LIMIT_SIMPLIFY": "a resource limit: radical simplification",
    "LIMIT_DECOMPOSE": "a timeout: split into micro-tasks",
    "SUCCEEDED": "succeeds now",
    "RETIRED": "its rule is retired: observed only",
    "RESET": "a person handed it back",
}


class ItemView(Struct, frozen=True):
    """A work item as the page shows it at a glance: its last error and the next step."""

    work: ItemTimeline
    section: str
    last_error: str
    next_step: str
    tool_failures: int  # the failure log's, apart from the validation issues
    issues: int


def render_report(report: SessionReport) -> str:
    from jinja2 import TemplateError

    from selfcorrect.commands.report import EVENTS_SHOWN

    views = [_view(w, report.folder) for w in _page_order(report.items)]
    groups = [
        {
            "status": status,
            "meaning": MEANING.get(status, ""),
            "items": [v for v in views if v.work.status == status],
        }
        for status in PAGE_ORDER
    ]
    sections = [
        {
            "id": key,
            "title": title,
            "groups": [g for g in groups if g["status"] in statuses and g["items"]],
        }
        for key, title, statuses in SECTIONS
    ]
    anchors = {v.work.name: f"item-{index}" for index, v in enumerate(views, 1)}
    # The failure log's types apart from the validation report's issue types (the summary
    # counted both as one): a person compares like with like.
    issue_types: Counter[str] = Counter(
        part.failure_type for w in report.items for part in w.parts if part.kind == "issue"
    )
    failures = report.counts["failures"] - issue_types
    now = _parse(report.generated_at)
    context: dict[str, Any] = {
        "report": report,
        "views": views,
        "sections": sections,
        "anchors": anchors,
        "statuses": [(s, report.counts["statuses"].get(s, 0)) for s in PAGE_ORDER],
        "failures": failures.most_common(),
        "failures_total": sum(failures.values()),
        "issue_types": issue_types.most_common(),
        "now": now,
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
    env.filters["reason"] = reason_text
    env.filters["words"] = in_words
    env.filters["why"] = part_why
    env.filters["ago"] = _ago
    env.filters["local"] = _local
    env.filters["count"] = count  # "1 open escalation", "2 open escalations" (core/plural.py)
    env.filters["noun"] = noun
    return env


def noun(n: object, one: str, many: str | None = None) -> str:
    """The noun that agrees with `n`, for a card that shows the number apart."""
    return count(n if isinstance(n, int) else 0, one, many).split(" ", 1)[1]


def _page_order(items: list[ItemTimeline]) -> list[ItemTimeline]:
    """Worst first, by the page's order (the report's own order breaks ties)."""
    rank = {status: index for index, status in enumerate(PAGE_ORDER)}
    return sorted(items, key=lambda w: rank.get(w.status, 0))


_CODE = re.compile(r"\b[A-Z][A-Z_]{3,}\b")


def in_words(title: object) -> str:
    """An event title with every reason code in it said in words ("skipped: NON_RETRYABLE"
    reads "skipped: never retried automatically (an outside cause)")."""
    return _CODE.sub(lambda m: REASONS.get(m[0], m[0]), str(title))


def reason_text(code: object) -> str:
    """A decision's reason code as words; an unknown code as lower-case words."""
    text = str(code)
    return REASONS.get(text) or text.replace("_", " ").lower()


def _view(work: ItemTimeline, folder: str) -> ItemView:
    section = next(key for key, _, statuses in SECTIONS if work.status in statuses or key == "done")
    issues = sum(part.kind == "issue" for part in work.parts)
    failures = max(sum(work.failures.values()) - issues, 0)
    return ItemView(work, section, _last_error(work), _next_step(work, folder), failures, issues)


def part_why(part: Any) -> str:
    """Why a subject or issue stands as it does, in words. An issue of a task that is blocked
    or skipped is held with it: its own FIXABLE verdict is not what happens to it."""
    held = part.kind == "issue" and part.status in ("blocked", "skipped")
    if held and part.reason in ("FIXABLE", "AWAITING_AGENT"):
        return f"held with its task, which is {part.status}"
    return reason_text(part.reason)


def _last_error(work: ItemTimeline) -> str:
    """The newest error text the item's timeline holds, else its first issue's description."""
    for event in reversed(work.events):
        if event.kind == "failure" and event.detail:
            return event.detail
    for part in work.parts:
        if part.kind == "issue" and part.detail:
            return part.detail
    return ""


def _next_step(work: ItemTimeline, folder: str) -> str:
    """What happens next, and whether it is the reader's to do."""
    prompt = f"{folder}/{work.prompt}" if work.prompt else "its recovery prompt"
    steps = [p.ladder_step for p in work.parts if p.ladder_step]
    if work.status == "blocked":
        if work.escalations:
            ident = work.escalations[0]
            return (
                f"You: read escalation {ident} in {folder}/escalations.yaml, fix the cause, then "
                f'run selfcorrect reset {folder} --escalation {ident} --evidence "what you did".'
            )
        return (
            f"You: look at it, then run selfcorrect reset {folder} --subject {work.name} "
            '--evidence "what you did".'
        )
    if work.status == "recovering":
        step = f" (ladder step {max(steps)})" if steps else ""
        return f"The agent works on {prompt}{step}; nothing for you unless it stays stuck."
    if work.status == "pending" and not work.decided:  # failures under the type's budget
        return "The agents retry within the type's budget; selfcorrect steps in if it sticks."
    if work.status == "pending":
        return f"The agent has its directive in {prompt}; the next validation report judges it."
    if work.status == "skipped":
        return (
            "Skipped until a later success shows the outside cause (a registry, a network, a "
            "service) is gone; fix that cause if it persists."
        )
    return "Nothing: it succeeds now."


def _parse(at: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _ago(at: object, now: datetime | None) -> str:
    """A recorded time relative to the page's: "3 min before", "2 h before", "at the time"."""
    when = _parse(str(at))
    if when is None or now is None:
        return str(at) or "undated"
    seconds = int((now - when).total_seconds())
    later, seconds = seconds < 0, abs(seconds)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            amount = f"{seconds // size} {unit}"
            break
    else:
        return "just now"
    return f"{amount} {'after' if later else 'ago'}"


def _local(at: object) -> str:
    """A recorded time in this machine's local time zone, as a person reads a clock."""
    when = _parse(str(at))
    if when is None:
        return str(at)
    return when.astimezone().strftime("%a %d %b %Y, %H:%M:%S %Z")


def _slug(value: object) -> str:
    """A CSS-class-safe word (statuses and event kinds are ours, but never trust a value)."""
    return re.sub(r"[^a-z0-9_-]+", "-", str(value).lower()) or "x"


def _thousands(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)
