"""Memos per shape of error text (core/digit_fold.py): same answers as reading every text, and
bounded memory however many distinct texts a log holds."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import generate
from selfcorrect.core import taxonomy as taxonomy_module
from selfcorrect.core.digit_fold import DIGITS, MEMO_SIZE, Folding, Memo, ShapeKey
from selfcorrect.core.normalise import normalise_failure
from selfcorrect.core.policy import Policy
from selfcorrect.core.stuck import StuckDetector
from selfcorrect.core.taxonomy import ErrorClasses, Taxonomy, error_class, normalise_error
from selfcorrect.core.text_window import window
from selfcorrect.io.policy_file import load_policy
from tests.helpers import policy_with


@pytest.mark.parametrize(
    ("source", "blind"),
    [
        (r"\bTypeError\b", True),
        (r"\d+|[0-9a-f]{8,}|\w+\s*[.,]", True),
        (r"\berror\s+TS\d{4,5}\b", True),  # a quantifier's digits are no text
        (r"exit code 1", False),
        (r"(429|502|503)", False),
        (r"[45]\d\d", False),
        (r"[2-9]", False),
        (r"[^3]", False),
        (r"\x31", False),
        (r"(a)\1", False),
        (r"(a)?(?(1)b|c)", False),
        (r"[^0]x", True),  # 0 is never folded
    ],
)
def test_digit_blind(source: str, blind: bool) -> None:
    assert DIGITS.blind(re.compile(source, re.IGNORECASE)) is blind


def test_the_normalisers_own_patterns_are_digit_blind() -> None:
    # normalise_error's answer may be shared by texts of one shape only because of this.
    for pattern in ("_QUOTED", "_WINDOWS_PATH", "_UNIX_PATH", "_IDS"):
        assert DIGITS.blind(getattr(taxonomy_module, pattern)), pattern


def test_fold_keeps_zero_and_non_ascii_digits() -> None:
    assert DIGITS.key("line 1438, 0x9f") == DIGITS.key("line 9871, 0x1f")
    assert DIGITS.key("0x1f") != DIGITS.key("1x1f")
    assert DIGITS.key("line \uff15") != DIGITS.key("line 5")  # a fullwidth five: no ASCII digit


def test_a_folding_keeps_apart_the_digits_a_pattern_tells_apart() -> None:
    folding = Folding.of([re.compile(r"E2BIG|[45]\d\d|\d+")])
    assert folding is not None
    assert folding.key("E2BIG 503 17") == folding.key("E2BIG 416 98")
    assert folding.key("503") != folding.key("303")
    assert folding.key("E2BIG") != folding.key("E3BIG")
    assert Folding.of([re.compile(r"(\d)\1")]) is None  # a backreference compares digits


def test_a_shape_key_folds_digits_where_no_guard_word_stands() -> None:
    shapes = ShapeKey([taxonomy_module._CLASS])
    # No "HTTP", "status" or E2BIG-like name: line numbers, ports and counts share one key.
    assert shapes.key("TypeError at line 12:4") == shapes.key("TypeError at line 47:9")
    assert shapes.key("exit code 5 after 413 tries") == shapes.key("exit code 3 after 512 tries")
    assert shapes.key("TypeError at line 105") == shapes.key("TypeError at line 155")  # 0 too
    # Where the pattern tells digits apart, its own folding keeps them apart.
    assert shapes.key("HTTP 503 at line 12") != shapes.key("HTTP 303 at line 12")
    assert shapes.key("Status: 404") != shapes.key("Status: 204")
    assert shapes.key("E2BIG: too long") != shapes.key("E3BIG: too long")
    # Non-ASCII text is never coarse: IGNORECASE is more than lower case there.
    assert shapes.key("\u212a 12") != shapes.key("\u212a 47")
    assert not ShapeKey([re.compile(r"(\d)\1")]).readable
    # The normaliser tells 0 apart only in "0x": a hex id is one placeholder, "1x1f" is not.
    normaliser = ShapeKey(taxonomy_module.NORMALISER_PATTERNS)
    assert normaliser.key("at 0x1f") != normaliser.key("at 1x1f")
    assert normaliser.key("line 105") == normaliser.key("line 977")
    assert normalise_error("line 105") == normalise_error("line 977")


GUARDED = [
    *taxonomy_module.NORMALISER_PATTERNS,
    taxonomy_module._CLASS,
    taxonomy_module._STATUS_RX,
    re.compile(r"\bexit code 2\b", re.IGNORECASE),
    re.compile(r"(?:429|502|503)(?!\d)"),
    re.compile(r"\bHTTP\s+5\d\d\b|line [2-4]", re.IGNORECASE),
    re.compile(r"(?:x[2-9]y)+|E2BIG", re.IGNORECASE),
]


_PIECES = [
    "0x1f",
    "0X",
    "HTTP",
    "http/1.1",
    "Status:",
    "status code",
    "E2BIG",
    "E7BIG",
    "EL3HLT",
    "exit code",
]
_PIECES += ["line", "x", "y", "a", "f", " ", " ", "-", ":", "'", "0", "2", "3", "5", "503", "40"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join), st.data())
def test_texts_of_one_shape_key_match_alike(text: str, data: Any) -> None:
    twin = "".join(
        data.draw(st.sampled_from("0123456789")) if char.isdigit() else char for char in text
    )
    for pattern in GUARDED:
        shapes = ShapeKey([pattern])
        if shapes.key(text) != shapes.key(twin):
            continue
        found, again = pattern.search(text), pattern.search(twin)
        assert (found is None) == (again is None), (pattern.pattern, text, twin)
        if found is not None and again is not None:
            assert found.span() == again.span(), (pattern.pattern, text, twin)
            assert found.regs == again.regs, (pattern.pattern, text, twin)


ERROR_CLASS_TEXTS = [
    "HTTP 503 Service Unavailable",
    "HTTP 303 See Other",
    "status: 404 at line 17",
    "status: 999",
    "E2BIG: argument list too long",
    "E7BIG: nothing known",
    "EL3HLT and EL2HLT",
    "TypeError at 12:4",
    "error TS2339: x",
    "error[E0308]: mismatched types",
    "panic: 7",
    "nothing here 42",
    "",
]


def test_error_classes_equal_error_class() -> None:
    classes = ErrorClasses()
    for _ in range(2):  # the second pass reads from the memo
        for text in ERROR_CLASS_TEXTS + TEXTS + [e.error for e in generate.entries(2_000, seed=3)]:
            assert classes(text) == error_class(text), text


def test_a_memo_stays_bounded_and_keeps_what_is_still_used() -> None:
    memo: Memo[int, int] = Memo(size=100)
    for key in range(10_000):
        assert memo.get(key, lambda key=key: key * 2) == key * 2
        assert memo.get(-1, lambda: -2) == -2  # one result asked for all along
        assert len(memo) <= 100
    assert memo.get(9_999, lambda: -1) == 19_998  # remembered, not computed again
    # Filling up never forgets a result still in use: it was computed once only.
    computed: list[int] = []
    memo = Memo(size=100)
    for key in range(1_000):
        memo.get(key, lambda key=key: key)
        memo.get(-1, lambda: computed.append(-1) or -1)
    assert computed == [-1]


def _distinct(count: int) -> list[str]:
    """Texts that differ in letters, so no two share a shape."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [
        f"TypeError: {letters[i % 26]}{letters[i // 26 % 26]}{letters[i // 676 % 26]}"
        f"{letters[i // 17_576]} 42"
        for i in range(count)
    ]


def test_caches_stay_bounded_on_all_distinct_texts() -> None:
    policy = load_policy(None)
    taxonomy, detector = Taxonomy(policy), StuckDetector(policy)
    for index, text in enumerate(_distinct(MEMO_SIZE + 4_000)):
        taxonomy.classify_text(text)
        detector.feed(normalise_failure({"tool": "Bash", "error": text, "task_id": "WI-1"}, index))
    assert 0 < len(taxonomy._shaped[0]._memo) <= MEMO_SIZE
    assert 0 < len(detector._shapes) <= MEMO_SIZE
    assert 0 < len(detector._classes._memo) <= MEMO_SIZE
    assert len(taxonomy._cache) <= 4096 and len(detector._texts) <= 4096


def _first_match_uncached(policy: Policy, text: str) -> str | None:
    """The first pattern in policy order that matches, one search each: its regex, or None."""
    if not text or text.isspace():
        return None
    for entry in policy.get("patterns"):
        if re.search(str(entry["regex"]), window(text), re.IGNORECASE):
            return str(entry["regex"])
    return None


def _read_uncached(policy: Policy, error: str) -> tuple[str, str | None, bool]:
    normalised = normalise_error(error) if error else ""
    unable = bool(normalised) and any(
        re.search(str(rx), window(error), re.IGNORECASE)
        for rx in policy.get("stuck.unable_to_complete.patterns")
    )
    return normalised, error_class(error) if normalised else None, unable


# Patterns that tell digits apart, placed before and after digit-blind ones that match the same
# texts: a shape shared by "exit code 2" and "exit code 7" must not share the answer.
MIXED = policy_with(
    patterns=[
        {"regex": r"\bexit code 2\b", "type": "timeout"},
        {"regex": r"\bexit code \d\b", "type": "syntax_error"},
        {"regex": r"\bHTTP 5\d\d\b", "type": "external_dependency"},
        {"regex": r"\bHTTP\b", "type": "runtime_error"},
        {"regex": r"(\w)\1{3}", "type": "resource_exhaustion"},
        {"regex": r"\bline \d+\b", "type": "timeout"},
    ],
    stuck={"unable_to_complete": {"patterns": [r"gave up after 3 tries", r"\bcannot finish\b"]}},
)
TEXTS = [
    "exit code 2",
    "exit code 7",
    "exit code 22",
    "HTTP 503 at line 4",
    "HTTP 403 at line 5",
    "HTTP 103",
    "aaaa at line 12",
    "1111 at line 12",
    "1234 at line 12",
    "gave up after 3 tries",
    "gave up after 4 tries",
    "I cannot finish: 0x1f",
    "I cannot finish: 1x1f",
    "I cannot finish: 0X2f",
    "",
    "   ",
    # longer than a regex ever sees (text_window): the keys are cut to the window too
    "TypeError at line 12 " + "x" * 9_000 + " HTTP 503 " + "y" * 5_000 + " EL3HLT",
    "TypeError at line 12 " + "z" * 9_000 + " HTTP 404 " + "y" * 5_000 + " EL3HLT",
    "I cannot finish " + "x" * 9_000 + " E2BIG",
]


@pytest.mark.parametrize("policy", [load_policy(None), MIXED], ids=["defaults", "mixed"])
def test_answers_equal_the_uncached_reading_on_a_mixed_log(policy: Policy) -> None:
    texts = TEXTS + [entry.error for entry in generate.entries(3_000, seed=7)]
    taxonomy, detector = Taxonomy(policy), StuckDetector(policy)
    for _ in range(2):  # the second pass reads from the memos
        for text in texts:
            assert taxonomy.classify_text(text).rule == _first_match_uncached(policy, text)
            assert detector._read(text) == _read_uncached(policy, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aE x0123456789'/:.-\\", max_size=40), st.data())
def test_normalising_ignores_which_nonzero_digits_a_text_holds(text: str, data: Any) -> None:
    twin = "".join(
        data.draw(st.sampled_from("123456789")) if char in "123456789" else char for char in text
    )
    assert normalise_error(text) == normalise_error(twin)
    detector = StuckDetector(MIXED)
    assert detector._read(text) == _read_uncached(MIXED, text)
    assert detector._read(twin) == _read_uncached(MIXED, twin)
    taxonomy = Taxonomy(MIXED)
    for each in (text, twin):
        assert taxonomy.classify_text(each).rule == _first_match_uncached(MIXED, each)
