"""A scripted stand-in for the OpenAI Responses API, served in-process on loopback.

The real Codex CLI is pointed at it (see ``codex_driver``); request *i* of turn *k* is answered
with the scenario's ``turns[k]["steps"][i]``, in whichever tool form the client offers.
"""
from __future__ import annotations

import itertools
import json
import threading
from typing import Any

from loopback import LoopbackServer, ScriptedHandler

# --------------------------------------------------------------------------
# scripted Responses API
# --------------------------------------------------------------------------

def _sse(kind: str, **kw: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **kw})}\n\n"


def _offered_tools(body: dict) -> dict[str, str | None]:
    """name -> tool type ('function', 'custom', 'local_shell', ...)."""
    tools: dict[str, str | None] = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        name = t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
        tools[name] = t.get("type")
    return tools


class MockResponsesServer(LoopbackServer):
    """Scripted OpenAI Responses API on 127.0.0.1:<ephemeral port>.

    Use as a context manager.  Call :meth:`begin_turn` before each CLI
    invocation.  ``requests`` records every request: the turn, the index in
    the turn, the path, the tools offered and the items answered (each with
    the step kind and the tool form picked).
    """

    def __init__(self, scenario: dict):
        self.scenario = scenario
        self.turn = 0
        self.requests: list[dict] = []
        self._turn_counter = itertools.count()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- lifecycle (LoopbackServer: stop, port, context manager) ----------
    def start(self) -> None:
        server = self

        class Handler(ScriptedHandler):
            def do_GET(self) -> None:
                with server._lock:
                    server.requests.append({"method": "GET", "path": self.path, "turn": server.turn})
                self._send(200, "application/json", b'{"object":"list","data":[],"models":[]}')

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length", 0) or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if not self.path.split("?", 1)[0].rstrip("/").endswith("/responses"):
                    # not a model turn (e.g. a side feature of some version): no scripted step
                    with server._lock:
                        server.requests.append({"method": "POST", "path": self.path,
                                                "turn": server.turn, "unscripted": True})
                    self._send(404, "application/json", b'{"error":{"message":"not scripted"}}')
                    return
                data = server._answer(self.path, body if isinstance(body, dict) else {})
                self._send(200, "text/event-stream", data)

        self.serve(Handler, "mock-responses")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def begin_turn(self, k: int) -> None:
        with self._lock:
            self.turn = k
            self._turn_counter = itertools.count()

    # -- scripted answers --------------------------------------------------
    def _answer(self, path: str, body: dict) -> bytes:
        tools = _offered_tools(body)
        with self._lock:
            turn = self.turn
            i = next(self._turn_counter)
            turns = self.scenario["turns"]
            steps = turns[turn]["steps"][i] if turn < len(turns) and i < len(turns[turn]["steps"]) \
                else [{"say": "Done."}]
            items, forms = self._items_for(steps, tools)
            self.requests.append({"method": "POST", "path": path, "turn": turn, "index": i,
                                  "tools": tools, "answered": forms})
        rid = f"resp_{turn}_{i}"
        chunks = [_sse("response.created", response={"id": rid})]
        for it in items:
            chunks.append(_sse("response.output_item.done", item=it))
        k = len(self.requests)
        chunks.append(_sse("response.completed", response={"id": rid, "usage": {
            "input_tokens": 1000 + 100 * k, "input_tokens_details": {"cached_tokens": 500},
            "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 10},
            "total_tokens": 1050 + 100 * k}}))
        return "".join(chunks).encode()

    def _items_for(self, steps: list[dict], tools: dict) -> tuple[list[dict], list[dict]]:
        items: list[dict] = []
        forms: list[dict] = []
        for st in steps:
            n = next(self._ids)
            cid = f"call_{n}"
            if "run" in st:
                cmd = st["run"]
                if "exec_command" in tools:
                    form = "exec_command"
                    items.append({"type": "function_call", "name": "exec_command", "call_id": cid,
                                  "arguments": json.dumps({"cmd": cmd})})
                elif "shell_command" in tools:
                    form = "shell_command"
                    items.append({"type": "function_call", "name": "shell_command", "call_id": cid,
                                  "arguments": json.dumps({"command": cmd})})
                elif "local_shell" in tools.values():
                    form = "local_shell"
                    items.append({"type": "local_shell_call", "call_id": cid, "status": "completed",
                                  "action": {"type": "exec", "command": ["bash", "-lc", cmd]}})
                else:
                    form = "shell"
                    items.append({"type": "function_call", "name": "shell", "call_id": cid,
                                  "arguments": json.dumps({"command": ["bash", "-lc", cmd],
                                                           "timeout_ms": 120000})})
                forms.append({"step": "run", "call_id": cid, "form": form})
            elif "patch" in st:
                p = st["patch"]
                kind = tools.get("apply_patch")
                if kind == "custom":
                    form = "apply_patch/custom"
                    items.append({"type": "custom_tool_call", "name": "apply_patch", "call_id": cid,
                                  "input": p})
                elif kind == "function":
                    form = "apply_patch/function"
                    items.append({"type": "function_call", "name": "apply_patch", "call_id": cid,
                                  "arguments": json.dumps({"input": p})})
                else:  # older clients intercept apply_patch invoked through the shell tool
                    form = "shell[apply_patch]"
                    items.append({"type": "function_call", "name": "shell", "call_id": cid,
                                  "arguments": json.dumps({"command": ["apply_patch", p]})})
                forms.append({"step": "patch", "call_id": cid, "form": form})
            elif "plan" in st:
                if "update_plan" in tools:
                    items.append({"type": "function_call", "name": "update_plan", "call_id": cid,
                                  "arguments": json.dumps({"plan": st["plan"]})})
                    forms.append({"step": "plan", "call_id": cid, "form": "update_plan"})
            elif "think" in st:
                items.append({"type": "reasoning", "id": f"rs_{n}",
                              "summary": [{"type": "summary_text", "text": st["think"]}]})
                forms.append({"step": "think"})
            elif "say" in st:
                items.append({"type": "message", "role": "assistant", "id": f"msg_{n}",
                              "content": [{"type": "output_text", "text": st["say"]}]})
                forms.append({"step": "say"})
        return items, forms


