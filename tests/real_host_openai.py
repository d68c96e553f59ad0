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

import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.real_host import _kill_group, _real_home

CODEX_VERSION = "0.171.0"
COPILOT_VERSION = "1.0.102"
SESSION_S = 180

Item = dict[str, Any]


def cli_binary(name: str, package: str, version: str, variable: str) -> Path:
    """A pinned CLI (`~/.cache/selfcorrect-test/NAME/node_modules/.bin/NAME`, or $VARIABLE),
    or a skip saying how to install it: a failure under CI=true."""
    home = Path(os.environ.get("SELFCORRECT_REAL_HOME") or _real_home())
    cache = home / ".cache" / "selfcorrect-test" / name
    found = Path(os.environ.get(variable) or cache / "node_modules" / ".bin" / name)
    if found.is_file() and os.access(found, os.X_OK):
        return found
    why = (
        f"the {package} CLI {version} is not installed at {found}: install it with `npm "
        f"install --prefix {cache} --no-audit --no-fund {package}@{version}` (Node.js and "
        f"npm), or set {variable} to its `{name}`"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


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


class ResponsesServer:
    """The scripted model: one turn (a list of output items) per agent request, in order."""

    def __init__(self, turns: list[list[Item]]) -> None:
        self.turns = turns
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(size) or b"{}")
                data = _stream(server.answer(body), len(server.requests))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                data = b'{"object": "list", "data": [], "models": []}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> list[Item]:
        with self._lock:
            self.requests.append(body)
            if not body.get("tools"):
                return [message("ok")]  # a side request (a title, a summary)
            agent = [r for r in self.requests if r.get("tools")]
            at = len(agent) - 1
            return self.turns[at] if at < len(self.turns) else [message("Done.")]

    @contextlib.contextmanager
    def running(self) -> Iterator[ResponsesServer]:
        thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._httpd.shutdown()
            self._httpd.server_close()
            thread.join(timeout=10)

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
    """`argv` in `project` within SESSION_S; its whole process group (the CLI, its hooks,
    their children) is killed afterwards, whatever happened."""
    process = subprocess.Popen(
        argv,
        cwd=project,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=SESSION_S)
    except subprocess.TimeoutExpired as exc:
        _kill_group(process.pid)
        out, err = process.communicate()
        why = f"the session did not end within {SESSION_S} s: {err[-2000:]}"
        raise AssertionError(why) from exc
    finally:
        _kill_group(process.pid)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


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
