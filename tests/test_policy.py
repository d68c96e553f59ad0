"""The shipped policy defaults, its schema, and merging/versioning (rules §3, §6-§8, §10-§14)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from selfcorrect.core.policy import (
    Policy,
    build_policy,
    merge,
    rule_version,
    suggest,
)
from selfcorrect.errors import InputError
from selfcorrect.io.resources import data_file
from tests.conftest import CORPUS

# The shipped files, through the package (the repo's own files in an editable install): a
# module-level read of a path beside the tests would break collection on a partial checkout.
TEMPLATE = data_file("templates", "selfcorrect.yaml")
SCHEMA = json.loads(data_file("schemas", "selfcorrect.schema.json").read_text(encoding="utf-8"))
CORPUS_LOG = CORPUS / "workflow" / "tool_failures.yaml"
TEXT = TEMPLATE.read_text(encoding="utf-8")
DEFAULTS: dict[str, Any] = yaml.load(TEXT, Loader=yaml.CSafeLoader)
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_errors(data: Any) -> list[Any]:
    return list(VALIDATOR.iter_errors(data))


def classify_failure(text: str, policy: Mapping[str, Any] = DEFAULTS) -> tuple[str, float]:
    """rules §6 on the error text alone: the first matching pattern wins, else unknown (0)."""
    for pattern in policy["patterns"]:
        if re.search(pattern["regex"], text, re.IGNORECASE):
            return pattern["type"], pattern["confidence"]
    return "unknown", 0.0


def classify_issue(description: str) -> str:
    """rules §2.2: an issue without a type gets the first type whose pattern matches."""
    for name, entry in DEFAULTS["issue_types"].items():
        for pattern in entry.get("patterns", []):
            if re.search(pattern["regex"], description, re.IGNORECASE):
                return name
    return "unclassified"


# --- the file itself ---------------------------------------------------------------------------


def test_template_opens_with_the_schema_modeline() -> None:
    first = TEXT.splitlines()[0]
    assert first == f"# yaml-language-server: $schema={SCHEMA['$id']}"
    assert SCHEMA["$id"] == "https://selfcorrect.dev/schemas/selfcorrect.schema.json"


def test_template_is_plain_yaml_without_anchors_aliases_or_tags() -> None:
    kinds = {type(token) for token in yaml.scan(TEXT, Loader=yaml.CSafeLoader)}
    assert not kinds & {yaml.AnchorToken, yaml.AliasToken, yaml.TagToken}


def test_every_top_level_key_is_commented() -> None:
    lines = TEXT.splitlines()
    for number, line in enumerate(lines):
        if re.match(r"^[a-z_]+:", line):
            above = next(prior for prior in reversed(lines[:number]) if prior.strip())
            assert above.startswith("#") or "#" in line, f"{line!r} has no comment"


def test_defaults_validate_against_the_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert schema_errors(DEFAULTS) == []


def _properties(schema: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(schema, dict):
        for name, sub in schema.get("properties", {}).items():
            yield f"{where}.{name}", sub
        for key, sub in schema.items():
            yield from _properties(sub, f"{where}/{key}")
    elif isinstance(schema, list):
        for i, sub in enumerate(schema):
            yield from _properties(sub, f"{where}[{i}]")


def test_schema_describes_every_property() -> None:
    missing = [where for where, sub in _properties(SCHEMA) if "description" not in sub]
    assert missing == []


def test_defaults_build_a_policy() -> None:
    policy = build_policy(DEFAULTS, None)
    assert isinstance(policy, Policy)
    assert len(policy.rules()) == len(DEFAULTS["issue_types"]) + len(DEFAULTS["failure_types"])


# --- SPEC values --------------------------------------------------------------------------------

ISSUE_TYPES = [  # rules §3 table: type, category, severity, strategy, retries, classification
    ("missing_coordination_log", "coordination", "CRITICAL", "respawn_controller", 2, None),
    ("incomplete_synthesis", "coordination", "MAJOR", "prompt_controller_complete", 2, None),
    ("vague_answers", "coordination", "MINOR", "request_clarification", 2, None),
    ("unanswered_questions", "coordination", "MAJOR", "redelegate_questions", 2, None),
    ("circular_delegation", "coordination", "CRITICAL", "escalate", 0, "BLOCKED"),
    ("weak_synthesis", "coordination", "MAJOR", "prompt_controller_strengthen", 2, None),
    ("test_coverage_low", "output_quality", "MAJOR", "add_tests", 2, None),
    ("linting_errors", "output_quality", "MAJOR", "autofix", 1, None),
    ("missing_documentation", "output_quality", "MINOR", "generate_docs", 1, None),
    ("format_violations", "output_quality", "MINOR", "restructure_to_template", 1, None),
    ("acceptance_criterion_unmet", "execution", "MAJOR", "targeted_fix", 2, None),
    ("unclassified", "execution", None, "targeted_fix", 1, None),
]


def test_issue_types_are_exactly_the_spec_table() -> None:
    assert list(DEFAULTS["issue_types"]) == [row[0] for row in ISSUE_TYPES]


@pytest.mark.parametrize(
    ("name", "category", "severity", "strategy", "retries", "classification"), ISSUE_TYPES
)
def test_issue_type_defaults(
    name: str,
    category: str,
    severity: str | None,
    strategy: str,
    retries: int,
    classification: str | None,
) -> None:
    entry = DEFAULTS["issue_types"][name]
    assert entry["category"] == category
    assert entry["severity"] == severity
    assert entry["strategy"] == strategy
    assert entry["retries"] == retries
    assert entry.get("classification") == classification
    assert entry["estimated_minutes"] <= DEFAULTS["fixability"]["max_minutes"]
    assert entry["stage"] == "active"


def test_linting_autofix_uses_ruff_eslint_and_prettier() -> None:
    fixers = DEFAULTS["issue_types"]["linting_errors"]["fix"]
    assert [f["command"] for f in fixers] == [
        ["ruff", "check", "--fix", "--no-cache", "{files}"],
        ["eslint", "--fix", "{files}"],
        ["prettier", "--write", "{files}"],
    ]
    assert "*.py" in fixers[0]["applies_to"]
    assert {"*.js", "*.jsx", "*.ts", "*.tsx", "*.mjs", "*.cjs"} <= set(fixers[1]["applies_to"])
    claimed = [set(f["applies_to"]) for f in fixers]
    assert not (claimed[0] & claimed[1]) and not (claimed[1] & claimed[2])
    assert "*.py" not in claimed[2]  # prettier never gets Python when ruff is missing
    others = [e for n, e in DEFAULTS["issue_types"].items() if n != "linting_errors"]
    assert all("fix" not in entry for entry in others)


FAILURE_TYPES = [  # rules §6 table (revision 2): type, retries (None = unlimited), at the limit
    ("syntax_error", None, "ladder"),
    ("runtime_error", 3, "ladder"),  # the ladder runs before a person is paged
    ("resource_exhaustion", 1, "simplify"),
    ("timeout", 1, "decompose"),
    ("external_dependency", 0, "skip"),
    ("unknown", 2, "ladder"),
    ("stale_context", 3, "ladder"),  # the agent host's procedural errors
]


@pytest.mark.parametrize(("name", "retries", "at_limit"), FAILURE_TYPES)
def test_failure_type_defaults(name: str, retries: int | None, at_limit: str) -> None:
    entry = DEFAULTS["failure_types"][name]
    assert entry["retries"] == retries
    assert entry["at_limit"] == at_limit
    assert entry["recovery"]


def test_failure_types_are_exactly_the_spec_table() -> None:
    assert list(DEFAULTS["failure_types"]) == [row[0] for row in FAILURE_TYPES]


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("ETIMEDOUT", "timeout"),
        ("ENOMEM", "resource_exhaustion"),
        ("ENOSPC", "resource_exhaustion"),
        ("ECONNREFUSED", "external_dependency"),
        ("ENOTFOUND", "external_dependency"),
    ],
)
def test_typed_codes(code: str, kind: str) -> None:
    assert DEFAULTS["codes"][code] == kind


SETTINGS = [  # dotted key, SPEC value
    ("validator.command", None),  # the built-in validator (rules §14)
    ("validator.timeout_s", 300),
    ("caps.global_cycles", 3),
    ("caps.per_issue_default", 2),
    ("caps.max_attempts_per_subject", 10),
    ("caps.max_recurrences", 3),
    ("caps.idle_rounds", 3),
    ("fixability.max_minutes", 60),
    ("min_confidence", 0.6),
    ("limits.max_bytes", 50 * 1024 * 1024),
    ("mode", "active"),
    ("stuck.consecutive_failures.threshold", 3),
    ("stuck.repeated_error.threshold", 3),
    ("stuck.repeated_error.window", 10),
    ("stuck.edit_loop.threshold", 3),
    ("stuck.edit_loop.window", 8),
    ("stuck.agent_retry.threshold", 3),
    ("stuck.tool_loop.threshold", 5),
    ("stuck.tool_loop.window", 8),
    ("stuck.review_loop.rounds", 3),
    ("stuck.unable_to_complete.threshold", 3),
    ("stuck.exempt.tools", ()),
    ("stuck.read_only_tools", ()),
    ("stuck.exempt.subjects", ()),
    ("remediation.max_changed_lines", 200),
    ("remediation.step_timeout_s", 600),
    ("remediation.run_deadline_s", 3600),
    ("circuit.window_s", 600),
    ("circuit.verification_failures", 2),
    ("circuit.compensation_failures", 1),
    ("circuit.target_recurrences", 3),
    ("circuit.min_calls", 5),
    ("circuit.max_failure_rate", 0.5),
    ("continuation.max_continuations", 5),
    ("continuation.max_microtasks", 20),
    ("continuation.microtask_tokens", 8000),
    ("context_reset.usage", 0.8),
    ("context_reset.minutes", 30),
    ("agent.command", None),
    ("coordination.min_answer_words", 5),
    ("coordination.required_synthesis", ("approach", "rationale", "implementation_steps")),
    ("checks.commands", ()),
    ("checks.coverage", None),
    ("checks.docs.required", ()),
    ("checks.templates", ()),
]


@pytest.mark.parametrize(("dotted", "value"), SETTINGS)
def test_spec_settings(dotted: str, value: Any) -> None:
    assert build_policy(DEFAULTS, None).get(dotted) == value


def test_edit_loop_counts_every_editing_tool() -> None:
    assert DEFAULTS["stuck"]["edit_loop"]["tools"] == ["Edit", "Write", "MultiEdit", "NotebookEdit"]


def test_ladder_has_the_six_spec_steps_in_order() -> None:
    names = [
        "Re-read everything",
        "Review the execution log",
        "Combine successes",
        "Try the opposite",
        "Radical simplification",
        "Escalate",
    ]
    ladder = DEFAULTS["ladder"]["steps"]
    assert [(s["step"], s["name"]) for s in ladder] == list(enumerate(names, start=1))
    assert all(s["directive"].strip() for s in ladder)
    assert DEFAULTS["ladder"]["failures_per_step"] == 3


def test_the_older_ladder_list_still_reads_and_keeps_the_default_climb() -> None:
    """A policy written before `ladder.failures_per_step` gives the six steps as a list."""
    steps = [dict(s, name=f"{s['name']}!") for s in DEFAULTS["ladder"]["steps"]]
    policy = build_policy(DEFAULTS, {"ladder": steps})
    assert policy.ladder[0].name == "Re-read everything!"
    assert policy.failures_per_step == 3
    tuned = build_policy(DEFAULTS, {"ladder": {"failures_per_step": 5}})
    assert tuned.failures_per_step == 5 and tuned.ladder[5].name == "Escalate"


def test_tools_default_to_none() -> None:
    assert DEFAULTS["tools"] == {}


# --- failure patterns (rules §6) ------------------------------------------------------------------

REAL_FAILURES = [  # texts from the real cAgents log, and their type
    ("connect ETIMEDOUT 10.0.3.17:6379", "timeout"),
    ("Command timed out after 2m 0.0s", "timeout"),
    (
        "<--- Last few GCs ---> FATAL ERROR: Reached heap limit Allocation failed - "
        "JavaScript heap out of memory",
        "resource_exhaustion",
    ),
    ("ENOSPC: no space left on device, write", "resource_exhaustion"),
    (
        "File content (25040 tokens) exceeds maximum allowed tokens (25000). Please use offset and "
        "limit parameters to read specific portions of the file, or use the GrepTool to search for "
        "specific content.",
        "resource_exhaustion",
    ),
    (
        "Command failed with exit code 1 SyntaxError: Unexpected token '<', '<!DOCTYPE '... is not "
        "valid JSON     at JSON.parse (<anonymous>)",
        "syntax_error",
    ),
    (
        "Invalid syntax in YAML: mapping values are not allowed here (line 3, column 12)",
        "syntax_error",
    ),
    (
        "Command failed with exit code 1  FAIL  tests/auth/refresh.test.ts > refresh > "
        "rotates once "
        "TypeError: Cannot read properties of undefined (reading 'refreshToken')     at "
        "AuthService.refresh (src/auth/",
        "runtime_error",
    ),
    (
        "ReferenceError: doRefresh is not defined     at refreshToken (src/auth/refresh.ts:6:13)",
        "runtime_error",
    ),
    ("RangeError: Maximum call stack size exceeded", "runtime_error"),
    (
        "Error: connect ECONNREFUSED 127.0.0.1:5432     at TCPConnectWrapper.afterConnect "
        "[as oncomplete] (node:net:1607:16)",
        "external_dependency",
    ),
    (
        "npm ERR! code ENOTFOUND npm ERR! network request to https://registry.npmjs.org/ioredis "
        "failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org",
        "external_dependency",
    ),
    ("Request failed with status code 503 Service Unavailable", "external_dependency"),
    ("API rate limit exceeded for installation ID 4242. Retry after 60s.", "external_dependency"),
    (
        "fetch failed: network error while contacting https://api.stripe.com/v1/tokens",
        "external_dependency",
    ),
    # The agent host's procedural errors: the agent's picture of the file is out of date.
    (
        "File does not exist. Note: your current working directory is /home/dev/webapp.",
        "stale_context",
    ),
    ("EISDIR: illegal operation on a directory, read", "stale_context"),
    ("File has not been read yet. Read it first before writing to it.", "stale_context"),
    (
        "String to replace not found in file. String:   const token = await getToken(sessionId);",
        "stale_context",
    ),
    ("String to replace not found in file. String: {a: b}", "stale_context"),
    (
        "Found 3 matches of the string to replace, but replace_all is false. To replace all "
        "occurrences, set replace_all to true. To replace only one occurrence, please provide "
        "more context to uniquely identif",
        "stale_context",
    ),
    (
        "File has been modified since read, either by the user or by a linter. Read it again "
        "before attempting to write it.",
        "stale_context",
    ),
    # Nothing in these says what kind of failure it is: observe only.
    (
        "MCP error -32603: Validation Failed: {'resource':'PullRequest','code':'custom','message':"
        "'A pull request already exists for dev:fix-refresh.'}",
        "unknown",
    ),
    ("", "unknown"),
]


def test_real_failure_fixtures_come_from_the_corpus() -> None:
    log = yaml.load(CORPUS_LOG.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    errors = {entry["error"] for entry in log["failures"]}
    assert {text for text, _ in REAL_FAILURES} <= errors


@pytest.mark.parametrize(("text", "kind"), REAL_FAILURES)
def test_patterns_classify_real_failures(text: str, kind: str) -> None:
    found, confidence = classify_failure(text)
    assert found == kind
    if kind != "unknown":
        assert confidence >= DEFAULTS["min_confidence"]


@pytest.mark.parametrize(
    "text",
    [
        "Request failed with status code 503 Service Unavailable",
        "HTTP 502 Bad Gateway",
        "HTTP Error 504: Gateway Time-out",
        "HTTP/1.1 503",
        'upstream answered {"statusCode": 502}',
        "status: 504",
        "ECONNREFUSED",
        "API rate limit exceeded",
        "429 Too Many Requests",
    ],
)
def test_outages_are_external_dependencies(text: str) -> None:
    assert classify_failure(text)[0] == "external_dependency"


@pytest.mark.parametrize(
    "text",
    [
        "File content (25040 tokens) exceeds maximum allowed tokens (25000).",
        "error at line 503",
        "id 50412",
        "Expected 504 rows, found 503",
        "src/app.ts:503:12 - error",
        "MCP error -32603",
        "version 5.0.3",
    ],
)
def test_numbers_are_not_status_codes(text: str) -> None:
    assert classify_failure(text)[0] != "external_dependency"


@given(
    number=st.integers(min_value=0, max_value=10**7),
    shape=st.sampled_from(
        [
            "error at line {}",
            "id {}",
            "{} tokens",
            "took {}ms",
            "exit code {}",
            "at file.py:{}",
            "PR #{} failed",
            "offset {} of {}",
        ]
    ),
)
def test_no_bare_number_is_an_outage(number: int, shape: str) -> None:
    assert classify_failure(shape.format(number, number))[0] != "external_dependency"


# --- issue description patterns (rules §2.2, §3) --------------------------------------------------


@pytest.mark.parametrize(
    ("description", "kind"),
    [
        ("coverage 61% below 80%", "test_coverage_low"),
        ("Line coverage is 42.5%, under the 80% threshold", "test_coverage_low"),
        ("eslint reported 3 problems in src/auth/refresh.ts", "linting_errors"),
        ("ruff: F401 unused import", "linting_errors"),
        ("Lint errors in src/", "linting_errors"),
        ("missing docs for the refresh module", "missing_documentation"),
        ("public function rotate() is undocumented", "missing_documentation"),
        ("circular delegation: tech-lead -> backend-developer -> tech-lead", "circular_delegation"),
        ("Delegation cycle detected between agents", "circular_delegation"),
        ("coordination_log.yaml is missing", "missing_coordination_log"),
        ("3 unanswered questions", "unanswered_questions"),
        ("Answer from qa-lead is vague", "vague_answers"),
        ("Synthesis incomplete: rationale missing", "incomplete_synthesis"),
        ("weak synthesis: step 2 covers no task", "weak_synthesis"),
        ("ADR 0003 does not follow the template headings", "format_violations"),
        ("Acceptance criterion not met: tokens rotate once", "acceptance_criterion_unmet"),
        ("Something odd happened", "unclassified"),
    ],
)
def test_description_patterns_type_unlabelled_issues(description: str, kind: str) -> None:
    assert classify_issue(description) == kind


def test_intent_patterns() -> None:
    intent = DEFAULTS["intent"]

    def matches(kind: str, text: str) -> bool:
        return any(re.search(rx, text, re.IGNORECASE) for rx in intent[kind])

    for text in [
        "Inspect the auth flow",
        "Review PR 12",
        "Audit dependencies",
        "Analyse logs",
        "Explore the token store",
    ]:
        assert matches("observe", text) and not matches("create", text), text
    for text in [
        "Implement token refresh",
        "Build the CLI",
        "Create a migration",
        "Add tests",
        "Fix the null check",
    ]:
        assert matches("create", text) and not matches("observe", text), text
    assert not matches("create", "Email address validation")  # "add" is a word, not a prefix


def test_unable_to_complete_patterns() -> None:
    patterns = DEFAULTS["stuck"]["unable_to_complete"]["patterns"]
    for text in [
        "I am unable to complete this task",
        "Cannot complete: tests keep failing",
        "I can't finish the migration",
        "Giving up on WI-3",
    ]:
        assert any(re.search(rx, text, re.IGNORECASE) for rx in patterns), text
    assert not any(re.search(rx, "Completed WI-3", re.IGNORECASE) for rx in patterns)


def test_hedges_are_plain_phrases() -> None:
    hedges = DEFAULTS["coordination"]["hedges"]
    assert {"maybe", "not sure", "probably", "I think", "TBD"} <= set(hedges)


# --- merging --------------------------------------------------------------------------------------


def test_merge_is_key_by_key_inside_an_issue_type() -> None:
    merged = merge(DEFAULTS, {"issue_types": {"linting_errors": {"retries": 3}}})
    linting = merged["issue_types"]["linting_errors"]
    assert linting["retries"] == 3
    assert linting["strategy"] == "autofix"
    assert linting["fix"] == DEFAULTS["issue_types"]["linting_errors"]["fix"]
    assert merged["issue_types"]["vague_answers"] == DEFAULTS["issue_types"]["vague_answers"]


def test_merge_replaces_lists_and_scalars_and_adds_new_names() -> None:
    user = {
        "caps": {"global_cycles": 5},
        "patterns": [{"regex": "boom", "type": "runtime_error", "confidence": 0.9}],
        "issue_types": {"typo_in_docs": {"category": "execution", "strategy": "generate_docs"}},
    }
    merged = merge(DEFAULTS, user)
    assert merged["caps"] == {
        "global_cycles": 5,
        "per_issue_default": 2,
        "max_attempts_per_subject": 10,
        "max_recurrences": 3,
        "idle_rounds": 3,
    }
    assert merged["patterns"] == user["patterns"]
    assert list(merged["issue_types"])[-1] == "typo_in_docs"


def test_merge_never_mutates_its_inputs() -> None:
    defaults, user = copy.deepcopy(DEFAULTS), {"caps": {"global_cycles": 9}, "tools": {}}
    before = copy.deepcopy(user)
    merged = merge(defaults, user)
    merged["caps"]["per_issue_default"] = 7
    merged["ladder"]["steps"].append({"step": 7})
    assert defaults == DEFAULTS and user == before
    assert merge(DEFAULTS, None) == DEFAULTS


def test_policy_is_deeply_read_only() -> None:
    policy = build_policy(DEFAULTS, {"issue_types": {"linting_errors": {"retries": 3}}})
    with pytest.raises(TypeError):
        policy.data["mode"] = "shadow"  # type: ignore[index]
    assert isinstance(policy.get("ladder.steps"), tuple)
    rule = policy.issue_type("linting_errors")
    assert rule is not None
    assert rule.definition["retries"] == 3 and rule.definition["strategy"] == "autofix"
    with pytest.raises(TypeError):
        rule.definition["retries"] = 9  # type: ignore[index]


def test_policy_get() -> None:
    policy = build_policy(DEFAULTS, {"caps": {"global_cycles": 4}})
    assert policy.get("caps.global_cycles") == 4
    assert policy.get("ladder.steps.4.name") == "Radical simplification"
    assert policy.get("caps.nope", None) is None
    with pytest.raises(KeyError):
        policy.get("caps.nope")


def test_rules_carry_kind_name_version_and_stage() -> None:
    policy = build_policy(DEFAULTS, {"failure_types": {"timeout": {"stage": "shadow"}}})
    timeout = policy.failure_type("timeout")
    assert timeout is not None
    assert (timeout.kind, timeout.name, timeout.stage) == ("failure_type", "timeout", "shadow")
    assert re.fullmatch(r"[0-9a-f]{12}", timeout.version)
    assert policy.issue_type("timeout") is None and policy.failure_type("nope") is None
    kinds = [rule.kind for rule in policy.rules()]
    assert kinds == ["issue_type"] * 12 + ["failure_type"] * 7


# --- rule versions --------------------------------------------------------------------------------


def test_rule_version_changes_when_the_rule_changes() -> None:
    rule = DEFAULTS["issue_types"]["linting_errors"]
    version = rule_version(rule)
    assert re.fullmatch(r"[0-9a-f]{12}", version)
    assert rule_version(copy.deepcopy(rule)) == version
    assert rule_version(dict(reversed(list(rule.items())))) == version  # key order is not a change
    assert rule_version({**rule, "retries": 2}) != version
    edited = copy.deepcopy(rule)
    edited["fix"][0]["command"].append("--unsafe-fixes")
    assert rule_version(edited) != version


def test_rollout_does_not_change_the_version() -> None:
    rule = DEFAULTS["failure_types"]["timeout"]
    assert rule_version({**rule, "stage": "canary", "scope": ["src/**"]}) == rule_version(rule)


def test_hand_set_version_wins() -> None:
    rule = DEFAULTS["issue_types"]["linting_errors"]
    assert rule_version({**rule, "version": "2024-06-01"}) == "2024-06-01"
    assert rule_version({**rule, "version": 3}) == "3"
    policy = build_policy(DEFAULTS, {"issue_types": {"linting_errors": {"version": "v7"}}})
    rule_obj = policy.issue_type("linting_errors")
    assert rule_obj is not None and rule_obj.version == "v7"


def test_editing_a_rule_in_the_policy_changes_its_version() -> None:
    before = build_policy(DEFAULTS, None).issue_type("vague_answers")
    after = build_policy(DEFAULTS, {"issue_types": {"vague_answers": {"retries": 1}}})
    edited = after.issue_type("vague_answers")
    assert before is not None and edited is not None and before.version != edited.version
    untouched = after.issue_type("linting_errors")
    assert untouched is not None
    assert untouched.version == rule_version(DEFAULTS["issue_types"]["linting_errors"])


# --- unknown keys and schema checks -------------------------------------------------------------


def test_unknown_top_level_key_is_an_error_with_a_suggestion() -> None:
    errors = schema_errors({"cap": {"global_cycles": 2}})
    assert [e.validator for e in errors] == ["additionalProperties"]
    assert "'cap'" in errors[0].message
    assert suggest("cap", SCHEMA["properties"]) == "caps"


def test_unknown_key_inside_an_issue_type_is_an_error_with_a_suggestion() -> None:
    errors = schema_errors({"issue_types": {"linting_errors": {"retires": 3}}})
    assert [e.validator for e in errors] == ["additionalProperties"]
    assert list(errors[0].absolute_path) == ["issue_types", "linting_errors"]
    assert suggest("retires", SCHEMA["$defs"]["issue_type"]["properties"]) == "retries"


@pytest.mark.parametrize(
    "user",
    [
        {"stuck": {"edit_loop": {"treshold": 3}}},
        {"circuit": {"window": 600}},
        {"failure_types": {"timeout": {"retry": 1}}},
        {"issue_types": {"linting_errors": {"fix": [{"command": ["ruff"], "timeout": 5}]}}},
        {"tools": {"ruff": {"command": ["ruff"], "mutating": True, "safe": True}}},
        {"ladder": [{"step": 1, "name": "x", "directive": "y", "note": "z"}] * 6},
        {"checks": {"coverage": {"report": "c.json", "min_percent": 80, "fail_under": 1}}},
    ],
)
def test_unknown_keys_are_errors_at_every_level(user: dict[str, Any]) -> None:
    assert any(e.validator == "additionalProperties" for e in schema_errors(user))


def test_suggest_returns_none_when_nothing_is_close() -> None:
    assert suggest("zzzzzz", SCHEMA["properties"]) is None


@pytest.mark.parametrize(
    "user",
    [
        {},
        {"caps": {"global_cycles": 5}},
        {"issue_types": {"brand_new": {"retries": 1}}},  # no strategy: policy.py's to report
        {"issue_types": {"circular_delegation": {"classification": None, "retries": 1}}},
        {"validator": {"command": ["my-validator", "--strict"]}},
        {"tools": {"ruff": {"command": ["ruff", "check", "--fix"], "mutating": True}}},
        {"checks": {"coverage": {"report": "coverage.json", "min_percent": 80}}},
        {"issue_types": {"linting_errors": {"fix": {"command": ["ruff", "--fix", "{files}"]}}}},
    ],
)
def test_partial_policies_are_valid(user: dict[str, Any]) -> None:
    assert schema_errors(user) == []


@pytest.mark.parametrize(
    "user",
    [
        {"mode": "passive"},
        {"failure_types": {"timeout": {"stage": "beta"}}},
        {"failure_types": {"timeout": {"at_limit": "explode"}}},
        {"issue_types": {"linting_errors": {"severity": "HIGH"}}},
        {"caps": {"global_cycles": "three"}},
        {"min_confidence": 1.5},
        {"validator": {"command": "ruff check"}},  # a string is not an argv list
        {"ladder": [{"step": 1, "name": "x", "directive": "y"}]},  # six steps, always
        {"issue_types": {"linting_errors": {"strategy": "../../etc/passwd"}}},
    ],
)
def test_bad_values_fail_the_schema(user: dict[str, Any]) -> None:
    assert schema_errors(user) != []


# --- build_policy semantic checks -----------------------------------------------------------------


def _messages(user: dict[str, Any]) -> list[str]:
    with pytest.raises(InputError) as caught:
        build_policy(DEFAULTS, user)
    diagnostics = caught.value.diagnostics
    assert all((d.path, d.line, d.col) == ("selfcorrect.yaml", 1, 1) for d in diagnostics)
    return [d.message for d in diagnostics]


def test_build_policy_rejects_a_bad_regex() -> None:
    bad = [{"regex": "eslint(", "confidence": 1}]
    user = {"issue_types": {"linting_errors": {"patterns": bad}}}
    (message,) = _messages(user)
    assert message.startswith("issue_types.linting_errors.patterns[0].regex: invalid regex")
    assert "missing )" in message


@pytest.mark.parametrize(
    ("user", "where"),
    [
        ({"patterns": [{"regex": "[a-", "type": "timeout", "confidence": 1}]}, "patterns[0].regex"),
        ({"intent": {"observe": ["*inspect"]}}, "intent.observe[0]"),
        (
            {"stuck": {"unable_to_complete": {"patterns": ["(?P<x"]}}},
            "stuck.unable_to_complete.patterns[0]",
        ),
    ],
)
def test_every_regex_list_is_checked(user: dict[str, Any], where: str) -> None:
    (message,) = _messages(user)
    assert message.startswith(f"{where}: invalid regex")


def test_build_policy_rejects_an_issue_type_without_strategy() -> None:
    (message,) = _messages({"issue_types": {"brand_new": {"retries": 1}}})
    assert "issue_types.brand_new" in message and "strategy" in message


def test_build_policy_accepts_a_new_issue_type_with_strategy() -> None:
    policy = build_policy(DEFAULTS, {"issue_types": {"new": {"strategy": "targeted_fix"}}})
    rule = policy.issue_type("new")
    assert rule is not None and rule.stage == "active"


def test_build_policy_rejects_bad_mode_and_stage() -> None:
    messages = _messages({"mode": "passive", "issue_types": {"vague_answers": {"stage": "beta"}}})
    assert any(m.startswith("mode:") for m in messages)
    assert any(m.startswith("issue_types.vague_answers.stage:") for m in messages)


def test_build_policy_rejects_references_to_unknown_failure_types() -> None:
    (message,) = _messages({"codes": {"EPIPE": "timout"}})
    assert message == "codes.EPIPE: unknown failure type 'timout' (did you mean 'timeout'?)"


def test_build_policy_rejects_a_new_failure_type_without_limits() -> None:
    messages = _messages({"failure_types": {"auth_error": {"recovery": "log in again"}}})
    assert len(messages) == 2 and all(m.startswith("failure_types.auth_error") for m in messages)


def test_the_fast_read_of_the_defaults_equals_the_strict_load() -> None:
    """`check` reads the shipped defaults without the guard and the schema (rules §18); this
    holds that shortcut to the strict decision-document load."""
    from selfcorrect.io import documents
    from selfcorrect.io.policy_file import default_policy_data

    strict = documents.load_decision(TEMPLATE, "selfcorrect")
    assert default_policy_data() == strict.data
    assert schema_errors(strict.data) == []


def test_check_reads_max_bytes_of_an_unedited_policy_without_loading_it(tmp_path: Path) -> None:
    """`check` takes limits.max_bytes of a file that says exactly the defaults from
    documents.DEFAULT_MAX_BYTES, without building the policy (rules §18): the two must agree,
    and an edited file is loaded, and checked, in full."""
    from selfcorrect.errors import InputError
    from selfcorrect.io import documents
    from selfcorrect.io.policy_file import load_policy, max_bytes_of

    assert load_policy(None).limits.max_bytes == documents.DEFAULT_MAX_BYTES
    path = tmp_path / "selfcorrect.yaml"
    for shipped in (TEMPLATE, TEMPLATE.parent / "init" / "selfcorrect.yaml"):
        path.write_bytes(shipped.read_bytes())
        assert max_bytes_of(path) == load_policy(path).limits.max_bytes
    path.write_text(TEXT.replace("  max_bytes: 52428800", "  max_bytes: 1000", 1))
    assert max_bytes_of(path) == 1000
    path.write_text(TEXT.replace("  global_cycles: 3", "  global_cycle: 3", 1))
    with pytest.raises(InputError, match="global_cycle"):
        max_bytes_of(path)


def test_an_unedited_policy_file_is_the_defaults_and_an_edit_is_read(tmp_path: Path) -> None:
    """`init` copies the defaults byte for byte; such a file is not parsed again (rules §18),
    and one changed byte makes it the user's policy again, checked like any other."""
    from selfcorrect.errors import InputError
    from selfcorrect.io.policy_file import load_policy

    path = tmp_path / "selfcorrect.yaml"
    path.write_bytes(TEMPLATE.read_bytes())
    assert load_policy(path).get("caps.global_cycles") == DEFAULTS["caps"]["global_cycles"]
    path.write_text(TEXT.replace("  global_cycles: 3", "  global_cycles: 5", 1))
    assert load_policy(path).get("caps.global_cycles") == 5
    path.write_text(TEXT.replace("  global_cycles: 3", "  global_cycle: 3", 1))
    with pytest.raises(InputError, match="global_cycle"):
        load_policy(path)
