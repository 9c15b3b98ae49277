"""Real Codex sessions of a real public project, verified against the repository state they recorded.

``tests/fixtures/real/cpolar-connect`` (MIT): two Codex CLI 0.36 sessions and a git bundle of the
commit they recorded. The first session starts from that commit, edits files through ``apply_patch``
inside the ``shell`` tool and through ``python - <<'PY'`` heredocs, and some of its patches carry
context that redaction replaced; the second is a backtrack of the first that copied its history. No
network: the sandbox's own toolchain grades (``env_mode="none"``), so the file-diff verifiers decide.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import query

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "real" / "cpolar-connect"
RECORDED_CWD = "/Users/home/Downloads/CpolarAutoUpdater"
FIRST, SECOND = "9cd28a74-da7e-4458-a91a-fffec2be9d7a", "613a9a68-8816-40b2-a2d4-041ade599da6"


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    from logmine.verify import VerifyConfig, verify

    tmp = tmp_path_factory.mktemp("cpolar")
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "-q", "-b", "start", str(FIXTURE / "start.bundle"), str(clone)], check=True)
    store = tmp / "store"
    ingest(IngestConfig(paths=(FIXTURE / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    summary = verify(VerifyConfig(store=store, jobs=2, env_mode="none", repo_map=((RECORDED_CWD, str(clone)),)))
    return store, summary


def _rows(store: Path, session_id: str) -> list[dict]:
    return query(store, "SELECT t.index, v.kind, v.mode, v.status, v.status_reason FROM verifiers v "
                        "JOIN tasks t USING (task_id) WHERE t.session_id = ? ORDER BY t.index, v.kind, v.mode",
                 [session_id])


def test_every_task_with_candidates_is_verified(verified):
    store, summary = verified
    assert summary.tasks == query(store, "SELECT count(*) AS n FROM tasks WHERE n_candidates > 0")[0]["n"]
    assert query(store, "SELECT count(*) AS n FROM verifiers WHERE status IS NULL")[0]["n"] == 0


def test_the_backtracked_session_starts_from_the_work_it_copied(verified):
    """The second file is a Codex 0.36 backtrack of the first: it copies the first one's history, so
    its tasks start from the commit plus the copied patches and shell edits (without them its first
    patch of cli.py does not apply, which once read as a dirty start)."""
    store, _ = verified
    (session,) = query(store, "SELECT forked_from_id FROM sessions WHERE session_id = ?", [SECOND])
    assert session["forked_from_id"] == FIRST
    rows = _rows(store, SECOND)
    assert rows and {r["status"] for r in rows} == {"validated"}, rows
    assert {r["kind"] for r in rows} == {"file_diff"}


def test_the_clean_session_is_rebuilt_through_shell_edits_and_redacted_patches(verified):
    store, _ = verified
    rows = _rows(store, FIRST)
    assert {r["status"] for r in rows} <= {"validated", "fails_after", "unscored"}, rows  # all rebuilt
    # both tasks' diffs, exact and by hunks (a removed line that the file rightly keeps elsewhere is
    # not "still present"); the test commands need pytest, which env_mode "none" does not provide
    validated = {(r["index"], r["mode"]) for r in rows if r["status"] == "validated"}
    assert validated == {(1, "exact"), (1, "hunks"), (2, "exact"), (2, "hunks")}, rows
    reasons = [r["reason"] for r in query(store, "SELECT v.reason FROM verified v JOIN tasks t USING (task_id) "
                                                 "WHERE t.session_id = ? AND t.index > 0", [FIRST])]
    assert any("earlier shell edit(s) replayed" in (r or "") for r in reasons)
