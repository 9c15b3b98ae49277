"""Reading Claude Code session files with plain ``json`` and checking them against a scripted scenario.

Shared by ``tests/test_claude_fixtures.py`` (the committed fixtures) and ``tests/e2e/test_claude_cli.py``
(a live run).  A scenario is the ``mock_messages`` script with ``${REPO}`` filled in; ``skipped`` names
the ``(script, tool)`` pairs the CLI did not offer (``if_offered`` steps the mock left out).
"""
from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

ALIASES = {"Task": {"Task", "Agent"}, "Agent": {"Task", "Agent"}}
EXIT_CODE = re.compile(r"\AExit code (\d+)")
# schema defaults a CLI writes into the stored tool input though the model left them out (2.1: Edit)
INPUT_DEFAULTS = {"replace_all": False}

GENERATED = Path(__file__).parent / "fixtures" / "claude-generated"
#: The real CLI's main session file of the fixadd scenario, per version: two prompts (the second a
#: resume), Bash calls that fail and pass, Read, Edit and Write, a thinking block.
FIXADD = {
    "2.0.50": GENERATED / "claude-2.0.50/projects/-home-dev-projects-fixadd/6b2b77dd-9843-49b2-957c-7e8e2b4c6c88.jsonl",
    "2.1.332": GENERATED / "claude-2.1.332/projects/-home-dev-projects-fixadd/85040c61-fead-4d01-98e7-4f7abc959db0.jsonl",
}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_project(root: Path) -> dict[str, list[dict]]:
    """Every ``*.jsonl`` under ``root`` (a ``projects/<folder>`` directory), by path relative to it."""
    return {p.relative_to(root).as_posix(): read_jsonl(p) for p in sorted(root.rglob("*.jsonl"))}


def blocks(line: dict) -> list[dict]:
    content = (line.get("message") or {}).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def exit_code(block: dict) -> int:
    """A Bash ``tool_result``'s exit status: failures start ``Exit code N`` and set ``is_error``."""
    m = EXIT_CODE.match(result_text(block))
    if m:
        return int(m.group(1))
    return 1 if block.get("is_error") else 0


def scripted(scenario: dict) -> dict[str, list[dict]]:
    """The steps of each conversation (``main`` for the turns, ``agent:<n>`` for each sub-agent), in
    order, each with ``turn``."""
    out: dict[str, list[dict]] = {"main": []}
    n = 0
    for k, turn in enumerate(scenario["turns"]):
        for resp in turn["steps"]:
            for st in resp:
                out["main"].append({**st, "turn": k})
                if "agent" in st:
                    out[f"agent:{n}"] = [{**a, "turn": k} for r in st["agent"] for a in r]
                    n += 1
    return out


def tool_uses(lines: list[dict]) -> list[tuple[dict, dict]]:
    """(line, block) of every ``tool_use``, in file order."""
    return [(ln, b) for ln in lines if ln.get("type") == "assistant" for b in blocks(ln)
            if b.get("type") == "tool_use"]


def tool_results(lines: list[dict]) -> dict[str, tuple[dict, dict]]:
    """``tool_use_id`` -> (line, block) of its ``tool_result``."""
    return {b["tool_use_id"]: (ln, b) for ln in lines if ln.get("type") == "user" for b in blocks(ln)
            if b.get("type") == "tool_result"}


def main_and_agents(files: dict[str, list[dict]], session_id: str) -> tuple[list[dict], list[list[dict]]]:
    """The session's own file and its sub-agents' files (sidechains carrying its ``sessionId``)."""
    main = next(lines for rel, lines in files.items() if Path(rel).name == f"{session_id}.jsonl")
    agents = [lines for rel, lines in files.items() if Path(rel).name.startswith("agent-")
              and any(ln.get("sessionId") == session_id for ln in lines)]
    return main, agents


def check_tool_calls(lines: list[dict], steps: list[dict], skipped: set[str]) -> list[str]:
    """Problems: each scripted tool step against the next ``tool_use`` in ``lines`` (name, input) and
    its ``tool_result`` (``expect_exit``, ``expect_output``, Edit/Write results)."""
    problems: list[str] = []
    uses = iter(tool_uses(lines))
    results = tool_results(lines)
    for st in steps:
        if "tool" not in st or st["tool"] in skipped:
            continue
        got = next(uses, None)
        if got is None:
            problems.append(f"no tool_use for {st['tool']} {st['input']}")
            continue
        line, use = got
        name_ok = use["name"] in ALIASES.get(st["tool"], {st["tool"]})
        allowed = {**INPUT_DEFAULTS, **st.get("input_if_offered", {})}
        extra = {k: v for k, v in use["input"].items() if k not in st["input"]}
        if not name_ok or {k: use["input"].get(k) for k in st["input"]} != st["input"] \
                or any(k not in allowed or allowed[k] != v for k, v in extra.items()):
            problems.append(f"tool_use {use['name']} {use['input']} is not the scripted {st['tool']} {st['input']}")
        if use["id"] not in results:
            problems.append(f"no tool_result for {use['id']} ({use['name']})")
            continue
        rline, res = results[use["id"]]
        problems += _check_result(st, use, rline, res)
    left = list(uses)
    if left:
        problems.append(f"unscripted tool calls: {[u['name'] for _, u in left]}")
    return problems


def _check_result(st: dict, use: dict, rline: dict, res: dict) -> list[str]:
    problems = []
    text = result_text(res)
    if "expect_exit" in st and exit_code(res) != st["expect_exit"]:
        problems.append(f"{use['input'].get('command')}: exit {exit_code(res)}, scripted {st['expect_exit']}: {text!r}")
    if "expect_output" in st and st["expect_output"] not in text:
        problems.append(f"{use['name']} result lacks {st['expect_output']!r}: {text!r}")
    if bool(res.get("is_error")) != bool(st.get("expect_exit")):
        problems.append(f"{use['name']} result is_error={res.get('is_error')} for {use['input']}")
    tur = rline.get("toolUseResult")
    if st["tool"] == "Edit" and isinstance(tur, dict):
        want = {"filePath": st["input"]["file_path"], "oldString": st["input"]["old_string"],
                "newString": st["input"]["new_string"]}
        if {k: tur.get(k) for k in want} != want:
            problems.append(f"Edit toolUseResult {tur} does not match {want}")
    if st["tool"] == "Write" and isinstance(tur, dict):
        if (tur.get("filePath"), tur.get("content")) != (st["input"]["file_path"], st["input"]["content"]):
            problems.append(f"Write toolUseResult {tur} does not match {st['input']}")
    return problems


def check_texts(lines: list[dict], steps: list[dict]) -> list[str]:
    """Problems: every scripted ``say`` and ``think`` is an assistant text or thinking block."""
    texts = [b.get("text") for ln in lines if ln.get("type") == "assistant" for b in blocks(ln)
             if b.get("type") == "text"]
    thoughts = [b.get("thinking") for ln in lines if ln.get("type") == "assistant" for b in blocks(ln)
                if b.get("type") == "thinking"]
    problems = [f"no assistant text {st['say']!r}" for st in steps if "say" in st and st["say"] not in texts]
    problems += [f"no thinking {st['think']!r}" for st in steps if "think" in st and st["think"] not in thoughts]
    return problems


def prompt_lines(lines: list[dict], prompts: list[str]) -> list[dict | None]:
    """For each prompt, the non-sidechain ``user`` line that holds it as its text."""
    def text(ln: dict) -> str:
        return "\n".join(b.get("text", "") for b in blocks(ln) if b.get("type") == "text")
    users = [ln for ln in lines if ln.get("type") == "user" and not ln.get("isSidechain")]
    return [next((ln for ln in users if text(ln) == p), None) for p in prompts]


def chain(lines: list[dict], leaf: dict) -> list[dict]:
    """``leaf`` and its ancestors by ``parentUuid``, root first (raises KeyError on a dangling parent)."""
    by_uuid = {ln["uuid"]: ln for ln in lines if ln.get("uuid")}
    out = [leaf]
    while out[-1].get("parentUuid"):
        out.append(by_uuid[out[-1]["parentUuid"]])
    return out[::-1]


def last_message(lines: list[dict], sidechain: bool = False) -> dict:
    return [ln for ln in lines if ln.get("type") in ("user", "assistant")
            and bool(ln.get("isSidechain")) == sidechain][-1]


class ClaudeLines:
    """A Claude Code 2.1 session file, written line by line in the shapes the real CLI writes
    (``tests/fixtures/claude-generated/claude-2.1.332``): each prompt queued first, one content block per
    assistant line, tool results with their ``toolUseResult`` (Bash's ``stdout``/``stderr``, Write's
    ``create``, Edit's ``structuredPatch``), ``last-prompt`` bookkeeping. Each line hangs under the one
    written before it (``tests/segment/test_claude_branches.py`` builds branching 2.0 files)."""

    def __init__(self, cwd: str = "/home/dev/projects/fixadd", version: str = "2.1.332") -> None:
        self.session_id = str(uuid.uuid4())
        self.cwd, self.version = cwd, version
        self.lines: list[dict] = []
        self.tip: str | None = None
        self._t = self._ids = 0
        self._prompt = ""

    def _stamp(self) -> str:
        self._t += 1
        return f"2026-12-06T03:{self._t // 60:02d}:{self._t % 60:02d}.000Z"

    def _book(self, kind: str, **fields) -> None:
        self.lines.append({"type": kind, **fields, "sessionId": self.session_id})

    def _add(self, kind: str, message: dict, **extra) -> str:
        line_id = str(uuid.uuid4())
        self.lines.append({"parentUuid": self.tip, "isSidechain": False, "type": kind, "message": message,
                           "uuid": line_id, "timestamp": self._stamp(), **extra, "userType": "external",
                           "entrypoint": "sdk-cli", "cwd": self.cwd, "sessionId": self.session_id,
                           "version": self.version, "gitBranch": "main"})
        self.tip = line_id
        return line_id

    def _assistant(self, block: dict) -> str:
        self._ids += 1
        message = {"id": f"msg_mock{self._ids:020d}", "type": "message", "role": "assistant",
                   "model": "claude-opus-5-5", "content": [block], "stop_reason": "tool_use", "stop_sequence": None,
                   "usage": {"input_tokens": 1100, "cache_read_input_tokens": 500, "output_tokens": 50}}
        return self._add("assistant", message)

    def prompt(self, text: str) -> ClaudeLines:
        self._book("queue-operation", operation="enqueue", timestamp=self._stamp(), content=text)
        self._book("queue-operation", operation="dequeue", timestamp=self._stamp())
        self._add("user", {"role": "user", "content": text}, promptId=str(uuid.uuid4()), permissionMode="default")
        self._prompt = text
        return self

    def say(self, text: str) -> ClaudeLines:
        self._assistant({"type": "text", "text": text})
        self._book("last-prompt", lastPrompt=self._prompt, leafUuid=self.tip)
        return self

    def think(self, text: str) -> ClaudeLines:
        self._assistant({"type": "thinking", "thinking": text, "signature": "mock" + "x" * 40})
        return self

    def call(self, name: str, tool_input: dict) -> str:
        """A ``tool_use`` line; returns the call's id."""
        self._ids += 1
        call_id = f"toolu_01{self._ids:022d}"
        self._assistant({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        return call_id

    def result(self, call_id: str, content, tool_result=None, is_error: bool = False) -> ClaudeLines:
        """A ``tool_result`` (``content`` a string or a list of text blocks) and its ``toolUseResult``."""
        block = {"tool_use_id": call_id, "type": "tool_result", "content": content, "is_error": is_error}
        extra = {} if tool_result is None else {"toolUseResult": tool_result}
        self._add("user", {"role": "user", "content": [block]}, **extra, sourceToolAssistantUUID=self.tip)
        return self

    def bash(self, command: str, stdout: str = "OK", stderr: str = "", exit_code: int = 0) -> ClaudeLines:
        call_id = self.call("Bash", {"command": command, "description": "Run it"})
        if exit_code:
            text = f"Exit code {exit_code}\n{stderr or stdout}"
            return self.result(call_id, text, f"Error: {text}", is_error=True)
        return self.result(call_id, stdout + (f"\n{stderr}" if stderr else ""),
                           {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False,
                            "noOutputExpected": False})

    def write(self, path: str, content: str) -> ClaudeLines:
        full = f"{self.cwd}/{path}"
        call_id = self.call("Write", {"file_path": full, "content": content})
        return self.result(call_id, f"File created successfully at: {full}",
                           {"type": "create", "filePath": full, "content": content, "structuredPatch": [],
                            "originalFile": None, "userModified": False})

    def edit(self, path: str, old: str, new: str) -> ClaudeLines:
        """An ``Edit`` of a file that held ``old`` alone, with the hunk the CLI records."""
        full = f"{self.cwd}/{path}"
        call_id = self.call("Edit", {"replace_all": False, "file_path": full, "old_string": old, "new_string": new})
        old_lines, new_lines = old.splitlines(), new.splitlines()
        hunk = {"oldStart": 1, "oldLines": len(old_lines), "newStart": 1, "newLines": len(new_lines),
                "lines": [f"-{line}" for line in old_lines] + [f"+{line}" for line in new_lines]}
        return self.result(call_id, f"The file {full} has been updated successfully.",
                           {"filePath": full, "oldString": old, "newString": new, "originalFile": f"{old}\n",
                            "structuredPatch": [hunk], "userModified": False, "replaceAll": False})

    def save(self, projects: Path) -> Path:
        """``projects/<escaped cwd>/<session uuid>.jsonl``, as the CLI names and writes it (compact JSON)."""
        folder = projects / self.cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.session_id}.jsonl"
        path.write_text("".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n" for line in self.lines))
        return path
