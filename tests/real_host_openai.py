"""The real Codex CLI and Copilot CLI against a scripted model on loopback (docs/hooks.md,
"Codex CLI", "Copilot CLI").

Both CLIs can be pointed at an OpenAI-compatible endpoint with no account: Codex through a
`model_providers` entry of its config.toml, Copilot through its BYOK variables
(`COPILOT_OFFLINE=true`, `COPILOT_PROVIDER_BASE_URL`). `ResponsesServer` speaks the OpenAI
Responses API on 127.0.0.1: each agent request (one that offers tools) is answered with the next
scripted turn, streamed as server-sent events (response.created, output_item.added/done,
response.completed); a spent script ends the turn with text. It records every request, so a
test reads what the model was sent: the calls' outputs, the hooks' context, the deny reasons.
`run` runs a CLI headless in a project, bounded by a timeout, and kills its process group after.

The CLIs are pinned npm packages, installed by `.ci/run` into ~/.cache/selfcorrect-test/.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.real_host import LoopbackServer, run_bounded

CODEX_VERSION = "0.171.0"
COPILOT_VERSION = "1.0.102"

Item = dict[str, Any]


@functools.cache
def recorded_events(host: str) -> dict[str, Any]:
    """The events recorded from the real CLI of `host` (tests/replay/hosts/HOST/events.json),
    read when a test runs: collection reads no fixture (tests/test_hermetic_suite.py)."""
    path = Path(__file__).resolve().parent / "replay" / "hosts" / host / "events.json"
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def function_call(ident: str, name: str, **arguments: Any) -> Item:
    return {
        "type": "function_call",
        "id": f"fc_{ident}",
        "call_id": ident,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def message(words: str) -> Item:
    return {
        "type": "message",
        "id": "msg_scripted",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": words, "annotations": []}],
    }


class ResponsesServer(LoopbackServer):
    """The scripted model: one turn (a list of output items) per agent request, in order."""

    def __init__(self, turns: list[list[Item]]) -> None:
        super().__init__("/v1")
        self.turns = turns

    def reply(self, path: str, body: dict[str, Any]) -> tuple[bytes, str]:
        return _stream(self.answer(body), len(self.requests)), "text/event-stream"

    def get(self, path: str) -> tuple[bytes, str, int]:
        return b'{"object": "list", "data": [], "models": []}', "application/json", 200

    def answer(self, body: dict[str, Any]) -> list[Item]:
        with self._lock:
            self.requests.append(body)
            if not body.get("tools"):
                return [message("ok")]  # a side request (a title, a summary)
            agent = [r for r in self.requests if r.get("tools")]
            at = len(agent) - 1
            return self.turns[at] if at < len(self.turns) else [message("Done.")]

    def outputs(self) -> dict[str, str]:
        """Each call's output as the model was sent it, by call id."""
        found: dict[str, str] = {}
        for request in self.requests:
            for item in request.get("input") or []:
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    output = item.get("output")
                    text = output if isinstance(output, str) else json.dumps(output)
                    found.setdefault(str(item.get("call_id")), text)
        return found

    def sent(self) -> str:
        """Everything the model was sent, as one text (the hooks' context is in it)."""
        return "\n".join(json.dumps(r.get("input"), ensure_ascii=False) for r in self.requests)


def first_denied(server: ResponsesServer, calls: list[str]) -> int:
    """The index of the first call whose output was the gate's deny: the calls before it ran."""
    outputs = server.outputs()
    denied = [c for c in calls if "selfcorrect: this exact Bash call" in outputs.get(c, "")]
    assert denied, outputs
    assert "--- [Stuck Detection] Loop detected ---" in server.sent()  # advised before
    return calls.index(denied[0])


def install_hooks(project: Path, host: str) -> None:
    """`selfcorrect install HOST` in the project, as a person runs it."""
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "selfcorrect", "install", host, "-q"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _stream(items: list[Item], number: int) -> bytes:
    usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    }
    ident = f"resp_{number}"
    base = {"id": ident, "object": "response", "created_at": 1, "model": "scripted",
            "status": "in_progress", "output": []}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "response.created", "response": base}]
    for at, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": at, "item": item})
        events.append({"type": "response.output_item.done", "output_index": at, "item": item})
    done = {**base, "status": "completed", "output": items, "usage": usage}
    events.append({"type": "response.completed", "response": done})
    lines = []
    for sequence, event in enumerate(events):
        event["sequence_number"] = sequence
        lines.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
    return "".join(lines).encode("utf-8")


def run(argv: list[str], project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`argv` in `project` with `env` and the machine's PATH, bounded (real_host.run_bounded)."""
    return run_bounded(argv, project, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env})


PENDING = (
    "task_id: WI-1\nmicrotasks:\n"
    "  - {id: MT-1, kind: file_edit, description: d, status: pending}\n"
)  # a micro-task of WI-1 still pending: the stop hooks hold the agent for it


def held_once(server: ResponsesServer) -> None:
    """The stop's hold reached the model once, and the session went on and ended."""
    sent = [json.dumps(r.get("input"), ensure_ascii=False) for r in server.requests]
    holding = [at for at, text in enumerate(sent) if "WI-1 has 1 pending micro-task" in text]
    assert holding, sent[-1][-2000:]
    # The hold is in every request after the first that carries it (the conversation grows),
    # and the text the model was sent once: one hold, never a second block in a row.
    last = sent[-1]
    assert last.count("WI-1 has 1 pending micro-task") == 1, last[-3000:]
