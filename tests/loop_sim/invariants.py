"""What the simulator observes after each run, and the invariants it checks on it.

Every run of selfcorrect is observed through every rendering a user or an agent sees: the
terminal (`selfcorrect status DIR`), the run's `--format json` object and its advisories,
`failed_items` in coordination_log.yaml, `escalations.yaml`, `recovery/<item>.md`, the gate's
state (`.selfcorrect/gate.json`) and each agent hook's answer. The checks below are the
closed loop's invariants (docs/simulator.md lists them); each violation names the scenario, the run,
the work item and the renderings that disagree.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from selfcorrect.layout import work_item_file

# Most severe first: a work item's status is the most severe of its parts (docs/prompts.md).
STATUSES = ("blocked", "skipped", "recovering", "pending", "recovered")
ACTING = ("recovering", "pending")
RESULT_EXIT = {"PASS": 0, "BLOCKED": 1, "PENDING": 3}
# The report page also shows what no decision covers, in the JSON's words: failures under
# budget are `pending` there, a subject that succeeds since is `recovered`.
REPORT_WORDS = {"failing": "pending", "ok": "recovered"}
NON_AGENT_STRATEGIES = {"autofix", "escalate", "restructure_to_template"}
# Where each type enters the ladder (docs/policy.md: unguided attempts, then the ladder).
ENTRY_STEP = {"resource_exhaustion": 5, "timeout": 3}
NO_LADDER = {"external_dependency"}
STEP_WORDS = (
    (1, "re-read"),
    (2, "execution log"),
    (3, "combine successes"),
    (4, "opposite"),
    (5, "radical simplification"),
    (6, "escalat"),
)
TOOL_NAMES = {
    "Bash",
    "Read",
    "Edit",
    "Write",
    "MultiEdit",
    "Grep",
    "Glob",
    "LS",
    "WebFetch",
    "WebSearch",
    "Task",
    "NotebookEdit",
    "TodoWrite",
}

INVARIANTS = {
    "0": "the run accepts valid inputs and its exit code matches its result",
    "1": "no agent attempt spent without an agent turn (nor an autofix one without a fix)",
    "2": "the ladder (steps 1..5) runs before a person is paged; the ceiling escalates",
    "3": "every rendering agrees for every work item (terminal, JSON, advisory, failed_items, "
    "escalations, prompt, gate.json, hook answers)",
    "4": "an episode's correction cycles stay within caps.global_cycles",
    "5": "PASS only from a fresh report by the validator that found the issues",
    "6": "a person's evidence heads the next prompt of the item they reset",
    "7": "prompt attempt counts agree with the JSON attempts",
    "E": "the scenario's own expectations",
}


@dataclass
class Violation:
    invariant: str
    message: str  # names the scenario, the run(s), the work item and the renderings
    runs: list[str] = field(default_factory=list)


@dataclass
class Part:
    kind: str  # issue | subject
    names: list[str]  # how the terminal may name it
    status: str
    attempts: int | None
    raw: dict[str, Any]


@dataclass
class Observation:
    run: int
    label: str
    exit_code: int
    stdout: str
    stderr: str
    data: dict[str, Any] | None
    status_text: str
    failed_items: list[dict[str, Any]]
    escalations: list[dict[str, Any]]
    prompts: dict[str, str]
    report: bytes | None
    gate: dict[str, Any] | None = None  # .selfcorrect/gate.json as the run left it
    report_statuses: dict[str, str] | None = None  # the HTML report's item -> status


def observe(
    run: int, label: str, code: int, out: str, err: str, status_text: str, workflow: Path
) -> Observation:
    try:
        data = json.loads(out) if out.strip() else None
    except ValueError:
        data = None
    log = _yaml(workflow / "coordination_log.yaml") or {}
    esc = _yaml(workflow / "escalations.yaml") or {}
    prompts = {
        p.name: p.read_text(encoding="utf-8", errors="replace")
        for p in sorted((workflow / "recovery").glob("*.md"))
    }
    report = workflow / "validation_report.yaml"
    gate_file = workflow / ".selfcorrect" / "gate.json"
    gate = json.loads(gate_file.read_text("utf-8")) if gate_file.is_file() else None
    return Observation(
        run,
        label,
        code,
        out,
        err,
        data,
        status_text,
        list(log.get("failed_items") or []) if isinstance(log, dict) else [],
        list(esc.get("escalations") or []) if isinstance(esc, dict) else [],
        prompts,
        report.read_bytes() if report.exists() else None,
        gate,
    )


def _yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    except yaml.YAMLError:
        return None


def most_severe(statuses: list[str]) -> str:
    known = [s for s in statuses if s in STATUSES]
    odd = sorted({s for s in statuses if s not in STATUSES})
    if odd:
        return "/".join(odd)  # outside the vocabulary: never agrees with anything
    return min(known, key=STATUSES.index) if known else "absent"


def first_line(text: str) -> str:
    return text.splitlines()[0].strip() if text.strip() else ""


# Diagnosis only, never in CI: LOOP_SIM_ACT_ON_ANY_PROMPT=1 lets agents act on a prompt that has
# no STATUS line at all (prompts written before docs/prompts.md's contract), to see how the rest
# of the loop behaves once agents get going. A STATUS line that forbids acting is still obeyed.
ACT_ON_ANY_PROMPT = os.environ.get("LOOP_SIM_ACT_ON_ANY_PROMPT") == "1"


def may_act(prompt: str) -> bool:
    """The prompt's first line lets an agent act (STATUS: recovering or pending)."""
    line = first_line(prompt)
    if ACT_ON_ANY_PROMPT and not line.startswith("STATUS:"):
        return True
    return line.startswith(tuple(f"STATUS: {s}" for s in ACTING))


def report_status(data: bytes | None) -> str:
    """PASS, FIXABLE, BLOCKED... as the report on disk says (either form), or '' when none."""
    if data is None:
        return ""
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError:
        return ""
    if not isinstance(doc, dict):
        return ""
    verdict = str(doc.get("status") or doc.get("classification") or "").upper()
    if verdict == "PASS" and (doc.get("issues") or _dialect_issues(doc)):
        return "FIXABLE"
    return verdict


def _dialect_issues(doc: dict[str, Any]) -> bool:
    found = doc.get("issues_found")
    return isinstance(found, dict) and any(found.get(k) for k in ("critical", "major"))


def report_validator(data: bytes | None) -> str:
    try:
        doc = yaml.safe_load(data or b"")
    except yaml.YAMLError:
        return ""
    if not isinstance(doc, dict):
        return ""
    return str(doc.get("validator") or doc.get("generated_by") or "")


@dataclass
class Checker:
    """Carries what the invariants need across runs: turns, ladder steps, episodes."""

    scenario: str
    workflow: Path
    tasks: list[str]
    policy: dict[str, Any]
    validator_name: str
    validator_log: Path
    violations: list[Violation] = field(default_factory=list)
    turns: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    issue_attempts: dict[str, int] = field(default_factory=dict)
    steps_seen: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    last_step: dict[tuple[str, str], int | None] = field(default_factory=dict)
    new_failures: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    guidance: dict[str, str] = field(default_factory=dict)
    episode_open: bool = False
    episode_cycles: int = 0
    episode_start_write: int = 0
    runs: int = 0
    fixer_lines: int = 0
    _seen: dict[tuple[str, str | None, str], Violation] = field(default_factory=dict)
    # Tasks some run listed: only those can have been finished by the loop. A failed_items
    # entry another writer left before selfcorrect ran (cAgents' controller writes some) is
    # not one of selfcorrect's renderings.
    listed: set[str] = field(default_factory=set)

    # -- bookkeeping the simulation reports --------------------------------------------------
    def agent_turn(self, prompt_file: str) -> None:
        """The agents had a turn on this prompt (recovery/<file>), which let them act."""
        self.turns[prompt_file] += 1

    def failure_appended(self, subject: str) -> None:
        self.new_failures[subject] += 1

    def person_reset(self, item: str, evidence: str) -> None:
        self.guidance[item] = evidence
        self.issue_attempts = {k: v for k, v in self.issue_attempts.items() if item not in k}
        for key in [k for k in self.steps_seen if k[0] == item]:
            self.steps_seen[key] = []
            self.last_step[key] = None
        self.episode_open = False  # a person's reset ends the episode (docs/policy.md)
        self.episode_cycles = 0

    def before_run(self, report: bytes | None) -> None:
        verdict = report_status(report)
        if verdict == "PASS":
            self.episode_open, self.episode_cycles = False, 0
        elif verdict and not self.episode_open:
            self.episode_open, self.episode_cycles = True, 0
            self.episode_start_write = len(self._writes())

    def _fixer_runs(self) -> dict[str, int]:
        """Executions of the project's autofixer per target since the previous run."""
        log = self.validator_log.parent / "fixer-runs.log"
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        fresh, self.fixer_lines = lines[self.fixer_lines :], len(lines)
        counts: dict[str, int] = defaultdict(int)
        for target in fresh:
            counts[target] += 1
        return counts

    def _writes(self) -> list[tuple[str, str]]:
        lines = self.validator_log.read_text(encoding="utf-8").split()
        return list(zip(lines[::2], lines[1::2], strict=False))

    def fail(self, obs: Observation, invariant: str, item: str | None, message: str) -> None:
        """Record a violation; the same one seen again in a later run adds that run to it."""
        run = f"{obs.label} {obs.run}"
        key = (invariant, item, message)
        if key in self._seen:
            self._seen[key].runs.append(run)
            return
        where = f", work item {item}" if item is not None else ""
        violation = Violation(
            invariant, f"[{invariant}] scenario {self.scenario}, {{runs}}{where}: {message}", [run]
        )
        self._seen[key] = violation
        self.violations.append(violation)

    def expectation(self, obs: Observation | None, message: str) -> None:
        run = f"after {obs.label} {obs.run}" if obs else "before any run"
        self.violations.append(
            Violation("E", f"[E] scenario {self.scenario}, {{runs}}: {message}", [run])
        )

    def messages(self) -> list[str]:
        return [v.message.replace("{runs}", ", ".join(v.runs)) for v in self.violations]

    # -- the invariants ------------------------------------------------------------------------
    def check(self, obs: Observation) -> None:
        self.runs += 1
        data = obs.data
        if data is None:
            self.fail(
                obs,
                "0",
                None,
                f"no JSON object (exit {obs.exit_code}): {obs.stderr.strip()[-300:]!r}",
            )
            return
        expected = RESULT_EXIT.get(str(data.get("result")))
        if obs.exit_code != expected or obs.exit_code == 2:
            self.fail(
                obs,
                "0",
                None,
                f"result {data.get('result')} with exit {obs.exit_code}"
                f" (stderr {obs.stderr.strip()[-300:]!r})",
            )
        items = self.work_items(data)
        self.check_attempts_need_turns(obs, data)
        self.check_ladder(obs, data)
        self.check_renderings(obs, items)
        self.check_cycles(obs, data)
        self.check_pass(obs, data)
        self.check_guidance(obs)
        self.check_counts(obs, items)
        self.turns.clear()
        self.new_failures.clear()

    def work_items(self, data: dict[str, Any]) -> dict[str, list[Part]]:
        items: dict[str, list[Part]] = defaultdict(list)
        for issue in data.get("issues") or []:
            item = issue.get("task_id") or issue.get("fingerprint") or str(issue.get("id"))
            names = [str(n) for n in (issue.get("id"), issue.get("fingerprint")) if n]
            items[item].append(
                Part("issue", names, str(issue.get("status")), issue.get("attempts"), issue)
            )
        for subject in data.get("subjects") or []:
            name = str(subject.get("subject"))
            item = subject.get("task_id") or name
            items[item].append(
                Part(
                    "subject", [name], str(subject.get("status")), subject.get("attempts"), subject
                )
            )
        return items

    def check_attempts_need_turns(self, obs: Observation, data: dict[str, Any]) -> None:
        """An agent-strategy attempt is spent only after an agent's turn; an autofix attempt
        only by an execution of the fixer (one that never ran is given back): docs/policy.md."""
        fixer_runs = self._fixer_runs()
        for issue in data.get("issues") or []:
            if issue.get("strategy") in NON_AGENT_STRATEGIES - {"autofix"}:
                continue
            fp = str(issue.get("fingerprint"))
            item = issue.get("task_id") or fp
            now = int(issue.get("attempts") or 0)
            before = self.issue_attempts.get(fp, 0)
            turns = self.turns.get(work_item_file(item), 0)
            if issue.get("strategy") == "autofix":
                turns += fixer_runs.get(str(issue.get("target")), 0)
            if now - before > turns:
                self.fail(
                    obs,
                    "1",
                    item,
                    f"issue {fp} ({issue.get('strategy')}): JSON attempts "
                    f"{before} -> {now}, but since the previous run there were only {turns} "
                    + (
                        "agent turn(s) or fixer run(s)"
                        if issue.get("strategy") == "autofix"
                        else "agent turn(s) on its prompt"
                    ),
                )
            self.issue_attempts[fp] = now

    def check_ladder(self, obs: Observation, data: dict[str, Any]) -> None:
        ceiling = int((self.policy.get("caps") or {}).get("max_attempts_per_subject", 10))
        for subject in data.get("subjects") or []:
            ftype = str(subject.get("failure_type"))
            name = str(subject.get("subject"))
            if ftype in NO_LADDER:
                continue
            key = (subject.get("task_id") or name, ftype)
            step = subject.get("ladder_step")
            prompt = obs.prompts.get(work_item_file(key[0]), "")
            try_step = (
                prompt_step(prompt)
                if first_line(prompt).startswith(tuple(f"STATUS: {s}" for s in ACTING))
                else None
            )
            seen = self.steps_seen[key]
            for s in (step, try_step):
                if isinstance(s, int) and 1 <= s <= 5 and (not seen or seen[-1] != s):
                    seen.append(s)
            attempts = int(subject.get("attempts") or 0)
            status = str(subject.get("status"))
            if attempts >= ceiling and status != "blocked":
                self.fail(
                    obs,
                    "2",
                    key[0],
                    f"subject {name} · {ftype} has {attempts} attempts, "
                    f"the ceiling is {ceiling}, yet its status is {status} "
                    f"(ladder_step {step})",
                )
            entry = ENTRY_STEP.get(ftype, 1)
            held = subject.get("reason") == "HELD"  # its item is blocked by another part
            if status == "blocked" and attempts < ceiling and not held:
                wanted = list(range(entry, 6))
                offered = [s for s in seen if s >= entry]
                if sorted(set(offered)) != wanted or offered != sorted(offered):
                    self.fail(
                        obs,
                        "2",
                        key[0],
                        f"subject {name} · {ftype} paged a person after "
                        f"{attempts} attempts (ceiling {ceiling}) having offered ladder "
                        f"steps {seen or 'none'}; expected {wanted} in order",
                    )
            previous = self.last_step.get(key)
            grew = max(self.new_failures.get(key[0], 0), self.new_failures.get(name, 0))
            if status in ACTING and previous is not None and step == previous and grew:
                self.fail(
                    obs,
                    "2",
                    key[0],
                    f"subject {name} · {ftype} stays {status} at ladder "
                    f"step {step} though {grew} new failure(s) came after its prompt",
                )
            self.last_step[key] = step if isinstance(step, int) else None

    def check_renderings(self, obs: Observation, items: dict[str, list[Part]]) -> None:
        terminal = terminal_statuses(obs.status_text)
        open_by_subject: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for esc in obs.escalations:
            if str(esc.get("status", "open")) == "open":
                open_by_subject[str(esc.get("subject"))].append(esc)
        for entry in obs.failed_items:
            task = str(entry.get("task_id"))
            if task not in self.tasks:
                kind = (
                    "a tool name"
                    if task.split(" ")[0] in TOOL_NAMES
                    else "an issue fingerprint"
                    if "@" in task or "#" in task
                    else "a path"
                    if "/" in task or "." in task
                    else "not a task"
                )
                self.fail(
                    obs,
                    "3",
                    task,
                    f"failed_items holds task_id {task!r}, {kind} (tasks: {self.tasks})",
                )
        counts: dict[str, int] = defaultdict(int)
        for entry in obs.failed_items:
            counts[str(entry.get("task_id"))] += 1
        for item, parts in items.items():
            json_status = most_severe([p.status for p in parts])
            # the terminal may show the work item on a line of its own, or each of its parts
            shown = [terminal[n] for p in parts for n in p.names[:1] if n in terminal]
            shown += [terminal[n] for p in parts for n in p.names[1:2] if n in terminal]
            every_part = all(any(n in terminal for n in p.names) for p in parts)
            if item in terminal:
                term = most_severe([terminal[item], *shown])
            elif every_part:
                term = most_severe(shown)
            else:
                term = "absent"
            is_task = item in self.tasks
            entries = [e for e in obs.failed_items if str(e.get("task_id")) == item]
            fi = ",".join(str(e.get("final_status")) for e in entries) or "none"
            names = {item, *(n for p in parts for n in p.names)}
            opens = [e for n in names for e in open_by_subject.get(n, [])]
            esc_text = ",".join(str(e.get("id")) for e in opens) or "none"
            prompt = obs.prompts.get(work_item_file(item))
            line = first_line(prompt) if prompt is not None else "no prompt file"
            problems = []
            if json_status not in STATUSES:
                problems.append(f"the JSON status is outside {STATUSES}")
            if term != json_status:
                problems.append("the terminal disagrees")
            if is_task:
                fi_ok = {"recovered": {"none", "recovered"}}  # an entry says the one status
                if fi not in fi_ok.get(json_status, {json_status}):
                    problems.append("failed_items disagrees")
                if counts[item] > 1:
                    problems.append(f"failed_items holds {counts[item]} entries for it")
            if (json_status == "blocked") != bool(opens):
                problems.append("escalations.yaml disagrees")
            if len(opens) > 1:
                problems.append(f"{len(opens)} escalations are open for it at once")
            if prompt is None:
                if is_task and json_status != "recovered":
                    problems.append("it has no prompt file")
            else:
                match = re.match(r"STATUS:\s*(\w+)", line)
                said = match.group(1).lower() if match else None
                if said != json_status:
                    problems.append("the prompt's first line disagrees")
                elif said == "blocked" and not any(str(e.get("id")) in line for e in opens):
                    problems.append("the blocked prompt does not name its escalation")
                if said not in ACTING and re.search(r"^TRY:", prompt, re.M):
                    problems.append("a prompt that may not act still holds a TRY directive")
            problems += self.agent_side(obs, item, json_status, {str(e.get("id")) for e in opens})
            if problems:
                self.fail(
                    obs,
                    "3",
                    item,
                    "; ".join(problems) + f". terminal={term} "
                    f"json={json_status} failed_items={fi} open_escalations={esc_text} "
                    f"prompt={line[:120]!r}",
                )
        self.check_finished_tasks(obs, items, open_by_subject)
        self.listed |= set(items)

    def agent_side(self, obs: Observation, item: str, status: str, opens: set[str]) -> list[str]:
        """What the agents see of an item (its advisories, gate.json) against its status."""
        problems = []
        for advisory in (obs.data or {}).get("advisories") or []:
            subject = str(advisory.get("subject"))
            if subject != item and not subject.startswith(f"{item} "):
                continue
            if advisory.get("status") != status:
                problems.append(f"the advisory says {advisory.get('status')}")
            recovery = str(advisory.get("recovery"))
            if status not in ACTING and re.match(r"Step \d", recovery):
                problems.append(f"the advisory hands out {recovery[:40]!r}")
        shown = (obs.report_statuses or {}).get(item)
        if shown is not None and REPORT_WORDS.get(shown, shown) != status:
            problems.append(f"the HTML report says {shown}")
        gate = obs.gate or {}
        task = (gate.get("tasks") or {}).get(item)
        if task is not None and task.get("status") not in (status, None):
            problems.append(f"gate.json says {task.get('status')}")
        if task is not None and status not in ACTING and task.get("prompt"):
            problems.append("gate.json names a prompt to follow for an item that may not act")
        for owner in (gate.get("blocked") or {}).values():
            if owner.get("item") == item and owner.get("escalation") not in opens:
                problems.append(f"gate.json cites {owner.get('escalation')}, which is not open")
        return problems

    def check_hook_answer(self, item: str, status: str, opens: set[str], answer: str) -> None:
        """A failure hook's answer for a failure of `item`, against what a run says of it."""
        problems = []
        named = "blocked on a person" in answer and any(e in answer for e in opens)
        if status == "blocked" and not named:
            problems.append("it does not say stop, naming the open escalation")
        if status not in ACTING and re.search(r"Step \d|before your next try", answer):
            problems.append("it hands out a ladder step")
        if status in ACTING and "blocked on a person" in answer:
            problems.append("it says blocked")
        if problems:
            self.violations.append(
                Violation(
                    "3",
                    f"[3] scenario {self.scenario}, {{runs}}, work item {item}: the failure "
                    f"hook's answer disagrees ({'; '.join(problems)}); status={status} "
                    f"open={sorted(opens)} answer={answer[:300]!r}",
                    ["hook"],
                )
            )

    def check_finished_tasks(
        self,
        obs: Observation,
        items: dict[str, list[Part]],
        open_by_subject: dict[str, list[dict[str, Any]]],
    ) -> None:
        """A task that no longer appears in the run (its issues gone from a fresh report, no
        failure subject) is recovered: nothing may still tell an agent or a person otherwise."""
        for task in self.tasks:
            if task in items or task not in self.listed:
                continue
            entries = [e for e in obs.failed_items if str(e.get("task_id")) == task]
            stale = [str(e.get("final_status")) for e in entries]
            opens = [str(e.get("id")) for e in open_by_subject.get(task, [])]
            prompt = obs.prompts.get(work_item_file(task))
            line = first_line(prompt) if prompt is not None else ""
            problems = []
            if any(x != "recovered" for x in stale):
                problems.append(f"failed_items still says {','.join(stale)}")
            if opens:
                problems.append(f"escalation {','.join(opens)} is still open")
            if prompt is not None and not re.match(r"STATUS:\s*recovered\b", line):
                problems.append(f"its prompt still starts {line[:120]!r}")
            if problems:
                self.fail(
                    obs,
                    "3",
                    task,
                    "the run no longer lists it (nothing left to do), but " + "; ".join(problems),
                )

    def check_cycles(self, obs: Observation, data: dict[str, Any]) -> None:
        cap = int((self.policy.get("caps") or {}).get("global_cycles", 3))
        if self.episode_open:
            self.episode_cycles += int(data.get("cycles") or 0)
            if self.episode_cycles > cap:
                self.fail(
                    obs,
                    "4",
                    None,
                    f"the episode has run {self.episode_cycles} correction "
                    f"cycles across runs; caps.global_cycles is {cap}",
                )
        if data.get("result") == "PASS":
            self.episode_open, self.episode_cycles = False, 0

    def check_pass(self, obs: Observation, data: dict[str, Any]) -> None:
        if data.get("result") != "PASS":
            return
        digest = hashlib.sha256(obs.report or b"").hexdigest()
        writes = self._writes()
        ours = [i for i, (sha, _) in enumerate(writes) if sha == digest]
        who = report_validator(obs.report)
        verdict = report_status(obs.report)
        problems = []
        if not ours:
            problems.append(
                f"the report on disk (validator {who!r}) is not one {self.validator_name!r} wrote"
            )
        elif ours[-1] < self.episode_start_write:
            problems.append("the report is older than the episode's first finding")
        if verdict != "PASS":
            problems.append(f"the report on disk says {verdict or 'nothing'}")
        if problems:
            self.fail(obs, "5", None, "result PASS, but " + "; ".join(problems))

    def check_guidance(self, obs: Observation) -> None:
        for item, evidence in list(self.guidance.items()):
            prompt = obs.prompts.get(work_item_file(item))
            del self.guidance[item]
            if prompt is None:
                self.fail(
                    obs,
                    "6",
                    item,
                    f"reset with evidence {evidence!r}, but the next prompt file does not exist",
                )
                continue
            lines = [x for x in prompt.splitlines() if x.strip()]
            head = lines[1] if len(lines) > 1 else ""
            if "Guidance from a person" not in head or evidence not in prompt:
                self.fail(
                    obs,
                    "6",
                    item,
                    f"evidence {evidence!r} is not under 'Guidance from a "
                    f"person' right after the STATUS line; the prompt starts "
                    f"{' | '.join(lines[:3])[:200]!r}",
                )
                continue
            after = prompt.index("Guidance from a person")
            where = prompt.find(evidence)
            markers = [prompt.find(m) for m in ("TRY:", "RECOVERY for", "Strategy:", "Issue:")]
            if any(0 <= m < where for m in markers) or where < after:
                self.fail(obs, "6", item, "the person's evidence comes after the directive")

    def check_counts(self, obs: Observation, items: dict[str, list[Part]]) -> None:
        for item, parts in items.items():
            prompt = obs.prompts.get(work_item_file(item))
            if prompt is None:
                continue
            subject_attempts = {p.attempts for p in parts if p.kind == "subject"}
            issue_attempts = {p.attempts for p in parts if p.kind == "issue"}
            for n in re.findall(r"Previous (\d+) attempts?", prompt):
                if int(n) not in subject_attempts:
                    self.fail(
                        obs,
                        "7",
                        item,
                        f"the prompt says 'Previous {n} attempts'; the "
                        f"JSON subjects say {sorted(x for x in subject_attempts if x is not None)}",
                    )
            for k in re.findall(r"attempt (\d+) of \d+", prompt):
                if int(k) - 1 not in issue_attempts:
                    self.fail(
                        obs,
                        "7",
                        item,
                        f"the prompt offers attempt {k}; the JSON issues "
                        f"have spent {sorted(x for x in issue_attempts if x is not None)}",
                    )


def prompt_step(prompt: str) -> int | None:
    """The ladder step a prompt's TRY line offers (its number, else its words)."""
    match = re.search(r"^TRY:(.*)$", prompt, re.M)
    if not match:
        return None
    text = match.group(1).lower()
    number = re.search(r"step (\d)", text)
    if number:
        return int(number.group(1))
    for step, words in STEP_WORDS:
        if words in text:
            return step
    return None


def terminal_statuses(text: str) -> dict[str, str]:
    """Name -> status word from `selfcorrect status` lines (everything above the escalations)."""
    found: dict[str, str] = {}
    body = text.split("Open escalations")[0]
    for line in body.splitlines():
        words = re.findall(r"(?<![\w-])(" + "|".join((*STATUSES, "ok")) + r")(?![\w-])", line)
        parts = line.split()
        if not parts or not words:
            continue
        found.setdefault(parts[0], most_severe(words))
        # a subject named with spaces ("Bash · runtime_error") is the text before its type
        head = re.split(r"\s{2,}", line.strip())[0]
        found.setdefault(head, most_severe(words))
    return found
