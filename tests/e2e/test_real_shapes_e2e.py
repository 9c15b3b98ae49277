"""End to end: shapes of real sessions, made by the real Codex CLI, verified as real sessions need.

Seven scenarios (``scenarios/real_shapes``, ``scenarios/dirty_start``, ``scenarios/dirty_start_read``,
``scenarios/dirty_start_diff``, ``scenarios/dirty_start_status``, ``scenarios/shell_edit_between_patches``,
``scenarios/empty_start``), each run with every CLI
generation installed (0.171.0: ``exec_command``, freeform ``apply_patch``; 0.45.0: ``shell``, and
``apply_patch`` through it), then ingested, segmented and verified with bwrap:

* ``real_shapes`` task 0: a test run in a subdirectory (``cd pkg && python3 -m unittest -q``) fails,
  an ``apply_patch`` naming the file by its absolute path in the repository (``${REPO}``, filled by
  the driver) fixes it: ``validated``;
* ``real_shapes`` task 1 edits ``lib/src/units.py`` with a ``python3 - <<'PY'`` heredoc; task 2's
  patch only applies to the shell-edited text, and its test
  (``cd lib && PYTHONPATH=src python3 -m unittest discover -s tests -q``) fails before that patch and
  passes after: ``validated``, the earlier shell edit replayed to rebuild its start;
* ``dirty_start``: ``calc.py`` modified but not committed before the CLI ran, the session's first
  patch matching only the modified text: every candidate ``not_rebuilt``, the start tree differed;
* ``dirty_start_read``: the same, but the agent read ``calc.py`` whole (``cat calc.py``) before its
  first patch: the rebuild writes it as the CLI's output showed it, and both tasks validate;
* ``dirty_start_diff``: the same, but the agent looked at the change with ``git diff -- calc.py``: its
  hunks on the committed blob, checked against the work tree's blob id the diff printed, are the start;
* ``dirty_start_status``: ``units.py`` modified but not committed, the agent's first command ``git
  status --short`` lists it, and its patch of ``calc.py`` applies to the commit: every candidate
  ``not_rebuilt``, the start the session's own ``git status`` showed differed;
* ``shell_edit_between_patches``: one task changes ``units.py`` with a ``python3`` heredoc, then
  patches it where the heredoc did not: ``validated``, and its TMax bundle reproduces 0 -> 1 (its
  solution's write of the patched file keeps the heredoc's edit).
* ``empty_start``: a project begun before ``git init`` (the directory emptied, ``.git`` removed, before
  the CLI runs; the first commit made after it): the agent's ``ls -la`` shows it empty, it writes
  calc.py and its test, and a second turn fixes them: both tasks start from nothing and validate.

Skips: no Codex CLI (``.ci/install-codex.sh``), no ``node``/``git``/``bwrap``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import codex_driver as drv  # noqa: E402
from conftest import query  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")]

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("0.171.0", "0.45.0")
SCENARIOS = ("real_shapes", "dirty_start", "dirty_start_read", "dirty_start_diff", "dirty_start_status",
             "shell_edit_between_patches", "empty_start")
PKG_TEST = "cd pkg && python3 -m unittest -q"
LIB_TEST = "cd lib && PYTHONPATH=src python3 -m unittest discover -s tests -q"
SHELL_EDITED = "lib/src/units.py"
DIRTY_FILE = "calc.py"


def codex_bin(version: str) -> Path:
    prefix = os.environ.get("LOGMINE_CODEX_PREFIX")
    root = Path(prefix) if prefix else REPO_ROOT / ".ci" / "codex"
    return root / version / "node_modules" / ".bin" / "codex"


@dataclass
class Verified:
    name: str
    version: str
    run: drv.ScenarioRun
    store: Path

    def context(self) -> str:
        return f"\ncodex {self.version}, scenario {self.name}\n{self.run.log(3000)}"


def _uncommitted(name: str) -> dict[str, str]:
    """The scenario's ``uncommitted/`` files (``.in`` stripped): written over the repository after its
    initial commit, as an author's changes that were never committed."""
    base = drv.SCENARIOS_DIR / name / "uncommitted"
    return {p.relative_to(base).as_posix().removesuffix(".in"): p.read_text()
            for p in sorted(base.rglob("*")) if p.is_file()}


def _write_over(files: dict[str, str]):
    def prepare(repo: Path) -> None:
        for rel, text in files.items():
            (repo / rel).write_text(text)
    return prepare


def _emptied(repo: Path) -> None:
    """Leave ``repo`` an empty directory that is no git repository: a project not yet begun."""
    for entry in repo.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def _first_commit(repo: Path) -> None:
    """The project's first commit, made after the session: what it left, as its author commits it."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "e2e", "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
           "GIT_COMMITTER_NAME": "e2e", "GIT_COMMITTER_EMAIL": "e2e@example.invalid"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "first commit"]):
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)


def _check_exits(store: Path, scenario: dict, gen: Verified) -> None:
    """Each scripted command exited as the scenario says, as ingested (the shell edit too)."""
    calls = query(store, "SELECT command, exit_code FROM tool_calls WHERE command IS NOT NULL "
                         "AND tool_name <> 'apply_patch' ORDER BY session_id, seq")
    steps = drv.scenario_run_steps(scenario)
    seen = [(c["command"], c["exit_code"]) for c in calls
            if any(s["run"].splitlines()[0] in c["command"] for s in steps)]
    if [code for _, code in seen] != [s["expect_exit"] for s in steps]:
        pytest.fail(f"exit codes {seen} in the session, expected {[s['expect_exit'] for s in steps]}"
                    + gen.context(), pytrace=False)


def _generate(name: str, version: str, workdir: Path) -> Verified:
    from logmine.ingest.run import IngestConfig, ingest
    from logmine.segment import SegmentConfig, segment
    from logmine.verify import VerifyConfig, verify

    binary = codex_bin(version)
    if not binary.exists():
        pytest.skip(f"Codex CLI {version} not installed at {binary} (run .ci/install-codex.sh)")
    for tool in ("node", "git"):
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` is not on PATH")
    scenario, files, _ = drv.load_scenario(name, {})
    prepare = _write_over(_uncommitted(name)) if name.startswith("dirty_start") else \
        _emptied if name == "empty_start" else None
    run = drv.run_scenario(binary, scenario, files, workdir, turn_timeout_s=240, prepare=prepare)
    gen = Verified(name, version, run, workdir / "store")
    if not run.ok or len(run.turns) != len(scenario["turns"]) or not run.session_files:
        pytest.fail(f"the Codex CLI did not complete the scenario{gen.context()}", pytrace=False)
    if name == "empty_start":
        _first_commit(run.repo)
    ingest(IngestConfig(paths=(run.codex_home / "sessions",), store=gen.store, jobs=1))
    _check_exits(gen.store, scenario, gen)
    segment(SegmentConfig(store=gen.store))
    verify(VerifyConfig(store=gen.store, backend="bwrap"))
    return gen


_CACHE: dict[tuple[str, str], Verified] = {}


def generated(name: str, version: str, tmp_path_factory) -> Verified:
    """Scenario ``name`` run with CLI ``version``, ingested, segmented and verified: once per test session."""
    key = (name, version)
    if key not in _CACHE:
        _CACHE[key] = _generate(name, version, tmp_path_factory.mktemp(f"{name}-{version}"))
    return _CACHE[key]


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"codex-{v}")
def version(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def shapes(version, tmp_path_factory) -> Verified:
    return generated("real_shapes", version, tmp_path_factory)


@pytest.fixture(scope="module")
def dirty(version, tmp_path_factory) -> Verified:
    return generated("dirty_start", version, tmp_path_factory)


@pytest.fixture(scope="module")
def dirty_read(version, tmp_path_factory) -> Verified:
    return generated("dirty_start_read", version, tmp_path_factory)


@pytest.fixture(scope="module")
def dirty_diff(version, tmp_path_factory) -> Verified:
    return generated("dirty_start_diff", version, tmp_path_factory)


@pytest.fixture(scope="module")
def dirty_status(version, tmp_path_factory) -> Verified:
    return generated("dirty_start_status", version, tmp_path_factory)


@pytest.fixture(scope="module")
def between(version, tmp_path_factory) -> Verified:
    return generated("shell_edit_between_patches", version, tmp_path_factory)


@pytest.fixture(scope="module")
def empty(version, tmp_path_factory) -> Verified:
    return generated("empty_start", version, tmp_path_factory)


def _tasks(store: Path) -> list[dict]:
    return query(store, "SELECT t.task_id, t.index, t.start_state, v.rebuilt, v.reason FROM tasks t "
                        "LEFT JOIN verified v USING (task_id) ORDER BY t.index")


def _candidates(store: Path, task_id: str | None = None) -> list[dict]:
    where, params = ("WHERE task_id = ?", [task_id]) if task_id else ("", [])
    return query(store, "SELECT task_id, kind, mode, command, workdir, fail_to_pass, status, status_reason, "
                        f"before_exit_code, after_exit_code, after_excerpt FROM verifiers {where} "
                        "ORDER BY task_id, kind, command", params)


def _test_command(store: Path, task_id: str, command: str) -> dict:
    rows = [c for c in _candidates(store, task_id) if c["kind"] == "test_command"]
    assert [c["command"] for c in rows] == [command], rows
    return rows[0]


def _session_text(gen: Verified) -> str:
    return "\n".join(p.read_text() for p in gen.run.session_files)


# --------------------------------------------------------------------------------------------------
# real_shapes
# --------------------------------------------------------------------------------------------------

def test_real_shapes_are_three_tasks_from_the_header_commit(shapes):
    tasks = _tasks(shapes.store)
    assert [t["index"] for t in tasks] == [0, 1, 2], tasks
    methods = [json.loads(t["start_state"])["method"] for t in tasks]
    # task 1 follows a patch only; task 2 follows task 1's shell edit, redone in a sandbox
    assert methods == ["git_commit+patches", "git_commit+patches", "git_commit+edits"], tasks
    prior = json.loads(tasks[2]["start_state"])["prior_patches"]
    edits = [p for p in prior if p.get("command")]
    assert len(edits) == 1 and edits[0]["command"].startswith("python3 - <<'PY'"), prior
    # the shell edit's task has no candidate (nothing to verify); the others were rebuilt
    assert {r["task_id"] for r in _candidates(shapes.store)} == {tasks[0]["task_id"], tasks[2]["task_id"]}
    assert tasks[0]["rebuilt"] and tasks[2]["rebuilt"], tasks


def test_a_test_run_in_a_subdirectory_fixed_by_an_absolute_path_patch_validates(shapes):
    # the CLI really applied a patch naming the file by its absolute path
    assert f"*** Update File: {shapes.run.repo}/pkg/greet.py" in _session_text(shapes), shapes.context()
    assert "Hello, " in (shapes.run.repo / "pkg" / "greet.py").read_text()
    task = _tasks(shapes.store)[0]
    row = _test_command(shapes.store, task["task_id"], PKG_TEST)
    assert row["fail_to_pass"], row
    assert row["status"] == "validated", (row, task)
    assert (row["before_exit_code"], row["after_exit_code"]) == (1, 0), row


def test_a_later_patch_on_shell_edited_text_validates_after_replaying_the_edit(shapes):
    assert "KIB = 1024" in (shapes.run.repo / SHELL_EDITED).read_text()  # the heredoc really edited it
    task = _tasks(shapes.store)[2]
    row = _test_command(shapes.store, task["task_id"], LIB_TEST)
    assert row["fail_to_pass"], row
    assert row["status"] == "validated", (row, task)
    assert (row["before_exit_code"], row["after_exit_code"]) == (1, 0), row
    assert "earlier shell edit(s) replayed" in (task["reason"] or ""), task
    assert "failed at replay" not in task["reason"], task


def test_no_real_shapes_candidate_is_left_unscored_or_not_rebuilt(shapes):
    rows = _candidates(shapes.store)
    assert rows, shapes.context()
    bad = [r for r in rows if r["status"] in ("unscored", "not_rebuilt", None)]
    assert not bad, bad


# --------------------------------------------------------------------------------------------------
# dirty_start
# --------------------------------------------------------------------------------------------------

def test_the_dirty_start_session_really_began_on_uncommitted_changes(dirty):
    # the CLI patched the uncommitted text: the commit still has the old argument names
    text = (dirty.run.repo / DIRTY_FILE).read_text()
    assert "return 2 * (width + height)" in text and "def square(side)" in text, dirty.context()
    tasks = _tasks(dirty.store)
    assert [t["index"] for t in tasks] == [0, 1], tasks
    assert [json.loads(t["start_state"])["method"] for t in tasks] == ["git_commit+patches"] * 2, tasks


def test_every_candidate_of_a_dirty_start_session_is_not_rebuilt(dirty):
    rows = _candidates(dirty.store)
    tasks = {t["task_id"] for t in _tasks(dirty.store)}
    assert {r["task_id"] for r in rows} == tasks, rows  # both tasks have candidates ...
    assert {r["kind"] for r in rows} >= {"test_command"}, rows
    expected = f"start tree differed from commit (first mismatch: {DIRTY_FILE})"
    for row in rows:  # ... and none is validated
        assert (row["status"], row["status_reason"]) == ("not_rebuilt", expected), row


def _both_validated_from_what_the_session_showed(gen: Verified) -> None:
    """Both tasks' tests validate on the commit with the dirty file written as the session showed it."""
    tests = [r for r in _candidates(gen.store) if r["kind"] == "test_command"]
    assert len(tests) == 2, tests
    written = ("1 file(s) differed from the commit as the session began, written as the session's reads showed "
               f"them: {DIRTY_FILE}")
    for row in tests:
        assert row["status"] == "validated", (row, gen.context())
        assert written in row["status_reason"], row


def test_a_dirty_start_the_session_read_whole_is_written_as_the_cli_showed_it_and_validates(dirty_read):
    assert "return 2 * (width + height)" in (dirty_read.run.repo / DIRTY_FILE).read_text(), dirty_read.context()
    _both_validated_from_what_the_session_showed(dirty_read)


def test_a_dirty_start_a_git_diff_showed_is_its_hunks_on_the_committed_blob_and_validates(dirty_diff):
    calls = query(dirty_diff.store, "SELECT output FROM tool_calls WHERE command LIKE 'git diff%'")
    assert calls and "index " in (calls[0]["output"] or ""), (calls, dirty_diff.context())
    _both_validated_from_what_the_session_showed(dirty_diff)


def test_a_start_the_sessions_git_status_shows_dirty_is_never_validated(dirty_status):
    """Every patch applies to the commit; the session's own ``git status`` listed units.py."""
    calls = query(dirty_status.store, "SELECT seq, output FROM tool_calls WHERE command = 'git status --short'")
    assert calls and " M units.py" in (calls[0]["output"] or ""), (calls, dirty_status.context())
    rows = _candidates(dirty_status.store)
    assert {r["kind"] for r in rows} >= {"test_command", "file_diff"}, rows
    expected = (f"start tree differed from commit (first mismatch: units.py, which the session's `git status` at seq "
                f"{calls[0]['seq']} showed changed as it began)")
    for row in rows:
        assert (row["status"], row["status_reason"]) == ("not_rebuilt", expected), (row, dirty_status.context())


# --------------------------------------------------------------------------------------------------
# shell_edit_between_patches
# --------------------------------------------------------------------------------------------------

def test_a_bundle_whose_task_patched_a_file_after_a_shell_edit_keeps_the_edit_and_reproduces(between, tmp_path):
    from logmine.export.tmax import TmaxExportConfig, export_tmax

    assert "KIB = 1024" in (between.run.repo / "units.py").read_text(), between.context()  # the heredoc ran
    (task,) = _tasks(between.store)
    row = _test_command(between.store, task["task_id"], "python3 -m unittest -q")
    assert row["status"] == "validated", (row, between.context())
    summary = export_tmax(TmaxExportConfig(store=between.store, out=tmp_path / "out"))
    assert (summary.rows, summary.reproduced) == (1, 1), summary  # checked: reward 0 on the seeds, 1 after solve.sh
    solve = (tmp_path / "out" / "tasks" / task["task_id"] / "solution" / "solve.sh").read_text()
    assert "KIB = 1024" in solve and "def mib(n):" in solve, solve  # the patch's write holds both edits


# --------------------------------------------------------------------------------------------------
# empty_start
# --------------------------------------------------------------------------------------------------

def test_a_project_begun_before_its_first_commit_starts_from_nothing_and_validates(empty):
    sessions = query(empty.store, "SELECT git_commit FROM sessions")
    assert sessions and all(s["git_commit"] is None for s in sessions), (sessions, empty.context())
    listing = query(empty.store, "SELECT seq FROM tool_calls WHERE command LIKE '%ls -la%'")
    assert listing, empty.context()
    tasks = _tasks(empty.store)
    assert [t["index"] for t in tasks] == [0, 1], tasks
    for task in tasks:
        assert task["rebuilt"], (task, empty.context())
        assert "started from nothing, as its `ls` at seq" in task["reason"], task
        assert "holding nothing; the repository's first commit" in task["reason"], task
    row = _test_command(empty.store, tasks[1]["task_id"], "python3 -m unittest -q")
    assert row["fail_to_pass"] and row["status"] == "validated", (row, empty.context())
    assert (row["before_exit_code"], row["after_exit_code"]) == (1, 0), row
    written = [c for c in _candidates(empty.store, tasks[0]["task_id"]) if c["kind"] == "file_diff"]
    assert written and {c["status"] for c in written} == {"validated"}, written
