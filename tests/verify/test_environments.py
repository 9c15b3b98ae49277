"""verify with environments: one environments row per task, the mode on each verification, retries
when what decided a task changes (repository search roots), ghost snapshots missing from a clone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from calc_repo import FIX, TESTS, calc_repo
from conftest import query
from session_builder import SessionBuilder

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment
from logmine.verify import VerifyConfig, verify
from logmine.verify.environment import modes_to_try

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")



def _store(tmp_path: Path, builder: SessionBuilder) -> Path:
    builder.write(tmp_path / "sessions")
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(tmp_path / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    return store


def _fix_session(cwd: str, commit: str, ghost: str | None = None) -> SessionBuilder:
    builder = SessionBuilder(cwd=cwd, commit=commit).user("Fix add so the tests pass")
    if ghost:
        builder = builder.ghost(ghost)
    return builder.run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed.")


def test_modes_in_the_documented_order():
    assert modes_to_try("auto", "bwrap") == ("host", "built")
    assert modes_to_try("auto", "podman") == ("built",)
    assert modes_to_try("none", "bwrap") == ("none",)
    with pytest.raises(ValueError, match="unknown environment mode 'venv'"):
        VerifyConfig(env_mode="venv")
    with pytest.raises(ValueError, match="unknown status to redo: done"):
        VerifyConfig(redo=("done",))


def test_environment_row_per_task_and_mode_on_each_verification(tmp_path):
    repo = tmp_path / "work" / "proj"
    store = _store(tmp_path, _fix_session(str(repo), calc_repo(repo)))
    verify(VerifyConfig(store=store, env_mode="none"))
    rows = query(store, "SELECT status, env_mode, env_reason FROM verifications")
    assert {r["status"] for r in rows} == {"validated"}
    assert {r["env_mode"] for r in rows} == {"none"}
    (env,) = query(store, "SELECT * FROM environments")
    assert env["mode"] == "none" and "python3" in env["tools"] and env["languages"] == ["python"]


def test_search_roots_find_the_clone_and_a_change_retries_not_rebuilt(tmp_path):
    clone = tmp_path / "clones" / "proj"
    commit = calc_repo(clone)
    store = _store(tmp_path, _fix_session("/nonexistent/proj", commit))  # the repository moved
    first = verify(VerifyConfig(store=store, env_mode="none"))
    assert first.not_rebuilt and query(store, "SELECT DISTINCT status FROM verifications")[0]["status"] == "not_rebuilt"
    assert verify(VerifyConfig(store=store, env_mode="none")).tasks == 0  # nothing changed: nothing redone
    again = verify(VerifyConfig(store=store, env_mode="none", repo_search=(tmp_path / "clones",)))
    assert again.tasks == 1 and again.rebuilt == 1
    assert {r["status"] for r in query(store, "SELECT status FROM verifications")} == {"validated"}
    redo = verify(VerifyConfig(store=store, env_mode="none", repo_search=(tmp_path / "clones",), redo=("validated",)))
    assert redo.tasks == 1


def test_missing_ghost_snapshot_falls_back_to_the_header_commit(tmp_path):
    repo = tmp_path / "work" / "proj"
    store = _store(tmp_path, _fix_session(str(repo), calc_repo(repo), ghost="c" * 40))
    verify(VerifyConfig(store=store, env_mode="none"))
    rows = query(store, "SELECT status, status_reason FROM verifications")
    assert {r["status"] for r in rows} == {"validated"}
    state = query(store, "SELECT reason FROM verified")[0]["reason"]
    assert "ghost snapshot cccccccccccc is not in the clone: header commit" in state


def test_without_an_environment_the_file_checks_are_still_graded(tmp_path):
    """The session ran its tests from a ``.venv`` the clone lacks: host mode cannot provide it, and
    nothing else is asked for. The task's test stays ``unscored`` with that reason, but its file check
    needs no environment: graded in the bare sandbox, it validates."""
    repo = tmp_path / "work" / "venv"
    commit = calc_repo(repo)
    venv_tests = ".venv/bin/python -m unittest -q"
    store = _store(tmp_path, SessionBuilder(cwd=str(repo), commit=commit).user("Fix add")
                   .run(venv_tests, 1).patch(FIX).run(venv_tests, 0).agent("Fixed."))
    verify(VerifyConfig(store=store, env_mode="host"))
    rows = {r["kind"]: r for r in query(store, "SELECT kind, status, status_reason, env_mode FROM verifiers")}
    assert rows["test_command"]["status"] == "unscored", rows
    assert rows["test_command"]["status_reason"].startswith("environment not provided: host: "), rows
    assert (rows["file_diff"]["status"], rows["file_diff"]["env_mode"]) == ("validated", "none"), rows
    (env,) = query(store, "SELECT mode, mode_reason, notes FROM environments")
    assert env["mode"] == "none" and "for the task's file checks only" in env["mode_reason"], env
