"""Scripted agents: each works one work item and acts only on a prompt that lets it act.

An agent reads `workflow/recovery/<item>.md` and acts only when that file's first line is
`STATUS: recovering` or `STATUS: pending` (docs/prompts.md). Every agents step is a turn for each
prompt that lets an agent act, whatever the agent then does (the simulation reports it to the
checker): selfcorrect cannot tell a silent agent from a busy one, only that the agents had their
turn before the fresh report. Behaviours (the scenario's `behaviour:`):
- `fix_on` (k, a number or a list): on its k-th turn(s), edits the project so the validator's
  `fixes:` checks pass;
- `ignore`: takes the turn and does nothing;
- `repeat_forbidden`: appends a failure whose approach is the first the prompt's
  "DO NOT repeat" line lists;
- `fail`: appends `count` failures (error, tool, file, code) to tool_failures.yaml;
- `compact`: writes two `type: pre_compact` waypoints for its task;
- `silent`: never takes a turn.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from selfcorrect.layout import work_item_file

from .invariants import may_act

STAMP = datetime.datetime(2026, 11, 30, 9, 0, 0, tzinfo=datetime.UTC)


@dataclass
class Agent:
    item: str
    behaviour: str
    agent_id: str = "sim-agent"
    k: int | list[int] = 1  # the turn(s) on which it fixes
    fixes: list[str] = field(default_factory=list)
    count: int = 1
    tool: str = "Bash"
    error: str = "TypeError: 'NoneType' object is not subscriptable"
    file_path: str | None = None
    code: str | None = None
    approach: str = "approach {n}"
    task_id: str | None = None  # the failure's task_id; default: the item; "" for none
    tries: int = 0
    failures_written: int = 0

    def prompt(self, workflow: Path) -> str | None:
        path = workflow / "recovery" / work_item_file(self.item)
        return path.read_text(encoding="utf-8") if path.exists() else None

    def turn(self, sim: Any) -> str:
        """Take this agent's turn, if its prompt lets it; says what it did."""
        if self.behaviour == "silent":
            return "silent"
        prompt = self.prompt(sim.project.workflow)
        if prompt is None or not may_act(prompt):
            return "no prompt to act on"
        self.tries += 1
        if self.behaviour == "fix_on":
            if self.tries in (self.k if isinstance(self.k, list) else [self.k]):
                for check_id in self.fixes:
                    sim.apply_fix(check_id)
                return "fixed"
            return "tried, not fixed"
        if self.behaviour == "ignore":
            return "ignored the prompt"
        if self.behaviour == "repeat_forbidden":
            line = re.search(r"^DO NOT repeat:\s*(.*)$", prompt, re.M)
            tried = [a.strip(" \"'") for a in re.split(r"[;,]", line.group(1))] if line else []
            approach = next((a for a in tried if a), self.approach.format(n=self.tries))
            self.append_failures(sim, approach)
            return f"repeated {approach!r}"
        if self.behaviour == "fail":
            self.append_failures(sim, None)
            return f"failed {self.count} time(s)"
        if self.behaviour == "compact":
            self.compact(sim)
            return "compacted twice"
        raise ValueError(f"unknown agent behaviour {self.behaviour!r}")

    def append_failures(self, sim: Any, approach: str | None) -> None:
        task = self.item if self.task_id is None else self.task_id
        path = sim.project.workflow / "tool_failures.yaml"
        if not path.exists():
            path.write_text("failures:\n", encoding="utf-8")
        # the log's own list style: entries at column 0 (cAgents' hook, PyYAML) or indented
        lead = "" if re.search(r"^- ", path.read_text(encoding="utf-8"), re.M) else "  "
        chunks = []
        for _ in range(self.count):
            self.failures_written += 1
            n = self.failures_written
            when = STAMP + datetime.timedelta(minutes=self.tries, seconds=n)
            entry: dict[str, Any] = {
                "tool": self.tool,
                "error": self.error.replace("{n}", str(n)),
                "timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "agent_id": self.agent_id,
                "approach": approach or self.approach.replace("{n}", str(n)),
            }
            if task:
                entry["task_id"] = task
            if self.file_path:
                entry["file_path"] = self.file_path
            if self.code:
                entry["code"] = self.code
            chunks.append(canonical_entry(entry, lead))
            sim.checker.failure_logged(
                {str(s) for s in {self.item, task, self.file_path, self.tool} - {None, ""}},
                agent=self.agent_id,
                tool=self.tool,
                error=entry["error"],
                owner_less=not task and not self.file_path and self.agent_id not in sim.owners,
            )
        with path.open("a", encoding="utf-8") as log:  # append-only, as hooks write
            log.write("".join(chunks))
        text = path.read_text(encoding="utf-8")
        if not text.startswith("# Tool Failure Log"):  # the hook's dialect is no plain YAML
            # the harness's own check: what it appended is what a YAML reader finds last
            last = (yaml.safe_load(text).get("failures") or [None])[-1]
            assert last == entry, f"tool_failures.yaml does not end with {entry}"

    def compact(self, sim: Any) -> None:
        folder = sim.project.workflow / "waypoints"
        folder.mkdir(exist_ok=True)
        for n in (1, 2):
            when = STAMP + datetime.timedelta(minutes=10 * self.tries + n)
            name = f"wp-{self.item}-{self.tries}-{n}.yaml"
            (folder / name).write_text(
                f"id: {name[:-5]}\ntype: pre_compact\ntask_id: {self.item}\nphase: execution\n"
                f'created_at: "{when.strftime("%Y-%m-%dT%H:%M:%SZ")}"\n'
                f"completed: []\npending:\n  - id: P-1\n    kind: file_edit\n"
                f"    target: src/pkg/core.py\n    description: finish the fix\n",
                encoding="utf-8",
            )


def canonical_entry(entry: dict[str, Any], lead: str = "  ") -> str:
    """One failure in the canonical log form: a list item under `failures:`, its values JSON
    strings (valid YAML double-quoted scalars), indented by `lead`."""
    import json

    lines = []
    for i, (key, value) in enumerate(entry.items()):
        start = f"{lead}- " if i == 0 else f"{lead}  "
        lines.append(f"{start}{key}: {json.dumps(value)}")
    return "\n" + "\n".join(lines) + "\n"
