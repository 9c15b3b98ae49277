"""Verify on a two-node Ray cluster: the same statuses as the local pool, rows naming both nodes,
and a worker killed mid-run does not change the result."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import query

from logmine.sandbox.bwrap import probe

STATUSES = "SELECT verifier_id, status, env_mode FROM verifications ORDER BY verifier_id"
REASONS = "SELECT DISTINCT status_reason FROM verifications"
LOGMINE = str(Path(sys.executable).parent / "logmine")


def _installed_demo_dir(cwd: Path) -> Path:
    """The demo directory of the logmine the CLI runs (not a source tree the test process may see)."""
    return Path(subprocess.run([sys.executable, "-c", "from logmine.demo import DEMO_DIR; print(DEMO_DIR)"],
                               cwd=cwd, capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture(scope="module")
def local_demo(tmp_path_factory):
    """The local run, through the same CLI as the Ray runs (so both read the same demo files)."""
    if probe() is not None:
        pytest.skip("bubblewrap cannot run here")
    root = tmp_path_factory.mktemp("local-demo")
    done = subprocess.run([LOGMINE, "run", "--demo", "--store", str(root / "store"), "--out", str(root / "out")],
                          cwd=root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return root / "store"


def test_ray_verify_equals_local_and_names_two_nodes(ray_cluster, local_demo, tmp_path):
    done = ray_cluster.run([LOGMINE, "run", "--demo", "--store", str(tmp_path / "store"), "--out",
                            str(tmp_path / "out"), "--executor", "ray"], timeout=900, cwd=tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert query(tmp_path / "store", STATUSES) == query(local_demo, STATUSES), query(local_demo, REASONS)
    nodes = {r["node"] for r in query(tmp_path / "store", "SELECT DISTINCT node FROM verifications")}
    assert len(nodes) >= 2 and all(n.startswith("127.0.0.1/") for n in nodes), nodes
    workers = query(tmp_path / "store", "SELECT count(DISTINCT worker) AS n FROM verifications")[0]["n"]
    assert workers >= 2
    local_nodes = {r["node"] for r in query(local_demo, "SELECT DISTINCT node FROM verifications")}
    assert len(local_nodes) == 1 and None not in local_nodes


def test_a_worker_killed_mid_run_changes_nothing(ray_cluster, local_demo, tmp_path):
    store = tmp_path / "store"
    for argv in (["ingest", "--demo", "--store", str(store), "-q"], ["segment", "--store", str(store)]):
        assert ray_cluster.run([LOGMINE, *argv], timeout=300).returncode == 0
    repos = tmp_path / "repos"
    subprocess.run(["cp", "-r", str(_installed_demo_dir(tmp_path) / "repos"), str(repos)], check=True)
    verify = subprocess.Popen(ray_cluster.command([
        LOGMINE, "verify", "--store", str(store), "--repo-map", f"/home/dev/projects/calc={repos / 'calc'}",
        "--plain-dirs", "--executor", "ray", "-q"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**__import__("os").environ, "RAY_ADDRESS": ray_cluster.address})
    killed = 0
    deadline = time.monotonic() + 120
    while verify.poll() is None and time.monotonic() < deadline and not killed:
        found = subprocess.run(["pgrep", "-f", "ray::_unit"], capture_output=True, text=True).stdout.split()
        if found:
            subprocess.run(["kill", "-9", found[0]])
            killed += 1
        time.sleep(0.05)
    out, err = verify.communicate(timeout=900)
    assert verify.returncode == 0, (out + err)[-3000:]
    if not killed:
        pytest.skip("the run finished before a worker could be caught running a unit")
    assert query(store, STATUSES) == query(local_demo, STATUSES)
