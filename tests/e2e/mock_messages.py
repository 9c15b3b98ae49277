"""A scripted stand-in for the Anthropic Messages API, served in-process on loopback.

The real Claude Code CLI is pointed at it (see ``claude_driver``) through ``ANTHROPIC_BASE_URL``.
A scenario is a list of turns; each turn has a prompt and a list of model responses, one per
request the agent makes in that turn.  A response is a list of steps::

    {"say": "text"}                             a text block
    {"think": "text"}                           a thinking block (with a fake signature)
    {"tool": "Bash", "input": {...}}            a tool_use block, input streamed as input_json_delta
    {"tool": "Task", "input": {...},            a sub-agent; its own requests are answered from
     "agent": [[step, ...], ...]}               ``agent``, one list per request

A tool the CLI does not offer is sent anyway (the CLI answers with an error), unless the step says
``"if_offered": true``: then it is left out and recorded as skipped.  ``Task`` and ``Agent`` (the
sub-agent tool's name from 2.1 on) stand for each other.  ``"input_if_offered": {...}`` adds input
fields only where the offered tool's schema has them (``run_in_background: false`` for the 2.1 ``Agent``
tool, whose agents run in the background by default, is refused by the older ``Task`` schema).
A test may add keys of its own to a step (``expect_exit``, ``expect_stdout``); the server ignores them.

Which response answers a request is read from the request itself, not from a counter: the request
belongs to the conversation whose first prompt (a turn's prompt, or a sub-agent's ``prompt``) is the
latest user text it contains, and the answer is the response after as many assistant messages as
follow that prompt.  So retries and side calls (titles, summaries, command-prefix checks: requests
that match no scripted prompt or offer no tools) never shift the script.  Past the end of a list the
server answers with a closing text.
"""
from __future__ import annotations

import itertools
import json
import random
import string
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback import LoopbackServer, ScriptedHandler

# Tools renamed between CLI versions: the scenario names one, the server uses whichever is offered.
TOOL_ALIASES = {"Task": ("Task", "Agent"), "Agent": ("Agent", "Task")}
CLOSING_TEXT = "Done."


def _sse(kind: str, **kw: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **kw})}\n\n"


def _texts(content: Any) -> list[str]:
    """The text of a message's content (a string or a list of blocks), tool results excluded."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(str(block.get("text", "")))
    return out


def _system_text(body: dict) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system or "")


def _chunks(text: str, n: int = 3) -> list[str]:
    """``text`` cut into ``n`` pieces, so that deltas really are partial."""
    if len(text) < n:
        return [text]
    k = -(-len(text) // n)
    return [text[i:i + k] for i in range(0, len(text), k)]


class MockMessagesServer(LoopbackServer):
    """Scripted Anthropic Messages API on 127.0.0.1:<ephemeral port>.

    Use as a context manager; call :meth:`begin_turn` before each CLI invocation.  ``requests``
    records every request: the path, whether it streamed, the tools offered, the conversation and
    index it was matched to (``script``: ``main``, ``agent:<n>`` or ``side``) and the tool calls
    answered (with their ``tool_use`` ids).
    """

    def __init__(self, scenario: dict, seed: str = "logmine-claude-e2e", keep_bodies: bool = False):
        self.scenario = scenario
        self.keep_bodies = keep_bodies  # also record each request's body (to debug a new CLI version)
        self.turn = 0
        self.requests: list[dict] = []
        self._rnd = random.Random(seed)
        self._msg_ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- lifecycle (LoopbackServer: stop, port, context manager) ----------
    def start(self) -> None:
        self.serve(_handler(self), "mock-messages")

    @property
    def base_url(self) -> str:
        """For ``ANTHROPIC_BASE_URL``: the CLI appends ``/v1/messages``."""
        return f"http://127.0.0.1:{self.port}"

    def begin_turn(self, k: int) -> None:
        with self._lock:
            self.turn = k

    def tool_calls(self) -> list[dict]:
        """Every tool call the server answered, in order: {script, turn, index, tool, id, input, step}
        (``id`` None and ``skipped`` set for an ``if_offered`` step the CLI did not offer)."""
        return [c for r in self.requests for c in r.get("calls", [])]

    # -- which scripted response -------------------------------------------
    def _scripts(self) -> list[tuple[str, str, list]]:
        """(name, prompt, responses) of every conversation: the turns, then the sub-agents."""
        out: list[tuple[str, str, list]] = []
        for k, turn in enumerate(self.scenario["turns"]):
            out.append((f"main:{k}", turn["prompt"], turn["steps"]))
        n = 0
        for turn in self.scenario["turns"]:
            for resp in turn["steps"]:
                for st in resp:
                    if "agent" in st:
                        out.append((f"agent:{n}", st["input"]["prompt"], st["agent"]))
                        n += 1
        return out

    def _match(self, body: dict) -> tuple[str, list | None, int]:
        """(script name, its responses, index) for a request; ("side", None, 0) if none matches."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        if not body.get("tools"):
            return "side", None, 0
        scripts = self._scripts()
        # the latest user message that holds a scripted prompt; later prompts win ties
        for pos in range(len(messages) - 1, -1, -1):
            m = messages[pos]
            if m.get("role") != "user":
                continue
            text = "\n".join(_texts(m.get("content")))
            for name, prompt, responses in reversed(scripts):
                if prompt and prompt in text:
                    index = sum(1 for later in messages[pos + 1:] if later.get("role") == "assistant")
                    return name, responses, index
        return "side", None, 0

    # -- answers -------------------------------------------------------------
    def answer(self, path: str, body: dict) -> tuple[dict, list[dict]]:
        """The assistant message for a request (as a non-streaming response) and the record."""
        offered = {t.get("name"): set((t.get("input_schema") or {}).get("properties") or ())
                   for t in body.get("tools") or [] if isinstance(t, dict)}
        with self._lock:
            script, responses, index = self._match(body)
            if responses is None:
                steps = [{"say": _side_answer(body)}]
            elif index < len(responses):
                steps = responses[index]
            else:
                steps = [{"say": CLOSING_TEXT}]
            n = next(self._msg_ids)
            blocks, calls = self._blocks(steps, offered, script, index)
            record = {"path": path, "turn": self.turn, "script": script, "index": index,
                      "stream": bool(body.get("stream")), "model": body.get("model"),
                      "tools": sorted(offered), "calls": calls}
            if self.keep_bodies:
                record["body"] = body
            self.requests.append(record)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        message = {"id": f"msg_mock{n:020d}", "type": "message", "role": "assistant",
                   "model": body.get("model") or "claude-mock", "content": blocks,
                   "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 1000 + 100 * n, "output_tokens": 50,
                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 500}}
        return message, calls

    def _tool_id(self) -> str:
        alnum = string.ascii_letters + string.digits
        return "toolu_01" + "".join(self._rnd.choice(alnum) for _ in range(22))

    def _blocks(self, steps: list[dict], offered: dict, script: str, index: int) -> tuple[list, list]:
        blocks: list[dict] = []
        calls: list[dict] = []
        for st in steps:
            if "say" in st:
                blocks.append({"type": "text", "text": st["say"]})
            elif "think" in st:
                sig = "".join(self._rnd.choice(string.ascii_letters) for _ in range(40))
                blocks.append({"type": "thinking", "thinking": st["think"], "signature": "mock" + sig})
            elif "tool" in st:
                name = next((a for a in TOOL_ALIASES.get(st["tool"], (st["tool"],)) if a in offered), None)
                if name is None and st.get("if_offered"):
                    calls.append({"script": script, "turn": self.turn, "index": index, "tool": st["tool"],
                                  "id": None, "input": st["input"], "step": st, "skipped": "not offered"})
                    continue
                name = name or st["tool"]
                known = offered.get(name, set())
                tool_input = {**st["input"], **{k: v for k, v in st.get("input_if_offered", {}).items()
                                                if k in known}}
                tid = self._tool_id()
                blocks.append({"type": "tool_use", "id": tid, "name": name, "input": tool_input})
                calls.append({"script": script, "turn": self.turn, "index": index, "tool": name,
                              "id": tid, "input": tool_input, "step": st})
        return blocks, calls


def stream_events(message: dict) -> str:
    """``message`` as the SSE events of a streaming response."""
    head = {**message, "content": [], "stop_reason": None,
            "usage": {**message["usage"], "output_tokens": 1}}
    out = [_sse("message_start", message=head)]
    for i, b in enumerate(message["content"]):
        if b["type"] == "text":
            out.append(_sse("content_block_start", index=i, content_block={"type": "text", "text": ""}))
            for piece in _chunks(b["text"]):
                out.append(_sse("content_block_delta", index=i, delta={"type": "text_delta", "text": piece}))
        elif b["type"] == "thinking":
            out.append(_sse("content_block_start", index=i,
                            content_block={"type": "thinking", "thinking": "", "signature": ""}))
            for piece in _chunks(b["thinking"]):
                out.append(_sse("content_block_delta", index=i,
                                delta={"type": "thinking_delta", "thinking": piece}))
            out.append(_sse("content_block_delta", index=i,
                            delta={"type": "signature_delta", "signature": b["signature"]}))
        else:
            out.append(_sse("content_block_start", index=i, content_block={
                "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}))
            for piece in _chunks(json.dumps(b["input"])):
                out.append(_sse("content_block_delta", index=i,
                                delta={"type": "input_json_delta", "partial_json": piece}))
        out.append(_sse("content_block_stop", index=i))
    out.append(_sse("message_delta", delta={"stop_reason": message["stop_reason"], "stop_sequence": None},
                    usage={"output_tokens": message["usage"]["output_tokens"]}))
    out.append(_sse("message_stop"))
    return "".join(out)


def _side_answer(body: dict) -> str:
    """A sensible answer to a request the script does not cover (the CLI's own side calls)."""
    text = _system_text(body) + "\n" + "\n".join(
        t for m in body.get("messages") or [] if isinstance(m, dict) for t in _texts(m.get("content")))
    low = text.lower()
    if "isnewtopic" in low:
        return json.dumps({"isNewTopic": True, "title": "Scripted session"})
    if "prefix" in low and "command" in low:
        return "none"
    if "json" in low and "title" in low:
        return json.dumps({"title": "Scripted session"})
    if "title" in low:
        return "Scripted session"
    if "summar" in low:
        return "Scripted session summary"
    return "OK"


def _handler(server: MockMessagesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            with server._lock:
                server.requests.append({"method": "GET", "path": self.path, "turn": server.turn,
                                        "script": "unscripted"})
            self._send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error"}}')

        def do_HEAD(self) -> None:
            self._send(200, "text/plain", b"")

        def do_POST(self) -> None:
            n = int(self.headers.get("content-length", 0) or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            body = body if isinstance(body, dict) else {}
            path = self.path.split("?", 1)[0].rstrip("/")
            if path.endswith("/messages/count_tokens"):
                size = len(json.dumps(body.get("messages", [])))
                self._send(200, "application/json", json.dumps({"input_tokens": size // 4}).encode())
                return
            if not path.endswith("/v1/messages"):
                with server._lock:
                    server.requests.append({"method": "POST", "path": self.path, "turn": server.turn,
                                            "script": "unscripted"})
                self._send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error"}}')
                return
            message, _ = server.answer(self.path, body)
            if body.get("stream"):
                self._send(200, "text/event-stream", stream_events(message).encode())
            else:
                self._send(200, "application/json", json.dumps(message).encode())

    return Handler
