"""Segment on real sessions: the generated scenario sessions and the public fixtures."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from conftest import FIXTURES, query

from logmine.patch import apply_patch, parse_patch
from logmine.segment import SegmentConfig, segment

SCENARIO = FIXTURES / "codex-generated/scenario-fixadd"
INJECTED_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<turn_aborted>",
                     "<permissions instructions>", "<skills_instructions>")


@pytest.fixture(scope="module")
def segmented(fixture_store):
    store, _ = fixture_store
    return store, segment(SegmentConfig(store=store))


def _git_diff_lines(repo, base: str) -> dict[str, tuple[list[str], list[str]]]:
    """{path: (added, removed)} of `git diff base` in the worked repository."""
    diff = subprocess.run(["git", "diff", "--no-color", "-U0", base], cwd=repo, capture_output=True, text=True,
                          check=True).stdout
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    untracked = subprocess.run(["git", "diff", "--cached", "--no-color", "-U0", base], cwd=repo,
                               capture_output=True, text=True, check=True).stdout
    result: dict[str, tuple[list[str], list[str]]] = {}
    path = None
    for line in (untracked or diff).splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line != "+++ /dev/null" else None
        elif line.startswith("--- ") or line.startswith("@@"):
            continue
        elif path and line.startswith("+"):
            result.setdefault(path, ([], []))[0].append(line[1:])
        elif path and line.startswith("-"):
            result.setdefault(path, ([], []))[1].append(line[1:])
    return result


def _worked_repo(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(SCENARIO / "repo", repo)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start"]):
        subprocess.run(cmd, cwd=repo, check=True)
    return repo


@pytest.mark.parametrize("version", ["0.20.0", "0.45.0", "0.90.0", "0.171.0"])
def test_generated_sessions(segmented, tmp_path, version):
    store, _ = segmented
    path = str(next((FIXTURES / f"codex-generated/codex-{version}").glob("*.jsonl")))
    scenario = json.loads((SCENARIO / "scenario.json").read_text())
    turns = scenario["turns"][:1] if version == "0.20.0" else scenario["turns"]
    tasks = query(store, "SELECT * FROM tasks WHERE source_path = ? ORDER BY index", [path])
    assert [t["prompt"] for t in tasks] == [t["prompt"] for t in turns]
    assert all(t["rebuildable"] and t["has_final_message"] and not t["aborted"] for t in tasks)
    first = query(store, "SELECT * FROM verifiers WHERE task_id = ? AND kind = 'test_command'", [tasks[0]["task_id"]])
    assert len(first) == 1 and first[0]["fail_to_pass"] and first[0]["command"] == "python -m pytest -q"
    # each task's file diff equals `git diff` of the repository worked by the scenario's patches
    repo = _worked_repo(tmp_path)
    for task, turn in zip(tasks, turns):
        base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
        for step in (s for request in turn["steps"] for s in request if "patch" in s):
            apply_patch(parse_patch(step["patch"]), repo)
        expected = _git_diff_lines(repo, base)
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "turn"], cwd=repo,
                       check=True)
        diff = query(store, "SELECT files FROM verifiers WHERE task_id = ? AND kind = 'file_diff' AND mode = 'hunks'",
                     [task["task_id"]])[0]["files"]
        got = {f["path"]: (sorted(f["added"]), sorted(f["removed"])) for f in json.loads(diff)}
        assert got == {p: (sorted(a), sorted(r)) for p, (a, r) in expected.items()}, version
        assert task["files_touched"] == sorted(expected)


def test_public_fixture_tasks(segmented):
    store, summary = segmented
    tasks = query(store, "SELECT t.*, s.source FROM tasks t JOIN sessions s USING (source_path, session_id)")
    assert len(tasks) == summary.tasks > 50
    for task in tasks:
        assert task["prompt"].strip(), task["task_id"]
        assert not task["prompt"].lstrip().startswith(INJECTED_PREFIXES), task["prompt"][:80]
        assert not (task["source"] or "").startswith("subagent")
    ids = [t["task_id"] for t in tasks]
    assert len(ids) == len(set(ids))
    assert summary.no_task_reasons == {"no genuine user request": 2}


def test_segment_is_idempotent(segmented):
    store, _ = segmented
    before = query(store, "SELECT * EXCLUDE (seg_gen) FROM tasks ORDER BY task_id")
    again = segment(SegmentConfig(store=store))
    assert again.sessions_segmented == 0
    assert query(store, "SELECT * EXCLUDE (seg_gen) FROM tasks ORDER BY task_id") == before
