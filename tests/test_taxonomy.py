"""The tool-failure taxonomy (rules §6), error folding and error classes (rules §7)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfcorrect.core.model import Failure
from selfcorrect.core.normalise import normalise_failure
from selfcorrect.core.taxonomy import (
    Taxonomy,
    Typed,
    TypeSource,
    error_class,
    normalise_error,
)
from selfcorrect.errors import Diagnostic
from selfcorrect.io.documents import read_failure_log
from selfcorrect.io.policy_file import load_policy
from tests.conftest import CORPUS
from tests.helpers import policy_with

CORPUS_LOG = CORPUS / "workflow" / "tool_failures.yaml"


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return Taxonomy(load_policy(None))


def failure(error: str, **fields: Any) -> Failure:
    return normalise_failure({"tool": "Bash", "error": error, "timestamp": "t", **fields}, 0)


# --------------------------------------------------------------------------- the real corpus

# Every error of the corpus log, by a distinctive fragment, with the type the defaults give it.
CORPUS_TYPES: list[tuple[str, str]] = [
    ("File does not exist. Note: your current working directory", "stale_context"),
    ("pnpm: command not found", "runtime_error"),  # a missing program (failure-texts/)
    ("SyntaxError: Unexpected token '<', '<!DOCTYPE '... is not valid JSON", "syntax_error"),
    ("File content (25040 tokens) exceeds maximum allowed tokens", "resource_exhaustion"),
    ("TypeError: Cannot read properties of undefined (reading 'refreshToken')", "runtime_error"),
    ("File has not been read yet", "stale_context"),
    ("String to replace not found in file. String:   const token", "stale_context"),
    ("Found 3 matches of the string to replace", "stale_context"),
    ("File has been modified since read", "stale_context"),
    ("String to replace not found in file. String: {a: b}", "stale_context"),
    ("- key: value - other: [1, 2]", "unknown"),
    ("&anchor *alias !!python/object/apply:os.system", "unknown"),
    ("EISDIR: illegal operation on a directory", "stale_context"),
    ("Error: 'quoted' and 'single'", "unknown"),
    ("error TS2339: Property 'refreshToken' does not exist", "syntax_error"),
    ("ファイルが見つかりません", "unknown"),
    ("Module not found: Error: Can't resolve './tokenStore'", "unknown"),
    ("EACCES: permission denied, open '/etc/hosts'", "unknown"),
    ("JavaScript heap out of memory", "resource_exhaustion"),
    ("ENOSPC: no space left on device", "resource_exhaustion"),
    ("Command timed out after 2m 0.0s", "timeout"),
    ("connect ETIMEDOUT 10.0.3.17:6379", "timeout"),
    ("connect ECONNREFUSED 127.0.0.1:5432", "external_dependency"),
    ("getaddrinfo ENOTFOUND registry.npmjs.org", "external_dependency"),
    ("Request failed with status code 503 Service Unavailable", "external_dependency"),
    ("API rate limit exceeded for installation ID 4242", "external_dependency"),
    ("Invalid syntax in YAML: mapping values are not allowed here", "syntax_error"),
    ("ReferenceError: doRefresh is not defined", "runtime_error"),
    ("RangeError: Maximum call stack size exceeded", "runtime_error"),
    ("", "unknown"),  # the empty error
    ("Agent type 'cagents:redis-expert' not found", "stale_context"),  # the host's refusal
    ("MCP error -32603: Validation Failed", "unknown"),
    ("fetch failed: network error while contacting https://api.stripe.com", "external_dependency"),
    ("File path contains a double quote", "unknown"),
]


def corpus_failures() -> list[Failure]:
    warnings: list[Diagnostic] = []
    found = [
        normalise_failure(raw.data, raw.index) for raw in read_failure_log(CORPUS_LOG, warnings)
    ]
    assert warnings == []
    return found


def expected_type(error: str) -> str:
    matches = [kind for fragment, kind in CORPUS_TYPES if fragment and fragment in error]
    if not error:
        matches = [kind for fragment, kind in CORPUS_TYPES if not fragment]
    assert len(matches) == 1, f"the table must name {error!r} exactly once"
    return matches[0]


def test_every_corpus_error_gets_its_expected_type(taxonomy: Taxonomy) -> None:
    failures = corpus_failures()
    assert len(failures) == len(CORPUS_TYPES)  # one row per entry, no entry forgotten
    wrong = {
        f.error[:60]: (got.failure_type, expected_type(f.error))
        for f in failures
        if (got := taxonomy.classify(f)).failure_type != expected_type(f.error)
    }
    assert wrong == {}


def test_corpus_confidence_and_source_follow_the_decision(taxonomy: Taxonomy) -> None:
    for item in corpus_failures():
        typed = taxonomy.classify(item)
        if typed.failure_type == "unknown":
            assert (typed.confidence, typed.source, typed.rule) == (0.0, TypeSource.NONE, None)
        else:  # the corpus has no explicit types or codes: every decision is a pattern's
            assert typed.source is TypeSource.PATTERN
            assert typed.rule is not None and re.search(typed.rule, item.error, re.IGNORECASE)
            assert 0.6 <= typed.confidence < 1.0


def test_seven_of_the_corpus_unknowns_are_the_hosts_procedural_errors(taxonomy: Taxonomy) -> None:
    # 18 of the 34 failures had no type; seven of them say the agent's picture of a file is
    # out of date, and a person was paged for four of them. An eighth, "Agent type … not
    # found", is the host refusing a subagent the agent believed it had; a missing program
    # is a runtime error (both since the real failure-text corpus, tests/replay/failure-texts).
    kinds = [taxonomy.classify(f).failure_type for f in corpus_failures()]
    assert (len(kinds), kinds.count("stale_context"), kinds.count("unknown")) == (34, 8, 9)


@pytest.mark.parametrize(
    "text",
    [
        "String to replace not found in file. String: throw new TypeError('id')",
        "old_string is not unique in the file. Provide more context.",
        "Found 12 matches of the string to replace, but replace_all is false.",
        "File has been modified since it was read. Read it again.",
        "EISDIR: illegal operation on a directory, read",
    ],
)
def test_the_hosts_procedural_errors_are_stale_context_whatever_they_quote(
    taxonomy: Taxonomy, text: str
) -> None:
    assert taxonomy.classify(failure(text, tool="Edit")).failure_type == "stale_context"


def test_the_token_limit_is_never_an_outage(taxonomy: Taxonomy) -> None:
    # "25040 tokens" contains 504; the dialect's hook calls it unrecoverable (rules §2.1).
    [item] = [f for f in corpus_failures() if "25040 tokens" in f.error]
    assert item.recoverable is False
    typed = taxonomy.classify(item)
    assert typed.failure_type == "resource_exhaustion"
    assert typed.confidence == 0.9


# --------------------------------------------------------------------------- decision order


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # explicit type beats a code and any pattern
        (
            {"failure_type": "runtime_error", "code": "ETIMEDOUT", "error": "HTTP 503"},
            Typed("runtime_error", 1.0, TypeSource.EXPLICIT, None),
        ),
        # a type the policy does not know is still the agent's word
        (
            {"failure_type": "Flaky_Test", "error": "TypeError: x"},
            Typed("flaky_test", 1.0, TypeSource.EXPLICIT, None),
        ),
        # a typed code beats the patterns, which would say external_dependency
        (
            {"code": "ETIMEDOUT", "error": "Request failed with status code 503"},
            Typed("timeout", 1.0, TypeSource.CODE, "ETIMEDOUT"),
        ),
        # codes match case-insensitively and report the policy's spelling
        (
            {"code": " etimedout ", "error": ""},
            Typed("timeout", 1.0, TypeSource.CODE, "ETIMEDOUT"),
        ),
        (
            {"code": "EAI_AGAIN", "error": ""},
            Typed("external_dependency", 1.0, TypeSource.CODE, "EAI_AGAIN"),
        ),
        # a code the policy does not know falls through to the patterns, and is searched too
        (
            {"code": "ERR_SOCKET_TIMEDOUT", "error": "socket hang up"},
            Typed(
                "timeout", 0.95, TypeSource.PATTERN, r"\bE\w*TIMEDOUT\b|\bdeadline[ _]exceeded\b"
            ),
        ),
        ({"code": "EWHATEVER", "error": ""}, Typed("unknown", 0.0, TypeSource.NONE, None)),
        # nothing at all
        ({"error": ""}, Typed("unknown", 0.0, TypeSource.NONE, None)),
        ({"error": "   "}, Typed("unknown", 0.0, TypeSource.NONE, None)),
    ],
)
def test_decision_order(taxonomy: Taxonomy, fields: dict[str, Any], expected: Typed) -> None:
    error = fields.pop("error")
    assert taxonomy.classify(failure(error, **fields)) == expected


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        # HTTP outages only as status codes, never as any number
        ("Request failed with status code 503", "external_dependency"),
        ("HTTP/1.1 502 Bad Gateway", "external_dependency"),
        ("upstream responded with 504", "external_dependency"),
        ('{"statusCode": 429}', "external_dependency"),
        ("SyntaxError: Unexpected token } at line 503", "syntax_error"),
        ("KeyError: 'user 50412'", "runtime_error"),
        ("record id 50412 not found", "unknown"),
        ("Expected 503 items, got 502", "unknown"),
        ("version 5.0.3 is deprecated", "unknown"),
        # context and memory
        ("prompt is too long: 215000 tokens > 200000 maximum", "resource_exhaustion"),
        ("MemoryError", "resource_exhaustion"),
        ("ENOMEM: not enough memory, read", "resource_exhaustion"),
        # timeouts
        ("rpc error: code = DeadlineExceeded desc = deadline exceeded", "timeout"),
        ("Error: Timeout of 2000ms exceeded", "timeout"),
        # a traceback ending in a SyntaxError is a syntax error (syntax before runtime)
        (
            'Traceback (most recent call last): File "a.py", line 1 SyntaxError: invalid syntax',
            "syntax_error",
        ),
        (
            "Traceback (most recent call last): AttributeError: 'NoneType' has no attribute 'x'",
            "runtime_error",
        ),
        ("json.decoder.JSONDecodeError: Expecting value: line 1 column 1", "syntax_error"),
        ("panic: runtime error: index out of range [3] with length 3", "runtime_error"),
    ],
)
def test_patterns_on_error_text(taxonomy: Taxonomy, error: str, expected: str) -> None:
    assert taxonomy.classify(failure(error)).failure_type == expected


def test_the_first_matching_pattern_in_policy_order_wins() -> None:
    patterns = [
        {"regex": r"\bgateway\b", "type": "external_dependency", "confidence": 0.7},
        {"regex": r"\btime-?out\b", "type": "timeout", "confidence": 0.8},
    ]
    taxonomy = Taxonomy(policy_with(patterns=patterns))
    # "timeout" comes first in the text, but the gateway pattern comes first in the policy
    typed = taxonomy.classify(failure("timeout while talking to the gateway"))
    assert typed == Typed("external_dependency", 0.7, TypeSource.PATTERN, r"\bgateway\b")
    reordered = Taxonomy(policy_with(patterns=patterns[::-1]))
    assert (
        reordered.classify(failure("timeout while talking to the gateway")).failure_type
        == "timeout"
    )


@pytest.mark.parametrize(
    "patterns",
    [
        # a back-reference and a global inline flag: these cannot be joined into one regex
        [{"regex": r"\b(\w+) \1\b", "type": "unknown"}, {"regex": "boom", "type": "timeout"}],
        [{"regex": "(?i)boom", "type": "timeout"}, {"regex": "bang", "type": "unknown"}],
    ],
)
def test_patterns_that_cannot_be_joined_still_classify(patterns: list[dict[str, Any]]) -> None:
    taxonomy = Taxonomy(policy_with(patterns=patterns))
    assert taxonomy.classify(failure("it went BOOM")).failure_type == "timeout"
    assert taxonomy.classify(failure("nothing here")).failure_type == "unknown"
    # A long log's texts are searched per shape once the first few were searched one at a
    # time: the same answers either way.
    for number in range(100):
        assert taxonomy.classify(failure(f"line {number}: it went BOOM")).failure_type == "timeout"
        assert taxonomy.classify(failure(f"nothing {'x' * number}")).failure_type == "unknown"


@pytest.mark.parametrize("error", ["", "  \t"])
def test_an_empty_error_is_unknown_even_for_a_catch_all_pattern(error: str) -> None:
    taxonomy = Taxonomy(policy_with(patterns=[{"regex": ".*", "type": "runtime_error"}]))
    assert taxonomy.classify(failure("anything")).failure_type == "runtime_error"
    assert taxonomy.classify(failure(error)) == Typed("unknown", 0.0, TypeSource.NONE, None)


def test_classify_compiles_nothing_once_warm(
    taxonomy: Taxonomy, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [error for error, _ in CORPUS_TYPES]
    for text in texts:
        taxonomy.classify(failure(text))

    def no_compile(*args: object, **kwargs: object) -> None:
        raise AssertionError("classify compiled a regex")

    monkeypatch.setattr(re, "compile", no_compile)
    for text in texts:  # new texts: the result cache does not hide the work
        taxonomy.classify(failure(f"{text} (attempt 2)"))


FRAGMENTS = [
    "TypeError",
    "status code 503",
    "25040 tokens",
    "exceeds maximum allowed tokens",
    "timed out",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "rate limit",
    "SyntaxError",
    "error TS2339",
    "Traceback (most recent call last)",
    "out of memory",
    "at line 42",
    "gateway timeout",
    "is not a function",
    " ",
    "x",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=6))
def test_classify_agrees_with_a_plain_loop_over_the_patterns(
    taxonomy: Taxonomy, parts: list[str]
) -> None:
    # The reference: try every policy pattern in order (rules §6), nothing clever.
    text = " ".join(parts)
    expected = "unknown"
    for entry in load_policy(None).get("patterns"):
        if text.strip() and re.search(entry["regex"], text, re.IGNORECASE):
            expected = entry["type"]
            break
    assert taxonomy.classify(failure(text)).failure_type == expected


# --------------------------------------------------------------------------- normalise_error


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("TypeError at handler.ts:45", "TypeError at handler.ts:46"),
        (  # two ENOENT errors on different paths, quoted
            "ENOENT: no such file or directory, open '/home/dev/webapp/src/a.ts'",
            "ENOENT: no such file or directory, open '/srv/app/config/settings.py'",
        ),
        (  # unquoted unix and windows paths
            "ENOENT: no such file or directory, stat /home/dev/webapp/src/a.ts",
            "ENOENT: no such file or directory, stat C:\\Users\\dev\\project\\src\\index.ts",
        ),
        (
            "ReferenceError: x is not defined at refresh (src/auth/refresh.ts:6:13)",
            "ReferenceError: x is not defined at refresh (lib/auth/other.ts:81:2)",
        ),
        ("segfault at 0x7ffe3a2c1b40", "segfault at 0x0"),
        (
            "agent 3f9c2a71-8d4e-4b6a-9e21-7c5d0f1a2b34 failed on commit 9f2c1ab77e0d",
            "agent b81e0c55-27d3-4f0a-8c6e-9d1f2a3b4c5d failed on commit a4f1c2d9e8b7",
        ),
        ('KeyError: "userId"', "KeyError: `token`"),
        ("Cannot find module “./a”", "Cannot find module “./b”"),
        ("Module not found: Can't resolve './tokenStore'", "Module not found: Can't resolve './x'"),
        ("  TypeError:\n\tCannot   read ", "typeerror: cannot read"),
        ("File content (25040 tokens) exceeds", "File content (99999 tokens) exceeds"),
    ],
)
def test_volatile_parts_fold_equal(first: str, second: str) -> None:
    assert normalise_error(first) == normalise_error(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("TypeError at handler.ts:45", "ReferenceError at handler.ts:45"),
        ("String to replace not found in file.", "File has not been read yet."),
        ("EACCES: permission denied, open '/etc/hosts'", "ENOENT: no such file, open '/etc/hosts'"),
        ("Cannot find module './a'", "Cannot read properties of undefined (reading 'a')"),
    ],
)
def test_different_errors_stay_different(first: str, second: str) -> None:
    assert normalise_error(first) != normalise_error(second)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ENOENT: no such file, open '/a/b.ts'", "enoent: no such file, open <str>"),
        ("at f (src/auth/refresh.ts:6:13)", "at f (<path>:#:#)"),
        ("D:\\a\\app\\util.c(12,3): error C2065", "<path>(#,#): error c#"),
        ("connect ETIMEDOUT 10.0.3.17:6379", "connect etimedout #.#.#.#:#"),
        ("", ""),
        (" \n\t ", ""),
    ],
)
def test_normalised_text(text: str, expected: str) -> None:
    assert normalise_error(text) == expected


# --------------------------------------------------------------------------- error_class


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TypeError: Cannot read properties of undefined", "TypeError"),
        ("Command failed with exit code 1 SyntaxError: Unexpected token", "SyntaxError"),
        ("ENOENT: no such file or directory, open '/a'", "ENOENT"),
        ("npm ERR! code ENOTFOUND npm ERR! network request failed", "ENOTFOUND"),
        ("Error: connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"),
        ("getaddrinfo EAI_AGAIN registry.npmjs.org", "EAI_AGAIN"),
        ("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'x'", "ERR_MODULE_NOT_FOUND"),
        ("src/a.ts(3,5): error TS2339: Property 'x' does not exist", "TS2339"),
        ("error[E0308]: mismatched types", "E0308"),
        ("util.c(12,3): error C2065: 'x': undeclared identifier", "C2065"),
        ("json.decoder.JSONDecodeError: Expecting value", "JSONDecodeError"),
        ("java.lang.NullPointerException at Foo.bar", "NullPointerException"),
        ("Request failed with status code 503", "HTTP 503"),
        ("HTTP/1.1 502 Bad Gateway", "HTTP 502"),
        ("File content (25040 tokens) exceeds maximum allowed tokens", None),
        ("see line 503 of the report", None),  # a bare number is no status
        ("MySyntaxErrorHandler failed", None),  # a name inside a longer word is not that name
        ("FAIL EXPECTED 3 ERRORS", None),
        ("Error: something went wrong", None),
        ("", None),
    ],
)
def test_error_class(text: str, expected: str | None) -> None:
    assert error_class(text) == expected
