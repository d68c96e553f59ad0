"""CI renderers for `selfcorrect run`: GitHub workflow commands, SARIF 2.1.0 and JUnit XML.

Each is a pure function of the stable `--format json` object (run_report.run_json), so CI output
follows one documented contract. All of its text may come from agents (SPEC §17): it is escaped
for the target syntax and never trusted as a path.
"""

from __future__ import annotations

import json
import re
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import quote

from selfcorrect import __version__, layout
from selfcorrect.cli.report import printable

# The package page; change it here if the project gets a home page of its own.
INFORMATION_URI = "https://pypi.org/project/selfcorrect/"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "selfcorrect/v1"
GITHUB = {"error": "error", "warning": "warning", "note": "notice"}
# Characters XML 1.0 cannot carry at all, not even as character references.
_BREAKS = re.compile("([\r\n])")
_XML_FORBIDDEN = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any, default: str = "") -> str:
    return default if value is None or value == "" else str(value)


def relative_path(text: Any) -> str | None:
    """A normalised repo-relative POSIX path, or None for anything that could leave the repo."""
    if not isinstance(text, str) or any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        return None
    path = text.replace("\\", "/")
    if path.startswith(("/", "~")) or re.match(r"[A-Za-z]:", path) or "://" in path:
        return None
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return None if not parts or ".." in parts else "/".join(parts)


def _subject_file(subject: str) -> str | None:
    # Subjects are task ids ("WI-3") or files ("package-lock.json"): only the latter are paths.
    if any(ch.isspace() for ch in subject) or not ("/" in subject or "." in subject.lstrip(".")):
        return None
    return relative_path(subject)


@dataclass(frozen=True)
class Finding:
    """One issue or subject, in the shape all three renderers share."""

    rule: str  # stable SARIF rule id: the issue type, or failure/<failure_type>
    rule_text: str
    classname: str  # JUnit classname
    name: str  # issue fingerprint or subject
    fingerprint: str  # SARIF partialFingerprints value, stable across runs
    level: str | None  # error | warning | note; None when a subject needs nothing
    status: str  # the classification (issues) or status (subjects)
    message: str
    file: str | None  # a safe repo-relative path, when the item names one
    source: str  # the workflow file it came from, for items that name no file

    @property
    def title(self) -> str:
        return f"selfcorrect {self.rule} ({self.status})"


def _attempts(item: Mapping[str, Any]) -> str:
    retries = item.get("retries")
    return f"attempts {item.get('attempts', 0)}/{'unlimited' if retries is None else retries}"


def _issue(issue: Mapping[str, Any]) -> Finding:
    kind, verdict = _text(issue.get("type"), "unclassified"), _text(issue.get("classification"))
    label = _text(issue.get("id"), _text(issue.get("fingerprint"), "issue"))
    message = (
        f"{label}: {kind} is {verdict or 'unknown'} ({_text(issue.get('reason'), '-')}): "
        f"{_text(issue.get('detail'), '-')}; {_attempts(issue)}"
    )
    message += "".join(f"; {key} {issue[key]}" for key in ("target", "task_id") if issue.get(key))
    name = _text(issue.get("fingerprint"), label)
    return Finding(
        rule=kind,
        rule_text=f"Validation issue of type {kind}",
        classname=f"selfcorrect.issues.{kind}",
        name=name,
        fingerprint=name,
        level={"BLOCKED": "error", "FIXABLE": "warning"}.get(verdict, "note"),
        status=verdict or "unknown",
        message=message,
        file=relative_path(issue.get("target")),
        source=layout.REPORT,
    )


def _subject_level(status: str, stuck: bool) -> str | None:
    if status == "blocked":
        return "error"
    if status == "recovering" or stuck:
        return "warning"
    # ok and recovered need nothing; skipped and failing (under budget) are notes.
    return None if status in ("ok", "recovered") else "note"


def _subject(subject: Mapping[str, Any], escalation: Mapping[str, Any] | None) -> Finding:
    kind, status = _text(subject.get("failure_type"), "unknown"), _text(subject.get("status"))
    name = _text(subject.get("subject"), "?")
    message = f"{name}: {kind} is {status or 'unknown'} ({_text(subject.get('reason'), '-')}); "
    message += _attempts(subject)
    if subject.get("ladder_step") is not None:
        message += f"; ladder step {subject['ladder_step']}"
    signals = subject.get("signals") or []
    if signals:
        fired = (f"{_text(s.get('signal'))} {s.get('count')}/{s.get('threshold')}" for s in signals)
        message += "; stuck: " + ", ".join(fired)
    if escalation:
        message += (
            f"; escalated as {_text(escalation.get('id'))}: {_text(escalation.get('reason'))}"
        )
    return Finding(
        rule=f"failure/{kind}",
        rule_text=f"Tool failure of type {kind}",
        classname=f"selfcorrect.subjects.{kind}",
        name=name,
        fingerprint=f"subject:{name}",  # kept apart from issue fingerprints
        level=_subject_level(status, bool(signals)),
        status=status or "unknown",
        message=message,
        file=_subject_file(name),
        source=layout.FAILURE_LOG,
    )


def visible(text: str) -> str:
    """Agent text with every control, C1, bidirectional-override and other invisible character
    shown as an escape (`\\x1b`, `\\x202e`), so a CI log or a code-scanning page never obeys or
    hides it (docs/ci.md: agent text is escaped for its format). Line breaks stay: each format
    carries them its own way."""
    return "".join(
        part if part in ("\r", "\n") else printable(part) for part in _BREAKS.split(text)
    )


def _shown(item: Finding) -> Finding:
    texts = {f.name: getattr(item, f.name) for f in fields(item)}
    return replace(item, **{k: visible(v) for k, v in texts.items() if isinstance(v, str)})


def findings(run: Mapping[str, Any], *, all_subjects: bool = False) -> list[Finding]:
    """Every issue, then every subject that needs something (or all of them), with agent text
    made visible."""
    escalations = {_text(e.get("subject")): e for e in run.get("escalations") or []}
    found = [_issue(issue) for issue in run.get("issues") or []]
    for subject in run.get("subjects") or []:
        finding = _subject(subject, escalations.get(_text(subject.get("subject"), "?")))
        if finding.level or all_subjects:
            found.append(finding)
    return [_shown(item) for item in found]


def escape_data(text: str) -> str:
    return visible(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _oneline(text: str) -> str:
    # A verbatim line must stay one printable line: the runner splits lines on \r and \n.
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def _command(level: str, props: Sequence[tuple[str, str]], message: str) -> str:
    joined = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{level} {joined}::{escape_data(message)}"


def render_github(run: Mapping[str, Any]) -> str:
    """Workflow commands: one annotation per issue and per subject that is not ok."""
    found = findings(run)
    lines = []
    for item in found:
        file = [("file", item.file)] if item.file else []
        lines.append(
            _command(GITHUB[item.level or "note"], [*file, ("title", item.title)], item.message)
        )
    for warning in run.get("warnings") or []:  # input problems, pinned to the file when we can
        props = []
        if path := relative_path(warning.get("path")):
            props.append(("file", path))
            if isinstance(warning.get("line"), int) and warning["line"] >= 1:
                props.append(("line", str(warning["line"])))
        props.append(("title", "selfcorrect input"))
        lines.append(_command("warning", props, _text(warning.get("message"))))
    if why := [_text(reason) for reason in run.get("why") or []]:
        # Belt and braces: each echoed reason is one printable line behind a label, and the
        # runner ignores commands between these markers anyway (the token is unguessable).
        token = secrets.token_hex(16)
        lines.append(f"::stop-commands::{token}")
        lines += [f"why: {_oneline(reason)}" for reason in why]
        lines.append(f"::{token}::")
    count = {level: sum(item.level == level for item in found) for level in GITHUB}
    lines.append(
        f"selfcorrect: {_oneline(_text(run.get('result'), 'UNKNOWN'))}: {count['error']} error(s),"
        f" {count['warning']} warning(s), {count['note']} notice(s) from"
        f" {len(run.get('issues') or [])} issue(s) and {len(run.get('subjects') or [])}"
        f" subject(s); {len(run.get('escalations') or [])} escalation(s)"
    )
    return "\n".join(lines) + "\n"


def _sarif_result(item: Finding, index: int, home: str) -> dict[str, Any]:
    # Percent-encode all but "/": no segment can read as a scheme, a query or a fragment.
    uri = quote(item.file or f"{home}/{item.source}", safe="/")
    location = {"artifactLocation": {"uri": uri}, "region": {"startLine": 1}}
    return {
        "ruleId": item.rule,
        "ruleIndex": index,
        "level": item.level or "note",
        "message": {"text": item.message},
        "locations": [{"physicalLocation": location}],
        "partialFingerprints": {FINGERPRINT_KEY: item.fingerprint},
    }


def render_sarif(run: Mapping[str, Any], *, workflow_dir: str) -> str:
    """A SARIF 2.1.0 log with one result per issue and per subject that is not ok."""
    home = relative_path(workflow_dir)
    if home is None:  # an absolute folder: keep its name, never the machine's path
        home = relative_path(workflow_dir.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1])
    found = findings(run)
    rules = {item.rule: item.rule_text for item in sorted(found, key=lambda f: f.rule)}
    index = {rule: number for number, rule in enumerate(rules)}
    driver = {
        "name": "selfcorrect",
        "version": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [{"id": rule, "shortDescription": {"text": text}} for rule, text in rules.items()],
    }
    sarif_run = {
        "tool": {"driver": driver},
        "results": [_sarif_result(item, index[item.rule], home or "workflow") for item in found],
        "properties": {"result": _text(run.get("result"), "UNKNOWN")},
    }
    log = {"version": "2.1.0", "$schema": SARIF_SCHEMA, "runs": [sarif_run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def xml_safe(text: str) -> str:
    return _XML_FORBIDDEN.sub("\ufffd", text)


def render_junit(run: Mapping[str, Any]) -> str:
    """One testcase per issue and per subject; anything that still needs work is a failure."""
    suite = ET.Element("testsuite", name="selfcorrect")
    result = xml_safe(_text(run.get("result"), "UNKNOWN"))
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="result", value=result)
    found = findings(run, all_subjects=True)
    for item in found:
        case = ET.SubElement(suite, "testcase", classname=xml_safe(item.classname))
        case.set("name", xml_safe(item.name))
        if item.level in ("error", "warning"):
            failure = ET.SubElement(case, "failure", message=xml_safe(item.title))
            failure.set("type", xml_safe(item.status))
            failure.text = xml_safe(item.message)
        elif item.level == "note":
            ET.SubElement(case, "skipped", message=xml_safe(item.message))
    counts = {
        "tests": str(len(found)),
        "failures": str(sum(item.level in ("error", "warning") for item in found)),
        "errors": "0",
        "skipped": str(sum(item.level == "note" for item in found)),
    }
    suite.attrib.update(counts)
    root = ET.Element("testsuites", {"name": "selfcorrect", **counts})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
