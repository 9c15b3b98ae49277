"""A real two-node Ray cluster on one machine, inside a private network namespace.

``ray start --head`` and ``ray start --address`` run in a network namespace of their own (``unshare
-n``, loopback only), so every byte of cluster traffic stays on 127.0.0.1; drivers run inside the same
namespace through ``nsenter``. Skipped where Ray, ``unshare`` or namespaces are not available.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

PORT = 6391
BIN = Path(sys.executable).parent


@dataclass
class RayCluster:
    holder: subprocess.Popen
    address: str

    def command(self, argv: list[str]) -> list[str]:
        return ["nsenter", "-t", str(self.holder.pid), "-n", *argv]

    def run(self, argv: list[str], *, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
        env = {**os.environ, "RAY_ADDRESS": self.address, "RAY_USAGE_STATS_ENABLED": "0", **kwargs.pop("env", {})}
        return subprocess.run(self.command(argv), capture_output=True, text=True, timeout=timeout, env=env, **kwargs)


_WAIT_FOR_NODES = """
import sys, time, ray
ray.init(logging_level="ERROR", log_to_driver=False)
deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    if sum(n["Alive"] for n in ray.nodes()) == 2 and ray.cluster_resources().get("CPU") == 2:
        sys.exit(0)
    time.sleep(0.5)
sys.exit(f"nodes: {ray.nodes()}")
"""


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root here"
    if not (shutil.which("unshare") and shutil.which("nsenter") and shutil.which("ip")):
        return "unshare/nsenter/ip not installed"
    if not (BIN / "ray").exists():
        return "ray is not installed (pip install 'logmine[ray]')"
    return None


@pytest.fixture(scope="session")
def ray_cluster():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    holder = subprocess.Popen(["unshare", "-n", "sleep", "infinity"])
    cluster = RayCluster(holder, f"127.0.0.1:{PORT}")
    try:
        time.sleep(0.2)
        subprocess.run(cluster.command(["ip", "link", "set", "lo", "up"]), check=True)
        for argv in ([str(BIN / "ray"), "start", "--head", f"--port={PORT}", "--num-cpus=1",
                      "--include-dashboard=false", "--disable-usage-stats"],
                     [str(BIN / "ray"), "start", f"--address={cluster.address}", "--num-cpus=1",
                      "--disable-usage-stats"]):
            done = cluster.run(argv, timeout=180)
            if done.returncode != 0:
                pytest.skip(f"ray start failed: {(done.stderr or done.stdout)[-300:]}")
        # `ray start --address` returns before the head counts the second node: a driver started at
        # once could see one node and place every unit there
        done = cluster.run([sys.executable, "-c", _WAIT_FOR_NODES], timeout=120)
        if done.returncode != 0:
            pytest.skip(f"the second Ray node did not join: {(done.stderr or done.stdout)[-300:]}")
        yield cluster
    finally:
        cluster.run([str(BIN / "ray"), "stop", "--force"], timeout=120)
        holder.kill()
        holder.wait()
