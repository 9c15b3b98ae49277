"""Claude Code sessions whose ``uuid`` tree branches (an edited prompt, a retried turn, a resume from an
earlier point) are cut into tasks from the active branch only: the chain of parents from the session's
last line back to its root. The abandoned branches are counted, in no task, and their edits are no
later task's earlier work. Parallel calls' dead-end results, sub-agent lines and compaction are no
abandoned branch; linear sessions and Codex sessions are cut as before."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, query
from session_builder import SessionBuilder

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment
from logmine.segment.branches import off_branch, read_lines
from logmine.segment.records import load_task, read_tasks
from logmine.store import Store

CWD = "/home/dev/projects/fixadd"
TIP = object()  # a line's parent: the line written before it


class ClaudeSession:
    """A Claude Code 2.0.50 session file, written line by line in the shapes the real CLI writes
    (``tests/fixtures/claude-generated/claude-2.0.50``); each line hangs under the parent a test names."""

    def __init__(self) -> None:
        self.session_id = str(uuid.uuid4())
        self.lines: list[dict] = []
        self.tip: str | None = None
        self._t = 0
        self._ids = 0

    def _stamp(self) -> str:
        self._t += 1
        return f"2026-12-06T03:{self._t // 60:02d}:{self._t % 60:02d}.000Z"

    def _add(self, kind: str, message: dict, parent=TIP, **extra) -> str:
        line_id = str(uuid.uuid4())
        self.lines.append({"parentUuid": self.tip if parent is TIP else parent, "isSidechain": False,
                           "userType": "external", "cwd": CWD, "sessionId": self.session_id, "version": "2.0.50",
                           "gitBranch": "main", "type": kind, "message": message, "uuid": line_id,
                           "timestamp": self._stamp(), **extra})
        self.tip = line_id
        return line_id

    def _response(self) -> str:
        self._ids += 1
        return f"msg_mock{self._ids:018d}"

    def _assistant(self, block: dict, parent=TIP, response: str | None = None) -> str:
        message = {"id": response or self._response(), "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5-20250929", "content": [block], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 1300, "output_tokens": 50}}
        return self._add("assistant", message, parent)

    def prompt(self, text: str, parent=TIP) -> str:
        for operation in ("enqueue", "dequeue"):  # the CLI queues every prompt first (lines without uuid)
            self.lines.append({"type": "queue-operation", "operation": operation, "timestamp": self._stamp(),
                               "sessionId": self.session_id, **({"content": text} if operation == "enqueue" else {})})
        return self._add("user", {"role": "user", "content": text}, parent)

    def say(self, text: str, parent=TIP) -> str:
        return self._assistant({"type": "text", "text": text}, parent)

    def call(self, name: str, tool_input: dict, parent=TIP, response: str | None = None) -> tuple[str, str]:
        """A ``tool_use`` line: (its uuid, the call's id)."""
        self._ids += 1
        call_id = f"toolu_{self._ids:024d}"
        return self._assistant({"type": "tool_use", "id": call_id, "name": name, "input": tool_input}, parent,
                               response), call_id

    def result(self, call_id: str, content: str, parent=TIP, is_error: bool = False, tool_result=None) -> str:
        block = {"tool_use_id": call_id, "type": "tool_result", "content": content, "is_error": is_error}
        return self._add("user", {"role": "user", "content": [block]}, parent, toolUseResult=tool_result)

    def bash(self, command: str, exit_code: int = 0, parent=TIP) -> str:
        _, call_id = self.call("Bash", {"command": command, "description": "Run it"}, parent)
        if exit_code:
            return self.result(call_id, f"Exit code {exit_code}\nFAILED", is_error=True,
                               tool_result=f"Error: Exit code {exit_code}\nFAILED")
        return self.result(call_id, "OK", tool_result={"stdout": "OK", "stderr": "", "interrupted": False,
                                                       "isImage": False})

    def write(self, path: str, content: str, parent=TIP) -> str:
        _, call_id = self.call("Write", {"file_path": f"{CWD}/{path}", "content": content}, parent)
        return self.result(call_id, f"File created successfully at: {CWD}/{path}",
                           tool_result={"type": "create", "filePath": f"{CWD}/{path}", "content": content,
                                        "structuredPatch": [], "originalFile": None})

    def save(self, directory: Path) -> Path:
        folder = directory / "-home-dev-projects-fixadd"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.session_id}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def _edit_result(path: str, old: str, new: str) -> dict:
    return {"filePath": f"{CWD}/{path}", "oldString": old, "newString": new, "originalFile": f"{old}\n",
            "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                 "lines": [f"-{old}", f"+{new}"]}], "userModified": False, "replaceAll": False}


def _segmented(tmp_path: Path, *sessions: ClaudeSession | SessionBuilder):
    for session in sessions:
        if isinstance(session, ClaudeSession):
            session.save(tmp_path / "projects")
        else:
            session.write(tmp_path / "projects")
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(tmp_path / "projects",), store=store, jobs=1))
    return store, segment(SegmentConfig(store=store))


def _tasks(store: Path, session_id: str) -> list[dict]:
    return query(store, "SELECT * FROM tasks WHERE session_id = ? ORDER BY index", [session_id])


def _prior_calls(task: dict) -> list[str]:
    return [p["call_id"] for p in json.loads(task["start_state"])["prior_patches"]]


def test_an_edited_prompt_yields_tasks_from_the_later_branch_only(tmp_path):
    s = ClaudeSession()
    s.prompt("Fix the add function")
    s.write("calc.py", "def add(a, b):\n    return a + b\n")
    answered = s.say("Fixed.")
    s.prompt("Add a sub function")  # abandoned: the user went back and edited it
    s.write("sub.py", "def sub(a, b):\n    return a + b\n")
    s.bash("python3 -m unittest", exit_code=1)
    s.say("Added.")
    s.prompt("Add a sub function with a test", parent=answered)  # the edit: a sibling of the abandoned prompt
    s.write("sub.py", "def sub(a, b):\n    return a - b\n")
    s.say("Added, with a test.")
    s.prompt("Now write a README")
    s.write("README.md", "calc\n")
    s.say("Written.")
    store, summary = _segmented(tmp_path, s)

    tasks = _tasks(store, s.session_id)
    assert [t["prompt"] for t in tasks] == ["Fix the add function", "Add a sub function with a test",
                                            "Now write a README"]
    assert [t["n_tool_calls"] for t in tasks] == [1, 1, 1]
    (abandoned,) = query(store, "SELECT seq FROM events WHERE text = 'Add a sub function'")
    assert tasks[0]["last_seq"] < abandoned["seq"] < tasks[1]["first_seq"]  # no task spans the abandoned branch
    # the abandoned Write is no earlier work of the later tasks: only the active branch's edits are redone
    dead = query(store, "SELECT call_id FROM tool_calls WHERE arguments LIKE '%return a + b%' AND "
                        "arguments LIKE '%sub.py%'")[0]["call_id"]
    assert len(_prior_calls(tasks[2])) == 2 and dead not in _prior_calls(tasks[2])
    (diff,) = query(store, "SELECT files FROM verifiers WHERE task_id = ? AND kind = 'file_diff' AND mode = 'exact'",
                    [tasks[1]["task_id"]])
    assert json.loads(diff["files"])[0]["content"] == "def sub(a, b):\n    return a - b\n"
    assert summary.off_branch == {"sessions": 1, "lines": 8, "requests": 1, "tool_calls": 2}


def test_a_retried_assistant_turn_keeps_the_retry(tmp_path):
    s = ClaudeSession()
    asked = s.prompt("Fix the add function")
    s.write("calc.py", "def add(a, b):\n    return a * b\n")  # the first answer, abandoned for a retry
    s.bash("python3 -m unittest", exit_code=1)
    s.write("calc.py", "def add(a, b):\n    return a + b\n", parent=asked)  # the retried answer
    s.bash("python3 -m unittest")
    s.say("Fixed.")
    store, summary = _segmented(tmp_path, s)

    (task,) = _tasks(store, s.session_id)
    assert task["n_tool_calls"] == 2 and task["n_failed_commands"] == 0
    assert task["final_message"] == "Fixed."
    (diff,) = query(store, "SELECT files FROM verifiers WHERE task_id = ? AND kind = 'file_diff' AND mode = 'exact'",
                    [task["task_id"]])
    assert json.loads(diff["files"])[0]["content"] == "def add(a, b):\n    return a + b\n"
    (run,) = query(store, "SELECT runs FROM verifiers WHERE task_id = ? AND kind = 'test_command'", [task["task_id"]])
    assert [r["exit_code"] for r in json.loads(run["runs"])] == [0]
    # the abandoned answer lies inside the task's span: the actions verify replays leave it out too
    with Store(store, read_only=True) as opened:
        (record,) = read_tasks(opened)
        actions = load_task(opened, record).actions
    assert [(a.kind, a.ops[0].content if a.ops else a.command) for a in actions] == [
        ("patch", "def add(a, b):\n    return a + b\n"), ("command", "python3 -m unittest")]
    assert summary.off_branch == {"sessions": 1, "lines": 4, "requests": 0, "tool_calls": 2}


def test_an_edited_first_prompt_is_a_second_root(tmp_path):
    s = ClaudeSession()
    s.prompt("Fix add")
    s.bash("python3 -m unittest", exit_code=1)
    s.prompt("Fix the add function in calc.py", parent=None)
    s.bash("python3 -m unittest", exit_code=1)
    s.say("It fails.")
    store, summary = _segmented(tmp_path, s)
    assert [t["prompt"] for t in _tasks(store, s.session_id)] == ["Fix the add function in calc.py"]
    assert summary.off_branch["requests"] == 1


def test_parallel_calls_dead_end_results_stay_in_the_task(tmp_path):
    """Two calls of one response: the first result hangs on its own call's line, off the chain."""
    s = ClaudeSession()
    s.prompt("Fix both functions")
    response = s._response()
    first, edit = s.call("Edit", {"file_path": f"{CWD}/calc.py", "old_string": "a - b", "new_string": "a + b"},
                         response=response)
    second, run = s.call("Bash", {"command": "python3 -m unittest", "description": "Run"}, response=response)
    s.result(edit, "The file has been updated.", parent=first, tool_result=_edit_result("calc.py", "a - b", "a + b"))
    s.result(run, "OK", parent=second, tool_result={"stdout": "OK", "stderr": "", "interrupted": False})
    s.say("Fixed.")
    store, summary = _segmented(tmp_path, s)
    (task,) = _tasks(store, s.session_id)
    assert task["n_tool_calls"] == 2 and list(task["files_touched"]) == ["calc.py"]
    assert summary.off_branch == {}


def test_sub_agent_lines_and_compaction_are_no_abandoned_branch(tmp_path):
    s = ClaudeSession()
    s.prompt("Fix the add function")
    s.write("calc.py", "def add(a, b):\n    return a + b\n")
    answered = s.say("Fixed.")
    tip = s.tip
    s.prompt("Explore the tests", parent=None)  # a 1.x sub-agent's lines inside the main file
    s.say("There are two test files.")
    s.lines[-2]["isSidechain"] = s.lines[-1]["isSidechain"] = True
    s.tip = tip
    s._add("system", None, parent=None, subtype="compact_boundary", content="Conversation compacted",
           logicalParentUuid=answered)
    s.lines[-1].pop("message")
    s._add("user", {"role": "user", "content": "This session is being continued from a previous conversation."},
           isCompactSummary=True)
    s.prompt("Now add a sub function")
    s.write("sub.py", "def sub(a, b):\n    return a - b\n")
    s.say("Added.")
    store, summary = _segmented(tmp_path, s)
    tasks = _tasks(store, s.session_id)
    assert [t["prompt"] for t in tasks] == ["Fix the add function", "Explore the tests", "Now add a sub function"]
    assert len(_prior_calls(tasks[2])) == 1
    assert summary.off_branch == {}


@pytest.mark.parametrize("name", ["claude-2.0.50/projects/-home-dev-projects-fixadd/6b2b77dd-9843-49b2-957c-7e8e2b4c6c88",
                                  "claude-2.1.332/projects/-home-dev-projects-fixadd/85040c61-fead-4d01-98e7-4f7abc959db0"])
def test_a_linear_session_is_cut_as_before(tmp_path, name):
    source = FIXTURES / "claude-generated" / f"{name}.jsonl"
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(source,), store=store, jobs=1))
    summary = segment(SegmentConfig(store=store))
    prompts = [t["prompt"] for t in query(store, "SELECT prompt FROM tasks ORDER BY index")]
    assert len(prompts) == 2 and prompts[1] == "Now add a sub function with a test"
    assert summary.off_branch == {} and summary.tasks == 2
    with Store(store, read_only=True) as opened:
        (lines,) = read_lines(opened.con, [str(source)]).values()
    assert len([line for line in lines if line.uuid]) > 20 and off_branch(lines) == frozenset()


def test_a_codex_session_is_cut_as_before(tmp_path):
    b = SessionBuilder().user("Fix the add function").run("pytest -q", 1).run("pytest -q", 0).agent("Fixed.")
    b.user("Now write a README").run("ls").agent("Written.")
    store, summary = _segmented(tmp_path, b)
    assert [t["prompt"] for t in _tasks(store, b.session_id)] == ["Fix the add function", "Now write a README"]
    assert summary.off_branch == {}
    (path,) = query(store, "SELECT source_path FROM files")
    with Store(store, read_only=True) as opened:
        assert read_lines(opened.con, [path["source_path"]]) == {}


def test_exports_leave_out_a_turn_abandoned_for_a_retry(tmp_path):
    """export sft and export atif read a task's events by its seq span, which holds the abandoned
    answer: it is in neither trajectory."""
    from logmine.export.atif import AtifExportConfig, export_atif
    from logmine.export.sft import SftExportConfig, export_sft

    s = ClaudeSession()
    asked = s.prompt("Fix the add function")
    s.write("calc.py", "def add(a, b):\n    return a * b\n")  # abandoned for the retry below
    s.write("calc.py", "def add(a, b):\n    return a + b\n", parent=asked)
    s.bash("python3 -m unittest")
    s.say("Fixed.")
    store, _ = _segmented(tmp_path, s)
    export_sft(SftExportConfig(store=store, out=tmp_path / "sft", min_verifier="any"))
    export_atif(AtifExportConfig(store=store, out=tmp_path / "atif"))
    sft = json.dumps([pq.read_table(p).to_pylist() for p in (tmp_path / "sft" / "data").glob("*.parquet")])
    atif = "".join(p.read_text() for p in (tmp_path / "atif").rglob("*.json"))
    for text in (sft, atif):
        assert "a + b" in text and "a * b" not in text
