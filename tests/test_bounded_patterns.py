"""Bounded work on hostile text: linear shipped patterns, and a window on every match.

Two halves, neither timed. Every regex selfcorrect ships (the default policy's and its own
over agent text) passes a structural check that rules out the shapes that backtrack
quadratically: two unbounded runs that can trade characters (`\\s*:?\\s*`), a nested unbounded
run, and a leading unbounded run that can start anywhere inside itself (`\\b[\\w.]+` over
"a.a.a."). And every pattern, the policy's included, sees only the first and last 4,096
characters of a text: a marker in the middle of a megabyte is never matched, markers at either
end always are.
"""

from __future__ import annotations

import re
import re._constants as c
import re._parser as p
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from selfcorrect.checks import coordination as coordination_checks
from selfcorrect.checks import evidence
from selfcorrect.core import markdown
from selfcorrect.core import taxonomy as taxonomy_module
from selfcorrect.core.classify import IssueClassifier
from selfcorrect.core.intent import infer_intent
from selfcorrect.core.model import Intent, Issue, Severity, Task
from selfcorrect.core.policy import Policy
from selfcorrect.core.taxonomy import Taxonomy, error_class, normalise_error
from selfcorrect.core.text_window import HEAD, TAIL, window
from selfcorrect.io.policy_file import default_policy_data
from tests.helpers import policy_with

REPO = Path(__file__).resolve().parents[1]
MB = 1 << 20

# --------------------------------------------------------------------------- structural check

SAMPLE = [chr(i) for i in range(0, 256)] + ["\u00e9", "\u2028", "\u4e00"]
_CATEGORIES = {
    c.CATEGORY_DIGIT: str.isdigit,
    c.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdigit(),
    c.CATEGORY_SPACE: str.isspace,
    c.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    c.CATEGORY_WORD: lambda ch: ch.isalnum() or ch == "_",
    c.CATEGORY_NOT_WORD: lambda ch: not (ch.isalnum() or ch == "_"),
}
WORD = frozenset(ch for ch in SAMPLE if ch.isalnum() or ch == "_")
UNBOUNDED = (c.MAX_REPEAT, c.MIN_REPEAT)  # POSSESSIVE_REPEAT never gives characters back
ZERO_WIDTH = (c.AT, c.ASSERT, c.ASSERT_NOT)


def _in(items: list[tuple[Any, Any]], ch: str) -> bool:
    hit, negate = False, False
    for op, av in items:
        if op is c.NEGATE:
            negate = True
        elif op is c.LITERAL:
            hit |= ch.lower() == chr(av).lower()
        elif op is c.RANGE:
            cases = {x for x in (ch, ch.lower(), ch.upper()) if len(x) == 1}
            hit |= any(av[0] <= ord(x) <= av[1] for x in cases)
        elif op is c.CATEGORY:
            hit |= _CATEGORIES[av](ch)
    return hit != negate


def first_chars(seq: Any) -> frozenset[str]:
    """Characters a (sub)pattern can start with (case-insensitively)."""
    found: set[str] = set()
    for op, av in seq:
        if op is c.LITERAL:
            found |= {ch for ch in SAMPLE if ch.lower() == chr(av).lower()}
        elif op is c.NOT_LITERAL:
            found |= {ch for ch in SAMPLE if ch.lower() != chr(av).lower()}
        elif op is c.ANY:
            found |= set(SAMPLE) - {"\n"}
        elif op is c.IN:
            found |= {ch for ch in SAMPLE if _in(av, ch)}
        elif op in (c.SUBPATTERN, c.ATOMIC_GROUP):
            found |= first_chars(av[-1])
        elif op is c.BRANCH:
            for branch in av[1]:
                found |= first_chars(branch)
        elif op in (*UNBOUNDED, c.POSSESSIVE_REPEAT):
            found |= first_chars(av[2])
        if not nullable(op, av):
            break
    return frozenset(found)


def nullable(op: Any, av: Any) -> bool:
    if op in ZERO_WIDTH:
        return True
    if op in (*UNBOUNDED, c.POSSESSIVE_REPEAT):
        return av[0] == 0 or all(nullable(o, a) for o, a in av[2])
    if op in (c.SUBPATTERN, c.ATOMIC_GROUP):
        return all(nullable(o, a) for o, a in av[-1])
    if op is c.BRANCH:
        return any(all(nullable(o, a) for o, a in branch) for branch in av[1])
    return False


def unbounded(op: Any, av: Any) -> bool:
    return op in UNBOUNDED and av[1] == c.MAXREPEAT


def problems(seq: Any, where: str = "") -> Iterator[str]:
    items = list(seq)
    for i, (op, av) in enumerate(items):
        # A: an unbounded run that can end this item (itself, or the last of a group), then a
        # later unbounded run with only optional items between, sharing characters.
        run = trailing(op, av)
        for op2, av2 in items[i + 1 :] if run else ():
            if unbounded(op2, av2) and run & first_chars(av2[2]):
                yield f"{where}adjacent runs can trade characters"
            if not nullable(op2, av2):
                break
        if unbounded(op, av):
            # B: an unbounded run inside another.
            inner = [x for x in _walk(av[2]) if unbounded(*x)]
            if inner and not _unambiguous(av[2], inner):
                yield f"{where}nested unbounded runs"
        if op in (c.SUBPATTERN, c.ATOMIC_GROUP):
            yield from problems(av[-1], where)
        elif op is c.BRANCH:
            for branch in av[1]:
                yield from problems(branch, where)
                yield from leading(branch, where)
        elif op in (*UNBOUNDED, c.POSSESSIVE_REPEAT):
            yield from problems(av[2], where)


def trailing(op: Any, av: Any) -> frozenset[str]:
    """Characters of the unbounded runs that can end this item."""
    if unbounded(op, av):
        return first_chars(av[2])
    if op in (c.SUBPATTERN, c.ATOMIC_GROUP):
        return _trailing_seq(av[-1])
    if op is c.MAX_REPEAT or op is c.MIN_REPEAT:
        return _trailing_seq(av[2])
    if op is c.BRANCH:
        return frozenset().union(*(_trailing_seq(branch) for branch in av[1]))
    return frozenset()


def _trailing_seq(seq: Any) -> frozenset[str]:
    found: set[str] = set()
    for op, av in reversed(list(seq)):
        found |= trailing(op, av)
        if not nullable(op, av):
            break
    return frozenset(found)


def _walk(seq: Any) -> Iterator[tuple[Any, Any]]:
    for op, av in seq:
        yield op, av
        if op in (c.SUBPATTERN, c.ATOMIC_GROUP):
            yield from _walk(av[-1])
        elif op is c.BRANCH:
            for branch in av[1]:
                yield from _walk(branch)
        elif op in (*UNBOUNDED, c.POSSESSIVE_REPEAT):
            yield from _walk(av[2])


def _unambiguous(body: Any, inner: list[tuple[Any, Any]]) -> bool:
    """Each iteration starts with a required character no inner run can take: one way only."""
    first = next(iter(body), None)
    if first is None or nullable(*first):
        return False
    starts = first_chars([first])
    return all(not (starts & first_chars(av[2])) for _, av in inner)


def leading(seq: Any, where: str = "") -> Iterator[str]:
    """C: a search tries every position; a run that can start inside itself costs its square.
    Fine when nothing after it can fail, a lookbehind excludes its characters, or it follows a
    word boundary and takes only word characters."""
    guards: list[tuple[Any, Any]] = []
    items = list(seq)
    for i, (op, av) in enumerate(items):
        if op in ZERO_WIDTH:
            guards.append((op, av))
            continue
        rest_can_fail = not all(nullable(o, a) for o, a in items[i + 1 :])
        if unbounded(op, av) and rest_can_fail:
            run = first_chars(av[2])
            behind = any(o is c.ASSERT_NOT and a[0] == -1 for o, a in guards)
            boundary = any(o is c.AT and a is c.AT_BOUNDARY for o, a in guards) and run <= WORD
            if not (behind or boundary):
                yield f"{where}a leading unbounded run can start anywhere inside itself"
        return


def linear_problems(source: str) -> list[str]:
    parsed = p.parse(source, re.IGNORECASE)
    return [*problems(parsed.data), *leading(parsed.data)]


def shipped_policy_regexes() -> list[str]:
    data = default_policy_data()  # the shipped file, through the package: read at collection
    found = [entry["regex"] for entry in data.get("patterns") or []]
    for rule in (data.get("issue_types") or {}).values():
        found += [entry["regex"] for entry in rule.get("patterns") or []]
    found += list(data["stuck"]["unable_to_complete"]["patterns"])
    found += list(data["intent"]["observe"]) + list(data["intent"]["create"])
    return found


OWN = {
    f"{module.__name__}.{name}": rx.pattern
    for module in (taxonomy_module, coordination_checks, markdown)
    for name, rx in vars(module).items()
    if isinstance(rx, re.Pattern) and name != "_GROUP_REFERENCE"  # over policy regexes only
}


@pytest.mark.parametrize("source", shipped_policy_regexes() + sorted(OWN.values()))
def test_every_shipped_pattern_is_linear_by_its_shape(source: str) -> None:
    assert linear_problems(source) == []


@pytest.mark.parametrize(
    "source",
    [
        r"\bcoverage\b\s*:?\s*\d+(\.\d+)?\s*%",  # the shipped pattern before: 40 s on 40 KB
        r"\b(HTTP(\s*error)?|status)[\"']?\s*[:=]?\s*[\"']?(429|502)\b",
        r"\b[\w.@+~-]+(?:/[\w.@+~-]+)+",  # "a.a.a.…!/": every dot a new start
        r"(a+)+$",
        r"\s*x",
        r"[\w./-]*\w/[\w./-]*|[\w-]+\.[a-z][a-z0-9]{0,4}\b",  # synthesis paths, "aaaa…"
        r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$",  # headings, "# a      …b"
    ],
)
def test_the_check_catches_the_quadratic_shapes(source: str) -> None:
    assert linear_problems(source)


# --------------------------------------------------------------------------- the window


def marked(size: int = MB) -> str:
    """HEADMARK, then MIDDLEMARK in the middle of a megabyte, then TAILMARK at the very end."""
    filler = "lorem ipsum dolor sit amet "
    half = filler * (size // (2 * len(filler)))
    return f"HEADMARK {half}MIDDLEMARK {half}TAILMARK"


def test_the_window_is_the_first_and_last_4_kib() -> None:
    text = marked()
    seen = window(text)
    assert (
        len(seen) <= HEAD + TAIL + 2
        and seen.startswith(text[:HEAD])
        and seen.endswith(text[-TAIL:])
    )
    assert window("short") == "short"


def typed(marker: str) -> Policy:
    return policy_with(patterns=[{"regex": marker, "type": "timeout", "confidence": 0.9}])


@pytest.mark.parametrize(
    "marker,seen", [("HEADMARK", True), ("TAILMARK", True), ("MIDDLEMARK", False)]
)
def test_failure_patterns_see_only_the_window(marker: str, seen: bool) -> None:
    got = Taxonomy(typed(marker)).classify_text(marked())
    assert (got.failure_type == "timeout") is seen


@pytest.mark.parametrize(
    "marker,seen", [("HEADMARK", True), ("TAILMARK", True), ("MIDDLEMARK", False)]
)
def test_issue_patterns_see_only_the_window(marker: str, seen: bool) -> None:
    rules = {"linting_errors": {"patterns": [{"regex": marker, "confidence": 0.9}]}}
    classifier = IssueClassifier(policy_with(issue_types=rules), lambda _: True)
    got, _ = classifier.type_of(Issue(Severity.MAJOR, marked()))
    assert (got == "linting_errors") is seen


@pytest.mark.parametrize(
    "marker,seen", [("HEADMARK", True), ("TAILMARK", True), ("MIDDLEMARK", False)]
)
def test_intent_patterns_see_only_the_window(marker: str, seen: bool) -> None:
    rules = policy_with(intent={"observe": [], "create": [marker]})
    got = infer_intent(Task("WI-1", name=marked()), rules)
    assert (got is Intent.CREATE) is seen


def test_error_classes_and_normalisation_see_only_the_window() -> None:
    text = marked().replace("MIDDLEMARK", "TypeError ENOENT /etc/x")
    assert error_class(text) is None
    assert "typeerror" not in normalise_error(text)
    assert len(normalise_error(text)) <= HEAD + TAIL + 2


WORST = [
    "coverage" + " " * MB,
    "HTTP" + " " * MB,
    "status" + "\t" * MB,
    "a." * (MB // 2) + "!/",
    "error" + " " * MB + "[",
    ("coverage: " + "1" * 64 + " ") * (MB // 75),
    "'" + "x" * MB,
]


@pytest.mark.parametrize("text", WORST, ids=range(len(WORST)))
def test_a_megabyte_of_each_worst_case_is_classified(text: str) -> None:
    """Completes; how long it takes is bounded by the window, and never asserted."""
    defaults = policy_with()
    Taxonomy(defaults).classify_text(text)
    error_class(text)
    normalise_error(text)
    IssueClassifier(defaults, lambda _: True).type_of(Issue(Severity.MAJOR, text))


# --------------------------------------------------------------------------- evidence citations

FULLMATCHED = {"_WITH_LINE": evidence._WITH_LINE.pattern}  # fullmatch: only position 0 is tried
SEARCHED = {"_DASH": evidence._DASH.pattern}


@pytest.mark.parametrize("source", sorted(FULLMATCHED.values()))
def test_fullmatched_evidence_patterns_have_no_trading_or_nested_runs(source: str) -> None:
    assert list(problems(p.parse(source, re.DOTALL).data)) == []


@pytest.mark.parametrize("source", sorted(SEARCHED.values()))
def test_searched_evidence_patterns_are_linear_by_their_shape(source: str) -> None:
    assert linear_problems(source) == []


# The citation grammar as it was, quadratic on long runs of spaces: the new parse must agree.
_OLD_WITH_LINE = re.compile(
    r"[`'\"]?(?P<path>[^:`'\"]+?):(?P<line>\d+)(?:-(?P<end>\d+))?[`'\"]?"
    r"(?:\s*[-\u2013\u2014:]\s*(?P<snip>.*))?",
    re.DOTALL,
)
_OLD_NO_LINE = re.compile(r"(?P<path>.+?)(?:\s+[-\u2013\u2014]\s+(?P<snip>.*))?", re.DOTALL)


def _old_citation(evidence_text: str) -> evidence.Citation:
    text = evidence_text.strip()
    if match := _OLD_WITH_LINE.fullmatch(text):
        end = match.group("end")
        return evidence.Citation(
            evidence._unquote(match.group("path")),
            int(match.group("line")),
            int(end) if end else None,
            evidence._unquote(match.group("snip") or ""),
        )
    match = _OLD_NO_LINE.fullmatch(text)
    path, snip = (match.group("path"), match.group("snip")) if match else (text, None)
    return evidence.Citation(evidence._unquote(path), snippet=evidence._unquote(snip or ""))


@given(st.text(alphabet=st.sampled_from(list(" \t\n-\u2013:`'\"a1./")), max_size=30))
def test_citations_parse_as_before(text: str) -> None:
    assert evidence.parse_citation(text) == _old_citation(text)


def test_a_megabyte_of_hostile_evidence_is_parsed() -> None:
    for text in ("a" + " " * MB + "b", "a:1" + " " * MB + "x", "a:" + "1" * MB):
        evidence.parse_citation(text)


def test_a_template_heading_with_placeholders_matches_a_megabyte_heading() -> None:
    """`{a} - {b} - {c}` was three `.+` in one regex: cubic on a long heading that fails."""
    long = "x" * MB
    assert not markdown.matches((2, "{a} - {b} - {c}"), (2, long))
    assert markdown.matches((2, "{a} - {b} - {c}"), (2, f"{long} - y - z"))
    assert markdown.matches((2, "Errors ({code})"), (2, "errors (E1)"))
    assert not markdown.matches((2, "Errors ({code})"), (2, "errors ()"))
