"""The agent host as Claude Code (2.1.x) runs a session: its hooks, its agents, its turns.

Every hook is the real command in a subprocess with the event on stdin, shaped as the host sends
it (`session_id`, `transcript_path`, `cwd`, `permission_mode`, `hook_event_name`, `prompt_id`,
and for a subagent `agent_id` and `agent_type`; a call's `tool_use_id`). A session runs in one
of two modes (docs/simulator.md, "Cold and warm"):
- cold: every hook runs in-process, a fresh interpreter each;
- warm: a `session-start` hook first, so the deciding hooks are answered by the folder's warm
  answerer (selfcorrect/hooks/warm_server.py); `session-end` at the end, after which no
  answerer may be left running, and it must have answered every deciding hook sent.

The lead has no `agent_id`; each user turn of the lead has its own `prompt_id`, shared by every
hook of that turn, holds and continuations included. A subagent is started by the lead's
`Agent` call naming its task (`spawn`), and gets a new random id every time.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from selfcorrect.hooks import warm_client
from selfcorrect.hooks.dispatch import SESSION, WARM
from selfcorrect.hooks.events import input_digest, parse_event
from selfcorrect.hooks.success import awaited
from selfcorrect.layout import work_item_file

WATCH_WAIT_S = 60.0  # a guard against a hung hook, never an assertion about speed
ANSWERER_WAIT_S = 30.0  # a guard: how long to wait for the answerer to come up or go
LEAD = "sim"  # the lead agent: the session's id, as the log names it
CONTROLLER = "cagents:tech-lead"  # the coordination log's controller (project.py)


class HostSession:
    """The host's side of a Simulation (scenario.py mixes it in)."""

    # set by Simulation.__init__
    project: Any
    checker: Any
    log: list[str]
    last: Any
    spec: dict[str, Any]
    name: str

    def init_host(self, mode: str) -> None:
        if mode not in ("cold", "warm"):
            raise ValueError(f"unknown mode {mode!r}")
        self.mode = mode
        self.rng = random.Random(f"loop-sim {self.name}")  # the same ids in both modes
        self.host_calls = 0  # hook events sent, to name the look after each
        self.deciding_sent = 0  # of them, the deciding hooks (answered warm in warm mode)
        self.answered_in_process = 0  # of those, how many gave up on the answerer and said so
        self.unawaited_successes = 0  # successes the gate's state did not await when sent
        self.prompt_id = self.new_id("prompt")
        self.alias: dict[str, str] = {}  # a scenario's name for a subagent -> its real id
        self.agent_types: dict[str, str] = {}  # real id -> agent_type
        self.bound: dict[str, str] = {}  # task -> the real id of the subagent spawned for it
        self.holds: set[str] = set()  # open work a stop hook held an agent for, once each
        self.transcripts = self.project.root.parent / "transcripts"
        self.transcripts.mkdir(exist_ok=True)
        (self.transcripts / f"{LEAD}.jsonl").touch()
        tasks = self.spec["project"].get("tasks") or []
        # agent id -> the task it works (the coordination log's agent_id)
        self.owners = {str(t["agent_id"]): str(t["task_id"]) for t in tasks if t.get("agent_id")}
        self.assigned = {str(t["task_id"]): t.get("assigned_to") for t in tasks}

    def new_id(self, kind: str) -> str:
        if kind == "agent":  # Claude Code's subagent ids: `a` and 16 hex digits
            return "a" + "".join(self.rng.choice("0123456789abcdef") for _ in range(16))
        return "%08x-%04x-4%03x-8%03x-%012x" % (  # noqa: UP031 - a uuid4's shape
            self.rng.getrandbits(32),
            self.rng.getrandbits(16),
            self.rng.getrandbits(12),
            self.rng.getrandbits(12),
            self.rng.getrandbits(48),
        )

    def real(self, agent: str | None) -> str | None:
        """The id the host sends for a scenario's agent name (a spawned one's random id)."""
        return self.alias.get(agent, agent) if agent else None

    # -- whose work an item is -----------------------------------------------------------------
    def owner_of(self, task: str) -> str | None:
        """The agent that owns a task: the subagent spawned for it, else the coordination log's
        agent_id, else the lead for a task assigned to the controller or to nobody; None while
        the agent of the type it is assigned to never started."""
        if task in self.bound:
            return self.bound[task]
        for agent, owned in self.owners.items():
            if owned == task:
                return agent
        return LEAD if self.assigned.get(task) in (None, CONTROLLER) else None

    def items_of(self, agent: str) -> set[str]:
        """The tasks `agent` (a real id, or LEAD) owns."""
        return {task for task in self.assigned if self.owner_of(task) == agent}

    def acted(self, agent: str | None) -> None:
        """`agent` (None: the lead) acted: its items' owner had a turn."""
        who = self.real(agent) or LEAD
        self.checker.owner_acted(self.items_of(who), who)

    # -- the session -----------------------------------------------------------------------------
    def start_session(self) -> None:
        if self.mode != "warm":
            return
        self.host(
            "session-start",
            self.payload("SessionStart", None, tool_use=False, source="startup", model="sim"),
        )
        if not self.wait(lambda: warm_client.status(str(self.project.workflow)) is not None):
            self.checker.expectation(self.last, "no warm answerer came up after session-start")
        self.log.append("session started (warm)")

    def end_session(self) -> None:
        if self.mode != "warm":
            return
        folder = str(self.project.workflow)
        self.host("session-end", self.payload("SessionEnd", None, tool_use=False, reason="other"))
        if not self.wait(lambda: warm_client.status(folder) is None):
            self.checker.expectation(self.last, "the warm answerer outlived session-end")
        last = self.project.workflow / ".selfcorrect" / "warm" / "last.json"
        stopped = json.loads(last.read_text("utf-8")) if last.exists() else {}
        self.log.append(f"session ended: the answerer served {stopped.get('served')}")
        # Every deciding hook sent was served. More may have been: delivery is at least once
        # (a hook whose wait ran out on a loaded machine runs in-process, and says so), and a
        # success the gate's state did not await when this host looked may be awaited when
        # the hook looks, a moment later (a watcher's run rewrote the state between).
        served = stopped.get("served")
        most = self.deciding_sent + self.answered_in_process + self.unawaited_successes
        if not (isinstance(served, int) and self.deciding_sent <= served <= most):
            self.checker.expectation(
                self.last,
                f"the warm answerer served {stopped.get('served')} hook(s) of the "
                f"{self.deciding_sent} deciding hook(s) sent ({stopped})",
            )
        self.wait(lambda: not answerers(self.project.root))
        for pid in answerers(self.project.root):
            os.kill(pid, signal.SIGKILL)
            self.checker.expectation(self.last, f"a warm answerer (pid {pid}) was left running")

    @staticmethod
    def wait(check: Any) -> bool:
        deadline = time.monotonic() + ANSWERER_WAIT_S
        while not check():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def _awaited(self, payload: dict[str, Any]) -> bool:
        """Whether the gate's state awaits this successful call (it will log and decide)."""
        event = parse_event(json.dumps(payload))
        return awaited(event, str(self.project.root / "workflow"))

    # -- the hooks -------------------------------------------------------------------------------
    def host(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The real hook, as the host runs it: a subprocess with the event on stdin."""
        if event not in SESSION:  # warm and cold name their looks alike
            self.host_calls += 1
        if event in WARM or (event == "post-tool-use" and self._awaited(payload)):
            self.deciding_sent += 1  # a success the gate awaits is logged and decided too
        elif event == "post-tool-use":
            self.unawaited_successes += 1
        env = {**os.environ, "CLAUDE_PROJECT_DIR": str(self.project.root)}
        env.pop("SELFCORRECT_LOCK_HOLDER", None)
        done = subprocess.run(
            [sys.executable, "-m", "selfcorrect", "hook", "claude-code", event, "workflow"],
            cwd=self.project.root,
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            timeout=WATCH_WAIT_S,
            check=False,
        )
        if done.returncode != 0:
            self.checker.expectation(self.last, f"hook {event} exited {done.returncode}")
        if "answered in-process" in done.stderr:
            self.answered_in_process += 1
        if "warm answerer" in done.stderr:
            self.checker.expectation(self.last, f"hook {event}: {done.stderr.strip()[-300:]}")
        return json.loads(done.stdout) if done.stdout.strip() else None

    def payload(
        self, event: str, agent: str | None, *, tool_use: bool = True, **fields: Any
    ) -> dict[str, Any]:
        """An event as the host sends it: the lead's carries no agent_id, a subagent's its id
        and type."""
        real = self.real(agent)
        base: dict[str, Any] = {
            "session_id": LEAD,
            "transcript_path": str(self.transcripts / f"{LEAD}.jsonl"),
            "cwd": str(self.project.root),
            "permission_mode": "default",
            "hook_event_name": event,
            "prompt_id": self.prompt_id,
        }
        if real:
            base["agent_id"] = real
            base["agent_type"] = self.agent_types.get(real, "general-purpose")
        if tool_use:
            base["tool_use_id"] = f"toolu_sim_{self.host_calls + 1:04d}_{len(self.log)}"
        return {**base, **fields}

    # -- the lead hands work out -------------------------------------------------------------------
    def spawn(self, args: dict[str, Any]) -> None:
        """The lead's Agent call naming the task (PreToolUse, PostToolUse), then SubagentStart
        of a new subagent (unless `starts: false`), whose later hooks carry its id."""
        task, kind = str(args["task"]), str(args.get("agent_type", "general-purpose"))
        name = str(args.get("as", kind))
        tool_input = {
            "description": f"Work on {task}",
            "prompt": args.get("prompt", f"You are the {kind}. Work on {task}: {task}'s "
                                         "acceptance criteria, then verify and report back."),
            "subagent_type": kind,
            "run_in_background": True,
        }  # fmt: skip
        call = self.payload("PreToolUse", None, tool_name="Agent", tool_input=tool_input)
        answer = self.host("pre-tool-use", call)
        if ((answer or {}).get("hookSpecificOutput") or {}).get("permissionDecision") == "deny":
            self.checker.expectation(self.last, f"the gate denied the lead's Agent call: {answer}")
        response = {
            "status": "async_launched",
            "agentId": "",
            "description": tool_input["description"],
        }
        self.host(
            "post-tool-use",
            {**call, "hook_event_name": "PostToolUse", "tool_response": response},
        )
        self.acted(None)
        if args.get("starts", True) is False:
            self.log.append(f"the lead's Agent call for {task}: no subagent started")
            return
        real = self.new_id("agent")
        self.alias[name], self.agent_types[real] = real, kind
        self.bound[task] = real
        self.owners[real] = task
        (self.transcripts / f"agent-{real}.jsonl").touch()
        self.host("subagent-start", self.payload("SubagentStart", name, tool_use=False))
        self.log.append(f"the lead spawned {name} ({real}, {kind}) for {task}")

    def lead_stop(self, args: dict[str, Any]) -> None:
        """The lead's Stop: held exactly while some task has work out it was not held for yet;
        when held, the host continues in the same turn and stops again with stop_hook_active."""
        self.stop_hook(None, args)
        self.prompt_id = self.new_id("prompt")  # the user's next turn

    def stop(self, args: dict[str, Any]) -> None:
        """A subagent stops (SubagentStop), ending its turn; held as the lead's stop is, for its
        own tasks' work."""
        self.stop_hook(str(args["agent"]), args)

    def stop_hook(self, agent: str | None, args: dict[str, Any]) -> None:
        real = self.real(agent)
        gate_file = self.project.workflow / ".selfcorrect" / "gate.json"
        gate = json.loads(gate_file.read_text()) if gate_file.exists() else {}
        tasks = gate.get("tasks") or {}
        mine = {
            task: facts
            for task, facts in tasks.items()
            if real is None or real in (facts.get("agents") or []) or self.bound.get(task) == real
        }
        work = {key for task, facts in mine.items() for key in open_work(task, facts)}
        due = bool(work - self.holds)
        event, name = ("SubagentStop", "subagent-stop") if real else ("Stop", "stop")
        extra: dict[str, Any] = {"stop_hook_active": False}
        if real:
            extra["agent_transcript_path"] = str(self.transcripts / f"agent-{real}.jsonl")
            extra["last_assistant_message"] = "Done."
        payload = self.payload(event, agent, tool_use=False, **extra)
        first = self.host(name, payload)
        held = first is not None and first.get("decision") == "block"
        who = agent or "the lead"
        self.log.append(f"{who} stops: {'held' if held else 'let go'}")
        self.checker.record_hold(who, held)
        owned = self.items_of(real or LEAD) | (
            {self.owners[real]} if real in self.owners else set()
        )
        for task in owned:  # the end of a turn of its owner, as an agents step is
            self.checker.agent_turn(work_item_file(task))
        self.checker.turn_ended(owned, real or LEAD)
        if "held" in args and held != args["held"]:
            self.checker.expectation(
                self.last,
                f"the stop hook {'held' if held else 'let go'} {who}: "
                f"{(first or {}).get('reason')!r}",
            )
        if held != due:
            self.checker.expectation(
                self.last,
                f"the stop hook {'held' if held else 'let go'} {who} while gate.json says its "
                f"work out is {sorted(work)}, held for before: {sorted(work & self.holds)}",
            )
        if held:
            self.holds |= work
        for text in args.get("reason_contains") or []:
            if text not in str((first or {}).get("reason")):
                self.checker.expectation(self.last, f"the stop hook's reason lacks {text!r}")
        if not held:
            return
        # The host goes on in the same turn; the agent stops again, a stop hook being active.
        again = self.host(name, {**payload, "stop_hook_active": True})
        self.log.append(f"{who} stops again (stop_hook_active): {'held' if again else 'let go'}")
        self.checker.turn_ended(owned, real or LEAD)
        if again is not None:
            self.checker.expectation(
                self.last, f"the stop hook held {who} again while a stop hook was active: {again}"
            )

    # -- what agents run -----------------------------------------------------------------------
    def verify(self, args: dict[str, Any]) -> None:
        """The agent runs the verification its prompt names (the policy's validator command)
        through Bash; it exits 1 while issues are open, and the host sends that as a failed
        call with the real command line and the validator's real output."""
        agent = args.get("agent")
        argv = (self.project.policy.get("validator") or {}).get("command") or [
            "selfcorrect",
            "validate",
            "workflow",
        ]
        command = shlex.join(str(a) for a in argv)
        run = list(argv) if argv[0] != "selfcorrect" else [sys.executable, "-m", *argv]
        done = subprocess.run(
            [str(a) for a in run],
            cwd=self.project.root,
            capture_output=True,
            text=True,
            timeout=WATCH_WAIT_S,
            check=False,
        )
        self.checker.validator_wrote()
        self.log.append(f"{agent or 'the lead'} ran {command}: exit {done.returncode}")
        self.acted(agent)
        if done.returncode == 0:
            return  # a passing verification is a call that worked
        output = (done.stdout + done.stderr).strip()
        error = (
            f"Exit code {done.returncode}\n{output}" if output else f"Exit code {done.returncode}"
        )
        self.verifications.append(error)
        answer = self.host(
            "post-tool-use-failure",
            self.payload(
                "PostToolUseFailure",
                agent,
                tool_name="Bash",
                tool_input={"command": command, "description": "Run the verification"},
                error=error,
                is_interrupt=False,
            ),
        )
        said = ((answer or {}).get("hookSpecificOutput") or {}).get("additionalContext") or ""
        if said:
            self.checker.expectation(
                self.last, f"the failure hook answered a verification run: {said[:200]!r}"
            )
        # A verification that finds open issues is no failure of the agent's (docs/simulator.md)
        entry = self.last_entry()
        if entry.get("outcome") != "verification":
            self.checker.expectation(
                self.last,
                f"{agent or 'the lead'}'s verification run ({command}) was logged as "
                f"outcome {entry.get('outcome')!r}, not 'verification'",
            )
        gate_file = self.project.workflow / ".selfcorrect" / "gate.json"
        gate = json.loads(gate_file.read_text()) if gate_file.exists() else {}
        digest = input_digest({"command": command}, "Bash")
        counted = [r for r in gate.get("repeats") or [] if r.get("input_digest") == digest]
        if counted:
            self.checker.expectation(
                self.last, f"gate.json counts the verification run as a failing call: {counted}"
            )
        self.shadow(f"after hook event {self.host_calls} (verify)")

    def logged_task(self) -> str | None:
        """The task_id of the last entry the log holds."""
        task = self.last_entry().get("task_id")
        return str(task) if task is not None else None

    def last_entry(self) -> dict[str, Any]:
        """The last entry of tool_failures.yaml (either form), or {}."""
        path = self.project.workflow / "tool_failures.yaml"
        text = path.read_text("utf-8") if path.exists() else ""
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            return {}
        entries = (doc.get("failures") or []) if isinstance(doc, dict) else []
        return entries[-1] if entries and isinstance(entries[-1], dict) else {}

    # stubs the Simulation provides
    verifications: list[str]

    def shadow(self, label: str) -> dict[str, Any]:
        raise NotImplementedError


def open_work(task: str, facts: dict[str, Any]) -> list[str]:
    """The work a stop hook holds an agent for, once each (hooks/stop.py's keys): a task's
    pending micro-tasks, else its directive."""
    pending = facts.get("microtasks_pending")
    if isinstance(pending, int) and pending > 0:
        return [f"{task}|microtasks|{pending}|{facts.get('microtasks')}"]
    if facts.get("directive") and facts.get("prompt"):
        return [f"{task}|directive|{facts['directive']}"]
    return []


def answerers(root: Path) -> list[int]:
    """Pids of warm answerer processes serving a folder under `root` (from /proc)."""
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"selfcorrect.hooks.warm_server" in words and any(
            str(root).encode() in w for w in words
        ):
            found.append(int(entry.name))
    return found
