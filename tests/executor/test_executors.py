"""The local pools and the Ray executor run the same units to the same results."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from logmine.executor import Done, ExecutorConfig, ExecutorError, make_executor


def square(x: int) -> int:
    if x == 3:
        raise ValueError("three is bad")
    return x * x


@pytest.mark.parametrize("processes", [False, True])
def test_local_results_errors_and_order(processes):
    with make_executor(ExecutorConfig(jobs=2), processes=processes) as executor:
        ordered = list(executor.map(square, range(6), ordered=True))
        unordered = list(executor.map(square, range(6)))
    assert [d.index for d in ordered] == list(range(6))
    assert [d.result for d in ordered] == [0, 1, 4, None, 16, 25]
    assert isinstance(ordered[3].error, ValueError) and str(ordered[3].error) == "three is bad"
    assert sorted(d.index for d in unordered) == list(range(6))
    assert all(isinstance(d, Done) and d.placement.worker.startswith("pid ") for d in ordered)


def test_unknown_executor_and_missing_cluster():
    with pytest.raises(ExecutorError, match="unknown executor 'spark'"):
        ExecutorConfig(kind="spark")


DRIVER = textwrap.dedent("""
    import json, sys
    from logmine.executor import ExecutorConfig, make_executor

    def cube(x):
        import time
        time.sleep(1.0)  # long enough that a busy head spills units to the other node, even on a loaded machine
        return x ** 3

    executor = make_executor(ExecutorConfig(kind="ray"))
    import ray, time
    deadline = time.monotonic() + 60  # a loaded machine can lag the head's view of the second node
    while ray.cluster_resources().get("CPU") != 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    done = list(executor.map(cube, range(8), ordered=True))
    checks = executor.check_nodes(lambda: None)
    try:
        executor.check_nodes(lambda: "bwrap is not installed")
        bad = None
    except Exception as exc:
        bad = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"results": [d.result for d in done], "nodes": sorted({d.placement.node for d in done}),
                      "checked": len(checks), "bad": bad}))
""")


def test_ray_runs_units_on_two_nodes(ray_cluster, tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    done = ray_cluster.run([sys.executable, str(script)], timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["results"] == [x ** 3 for x in range(8)]
    assert len(report["nodes"]) == 2 and all(n.startswith("127.0.0.1/") for n in report["nodes"])
    assert report["checked"] == 2
    assert report["bad"].startswith("ExecutorError: node 127.0.0.1/") and "bwrap is not installed" in report["bad"]


def test_no_cluster_is_one_line(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text("from logmine.executor import ExecutorConfig, make_executor\n"
                      "make_executor(ExecutorConfig(kind='ray', address='127.0.0.1:1'))\n")
    pytest.importorskip("ray")
    import subprocess
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "ExecutorError: cannot connect to a Ray cluster at 127.0.0.1:1" in done.stderr
