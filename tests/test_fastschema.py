"""The compiled yes/no schema check must agree with jsonschema, or the loader would be lax."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfcorrect.errors import InputError
from selfcorrect.io import fastschema, schemas
from selfcorrect.io.documents import read_failure_log
from selfcorrect.io.yaml_nodes import FastLoader, decode, load_text
from tests.conftest import CORPUS, EXAMPLES, REPO, shipped_example

STEMS = list(schemas.STEMS)


def documents() -> list[tuple[str, Path]]:
    """Every example, corpus file and shipped file, with the schema it is meant for.

    Only names are listed here; the files are read by the test, so a missing fixture fails one
    test instead of the whole collection.
    """
    found = [(path.parent.parent.name, path) for path in sorted(EXAMPLES.glob("*/*/*.yaml"))]
    found += [(stem, CORPUS / "workflow" / f"{stem}.yaml") for stem in SESSION_DOCUMENTS]
    # The shipped example as committed (a relative path: resolved by the test, never globbed,
    # so the outputs a run left beside it are not read as examples)
    found += [(stem, Path("workflow") / f"{stem}.yaml") for stem in EXAMPLE_DOCUMENTS]
    found.append(("selfcorrect", REPO / "templates" / "selfcorrect.yaml"))
    return found


SESSION_DOCUMENTS = ("validation_report", "coordination_log")
EXAMPLE_DOCUMENTS = ("coordination_log", "selfcorrect", "tool_failures", "validation_report")


@pytest.mark.parametrize("stem", STEMS)
def test_every_shipped_schema_compiles(stem: str) -> None:
    assert schemas.fast_check(stem) is not None


@pytest.mark.parametrize(("stem", "path"), documents(), ids=str)
def test_agrees_with_jsonschema_on_every_example(stem: str, path: Path) -> None:
    if not path.is_absolute():
        path = shipped_example() / path.name
    try:
        data, _ = load_text(decode(path.read_bytes(), "x"), "x")
    except InputError:
        # A negative example that does not even parse has no data to compare; a positive one,
        # or a real or shipped document, must parse.
        assert path.parent.name == "negative"
        return
    assert schemas.fast_check(stem)(data) == schemas.validator(stem).is_valid(data)


def _mutations() -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-2, 10),
        st.floats(-1, 2),
        st.sampled_from(
            [
                "",
                "x",
                "PASS",
                "pass",
                "critical",
                "BLOCKED",
                "open",
                "resolved",
                "failure",
                "file_edit",
                "done",
                "WI-3",
            ]
        ),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(
                st.sampled_from(
                    [
                        "status",
                        "issues",
                        "severity",
                        "description",
                        "type",
                        "failures",
                        "tool",
                        "error",
                        "timestamp",
                        "escalations",
                        "id",
                        "subject",
                        "reason",
                        "microtasks",
                        "task_id",
                        "kind",
                        "failed_items",
                        "final_status",
                        "attempts",
                        "caps",
                        "global_cycles",
                        "classification",
                        "issues_found",
                        "critical",
                        "pending",
                        "created_at",
                        "met",
                        "criterion",
                        "acceptance_criteria_results",
                        "delegations",
                        "from",
                        "to",
                        "retry",
                    ]
                ),
                inner,
                max_size=4,
            ),
        ),
        max_leaves=12,
    )


@settings(max_examples=400, deadline=None)
@given(stem=st.sampled_from(STEMS), data=_mutations())
def test_agrees_with_jsonschema_on_generated_documents(stem: str, data: Any) -> None:
    assert schemas.fast_check(stem)(data) == schemas.validator(stem).is_valid(data)


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from(documents()),
    key=st.text(max_size=8),
    value=st.one_of(st.none(), st.integers(), st.text(max_size=5), st.booleans()),
)
def test_agrees_after_one_key_is_changed(base: tuple[str, Any], key: str, value: Any) -> None:
    stem, data = base
    if not isinstance(data, dict) or not data:
        return
    target = sorted(data)[hash(key) % len(data)] if key not in data else key
    changed = {**data, target: value}
    assert schemas.fast_check(stem)(changed) == schemas.validator(stem).is_valid(changed)


def test_an_unknown_keyword_refuses_to_compile() -> None:
    with pytest.raises(fastschema.Unsupported):
        fastschema.compile_schema({"type": "object", "dependentSchemas": {}})


def test_the_failure_entry_fragment_reads_the_real_log(tmp_path: Path) -> None:
    warnings: list = []
    entries = list(read_failure_log(CORPUS / "workflow" / "tool_failures.yaml", warnings))
    check = schemas.fast_check("tool_failures", "/$defs/failure")
    assert all(check(e.data) for e in entries) and len(entries) == 34
    assert not check({**entries[0].data, "outcome": "loud"})
    assert FastLoader  # the loader used above is the libyaml one
