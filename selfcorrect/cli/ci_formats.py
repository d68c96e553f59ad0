"""CI renderers for `selfcorrect run`: GitHub workflow commands, SARIF 2.1.0 and JUnit XML.

Each is a pure function of the stable `--format json` object (run_report.run_json), so CI output
follows one documented contract. All of its text may come from agents (rules §17): it is escaped
for the target syntax and never trusted as a path.
"""

from __future__ import annotations

import json
import re
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from msgspec import Struct
from msgspec.structs import replace

from selfcorrect import __version__, layout
from selfcorrect.cli.words import attempts_text, count, printable
from selfcorrect.core.person_commands import reset_escalation

# The repository (pyproject's project.urls; tests/test_ci_rules.py keeps them the same): the
# package is not on an index yet, and rules' help points at its docs/.
INFORMATION_URI = "https://github.com/OWNER/selfcorrect"
DOCS_URI = f"{INFORMATION_URI}/blob/main/docs"
# What each kind of rule is, how selfcorrect handles it, and where the rule is stated.
ISSUE_RULE = (
    "A validator reported an issue of type {kind} in validation_report.yaml. selfcorrect "
    "classifies it FIXABLE or BLOCKED; a FIXABLE one goes to its task's agent with the type's "
    "strategy directive, under a retry budget; a spent budget sends the task up the recovery "
    "ladder, and a blocked one to a person.",
    "rules.md#5-when-an-attempt-is-spent",
)
FAILURE_RULE = (
    "Agents' tool calls failed with errors of type {kind} (tool_failures.yaml). selfcorrect "
    "counts them per subject against the type's retries, watches for stuck signals, climbs the "
    "six-step recovery ladder, and escalates to a person when the ladder or the cap is spent.",
    "rules.md#6-failure-types",
)
HELP = (
    "The result's message says what is wrong, the item's status and what to read next: its "
    "recovery prompt (recovery/<item>.md in the workflow folder, for the agent) or, when a "
    "person is needed, the escalation in escalations.yaml. After looking at a blocked item, hand "
    "it back with `selfcorrect reset DIR --subject ID --evidence TEXT`, or resolve the "
    "escalation in escalations.yaml."
)
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


_LINE = re.compile(r"^(?P<path>.+?):(?P<line>[0-9]{1,9})(?::[0-9]{1,9})?$")


def split_target(text: Any) -> tuple[str | None, int | None]:
    """A target's safe repo-relative path and the line it names (`src/a.py:42`, `a.py:42:7`),
    either None when it names none."""
    if not isinstance(text, str):
        return None, None
    match = _LINE.match(text)
    if match and int(match["line"]) >= 1:
        return relative_path(match["path"]), int(match["line"])
    return relative_path(text), None


class Finding(Struct, frozen=True):
    """One issue or subject, in the shape all three renderers share."""

    rule: str  # stable SARIF rule id: the issue type, or failure/<failure_type>
    rule_text: str
    classname: str  # JUnit classname
    name: str  # issue fingerprint or subject
    fingerprint: str  # SARIF partialFingerprints value, stable across runs
    level: str | None  # error | warning | note; None when a subject needs nothing
    status: str  # the item's status (else the issue's classification)
    kind: str  # the issue type or failure type
    message: str  # what is wrong, its type and status, and what to read
    file: str | None  # a safe repo-relative path, when the item names one
    line: int | None  # the line the target names (`path:line`), when it names one
    source: str  # the workflow file it came from, for items that name no file
    source_line: int | None = None  # where it stands in `source` (the JSON's `line`), if known

    @property
    def title(self) -> str:
        return f"selfcorrect {self.kind} ({self.status})"


def _read(item: Mapping[str, Any], home: str | None, shadow: bool = False) -> str:
    """What to open next: the recovery prompt, or the escalation a person decides. Under
    --shadow nothing was written: the paths are what a run would write, never "read X"."""
    where = f"{home}/" if home else ""
    if item.get("escalation"):
        verb = "would be added to" if shadow else "in"
        return (
            f" A person decides: escalation {_text(item['escalation'])} {verb} "
            f"{where}{layout.ESCALATIONS}."
        )
    if item.get("prompt"):
        if shadow:
            return f" A run would write its prompt to {where}{_text(item['prompt'])}."
        return f" Read {where}{_text(item['prompt'])}."
    return ""


def _state(item: Mapping[str, Any], fallback: str) -> str:
    """The item's status when the JSON carries one, else its classification (or `fallback`)."""
    return _text(item.get("status"), _text(item.get("classification"), fallback))


def _issue(issue: Mapping[str, Any], home: str | None, shadow: bool = False) -> Finding:
    kind = _text(issue.get("type"), "unclassified")
    verdict, status = _text(issue.get("classification")), _state(issue, "unknown")
    label = _text(issue.get("id"))
    what = _text(issue.get("description"), _text(issue.get("detail"), "no description"))
    facts = [kind, status]
    if verdict and not issue.get("status") and verdict.lower() != status.lower():
        facts.append(verdict)  # an older JSON without the item's one status
    how = ", ".join(facts)
    if issue.get("detail"):
        how += f": {_text(issue['detail'])}"
    how += f"; attempts {attempts_text(issue.get('attempts'), issue.get('retries'))}"
    how += "".join(f"; {key} {issue[key]}" for key in ("target", "task_id") if issue.get(key))
    message = f"{label + ': ' if label else ''}{what} ({how}).{_read(issue, home, shadow)}"
    name = _text(issue.get("fingerprint"), label or "issue")
    file, line = split_target(issue.get("target"))
    return Finding(
        rule=kind,
        rule_text=f"Validation issue of type {kind}",
        classname=f"selfcorrect.issues.{kind}",
        name=name,
        fingerprint=name,
        level=_issue_level(verdict, status),
        status=status,
        kind=kind,
        message=message,
        file=file,
        line=line,
        source=layout.REPORT,
        source_line=_line(issue.get("line")),
    )


def _issue_level(verdict: str, status: str) -> str:
    if verdict == "BLOCKED" or status == "blocked":
        return "error"
    if status in ("recovered", "skipped"):
        return "note"
    return "warning" if verdict == "FIXABLE" else "note"


def _subject_level(status: str, stuck: bool) -> str | None:
    if status == "blocked":
        return "error"
    if status == "recovering" or stuck:
        return "warning"
    # ok and recovered need nothing; skipped and failing (under budget) are notes.
    return None if status in ("ok", "recovered") else "note"


def _subject(subject: Mapping[str, Any], home: str | None, shadow: bool = False) -> Finding:
    kind, status = _text(subject.get("failure_type"), "unknown"), _state(subject, "unknown")
    name = _text(subject.get("subject"), "?")
    what = _text(subject.get("description"), "no error text")
    how = f"{kind}, {status}"
    if subject.get("reason"):
        how += f": {_text(subject['reason']).lower().replace('_', ' ')}"
    how += f"; attempts {attempts_text(subject.get('attempts'), subject.get('retries'))}"
    if subject.get("ladder_step") is not None:
        how += f"; ladder step {subject['ladder_step']}"
    signals = subject.get("signals") or []
    if signals:
        fired = (f"{_text(s.get('signal'))} {s.get('count')}/{s.get('threshold')}" for s in signals)
        how += "; stuck: " + ", ".join(fired)
    file, line = split_target(name) if _subject_file(name) else (None, None)
    if file is None:  # a task's failures name the file they failed on
        file, line = split_target(subject.get("file"))
    return Finding(
        rule=f"failure/{kind}",
        rule_text=f"Tool failure of type {kind}",
        classname=f"selfcorrect.subjects.{kind}",
        name=name,
        fingerprint=f"subject:{name}",  # kept apart from issue fingerprints
        level=_subject_level(status, bool(signals)),
        status=status,
        kind=kind,
        message=f"{name}: {what} ({how}).{_read(subject, home, shadow)}",
        file=file,
        line=line,
        source=layout.FAILURE_LOG,
        source_line=_line(subject.get("line")),
    )


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def visible(text: str) -> str:
    """Agent text with every control, C1, bidirectional-override and other invisible character
    shown as an escape (`\\x1b`, `\\x202e`), so a CI log or a code-scanning page never obeys or
    hides it (docs/ci.md: agent text is escaped for its format). Line breaks stay: each format
    carries them its own way."""
    return "".join(
        part if part in ("\r", "\n") else printable(part) for part in _BREAKS.split(text)
    )


def _shown(item: Finding) -> Finding:
    shown: dict[str, Any] = {
        name: visible(value)
        for name in item.__struct_fields__
        if isinstance(value := getattr(item, name), str)
    }
    return replace(item, **shown)


def findings(
    run: Mapping[str, Any], *, all_subjects: bool = False, home: str | None = None
) -> list[Finding]:
    """Every issue, then every subject that needs something (or all of them), with agent text
    made visible. `home` is the workflow folder as the user named it: prompt and escalation
    paths are shown under it (relative to it when None)."""
    shadow = bool(run.get("shadow"))
    found = [_issue(issue, home, shadow) for issue in run.get("issues") or []]
    for subject in run.get("subjects") or []:
        finding = _subject(subject, home, shadow)
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


def _home(workflow_dir: str | None, run: Mapping[str, Any] | None = None) -> str | None:
    """The workflow folder as shown in messages, annotations and SARIF URIs: relative to the
    repository root (the JSON's `workflow_dir`, so a monorepo package's folder and its targets
    share one base), else as typed; never a machine's absolute path (an absolute folder keeps
    only its name)."""
    if run is not None and (in_repo := relative_path(run.get("workflow_dir"))):
        return in_repo
    if workflow_dir is None:
        return None
    home = relative_path(workflow_dir)
    if home is None:
        home = relative_path(workflow_dir.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1])
    return home or "workflow"


def _uncited_escalations(run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The run's escalations that no issue or subject row names."""
    rows = [*(run.get("issues") or []), *(run.get("subjects") or [])]
    cited = {str(row["escalation"]) for row in rows if row.get("escalation")}
    return [e for e in run.get("escalations") or [] if str(e.get("id")) not in cited]


def render_github(run: Mapping[str, Any], *, workflow_dir: str | None = None) -> str:
    """Workflow commands: one annotation per issue and per subject that is not ok, pinned to
    the file (and line) its target names."""
    home = _home(workflow_dir, run)
    found = findings(run, home=home)
    lines = []
    for item in found:
        where = [("file", item.file)] if item.file else []
        if item.file and item.line:
            where.append(("line", str(item.line)))
        elif not item.file and item.source_line and home:  # the entry in its workflow file
            where = [("file", f"{home}/{item.source}"), ("line", str(item.source_line))]
        lines.append(
            _command(GITHUB[item.level or "note"], [*where, ("title", item.title)], item.message)
        )
    uncited = _uncited_escalations(run)
    for entry in uncited:  # a circuit's, say: no issue or subject row carries it
        ident = _text(entry.get("id"), "?")
        where = [("file", f"{home}/{layout.ESCALATIONS}")] if home else []
        lines.append(
            _command(
                "error",
                [*where, ("title", "selfcorrect escalation")],
                f"{ident}: {_text(entry.get('subject'))}: {_text(entry.get('reason'))}. A person "
                f"decides; after acting on it: {reset_escalation(home or 'workflow', ident)}",
            )
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
    levels = {level: sum(item.level == level for item in found) for level in GITHUB}
    levels["error"] += len(uncited)
    lines.append(
        f"selfcorrect: {_oneline(_text(run.get('result'), 'UNKNOWN'))}: "
        f"{count(levels['error'], 'error')}, {count(levels['warning'], 'warning')}, "
        f"{count(levels['note'], 'notice')} from {count(len(run.get('issues') or []), 'issue')} "
        f"and {count(len(run.get('subjects') or []), 'subject')}; "
        f"{count(len(run.get('escalations') or []), 'escalation')}"
    )
    return "\n".join(lines) + "\n"


# --- the job summary: what a person reads on the run's page ($GITHUB_STEP_SUMMARY) -----------

VERDICTS = {
    "PASS": "nothing needs anyone",
    "PENDING": "work handed to agents through their recovery prompts",
    "BLOCKED": "a person is needed: each open escalation below says what, and how to hand it back",
}
# What can start markup inside a line (emphasis, code, links, tables, HTML, entities, math);
# agent text never starts a line here, so block markers (#, -, 1.) need no escape.
_MARKDOWN = re.compile(r"([\\`*_\[\]|~<>&$])")


def markdown(text: str) -> str:
    """Agent text as one line of inert Markdown: every character GitHub's renderer could read
    as markup (links, emphasis, tables, HTML) is escaped, breaks become spaces."""
    return _MARKDOWN.sub(r"\\\1", _oneline(visible(text).replace("\r", " ").replace("\n", " ")))


def _code(text: str) -> str:
    """Text inside a code span: one printable line whose backticks cannot close it."""
    text = _oneline(visible(text))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""  # the renderer strips it
    return f"{fence}{pad}{text}{pad}{fence}"


def _next(item: Mapping[str, Any], home: str) -> str:
    """What to read for the item: its escalation, else its recovery prompt."""
    if item.get("escalation"):
        return f"escalation {_code(_text(item['escalation']))}"
    if item.get("prompt"):
        return f"prompt {_code(home + '/' + _text(item['prompt']))}"
    return ""


def render_summary(run: Mapping[str, Any], *, workflow_dir: str | None = None) -> str:
    """The run as Markdown for a CI job's summary page: the verdict, one row per issue and per
    subject, and each open escalation with the `selfcorrect reset` that hands it back
    (docs/ci.md, "Job summary"). Every text from a file is escaped: it may be an agent's."""
    home = _home(workflow_dir, run) or "workflow"
    result = _text(run.get("result"), "UNKNOWN")
    code = {"PASS": 0, "BLOCKED": 1, "PENDING": 3}.get(result)
    shadow = " (shadow: nothing written)" if run.get("shadow") else ""
    lines = [f"## selfcorrect: {markdown(result)}{shadow}", ""]
    ran = _code(f"selfcorrect run {home}")
    lines.append(
        f"{ran} exited {code}: {VERDICTS[result]}."
        if code is not None
        else f"{ran}: {markdown(result)}."
    )
    rows = [("issue", issue) for issue in run.get("issues") or []]
    rows += [("subject", subject) for subject in run.get("subjects") or []]
    if rows:
        lines += [
            "",
            "| item | kind | type | status | attempts | next |",
            "|---|---|---|---|---|---|",
        ]
    for kind, row in rows:
        name = _text(row.get("id"), _text(row.get("fingerprint"))) if kind == "issue" else ""
        name = name or _text(row.get("subject"), "?")
        kind_of = _text(row.get("type") if kind == "issue" else row.get("failure_type"), "?")
        cells = [
            markdown(name),
            kind,
            markdown(kind_of),
            markdown(_state(row, "unknown")),
            markdown(attempts_text(row.get("attempts"), row.get("retries"))),
            _next(row, home).replace("|", "\\|"),  # a table's cell ends at any bare |
        ]
        lines.append("| " + " | ".join(cells) + " |")
    escalations = run.get("escalations") or []
    lines += ["", f"### {count(len(escalations), 'open escalation')}"]
    for entry in escalations:
        ident = _text(entry.get("id"), "?")
        lines += [
            "",
            f"- **{markdown(ident)}** {markdown(_text(entry.get('subject')))}: "
            f"{markdown(_text(entry.get('reason')))}",
            f"  ({'a run would add it to' if run.get('shadow') else 'in'} "
            f"{_code(home + '/' + layout.ESCALATIONS)}). After acting on it:",
            "",
            "  ```sh",
            f"  {_oneline(visible(reset_escalation(home, ident)))}",
            "  ```",
        ]
    if why := [markdown(_text(reason)) for reason in run.get("why") or []]:
        lines += ["", "Why: " + "; ".join(why)]
    return "\n".join(lines) + "\n"


def _location(path: str, line: int | None) -> dict[str, Any]:
    # Percent-encode all but "/": no segment can read as a scheme, a query or a fragment.
    location: dict[str, Any] = {"artifactLocation": {"uri": quote(path, safe="/")}}
    if line:  # a region only where a line is known: never a guess
        location["region"] = {"startLine": line}
    return {"physicalLocation": location}


def _sarif_result(item: Finding, index: int, home: str) -> dict[str, Any]:
    """Located at the line the target names; else at the issue's or failure's own line in its
    workflow file, with the file it names as a related location; else at that file."""
    source = f"{home}/{item.source}"
    related = []
    if item.file and item.line:
        where = _location(item.file, item.line)
    elif item.source_line:
        where = _location(source, item.source_line)
        if item.file:
            related.append({"id": 1, **_location(item.file, None)})
    else:
        where = _location(item.file or source, None)
    result = {
        "ruleId": item.rule,
        "ruleIndex": index,
        "level": item.level or "note",
        "message": {"text": item.message},
        "locations": [where],
        "partialFingerprints": {FINGERPRINT_KEY: item.fingerprint},
    }
    if related:
        result["relatedLocations"] = related
    return result


def _rule(rule: str, item: Finding) -> dict[str, Any]:
    """A SARIF rule with what code scanning shows beside an alert: a full description, help
    text and the docs/ section that states the rule."""
    full, anchor = FAILURE_RULE if item.source == layout.FAILURE_LOG else ISSUE_RULE
    return {
        "id": rule,
        "shortDescription": {"text": item.rule_text},
        "fullDescription": {"text": full.format(kind=item.kind)},
        "help": {"text": HELP},
        "helpUri": f"{DOCS_URI}/{anchor}",
    }


def render_sarif(run: Mapping[str, Any], *, workflow_dir: str) -> str:
    """A SARIF 2.1.0 log with one result per issue and per subject that is not ok."""
    home = _home(workflow_dir, run) or "workflow"
    found = findings(run, home=home)
    rules = {item.rule: item for item in sorted(found, key=lambda f: f.rule)}
    index = {rule: number for number, rule in enumerate(rules)}
    driver = {
        "name": "selfcorrect",
        "version": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [_rule(rule, item) for rule, item in rules.items()],
    }
    sarif_run = {
        "tool": {"driver": driver},
        "results": [_sarif_result(item, index[item.rule], home) for item in found],
        "properties": {"result": _text(run.get("result"), "UNKNOWN")},
    }
    log = {"version": "2.1.0", "$schema": SARIF_SCHEMA, "runs": [sarif_run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def xml_safe(text: str) -> str:
    return _XML_FORBIDDEN.sub("\ufffd", text)


def render_junit(run: Mapping[str, Any], *, workflow_dir: str | None = None) -> str:
    """One testcase per issue and per subject; anything that still needs work is a failure."""
    suite = ET.Element("testsuite", name="selfcorrect")
    result = xml_safe(_text(run.get("result"), "UNKNOWN"))
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="result", value=result)
    found = findings(run, all_subjects=True, home=_home(workflow_dir, run))
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


# --- input problems: `check`'s diagnostics, and the input error that stops a run -------------

INPUT_RULES = {
    "error": (
        "input/invalid",
        "An invalid workflow document",
        "A decision document (selfcorrect.yaml, validation_report.yaml, coordination_log.yaml, "
        "escalations.yaml, microtasks/*.yaml) is not valid: selfcorrect refuses to act on it "
        "and writes nothing (exit 2).",
        "rules.md#2-inputs",
    ),
    "warning": (
        "input/skipped",
        "An entry of a hook log that was skipped",
        "An entry of a hook log (tool_failures.yaml, waypoints) cannot be read; it is skipped "
        "and the rest of the log is read.",
        "rules.md#2-inputs",
    ),
}


def render_diagnostics_github(diagnostics: Sequence[Any]) -> str:
    """One annotation per problem, pinned to its file, line and column (`path` relative to
    the repository root: the caller makes it so)."""
    lines = []
    for diag in diagnostics:
        level = "error" if diag.severity == "error" else "warning"
        props = [("file", diag.path), ("line", str(diag.line)), ("col", str(diag.col))]
        props.append(("title", f"selfcorrect input {level}"))
        lines.append(_command(level, props, diag.message))
    return "\n".join(lines) + "\n" if lines else ""


def render_diagnostics_sarif(diagnostics: Sequence[Any]) -> str:
    """A SARIF 2.1.0 log with one result per problem, at its line and column."""
    used = sorted({"error" if d.severity == "error" else "warning" for d in diagnostics})
    rules = [INPUT_RULES[level] for level in used]
    index = {level: number for number, level in enumerate(used)}
    results = []
    for diag in diagnostics:
        level = "error" if diag.severity == "error" else "warning"
        region = {"startLine": max(1, diag.line), "startColumn": max(1, diag.col)}
        location = {"artifactLocation": {"uri": quote(diag.path, safe="/")}, "region": region}
        results.append(
            {
                "ruleId": INPUT_RULES[level][0],
                "ruleIndex": index[level],
                "level": level,
                "message": {"text": visible(diag.message)},
                "locations": [{"physicalLocation": location}],
            }
        )
    driver = {
        "name": "selfcorrect",
        "version": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [
            {
                "id": rule,
                "shortDescription": {"text": short},
                "fullDescription": {"text": full},
                "help": {"text": "Fix the document at the line shown, then run again."},
                "helpUri": f"{DOCS_URI}/{anchor}",
            }
            for rule, short, full, anchor in rules
        ],
    }
    log = {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
