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
# Reasons an issue is escalated because its budget ran out: each needs a directive (or a fix)
# handed out for the occurrence being escalated (docs/simulator.md, invariant 9).
BUDGET_REASONS = {"MAXIMUM_ATTEMPTS_REACHED", "CIRCUIT_OPEN", "FIX_FAILED"}
NON_AGENT_STRATEGIES = {"autofix", "escalate", "restructure_to_template"}
# Reasons a person is paged because an owner's budget ran out (invariant 15): a validator's
# BLOCKED verdict, or the policy's (a non-retryable type, no strategy, ...), pages anyway.
OWNER_BUDGET_REASONS = {"MAXIMUM_ATTEMPTS_REACHED", "LADDER_EXHAUSTED", "CAPS_EXHAUSTED"}
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
    "8": "a PASS from the validator that found the issues recovers every item; run exits 0",
    "9": "no issue is escalated without a directive handed out for its current occurrence",
    "10": "a subject climbs at most one ladder step per round",
    "11": "no agent subject spans two agents, nor tells one agent another's error",
    "12": "no attempt spent for an item whose owner had no turn since its directive was written",
    "13": "at most one ladder climb per owner turn",
    "14": "one step per item in every output (JSON, failed_items, prompt, advisory, gate.json, "
    "hook answer)",
    "15": "no page for an item whose owner never acted, unless a validator or the policy "
    "blocked it",
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
class Climb:
    """A subject's ladder step as last observed, and what happened since it was shown."""

    step: int | None
    failures: int = 0  # failures of the subject logged since
    turn_ended: bool = False  # its agent's turn ended since


def item_of(part: dict[str, Any]) -> str:
    return str(part.get("task_id") or part.get("subject") or part.get("fingerprint"))


def item_step(parts: list[dict[str, Any]]) -> int | None:
    """An item's ladder step as the JSON says it: its parts' highest, 6 once exhausted."""
    steps = [p["ladder_step"] for p in parts if isinstance(p.get("ladder_step"), int)]
    if any(p.get("status") == "blocked" and p.get("reason") == "LADDER_EXHAUSTED" for p in parts):
        steps.append(6)
    return max(steps) if steps else None


def parts_by_item(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for part in [*(data.get("issues") or []), *(data.get("subjects") or [])]:
        found[item_of(part)].append(part)
    return found


STEP_IN_TEXT = re.compile(r"\b(?:ladder step|Step) (\d)\b")


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
    # invariant 8: the validator's latest PASS (its digest) and what failed after its write
    pass_digest: str | None = None
    validator_found: bool = False  # the validator's latest reports found issues
    failed_after_pass: set[str] = field(default_factory=set)
    # invariant 9: per issue fingerprint, whether its current occurrence had a directive
    occurrences: dict[str, bool] = field(default_factory=dict)
    last_fixer_runs: dict[str, int] = field(default_factory=dict)
    # invariant 10: per (item, type), the step last observed and what happened since it showed
    climbs: dict[tuple[str, str], Climb] = field(default_factory=dict)
    # invariant 11: per tool, the agents (owning no task) that failed with no task and no file,
    # and the error texts each agent sent
    agentless: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    errors_by_agent: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # invariants 12 to 15, per work item's file name (recovery/<file>): its owner ever acted,
    # acted since its directive was written; the directive last seen; issues' attempts
    owner_ever: set[str] = field(default_factory=set)
    owner_since: dict[str, bool] = field(default_factory=dict)
    directives: dict[str, str] = field(default_factory=dict)
    owner_attempts: dict[str, int] = field(default_factory=dict)
    # invariant 13, per item: its step last observed, and its climbs in its owner's turn
    item_steps: dict[str, int | None] = field(default_factory=dict)
    climbed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    turn_climb: set[str] = field(default_factory=set)
    holds: list[tuple[str, bool]] = field(default_factory=list)  # each stop: who, held

    # -- bookkeeping the simulation reports --------------------------------------------------
    def agent_turn(self, prompt_file: str) -> None:
        """The agents had a turn on this prompt (recovery/<file>), which let them act."""
        self.turns[prompt_file] += 1
        self.owner_ever.add(prompt_file)
        self.owner_since[prompt_file] = True

    def owner_acted(self, items: set[str], agent: str | None = None) -> None:
        """The owner of `items` (tasks) acted: a call, a stop, a verification."""
        for item in items:
            self.owner_ever.add(work_item_file(item))
            self.owner_since[work_item_file(item)] = True

    def owner_acted_at_start(self, items: set[str]) -> None:
        """Tasks whose agents acted before the scenario began (the log it starts with)."""
        self.owner_ever |= {work_item_file(item) for item in items}

    def record_hold(self, who: str, held: bool) -> None:
        self.holds.append((who, held))

    def failure_appended(self, subject: str) -> None:
        self.new_failures[subject] += 1

    def failure_logged(
        self,
        names: set[str],
        *,
        agent: str | None = None,
        tool: str | None = None,
        error: str | None = None,
        owner_less: bool = False,
    ) -> None:
        """One failure reached the log (an agent appended it, or the host's hook did): `names`
        are the subjects it may count for (item, task, file, tool); `owner_less` when it has no
        task and no file and its agent owns no task (a per-agent subject, invariant 11)."""
        for name in names:
            self.failure_appended(name)
        if self.pass_digest is not None:
            self.failed_after_pass |= names | ({agent} if agent else set())
        for key, climb in self.climbs.items():
            if key[0] in names or (agent and agent in key[0].split(" · ")):
                climb.failures += 1
        if agent and error:
            self.errors_by_agent[agent].add(error)
        if owner_less and tool and agent:
            self.agentless[tool].add(agent)

    def success_logged(self, names: set[str], agent: str | None) -> None:
        """A call worked (the host's success hook): its subjects' streaks start again, so a
        later failure may be the first of a new streak (docs/policy.md)."""
        for key in [*self.last_step, *self.climbs]:
            if key[0] in names or (agent and agent in key[0].split(" · ")):
                self.last_step[key] = None
                self.climbs[key] = Climb(None)

    def turn_ended(self, items: set[str] | None = None, agent: str | None = None) -> None:
        """An agent's turn ended (the agents step, or a Stop/SubagentStop of `agent`): every
        subject of `items` (all when None) may climb one step at its next round."""
        for key, climb in self.climbs.items():
            if items is None or key[0] in items or (agent and agent in key[0].split(" · ")):
                climb.turn_ended = True
        for item in {*self.climbed, *self.item_steps}:
            if items is None or item in items or (agent and agent in item.split(" · ")):
                self.climbed[item] = 0
                self.turn_climb.add(item)  # the next look may show the ended turn's climb

    def validator_wrote(self) -> None:
        """The project's validator just wrote a report: a PASS opens invariant 8's check."""
        writes = self.writes()
        last = writes[-1] if writes else None
        self.pass_digest = None
        if last and last[1] != "PASS":
            self.validator_found = True
        elif last and self.validator_found:  # the PASS that ends the issues it found
            self.pass_digest, self.validator_found = last[0], False
        self.failed_after_pass = set()

    def person_reset(self, item: str, evidence: str) -> None:
        self.guidance[item] = evidence
        self.issue_attempts = {k: v for k, v in self.issue_attempts.items() if item not in k}
        for key in [k for k in self.steps_seen if k[0] in (item, work_item_file(item))]:
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
            self.episode_start_write = len(self.writes())

    def _fixer_runs(self) -> dict[str, int]:
        """Executions of the project's autofixer per target since the previous run."""
        log = self.validator_log.parent / "fixer-runs.log"
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        fresh, self.fixer_lines = lines[self.fixer_lines :], len(lines)
        counts: dict[str, int] = defaultdict(int)
        for target in fresh:
            counts[target] += 1
        return counts

    def writes(self) -> list[tuple[str, str]]:
        lines = self.validator_log.read_text(encoding="utf-8").split()
        return list(zip(lines[::2], lines[1::2], strict=False))

    def fail(self, obs: Observation, invariant: str, item: str | None, message: str) -> None:
        """Record a violation; the same one seen again in a later run adds that run to it."""
        self.fail_at(f"{obs.label} {obs.run}", invariant, item, message)

    def fail_at(self, run: str, invariant: str, item: str | None, message: str) -> None:
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
        self.check_issue_ladder(obs, data)
        self.check_renderings(obs, items)
        self.check_cycles(obs, data)
        self.check_pass(obs, data)
        self.check_guidance(obs)
        self.check_counts(obs, items)
        self.check_pass_recovers(obs, data)
        self.check_escalated_after_directive(obs, data)
        self.check_climbs(f"{obs.label} {obs.run}", data)
        self.check_agent_subjects(f"{obs.label} {obs.run}", data)
        self.check_owner_attempts(obs, data)
        self.check_one_climb_per_turn(f"{obs.label} {obs.run}", data)
        self.check_one_step(obs, data, items)
        self.check_no_page_unacted(obs, data, items)
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
        fixer_runs = self.last_fixer_runs = self._fixer_runs()
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
        per_step = int((self.policy.get("ladder") or {}).get("failures_per_step", 3))
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
            # Where the host reports turns the ceiling counts rounds, not calls.
            attempts = int(subject.get("rounds") or subject.get("attempts") or 0)
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
            # a climb is due once its agent's turn ended, or ladder.failures_per_step failures
            # came, after the step was shown (docs/policy.md): never per failed call
            climb = self.climbs.get(key)
            due = climb is None or climb.turn_ended or climb.failures >= per_step
            if status in ACTING and previous is not None and step == previous and grew and due:
                self.fail(
                    obs,
                    "2",
                    key[0],
                    f"subject {name} · {ftype} stays {status} at ladder "
                    f"step {step} though {grew} new failure(s) came after its prompt",
                )
            self.last_step[key] = step if isinstance(step, int) else None

    def check_issue_ladder(self, obs: Observation, data: dict[str, Any]) -> None:
        """Invariant 2 for issues: an issue whose retries are spent hands its work item to the
        ladder; a person is paged for it only after steps 1 to 5 or at the ceiling."""
        ceiling = int((self.policy.get("caps") or {}).get("max_attempts_per_subject", 10))
        for name, prompt in obs.prompts.items():
            step = prompt_step(prompt) if may_act(prompt) else None
            seen = self.steps_seen[(name, "issue")]
            if step is not None and 1 <= step <= 5 and (not seen or seen[-1] != step):
                seen.append(step)
        for issue in data.get("issues") or []:
            spent = issue.get("reason") == "MAXIMUM_ATTEMPTS_REACHED"
            if issue.get("status") != "blocked" or not spent:
                continue
            item = str(issue.get("task_id") or issue.get("fingerprint"))
            attempts = int(issue.get("attempts") or 0)
            seen = self.steps_seen[(work_item_file(item), "issue")]
            if attempts < ceiling and seen != list(range(1, 6)):
                self.fail(
                    obs,
                    "2",
                    item,
                    f"issue {issue.get('fingerprint')} paged a person after {attempts} "
                    f"attempt(s) (its retries spent, ceiling {ceiling}) having offered ladder "
                    f"steps {seen or 'none'}; expected [1, 2, 3, 4, 5] in order",
                )

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
        writes = self.writes()
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

    def check_pass_recovers(self, obs: Observation, data: dict[str, Any]) -> None:
        """Invariant 8: the validator's own PASS on disk (nothing failed after its write)
        resolves every issue and recovers every work item: result PASS, exit 0, nothing left
        directing work (a prompt that lets an agent act, recovery/plan.md)."""
        if self.pass_digest is None or hashlib.sha256(obs.report or b"").hexdigest() != (
            self.pass_digest
        ):
            return
        after = self.failed_after_pass
        problems = []
        if not after and (data.get("result") != "PASS" or obs.exit_code != 0):
            problems.append(f"the run says {data.get('result')} with exit {obs.exit_code}")
        for part in [*(data.get("issues") or []), *(data.get("subjects") or [])]:
            name = str(part.get("subject") or part.get("fingerprint"))
            item = str(part.get("task_id") or name)
            # a task-less subject names its agent after its tool and type
            if (
                part.get("status") != "recovered"
                and not {item, name, *name.split(" · ")[2:]} & after
            ):
                problems.append(f"{name} is {part.get('status')} ({part.get('reason')})")
        for entry in obs.failed_items:
            task = str(entry.get("task_id"))
            if (
                task in self.listed
                and task not in after
                and entry.get("final_status")
                not in (
                    "recovered",
                    None,
                )
            ):
                problems.append(f"failed_items says {task} is {entry.get('final_status')}")
        for name, prompt in obs.prompts.items():
            if name == "plan.md":
                problems.append(f"recovery/plan.md still says {first_line(prompt)[:80]!r}")
            elif may_act(prompt) and not any(work_item_file(x) == name for x in after):
                problems.append(f"recovery/{name} still says {first_line(prompt)[:80]!r}")
        if problems:
            self.fail(
                obs,
                "8",
                None,
                "the validator's fresh PASS is on disk, but " + "; ".join(problems[:6]),
            )

    def check_escalated_after_directive(self, obs: Observation, data: dict[str, Any]) -> None:
        """Invariant 9: an issue escalated because its budget ran out (attempts, a circuit, a
        failed fix) had a directive handed out (an acting prompt, or its fixer run) for the
        occurrence being escalated. An occurrence ends when the issue is resolved."""
        current = set()
        for issue in data.get("issues") or []:
            fp = str(issue.get("fingerprint"))
            status = str(issue.get("status"))
            if status == "recovered":
                self.occurrences.pop(fp, None)
                continue
            current.add(fp)
            item = str(issue.get("task_id") or fp)
            prompt = obs.prompts.get(work_item_file(item))
            handed = (status in ACTING and prompt is not None and may_act(prompt)) or bool(
                self.last_fixer_runs.get(str(issue.get("target")))
            )
            self.occurrences[fp] = self.occurrences.get(fp, False) or handed
            escalated = status == "blocked" and issue.get("reason") in BUDGET_REASONS
            if escalated and not self.occurrences[fp]:
                self.fail(
                    obs,
                    "9",
                    item,
                    f"issue {fp} is escalated ({issue.get('reason')}, attempts "
                    f"{issue.get('attempts')}) though no directive was handed out for "
                    "this occurrence of it",
                )
        for fp in set(self.occurrences) - current:
            del self.occurrences[fp]  # resolved: a later finding is a new occurrence

    def check_climbs(self, where: str, data: dict[str, Any]) -> None:
        """Invariant 10: between two observations a subject climbs at most one step, and from
        step k to k+1 only once its agent's turn ended, or ladder.failures_per_step further
        failures were logged, after step k was shown."""
        per_step = int((self.policy.get("ladder") or {}).get("failures_per_step", 3))
        for subject in data.get("subjects") or []:
            name = str(subject.get("subject"))
            key = (str(subject.get("task_id") or name), str(subject.get("failure_type")))
            step = subject.get("ladder_step")
            if subject.get("status") == "blocked" and subject.get("reason") == "LADDER_EXHAUSTED":
                step = 6
            step = step if isinstance(step, int) else None
            seen = self.steps_seen[key]  # shown in a hook's answer too (invariant 2)
            shown = step is not None and step <= 5 and subject.get("status") in ACTING
            if shown and (not seen or seen[-1] != step):
                seen.append(step)
            climb = self.climbs.get(key)
            if climb is None or climb.step is None or step is None or step <= climb.step:
                if climb is None or climb.step != step:
                    self.climbs[key] = Climb(step)
                continue
            if step - climb.step > 1:
                problem = f"climbed from step {climb.step} to {step} in one round"
            elif not climb.turn_ended and climb.failures < per_step:
                problem = (
                    f"climbed from step {climb.step} to {step} after {climb.failures} "
                    f"failure(s) (ladder.failures_per_step {per_step}) with no end of its "
                    "agent's turn"
                )
            else:
                problem = ""
            if problem:
                self.fail_at(where, "10", key[0], f"subject {name} · {key[1]} {problem}")
            self.climbs[key] = Climb(step)

    def check_agent_subjects(self, where: str, data: dict[str, Any]) -> None:
        """Invariant 11: a failure with no task and no file is its agent's own subject."""
        for subject in data.get("subjects") or []:
            if subject.get("task_id") or subject.get("file"):
                continue
            name = str(subject.get("subject"))
            parts = name.split(" · ")
            agents = self.agentless.get(parts[0], set())
            if len(agents) > 1 and not agents & set(parts):
                self.fail_at(
                    where,
                    "11",
                    name,
                    f"subject {name!r} names no agent, yet agents {sorted(agents)} each failed "
                    f"in {parts[0]} with no task and no file",
                )

    def check_answer_is_own(self, agent: str, answer: str) -> None:
        """Invariant 11 for a hook's answer: it never quotes another agent's error text."""
        own = {line for text in self.errors_by_agent.get(agent, set()) for line in lines_of(text)}
        for other, texts in self.errors_by_agent.items():
            quoted = {x for text in texts for x in lines_of(text) if x in answer} - own
            if other != agent and quoted:
                self.fail_at(
                    "hook",
                    "11",
                    agent,
                    f"the failure hook's answer to {agent} quotes {other}'s error "
                    f"{sorted(quoted)[0][:80]!r}: {answer[:200]!r}",
                )

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

    # -- invariants 12 to 15: what an item's owner did decides what may happen to it --------
    def check_owner_attempts(self, obs: Observation, data: dict[str, Any]) -> None:
        """12: an issue's attempt is spent only when its item's owner had a turn since its
        directive was written (the lead's stops are no turn of a subagent's task)."""
        gate_tasks = (obs.gate or {}).get("tasks") or {}
        for issue in data.get("issues") or []:
            if issue.get("strategy") in NON_AGENT_STRATEGIES:
                continue
            fp = str(issue.get("fingerprint"))
            item = str(issue.get("task_id") or fp)
            name = work_item_file(item)
            now = int(issue.get("attempts") or 0)
            before = self.owner_attempts.get(fp, 0)
            if now > before and not self.owner_since.get(name):
                self.fail(
                    obs,
                    "12",
                    item,
                    f"issue {fp}: attempts {before} -> {now}, but the owner of {item} had no "
                    "turn since its directive was written"
                    + ("" if name in self.owner_ever else " (its owner never acted)"),
                )
            if now > before:
                self.owner_since[name] = False
            self.owner_attempts[fp] = now
        for item in parts_by_item(data):
            name = work_item_file(item)
            prompt = obs.prompts.get(name)
            task = gate_tasks.get(item) or {}
            directive = task.get("directive") or (
                hashlib.sha256(prompt.encode()).hexdigest()[:12]
                if prompt is not None and may_act(prompt)
                else None
            )
            if directive and self.directives.get(name) != directive:
                self.directives[name] = directive
                self.owner_since[name] = False
        for fp in set(self.owner_attempts) - {
            str(i.get("fingerprint")) for i in data.get("issues") or []
        }:
            del self.owner_attempts[fp]

    def check_one_climb_per_turn(self, where: str, data: dict[str, Any]) -> None:
        """13: an item climbs at most one ladder step in one turn of its owner (a burst of
        failed calls is one turn: the ceiling counts rounds, not calls)."""
        for item, parts in parts_by_item(data).items():
            step = item_step(parts)
            before = self.item_steps.get(item)
            if step is not None and before is not None and step > before:
                # the first look after its owner's turn ended shows that turn's climb
                self.climbed[item] += step - before - (item in self.turn_climb)
                if self.climbed[item] > 1:
                    self.fail_at(
                        where,
                        "13",
                        item,
                        f"climbed {self.climbed[item]} ladder steps (to step {step}) in one "
                        "turn of its owner",
                    )
            self.item_steps[item] = step
            self.turn_climb.discard(item)

    def check_one_step(
        self, obs: Observation, data: dict[str, Any], items: dict[str, list[Part]]
    ) -> None:
        """14: every output names one step for an item: the JSON's parts, the advisories,
        failed_items, the prompt's STATUS and TRY lines, gate.json."""
        gate_tasks = (obs.gate or {}).get("tasks") or {}
        for item, parts in items.items():
            said: dict[str, set[int]] = defaultdict(set)
            for part in parts:
                if isinstance(part.raw.get("ladder_step"), int):
                    said[f"JSON {part.kind}"].add(part.raw["ladder_step"])
            for advisory in data.get("advisories") or []:
                subject = str(advisory.get("subject"))
                if subject == item or subject.startswith(f"{item} "):
                    if isinstance(advisory.get("ladder_step"), int):
                        said["advisory"].add(advisory["ladder_step"])
                    said["advisory"] |= {int(n) for n in STEP_IN_TEXT.findall(
                        str(advisory.get("recovery") or ""))}  # fmt: skip
            for entry in obs.failed_items:
                if str(entry.get("task_id")) == item:
                    said["failed_items"] |= {
                        int(n) for n in STEP_IN_TEXT.findall(str(entry.get("escalation_context")))
                    }
            prompt = obs.prompts.get(work_item_file(item))
            if prompt is not None:
                said["STATUS line"] |= {int(n) for n in STEP_IN_TEXT.findall(first_line(prompt))}
                step = prompt_step(prompt) if may_act(prompt) else None
                if step is not None:
                    said["TRY line"].add(step)
            task = gate_tasks.get(item) or {}
            for key in ("step", "ladder_step"):
                if isinstance(task.get(key), int):
                    said["gate.json"].add(task[key])
            steps = set().union(*said.values()) if said else set()
            if len(steps) > 1:
                shown = ", ".join(f"{k} {sorted(v)}" for k, v in sorted(said.items()) if v)
                self.fail(obs, "14", item, f"its outputs name {len(steps)} steps: {shown}")

    def check_answer_step(self, item: str, data: dict[str, Any], answer: str) -> None:
        """14 for a failure hook's answer: the step it hands out is the item's one step."""
        named = {int(n) for n in STEP_IN_TEXT.findall(answer)}
        parts = parts_by_item(data).get(item) or []
        steps = {p["ladder_step"] for p in parts if isinstance(p.get("ladder_step"), int)}
        if named and (len(named) > 1 or len(steps) > 1 or not named <= steps):
            self.fail_at(
                "hook",
                "14",
                item,
                f"the failure hook's answer names step(s) {sorted(named)}; the JSON's parts "
                f"{sorted(steps)}: {answer[:200]!r}",
            )

    def check_no_page_unacted(
        self, obs: Observation, data: dict[str, Any], items: dict[str, list[Part]]
    ) -> None:
        """15: no open escalation for an item whose owner never acted, unless a validator's
        BLOCKED verdict or the policy blocked it (not its owner's budget)."""
        opens = {
            str(e.get("subject")): str(e.get("id"))
            for e in obs.escalations
            if str(e.get("status", "open")) == "open"
        }
        for item, parts in items.items():
            name = work_item_file(item)
            if item not in opens or name in self.owner_ever:
                continue
            if item not in self.tasks and not any(p.kind == "issue" for p in parts):
                continue  # an agent's own subject: that agent failed, so it acted
            budget = [
                p.raw.get("reason")
                for p in parts
                if p.status == "blocked"
                and p.raw.get("reason") in OWNER_BUDGET_REASONS
                and p.raw.get("strategy") not in NON_AGENT_STRATEGIES  # a fixer's, not an agent's
            ]
            if budget:
                self.fail(
                    obs,
                    "15",
                    item,
                    f"{opens[item]} pages a person ({', '.join(map(str, budget))}) though the "
                    f"owner of {item} never acted",
                )


def lines_of(error: str) -> set[str]:
    """An error's telling lines: long enough not to be any error's ("Exit code 1")."""
    return {x.strip() for x in error.splitlines() if len(x.strip()) >= 16}


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
