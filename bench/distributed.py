#!/usr/bin/env python3
"""Verify throughput on the local pool and on a Ray cluster of 1 and 2 nodes on this machine, and
the per-unit overhead of the Ray executor.

Not a timed test: it prints figures (never fails).

    python bench/distributed.py            # 6 copies of the demo's sessions, verified 3 times per setting
    python bench/distributed.py --rounds 5 --json

The Ray nodes run in a private network namespace (``unshare -n``; all traffic on 127.0.0.1), each
with one CPU, like the tests' cluster; the measuring driver runs inside the same namespace. Needs
root, bubblewrap and ``pip install 'logmine[ray]'``.

* verify tasks/s: ``logmine.verify.verify`` with ``redo`` of every status over the demo store
  (ingest and segment untimed), local pool with 1 and 2 jobs, Ray with 1 and 2 nodes;
* per-unit overhead: wall time of N no-op units through ``RayExecutor.map`` minus the same through
  the local thread pool, divided by N (the anchor: the local pool measured in the same run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PORT = 6395


def noop(x):
    return x


def _demo_store(root: Path, copies: int) -> tuple[Path, tuple[tuple[str, str], ...]]:
    """The demo's sessions, ``copies`` times over (each copy under fresh session ids), ingested and
    segmented; and the repository map for its shipped repository."""
    import re
    import uuid

    from logmine.demo import DEMO_HOME
    from logmine.ingest.run import IngestConfig, ingest
    from logmine.segment import SegmentConfig, segment

    logs = root / "logs"
    ids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    for k in range(copies):
        for path in (DEMO_HOME / "sessions").rglob("*.json*"):
            found = ids.search(path.name)
            if not found:
                continue
            fresh = str(uuid.UUID(int=uuid.uuid4().int))
            target = logs / str(k) / path.name.replace(found.group(), fresh)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text().replace(found.group(), fresh))
    ingest(IngestConfig(paths=(logs,), store=root / "store"))
    segment(SegmentConfig(store=root / "store"))
    repos = root / "repos"
    subprocess.run(["cp", "-r", str(ROOT / "logmine/demo/repos"), str(repos)], check=True)
    return root / "store", (("/home/dev/projects/calc", str(repos / "calc")),)


def _verify_rate(store: Path, repo_map, executor, jobs: int, rounds: int) -> float:
    from logmine.verify.run import REDO_STATUSES, VerifyConfig, verify

    tasks, seconds = 0, 0.0
    for _ in range(rounds):
        started = time.monotonic()
        summary = verify(VerifyConfig(store=store, repo_map=repo_map, jobs=jobs, redo=REDO_STATUSES,
                                      executor=executor))
        seconds += time.monotonic() - started
        tasks += summary.tasks
    return tasks / seconds


def _overhead(units: int) -> dict:
    from logmine.executor import ExecutorConfig, make_executor

    timings = {}
    for kind in ("local", "ray"):
        executor = make_executor(ExecutorConfig(kind=kind), default_jobs=2)
        list(executor.map(noop, range(4)))  # warm-up: workers started, function shipped
        started = time.monotonic()
        list(executor.map(noop, range(units)))
        timings[kind] = (time.monotonic() - started) / units
        executor.close()
    return {"local_s_per_unit": timings["local"], "ray_s_per_unit": timings["ray"],
            "ray_overhead_ms_per_unit": (timings["ray"] - timings["local"]) * 1000}


def inside(args) -> None:
    """Runs inside the namespace, with the cluster up: measures the setting named by ``--phase``."""
    from logmine.executor import ExecutorConfig

    work = Path(args.work)
    store, repo_map = Path(args.store), tuple(tuple(p) for p in json.loads(args.repo_map))
    result = {}
    if args.phase == "local":
        for jobs in (1, 2):
            result[f"local, {jobs} job(s)"] = _verify_rate(store, repo_map, ExecutorConfig(), jobs, args.rounds)
    else:
        result[f"ray, {args.phase} node(s)"] = _verify_rate(store, repo_map, ExecutorConfig(kind="ray"), 1,
                                                            args.rounds)
        if args.phase == "2":
            result["overhead"] = _overhead(args.units)
    (work / f"{args.phase}.json").write_text(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="verify runs per setting")
    parser.add_argument("--units", type=int, default=200, help="no-op units for the overhead figure")
    parser.add_argument("--copies", type=int, default=6, help="copies of the demo sessions (more tasks)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--repo-map", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return inside(args)
    with tempfile.TemporaryDirectory(prefix="logmine-bench-dist-") as tmp:
        work = Path(tmp)
        store, repo_map = _demo_store(work, args.copies)
        holder = subprocess.Popen(["unshare", "-n", "sleep", "infinity"])
        ns = ["nsenter", "-t", str(holder.pid), "-n"]
        env = {**os.environ, "RAY_ADDRESS": f"127.0.0.1:{PORT}", "RAY_USAGE_STATS_ENABLED": "0"}
        common = ["--work", str(work), "--store", str(store), "--repo-map", json.dumps(repo_map),
                  "--rounds", str(args.rounds), "--units", str(args.units)]
        me = [sys.executable, str(Path(__file__).resolve())]
        try:
            time.sleep(0.2)
            subprocess.run([*ns, "ip", "link", "set", "lo", "up"], check=True)
            subprocess.run([*ns, *me, "--phase", "local", *common], check=True, env=env)
            subprocess.run([*ns, str(BIN / "ray"), "start", "--head", f"--port={PORT}", "--num-cpus=1",
                            "--include-dashboard=false", "--disable-usage-stats"], check=True, env=env,
                           capture_output=True)
            subprocess.run([*ns, *me, "--phase", "1", *common], check=True, env=env)
            subprocess.run([*ns, str(BIN / "ray"), "start", f"--address=127.0.0.1:{PORT}", "--num-cpus=1",
                            "--disable-usage-stats"], check=True, env=env, capture_output=True)
            subprocess.run([*ns, *me, "--phase", "2", *common], check=True, env=env)
        finally:
            subprocess.run([*ns, str(BIN / "ray"), "stop", "--force"], env=env, capture_output=True)
            holder.kill()
        result = {}
        for phase in ("local", "1", "2"):
            result.update(json.loads((work / f"{phase}.json").read_text()))
    overhead = result.pop("overhead")
    anchor = result["local, 1 job(s)"]
    if args.json:
        print(json.dumps({"tasks_per_s": result, "overhead": overhead, "anchor": "local, 1 job(s)"}, indent=2))
        return
    print(f"verify throughput on {args.copies} copies of the demo's sessions ({args.rounds} rounds each; "
          f"{os.cpu_count()} CPUs)")
    for name, rate in result.items():
        print(f"  {name:<18} {rate:6.2f} tasks/s   {rate / anchor:5.2f}x local 1 job")
    print(f"per-unit overhead of the Ray executor ({args.units} no-op units, anchor: the local thread pool): "
          f"{overhead['ray_overhead_ms_per_unit']:.2f} ms "
          f"(ray {overhead['ray_s_per_unit'] * 1000:.2f} ms vs local {overhead['local_s_per_unit'] * 1000:.3f} ms)")


if __name__ == "__main__":
    main()
