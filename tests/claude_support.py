"""Reading Claude Code session files with plain ``json`` and checking them against a scripted scenario.

Shared by ``tests/test_claude_fixtures.py`` (the committed fixtures) and ``tests/e2e/test_claude_cli.py``
(a live run).  A scenario is the ``mock_messages`` script with ``${REPO}`` filled in; ``skipped`` names
the ``(script, tool)`` pairs the CLI did not offer (``if_offered`` steps the mock left out).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

ALIASES = {"Task": {"Task", "Agent"}, "Agent": {"Task", "Agent"}}
EXIT_CODE = re.compile(r"\AExit code (\d+)")
# schema defaults a CLI writes into the stored tool input though the model left them out (2.1: Edit)
INPUT_DEFAULTS = {"replace_all": False}


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
