"""A session that ran before the repository's first commit starts from nothing, where its own ``ls``
showed what its directory held: an empty directory, or what earlier sessions there (which recorded no
commit either) made. A listed name the rebuild lacks makes a start known to differ; a session that
never listed its directory has no start. Real git repositories dated after the sessions, sessions
replayed in the real bubblewrap sandbox."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import CALC, FIX, TEST_CALC, TESTS, calc_repo
from conftest import query
from replay_support import verdicts, verify_sessions
from session_builder import SessionBuilder

from logmine.export.funnel import categorize

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

AFTER = "2026-01-02T00:00:00Z"  # the repository's first commit; the sessions begin 2026-01-01
EMPTY_LS = "total 8\ndrwxr-xr-x 2 u u 4096 Jan  1 00:00 .\ndrwxr-xr-x 9 u u 4096 Jan  1 00:00 ..\n"


def _add(rel: str, text: str) -> str:
    return f"*** Begin Patch\n*** Add File: {rel}\n" + "".join(f"+{line}\n" for line in text.splitlines()) + \
        "*** End Patch\n"


def _young_repo(tmp_path, monkeypatch, name: str):
    repo = tmp_path / "work" / name
    monkeypatch.setenv("GIT_COMMITTER_DATE", AFTER)
    monkeypatch.setenv("GIT_AUTHOR_DATE", AFTER)
    return repo, calc_repo(repo)


def _later(builder: SessionBuilder, hour: int) -> SessionBuilder:
    """``builder``'s session, begun ``hour`` hours later."""
    for line in builder.lines:
        line["timestamp"] = line["timestamp"].replace("T00:", f"T{hour:02d}:")
        if line["type"] == "session_meta":
            line["payload"]["timestamp"] = line["timestamp"]
    return builder


def _notes(store) -> dict[int, str]:
    rows = query(store, "SELECT t.index, v.reason FROM verified v JOIN tasks t USING (task_id)")
    return {r["index"]: r["reason"] or "" for r in rows}


def test_a_new_project_is_rebuilt_from_nothing_as_its_listing_showed(tmp_path, monkeypatch):
    """The first task writes the project; the second, its fix, starts from nothing plus the first's
    patches, and validates."""
    repo, first = _young_repo(tmp_path, monkeypatch, "new")
    b = (SessionBuilder(cwd=str(repo), commit=None).user("Start a calc module with a test")
         .run("ls -la", 0, EMPTY_LS).patch(_add("calc.py", CALC)).patch(_add("test_calc.py", TEST_CALC))
         .agent("Written.").user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(1, "test_command", None)]["status"] == "validated", rows
    assert _notes(store)[1].startswith("no commit before the session began (2026-01-01"), _notes(store)
    assert "started from nothing, as its `ls` at seq " in _notes(store)[1]
    assert f"holding nothing; the repository's first commit {first[:12]} came after" in _notes(store)[1]


def test_a_listed_name_the_rebuild_lacks_is_a_start_known_to_differ(tmp_path, monkeypatch):
    repo, _ = _young_repo(tmp_path, monkeypatch, "listed")
    b = (SessionBuilder(cwd=str(repo), commit=None).user("Fix add")
         .run("ls", 0, "calc.py\nnode_modules\ntest_calc.py\n").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    reasons = {r["status_reason"] for r in verdicts(store, b).values()}
    assert reasons == {"start tree differed from an empty directory (first mismatch: calc.py, which the session's "
                       "`ls` at seq 5 showed as it began)"}, reasons
    assert categorize(next(iter(reasons)))[0] == "started from uncommitted changes"


def test_earlier_sessions_without_a_commit_make_the_start(tmp_path, monkeypatch):
    """The first session wrote the project in an empty directory; the second began where it left off,
    as its ``ls`` shows (``node_modules`` is ignored by the repository: no start holds it)."""
    repo, _ = _young_repo(tmp_path, monkeypatch, "chained")
    (repo / ".gitignore").write_text("node_modules/\n")
    first = (SessionBuilder(cwd=str(repo), commit=None).user("Start a calc module with a test")
             .run("ls", 0, "").patch(_add("calc.py", CALC)).patch(_add("test_calc.py", TEST_CALC)).agent("Written."))
    second = _later(SessionBuilder(cwd=str(repo), commit=None).user("Fix add")
                    .run("ls", 0, "calc.py\nnode_modules\ntest_calc.py\n").run(TESTS, 1).patch(FIX).run(TESTS, 0)
                    .agent("Fixed."), 5)
    store, _ = verify_sessions(tmp_path, first, second)
    rows = verdicts(store, second)
    assert rows[(0, "test_command", None)]["status"] == "validated", rows
    note = query(store, "SELECT v.reason FROM verified v JOIN tasks t USING (task_id) WHERE t.session_id = ?",
                 [second.session_id])[0]["reason"]
    assert "plus the edits of 1 earlier session(s)" in note and "started from nothing" in note, note


def test_a_session_that_never_listed_its_directory_has_no_start(tmp_path, monkeypatch):
    repo, _ = _young_repo(tmp_path, monkeypatch, "unlisted")
    b = (SessionBuilder(cwd=str(repo), commit=None).user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0)
         .run("ls", 0, "calc.py\ntest_calc.py\n").agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    reasons = {r["status_reason"] for r in verdicts(store, b).values()}
    assert len(reasons) == 1 and next(iter(reasons)).endswith(
        "nor did the session list its directory before changing anything (a start from nothing needs that)"), reasons
    assert categorize(next(iter(reasons)))[0] == "no commit recorded"


def test_a_file_written_into_a_directory_git_kept_no_trace_of_is_replayed(tmp_path):
    """The author's tree held an empty ``plans/`` (git keeps no empty directory): the session's
    ``cat > plans/todo.txt`` succeeded there, and its replay makes the directory first."""
    repo = tmp_path / "work" / "plans"
    commit = calc_repo(repo)
    todo = "*** Begin Patch\n*** Update File: plans/todo.txt\n@@\n-fix add\n+fixed add\n*** End Patch\n"
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("Write the plan")
         .run("cat > plans/todo.txt <<'EOF'\nfix add\nEOF", 0).agent("Written.")
         .user("Fix add").run(TESTS, 1).patch(FIX).patch(todo).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(1, "test_command", None)]["status"] == "validated", rows
    assert "failed at replay" not in _notes(store)[1], _notes(store)


def test_workflow_tooling_a_listing_showed_comes_from_the_repositorys_history(tmp_path, monkeypatch):
    """The directory held BMAD's ``_bmad/`` (installed, committed days later): the listing shows it,
    and the start takes it from the commit that holds it."""
    repo = tmp_path / "work" / "tooled"
    monkeypatch.setenv("GIT_COMMITTER_DATE", AFTER)
    monkeypatch.setenv("GIT_AUTHOR_DATE", AFTER)
    calc_repo(repo, {"_bmad/agents/pm.md": "# PM\n"})
    b = (SessionBuilder(cwd=str(repo), commit=None).user("Start a calc module with a test")
         .run("ls", 0, "_bmad\n").run("ls _bmad/agents", 0, "pm.md\n")
         .patch(_add("calc.py", CALC)).patch(_add("test_calc.py", TEST_CALC)).agent("Written.")
         .user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(1, "test_command", None)]["status"] == "validated", rows
    assert "1 file(s) of _bmad/ (an agent's workflow tooling" in _notes(store)[1], _notes(store)


def test_a_recorded_commit_missing_from_a_clone_whose_history_is_newer_says_it_was_rewritten(tmp_path, monkeypatch):
    repo, _ = _young_repo(tmp_path, monkeypatch, "rewritten")
    b = (SessionBuilder(cwd=str(repo), commit="c" * 40).user("Fix add").run("ls", 0, "calc.py\ntest_calc.py\n")
         .run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    reasons = {r["status_reason"] for r in verdicts(store, b).values()}
    assert len(reasons) == 1 and next(iter(reasons)).startswith(f"commit {'c' * 12} is not in the repository at "), reasons
    assert next(iter(reasons)).endswith("; the clone's oldest commit (2026-01-02) is newer than the session: its "
                                        "history was rewritten)"), reasons
    assert categorize(next(iter(reasons)))[0] == "commit missing from the clone"
