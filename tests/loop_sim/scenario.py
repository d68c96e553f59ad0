"""Scenario loader and the simulation that plays one scenario file.

A scenario (scenarios/*.yaml, one per file) declares the project (`project:` for project.build),
its agents, and `steps:`, played in order:
- `validate`: the workflow's validator agent runs tools/validator.py (a fresh report);
- `run`: `selfcorrect run workflow/ --format json`, then `selfcorrect status workflow/`;
  every invariant is checked on what they leave;
- `agents`: every agent takes its turn (agents.py);
- `round: N`: N times agents, validate, run;
- `person: {reset: {subject, evidence}}` runs `selfcorrect reset`; `person: {resolve: {subject,
  evidence, retry}}` and `person: {final_status: {task, value}}` edit files by hand;
- `watch: {rounds: N}`: a real `selfcorrect watch` subprocess; agents and the validator act N
  times while it runs; each run it prints is checked; SIGINT stops it;
- `hook: {agent, tool, input, error}`: the agent's host sends a failed call to the real failure
  hook (`selfcorrect hook claude-code post-tool-use-failure`, a subprocess, the event on stdin);
  its answer is checked against what a shadow run then says of the item;
- `stop: {agent, held}`: the agent stops (SubagentStop), ending its turn: the hook must hold it
  exactly while its task has a directive or micro-tasks out, once per directive;
- `success: {agent, tool, input}`, `batch: {agent, calls}`, `call: {agent, tool, input,
  denied}`: the success hook, PostToolBatch's rejected calls, the gate (docs/simulator.md);
  `success` takes `repeat: N`, `inputs: [...]` (in turn) and `answer_contains`/`answer_lacks`;
- `ci_validate`: the validator re-run with no agent turn, then a run; `run: {options}`;
- `fix: [CHECK]`, `regress: [CHECK]`: the project fixed by hand, or a fix undone;
  `report: TEXT`: another writer's report;
- `expect: [...]`: the scenario's own checks on the last run (see `expect` below).
selfcorrect's run, status and reset are invoked in-process through the CLI's `main()` (the same
argv a user types, the same exit-code mapping), because a Python start with selfcorrect's imports
costs about a second of CPU here and the simulator makes a hundred calls; the watch phase and the
validator are real subprocesses.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from selfcorrect.cli.main import main
from selfcorrect.layout import work_item_file

from . import person
from .agents import Agent
from .host import LEAD, HostSession
from .invariants import RESULT_EXIT, Checker, Observation, may_act, observe
from .invariants import STATUSES as STATUS_ORDER
from .project import Project, build

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
WATCH_WAIT_S = 60.0  # a guard against a hung watcher, never an assertion about speed
WATCH_QUIET_S = 1.5  # after a run, how long to wait for a follow-up run before acting again


def scenario_files() -> list[Path]:
    return sorted(SCENARIOS.glob("*.yaml"))


def load(path: Path) -> dict[str, Any]:
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    unknown = set(spec) - {"description", "covers", "project", "agents", "steps"}
    if unknown:
        raise ValueError(f"{path.name}: unknown keys {sorted(unknown)}")
    return spec


class Simulation(HostSession):
    def __init__(self, name: str, spec: dict[str, Any], tmp_path: Path, mode: str = "cold") -> None:
        self.name = name
        self.spec = spec
        self.project: Project = build(tmp_path, spec["project"])
        self.checks = {c["id"]: c for c in spec["project"].get("checks") or []}
        self.agents = [Agent(**a) for a in spec.get("agents") or []]
        validator = spec["project"].get("validator") or {}
        self.checker = Checker(
            name,
            self.project.workflow,
            self.project.tasks,
            self.project.policy,
            validator.get("name", "sim-validator"),
            self.project.validator_log,
        )
        self.run_no = 0
        self.last: Observation | None = None
        self.log: list[str] = []  # what happened, for failure messages
        # what each run decided, per item: (kind, status, ladder step, attempts) of its parts;
        # and each stop hook's hold: warm and cold must agree on both
        self.outcomes: list[tuple[str, dict[str, list[tuple[Any, ...]]]]] = []
        self.verifications: list[str] = []  # the error text of each failed verification run
        self.init_host(mode)
        self.checker.holds = []
        self.checker.owner_acted_at_start(self.acted_before())

    # -- the user's commands -------------------------------------------------------------------
    def cli(self, *args: str) -> tuple[int, str, str]:
        runner = CliRunner()
        with contextlib.chdir(self.project.root), runner.isolation() as (out, err, _):
            code = main(list(args))
            return code, out.getvalue().decode(), err.getvalue().decode()

    def run(self, options: list[str] | None = None) -> None:
        """`selfcorrect run workflow --format json [options]`; with `--validate-first` the
        project's validator runs inside it, and its report counts as the validator's."""
        self.checker.before_run(self._report())
        writes = len(self.checker.writes())
        code, out, err = self.cli("run", "workflow", "--format", "json", *(options or []))
        if len(self.checker.writes()) > writes:
            self.checker.validator_wrote()
        self.observe("run", code, out, err)

    def observe(self, label: str, code: int, out: str, err: str) -> None:
        self.run_no += 1
        _, status_text, _ = self.cli("status", "workflow", "--color", "never")
        obs = observe(self.run_no, label, code, out, err, status_text, self.project.workflow)
        obs.report_statuses = self.report_statuses()
        data = obs.data or {}
        self.log.append(
            f"{label} {self.run_no}: exit {code}, result {data.get('result')}, "
            f"cycles {data.get('cycles')}"
        )
        self.checker.check(obs)
        self.last = obs
        self.outcomes.append((f"{label} {self.run_no}", outcome(data)))

    def acted_before(self) -> set[str]:
        """The tasks whose agents acted before the scenario starts: the failures the project
        starts with (a real session's tasks all did)."""
        if self.spec["project"].get("copy_session"):
            return set(self.project.tasks)
        found = set()
        for entry in self.spec["project"].get("failures") or []:
            task = entry.get("task_id") or self.owners.get(str(entry.get("agent_id")))
            if task:
                found.add(str(task))
        return found

    def report_statuses(self) -> dict[str, str]:
        """Each work item's status on the HTML report page, as a browser's DOM holds it."""
        page = self.project.root.parent / "report.html"
        code, _, err = self.cli("report", "workflow", "-q", "-o", str(page))
        if code != 0:
            self.checker.expectation(self.last, f"report exited {code}: {err.strip()[-300:]}")
            return {}
        text = page.read_text(encoding="utf-8")
        return {
            html.unescape(item): status
            for item, status in re.findall(r'data-item="([^"]*)" data-status="([^"]*)"', text)
        }

    def validate(self) -> None:
        env = {**os.environ, "SELFCORRECT_DIR": str(self.project.workflow)}
        subprocess.run(
            [sys.executable, "tools/validator.py"],
            cwd=self.project.root,
            env=env,
            check=False,
            capture_output=True,
        )
        self.log.append("validator wrote a report")
        self.checker.validator_wrote()

    def agents_turn(self) -> None:
        """The agents' turn: every prompt that lets an agent act gets one, then each scripted
        agent does what its behaviour says."""
        recovery = self.project.workflow / "recovery"
        for path in sorted(recovery.glob("*.md")) if recovery.is_dir() else []:
            if may_act(path.read_text(encoding="utf-8", errors="replace")):
                self.checker.agent_turn(path.name)
        for agent in self.agents:
            self.log.append(f"agent {agent.item}: {agent.turn(self)}")
        self.checker.turn_ended()

    def _report(self) -> bytes | None:
        path = self.project.workflow / "validation_report.yaml"
        return path.read_bytes() if path.exists() else None

    def apply_fix(self, check_id: str) -> None:
        """Edit the project so check `check_id` passes, as the agent's fix would."""
        check = self.checks[check_id]
        root = self.project.root
        paths = sorted(root.glob(check["glob"])) if "glob" in check else [root / check["path"]]
        for path in paths:
            if "missing" in check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(check.get("content", "# Usage\n\nCall pkg.add.\n"))
            elif path.exists():
                old, new = check.get("replace") or (check["contains"], "")
                path.write_text(path.read_text().replace(old, new))

    def regress(self, check_id: str) -> None:
        """Undo what fixed check `check_id`: its files as the scenario started (a regression)."""
        check = self.checks[check_id]
        root = self.project.root
        if "missing" in check:
            (root / check["path"]).unlink(missing_ok=True)
            return
        paths = sorted(root.glob(check["glob"])) if "glob" in check else [root / check["path"]]
        rels = [p.relative_to(root).as_posix() for p in paths]
        subprocess.run(["git", "checkout", "-q", "HEAD", "--", *rels], cwd=root, check=True)

    def write_report(self, text: str) -> None:
        """Another writer (cAgents' safety-net hook, a person) leaves a report of its own."""
        (self.project.workflow / "validation_report.yaml").write_text(text, encoding="utf-8")
        self.log.append("someone else wrote validation_report.yaml")

    # -- the person ----------------------------------------------------------------------------
    def person(self, action: dict[str, Any]) -> None:
        ((kind, args),) = action.items()
        if kind == "reset":
            code, _out, err = self.cli(
                "reset",
                "workflow",
                "--subject",
                args["subject"],
                "--evidence",
                args["evidence"],
                "--actor",
                "sim-person",
            )
            self.log.append(f"person reset {args['subject']}: exit {code}")
            if code != 0:
                self.checker.expectation(
                    self.last, f"reset {args['subject']} exited {code}: {err.strip()[-300:]}"
                )
            self.checker.person_reset(args.get("item", args["subject"]), args["evidence"])
        elif kind == "resolve":
            ids = person.resolve_escalation(
                self.project.workflow, args["subject"], args["evidence"], bool(args.get("retry"))
            )
            self.log.append(f"person resolved {ids}")
            if not ids:
                self.checker.expectation(
                    self.last, f"no open escalation for {args['subject']} to resolve"
                )
            self.checker.person_reset(args["subject"], args["evidence"])
        elif kind == "final_status":
            found = person.set_final_status(self.project.workflow, args["task"], args["value"])
            self.log.append(f"person set {args['task']} final_status {args['value']}")
            if not found:
                self.checker.expectation(self.last, f"no failed_items entry for {args['task']}")
        else:
            raise ValueError(f"unknown person action {kind!r}")

    # -- watch ---------------------------------------------------------------------------------
    def watch(self, rounds: int) -> None:
        errors = self.project.root.parent / "watch-stderr.txt"
        with errors.open("w") as err_file:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "selfcorrect",
                    "watch",
                    "workflow",
                    "--format",
                    "json",
                    "--debounce",
                    "100",
                    "--color",
                    "never",
                ],
                cwd=self.project.root,
                stdout=subprocess.PIPE,
                stderr=err_file,
                text=True,
            )
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            self.checker.before_run(self._report())
            self._watched_runs(lines, "the start-up run", errors)
            for _ in range(rounds):
                self.checker.before_run(self._report())
                self.agents_turn()
                self.validate()
                self._watched_runs(lines, "the agents' and the validator's changes", errors)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(timeout=WATCH_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            reader.join(timeout=WATCH_WAIT_S)
            assert proc.stdout is not None
            proc.stdout.close()
            if code != 0:
                self.checker.expectation(
                    self.last,
                    f"watch stopped by SIGINT exited {code}: {errors.read_text().strip()[-300:]}",
                )

    def _watched_runs(self, lines: queue.Queue[str | None], what: str, errors: Path) -> None:
        """Observe the run the changes caused, and any that follow it before the watcher goes
        quiet (the agents' and the validator's writes may land in separate runs)."""
        wait = WATCH_WAIT_S
        seen = 0
        while True:
            try:
                line = lines.get(timeout=wait)
            except queue.Empty:
                line = None
            if line is None:
                break
            data = json.loads(line)
            self.observe("watch run", int(data.get("exit", -1)), line, "")
            seen += 1
            wait = WATCH_QUIET_S
        if not seen:
            self.checker.expectation(
                self.last,
                f"watch printed no JSON object for {what}: {errors.read_text().strip()[-300:]}",
            )

    # -- the agent's host (host.py sends the events) ------------------------------------
    def logged(
        self, agent: str | None, tool: str, tool_input: dict[str, Any], error: str, item: str | None
    ) -> None:
        """Tell the checker a failed call reached the log."""
        who = self.real(agent) or LEAD  # the lead is its session
        task = self.owners.get(who)
        path = tool_input.get("file_path")
        names = {str(n) for n in (item, task, path, tool) if n}
        self.checker.failure_logged(
            names, agent=who, tool=tool, error=error, owner_less=not task and not path
        )

    def shadow(self, label: str) -> dict[str, Any]:
        """What a run would say now (nothing written): the between-runs invariants on it."""
        _, out, _ = self.cli("run", "workflow", "--shadow", "--format", "json")
        data: dict[str, Any] = json.loads(out)
        self.checker.check_climbs(label, data)
        self.checker.check_agent_subjects(label, data)
        self.checker.check_one_climb_per_turn(label, data)
        return data

    def hook(self, args: dict[str, Any]) -> None:
        """A failed call reaches the failure hook; its answer must say what a run says. An
        interrupted call (`interrupt: true`) or a probe (`probe: true`: grep finding nothing)
        counts nothing."""
        for n in range(1, int(args.get("repeat", 1)) + 1):
            self.one_hook(
                {
                    **args,
                    "input": {
                        k: v.replace("{n}", str(n)) if isinstance(v, str) else v
                        for k, v in args["input"].items()
                    },
                }
            )

    def one_hook(self, args: dict[str, Any]) -> None:
        agent, interrupted = args.get("agent"), bool(args.get("interrupt"))
        real = self.real(agent)
        answer = self.host(
            "post-tool-use-failure",
            self.payload(
                "PostToolUseFailure",
                agent,
                tool_name=args["tool"],
                tool_input=args["input"],
                error=args["error"],
                is_interrupt=interrupted,
            ),
        )
        said = ((answer or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""
        self.log.append(f"hook for {agent or 'the lead'}: {said[:80]!r}")
        self.check_answer(args, said)
        self.acted(agent)
        if not interrupted and not args.get("probe"):
            self.logged(agent, args["tool"], args["input"], args["error"], args.get("item"))
            bound = next((t for t, a in self.bound.items() if a == real), None)
            logged = self.logged_task()
            if bound is not None and logged != bound:
                self.checker.expectation(
                    self.last,
                    f"{agent} ({real}), started for {bound} by the lead's Agent call, failed; "
                    f"the log attributes the failure to task {logged!r}",
                )
        self.checker.check_answer_is_own(real or LEAD, said)
        data = self.shadow(f"after hook event {self.host_calls} (hook)")
        item = args.get("item") or self.owners.get(real or LEAD)
        if item is not None:
            self.checker.check_answer_step(item, data, said)
        if args.get("item") is None:
            return
        statuses = [
            row["status"]
            for row in [*data.get("subjects", []), *data.get("issues", [])]
            if item in (row.get("subject"), row.get("task_id"))
        ]
        status = min(statuses, key=STATUS_ORDER.index) if statuses else "none"
        escalations = self.project.workflow / "escalations.yaml"
        esc = (yaml.safe_load(escalations.read_text()) if escalations.exists() else None) or {}
        opens = {
            str(e["id"])
            for e in esc.get("escalations") or []
            if e.get("status") == "open" and e.get("subject") == item
        }
        self.checker.check_hook_answer(item, status, opens, said)

    def check_answer(self, args: dict[str, Any], said: str) -> None:
        for text in args.get("answer_contains") or []:
            if text not in said:
                self.checker.expectation(self.last, f"the hook's answer lacks {text!r}: {said!r}")
        for text in args.get("answer_lacks") or []:
            if text in said:
                self.checker.expectation(
                    self.last, f"the hook's answer says {text!r}: {said[:300]!r}"
                )

    def success(self, args: dict[str, Any]) -> None:
        """Calls that worked reach the host's success hook (PostToolUse): `repeat: N` of them,
        taking `inputs` in turn (or `input` each time). Every answer must lack each text of
        `answer_lacks`; the last one must hold each of `answer_contains` (a loop named,
        docs/rules.md §7)."""
        inputs = args.get("inputs") or [args["input"]]
        count = int(args.get("repeat", 1))
        for n in range(count):
            tool_input = inputs[n % len(inputs)]
            answer = self.host(
                "post-tool-use",
                self.payload(
                    "PostToolUse",
                    args.get("agent"),
                    tool_name=args["tool"],
                    tool_input=tool_input,
                    tool_response=args.get("response", {"stdout": "ok", "stderr": ""}),
                ),
            )
            said = ((answer or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""
            who = args.get("agent") or "the lead"
            self.log.append(f"{who}: {args['tool']} worked {said[:80]!r}")
            self.check_answer(
                {"answer_lacks": args.get("answer_lacks"), "answer_contains": None}, said
            )
            if n == count - 1:
                self.check_answer({"answer_contains": args.get("answer_contains")}, said)
            self.acted(args.get("agent"))
            agent = self.real(args.get("agent")) or LEAD
            names = {args["tool"], tool_input.get("file_path"), self.owners.get(agent)}
            if "selfcorrect:" not in said:  # a call going on with a loop is no success
                self.checker.success_logged({str(n) for n in names if n}, agent)
            self.shadow(f"after hook event {self.host_calls} (success)")

    def batch(self, args: dict[str, Any]) -> None:
        """A batch whose calls the host rejected before they ran (PostToolBatch)."""
        agent = args.get("agent")
        calls = []
        for n, call in enumerate(args["calls"]):
            calls.append(
                {
                    "tool_name": call["tool"],
                    "tool_input": call["input"],
                    "tool_use_id": f"toolu_batch_{len(self.log)}_{n}",
                    "tool_response": f"<tool_use_error>{call['error']}</tool_use_error>",
                }
            )
            self.logged(agent, call["tool"], call["input"], call["error"], args.get("item"))
        self.acted(agent)
        self.host("post-tool-batch", self.payload("PostToolBatch", agent, tool_calls=calls))
        self.log.append(f"batch of {len(calls)} rejected call(s) for {agent or 'the lead'}")
        self.shadow(f"after hook event {self.host_calls} (batch)")

    def call(self, args: dict[str, Any]) -> None:
        """An agent is about to call a tool (PreToolUse): `denied` says what the gate must do."""
        answer = self.host(
            "pre-tool-use",
            self.payload(
                "PreToolUse", args.get("agent"), tool_name=args["tool"], tool_input=args["input"]
            ),
        )
        self.acted(args.get("agent"))
        out = (answer or {}).get("hookSpecificOutput") or {}
        denied = out.get("permissionDecision") == "deny"
        self.log.append(
            f"{args.get('agent')} calls {args['tool']}: {'denied' if denied else 'allowed'}"
        )
        if denied != bool(args.get("denied", False)):
            self.checker.expectation(
                self.last,
                f"the gate {'denied' if denied else 'allowed'} {args.get('agent')}'s "
                f"{args['tool']} {args['input']}: {out.get('permissionDecisionReason')!r}",
            )

    # -- the scenario's own checks -------------------------------------------------------------
    def expect(self, checks: list[dict[str, Any]]) -> None:
        obs = self.last
        data = (obs.data if obs else None) or {}
        for check in checks:
            ((kind, args),) = check.items()
            if kind == "failed_item_contains":
                entry = next(
                    (
                        e
                        for e in (obs.failed_items if obs else [])
                        if str(e.get("task_id")) == args["task"]
                    ),
                    None,
                )
                value = str((entry or {}).get(args["field"]))
                if args["text"] not in value:
                    self.checker.expectation(
                        obs,
                        f"failed_items[{args['task']}].{args['field']}"
                        f" = {value[:200]!r} lacks {args['text']!r}",
                    )
            elif kind == "prompt_contains":
                text = (obs.prompts if obs else {}).get(work_item_file(args["item"]), "")
                if args["text"] not in text:
                    self.checker.expectation(
                        obs, f"recovery/{work_item_file(args['item'])} lacks {args['text']!r}"
                    )
            elif kind == "prompt_lacks":
                text = (obs.prompts if obs else {}).get(work_item_file(args["item"]), "")
                if args["text"] in text:
                    self.checker.expectation(
                        obs, f"recovery/{work_item_file(args['item'])} says {args['text']!r}"
                    )
            elif kind == "split_by_type":
                tool = args["tool"]
                mine = [
                    s for s in data.get("subjects") or [] if str(s.get("subject")).startswith(tool)
                ]
                types = {s.get("failure_type") for s in mine}
                if len(mine) < args.get("at_least", 2) or len(types) != len(mine):
                    self.checker.expectation(
                        obs,
                        f"subjects of {tool}: "
                        f"{[(s.get('subject'), s.get('failure_type')) for s in mine]}"
                        f"; expected one per failure type, at least "
                        f"{args.get('at_least', 2)}",
                    )
            elif kind == "subject":
                match = [
                    s
                    for s in data.get("subjects") or []
                    if args["match"] in str(s.get("subject"))
                    and s.get("failure_type") == args.get("failure_type", s.get("failure_type"))
                ]
                if args.get("exists", True) and not match:
                    self.checker.expectation(
                        obs,
                        f"no subject matching {args['match']!r} "
                        f"of type {args.get('failure_type', 'any')}",
                    )
                self.expect_fields(obs, f"subject {args['match']}", match, args)
            elif kind == "issue":  # issues whose description, fingerprint or task has `match`
                match = [
                    i
                    for i in data.get("issues") or []
                    if any(
                        args["match"] in str(i.get(k) or "")
                        for k in ("description", "fingerprint", "task_id")
                    )
                ]
                if args.get("exists", True) and not match:
                    self.checker.expectation(obs, f"no issue matching {args['match']!r}")
                self.expect_fields(obs, f"issue {args['match']}", match, args)
            elif kind == "file_absent":
                if (self.project.workflow / args).exists():
                    self.checker.expectation(obs, f"workflow/{args} still exists")
            elif kind == "file_exists":
                if not (self.project.workflow / args).exists():
                    self.checker.expectation(obs, f"workflow/{args} does not exist")
            elif kind == "result_is":
                if data.get("result") != args or obs is None or obs.exit_code != RESULT_EXIT[args]:
                    self.checker.expectation(
                        obs,
                        f"result {data.get('result')} (exit {obs.exit_code if obs else None}), "
                        f"expected {args}",
                    )
            elif kind == "task_has_subject":
                task = args["task"]
                mine = [
                    s
                    for s in data.get("subjects") or []
                    if s.get("task_id") == task or str(s.get("subject")).split(" ")[0] == task
                ]
                if not mine:
                    names = [s.get("subject") for s in data.get("subjects") or []]
                    self.checker.expectation(
                        obs, f"no failure subject is attributed to {task}; subjects: {names}"
                    )
            elif kind == "escalation_lacks":  # no escalation of the item says the text
                for esc in obs.escalations if obs else []:
                    if str(esc.get("subject")) == args["item"] and args["text"] in json.dumps(esc):
                        self.checker.expectation(
                            obs, f"{esc.get('id')} of {args['item']} says {args['text']!r}"
                        )
            elif kind == "no_escalation":  # no open escalation at all
                opens = [e for e in (obs.escalations if obs else []) if e.get("status") == "open"]
                if opens:
                    said = [(e.get("id"), e.get("subject"), e.get("reason")) for e in opens]
                    self.checker.expectation(obs, f"escalations are open: {said}")
            elif kind == "result_not":
                if data.get("result") in args:
                    self.checker.expectation(obs, f"result {data.get('result')}")
            else:
                raise ValueError(f"unknown expectation {kind!r}")

    def expect_fields(
        self, obs: Observation | None, what: str, rows: list[dict[str, Any]], args: dict[str, Any]
    ) -> None:
        """`absent` (no row), `not` (no row has the value), `equals` (every row has it),
        `at_most` (no row above)."""
        if args.get("absent") and rows:
            names = [r.get("subject") or r.get("fingerprint") for r in rows]
            self.checker.expectation(obs, f"{what}: {names} exist; expected none")
        for field_name, unwanted in args.get("not", {}).items():
            got = [r.get(field_name) for r in rows]
            if unwanted in got:
                self.checker.expectation(obs, f"{what}: {field_name} {got}, never {unwanted!r}")
        for field_name, wanted in args.get("equals", {}).items():
            got = [r.get(field_name) for r in rows]
            if not rows or any(g != wanted for g in got):
                self.checker.expectation(obs, f"{what}: {field_name} {got}, expected {wanted!r}")
        for field_name, most in args.get("at_most", {}).items():
            got = [r.get(field_name) for r in rows]
            if any(isinstance(g, int) and g > most for g in got):
                self.checker.expectation(obs, f"{what}: {field_name} {got}, at most {most}")

    # -- playing -------------------------------------------------------------------------------
    def play(self) -> list[str]:
        self.start_session()
        try:
            self.play_steps()
        finally:
            self.end_session()
        return self.checker.messages()

    def play_steps(self) -> None:
        for step in self.spec["steps"]:
            if step == "validate":
                self.validate()
            elif step == "run":
                self.run()
            elif step == "agents":
                self.agents_turn()
            elif isinstance(step, dict) and "round" in step:
                for _ in range(int(step["round"])):
                    self.agents_turn()
                    self.validate()
                    self.run()
            elif isinstance(step, dict) and "person" in step:
                self.person(step["person"])
            elif isinstance(step, dict) and "watch" in step:
                self.watch(int(step["watch"].get("rounds", 1)))
            elif isinstance(step, dict) and "run" in step:
                self.run(list(step["run"].get("options") or []))
            elif step == "ci_validate":  # the validator re-run with no agent turn, then a run
                self.log.append("CI re-runs the validator; no agent had a turn")
                self.validate()
                self.run()
            elif isinstance(step, dict) and "fix" in step:  # someone else fixes the project
                for check_id in step["fix"]:
                    self.apply_fix(check_id)
                self.log.append(f"fixed by hand: {step['fix']}")
            elif isinstance(step, dict) and "regress" in step:
                for check_id in step["regress"]:
                    self.regress(check_id)
                self.log.append(f"regressed: {step['regress']}")
            elif isinstance(step, dict) and "report" in step:
                self.write_report(step["report"])
            elif isinstance(step, dict) and "hook" in step:
                self.hook(step["hook"])
            elif isinstance(step, dict) and "success" in step:
                self.success(step["success"])
            elif isinstance(step, dict) and "batch" in step:
                self.batch(step["batch"])
            elif isinstance(step, dict) and "call" in step:
                self.call(step["call"])
            elif isinstance(step, dict) and "stop" in step:
                self.stop(step["stop"])
            elif step == "lead_stop" or (isinstance(step, dict) and "lead_stop" in step):
                self.lead_stop(step["lead_stop"] or {} if isinstance(step, dict) else {})
            elif isinstance(step, dict) and "spawn" in step:
                self.spawn(step["spawn"])
            elif isinstance(step, dict) and "verify" in step:
                self.verify(step["verify"] or {})
            elif isinstance(step, dict) and "burst" in step:  # n failed calls in one turn
                burst = step["burst"]
                self.hook({**burst, "repeat": int(burst.get("n", 8))})
            elif isinstance(step, dict) and "expect" in step:
                self.expect(step["expect"])
            else:
                raise ValueError(f"{self.name}: unknown step {step!r}")


def outcome(data: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """What a run decided, per item: each part's kind, status, ladder step and attempts."""
    items: dict[str, list[tuple[Any, ...]]] = {}
    for kind in ("issues", "subjects"):
        for part in data.get(kind) or []:
            item = str(part.get("task_id") or part.get("subject") or part.get("fingerprint"))
            row = (kind, part.get("status"), part.get("ladder_step"), part.get("attempts"))
            items.setdefault(item, []).append(row)
    return {item: sorted(rows, key=repr) for item, rows in sorted(items.items())}
