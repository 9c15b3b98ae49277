"""What real sessions do that a clean scenario does not: absolute patch paths, shell edits between
patches, dirty start trees, and repositories that break a rebuild (a link to the author's home, a
clone missing objects). Real git repositories, sessions replayed in the real bubblewrap sandbox."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from calc_repo import FIX, TESTS, calc_repo
from conftest import query
from replay_support import ADD_SUB, SUB_TEST, add_sub, commit_at, git_out, verdicts, verify_sessions
from session_builder import SessionBuilder

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

TEST_CALC_LATER = "import unittest\n"  # a commit made after the session: never a start state
# the shell edit real agents make: a Python heredoc that rewrites a file
SHELL_FIX = ("python3 - <<'PY'\nfrom pathlib import Path\np = Path('calc.py')\n"
             "p.write_text(p.read_text().replace('a - b', 'a + b'))\nPY")


def test_absolute_patch_paths_inside_the_cwd_are_the_same_files(tmp_path):
    repo = tmp_path / "home" / "u" / "proj"
    commit = calc_repo(repo)
    absolute = FIX.replace("Update File: calc.py", f"Update File: {repo}/calc.py")
    outside = "*** Begin Patch\n*** Add File: /etc/logmine-evil\n+x\n*** End Patch\n"
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("Fix add").run(TESTS, 1).patch(absolute).run(TESTS, 0).agent("Fixed.")
         .user("Add sub with a test").patch(ADD_SUB.replace("calc.py", f"{repo}/calc.py"))
         .patch(f"*** Begin Patch\n*** Add File: {repo}/test_sub.py\n" + "".join(f"+{line}\n" for line in SUB_TEST.splitlines())
                + "*** End Patch\n")
         .run(f"{TESTS} test_sub", 0).agent("Done.")
         .user("Write outside").patch(outside).run(TESTS, 0).agent("ok"))
    store, summary = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(0, "test_command", None)]["status"] == "validated"
    assert rows[(0, "file_diff", "exact")]["status"] == "validated"  # its path is calc.py, relative to the cwd
    assert rows[(1, "test_command", None)]["status"] == "validated"  # rebuilt on task 0's absolute patch
    assert summary.rebuilt == 3
    # a path outside the repository is never written: the replay says why
    outside_row = rows[(2, "file_diff", "exact")]
    assert outside_row["status"] != "validated" and "outside the repository" in outside_row["status_reason"]
    assert not Path("/etc/logmine-evil").exists()


def test_earlier_shell_edits_are_replayed_before_later_tasks(tmp_path):
    repo = tmp_path / "work" / "proj"
    commit = calc_repo(repo)
    b = add_sub(SessionBuilder(cwd=str(repo), commit=commit)
                 .user("Fix add").run(TESTS, 1).run(SHELL_FIX).run(TESTS, 0).agent("Fixed with a script."))
    store, summary = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(0, "test_command", None)]["status"] == "validated"  # the heredoc edit, replayed, fixes add
    later = rows[(1, "test_command", None)]
    assert later["status"] == "validated", later  # ADD_SUB applies only on the shell-edited calc.py
    assert summary.rebuilt == 2
    reason = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 1")[0]["reason"]
    assert "1 earlier shell edit(s) replayed" in reason


def test_a_dirty_start_tree_is_never_validated(tmp_path):
    """The author had uncommitted changes: the first patch of calc.py does not apply to the commit."""
    repo = tmp_path / "work" / "dirty"
    commit = calc_repo(repo)
    dirty_fix = FIX.replace("-    return a - b", "-    return a - b  # wip")
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("Fix add").run(TESTS, 1).patch(dirty_fix).run(TESTS, 0).agent("Fixed.")
         .user("Add sub").patch(ADD_SUB).run(TESTS, 0).agent("Done."))
    store, summary = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert {r["status"] for r in rows.values()} == {"not_rebuilt"}
    assert {r["status_reason"] for r in rows.values()} == {"start tree differed from commit (first mismatch: calc.py)"}
    assert summary.rebuilt == 0


def _committed_during(tmp_path: Path, monkeypatch, sub_test: str, failed_output: str = "") -> tuple[SessionBuilder, str]:
    """The author began with uncommitted work and committed it (with task 0's fix) while the session
    went on; a commit made after the session exists too. Returns the session and the commit made
    during it. ``failed_output``: what the session's first, failing test run printed."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-12-31T12:00:00Z")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-12-31T12:00:00Z")
    repo = tmp_path / "work" / "committing"
    commit = calc_repo(repo)
    # made after task 0 fixed add (at 00:00:09) and before task 1 began (00:00:15)
    during = commit_at(repo, "2026-01-01T00:00:14Z", {"calc.py": "def add(a, b):\n    return a + b\n"}, monkeypatch)
    commit_at(repo, "2026-01-02T00:00:00Z", {"test_calc.py": TEST_CALC_LATER}, monkeypatch)  # after the session
    dirty_fix = FIX.replace("-    return a - b", "-    return a - b  # wip")
    b = add_sub(SessionBuilder(cwd=str(repo), commit=commit)
                 .user("Fix add").run(TESTS, 1, failed_output).patch(dirty_fix).run(TESTS, 0).agent("Fixed."), sub_test)
    return b, during


def test_a_dirty_start_committed_during_the_session_starts_later_tasks_from_that_commit(tmp_path, monkeypatch):
    """Task 0 stays a dirty start; task 1 starts from the newest commit made before it began on which
    its own patches apply, never from one made after it began."""
    b, during = _committed_during(tmp_path, monkeypatch, SUB_TEST)
    store, summary = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert {r["status_reason"] for (index, *_), r in rows.items() if index == 0} == {
        "start tree differed from commit (first mismatch: calc.py)"}
    assert rows[(1, "test_command", None)]["status"] == "validated", rows
    note = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 1")[0]["reason"]
    assert note.startswith(f"started from later commit {during[:12]} (made 2026-01-01 00:00 UTC"), note
    assert "differed from the session's commit" in note and not note.startswith("start tree differed")


def test_a_later_commit_whose_tree_fails_the_sessions_passing_test_is_a_dirty_start(tmp_path, monkeypatch):
    """The author's uncommitted calc.py also defined LIMIT, which the commit made during the session
    lacks: the task's patches apply to that commit, but the test the session saw pass fails there
    (not for a missing package), so the start is dirty and nothing of the task is validated."""
    b, _ = _committed_during(tmp_path, monkeypatch, SUB_TEST.replace("from calc import sub", "from calc import LIMIT, sub"))
    store, _ = verify_sessions(tmp_path, b)
    later = [r for (index, *_), r in verdicts(store, b).items() if index == 1]
    assert {r["status"] for r in later} == {"not_rebuilt"}, later
    assert all(r["status_reason"].startswith("start tree differed from commit and from the later commit it was "
                                             "rebuilt from: `python3 -B -m unittest -q test_sub` passed")
               for r in later), later
    assert all("fails after the replay (" in r["status_reason"] and "LIMIT" in r["status_reason"]
               for r in later), [r["status_reason"] for r in later]  # what failed: the import of LIMIT


def test_a_later_commit_whose_passing_test_needs_a_database_here_is_no_dirty_start(tmp_path, monkeypatch):
    """The session's test passed against the author's database; in the sandbox its setup's connection
    is refused. That failure says nothing of the start: the task is no dirty start, its test does not
    validate (``unscored``: the environment lacks the service), and the file diffs that the later
    commit's tree does explain do."""
    needs_db = SUB_TEST.replace("class S(unittest.TestCase):\n",
                                "class S(unittest.TestCase):\n    @classmethod\n    def setUpClass(cls):\n"
                                "        import socket\n        socket.create_connection(('127.0.0.1', 5432), 2).close()\n\n")
    b, _ = _committed_during(tmp_path, monkeypatch, needs_db)
    store, _ = verify_sessions(tmp_path, b)
    later = {(kind, mode): r for (index, kind, mode), r in verdicts(store, b).items() if index == 1}
    assert not any(r["status_reason"] and r["status_reason"].startswith("start tree differed") for r in later.values()), later
    lacked = later[("test_command", None)]
    assert lacked["status"] == "unscored", later
    assert lacked["status_reason"].startswith("the environment lacks what it needs: ") and \
        "Connection refused" in lacked["status_reason"], lacked
    assert later[("file_diff", "exact")]["status"] == "validated", later


def _pythons(other: bool) -> tuple[str, str]:
    """(the sandbox's Python, the one the session's output names: another one when ``other``)."""
    found = subprocess.run(["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, check=True)
    ran = found.stdout.strip()
    return ran, ("3.12" if ran == "3.10" else "3.10") if other else ran


@pytest.mark.parametrize("other", [True, False], ids=["another-python", "same-python"])
def test_a_later_commit_failing_under_another_python_than_the_sessions_is_no_dirty_start(tmp_path, monkeypatch, other):
    """The session's traceback shows the Python it ran. Where the replay's differs, the passing test
    that fails after the replay says nothing of the start (3.11 made argparse's duplicate subparsers
    an error): the task is unscored with both versions, never a dirty start. Under the same Python
    it stays a dirty start."""
    ran, shown = _pythons(other)
    traceback = (f'Traceback (most recent call last):\n  File "/usr/lib/python{shown}/unittest/case.py", line 57\n'
                 "AssertionError: -1 != 5\n")
    b, _ = _committed_during(tmp_path, monkeypatch, SUB_TEST.replace("from calc import sub", "from calc import LIMIT, sub"),
                             traceback)
    store, _ = verify_sessions(tmp_path, b)
    later = [r for (index, *_), r in verdicts(store, b).items() if index == 1]
    if not other:
        assert {r["status"] for r in later} == {"not_rebuilt"}, later
        assert all(r["status_reason"].startswith("start tree differed from commit") for r in later), later
        return
    assert {r["status"] for r in later} == {"unscored"}, later
    assert all(r["status_reason"].startswith(f"environment differs from the session's: it ran Python {shown}, the "
                                             f"replay Python {ran}; `python3 -B -m unittest -q test_sub` passed in the "
                                             "session after the task's last edit and fails after the replay (")
               for r in later), [r["status_reason"] for r in later]
    from logmine.export.funnel import read_funnel

    stopped = {r.category: r for r in read_funnel(store).step("validated").stopped}
    assert stopped["environment differs from the session's"].subjects == ((f"Python {shown}", 1),), stopped


@pytest.mark.parametrize("other", [True, False], ids=["another-python", "same-python"])
def test_a_test_that_still_fails_under_another_python_says_so(tmp_path, other):
    """The session saw its test pass after a patch that leaves add wrong here: still failing after
    the replay, and where the replay's Python is not the session's, the reason says so first."""
    ran, shown = _pythons(other)
    repo = tmp_path / "work" / "proj"
    commit = calc_repo(repo)
    comment = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n+    # sums a and b\n     return a - b\n*** End Patch\n"
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("Fix add").run(TESTS, 1, f'  File "/usr/lib/python{shown}/unittest/case.py", line 57\n')
         .patch(comment).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    row = verdicts(store, b)[(0, "test_command", None)]
    assert row["status"] == "fails_after", row
    said = f"the candidate still fails after the replay (the session's Python is not the replay's: it ran Python {shown}"
    assert row["status_reason"].startswith(said) is other, row["status_reason"]


def test_a_shell_edit_that_fails_here_is_not_taken_for_a_dirty_start(tmp_path):
    """macOS's ``sed -i ''`` fails under GNU sed: the later patch then misses its edit. That is a replay
    gap, said as such, never "start tree differed"."""
    repo = tmp_path / "work" / "mac"
    commit = calc_repo(repo)
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("Fix add").run(TESTS, 1).run("sed -i '' 's/a - b/a + b/' calc.py").run(TESTS, 0).agent("Fixed.")
         .user("Add sub with a test").patch(ADD_SUB).run(TESTS, 0).agent("Done."))
    store, _ = verify_sessions(tmp_path, b)
    later = [r for (index, *_), r in verdicts(store, b).items() if index == 1]
    assert not any("start tree differed" in (r["status_reason"] or "") for r in later), later
    assert "validated" not in {r["status"] for r in later}
    failing = [r for r in later if r["status"] == "fails_after"]
    assert failing and all("a patch of calc.py does not apply after an earlier shell edit failed at replay "
                           "(seq 7 (exit 2))" in r["status_reason"] for r in failing), later


NOTES_PATCH = "*** Begin Patch\n*** Update File: notes.md\n@@\n-draft\n+final\n*** End Patch\n"


def test_a_script_missing_from_the_repository_is_named_in_the_reason(tmp_path):
    """The author ran a script from a folder the repository does not hold (an untracked checkout
    inside the project); it wrote notes.md, which a later patch edits. The author's start held the
    script, the commit does not: a start known to differ, and the reason names the script."""
    repo = tmp_path / "work" / "proj"
    commit = calc_repo(repo)
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("Draft the notes").run("./tools/bin/draft-notes.sh --json", 0).agent("Drafted.")
         .user("Fix add and finish the notes").run(TESTS, 1).patch(FIX).patch(NOTES_PATCH).run(TESTS, 0)
         .agent("Done."))
    store, _ = verify_sessions(tmp_path, b)
    reasons = {r["status_reason"] for (index, *_), r in verdicts(store, b).items() if index == 1}
    assert reasons == {"start tree differed from commit (first mismatch: ./tools/bin/draft-notes.sh, a script "
                       "the session ran that the repository does not hold)"}, reasons


def test_a_file_the_session_read_and_the_commit_lacks_shows_a_different_start(tmp_path):
    """The author's notes.md was never committed: the session searched it (``grep -n TODO notes.md``
    found a line: not the whole file, which the rebuild would have written), then patched it. At
    replay the search fails and so does the patch: the start differed, and no candidate of the task
    is validated (the calc fix beside it included)."""
    repo = tmp_path / "work" / "notes"
    commit = calc_repo(repo)
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("Fix add and finish the notes").run("grep -n TODO notes.md", 0, "3:TODO\n").run(TESTS, 1).patch(FIX).patch(NOTES_PATCH)
         .run(TESTS, 0).agent("Done."))
    store, _ = verify_sessions(tmp_path, b)
    rows = {key: r for key, r in verdicts(store, b).items() if key[0] == 0}
    assert {r["status"] for r in rows.values()} == {"not_rebuilt"}, rows
    reasons = {r["status_reason"] for r in rows.values()}
    assert len(reasons) == 1 and reasons.pop().startswith(
        "start tree differed from commit (first mismatch: notes.md, which the session read at seq"), rows


def test_a_shell_edit_that_fails_here_gives_way_to_a_commit_made_before_the_next_task(tmp_path, monkeypatch):
    """The same macOS edit, but the author committed its result before the next task began: that task
    starts from the commit (its patches apply there) instead of stopping at the replay gap."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-12-31T12:00:00Z")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-12-31T12:00:00Z")
    repo = tmp_path / "work" / "mac"
    commit = calc_repo(repo)
    during = commit_at(repo, "2026-01-01T00:00:09Z", {"calc.py": "def add(a, b):\n    return a + b\n"}, monkeypatch)
    b = add_sub(SessionBuilder(cwd=str(repo), commit=commit)
                 .user("Fix add").run(TESTS, 1).run("sed -i '' 's/a - b/a + b/' calc.py").run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    assert verdicts(store, b)[(1, "test_command", None)]["status"] == "validated"
    note = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 1")[0]["reason"]
    assert note.startswith(f"started from later commit {during[:12]}") and "did not replay" in note, note


def test_a_file_untracked_at_the_start_explains_a_patch_that_cannot_apply(tmp_path):
    """Codex's first snapshot listed notes.py untracked: the commit lacks it, the author had it."""
    repo = tmp_path / "work" / "untracked"
    commit = calc_repo(repo)
    notes = "*** Begin Patch\n*** Update File: notes.py\n@@\n-TODO = 1\n+TODO = 0\n*** End Patch\n"
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("Fix add").ghost("c" * 40, untracked=("notes.py", ".codex/history.jsonl"))
         .run(TESTS, 1).patch(FIX).patch(notes).run(TESTS, 0).agent("Fixed."))
    store, summary = verify_sessions(tmp_path, b)
    reasons = {r["status_reason"] for r in verdicts(store, b).values()}
    assert reasons == {"start tree differed from commit (first mismatch: notes.py, untracked at the session's start)"}
    state = query(store, "SELECT start_state FROM tasks")[0]["start_state"]
    assert '"untracked":["notes.py",".codex/history.jsonl"]' in state


def test_one_broken_repository_never_ends_the_run(tmp_path):
    # a repository that commits a link to its author's credentials
    linked = tmp_path / "work" / "linked"
    (linked / ".codex").mkdir(parents=True)
    (linked / ".codex" / "auth.json").symlink_to("/root/.codex/auth.json")
    linked_commit = calc_repo(linked)
    # a clone missing the object of a file of its start commit
    damaged = tmp_path / "work" / "damaged"
    damaged_commit = calc_repo(damaged, {"big.txt": "payload\n" * 100})
    blob = git_out(damaged, "rev-parse", f"{damaged_commit}:big.txt")
    (damaged / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    healthy = tmp_path / "work" / "healthy"
    healthy_commit = calc_repo(healthy)
    # a clone lacking only a file of the agent's own (a committed Codex log a mirror left out)
    logged = tmp_path / "work" / "logged"
    logged_commit = calc_repo(logged, {".codex/log/codex-tui.log": "log line\n" * 100})
    blob = git_out(logged, "rev-parse", f"{logged_commit}:.codex/log/codex-tui.log")
    (logged / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    # a clone lacking only an image its users uploaded (a mirror that leaves out the largest blobs)
    uploaded = tmp_path / "work" / "uploaded"
    uploaded_commit = calc_repo(uploaded, {"public/uploads/cover-1.JPG": "\xff\xd8 jpeg" * 100})
    blob = git_out(uploaded, "rev-parse", f"{uploaded_commit}:public/uploads/cover-1.JPG")
    (uploaded / ".git" / "objects" / blob[:2] / blob[2:]).unlink()

    def fix_session(repo: Path, commit: str) -> SessionBuilder:
        return (SessionBuilder(cwd=str(repo), commit=commit)
                .user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))

    sessions = [fix_session(linked, linked_commit), fix_session(damaged, damaged_commit),
                fix_session(healthy, healthy_commit), fix_session(logged, logged_commit),
                fix_session(uploaded, uploaded_commit)]
    store, summary = verify_sessions(tmp_path, *sessions)
    assert summary.tasks == 5
    link_rows, damaged_rows, healthy_rows, logged_rows, uploaded_rows = (verdicts(store, s) for s in sessions)
    assert link_rows[(0, "test_command", None)]["status"] == "validated"  # the link is left out, never followed
    assert {r["status"] for r in damaged_rows.values()} == {"not_rebuilt"}
    assert all("the clone lacks objects" in r["status_reason"] and r["status_reason"].endswith("; it lacks big.txt")
               for r in damaged_rows.values()), damaged_rows
    assert healthy_rows[(0, "test_command", None)]["status"] == "validated"
    assert logged_rows[(0, "test_command", None)]["status"] == "validated", logged_rows
    assert uploaded_rows[(0, "test_command", None)]["status"] == "validated", uploaded_rows

    def note(session: SessionBuilder) -> str:
        return query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.session_id = ?",
                     [session.session_id])[0]["reason"]

    assert "link(s) to absolute paths or out of the tree left out: .codex/auth.json" in note(sessions[0])
    assert "1 agent file(s) the clone lacks left out: .codex/log/codex-tui.log" in note(sessions[3])
    assert "1 media file(s) the clone lacks left out: public/uploads/cover-1.JPG" in note(sessions[4])


# a project script that works only on a feature branch, as spec-kit's (.specify/scripts/bash/*.sh) do
ON_FEATURE_BRANCH = ('branch=$(git rev-parse --abbrev-ref HEAD)\ncase "$branch" in [0-9][0-9][0-9]-*) ;; '
                     '*) echo "ERROR: Not on a feature branch. Current branch: $branch" >&2; exit 1;; esac\n'
                     "sed -i 's/a - b/a + b/' calc.py\n")


def test_a_script_reads_the_branch_the_author_was_on(tmp_path):
    """The session recorded branch 001-fix-add: the rebuilt tree is on it, so a script that refuses
    any other branch edits calc.py at replay as it did for the author, and the next task's patch
    (which needs that edit) applies. A command that failed in the session too (the missing file)
    failing again is no replay failure."""
    repo = tmp_path / "work" / "spec"
    commit = calc_repo(repo, {".specify/scripts/fix.sh": ON_FEATURE_BRANCH})
    b = add_sub(SessionBuilder(cwd=str(repo), commit=commit, branch="001-fix-add")
                 .user("Fix add").run(TESTS, 1).run("sed -i 's/x/y/' missing.py", 2)
                 .run("bash .specify/scripts/fix.sh", 0).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    assert verdicts(store, b)[(1, "test_command", None)]["status"] == "validated", verdicts(store, b)
    note = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 1")[0]["reason"]
    assert "2 earlier shell edit(s) replayed" in note and "failed at replay" not in note, note


def test_a_command_refused_by_the_sessions_sandbox_then_rerun_is_replayed_once(tmp_path):
    """Codex's sandbox refused `git checkout -b` (it could not write .git); the agent re-ran it with
    escalated permissions. Replayed twice, the second run would fail (the branch exists) and read as a
    shell edit that failed at replay: only the run that succeeded is replayed."""
    repo = tmp_path / "work" / "branchy"
    commit = calc_repo(repo)
    checkout = "git checkout -b 001-feature"
    denied = "fatal: cannot lock ref 'refs/heads/001-feature': Operation not permitted"
    b = add_sub(SessionBuilder(cwd=str(repo), commit=commit)
                 .user("Start the feature and fix add").run(checkout, 128, output=denied).run(checkout, 0)
                 .run(TESTS, 1).run(SHELL_FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(0, "test_command", None)]["status"] == "validated"
    assert rows[(1, "test_command", None)]["status"] == "validated", rows
    note = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 1")[0]["reason"]
    assert "earlier shell edit(s) replayed" in note and "failed at replay" not in note, note


UTIL = "def double(x):\n    return x * 2\n"
UTIL_TEST = ("import unittest\n\nfrom calc import sub\nfrom util import triple\n\n\nclass U(unittest.TestCase):\n"
             "    def test_triple(self):\n        self.assertEqual(triple(sub(3, 1)), 6)\n")
ADD_TRIPLE = ("*** Begin Patch\n*** Update File: util.py\n@@\n def double(x):\n     return x * 2\n+\n+\n+def triple(x):\n"
              "+    return x * 3\n*** End Patch\n")


def test_a_later_commit_start_gets_the_earlier_work_done_after_the_commit(tmp_path, monkeypatch):
    """The author began dirty and committed task 0's fix while the session went on; task 1 then added
    sub (not committed); task 2's test uses sub and task 2's own triple. Task 2 starts from that commit
    plus task 1's work, redone because it came after the commit: its test fails on that start and
    passes after the replay. From the commit alone it would fail even after the replay (no sub)."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-12-31T12:00:00Z")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-12-31T12:00:00Z")
    repo = tmp_path / "work" / "later"
    commit = calc_repo(repo, {"util.py": UTIL})
    during = commit_at(repo, "2026-01-01T00:00:14Z", {"calc.py": "def add(a, b):\n    return a + b\n"}, monkeypatch)
    dirty_fix = FIX.replace("-    return a - b", "-    return a - b  # wip")
    b = add_sub(SessionBuilder(cwd=str(repo), commit=commit)
                 .user("Fix add").run(TESTS, 1).patch(dirty_fix).run(TESTS, 0).agent("Fixed."))
    b = (b.user("Add triple with a test").patch(ADD_TRIPLE)
         .patch("*** Begin Patch\n*** Add File: test_util.py\n" + "".join(f"+{line}\n" for line in UTIL_TEST.splitlines())
                + "*** End Patch\n")
         .run(f"{TESTS} test_util", 0).agent("Done."))
    store, _ = verify_sessions(tmp_path, b)
    row = verdicts(store, b)[(2, "test_command", None)]
    assert row["status"] == "validated", row
    note = query(store, "SELECT reason FROM verified v JOIN tasks t USING (task_id) WHERE t.index = 2")[0]["reason"]
    assert note.startswith(f"started from later commit {during[:12]}"), note
    assert "2 earlier edit(s) made after it redone" in note, note


def test_an_earlier_patch_that_rewrites_a_file_a_missing_script_made_replays(tmp_path):
    """Task 0 ran the author's generator (not in the repository: it fails at replay) and then rewrote
    what it made with a patch that deletes the file and adds it anew (as agents rewrite spec-kit's
    plan.md): the deletion of a file the replay lacks is skipped, the file is the patch's, and task 1
    is rebuilt and validated."""
    repo = tmp_path / "home" / "u" / "gen"
    commit = calc_repo(repo)
    rewrite = "*** Begin Patch\n*** Delete File: plan.md\n*** Add File: plan.md\n+# Plan\n*** End Patch\n"
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("Draft the plan").run("./tools/setup-plan.sh --json", 0)
         .patch(rewrite).agent("Drafted.")
         .user("Fix add").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    store, _ = verify_sessions(tmp_path, b)
    row = verdicts(store, b)[(1, "test_command", None)]
    assert row["status"] == "validated", row


DEP_TEST = ("import unittest\n\nimport absent_dependency  # noqa: F401  (installed where the session ran)\n"
            "from calc import add\n\n\nclass D(unittest.TestCase):\n    def test_add(self):\n"
            "        self.assertEqual(add(1, 2), 3)\n")


def test_a_test_whose_dependency_the_sandbox_lacks_is_unscored_and_the_file_diffs_still_count(tmp_path):
    """The session's test imports a package installed where it ran: here it fails at import both ways,
    which says nothing of the task's code (``unscored``, with the line), and when no other way of
    providing the environment exists (a Cargo.toml: no build recipe), the host's verdicts stand: the
    task's file diff still validates."""
    repo = tmp_path / "work" / "dep"
    commit = calc_repo(repo, {"test_dep.py": DEP_TEST, "Cargo.toml": '[package]\nname = "dep"\nversion = "0.1.0"\n'})
    test = "python3 -B -m unittest -q test_dep"
    b = SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run(test, 1).patch(FIX).run(test, 0).agent("Fixed.")
    store, _ = verify_sessions(tmp_path, b)
    rows = verdicts(store, b)
    assert rows[(0, "file_diff", "exact")]["status"] == "validated", rows
    lacked = rows[(0, "test_command", None)]
    assert lacked["status"] == "unscored", lacked
    assert lacked["status_reason"].startswith(
        "the environment lacks what it needs: ModuleNotFoundError: No module named 'absent_dependency'"), lacked
    from logmine.export.funnel import read_funnel

    assert read_funnel(store).candidates.get("unscored") == 1


def test_a_file_the_session_read_after_a_script_that_fails_here_made_it_is_no_dirty_start(tmp_path):
    """The task's own spec-kit-like script made notes.md for the author; here it fails (``git fetch``
    has no remote): the read that then fails is no sign of a start that differed, and the patch that
    needs the file is blamed on the script."""
    repo = tmp_path / "work" / "script"
    script = "#!/bin/sh\nset -e\ngit fetch origin\nprintf 'draft\\n' > notes.md\n"
    commit = calc_repo(repo, {"tools/new-notes.sh": script})
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("Fix add and start the notes")
         .run("sh tools/new-notes.sh", 0).run("grep -n draft notes.md", 0, "1:draft\n")
         .run(TESTS, 1).patch(FIX).patch(NOTES_PATCH).run(TESTS, 0).agent("Done."))
    store, _ = verify_sessions(tmp_path, b)
    reasons = {r["status_reason"] for r in verdicts(store, b).values()}
    assert not any(r and r.startswith("start tree differed") for r in reasons), reasons
    assert any(r and "after an earlier shell edit failed at replay" in r for r in reasons), reasons


def test_a_failed_check_script_explains_no_missing_file(tmp_path):
    """Spec-kit's ``check-prerequisites.sh`` only checks and prints: its failure at replay made no file,
    so the file the session then read and the replay lacks still shows a start that differed."""
    script = "#!/bin/sh\nset -e\ngit fetch origin\necho '{}'\n"
    _read_after_a_failure(tmp_path, "checks", {".specify/scripts/bash/check-prerequisites.sh": script},
                          "sh .specify/scripts/bash/check-prerequisites.sh --json", "notes.md")


def _read_after_a_failure(tmp_path, name: str, files: dict, failing: str, notes: str) -> None:
    """``failing`` fails at replay, then the session reads ``notes`` (which the start lacks) and patches
    it: every candidate is a start that differed, shown by that read."""
    repo = tmp_path / "work" / name
    commit = calc_repo(repo, files)
    b = (SessionBuilder(cwd=str(repo), commit=commit).user("Fix add and finish the notes").run(failing, 0, "\n")
         .run(f"grep -n draft {notes}", 0, "1:draft\n").run(TESTS, 1).patch(FIX)
         .patch(NOTES_PATCH.replace("notes.md", notes)).run(TESTS, 0).agent("Done."))
    store, _ = verify_sessions(tmp_path, b)
    reasons = {r["status_reason"] for r in verdicts(store, b).values()}
    assert len(reasons) == 1 and reasons.pop().startswith(
        f"start tree differed from commit (first mismatch: {notes}, which the session read at seq"), reasons


def test_a_failed_heredoc_that_names_the_folder_explains_no_missing_file(tmp_path):
    """A ``python3 - <<'PY'`` that lists a folder fails at replay because the start lacks it: that is the
    start differing, not an edit that did not replay."""
    _read_after_a_failure(tmp_path, "heredoc", {}, "python3 - <<'PY'\nimport os\nprint(os.listdir('docs'))\nPY",
                          "docs/notes.md")
