"""Sessions run one after another in one directory without a commit between them all record the same
commit; the later one began with the earlier one's edits in the work tree. When the commit alone is
shown not to be its start (its first patch does not apply), the start is rebuilt with the earlier
sessions' edits redone first, and taken when the task's patches apply there. Real git repositories,
sessions replayed in the real bubblewrap sandbox."""

from __future__ import annotations

import shutil

import pytest
from calc_repo import FIX, TESTS, calc_repo
from conftest import query
from session_builder import SessionBuilder, segmented

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

SUB_TEST = ("import unittest\n\nfrom calc import sub\n\n\nclass S(unittest.TestCase):\n"
            "    def test_sub(self):\n        self.assertEqual(sub(3, 1), 2)\n")
ADD_SUB = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n     return a + b\n+\n+\n+def sub(a, b):\n"
           "+    return a - b\n*** Add File: test_sub.py\n" + "".join(f"+{line}\n" for line in SUB_TEST.splitlines())
           + "*** End Patch\n")


def _an_hour_later(builder: SessionBuilder) -> SessionBuilder:
    """The same session, begun an hour later (``SessionBuilder`` starts every session at 00:00)."""
    for line in builder.lines:
        line["timestamp"] = line["timestamp"].replace("T00:", "T01:")
        if "timestamp" in line["payload"]:
            line["payload"]["timestamp"] = line["payload"]["timestamp"].replace("T00:", "T01:")
    return builder


def _verified(tmp_path, *builders: SessionBuilder) -> list[dict]:
    from logmine.verify import VerifyConfig, verify

    store, _ = segmented(tmp_path, *builders)
    verify(VerifyConfig(store=store, jobs=2))
    return query(store, "SELECT t.session_id, v.kind, v.status, v.status_reason, r.reason AS note FROM verifiers v "
                        "JOIN tasks t USING (task_id) LEFT JOIN verified r USING (task_id)")


def test_a_session_after_an_uncommitted_one_starts_from_its_edits(tmp_path):
    repo = tmp_path / "work" / "proj"
    commit = calc_repo(repo)
    first = SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0)
    second = _an_hour_later(SessionBuilder(cwd=str(repo), commit=commit).user("Add sub with a test")
                            .patch(ADD_SUB).run(f"{TESTS} test_sub", 0).agent("Done."))
    rows = [r for r in _verified(tmp_path, first.agent("Fixed."), second) if r["session_id"] == second.session_id]
    test = next(r for r in rows if r["kind"] == "test_command")
    assert test["status"] == "validated", rows
    assert test["note"].startswith("started from the session's commit plus the edits of 1 earlier session(s) in "
                                   f"this directory at that commit ({first.session_id[:8]})"), test["note"]


def test_a_session_that_began_from_the_clean_commit_takes_no_earlier_edits(tmp_path):
    """The author discarded the first session's work: the second's patch applies to the commit itself."""
    repo = tmp_path / "work" / "clean"
    commit = calc_repo(repo)
    first = SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0)
    second = _an_hour_later(SessionBuilder(cwd=str(repo), commit=commit).user("Fix add again")
                            .run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    rows = [r for r in _verified(tmp_path, first.agent("Fixed."), second) if r["session_id"] == second.session_id]
    assert {r["status"] for r in rows} == {"validated"}, rows
    assert not any("earlier session" in (r["note"] or "") for r in rows), rows


def test_a_start_neither_the_commit_nor_the_earlier_edits_explain_stays_a_dirty_start(tmp_path):
    repo = tmp_path / "work" / "dirty"
    commit = calc_repo(repo)
    first = SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0)
    elsewhere = ADD_SUB.replace("     return a + b\n", "     return a + b  # checked\n")
    second = _an_hour_later(SessionBuilder(cwd=str(repo), commit=commit).user("Add sub with a test")
                            .patch(elsewhere).run(f"{TESTS} test_sub", 0).agent("Done."))
    rows = [r for r in _verified(tmp_path, first.agent("Fixed."), second) if r["session_id"] == second.session_id]
    assert {r["status"] for r in rows} == {"not_rebuilt"}, rows
    assert {r["status_reason"] for r in rows} == {"start tree differed from commit (first mismatch: calc.py)"}


def test_a_command_run_first_in_a_folder_an_earlier_session_made_takes_its_edits(tmp_path):
    """The later session's first command ran in web/, which the earlier session added and never
    committed: the commit alone lacks the folder; with the earlier edits it is there."""
    repo = tmp_path / "work" / "folders"
    commit = calc_repo(repo)
    first = (SessionBuilder(cwd=str(repo), commit=commit).user("Start the web part")
             .patch("*** Begin Patch\n*** Add File: web/app.py\nX = 1\n*** End Patch\n".replace("X =", "+X =")))
    second = SessionBuilder(cwd=str(repo), commit=commit).user("Fix add")
    second.cwd = str(repo / "web")
    second.run("ls", 0, output="app.py")
    second.cwd = str(repo)
    second = _an_hour_later(second.run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    rows = [r for r in _verified(tmp_path, first.agent("Started."), second) if r["session_id"] == second.session_id]
    test = next(r for r in rows if r["kind"] == "test_command")
    assert test["status"] == "validated", rows
    assert "plus the edits of 1 earlier session(s)" in test["note"] and "no directory" not in test["note"], test["note"]


def test_earlier_edits_are_redone_from_the_branch_the_earlier_session_was_on(tmp_path):
    """spec-kit's flow: the first session (on main) makes a feature branch and its folder with one
    script; the second session recorded that branch. Redone on the second session's branch, the
    script's ``git checkout -b`` failed (the branch existed) and the folder was never made; redone from
    main, as the author ran it, the folder is there for the second session's first command."""
    repo = tmp_path / "work" / "speckit"
    commit = calc_repo(repo)
    feature = "git checkout -b 001-sub && mkdir -p specs/001-sub && echo '# Sub' > specs/001-sub/spec.md"
    first = (SessionBuilder(cwd=str(repo), commit=commit).user("Specify subtraction").run(feature, 0)
             .agent("Specified."))
    second = SessionBuilder(cwd=str(repo), commit=commit, branch="001-sub").user("Implement the spec")
    second.cwd = str(repo / "specs" / "001-sub")
    second.run("head -n 1 spec.md", 0, output="# Sub\n")  # not shown whole: the chain makes it
    second.cwd = str(repo)
    second = _an_hour_later(second.run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Done."))
    rows = [r for r in _verified(tmp_path, first, second) if r["session_id"] == second.session_id]
    test = next(r for r in rows if r["kind"] == "test_command")
    assert test["status"] == "validated", rows
    assert "plus the edits of 1 earlier session(s)" in test["note"] and "failed at replay" not in test["note"], \
        test["note"]


def test_commands_that_only_read_do_not_hide_a_first_patch_that_needs_the_earlier_edits(tmp_path):
    """The later session read the file (``cat``, ``git status``) before its first patch: reading
    changes nothing, so that patch still shows the commit alone is not its start."""
    repo = tmp_path / "work" / "reads"
    commit = calc_repo(repo)
    first = SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0)
    second = _an_hour_later(SessionBuilder(cwd=str(repo), commit=commit).user("Add sub with a test")
                            .run("git status -sb", 0).run("sed -n '1,200p' calc.py", 0, output="def add(a, b):\n")
                            .patch(ADD_SUB).run(f"{TESTS} test_sub", 0).agent("Done."))
    rows = [r for r in _verified(tmp_path, first.agent("Fixed."), second) if r["session_id"] == second.session_id]
    test = next(r for r in rows if r["kind"] == "test_command")
    assert test["status"] == "validated", rows
    assert "plus the edits of 1 earlier session(s)" in test["note"], test["note"]


def test_a_project_script_run_first_leaves_the_choice_to_the_patches_that_follow(tmp_path):
    """The later session ran a project script (it may edit files, so its first patch alone decides
    nothing) and then patched what the earlier session left: more of its patches apply with the
    earlier edits, so those are its start."""
    repo = tmp_path / "work" / "script"
    commit = calc_repo(repo)
    first = SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0)
    second = _an_hour_later(SessionBuilder(cwd=str(repo), commit=commit).user("Add sub with a test")
                            .run("./scripts/check.sh --json", 0, output="{}")
                            .patch(ADD_SUB).run(f"{TESTS} test_sub", 0).agent("Done."))
    rows = [r for r in _verified(tmp_path, first.agent("Fixed."), second) if r["session_id"] == second.session_id]
    test = next(r for r in rows if r["kind"] == "test_command")
    assert test["status"] == "validated", rows
    assert "0 of the task's 1 patches apply to it, 1 with them" in test["note"], test["note"]


HELPER = "def double(x):\n    return x * 3\n"
HELPER_TEST = ("import unittest\n\nfrom helper import double\n\n\nclass D(unittest.TestCase):\n"
               "    def test_double(self):\n        self.assertEqual(double(2), 4)\n")
ADD_HELPER = "*** Begin Patch\n*** Add File: helper.py\n" + "".join(f"+{line}\n" for line in HELPER.splitlines()) + \
    "*** End Patch\n"
FIX_HELPER = ("*** Begin Patch\n*** Update File: helper.py\n@@\n def double(x):\n-    return x * 3\n+    return x * 2\n"
              "*** Add File: test_helper.py\n" + "".join(f"+{line}\n" for line in HELPER_TEST.splitlines())
              + "*** End Patch\n")


def _untracked_helper(tmp_path, helper_test: str = HELPER_TEST) -> list[dict]:
    """The first session writes helper.py; the second, at the author's next commit (which left
    helper.py out), fixes double with a test; its rows."""
    import subprocess

    repo = tmp_path / "work" / "proj"
    first_commit = calc_repo(repo)
    first = (SessionBuilder(cwd=str(repo), commit=first_commit).user("Add a double helper").patch(ADD_HELPER)
             .agent("Added."))
    (repo / "README.md").write_text("calc\n")
    subprocess.run(["git", "add", "README.md"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "readme"], cwd=repo, check=True)
    second_commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    test = f"{TESTS} test_helper"
    fix = FIX_HELPER.replace("".join(f"+{line}\n" for line in HELPER_TEST.splitlines()),
                             "".join(f"+{line}\n" for line in helper_test.splitlines()))
    second = _an_hour_later(SessionBuilder(cwd=str(repo), commit=second_commit)
                            .user("double is wrong").ghost("c" * 40, untracked=("helper.py",))
                            .patch(fix).run(test, 0).agent("Fixed."))
    return [r for r in _verified(tmp_path, first, second) if r["session_id"] == second.session_id]


def test_a_file_left_untracked_by_an_earlier_session_is_made_from_its_patches(tmp_path):
    """The first session wrote helper.py; the author committed something else and began the second
    session with helper.py still untracked (Codex's first snapshot lists it). The second session's
    commit lacks it: its patches of helper.py apply once the first session's patches made it again."""
    rows = _untracked_helper(tmp_path)
    row = next(r for r in rows if r["kind"] == "test_command")
    assert row["status"] == "validated", rows
    assert "1 file(s) untracked at the session's start made from earlier sessions' patches: helper.py" in row["note"]


def test_a_test_that_passed_in_the_session_and_fails_on_the_made_files_refutes_them(tmp_path):
    """The author changed helper.py by hand between the sessions (``triple``, which the log never
    shows): the second session's test passed, and fails on the file its patches made."""
    rows = _untracked_helper(tmp_path, HELPER_TEST.replace("from helper import double", "from helper import double, triple"))
    row = next(r for r in rows if r["kind"] == "test_command")
    assert row["status"] == "not_rebuilt", rows
    assert row["status_reason"].startswith("start tree differed from commit and from the untracked files made from "
                                           "earlier sessions' patches"), row
