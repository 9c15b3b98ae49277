#!/usr/bin/env python3
"""Overhead of the bubblewrap sandbox: a trivial command through it vs a bare subprocess.

Not a timed test: it prints figures and whether the sandbox targets are met (never fails).

    python bench/sandbox.py              # 100 measured runs of each
    python bench/sandbox.py -n 300 --json

Measured, interleaved so that drift hits both alike, after warm-up runs:

* bare: ``subprocess.run(["bash", "-c", "true"])`` with stdout and stderr on one pipe (what the
  sandbox captures too);
* sandbox run: ``box.run("true")`` on an open bwrap sandbox over a one-file workspace: a fresh
  sandbox (namespaces, mounts, privilege drop, limits) and a fresh bash each time;
* shell command: ``shell.run("true")`` in a persistent shell (informational: no new process);
* open + close: ``open_sandbox`` and ``close`` of that workspace (informational: verify opens two
  sandboxes per task);
* full verify of one task: `logmine.verify.verify` on a one-task store (ingest and segment untimed).

Targets (the sandbox issue): sandbox run ≤ 3× bare and ≤ 20 ms above it (medians).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from logmine.sandbox import open_sandbox  # noqa: E402
from logmine.sandbox.bwrap import probe  # noqa: E402

TARGET_RATIO = 3.0
TARGET_OVERHEAD_MS = 20.0


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _bare() -> None:
    subprocess.run(["bash", "-c", "true"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, check=True)


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_ms": statistics.median(ordered), "p10_ms": ordered[len(ordered) // 10],
            "p90_ms": ordered[(len(ordered) * 9) // 10], "n": len(ordered)}


def full_verify_seconds() -> tuple[float | None, str]:
    """Seconds of a full verify of one task, or None and why it was not measured.

    The task: a two-file git repository whose unittest fails, a session (written the way the Codex
    CLI writes G2 files, by tests/session_builder.py) that runs the tests, patches the bug and runs
    them again; ingest and segment are not timed, ``logmine.verify.verify`` is.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from session_builder import SessionBuilder

    from logmine.ingest.run import IngestConfig, ingest
    from logmine.segment import SegmentConfig, segment
    from logmine.verify import VerifyConfig, verify

    with tempfile.TemporaryDirectory(prefix="logmine-bench-verify-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (repo / "test_calc.py").write_text("import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
                                           "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")
        for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "s"]):
            subprocess.run(["git", *cmd], cwd=repo, check=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
        fix = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"
        tests = "python3 -B -m unittest -q"
        (SessionBuilder(cwd=str(repo), commit=commit).user("Fix add").run(tests, 1).patch(fix).run(tests, 0)
         .agent("Fixed.").write(Path(tmp) / "sessions"))
        store = Path(tmp) / "store"
        ingest(IngestConfig(paths=(Path(tmp) / "sessions",), store=store, jobs=1))
        segment(SegmentConfig(store=store))
        started = time.perf_counter()
        summary = verify(VerifyConfig(store=store, jobs=1))
        seconds = time.perf_counter() - started
        validated = sum(n for (_, status), n in summary.statuses.items() if status == "validated")
        return seconds, f"1 task, {sum(summary.statuses.values())} candidates, {validated} validated"


def measure(n: int, warmup: int) -> dict:
    reason = probe()
    if reason is not None:
        raise SystemExit(f"Error: the bwrap sandbox cannot run here: {reason}")
    with tempfile.TemporaryDirectory(prefix="logmine-bench-") as tmp:
        source = Path(tmp) / "repo"
        source.mkdir()
        (source / "README.md").write_text("bench\n")
        opens = []
        for _ in range(max(3, n // 10)):
            started = time.perf_counter()
            with open_sandbox(source):
                pass
            opens.append((time.perf_counter() - started) * 1000)
        with open_sandbox(source) as box:
            shell = box.shell()

            def sandboxed() -> None:
                assert box.run("true").exit_code == 0

            def shell_command() -> None:
                assert shell.run("true").exit_code == 0

            for _ in range(warmup):
                _bare(), sandboxed(), shell_command()
            bare, boxed, shelled = [], [], []
            for _ in range(n):
                bare.append(_timed(_bare))
                boxed.append(_timed(sandboxed))
                shelled.append(_timed(shell_command))
    verify_s, verify_note = full_verify_seconds()
    result = {"bare": _summary(bare), "sandbox_run": _summary(boxed), "shell_command": _summary(shelled),
              "open_close": _summary(opens), "full_verify_s": verify_s, "full_verify_note": verify_note}
    result["ratio"] = result["sandbox_run"]["median_ms"] / result["bare"]["median_ms"]
    result["overhead_ms"] = result["sandbox_run"]["median_ms"] - result["bare"]["median_ms"]
    result["meets_ratio"] = result["ratio"] <= TARGET_RATIO
    result["meets_overhead"] = result["overhead_ms"] <= TARGET_OVERHEAD_MS
    result["machine"] = {"cpus": os.cpu_count(), "kernel": platform.release(), "root": os.geteuid() == 0,
                         "python": platform.python_version()}
    return result


def _print(result: dict) -> None:
    print(f"machine: {result['machine']['cpus']} CPUs, Linux {result['machine']['kernel']}, "
          f"{'root (setpriv drop)' if result['machine']['root'] else 'user namespace'}")
    print(f"{'what':<32}{'median ms':>11}{'p10':>9}{'p90':>9}{'n':>6}")
    for key, label in (("bare", "bare subprocess (bash -c true)"), ("sandbox_run", "sandbox run (bwrap)"),
                       ("shell_command", "persistent shell command"), ("open_close", "open + close sandbox")):
        row = result[key]
        print(f"{label:<32}{row['median_ms']:>11.2f}{row['p10_ms']:>9.2f}{row['p90_ms']:>9.2f}{row['n']:>6}")
    verify = result["full_verify_s"]
    print(f"{'full verify of one task':<32}" + (f"{verify * 1000:>11.0f}" if verify is not None
                                                  else f"  {result['full_verify_note']}"))
    ok = lambda met: "met" if met else "MISSED"  # noqa: E731
    print(f"ratio sandbox/bare: {result['ratio']:.2f}x (target <= {TARGET_RATIO:g}x: {ok(result['meets_ratio'])})")
    print(f"overhead: {result['overhead_ms']:.2f} ms (target <= {TARGET_OVERHEAD_MS:g} ms: "
          f"{ok(result['meets_overhead'])})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100, help="measured runs of each command (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured runs first (default 10)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    result = measure(args.n, args.warmup)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)


if __name__ == "__main__":
    main()
