"""``logmine yield``: the yield funnel of real stores (the demo's ``logmine run``, and sessions verified
in the real sandbox), its reason table, and its one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from calc_repo import FIX, TESTS, calc_repo
from rich.console import Console
from session_builder import SessionBuilder
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.export.funnel import REASONS, categorize, read_funnel, render_funnel
from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment

runner = CliRunner()
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

ADD_MUL = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n     return a + b\n+\n+\n+def mul(a, b):\n"
           "+    return a * b + 1\n*** Add File: test_mul.py\n+import unittest\n+\n+from calc import mul\n+\n+\n"
           "+class M(unittest.TestCase):\n+    def test_mul(self):\n+        self.assertEqual(mul(2, 3), 6)\n*** End Patch\n")


@pytest.mark.parametrize(("reason", "category", "hint", "subject"), [
    ("no git commit recorded for the session and no cwd", "no commit recorded", "no commit recorded", None),
    ("no commit recorded for the session, and the repository at /src/proj has none made before it began "
     "(2026-01-01T00:00:00)", "no commit recorded", "made before the session began", None),
    ("repository not found at /home/a/proj (map it with --repo-map /home/a/proj=PATH, or search with "
     "--repo-search DIR)", "repository not found", "--repo-map OLD=NEW or --repo-search DIR", "/home/a/proj"),
    ("commit 0123456789ab is not in the repository at /src/proj (fetch it, or point --repo-search at a clone "
     "that has it)", "commit missing from the clone", "fetch the commit", "/src/proj"),
    ("neither ghost snapshot aaaaaaaaaaaa nor commit 0123456789ab is in the repository at /src/proj (fetch it, …)",
     "commit missing from the clone", "--repo-search", "/src/proj"),
    ("/home/a is not a git repository (a home or scratch directory is copied only with --plain-dirs, credential "
     "files left out)", "not a git repository", "--plain-dirs", "/home/a"),
    ("earlier task 2 edited files by shell command: sed -i s/a/b/ x.py", "an earlier task edited files by shell",
     "by design", None),
    ("an earlier task's patch does not apply (git_commit+patches): context not found",
     "an earlier task's patch does not apply", "untracked at the start", None),
    ("start tree differed from commit (first mismatch: src/app.py)", "started from uncommitted changes",
     "uncommitted changes", None),
    ("patch names a path outside the repository: ../etc/x", "patch outside the repository", "by design", None),
    ("git archive of 0123456789ab failed: the clone lacks objects of its tree or cannot be read (fatal: bad object)",
     "damaged clone", "git fetch --refetch", None),
    ("rebuild failed: PermissionError: [Errno 13] denied", "rebuild failed", "report it", "PermissionError"),
    ("environment not provided: host: .venv not in the live repository /src/p", "dependencies missing on this host",
     "--env-mode built", None),
    ("environment not provided: host: .venv not in the live repository /src/p; built: python:3.11-slim + "
     "requirements.txt failed (exit 1): pip error", "environment build failed", "--env-mode host", None),
    ("environment not provided: built: no build recipe: no build recipe for rust projects yet", "no build recipe",
     "--env-mode host", "rust"),
    ("environment not provided: built: toolchain registry unreachable", "environment build needs network",
     "with network", None),
    ("sandbox could not start: bwrap: setting up uid map: Permission denied", "sandbox could not start",
     "--backend", None),
    ("could not grade on the replayed state: timed out after 20 s", "could not grade", "--timeout",
     "replayed state"),
    ("the candidate already passes on the start state", "passes at start", "by design", None),
    ("the candidate still fails after the replay (replay: patch at seq 12 did not apply: no match)",
     "replay diverged: a patch did not apply", "not replayed", None),
    ("the candidate still fails after the replay (/x is not a git repository: its files were copied; replay: "
     "command at seq 4: timed out)", "replay diverged: a command did not run", "--timeout", None),
    ("the candidate still fails after the replay", "still fails after the replay", "network", None),
    ("the candidate still fails after the replay (replay: patch at seq 7: context not found)",
     "replay diverged: a patch did not apply", "not replayed", None),
    ("the candidate still fails after the replay (repository found at /c/p; ghost snapshot 9d93a7865c0d is not in "
     "the clone: header commit 4e9e3102af95 plus 0 earlier edit(s))", "replayed from the header commit",
     "ghost snapshots", None),
    ("start tree differed from ghost snapshot 9d93a7865c0d (first mismatch: a.md)", "started from uncommitted changes",
     "by design", None),
    ("could not grade on the start state: sandbox failed to start (exit 1): bwrap: Can't chdir to /x",
     "sandbox could not start", "--backend", None),
    ("environment differs from the session's: it ran Python 3.10, the replay Python 3.11; `pytest -q` passed in the "
     "session after the task's last edit and fails after the replay (exit 1)", "environment differs from the session's",
     "--env-mode host", "Python 3.10"),
    ("the candidate still fails after the replay (the session's Python is not the replay's: it ran Python 3.12, the "
     "replay Python 3.11)", "environment differs from the session's", "--env-mode host", "Python 3.12"),
    ("the environment lacks what it needs: error: no matching package named `serde_yaml` found (3 file(s) differed "
     "from the commit as the session began)",
     "environment lacks a tool, package or service", "--env-mode host", "error: no matching package named `serde_yaml` found"),
    ("the environment lacks what it needs: Error: browserType.launch: Executable doesn't exist at /root/.cache/"
     "ms-playwright/chromium_headless_shell-1148/chrome-linux/headless_shell", "browser not downloaded",
     "npx playwright install", "ms-playwright"),
    ("the environment lacks what it needs: bash: line 1: dotnet: command not found", "environment lacks a tool, "
     "package or service", "--env-mode host", "bash: line 1: dotnet: command not found"),
    ("the candidate still fails after the replay (the task changed the dependencies in pyproject.toml: the sandbox has "
     "no network to install them)",
     "the task changed its dependencies", "by design", "pyproject.toml"),
    ("the candidate still fails after the replay (as in the session, whose last run of it failed too; 3 earlier "
     "shell edit(s) replayed)", "fails as it did in the session", "by design", None),
    ("export failed: KeyError: 'x'", "export failed", "report it", "KeyError"),
    ("subagent:review session of 0199", "sub-agent session", "by design", "subagent:review"),
    ("does not reproduce: reward 0 after solution/solve.sh (the task uses .env, left out of the seeds)",
     "bundle does not reproduce", ".env", None),
    # no rule: the first clause, without a hint
    ("something new: with details (and more)", "something new", None, None),
    ("a reason (with a parenthesis): here", "a reason", None, None),
])
def test_reasons_are_grouped_by_the_table(reason, category, hint, subject):
    got_category, got_hint, got_subject = categorize(reason)
    assert got_category == category
    assert (got_hint is None) if hint is None else (hint in got_hint)
    assert got_subject == subject


def test_every_rule_has_a_short_category_and_a_hint():
    assert all(rule.hint and len(rule.category) <= 45 for rule in REASONS)
    assert len({rule.category for rule in REASONS}) > 30


def _steps(funnel: dict) -> dict[str, dict]:
    return {step["step"]: step for step in funnel["steps"]}


def _stopped(step: dict) -> dict[str, int]:
    return {r["reason"]: r["count"] for r in step["stopped"]}


@needs_bwrap
def test_the_demo_run_funnel(demo_tmax, tmp_path):
    store = demo_tmax.parent.parent / "store"  # the session's `logmine run --demo`
    result = runner.invoke(app, ["yield", "--store", str(store), "--export", str(demo_tmax), "--json"])
    assert result.exit_code == 0, result.output
    funnel = json.loads(result.output)
    steps = _steps(funnel)
    assert [s["step"] for s in funnel["steps"]] == ["sessions", "sessions_with_tasks", "tasks", "with_candidates",
                                                     "rebuilt", "environment", "validated", "reproduced"]
    assert {k: s["count"] for k, s in steps.items()} == {
        "sessions": 10, "sessions_with_tasks": 9, "tasks": 14, "with_candidates": 11, "rebuilt": 2,
        "environment": 2, "validated": 2, "reproduced": 2}
    assert steps["with_candidates"]["candidates"] == 33 and steps["validated"]["candidates"] == 6
    assert funnel["candidates"] == {"validated": 6, "not_rebuilt": 27}
    assert _stopped(steps["sessions_with_tasks"]) == {"no genuine user request": 1}
    assert _stopped(steps["with_candidates"]) == {"no patch edit, no test or check command": 2, "no tool call": 1}
    assert _stopped(steps["rebuilt"]) == {"repository not found": 8, "no cwd recorded": 1}
    missing = steps["rebuilt"]["stopped"][0]
    assert missing["hint"] == "--repo-map OLD=NEW or --repo-search DIR"
    assert missing["subjects"] == [{"subject": "/home/dev/projects/fixadd", "count": 6},
                                   {"subject": "/Users/alex/Sites/ai-trading-bot", "count": 2}]
    assert steps["validated"]["share"] == 1.0 and steps["rebuilt"]["share"] == round(2 / 11, 4)
    assert funnel["other_export_rows"] == 0

    table = runner.invoke(app, ["yield", "--store", str(store)])
    assert table.exit_code == 0, table.output
    assert "yield funnel of" in table.output and "bundle reproduced" not in table.output
    console = Console(width=200, record=True)
    render_funnel(console, read_funnel(store, demo_tmax))
    text = console.export_text()
    assert "repository not found: /home/dev/projects/fixadd (6), /Users/alex/Sites/ai-trading-bot (2)" in text
    assert "(2) → --repo-map OLD=NEW or --repo-search DIR" in text and "bundle reproduced" in text
    assert "candidates: 33 (validated 6, not rebuilt 27)" in text
    stats = runner.invoke(app, ["stats", "--store", str(store), "--json"])
    assert stats.exit_code == 0 and _steps(json.loads(stats.output)["funnel"])["validated"]["count"] == 2

    # an export that kept one of the two bundles and says why it rejected the other
    export = tmp_path / "tmax"
    shutil.copytree(demo_tmax, export)
    data = next((export / "data").glob("*.parquet"))
    rows = pq.read_table(data).to_pylist()
    pq.write_table(pa.Table.from_pylist(rows[:1]), data)
    why = "does not reproduce: reward 0 after solution/solve.sh (the task uses .env, left out of the seeds)"
    pq.write_table(pa.table({"task_id": [rows[1]["ground_truth"]], "reason": [why]}), export / "rejects.parquet")
    last = read_funnel(store, export).step("reproduced")
    assert last.count == 1 and [(r.category, r.count) for r in last.stopped] == [("bundle does not reproduce", 1)]
    # a caller holding the rejects (`logmine run`) passes them when the export wrote none
    (export / "rejects.parquet").unlink()
    assert read_funnel(store, export).step("reproduced").stopped[0].category == "not in the export"
    told = read_funnel(store, export, {rows[1]["ground_truth"]: "solution incomplete: patch 2 did not apply"})
    assert told.step("reproduced").stopped[0].category == "solution incomplete"


@needs_bwrap
def test_a_verified_store_tells_each_stop(tmp_path):
    """Real sessions through ingest, segment and verify in the sandbox: two validated tasks (the
    second by its file diffs only), one whose test never passes, one already passing, one without a
    tool call, a sub-agent session, a moved repository, a session without commit."""
    from logmine.verify import VerifyConfig, verify

    repo = tmp_path / "work" / "proj"
    commit = calc_repo(repo)
    sessions = tmp_path / "sessions"
    (SessionBuilder(cwd=str(repo), commit=commit)
     .user("Fix add so the tests pass").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed.")
     .user("Add a mul function with a test").patch(ADD_MUL).run(TESTS, 1).agent("Still failing.")
     .user("Run the mul test").run(TESTS, 1).agent("It fails.")
     .user("Check that the add tests pass").run(f"{TESTS} test_calc", 0).agent("They do.")
     .user("What does add do?").agent("It adds.").write(sessions))
    SessionBuilder(cwd=str(repo), commit=commit, source="subagent:review").user("Review").agent("ok").write(sessions)
    SessionBuilder(cwd="/nonexistent/proj", commit=commit).user("Fix add").patch(FIX).agent("Done.").write(sessions)
    SessionBuilder(cwd=str(repo), commit=None).user("Fix add").patch(FIX).agent("Done.").write(sessions)
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(sessions,), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    before = _steps(read_funnel(store).to_dict())
    assert before["rebuilt"]["count"] == 0 and _stopped(before["rebuilt"]) == {"not verified yet": 6}
    verify(VerifyConfig(store=store, jobs=2))

    result = runner.invoke(app, ["yield", "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    funnel = json.loads(result.output)
    steps = _steps(funnel)
    assert funnel["candidates"] == {"validated": 5, "passes_at_start": 1, "fails_after": 2, "not_rebuilt": 4}
    assert {k: s["count"] for k, s in steps.items()} == {
        "sessions": 4, "sessions_with_tasks": 3, "tasks": 7, "with_candidates": 6, "rebuilt": 4,
        "environment": 4, "validated": 2}
    assert _stopped(steps["sessions_with_tasks"]) == {"sub-agent session": 1}
    assert _stopped(steps["with_candidates"]) == {"no tool call": 1}
    assert _stopped(steps["rebuilt"]) == {"repository not found": 1, "no commit recorded": 1}
    # the mul task's test failed at the session's end too: the replay agrees, and the funnel says so
    assert _stopped(steps["validated"]) == {"fails as it did in the session": 1, "passes at start": 1}
    assert steps["validated"]["candidates"] == 5  # the fix's test and diffs, the mul task's diffs


def test_a_store_only_ingested_is_not_segmented_yet(tmp_path):
    # its own store: the shared fixture store may have been segmented by another test of this worker
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(Path(__file__).parents[1] / "fixtures" / "codex-generated",), store=store, jobs=1))
    funnel = read_funnel(store)
    sessions, with_tasks = funnel.step("sessions"), funnel.step("sessions_with_tasks")
    assert sessions.count > 0 and with_tasks.count == 0 and funnel.step("tasks").count == 0
    assert [(r.category, r.count, r.hint) for r in with_tasks.stopped] == [
        ("not segmented yet", sessions.count, "run `logmine segment`")]


def test_one_line_errors(tmp_path):
    missing = runner.invoke(app, ["yield", "--store", str(tmp_path / "none")])
    assert missing.exit_code == 1
    assert missing.output.strip() == \
        f"Error: no logmine store at {tmp_path / 'none'} (run `logmine ingest` first or pass --store)"
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(Path(__file__).parents[1] / "fixtures" / "codex-generated",), store=store, jobs=1))
    not_export = runner.invoke(app, ["yield", "--store", str(store), "--export", str(tmp_path)])
    assert not_export.exit_code == 1
    assert not_export.output.strip() == (f"Error: no TMax export at {tmp_path}: it holds no data/*.parquet "
                                         "(run `logmine export tmax --out DIR`)")
