"""Fuzzing every input file and every field through the real CLI (rules §2, §16, §17, §19).

Each document is generated from its schema with hostile strings in every field
(tests/fuzz_strategies.py), maybe broken (tests/fuzz_documents.py), written into a real
workflow folder beside valid copies of the other inputs, and handed to a real command; the
properties every command keeps are in tests/fuzz_cli.py. Defects the fuzzer found are kept as
plain tests in tests/test_hostile_input.py. One property is in-process, for speed: the failure
hook's append (its own function) into any valid log reads back through the log's reader.

Profiles: `ci` (the default: a few dozen examples per property, derandomized so CI is
reproducible) and `long` (`SELFCORRECT_FUZZ=long`: thousands, examples kept in .hypothesis/).
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from selfcorrect.io.documents import DEFAULT_MAX_BYTES, read_failure_log
from selfcorrect.io.failure_append import append_failure, one_line
from selfcorrect.io.log_cursor import LogCursor
from tests.fuzz_cli import Run, assert_sound, fresh_folder, judge, state
from tests.fuzz_documents import (
    Doc,
    appended_fields,
    canonical_entry,
    canonical_log,
    dialect_entry,
    dialect_log,
    dump,
    hook_log,
    hook_waypoint,
    mutate,
    schema_valid,
)
from tests.fuzz_strategies import from_schema, hostile_text, json_values, schema

# No health check is suppressed: examples are built from small strategies (a 100 KB string
# is one sampled value, not drawn character by character), so none is too slow or too large.
# `ci` does not shrink: shrinking a 1,000-level document takes minutes, and CI must stay fast.
# It reports the failing example as found (the `@reproduce_failure` blob replays it); `long`
# shrinks it to the smallest one.
settings.register_profile(
    "ci",
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    print_blob=True,
)
settings.register_profile("long", max_examples=2000, deadline=None, print_blob=True)
FUZZ = settings.get_profile(os.environ.get("SELFCORRECT_FUZZ", "ci"))


DOCUMENTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "policy": ("selfcorrect.yaml", "selfcorrect", {}),
    "report_canonical": (
        "validation_report.yaml",
        "validation_report",
        {"only": ("status", "generated_at", "validator", "issues"), "require": ("status",)},
    ),
    "report_dialect_a": (
        "validation_report.yaml",
        "validation_report",
        {
            "only": (
                *("classification", "overall_confidence", "issues", "generated_by"),
                *("acceptance_criteria_results", "recheck", "claim_verification", "feedback"),
                "low_confidence_items",
            ),
            "require": ("classification",),
        },
    ),
    "report_dialect_b": (
        "validation_report.yaml",
        "validation_report",
        {
            "only": (
                *("classification", "confidence", "summary", "coordination_validation"),
                *("issues_found", "next_action"),
            ),
            "require": ("classification",),
        },
    ),
    "report_mixed": ("validation_report.yaml", "validation_report", {}),
    "coordination_log": ("coordination_log.yaml", "coordination_log", {}),
    "escalations": ("escalations.yaml", "escalations", {}),
    "microtasks": ("microtasks/{name}.yaml", "microtasks", {}),
}
FILE_NAMES = st.one_of(
    st.just("WI-3"),
    hostile_text().filter(
        lambda s: (
            s not in ("", ".", "..") and "/" not in s and "\x00" not in s and len(s.encode()) < 200
        )
    ),
)


@pytest.mark.parametrize("kind", sorted(DOCUMENTS))
def test_decision_documents(
    kind: str, run_line: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pattern, stem, shape = DOCUMENTS[kind]
    data_strategy = from_schema(schema(stem), schema(stem), **shape)
    commands = ["check", "run", "shadow", "status", "reset", "replay", "validate", "stats"]

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            doc = data.draw(mutate(data.draw(data_strategy), stem, empty_ok=stem == "selfcorrect"))
            name = pattern.format(name=data.draw(FILE_NAMES) if "{name}" in pattern else "")
            path = folder / name
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(doc.data)
            where = str(path) if path.parent == folder else str(path.parent) + "/"
            chosen = data.draw(st.sampled_from(commands))
            expect = doc.expect
            if stem == "selfcorrect" and expect == "valid":
                expect = "unknown"  # a schema-valid policy may still fail its semantic checks
            judge(run_line, root, folder, chosen, data.draw, {where: expect}, decision=True)
        finally:
            shutil.rmtree(root)

    prop()


HOOK_LOGS = ("log_canonical", "log_dialect", "waypoint_canonical", "waypoint_dialect")


@st.composite
def hook_file(draw: st.DrawFn, kind: str) -> tuple[str, Doc]:
    """A hook log (tool_failures.yaml or a waypoint, either layout) as the hooks write it."""
    entry = schema("tool_failures")["$defs"]["failure"]
    if kind == "log_canonical":
        data = draw(from_schema(schema("tool_failures"), schema("tool_failures")))
        return "tool_failures.yaml", draw(mutate(data, "tool_failures"))
    if kind == "log_dialect":
        styles = st.sampled_from(["hook", "hook", "raw", "yaml"])
        entry_data = from_schema(entry, schema("tool_failures"))
        entries = draw(st.lists(st.tuples(entry_data, styles), max_size=5))
        return "tool_failures.yaml", Doc(hook_log(entries), "unknown", "dialect")
    data = draw(from_schema(schema("waypoint"), schema("waypoint")))
    # The dialect's layout keeps waypoints beside workflow/, the canonical one inside it.
    name = draw(st.sampled_from(["wp-compact-2026-08-06_10-00-00", "x"])) + ".yaml"
    if kind == "waypoint_dialect":
        return f"../waypoints/{name}", Doc(hook_waypoint(data, draw(st.booleans())), "", "")
    return f"waypoints/{name}", draw(mutate(data, "waypoint"))


@pytest.mark.parametrize("kind", HOOK_LOGS)
def test_hook_logs_only_warn(
    kind: str, run_line: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    commands = ["check", "run", "shadow", "status", "reset", "replay"]

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            name, doc = data.draw(hook_file(kind))
            path = (folder / name).resolve()
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(doc.data)
            chosen = data.draw(st.sampled_from(commands))
            result = judge(run_line, root, folder, chosen, data.draw, {str(path): "hook"}, False)
            if doc.expect == "invalid" and kind == "waypoint_canonical" and chosen != "reset":
                # A waypoint is read whole: one that cannot be read is a positioned warning.
                said = (result.stdout + result.stderr).splitlines()
                if result.stdout.startswith("{") and chosen == "check":
                    listed = json.loads(result.stdout)["diagnostics"]
                    said = [f"{d['path']}: warning: {d['message']}" for d in listed]
                assert any(str(path) in line and "warning:" in line for line in said), said
        finally:
            shutil.rmtree(root)

    prop()


def test_ci_formats_escape_agent_text(
    run_line: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Valid inputs full of hostile text: every format stays well formed and inert."""
    report = from_schema(schema("validation_report"), schema("validation_report"))
    entry = from_schema(schema("tool_failures")["$defs"]["failure"], schema("tool_failures"))

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            text = dump(data.draw(report)).encode()
            (folder / "validation_report.yaml").write_bytes(text)
            entries = data.draw(st.lists(entry, max_size=6))
            dialect = hook_log([(e, "hook") for e in entries])
            log = dialect if data.draw(st.booleans()) else dump({"failures": entries}).encode()
            (folder / "tool_failures.yaml").write_bytes(log)
            expect = "valid" if schema_valid("validation_report", text) else "unknown"
            broken = {str(folder / "validation_report.yaml"): expect}
            judge(run_line, root, folder, "run", data.draw, broken, decision=True)
        finally:
            shutil.rmtree(root)

    prop()


RESET_TARGETS = st.one_of(
    st.tuples(st.just("--subject"), st.sampled_from(["WI-3", "WI-4", "package-lock.json"])),
    st.tuples(st.sampled_from(["--subject", "--rule", "--escalation"]), hostile_text()),
    st.tuples(st.just("--rule"), st.sampled_from(["linting_errors", "issue_type:vague_answers"])),
)


def test_reset_with_hostile_arguments(
    run_line: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A reset after a real run: any subject, evidence or actor is data; what it writes reads
    back, prints safely, and folds into the next run."""

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            assert run_line(["run", folder, "--color", "never"]).exit_code in (1, 3)
            evidence, actor = data.draw(hostile_text()), data.draw(hostile_text())
            args = ["reset", folder, *data.draw(RESET_TARGETS), "--evidence", evidence]
            args += ["--actor", actor, "--color", "never"]
            args += data.draw(st.sampled_from([[], ["--false-positive"], ["--no-retry"]]))
            before = state(root)
            result = run_line(args)
            assert_sound(result, args, before, state(root), [])
            assert result.exit_code in (0, 2)
            for name in ("status", "stats", "check"):
                for fmt in ("text", "json"):
                    follow = [name, folder, "--format", fmt, "--color", "never"]
                    before = state(root)
                    done = run_line(follow)
                    assert_sound(done, follow, before, state(root), [])
                    # status exits as a run would (1 BLOCKED, 3 PENDING); the others 0.
                    ok = (0, 1, 3) if name == "status" else (0,)
                    assert done.exit_code in ok, done.stdout + done.stderr
            again = ["run", folder, "--format", "github", "--color", "never"]
            before = state(root)
            assert_sound(run_line(again), again, before, state(root), [])
        finally:
            shutil.rmtree(root)

    prop()


def test_replay_labels_and_baseline(
    run_line: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """expected.yaml and --baseline are decision documents: a broken one stops the replay."""
    stems = ("expected", "replay_baseline")

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            stem = data.draw(st.sampled_from(stems))
            doc = data.draw(mutate(data.draw(from_schema(schema(stem), schema(stem))), stem))
            path = folder / "expected.yaml" if stem == "expected" else root / "baseline.yaml"
            path.write_bytes(doc.data)
            args = ["replay", root, "--format", data.draw(st.sampled_from(["text", "json"]))]
            args += ["-v", "--color", "never"]
            args += ["--baseline", path] if stem == "replay_baseline" else []
            before = state(root)
            result = run_line(args)
            assert_sound(result, args, before, state(root), [str(path)])
            if doc.expect == "invalid":
                assert result.exit_code == 2, result.stdout + result.stderr
            if doc.expect == "valid":
                assert result.exit_code in (0, 1), result.stdout + result.stderr
        finally:
            shutil.rmtree(root)

    prop()


def test_validate_output(run_line: Run, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The built-in validator with hostile checks and a hostile --recheck report: what it writes
    is a valid report, only at --output; a broken input writes nothing."""
    policy = from_schema(
        schema("selfcorrect"), schema("selfcorrect"), only=("checks", "coordination")
    )
    report = from_schema(schema("validation_report"), schema("validation_report"))

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            (folder / "selfcorrect.yaml").write_text(dump(data.draw(policy)))
            (root / "docs").mkdir()
            (root / "docs" / "a.md").write_text("# Title\n\n## Usage\n\x1b[2J ::error::x\n")
            recheck = data.draw(mutate(data.draw(report), "validation_report"))
            (root / "other.yaml").write_bytes(recheck.data)
            output = root / "out" / "report.yaml"
            output.parent.mkdir()
            args = ["validate", folder, "--output", output, "--recheck", root / "other.yaml"]
            args += ["--format", data.draw(st.sampled_from(["text", "json"])), "--color", "never"]
            before = state(root)
            result = run_line(args)
            bad = [str(folder / "selfcorrect.yaml"), str(root / "other.yaml")]
            assert_sound(result, args, before, state(root), bad)
            if recheck.expect == "invalid":
                assert result.exit_code == 2, result.stdout + result.stderr
            if result.exit_code != 2:
                assert schema_valid("validation_report", output.read_bytes())
                output.unlink()
                assert state(root) == before, "validate wrote beside its --output"
        finally:
            shutil.rmtree(root)

    prop()


EVENTS = ("subject", "issue", "transition", "validated", "agent", "task", "circuit", "reset")
_TEXT = st.one_of(st.sampled_from(["WI-3", "src/handler.ts", "open", "recovering"]), hostile_text())
_COUNT = st.one_of(st.integers(-2, 40), st.integers())
# The journal's fields with the types selfcorrect writes (values anything of that type).
TYPED: dict[str, st.SearchStrategy[Any]] = {
    **dict.fromkeys(
        ("at", "run", "actor", "subject", "status", "failure_type", "reason", "rule"), _TEXT
    ),
    **dict.fromkeys(("rule_version", "fingerprint", "work_item", "type", "strategy"), _TEXT),
    **dict.fromkeys(("report_digest", "from", "to", "task_id", "via", "kind", "name"), _TEXT),
    **dict.fromkeys(("stage", "would", "detail"), _TEXT),
    **dict.fromkeys(("log_position", "attempt"), _COUNT),
    "ladder_step": st.one_of(st.none(), _COUNT),
    **dict.fromkeys(("retry", "false_positive"), st.booleans()),
    "escalation": st.one_of(st.none(), _TEXT),
    "evidence": st.dictionaries(_TEXT, json_values(1), max_size=3),
    **dict.fromkeys(("fingerprints", "tasks", "rules"), st.lists(_TEXT, max_size=3)),
    "detections": st.lists(st.lists(_TEXT, min_size=2, max_size=2), max_size=2),
    "subjects": st.lists(
        st.fixed_dictionaries(
            {"subject": _TEXT, "log_position": _COUNT, "attempts": _COUNT, "successes": _COUNT}
        ),
        max_size=2,
    ),
}
_EVENT = st.one_of(st.sampled_from((*EVENTS, "proposal")), hostile_text())
_UNREADABLE = st.sampled_from([b'{"event": "subj', b"\xff\xfe", b"[1, 2]", b"null", b'"x"', b"{}"])


def journal_lines(typed: bool) -> st.SearchStrategy[bytes]:
    """Records with any subset of the known fields (and unknown ones), typed as selfcorrect
    writes them or with any value at all; and lines that are no record."""
    values = TYPED if typed else dict.fromkeys(TYPED, json_values(1))
    record = st.fixed_dictionaries(
        {"event": _EVENT}, optional={**values, "zz_unknown": json_values(1)}
    )
    return st.one_of(record.map(lambda r: json.dumps(r).encode()), _UNREADABLE)


@pytest.mark.parametrize("typed", [True, False], ids=["typed", "hand_edited"])
def test_journal_records_of_any_shape(
    typed: bool, run_line: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The journal grows (unknown events and fields), can be torn, and can be edited by hand:
    every command that folds it keeps working and prints safely."""

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            journal = folder / ".selfcorrect" / "journal.jsonl"
            journal.parent.mkdir()
            lines = data.draw(st.lists(journal_lines(typed), min_size=1, max_size=8))
            journal.write_bytes(b"\n".join(lines))
            name = data.draw(st.sampled_from(["stats", "status", "shadow", "run", "replay"]))
            args = ["replay", journal] if name == "replay" else [name, folder]
            if name == "shadow":
                args = ["run", folder, "--shadow"]
            args += ["--format", data.draw(st.sampled_from(["text", "json"])), "--color", "never"]
            before = state(root)
            result = run_line(args)
            assert_sound(result, args, before, state(root), [str(journal)])
        finally:
            shutil.rmtree(root)

    prop()


# Every path selfcorrect writes, locks or keeps as state, and whether it is a folder.
STATE_PATHS = {
    **dict.fromkeys((".selfcorrect", "recovery", "microtasks", "handoffs"), True),
    **dict.fromkeys(("escalations.yaml", "calibration.yaml", "coordination_log.yaml"), False),
    **dict.fromkeys((".selfcorrect/locks",), True),
    **dict.fromkeys(
        (
            ".selfcorrect/locks/coordination_log.yaml.lock",
            ".selfcorrect/locks/escalations.yaml.lock",
        ),
        False,
    ),
    **dict.fromkeys((".selfcorrect/journal.jsonl", ".selfcorrect/watch.lock"), False),
    **dict.fromkeys((".selfcorrect/folder.lock",), False),
    **dict.fromkeys(("recovery/WI-3.md", "microtasks/WI-3.yaml", "handoffs/WI-3.md"), False),
}
HOSTILE_NODES = ("link to a file", "link to a folder", "dangling link", "fifo")


def test_a_hostile_node_at_a_state_path_is_refused_and_nothing_outside_changes(
    run_line: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A symlink (to a file, a folder, nowhere) or a FIFO at any path selfcorrect writes: every
    writing command exits 2 naming it, before it writes anything, and no byte outside the
    folder changes (rules §17, containment). The next such class of path belongs in STATE_PATHS.
    """

    @FUZZ
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            outside = root / "outside"
            (outside / "dir").mkdir(parents=True)
            (outside / "dir" / "keep.md").write_text("outside\n")
            (outside / "bashrc").write_text("export PATH=/usr/bin\n")
            rels = data.draw(st.lists(st.sampled_from(sorted(STATE_PATHS)), min_size=1, max_size=3))
            planted = []
            for rel in sorted(set(rels)):
                node = folder / rel
                parent = node.parent
                if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
                    continue  # a link inside a linked folder would be planted outside
                if node.is_symlink() or node.is_dir():
                    continue
                if node.is_file():  # coordination_log.yaml: the agents' file becomes a link
                    node.unlink()
                node.parent.mkdir(parents=True, exist_ok=True)
                kind = data.draw(st.sampled_from(HOSTILE_NODES), label=rel)
                if kind == "fifo":
                    os.mkfifo(node)
                else:
                    target = {
                        "link to a file": outside / "bashrc",
                        "link to a folder": outside / "dir",
                        "dangling link": outside / "nowhere",
                    }[kind]
                    relative = data.draw(st.booleans(), label="relative link")
                    node.symlink_to(os.path.relpath(target, node.parent) if relative else target)
                planted.append(rel)
            name = data.draw(st.sampled_from(["run", "reset", "validate", "watch"]))
            args: list[Any] = [name, folder, "--color", "never"]
            if name == "reset":
                args += ["--subject", "WI-3", "--evidence", "fixed"]
            if name == "watch":
                args.append("--once")
            before = state(outside)
            result = run_line(args)
            shown = f"{planted} {args}\nexit {result.exit_code}\n{result.stdout}{result.stderr}"
            assert result.exit_code == 2, shown
            assert "internal error" not in result.stderr and "Traceback" not in result.stderr
            assert any(f"workflow/{rel}: " in result.stderr for rel in planted), shown
            assert state(outside) == before, shown
            assert not (outside / "nowhere").exists(), shown
            for rel in planted:  # never replaced by a regular file either
                assert not (folder / rel).is_file() or (folder / rel).is_symlink(), shown
        finally:
            shutil.rmtree(root)

    prop()


# --- 1 MB of each shipped pattern's worst case, in every pattern-matched field ----------------

# (prefix, filler, suffix): what makes a backtracking pattern try hardest. The keyword each
# pattern anchors on, then a run the pattern's next quantifier can take, then what fails it.
WORST_CASES = [
    ("coverage", " ", "x"),
    ("coverage:", " ", "%"),
    ("HTTP", " ", "x"),
    ("HTTP error", "\t", "="),
    ("status_code", " ", ":"),
    ("responded with", " ", "'"),
    ("", "a.", "!/"),
    ("error", " ", "["),
    ("", "coverage ", ""),
    ("", "HTTP ", ""),
    ("questions", " asked", ""),
    ("acceptance criteria", " x", ""),
    ("coordination log", " x", ""),
    ("unable to", " ", ""),
    ("network request", " x", ""),
    ("'", "x", ""),
    ("0x", "f", "g"),
    ("", "TypeError", ""),
]
SIZES = (1 << 10, 1 << 16, 1 << 20)
FIELDS = ("error", "description", "task_name", "criterion", "answer")
# `ci`: a dozen megabyte-sized examples take seconds; `long` runs the profile's count.
WORST_EXAMPLES = 12 if os.environ.get("SELFCORRECT_FUZZ", "ci") == "ci" else FUZZ.max_examples


@st.composite
def worst_text(draw: st.DrawFn) -> str:
    prefix, filler, suffix = draw(st.sampled_from(WORST_CASES))
    size = draw(st.sampled_from(SIZES))
    return prefix + filler * ((size - len(prefix) - len(suffix)) // len(filler)) + suffix


def _place(folder: Any, field: str, text: str) -> str:
    """Put `text` in one pattern-matched field; the command that matches patterns over it."""
    if field == "error":
        entries = [
            {"id": f"TF-{n}", "tool": "Bash", "error": text, "timestamp": "2026-11-29T10:0{n}:00Z"}
            for n in range(3)
        ]
        (folder / "tool_failures.yaml").write_text(json.dumps({"failures": entries}))
        return "shadow"
    if field == "description":
        issue = {"id": "V1", "severity": "MAJOR", "description": text}
        report = {"status": "FIXABLE", "issues": [issue]}
        (folder / "validation_report.yaml").write_text(json.dumps(report))
        return "shadow"
    task = {"task_id": "WI-9", "name": "x", "status": "in_progress", "acceptance_criteria": ["x"]}
    log = {"controller": "lead", "implementation_tasks": [task]}
    if field == "task_name":
        task["name"] = text
    elif field == "criterion":
        task["acceptance_criteria"] = [text]
    else:
        log["questions_asked"] = [{"question": "why?", "delegated_to": "qa", "answer": text}]
        (folder / "coordination_log.yaml").write_text(dump(log))
        return "validate"
    (folder / "coordination_log.yaml").write_text(dump(log))
    return "shadow"


def test_worst_case_texts_in_every_pattern_matched_field(
    run_line: Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Completes with a verdict, never an internal error. Each pattern sees at most 8 KiB of a
    text (core/text_window.py), so 1 MB costs what 8 KiB does; no time is asserted."""

    @settings(FUZZ, max_examples=WORST_EXAMPLES)
    @given(st.sampled_from(FIELDS), worst_text())
    def prop(field: str, text: str) -> None:
        root, folder = fresh_folder(tmp_path_factory)
        try:
            command = _place(folder, field, text)
            argv = ["run", str(folder), "--shadow"] if command == "shadow" else [command, folder]
            result = run_line(argv)
            assert result.exit_code in (0, 1, 3), (field, result.stdout[-2000:], result.stderr)
            assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        finally:
            shutil.rmtree(root)

    prop()


# --- the failure hook's append (docs/hooks.md "The failure log") --------------------------------


@pytest.mark.parametrize("form", ["canonical_0", "canonical_2", "canonical_4", "dialect"])
def test_every_entry_reads_back_once_after_any_hook_appends(
    form: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Any valid entries (values spanning lines: block scalars, quoted values folded over
    lines, raw dialect values on two lines, lines that look like entries), then any number of
    the hook's appends: a full read, and a read on from where the last one stopped, each give
    every entry exactly once, as written, and no warning."""
    dialect = form == "dialect"
    entries = st.lists(dialect_entry() if dialect else canonical_entry(), max_size=6)

    # A canonical log may open with a byte-order mark and end its lines with CRLF (an editor
    # on Windows): YAML reads the same values. A raw dialect value keeps its CR, so not there.
    marks = (
        st.just(("", "\n"))
        if dialect
        else st.tuples(st.sampled_from(["", "\ufeff"]), st.sampled_from(["\n", "\r\n"]))
    )

    @FUZZ
    @given(entries, st.lists(appended_fields(), max_size=4), marks)
    def prop(
        existing: list[dict[str, Any]], appends: list[dict[str, str]], mark: tuple[str, str]
    ) -> None:
        log = tmp_path_factory.mktemp("log") / "tool_failures.yaml"
        text = dialect_log(existing) if dialect else canonical_log(existing, int(form[-1]))
        log.write_bytes((mark[0] + text.replace("\n", mark[1])).encode("utf-8"))
        expected = [dict(e) for e in existing]
        cursor, read_on = LogCursor(log), []
        for fields in appends:
            append_failure(log, fields)
            expected.append({k: _as_appended(v, dialect) for k, v in fields.items()})
            warnings: list[Any] = []
            reset, fresh = cursor.read(warnings, max_bytes=DEFAULT_MAX_BYTES)
            read_on = [*([] if reset else read_on), *(r.data for r in fresh)]
            assert warnings == []
        warnings = []
        whole = [r.data for r in read_failure_log(log, warnings)]
        assert warnings == [], (text, warnings)
        for got in (whole, read_on) if appends else (whole,):
            assert [{k: e[k] for k in want} for e, want in zip(got, expected, strict=True)] == [
                {k: str(v) for k, v in want.items()} for want in expected
            ], log.read_text("utf-8")

    prop()


def _as_appended(value: str, dialect: bool) -> str:
    """A value as the hook writes it (one line, printable) and as the log's reader reads it."""
    text = one_line(value)
    return text.replace('"', "'") if dialect else text
