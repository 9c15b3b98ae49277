"""End to end: a monorepo's environments, from a session of the real Codex CLI to reproducing bundles.

Scenario ``scenarios/workspace_shapes``, run once with the newest CLI installed: an npm workspace
(``packages/core`` requires ``@mono/util`` through the workspace) whose ``node_modules`` the author
installed at the root, and a src-layout package in ``py/`` installed editable into the git-ignored
``py/.venv`` (a ``.pth`` naming ``py/src``, as ``pip install -e`` writes it). Task 0 runs
``cd packages/core && npm test`` and fixes util by an absolute-path patch; task 1 runs
``cd py && .venv/bin/python -m unittest`` and fixes ``area()``.

* host mode (the live repository with its ignored directories): both tasks ``validated``, the nested
  ``py/.venv`` and the root ``node_modules`` bound where they live;
* a fresh clone (the ignored directories moved away): both ``validated`` in built mode — the
  workspace installed at its root with no registry, ``py/src`` on ``PYTHONPATH`` as the editable
  install had it — on two builds, one per task's environment; the exported bundles reproduce 0 → 1.

Skips: no Codex CLI (``.ci/install-codex.sh``), no ``node``/``npm``/``git``/``bwrap``.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import codex_driver as drv  # noqa: E402
from conftest import query  # noqa: E402
from env_scenarios import Unavailable, codex_bin  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow(1),  # minutes: a CLI run, two verifies, an export
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")]

NAME = "workspace_shapes"
CORE_TEST = "cd packages/core && npm test"
PY_TEST = "cd py && .venv/bin/python -B -m unittest discover -s tests -q"
IGNORED = ("node_modules", "py/.venv")


def _prepare(repo: Path) -> None:
    """What the author installed and git ignores: the workspace's node_modules (npm links @mono/util to
    its source; no registry), and py/.venv with the package editable (a .pth file naming py/src)."""
    done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--offline"], cwd=repo, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        raise Unavailable(f"npm install of the workspace failed: {done.stderr[-400:]}")
    venv = repo / "py" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    purelib.mkdir(parents=True, exist_ok=True)
    (purelib / "_shapes_editable.pth").write_text(f"{repo / 'py' / 'src'}\n")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> drv.ScenarioRun:
    from logmine.ingest.run import IngestConfig, ingest
    from logmine.segment import SegmentConfig, segment

    for tool in ("node", "npm", "git"):
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` is not on PATH")
    binary = next((codex_bin(v) for v in ("0.171.0", "0.45.0") if codex_bin(v).exists()), None)
    if binary is None:
        pytest.skip("no Codex CLI installed (run .ci/install-codex.sh)")
    scenario, files, _ = drv.load_scenario(NAME, {})
    workdir = tmp_path_factory.mktemp(NAME)
    try:
        result = drv.run_scenario(binary, scenario, files, workdir, turn_timeout_s=240, prepare=_prepare)
    except Unavailable as exc:
        pytest.skip(str(exc))
    if not result.ok or not result.session_files:
        pytest.fail(f"the Codex CLI did not complete {NAME}\n{result.log(3000)}", pytrace=False)
    store = workdir / "store"
    ingest(IngestConfig(paths=(result.codex_home / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    result.store = store
    return result


def _verify(run, name: str, env_mode: str, cache: Path) -> Path:
    from logmine.verify import VerifyConfig, verify

    store = run.store.parent / f"store-{name}"
    shutil.copytree(run.store, store)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOGMINE_CACHE", str(cache))
        verify(VerifyConfig(store=store, env_mode=env_mode))
    return store


def _tests(store: Path) -> dict[str, dict]:
    rows = query(store, "SELECT command, status, status_reason, env_mode, env_reason, before_exit_code, "
                        "after_exit_code, after_excerpt FROM verifiers WHERE kind = 'test_command'")
    return {r["command"]: r for r in rows}


def test_host_mode_binds_the_nested_dependency_directories(run, tmp_path):
    rows = _tests(_verify(run, "host", "host", tmp_path / "cache"))
    assert set(rows) == {CORE_TEST, PY_TEST}, rows
    for row in rows.values():
        assert (row["status"], row["env_mode"]) == ("validated", "host"), row
        assert (row["before_exit_code"], row["after_exit_code"]) == (1, 0), row
    assert "py/.venv" in rows[PY_TEST]["env_reason"] and "node_modules" in rows[CORE_TEST]["env_reason"], rows


def test_a_fresh_clone_builds_the_workspace_and_the_import_root(run, tmp_path):
    from logmine.export.funnel import read_funnel
    from logmine.export.tmax import TmaxExportConfig, export_tmax

    aside = tmp_path / "aside"
    for rel in IGNORED:
        (aside / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(run.repo / rel), str(aside / rel))
    try:
        store = _verify(run, "built", "auto", tmp_path / "cache")
        rows = _tests(store)
        for row in rows.values():
            assert (row["status"], row["env_mode"]) == ("validated", "built"), row
        envs = {tuple(r["dirs"]): r for r in query(store, "SELECT dirs, recipe_key, binds, notes FROM environments")}
        assert set(envs) == {("packages/core",), ("py",)}, envs
        assert any(b.endswith(f"-> {run.repo}/node_modules") for b in envs[("packages/core",)]["binds"]), envs
        assert any(b.endswith(f"-> {run.repo}/py/.venv") for b in envs[("py",)]["binds"]), envs
        builds = read_funnel(store).builds
        assert (builds.tasks, builds.environments) == (2, 2), builds
        summary = export_tmax(TmaxExportConfig(store=store, out=tmp_path / "tmax"))
        assert (summary.rows, summary.reproduced) == (2, 2), summary
        dockerfiles = [p.read_text() for p in (tmp_path / "tmax" / "tasks").glob("*/environment/Dockerfile")]
        assert any("PYTHONPATH=/workspace/py/src" in d.replace("\\\n", " ").split() for d in dockerfiles), dockerfiles
    finally:
        for rel in IGNORED:
            shutil.move(str(aside / rel), str(run.repo / rel))
