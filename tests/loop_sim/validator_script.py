#!/usr/bin/env python3
"""The simulated project's validator: copied into the project as tools/validator.py.

It checks the project's files directly (no pytest subprocess, so a run stays fast) against the
checks in tools/checks.json, and writes `validation_report.yaml` into the workflow folder
($SELFCORRECT_DIR, or the folder named in checks.json): canonical form, or dialect B with
`summary`/`next_action` mappings. A check with `report_blocked: REASON` makes the whole report
BLOCKED while it fails (dialect B: `classification: BLOCKED`, next agent `hitl`). The report is
JSON text, which every YAML reader accepts.
Each report it writes is logged (sha256, status) in ../validator-writes.log, outside the
project, so the simulator can tell its reports from anyone else's.
Only the standard library: it starts in a few milliseconds.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = json.loads((ROOT / "tools" / "checks.json").read_text(encoding="utf-8"))


def failing(check: dict) -> list[dict]:
    """The issues one check finds now: empty when the project satisfies it."""
    paths = sorted(ROOT.glob(check["glob"])) if "glob" in check else [ROOT / check["path"]]
    found = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        if "missing" in check:
            bad = not path.exists()
        else:
            bad = path.exists() and check["contains"] in path.read_text(encoding="utf-8")
        if bad:
            issue = {
                "id": check["id"] if len(paths) == 1 else f"{check['id']}-{path.stem}",
                "type": check["type"],
                "severity": check.get("severity", "MAJOR"),
                "description": check["description"].replace("{path}", rel),
                "target": rel,
            }
            if check.get("task_id"):
                issue["task_id"] = check["task_id"]
            if check.get("classification"):
                issue["classification"] = check["classification"]
            if check.get("report_blocked"):  # the whole report is BLOCKED while it fails
                issue["report_blocked"] = check["report_blocked"]
            found.append(issue)
            if check.get("first_only"):
                break
    return found


def dialect_b(name: str, issues: list[dict], stamp: str) -> dict:
    levels: dict[str, list] = {"critical": [], "major": [], "minor": []}
    for issue in issues:
        levels[issue["severity"].lower()].append(
            {k: v for k, v in issue.items() if k not in ("severity", "id")}
        )
    verdict = "FIXABLE" if issues else "PASS"
    blocked = [i["report_blocked"] for i in issues if i.get("report_blocked")]
    if blocked:
        verdict = "BLOCKED"
    for issue in issues:
        issue.pop("report_blocked", None)
    return {
        "classification": verdict,
        "confidence": 0.9,
        "validator": name,
        "generated_at": stamp,
        "summary": {
            "total_quality_gates": len(CONFIG["checks"]),
            "passed_gates": len(CONFIG["checks"]) - len(issues),
            "critical_failures": len(levels["critical"]),
            "objectives_met": not issues,
            "coordination_quality": "good",
        },
        "coordination_validation": {"circular_delegation_detected": False},
        "delegation_compliance": {"score": 1.0},
        "issues_found": levels,
        "recommendations": ["fix what is listed"] if issues else [],
        "next_action": {
            "classification": verdict,
            "action": "escalate" if blocked else "self_correct" if issues else "complete",
            "agent": "hitl" if blocked else "cagents:self-correct",
            **({"reason": "; ".join(blocked)} if blocked else {}),
        },
    }


def main() -> int:
    folder = Path(os.environ.get("SELFCORRECT_DIR") or ROOT / CONFIG["workflow"])
    issues = [issue for check in CONFIG["checks"] for issue in failing(check)]
    now = datetime.datetime.now(datetime.UTC)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    name = CONFIG["name"]
    if CONFIG.get("dialect") == "B":
        report = dialect_b(name, issues, stamp)
    else:
        blocked = [i.pop("report_blocked") for i in issues if i.get("report_blocked")]
        report = {
            "status": "BLOCKED" if blocked else "FIXABLE" if issues else "PASS",
            **({"reason": "; ".join(blocked)} if blocked else {}),
            "generated_at": stamp,
            "validator": name,
            "issues": issues,
        }
    data = (json.dumps(report, indent=2) + "\n").encode()
    tmp = folder / ".validation_report.yaml.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, folder / "validation_report.yaml")
    with open(ROOT.parent / "validator-writes.log", "a", encoding="utf-8") as log:
        log.write(f"{hashlib.sha256(data).hexdigest()} {'FIXABLE' if issues else 'PASS'}\n")
    # what a person (or an agent running it through its shell) reads
    for issue in issues:
        task = f" [{issue['task_id']}]" if issue.get("task_id") else ""
        print(f"{issue.get('severity', 'MAJOR')}{task} {issue['description']}")
    print(f"{name}: {report.get('status') or report.get('classification')}, {len(issues)} issue(s)")
    return 1 if issues else 0


if __name__ == "__main__":
    sys.exit(main())
