"""How `replay` shows its result: per-case lines and a score table, or one stable JSON object.

`--format json` prints one object with these keys (stable; new keys may be added):
- `cases`: one per replayed folder, in the order found: `path`, `labelled` (bool),
  `description` (the labels' description, or null), `read` (ok, or refused: an input error,
  only for a folder labelled `read:`), `verdict` (the run's result, PASS|PENDING|BLOCKED, or
  null when refused), `failures` (logged calls counted as failures; for a session case, after
  its events were played through the hooks), `subjects` (each `subject`,
  `failure_type`, `signals` (list), `status`, `reason`), `issues` (each `fingerprint`, `id`,
  `type`, `classification`, `reason`, `task`), `stuck` (subjects with a signal firing), `scores` (as
  below, this case only; empty without labels), `mismatches` (each `kind` subject|issue|case,
  `name`, `aspect`, `labelled`, `decided`) and `warnings` (positioned, like `check`'s);
- `scores`: summed over all labelled cases, each `detector`, `tp`, `fp`, `fn`, `precision` and
  `recall` (numbers, unrounded, or null when undefined: nothing to divide);
- `texts`: one per labelled text file (`*.texts.yaml`): `path`, `description`, `texts`,
  `right`, `untyped`, `wrong` and `misses` (each text not typed right, as a mismatch: `kind`
  text, `name` its number and source, `aspect` typing, `labelled`, `decided`);
- `journals`: one per journal PATH: `path`, `records`, `rules` (each `rule`, `rule_version`
  and the counters `selfcorrect stats` prints: `detections`, `preflight_rejections`,
  `remediations`, `verified_recoveries`, `compensations`, `circuit_opens`, `recurrences`,
  `false_positives`, `precision` (null unless a person marked a false positive));
- `baseline`: null without `--baseline`, else `path`, `ok` (bool) and `drops` (each
  `detector`, `figure` precision|recall, `recorded`, `measured` (null: now undefined)).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click
from msgspec.structs import asdict

from selfcorrect.cli.options import Common
from selfcorrect.cli.run_report import table
from selfcorrect.cli.words import count, printable
from selfcorrect.core.scoring import SIGNALS

if TYPE_CHECKING:
    from selfcorrect.commands.replay import Case, ReplayResult, TextCase
    from selfcorrect.core.scoring import Score


def _score(score: Score) -> dict[str, Any]:
    return {
        "detector": score.detector,
        "tp": score.tp,
        "fp": score.fp,
        "fn": score.fn,
        "precision": score.precision,
        "recall": score.recall,
    }


def _case(case: Case) -> dict[str, Any]:
    return {
        "path": case.display,
        "labelled": case.labels is not None,
        "description": case.labels.description if case.labels else None,
        "read": case.seen.read,
        "failures": case.seen.failures,
        "verdict": case.seen.verdict,
        "subjects": [
            {
                "subject": s.subject,
                "failure_type": s.failure_type,
                "signals": _in_order(s.signals),
                "status": s.status,
                "reason": s.reason,
            }
            for s in case.subjects
        ],
        "issues": [
            {
                "fingerprint": i.fingerprint,
                "id": i.id,
                "type": i.type,
                "classification": i.classification,
                "reason": i.reason,
                "task": i.task,
            }
            for i in case.issues
        ],
        "stuck": case.stuck,
        "scores": [_score(s) for s in case.scores],
        "mismatches": [asdict(m) for m in case.mismatches],
        "warnings": [w.as_dict() for w in case.warnings],
    }


def _texts(case: TextCase) -> dict[str, Any]:
    seen = case.seen
    return {
        "path": case.display,
        "description": case.description,
        "texts": seen.texts,
        "right": seen.right,
        "untyped": seen.untyped,
        "wrong": seen.wrong,
        "misses": [asdict(m) for m in seen.misses],
    }


def replay_json(result: ReplayResult) -> dict[str, Any]:
    """The documented, stable `replay --format json` object (see the module docstring)."""
    return {
        "cases": [_case(case) for case in result.cases],
        "texts": [_texts(case) for case in result.texts],
        "scores": [_score(s) for s in result.scores],
        "journals": [
            {
                "path": j.display,
                "records": j.records,
                "rules": [asdict(r) for r in j.rules],
            }
            for j in result.journals
        ],
        "baseline": None
        if result.baseline is None
        else {
            "path": result.baseline,
            "ok": not result.drops,
            "drops": [asdict(d) for d in result.drops],
        },
    }


def _in_order(signals: frozenset[str]) -> list[str]:
    return [signal for signal in SIGNALS if signal in signals]


def _figure(value: float | None) -> str:
    """Two decimals rounded down, like the recorded baseline; `-` when undefined."""
    return "-" if value is None else f"{int(value * 100 + 1e-9) / 100:.2f}"


def show_replay(result: ReplayResult, fmt: str, common: Common) -> None:
    warnings = [w for c in result.cases for w in c.warnings]
    for warning in warnings + [w for j in result.journals for w in j.warnings]:
        click.echo(printable(str(warning)), err=True)
    if fmt == "json":
        click.echo(json.dumps(replay_json(result), indent=2, ensure_ascii=False))
        return
    lines: list[str] = []
    if common.verbosity >= 0:
        for case in result.cases:
            lines += _case_lines(case, common)
        for text_case in result.texts:
            lines += _text_lines(text_case, common)
    labelled = sum(1 for case in result.cases if case.labels is not None)
    if result.scores:
        parts = [count(labelled, "labelled case")] if labelled or not result.texts else []
        if result.texts:
            parts.append(count(sum(t.seen.texts for t in result.texts), "labelled text"))
        lines += ["", f"Scores over {' and '.join(parts)}:"]
        rows = [["DETECTOR", "TP", "FP", "FN", "PRECISION", "RECALL"]]
        rows += [
            [
                printable(s.detector),
                str(s.tp),
                str(s.fp),
                str(s.fn),
                _figure(s.precision),
                _figure(s.recall),
            ]
            for s in result.scores
        ]
        lines += table(rows, common)
    elif result.cases:
        lines += ["", "No labels (expected.yaml) found: nothing to score."]
    for found in result.journals:
        lines += ["", f"Journal {printable(found.display)}: {count(found.records, 'record')}"]
        if found.rules:
            rows = [["RULE", "VERSION", "DETECTIONS", "REMEDIATIONS", "RECOVERIES", "FALSE POS."]]
            rows += [
                [
                    printable(r.rule),
                    printable(r.rule_version) or "-",
                    str(r.detections),
                    str(r.remediations),
                    str(r.verified_recoveries),
                    str(r.false_positives),
                ]
                for r in found.rules
            ]
            lines += table(rows, common)
    if result.baseline is not None:
        lines.append("")
        if not result.drops:
            lines.append(f"Baseline {printable(result.baseline)}: every recorded figure holds.")
        else:
            drops = count(len(result.drops), "drop")
            head = f"Below baseline {printable(result.baseline)} ({drops}):"
            lines.append(click.style(head, fg="red", bold=True))
            for drop in result.drops:
                now = "undefined" if drop.measured is None else _figure(drop.measured)
                lines.append(
                    f"  {printable(drop.detector)} {drop.figure}: {now}, "
                    f"recorded {drop.recorded:.2f}"
                )
    click.echo("\n".join(lines).lstrip("\n"), color=common.color)


def _case_lines(case: Case, common: Common) -> list[str]:
    result = case.seen.verdict or "refused (input error)"
    summary = (
        f"{printable(case.display)}  {result}, {count(len(case.subjects), 'subject')}, "
        f"{count(len(case.issues), 'issue')}, {case.stuck} stuck"
    )
    if case.labels is None:
        return [f"{summary}  (no labels)", *_decisions(case)]
    labels = case.labels
    mismatches = count(len(case.mismatches), "mismatch", "mismatches")
    lines = [
        f"{summary}  (labels: {count(len(labels.subjects), 'subject')}, "
        f"{count(len(labels.issues), 'issue')}; {mismatches})"
    ]
    if common.verbosity > 0:
        lines += [
            f"    {m.kind} {printable(m.name)}: {m.aspect} labelled {printable(m.labelled)}, "
            f"decided {printable(m.decided)}"
            for m in case.mismatches
        ]
    return lines


def _text_lines(case: TextCase, common: Common) -> list[str]:
    seen = case.seen
    lines = [
        f"{printable(case.display)}  {count(seen.texts, 'text')} typed: {seen.right} right, "
        f"{seen.untyped} untyped, {seen.wrong} wrong"
    ]
    if common.verbosity > 0:
        lines += [
            f"    {printable(m.name)}: labelled {printable(m.labelled)}, decided "
            f"{printable(m.decided)}"
            for m in seen.misses
        ]
    return lines


def _decisions(case: Case) -> list[str]:
    """An unlabelled folder's decisions: what a labeller would check."""
    lines = []
    for s in case.subjects:
        fired = ", ".join(_in_order(s.signals)) or "no signal"
        lines.append(
            f"    subject {printable(s.subject)}: {printable(s.failure_type)}, {s.status} "
            f"({s.reason}); {fired}"
        )
    for i in case.issues:
        name = f"{printable(i.id)} " if i.id else ""
        task = f", task {printable(i.task)}" if i.task else ""
        lines.append(
            f"    issue {name}{printable(i.fingerprint)}: {printable(i.type)}, "
            f"{i.classification} ({i.reason}){task}"
        )
    return lines
