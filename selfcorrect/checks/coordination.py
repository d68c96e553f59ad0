"""The built-in validator's coordination checks (rules §14): coordination log → findings.

Pure: the caller loads and normalises the log and the policy. Every finding quotes what was seen
(the question, the answer, the missing part, the cycle), so a human can check it at a glance.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache

from selfcorrect import layout
from selfcorrect.checks.findings import Finding
from selfcorrect.checks.graph import elementary_cycles
from selfcorrect.core.model import Coordination
from selfcorrect.core.plural import count
from selfcorrect.core.policy import Policy
from selfcorrect.core.text_window import search

# type, description (the evidence), fix, task id; with a fifth item, what was checked when the
# description quotes text that changes between runs (the id is taken from it: checks/findings.py)
Problem = tuple[str, str, str, str | None] | tuple[str, str, str, str | None, str]
Keys = tuple[frozenset[str], frozenset[str]]  # significant words, paths

# rules §3 defaults, used when the policy's issue type sets no severity of its own.
_SEVERITY = {
    "missing_coordination_log": "CRITICAL",
    "unanswered_questions": "MAJOR",
    "vague_answers": "MINOR",
    "incomplete_synthesis": "MAJOR",
    "weak_synthesis": "MAJOR",
    "circular_delegation": "CRITICAL",
}
# Tasks that are not going to be done now need no implementation step.
_EXEMPT_STATUSES = frozenset({"blocked", "cancelled", "canceled", "skipped", "deferred"})
# Words of four letters or more that say nothing about what a step or task is about.
_STOP_TEXT = (
    "about after also before being does done each from have into just make more most must only "
    "other over same should some such than that their them then there these they this those "
    "under using when where which while will with without would"
)
_STOP_WORDS = frozenset(_STOP_TEXT.split())
_WORD = re.compile(r"[a-z]+")
# Each branch starts only where a run of its characters starts, and takes the run possessively:
# started anywhere inside "aaaa…", the old branches cost the square of the run.
_PATH = re.compile(r"(?<![\w./-])[\w./-]*\w/[\w./-]*+|(?<![\w-])[\w-]++\.[a-z][a-z0-9]{0,4}\b")


def coordination_findings(
    coordination: Coordination | None,
    policy: Policy,
    log: str = f"workflow/{layout.COORDINATION_LOG}",
) -> list[Finding]:
    """Every coordination finding for one log, in a stable order (rules §14); `log` is the
    target."""
    if coordination is None:
        problems: list[Problem] = [
            (
                "missing_coordination_log",
                f"{log} is missing: no coordination log (controller, questions, synthesis, tasks) "
                "to check",
                f"Re-spawn the controller to write {log}.",
                None,
            )
        ]
    else:
        problems = [
            *_question_problems(coordination, policy),
            *_synthesis_problems(coordination, policy),
            *_cycle_problems(coordination),
        ]
    return [
        Finding(p[0], _severity(policy, p[0]), p[1], log, p[3], p[2], p[4] if len(p) > 4 else None)
        for p in problems
    ]


def _question_problems(coordination: Coordination, policy: Policy) -> Iterator[Problem]:
    min_words = policy.coordination.min_answer_words
    hedges = _hedges(policy.coordination.hedges)
    for number, question in enumerate(coordination.questions, 1):
        who = question.delegated_to or "an agent"
        asked = f"question {number} {_quote(question.question)}"
        asked += f" (delegated to {who})" if question.delegated_to else " (delegated to nobody)"
        answer = (question.answer or "").strip()
        if not answer:
            yield (
                "unanswered_questions",
                f"unanswered: {asked} has no answer",
                f"Re-delegate question {number} to {who} and record the answer under "
                f"questions_asked[{number - 1}].answer.",
                None,
            )
            continue
        reasons = []
        words = len(answer.split())
        if words < min_words:
            reasons.append(f"{words} word{'s' * (words != 1)}, fewer than {min_words}")
        heard = [phrase for phrase, pattern in hedges if search(pattern, answer)]
        if heard:
            reasons.append("hedges with " + ", ".join(_quote(h) for h in heard))
        if reasons:
            yield (
                "vague_answers",
                f"vague answer to {asked}: {_quote(answer)} ({'; '.join(reasons)})",
                f"Ask {who} to answer question {number} concretely, in at least {min_words} "
                "words, naming the files, functions or decisions involved, without hedging.",
                None,
            )


def _synthesis_problems(coordination: Coordination, policy: Policy) -> Iterator[Problem]:
    synthesis = coordination.synthesis
    if synthesis is None:
        if coordination.tasks or coordination.questions:  # else nothing to synthesise yet
            yield (
                "incomplete_synthesis",
                f"incomplete synthesis: no synthesized_solution, although the log has "
                f"{count(len(coordination.questions), 'question')} and "
                f"{count(len(coordination.tasks), 'task')}",
                "Have the controller write synthesized_solution with approach, "
                "rationale and implementation_steps drawn from the answers.",
                None,
                "no synthesized_solution",  # the counts change as the log grows
            )
        return
    for part in policy.coordination.required_synthesis:
        known = part in ("approach", "rationale", "implementation_steps", "risks")
        value = getattr(synthesis, part) if known else synthesis.extra.get(part)
        if not _filled(value):
            yield (
                "incomplete_synthesis",
                f"incomplete synthesis: synthesized_solution.{part} is missing or empty",
                f"Have the controller fill in synthesized_solution.{part}.",
                None,
            )
    steps = [step for step in synthesis.implementation_steps if step.strip()]
    if not steps:
        return  # no steps at all is incomplete_synthesis (when required), not weak
    # The rule: a step covers a task when they share a significant word (a lowercase run of
    # >= 4 letters, not a stop word, a plural "s" dropped) or a path, taken from the task's
    # name, acceptance criteria and files. Each step must cover a task or an answer (rules §14),
    # and each task still to be done must be covered by a step.
    step_keys = [_keys([step]) for step in steps]
    tasks = [
        (task, _keys([task.name or "", *task.acceptance_criteria, *task.files]))
        for task in coordination.tasks
    ]
    answers = _keys(question.answer or "" for question in coordination.questions)
    for number, (step, keys) in enumerate(zip(steps, step_keys, strict=True), 1):
        if not _shares(keys, answers) and not any(_shares(keys, k) for _, k in tasks):
            yield (
                "weak_synthesis",
                f"weak synthesis: implementation step {number} {_quote(step)} covers no "
                "task or answer (no significant word or path in common)",
                f"Tie step {number} to a task by naming its work or files, or drop it.",
                None,
            )
    for task, keys in tasks:
        if task.status not in _EXEMPT_STATUSES and not any(_shares(k, keys) for k in step_keys):
            yield (
                "weak_synthesis",
                f"weak synthesis: no implementation step covers task {task.task_id} "
                f"{_quote(task.name or '')} (status {task.status or 'unset'})",
                f"Add an implementation step for {task.task_id}, or mark it deferred or "
                "cancelled if it is out of scope.",
                task.task_id,
            )


def _cycle_problems(coordination: Coordination) -> Iterator[Problem]:
    # Each edge of the delegation graph, with the task ids it carries. The controller's own
    # hand-offs are edges too: they close a cycle only with a delegation back to the controller.
    # A circular delegation takes two agents or more (rules §14): work an agent keeps for
    # itself (a task the controller assigns to itself, `from: a` `to: a`) is no hand-off.
    edges: dict[tuple[str, str], set[str]] = {}

    def hand_off(source: str, target: str, task_id: str | None) -> None:
        if source.strip() and target.strip() and source.strip() != target.strip():
            edges.setdefault((source, target), set()).update([task_id] if task_id else ())

    for d in coordination.delegations:
        hand_off(d.from_, d.to, d.task_id)
    if boss := coordination.controller:
        for question in coordination.questions:
            hand_off(boss, question.delegated_to or "", None)
        for task in coordination.tasks:
            hand_off(boss, task.assigned_to or "", task.task_id)
    for cycle in elementary_cycles(edges):
        ring = " -> ".join([*cycle, cycle[0]])
        pairs = itertools.pairwise([*cycle, cycle[0]])
        ids = sorted(set().union(*(edges[pair] for pair in pairs)))
        where = f" (tasks {', '.join(ids)})" if ids else ""
        yield (
            "circular_delegation",
            f"circular delegation: {ring}{where}",
            f"A human must decide who owns this work and remove one delegation of {ring}.",
            ids[0] if len(ids) == 1 else None,
        )


def _severity(policy: Policy, kind: str) -> str:
    rule = policy.issue_type(kind)
    value = ((rule.severity if rule else None) or "").upper()
    return value if value in ("CRITICAL", "MAJOR", "MINOR") else _SEVERITY[kind]


@lru_cache(maxsize=8)
def _hedges(phrases: tuple[str, ...]) -> list[tuple[str, re.Pattern[str]]]:
    """Each hedge as a whole-word, case-insensitive pattern; inner spaces match any spacing."""
    patterns = []
    for phrase in phrases:
        body = r"\s+".join(map(re.escape, phrase.split()))
        if body:
            patterns.append((phrase, re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)))
    return patterns


def _filled(value: object) -> bool:
    """Present and not blank; a list of blank strings is as empty as no list."""
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, tuple | list):
        return any(_filled(item) for item in value)
    if isinstance(value, Mapping):
        return len(value) > 0
    return value is not None


def _quote(text: str, limit: int = 160) -> str:
    """Quoted as Python would ('Maybe'), on one line, long text cut short."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _keys(texts: Iterable[str]) -> Keys:
    words: set[str] = set()
    paths: set[str] = set()
    for text in map(str.lower, texts):
        for word in _WORD.findall(text):
            if len(word) >= 4 and word not in _STOP_WORDS:
                words.add(word[:-1] if word.endswith("s") and not word.endswith("ss") else word)
        paths.update(p.strip("./") for p in _PATH.findall(text) if p.strip("./"))
    return frozenset(words), frozenset(paths)


def _shares(a: Keys, b: Keys) -> bool:
    if a[0] & b[0]:
        return True
    # A path matches itself, or a longer path ending with it (handler.ts ~ src/handler.ts).
    return any(p == q or p.endswith("/" + q) or q.endswith("/" + p) for p in a[1] for q in b[1])
