"""`recovery/<work item>.md`: one file per work item, rendered from the plan's one decision.

Each file opens with the item's status (templates/status.md.j2) and a person's guidance;
only a recovering or pending item's file goes on with its stuck prompt and directives
(docs/rules.md §9.1). At most `limits.max_prompts` files are written; the last
lists the work items past the limit (100,000 issues once wrote 100,000 prompt files).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfcorrect import layout
from selfcorrect.core.model import FinalStatus
from selfcorrect.core.outputs import Plan, Prompt
from selfcorrect.core.policy import Policy
from selfcorrect.core.text_caps import cap_all, cap_text
from selfcorrect.core.work_item_decision import WorkItemDecision
from selfcorrect.core.work_items import MEANING
from selfcorrect.io import atomic, documents, prompts, safe_paths
from selfcorrect.layout import work_item_file

if TYPE_CHECKING:
    from selfcorrect.io.output_memo import OutputMemo

INPUTS = "the workflow's input files"  # where the whole of a cut text is, when no one file
MORE = "_more.md"  # no work item's file name starts with "_" (layout.work_item_file)


def render_recovery(
    folder: Path, plan: Plan, policy: Policy, memo: OutputMemo | None = None
) -> dict[str, str]:
    """File name -> text, for every work item with a prompt or a status an agent must see.

    With a `memo` (an agent hook's run), a file whose templates and contexts are the ones it
    was last rendered from, and that still holds that text, is read back, not rendered
    (io/output_memo.py)."""
    overrides = folder / layout.TEMPLATES
    workflow_dir = documents.display_path(folder)
    sections: dict[str, list[Prompt]] = {}
    for prompt in plan.prompts:
        sections.setdefault(prompt.work_item, []).append(prompt)
    for work_item, decided in plan.work_items.items():
        if decided.prompt is not None:
            sections.setdefault(work_item, [])
    limit = policy.limits.max_prompts
    kept = list(sections) if len(sections) <= limit else list(sections)[: limit - 1]
    max_text = policy.limits.max_text
    rendered: dict[str, str] = {}
    for work_item in kept:
        item = plan.work_items.get(work_item)
        body = sections[work_item] if item is None or item.acts else []
        # Contexts built from one input say where their text is; this catches every other.
        calls = [(p.template, cap_all(p.context, max_text, INPUTS)) for p in body]
        head = _status(item, workflow_dir, max_text) if item else None
        name = work_item_file(work_item)
        rendered[name] = _text(name, head, calls, overrides, memo)
    rest = [cap_text(item, max_text, INPUTS) for item in sections if item not in kept]
    if rest:
        context = {"count": len(rest), "written": len(kept), "items": rest}
        context["workflow_dir"] = workflow_dir
        more = [("more_prompts.md.j2", context)]
        rendered[MORE] = _memo(memo, MORE, more, lambda: _render(more[0], overrides))
    return rendered


Call = tuple[str, Any]  # a template's name and its context


def _text(
    name: str, head: Call | None, calls: list[Call], overrides: Path, memo: OutputMemo | None
) -> str:
    """A work item's file: its STATUS head, then its prompts, each rendered."""

    def render() -> str:
        texts = [_render(call, overrides).rstrip("\n") for call in calls]
        top = _render(head, overrides).rstrip("\n") + "\n\n" if head else ""
        return (top + "\n\n---\n\n".join(texts)).rstrip("\n") + "\n"

    return _memo(memo, name, [head, *calls] if head else calls, render)


def _memo(memo: OutputMemo | None, name: str, calls: list[Call], render: Callable[[], str]) -> str:
    return render() if memo is None else memo.text(name, calls, render)


def _render(call: Call, overrides: Path) -> str:
    return prompts.render(call[0], call[1], overrides=overrides)


def _status(item: WorkItemDecision, workflow_dir: str, max_text: int) -> Call:
    guidance = item.guidance
    context = {
        "work_item": item.id,
        "status": item.status.value,
        "reason": _one_line(item.why or MEANING[item.status.value]),
        "escalation": item.escalation,
        "microtasks": [
            {"id": m.id, "target": m.target, "description": m.description} for m in item.microtasks
        ],
        "microtasks_file": f"{workflow_dir}/{layout.MICROTASKS}/{work_item_file(item.id, '.yaml')}",
        "guidance": (
            {"actor": guidance.actor, "at": guidance.at, "evidence": guidance.evidence}
            if guidance
            else None
        ),
        "workflow_dir": workflow_dir,
    }
    where = f"{workflow_dir}/{layout.JOURNAL}"
    return "status.md.j2", cap_all(context, max_text, where)


def _one_line(text: str, limit: int = 300) -> str:
    """The reason on the STATUS line: one line, short enough to read at a glance."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def write_recovery(folder: Path, plan: Plan, rendered: dict[str, str]) -> list[str]:
    """Write what changed, and delete what the plan withdrew. A recovered item's file is
    rewritten only when it exists: it says there is nothing left to do, and a work item that
    never needed a prompt gets none."""
    recovery = folder / layout.RECOVERY
    recovered = {
        work_item_file(w)
        for w, item in plan.work_items.items()
        if item.status is FinalStatus.RECOVERED
    }
    written: list[str] = []
    for item in plan.withdrawn:  # no longer true (docs/rules.md §8): deleted, not left stale
        path = recovery / work_item_file(item)
        if atomic.remove_file(path):
            written.append(documents.display_path(path))
    for name, text in rendered.items():
        path = recovery / name
        if name in recovered and not path.exists():
            continue
        safe_paths.ensure_dir(recovery)
        if atomic.replace_file(path, text.encode("utf-8")):
            written.append(documents.display_path(path))
    return written
