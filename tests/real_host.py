"""The real Claude Code CLI against a scripted model on loopback (docs/hooks.md, "Tested under
the real host").

`ModelServer` speaks the Anthropic Messages API on 127.0.0.1: each request is answered with
the next turn of the conversation it belongs to (found by a marker in its first user message),
streamed as server-sent events (message_start, content_block_start/delta/stop, message_delta,
message_stop); a conversation whose script is spent ends its turn with text. It records every
request, so a test reads what the model was sent: the tool results, the hook's context, the
deny reasons. `run_session` runs `claude -p` headless in a project with the server as its
endpoint, bounded by a timeout, and kills its whole process group after.

The CLI is the pinned npm package, installed by `.ci/run` (see CLAUDE_CODE_VERSION).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

CLAUDE_CODE_VERSION = "2.1.332"
SESSION_S = 180  # one scripted session; each takes a few seconds

Block = dict[str, Any]
Turn = list[Block] | Callable[[dict[str, Any]], list[Block]]


def cli_binary(folder: str, name: str, package: str, version: str, variable: str) -> Path:
    """A pinned CLI (`~/.cache/selfcorrect-test/FOLDER/node_modules/.bin/NAME`, or $VARIABLE),
    or a skip that says how to install it: a failure under CI=true."""
    # The real home: conftest points HOME at a temporary folder for every test.
    home = Path(os.environ.get("SELFCORRECT_REAL_HOME") or _real_home())
    cache = home / ".cache" / "selfcorrect-test" / folder
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


def claude_binary() -> Path:
    """The pinned Claude Code CLI (see `cli_binary`)."""
    return cli_binary(
        "claude-code", "claude", "@anthropic-ai/claude-code", CLAUDE_CODE_VERSION,
        "SELFCORRECT_CLAUDE",
    )  # fmt: skip


def _real_home() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_dir


def tool_use(ident: str, name: str, **tool_input: Any) -> Block:
    return {"type": "tool_use", "id": ident, "name": name, "input": tool_input}


def text(words: str) -> Block:
    return {"type": "text", "text": words}


class LoopbackServer:
    """An HTTP server on 127.0.0.1 answering each POST with `reply(path, body)`: what the
    scripted models of every host share. It records every request body."""

    def __init__(self, base_path: str = "") -> None:
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
                self._send(*server.reply(self.path, body))

            def do_GET(self) -> None:
                self._send(*server.get(self.path))

            def _send(self, data: bytes, kind: str, status: int = 200) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}{base_path}"

    def reply(self, path: str, body: dict[str, Any]) -> tuple[bytes, str]:
        raise NotImplementedError

    def get(self, path: str) -> tuple[bytes, str, int]:
        return b"", "text/plain", 404

    @contextlib.contextmanager
    def running(self) -> Iterator[Any]:
        thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._httpd.shutdown()
            self._httpd.server_close()
            thread.join(timeout=10)


class ModelServer(LoopbackServer):
    """The scripted model: {marker: [turn, ...]} (see the module's docstring)."""

    def __init__(self, script: dict[str, list[Turn]]) -> None:
        super().__init__()
        self.script = script
        self._next: dict[str, int] = {}

    def reply(self, path: str, body: dict[str, Any]) -> tuple[bytes, str]:
        if "count_tokens" in path:
            return b'{"input_tokens": 10}', "application/json"
        return _response(body, self.answer(body))

    def answer(self, body: dict[str, Any]) -> list[Block]:
        with self._lock:
            self.requests.append(body)
            if not body.get("tools"):
                return [text("ok")]  # a side request (a title, a summary): not the agent's turn
            first = _first_user_text(body)
            for marker, turns in self.script.items():
                if marker in first:
                    at = self._next.get(marker, 0)
                    self._next[marker] = at + 1
                    if at < len(turns):
                        turn = turns[at]
                        return turn(body) if callable(turn) else turn
                    break
            return [text("Done.")]

    # --- what the model was sent ---------------------------------------------------------------

    def conversation(self, marker: str) -> list[dict[str, Any]]:
        """The agent requests of one conversation, in order."""
        return [r for r in self.requests if r.get("tools") and marker in _first_user_text(r)]

    def tool_result(self, ident: str) -> tuple[str, bool]:
        """The result the model was sent for one call: its text, and whether it is an error."""
        for request in self.requests:
            for message in request.get("messages", []):
                for block in _blocks(message):
                    if block.get("type") == "tool_result" and block.get("tool_use_id") == ident:
                        return _flat(block.get("content")), block.get("is_error") is True
        raise AssertionError(f"the model was never sent a result for {ident}")

    def sent_after(self, ident: str) -> str:
        """Everything in the first request that carries the result of `ident`, from that result
        on: the result and whatever the host added beside it (a hook's context)."""
        for request in self.requests:
            messages = json.dumps(request.get("messages", []), ensure_ascii=False)
            at = messages.find(f'"tool_use_id": "{ident}"')
            if at >= 0:
                return messages[at:]
        raise AssertionError(f"the model was never sent a result for {ident}")


def _response(body: dict[str, Any], blocks: list[Block]) -> tuple[bytes, str]:
    model = body.get("model", "scripted")
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    usage = {"input_tokens": 1, "output_tokens": 1}
    if not body.get("stream"):
        message = {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        return json.dumps(message).encode("utf-8"), "application/json"
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_scripted",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]  # fmt: skip
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    data = "".join(f"event: {name}\ndata: {json.dumps(d)}\n\n" for name, d in events)
    return data.encode("utf-8"), "text/event-stream"


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _flat(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))


def _first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else _flat(content)
    return ""


def run_session(
    claude: Path,
    project: Path,
    prompt: str,
    server: ModelServer,
    home: Path,
    *,
    plugin_dir: Path | None = None,
    path_first: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`claude -p PROMPT` in `project` against `server`, within SESSION_S; its whole process
    group (the CLI, its hooks, their children) is killed afterwards, whatever happened. With
    `plugin_dir`, the CLI loads that plugin for the session (`--plugin-dir`); `path_first` goes
    first on the session's PATH (where a plugin's bare `selfcorrect` is found)."""
    path = os.environ.get("PATH", "/usr/bin:/bin")
    env = {
        "PATH": path if path_first is None else f"{path_first}{os.pathsep}{path}",
        "HOME": str(home),
        "IS_SANDBOX": "1",  # lets the CLI skip permission prompts as root
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted-model",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
    }
    argv = [str(claude), "-p", prompt, "--dangerously-skip-permissions", "--output-format", "json"]
    if plugin_dir is not None:
        argv += ["--plugin-dir", str(plugin_dir)]
    return run_bounded(argv, project, env)


def run_bounded(
    argv: list[str], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """An agent CLI's session: `argv` in `cwd` within SESSION_S; its whole process group (the
    CLI, its hooks, their children) is killed afterwards, whatever happened."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
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
        raise AssertionError(
            f"the session did not end within {SESSION_S} s: {err[-2000:]}"
        ) from exc
    finally:
        _kill_group(process.pid)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
