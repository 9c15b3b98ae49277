"""Write G2 (typed-wrapper) Codex session files for tests, line by line as the CLI writes them.

Only the shapes logmine reads are produced; every line is a real G2 record kind
(the typed-wrapper format of Codex 0.34 and later). Used where a behaviour needs a session the fixtures do
not contain (follow-ups, aborts, sub-agents, shell edits).
"""

from __future__ import annotations

import itertools
import json
import uuid
from pathlib import Path

_ids = itertools.count(1)


class SessionBuilder:
    def __init__(self, cwd: str = "/work/repo", commit: str | None = "a" * 40, source="cli", session_id=None,
                 branch: str = "main"):
        self.session_id = session_id or str(uuid.uuid4())
        self.cwd = cwd
        self.lines: list[dict] = []
        self._t = 0
        git = {"commit_hash": commit, "branch": branch, "repository_url": "git@example.com:x/y.git"} if commit else {}
        self._add("session_meta", {"id": self.session_id, "timestamp": self._ts(), "cwd": cwd,
                                   "originator": "codex_cli_rs", "cli_version": "0.63.0", "source": source,
                                   "model_provider": "openai", "git": git})

    def _ts(self) -> str:
        self._t += 1
        return f"2026-01-01T00:{self._t // 60:02d}:{self._t % 60:02d}.000Z"

    def _add(self, kind: str, payload: dict) -> SessionBuilder:
        self.lines.append({"timestamp": self._ts(), "type": kind, "payload": payload})
        return self

    def _message(self, role: str, text: str) -> SessionBuilder:
        kind = "input_text" if role == "user" else "output_text"
        return self._add("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    def user(self, text: str) -> SessionBuilder:
        self._message("user", f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n</environment_context>")
        self._add("turn_context", {"cwd": self.cwd, "approval_policy": "never", "model": "gpt-5-codex",
                                   "sandbox_policy": {"type": "danger-full-access"}, "summary": "auto"})
        self._message("user", text)
        return self._add("event_msg", {"type": "user_message", "message": text, "images": []})

    def agent(self, text: str) -> SessionBuilder:
        self._message("assistant", text)
        return self._add("event_msg", {"type": "agent_message", "message": text})

    def run(self, command: str, exit_code: int | None = 0, output: str = "", answered: bool = True) -> SessionBuilder:
        call_id = f"call_{next(_ids)}"
        self._add("response_item", {"type": "function_call", "name": "shell_command", "call_id": call_id,
                                    "arguments": json.dumps({"command": command, "workdir": self.cwd})})
        if answered:
            self._add("response_item", {"type": "function_call_output", "call_id": call_id,
                                        "output": f"Exit code: {exit_code}\nWall time: 0.1 seconds\nOutput:\n{output}"})
        return self

    def patch(self, patch: str, ok: bool = True) -> SessionBuilder:
        call_id = f"call_{next(_ids)}"
        self._add("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": call_id,
                                    "input": patch, "status": "completed"})
        out = "Success. Updated the following files:\n" if ok else "apply_patch verification failed: no match"
        meta = {"exit_code": 0 if ok else 1, "duration_seconds": 0.0}
        return self._add("response_item", {"type": "custom_tool_call_output", "call_id": call_id,
                                           "output": json.dumps({"output": out, "metadata": meta})})

    def ghost(self, commit: str, untracked: tuple[str, ...] = ()) -> SessionBuilder:
        return self._add("response_item", {"type": "ghost_snapshot", "ghost_commit": {
            "id": commit, "parent": "b" * 40, "preexisting_untracked_files": list(untracked),
            "preexisting_untracked_dirs": []}})

    def abort(self) -> SessionBuilder:
        self._add("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
        return self._message("user", "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>")

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"rollout-2026-01-01T00-00-00-{self.session_id}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def segmented(tmp_path: Path, *builders: SessionBuilder):
    """Write ``builders``' sessions under ``tmp_path/sessions``, ingest and segment them into
    ``tmp_path/store``; returns (store, segment summary)."""
    from logmine.ingest.run import IngestConfig, ingest
    from logmine.segment import SegmentConfig, segment

    for builder in builders:
        builder.write(tmp_path / "sessions")
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(tmp_path / "sessions",), store=store, jobs=1))
    return store, segment(SegmentConfig(store=store))


def fixed_and_verified(tmp_path: Path, repo: Path, commit: str, test: str, fix: str, env_mode: str) -> tuple[Path, dict]:
    """One session in ``repo`` at ``commit``: ``test`` fails, the ``fix`` patch, ``test`` passes; ingested,
    segmented and verified with ``env_mode``. Returns the store and the test candidate's verifiers row."""
    from conftest import query

    from logmine.verify import VerifyConfig, verify

    session = (SessionBuilder(cwd=str(repo), commit=commit)
               .user("add is wrong").run(test, 1).patch(fix).run(test, 0).agent("Fixed."))
    store, _ = segmented(tmp_path, session)
    verify(VerifyConfig(store=store, jobs=1, env_mode=env_mode))
    (row,) = query(store, "SELECT status, status_reason FROM verifiers WHERE kind = 'test_command'")
    return store, row
