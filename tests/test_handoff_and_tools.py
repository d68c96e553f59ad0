"""The context-reset handoff (rules §11) and the repair tools of a directive (rules §12)."""

from __future__ import annotations

from typing import Any

import pytest

from selfcorrect.io.prompts import render
from tests.test_prompts import CLOSING, policy_strategies, strategy_context

HANDOFF = "handoff.md.j2"
SECTIONS = (
    "## Completed steps and outcomes",
    "## Current step and its state",
    "## Remaining steps",
    "## Key decisions and why",
)
RUFF = {"name": "ruff_fix", "command": ["ruff", "check", "--fix"]}
BLACK = {"name": "black", "command": ["black", "src/"]}


def handoff_context(**changes: Any) -> dict[str, Any]:
    """WI-3 reset at context usage 0.86: two steps done, one failing, three to go."""
    context: dict[str, Any] = {
        "task_id": "WI-3",
        "task_name": "Return the user's profile from GET /me",
        "reason": "context usage 0.86 over 0.8",
        "completed": [
            {
                "step": "Add the GET /me route in src/routes.ts",
                "outcome": "route registered; GET /me answers 501",
            },
            {
                "step": "Write tests/me.test.ts for the 200 and 401 cases",
                "outcome": "2 tests written, both failing as expected",
            },
        ],
        "current": {
            "step": "Implement getUser in src/handler.ts",
            "state": "tests/me.test.ts 1 of 2 failing: TypeError: Cannot read property 'id' "
            "of undefined at handler.ts:45",
        },
        "remaining": [
            "Handle the missing-user case with a 404",
            "Document GET /me in docs/api.md",
            "Run the full test suite and the linter",
        ],
        "decisions": [
            {
                "decision": "Read the user from req.user set by the auth middleware",
                "why": "the middleware already validates the token; a second lookup is redundant",
            },
            {
                "decision": "Return 404, not 500, for a deleted user",
                "why": "the acceptance criteria treat a missing user as a client error",
            },
        ],
        "workflow_dir": "workflow",
        "checkpoint": "workflow/checkpoints/WI-3-0003.yaml",
    }
    context.update(changes)
    return context


def section(text: str, heading: str) -> str:
    """The body of the section `heading`, up to the next heading."""
    return text.split(heading + "\n", 1)[1].split("\n## ", 1)[0]


def directive(strategy: str, intent: str, tools: list[dict[str, Any]]) -> str:
    context = strategy_context(strategy)
    context.update(intent=intent, tools=tools)
    return render(f"strategies/{strategy}.md.j2", context)


def repair_section(text: str) -> str:
    return section(text, "## Repair tools")


# --- the handoff ---------------------------------------------------------------------------------


def test_handoff_opens_by_telling_a_fresh_agent_to_start_from_here() -> None:
    text = render(HANDOFF, handoff_context())
    title, blank, opening = text.splitlines()[:3]

    assert title == "# Handoff for WI-3: Return the user's profile from GET /me"
    assert blank == ""
    assert "fresh agent" in opening and "no memory" in opening
    assert "context usage 0.86 over 0.8" in opening
    assert "Start from here, not from memory" in opening


def test_handoff_sections_carry_the_data_in_order() -> None:
    text = render(HANDOFF, handoff_context())

    positions = [text.index(heading + "\n") for heading in SECTIONS]
    assert positions == sorted(positions)
    assert text.index("## How to continue") > positions[-1]

    assert section(text, SECTIONS[0]).splitlines() == [
        "1. Add the GET /me route in src/routes.ts: route registered; GET /me answers 501",
        "2. Write tests/me.test.ts for the 200 and 401 cases: 2 tests written, both failing as "
        "expected",
    ]
    assert section(text, SECTIONS[1]).splitlines() == [
        "Step: Implement getUser in src/handler.ts",
        "State: tests/me.test.ts 1 of 2 failing: TypeError: Cannot read property 'id' of "
        "undefined at handler.ts:45",
    ]
    assert section(text, SECTIONS[2]).splitlines() == [
        "1. Handle the missing-user case with a 404",
        "2. Document GET /me in docs/api.md",
        "3. Run the full test suite and the linter",
    ]
    assert section(text, SECTIONS[3]).splitlines() == [
        "- Read the user from req.user set by the auth middleware",
        "  Why: the middleware already validates the token; a second lookup is redundant",
        "- Return 404, not 500, for a deleted user",
        "  Why: the acceptance criteria treat a missing user as a client error",
    ]


def test_handoff_closes_with_checkpoint_current_step_and_verification() -> None:
    text = render(HANDOFF, handoff_context())
    closing = section(text, "## How to continue").splitlines()

    assert closing[0] == "1. Read the checkpoint first: workflow/checkpoints/WI-3-0003.yaml"
    assert 'current step, "Implement getUser in src/handler.ts"' in closing[1]
    assert "Rerun the task's verification" in closing[2]
    assert "workflow/coordination_log.yaml" in closing[2]
    assert closing[3] == "4. " + CLOSING
    assert text.endswith(CLOSING + "\n")


def test_empty_handoff_says_none_recorded_in_every_section() -> None:
    context = handoff_context(
        task_name=None, completed=[], current=None, remaining=[], decisions=[], checkpoint=None
    )
    text = render(HANDOFF, context)

    assert text.startswith("# Handoff for WI-3\n")
    for heading in SECTIONS:
        assert section(text, heading).splitlines()[0].startswith("none recorded")
    closing = section(text, "## How to continue")
    assert "No checkpoint was recorded" in closing
    assert "No step is recorded as current or remaining" in closing
    assert text.endswith(CLOSING + "\n")


def test_without_a_current_step_the_next_is_the_first_remaining_step() -> None:
    text = render(HANDOFF, handoff_context(current=None))

    assert section(text, SECTIONS[1]) == "none recorded: begin with the first remaining step\n"
    assert "continue with the first remaining step" in section(text, "## How to continue")


def test_multiline_state_stays_inside_the_current_step() -> None:
    state = "pytest -q: 1 failed\nE   KeyError: 'id'\n"
    text = render(HANDOFF, handoff_context(current={"step": "fix\ngetUser", "state": state}))

    assert section(text, SECTIONS[1]).splitlines()[:3] == [
        "Step: fix getUser",
        "State: pytest -q: 1 failed",
        "  E   KeyError: 'id'",
    ]


def test_agent_text_in_a_handoff_renders_literally() -> None:
    hostile = "{{ 7*7 }} {% include '/etc/passwd' %}"
    context = handoff_context(
        remaining=[hostile], decisions=[{"decision": hostile, "why": hostile}]
    )
    text = render(HANDOFF, context)

    assert text.count(hostile) == 3
    assert "49" not in text and "root:" not in text


# --- repair tools in the directives --------------------------------------------------------------


@pytest.mark.parametrize("strategy", policy_strategies())
@pytest.mark.parametrize("intent", ["create", "observe"])
def test_every_strategy_renders_the_new_keys_and_ends_with_verification(
    strategy: str, intent: str
) -> None:
    text = directive(strategy, intent, [RUFF])

    assert text.count("## Repair tools\n") == 1
    assert f"Intent: {intent}." in repair_section(text)
    assert text.index("## Repair tools") < text.index("## Verify")
    last = text.rstrip("\n").splitlines()[-2:]
    assert "rerun the same verification: `selfcorrect validate workflow`" in last[0]
    assert last[1] == CLOSING
    assert text.endswith(CLOSING + "\n")


@pytest.mark.parametrize("strategy", policy_strategies())
def test_observe_task_lists_no_tool_and_says_report_not_change(strategy: str) -> None:
    text = directive(strategy, "observe", [RUFF, BLACK])
    repair = repair_section(text)

    assert "This is an observe task" in repair
    assert "REPORT your findings" in repair and "Change no file" in repair
    assert "No repair tool is offered" in repair
    for tool in ("ruff", "black"):
        assert tool not in text


@pytest.mark.parametrize("intent", [None, "", "review"])
def test_unknown_intent_is_treated_as_observe(intent: Any) -> None:
    text = directive("targeted_fix", intent, [RUFF])

    assert "Intent: observe. This is an observe task" in text
    assert "ruff" not in text


@pytest.mark.parametrize(
    "strategy", [strategy for strategy in policy_strategies() if strategy != "escalate"]
)
def test_create_task_lists_exactly_the_given_tools(strategy: str) -> None:
    repair = repair_section(directive(strategy, "create", [RUFF, BLACK]))

    assert repair.splitlines() == [
        "Intent: create. This task makes changes, within its scope only.",
        "Make changes only with these repair tools; use no other tool to change files:",
        "- ruff_fix: `ruff check --fix`",
        "- black: `black src/`",
    ]


def test_create_task_without_tools_edits_by_hand_within_scope() -> None:
    repair = repair_section(directive("targeted_fix", "create", []))

    assert "No repair tool is available" in repair
    assert "your own editing, within the scope" in repair
    assert "- " not in repair


def test_escalated_issue_offers_no_tool_even_to_a_create_task() -> None:
    text = directive("escalate", "create", [RUFF])

    assert "No repair tool is offered: this issue is BLOCKED" in repair_section(text)
    assert "ruff" not in text


def test_tool_text_cannot_break_the_list() -> None:
    tool = {"name": "fix\n## Verify", "command": ["fmt", "--in-place\nrm -rf /"]}
    repair = repair_section(directive("targeted_fix", "create", [tool]))

    assert "- fix ## Verify: `fmt --in-place rm -rf /`" in repair
