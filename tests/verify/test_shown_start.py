"""A session that began from uncommitted work: its first patch fails on the recorded commit. Where the
agent read the file whole before editing it, the rebuild writes the file as the read showed it, and the
task validates on the author's start; without such a read it stays a start that differed."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from calc_repo import CALC, TESTS, calc_repo
from calc_repo import FIX as FIX_CLEAN
from conftest import query
from session_builder import SessionBuilder, segmented

from logmine.verify import VerifyConfig, verify

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

DIRTY = "def sub(a, b):\n    return a - b\n\n\n" + CALC  # the author's uncommitted sub() above add()
FIX = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def sub(a, b):\n     return a - b\n \n \n def add(a, b):\n"
       "-    return a - b\n+    return a + b\n*** End Patch\n")


def _verified(tmp_path, read: str | None, command: str = "sed -n '1,200p' calc.py",
              diff_of: str | None = None) -> tuple[object, dict]:
    """``diff_of``: the author's uncommitted calc.py, shown by a real ``git diff`` instead of a read."""
    repo = tmp_path / "home" / "u" / "calc"
    commit = calc_repo(repo)
    if diff_of is not None:
        (repo / "calc.py").write_text(diff_of)
        read = subprocess.run(["git", "-C", str(repo), "diff", "--", "calc.py"], capture_output=True, text=True,
                              check=True).stdout
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "calc.py"], check=True)  # a fresh clone's tree
    session = SessionBuilder(cwd=str(repo), commit=commit).user("add is wrong")
    if read is not None:
        session.run(command, 0, read)
    session.run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed.")
    store, _ = segmented(tmp_path, session)
    verify(VerifyConfig(store=store, jobs=1, env_mode="none"))
    (row,) = query(store, "SELECT status, status_reason FROM verifiers WHERE kind = 'test_command'")
    return store, row


def test_a_file_the_session_read_whole_is_written_as_it_showed_it(tmp_path, monkeypatch):
    from logmine.export.tmax import TmaxExportConfig, export_tmax

    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    store, row = _verified(tmp_path, DIRTY)
    assert row["status"] == "validated", row
    assert ("1 file(s) differed from the commit as the session began, written as the session's reads showed "
            "them: calc.py") in row["status_reason"], row
    out = tmp_path / "tmax"
    summary = export_tmax(TmaxExportConfig(store=store, out=out))
    assert summary.rows == summary.reproduced == 1, summary
    (bundle,) = (out / "tasks").iterdir()
    assert (bundle / "environment/seeds/calc.py").read_text() == DIRTY  # the author's start, not the commit's


@pytest.mark.parametrize("read", [None, "def sub(a, b):\n[... omitted 0 of 6 lines ...]\n\n    return a - b\n"])
def test_without_a_whole_read_the_start_still_differed(tmp_path, monkeypatch, read):
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    _, row = _verified(tmp_path, read)
    assert row["status"] == "not_rebuilt", row
    assert row["status_reason"].startswith("start tree differed from commit (first mismatch: calc.py"), row


def test_a_file_a_command_made_that_does_not_replay_here_is_written_before_the_next_step(tmp_path, monkeypatch):
    """An earlier task ran the author's generator (not in the repository: it fails at replay), read
    what it made, and patched it. Before that patch is redone the file is written as the read showed
    it, so the patch applies and the next task is rebuilt and validated; without the read it is not."""
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    made = "def helper():\n    return 1\n"
    edit = "*** Begin Patch\n*** Update File: helper.py\n@@\n def helper():\n-    return 1\n+    return 2\n*** End Patch\n"
    rows = {}
    for read in (True, False):
        repo = tmp_path / str(read) / "home" / "u" / "calc"
        commit = calc_repo(repo)
        session = SessionBuilder(cwd=str(repo), commit=commit).user("generate the helper").run("./tools/gen.sh", 0)
        if read:
            session.run("cat helper.py", 0, made)
        session.patch(edit).agent("Done.").user("add is wrong").run(TESTS, 1).patch(FIX_CLEAN).run(TESTS, 0)
        store, _ = segmented(tmp_path / str(read), session.agent("Fixed."))
        verify(VerifyConfig(store=store, jobs=1, env_mode="none"))
        (rows[read],) = query(store, "SELECT status, status_reason FROM verifiers v JOIN tasks t USING (task_id) "
                                     "WHERE t.index = 1 AND kind = 'test_command'")
    assert rows[True]["status"] == "validated", rows[True]
    assert "differed during the earlier tasks' replay, written as the session's reads showed them: helper.py" \
        in rows[True]["status_reason"], rows[True]
    assert rows[False]["status"] == "not_rebuilt", rows[False]


def test_a_file_a_git_diff_showed_is_its_hunks_on_the_blob_the_diff_names(tmp_path, monkeypatch):
    """The agent looked at the author's uncommitted change with ``git diff`` only: the hunks on the
    committed blob, checked against the work tree's blob id the diff printed, are the author's start."""
    from logmine.export.tmax import TmaxExportConfig, export_tmax

    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    store, row = _verified(tmp_path, None, "git diff -- calc.py", diff_of=DIRTY)
    assert row["status"] == "validated", row
    assert "1 file(s) differed from the commit as the session began, written as the session's reads showed " \
           "them: calc.py" in row["status_reason"], row
    out = tmp_path / "tmax"
    summary = export_tmax(TmaxExportConfig(store=store, out=out))
    assert summary.rows == summary.reproduced == 1, summary
    (bundle,) = (out / "tasks").iterdir()
    assert (bundle / "environment/seeds/calc.py").read_text() == DIRTY


def test_a_diff_whose_result_is_not_the_blob_it_names_is_not_written(tmp_path, monkeypatch):
    """The same diff with a hunk line changed (as a cut or a redaction would): its text is not the
    work tree's blob, so nothing is written and the start still differed."""
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "probe"
    calc_repo(repo)
    (repo / "calc.py").write_text(DIRTY)
    diff = subprocess.run(["git", "-C", str(repo), "diff"], capture_output=True, text=True, check=True).stdout
    _, row = _verified(tmp_path, diff.replace("+    return a - b", "+    return b - a"), "git diff -- calc.py")
    assert row["status"] == "not_rebuilt", row
    assert row["status_reason"].startswith("start tree differed from commit (first mismatch: calc.py"), row


def test_a_patch_apply_patch_refused_changes_nothing_so_a_read_after_it_still_shows_the_start(tmp_path, monkeypatch):
    """The agent's first patch failed (apply_patch refused it: the file was not as it guessed); it then
    read the file whole and patched it. The failed patch changed nothing, so the read shows the
    author's start; counted as a change, it would leave the start unknown."""
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "calc"
    commit = calc_repo(repo)
    session = (SessionBuilder(cwd=str(repo), commit=commit).user("add is wrong").run(TESTS, 1)
               .patch(FIX_CLEAN, ok=False).run("cat calc.py", 0, DIRTY).patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = segmented(tmp_path, session)
    verify(VerifyConfig(store=store, jobs=1, env_mode="none"))
    (row,) = query(store, "SELECT status, status_reason FROM verifiers WHERE kind = 'test_command'")
    assert row["status"] == "validated", row
