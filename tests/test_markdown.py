"""Markdown headings and the restructure that the built-in fixer performs (rules §9.1, §14)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from selfcorrect.core.markdown import headings, restructure, template_for

TEMPLATE = "# {title}\n\n## Context\n\n## Decision\n\n## Consequences\n"


def test_headings_skip_fenced_code() -> None:
    text = "# A\n```\n# not a heading\n```\n## B ##\n#tag\n"
    assert headings(text) == [(1, "A"), (2, "B")]


def test_sections_move_into_template_order_and_missing_ones_are_added() -> None:
    doc = "intro line\n# Title\n## Decision\nD\n## Extra\nE\n## Context\nC"
    # A section the template does not name travels with the one it followed.
    assert restructure(doc, TEMPLATE) == (
        "intro line\n# Title\n## Context\nC\n## Decision\nD\n## Extra\nE\n## Consequences\n\n"
    )


def test_the_title_is_never_replaced_by_the_templates_placeholder() -> None:
    template = "# ADR {number}: {title}\n\n## Context\n\n## Decision\n"
    doc = "# Use Postgres\n\n## Decision\nWe use it.\n\n## Context\nWe need SQL.\n"
    assert restructure(doc, template) is None  # the title cannot be kept: not applied
    # A document without a title cannot get one made up from the placeholder either.
    assert restructure("## Decision\nd\n## Context\nc\n", TEMPLATE) is None


def test_the_title_stays_first_and_every_line_survives() -> None:
    doc = "# Use Postgres\nStatus: accepted\n\n## Decision\nWe use it.\n## Context\nSQL.\n"
    out = restructure(doc, TEMPLATE)
    assert out is not None and out.startswith("# Use Postgres\nStatus: accepted\n")
    assert "{title}" not in out and out.count("# Use Postgres") == 1
    assert all(line in out.splitlines() for line in doc.splitlines())


def test_a_conforming_document_is_unchanged() -> None:
    doc = "# T\n\n## Context\nc\n\n## Decision\nd\n\n## Consequences\nx\n"
    assert restructure(doc, TEMPLATE) == doc


@given(
    st.lists(
        st.sampled_from(["Context", "Decision", "Consequences", "Notes", "Risks"]),
        unique=True,
        max_size=5,
    ),
    st.lists(
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="#\r\n"), max_size=12),
        min_size=5,
        max_size=5,
    ),
)
def test_no_text_is_ever_lost(names: list[str], bodies: list[str]) -> None:
    doc = "# Title\n" + "".join(
        f"## {name}\n{body}\n" for name, body in zip(names, bodies, strict=False)
    )
    out = restructure(doc, TEMPLATE)
    assert out is not None
    for name, body in zip(names, bodies, strict=False):
        assert f"## {name}\n{body}\n" in out
    assert [h for h in headings(out) if h[1] in ("Context", "Decision", "Consequences")] == [
        (2, "Context"),
        (2, "Decision"),
        (2, "Consequences"),
    ]


def test_the_policy_assigns_templates_by_glob() -> None:
    templates = [{"glob": "docs/adr/*.md", "template": "docs/adr/TEMPLATE.md"}]
    assert template_for("docs/adr/0001-x.md", templates) == "docs/adr/TEMPLATE.md"
    assert template_for("README.md", templates) is None
