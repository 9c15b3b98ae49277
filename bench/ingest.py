#!/usr/bin/env python3
"""Throughput benchmark of ``logmine ingest`` against two anchors, in one run, on one corpus.

Not a timed test: it prints figures and whether the targets of the ingest stage are met.

    python bench/ingest.py                 # 200 MB corpus in a temporary directory
    python bench/ingest.py --size-mb 20    # quick check
    python bench/ingest.py --out /tmp/lm-bench --json

The corpus is the session files of ``tests/fixtures/codex-public`` and ``tests/fixtures/codex-generated``
(``.jsonl`` and ``.json``; not ``scenario.json`` nor the scenario's ``repo/``) copied again and again into
``rep-NNNN/`` subdirectories until it holds at least ``--size-mb`` MB (1 MB = 10^6 bytes). Copies are
distinct files (no links) and keep their names.

Measured, each tool in its own fresh wrapper process that starts it in a new session: wall time; CPU
time and peak RSS of the whole process tree (the session's processes sampled from /proc every 50 ms,
plus ``getrusage(RUSAGE_CHILDREN)`` for every process reaped), and the largest single process:

* ``logmine ingest CORPUS --store STORE -q --json`` into an empty store (the full run), then again on
  the unchanged corpus (the re-run), then into a second empty store on the first half of the copies
  (does peak RSS grow with the input?), then with ``--jobs 1`` (one reading process; informational);
* DuckDB ``read_json_objects`` over the same files (the raw-scan anchor: parse JSON, no mapping, no
  redaction, no writing), with its default threads and with one thread;
* logmine's redaction alone (``logmine.redact``, one process, the chunk API ingest can call) over the
  same files: its CPU time over the full ingest's CPU time is redaction's share of ingest;
* ``teich convert CORPUS`` (the teich anchor), and ``teich extract codex`` (teich's anonymizing copy,
  informational), when teich is installed (``pip install teich``).

Linux only (/proc, getrusage). See bench/README.md for what each number means.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DIRS = (ROOT / "tests" / "fixtures" / "codex-public", ROOT / "tests" / "fixtures" / "codex-generated")
SKIP_NAMES = {"scenario.json"}
SKIP_DIRS = {"repo"}
MB = 1e6
TEICH_HINT = "pip install teich  (tested with teich 0.3.6; not a logmine dependency)"

# Targets of the ingest stage (see the issue / bench/README.md).
TARGET_VS_DUCKDB = 0.5  # logmine MB/s >= 0.5 x DuckDB's raw JSON scan
TARGET_VS_TEICH = 2.0  # logmine MB/s >= 2 x teich convert
TARGET_REDACT_SHARE = 0.20  # redaction CPU <= 20% of the full ingest's CPU
TARGET_RERUN = 0.05  # re-run on unchanged input <= 5% of the full run
TARGET_RSS_GROWTH = 1.25  # peak RSS on the full corpus <= 1.25 x peak RSS on half of it
LOGMINE_BATCH_BYTES = 64 << 20  # logmine's default --batch-mb: memory is bounded per commit batch

# Runs one command in its own session and reports its wall time, CPU time and memory as JSON. A thread
# samples /proc every 50 ms: the summed RSS of every process of the session (the tool, its worker pools,
# forkservers, even orphaned ones) and each process's CPU ticks. getrusage(RUSAGE_CHILDREN) adds exact
# figures for every process that was reaped; a fresh wrapper per measurement so it holds one tool only.
_WRAPPER = r"""
import json, os, resource, signal, subprocess, sys, threading, time
spec = json.loads(sys.argv[1])
PAGE, HZ = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
peak = {"tree": 0, "one": 0}
ticks, done = {}, threading.Event()

def sample(sid):
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        rest = data[data.rindex(b")") + 2:].split()  # fields 3.. of proc_pid_stat(5)
        if int(rest[3]) != sid:  # field 6: session id
            continue
        rss = int(rest[21]) * PAGE  # field 24: resident pages
        ticks[(name, rest[19])] = int(rest[11]) + int(rest[12])  # (pid, start time): utime + stime
        total += rss
        peak["one"] = max(peak["one"], rss)
    peak["tree"] = max(peak["tree"], total)

def poll(sid):
    while not done.is_set():
        sample(sid)
        done.wait(0.05)

stdin = subprocess.PIPE if spec.get("input") is not None else subprocess.DEVNULL
with open(spec["stdout"], "wb") as out, open(spec["stderr"], "wb") as err:
    t0 = time.perf_counter()
    proc = subprocess.Popen(spec["cmd"], stdin=stdin, stdout=out, stderr=err, start_new_session=True)
    poller = threading.Thread(target=poll, args=(proc.pid,), daemon=True)
    poller.start()
    timed_out = False
    try:
        proc.communicate(spec["input"].encode() if spec.get("input") is not None else None,
                         timeout=spec["timeout"])
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    wall = time.perf_counter() - t0
    done.set()
    poller.join()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": proc.returncode, "timed_out": timed_out, "wall_s": wall,
                  "cpu_s": max(ru.ru_utime + ru.ru_stime, sum(ticks.values()) / HZ),
                  "tree_rss": peak["tree"], "max_proc_rss": max(peak["one"], ru.ru_maxrss * 1024),
                  "procs": len(ticks)}))
"""

# The DuckDB anchor: count the JSON objects of every session file. Times the queries only, the median
# of three runs in the same process (one run is a fraction of a second: too noisy alone).
_DUCKDB = r"""
import json, statistics, sys, time
import duckdb
corpus, threads = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
if threads:
    con.execute(f"SET threads = {threads}")
lit = lambda s: "'" + s.replace("'", "''") + "'"
runs = []
for _ in range(3):
    t0 = time.perf_counter()
    jsonl = con.execute(f"SELECT count(*) FROM read_json_objects({lit(corpus + '/**/*.jsonl')}, "
                        "format = 'newline_delimited', maximum_object_size = 1073741824)").fetchone()[0]
    g0 = con.execute(f"SELECT count(*) FROM read_json_objects({lit(corpus + '/**/*.json')}, "
                     "format = 'auto', maximum_object_size = 1073741824)").fetchone()[0]
    runs.append(time.perf_counter() - t0)
print(json.dumps({"threads": int(con.execute("SELECT current_setting('threads')").fetchone()[0]),
                  "jsonl_objects": jsonl, "json_documents": g0, "query_s": statistics.median(runs),
                  "runs_s": runs, "duckdb": duckdb.__version__}))
"""

# Redaction alone: every session file redacted as ingest does (JSONL in chunks of lines, a G0 .json
# document whole), in one process. Times the redaction only; the rules are compiled before.
_REDACT = r"""
import json, pathlib, sys, time
from logmine.redact import Redactor, engine_name
r = Redactor(); r.redact_text("warm up")
total = 0.0
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.json*")):
    text = path.read_text(encoding="utf-8", errors="replace")
    t0 = time.process_time()
    if path.suffix == ".jsonl":
        lines = text.splitlines()
        for i in range(0, len(lines), 4096):
            r.redact_jsonl(lines[i:i + 4096])
    else:
        r.redact_json_line(text)
    total += time.process_time() - t0
print(json.dumps({"redact_cpu_s": total, "engine": engine_name(), "redactions": sum(r.counts.values())}))
"""


# ----------------------------------------------------------------------------------------------- corpus

def fixture_files() -> list[tuple[Path, Path]]:
    """(fixture file, path relative to the fixtures root) for every session file to replicate."""
    files = []
    for top in FIXTURE_DIRS:
        for path in sorted(top.rglob("*")):
            rel = path.relative_to(top)
            if not path.is_file() or path.name in SKIP_NAMES or SKIP_DIRS.intersection(rel.parts[:-1]):
                continue
            if path.suffix in (".jsonl", ".json"):
                files.append((path, Path(top.name) / rel))
    if not files:
        sys.exit(f"bench: no fixture session files under {', '.join(map(str, FIXTURE_DIRS))}")
    return files


def build_corpus(corpus: Path, size_mb: float) -> dict:
    """Copy the fixtures into ``corpus/rep-NNNN/`` until it holds ``size_mb`` MB; reuse a matching one."""
    files = fixture_files()
    unit = sum(src.stat().st_size for src, _ in files)
    copies = max(1, math.ceil(size_mb * MB / unit))
    manifest = {"copies": copies, "files_per_copy": len(files), "bytes_per_copy": unit,
                "fixtures": [str(rel) for _, rel in files]}
    marker = corpus.parent / "corpus.json"  # outside the corpus: no tool may read it
    if corpus.is_dir() and marker.exists() and json.loads(marker.read_text()) == manifest:
        log(f"reusing corpus {corpus} ({copies} copies)")
    else:
        marker.unlink(missing_ok=True)
        if corpus.exists():
            shutil.rmtree(corpus)
        log(f"building corpus: {copies} copies x {len(files)} files x {unit / MB:.2f} MB -> {corpus}")
        for i in range(copies):
            for src, rel in files:
                dst = corpus / f"rep-{i:04d}" / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)  # a distinct file, not a link
        marker.write_text(json.dumps(manifest))
    reps = sorted(p for p in corpus.iterdir() if p.is_dir() and p.name.startswith("rep-"))
    session = [p for p in corpus.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json")]
    jsonl = [p for p in session if p.suffix == ".jsonl"]
    return {
        "path": str(corpus), "copies": copies, "reps": reps, "files": len(session),
        "bytes": sum(p.stat().st_size for p in session),
        "jsonl_files": len(jsonl), "jsonl_bytes": sum(p.stat().st_size for p in jsonl),
        "json_files": len(session) - len(jsonl),
    }


def warm_cache(corpus: Path) -> float:
    """Read every file once so that every tool starts from the page cache; returns MB/s of that read."""
    total, t0 = 0, time.perf_counter()
    for path in corpus.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                while chunk := handle.read(1 << 22):
                    total += len(chunk)
    return total / MB / (time.perf_counter() - t0)


# ------------------------------------------------------------------------------------------ measurement

def measure(cmd: list[str], work: Path, name: str, timeout: float, stdin: str | None = None,
            env: dict | None = None) -> dict:
    """Run ``cmd`` in a fresh wrapper process; wall/CPU seconds, peak RSS (MB), rc, stdout, stderr tail."""
    out, err = work / f"{name}.stdout", work / f"{name}.stderr"
    spec = {"cmd": cmd, "stdout": str(out), "stderr": str(err), "input": stdin, "timeout": timeout}
    wrapper = subprocess.run([sys.executable, "-c", _WRAPPER, json.dumps(spec)], capture_output=True,
                             text=True, env=env, check=True)
    stats = json.loads(wrapper.stdout)
    stats["peak_rss_mb"] = stats.pop("tree_rss") / MB
    stats["max_proc_rss_mb"] = stats.pop("max_proc_rss") / MB
    stats["stdout"] = out.read_text(errors="replace")
    stats["stderr_tail"] = err.read_text(errors="replace")[-2000:]
    return stats


def row(tool: str, nbytes: int, seconds: float, stats: dict, files: int, note: str = "", **extra) -> dict:
    return {"tool": tool, "files": files, "mb": nbytes / MB, "seconds": seconds,
            "mb_s": nbytes / MB / seconds if seconds > 0 else None, "cpu_s": stats["cpu_s"],
            "wall_s": stats["wall_s"], "peak_rss_mb": stats["peak_rss_mb"],
            "max_proc_rss_mb": stats["max_proc_rss_mb"], "procs": stats["procs"], "note": note, **extra}


def failed(stats: dict) -> str | None:
    if stats["timed_out"]:
        return "timed out"
    if stats["rc"] != 0:
        tail = stats["stderr_tail"].strip().splitlines()[-3:] or stats["stdout"].strip().splitlines()[-3:]
        return f"exit code {stats['rc']}: " + " | ".join(tail)
    return None


def run_duckdb(corpus: dict, work: Path, threads: int, timeout: float) -> dict:
    name = f"duckdb-t{threads or 'default'}"
    log(f"running DuckDB read_json_objects (threads={threads or 'default'})")
    stats = measure([sys.executable, "-c", _DUCKDB, corpus["path"], str(threads)], work, name, timeout)
    if err := failed(stats):
        return {"tool": name, "error": err}
    res = json.loads(stats["stdout"])
    label = f"duckdb read_json_objects ({res['threads']} thr)"
    return row(label, corpus["bytes"], res["query_s"], stats, corpus["files"],
               f"{res['jsonl_objects']} JSONL objects + {res['json_documents']} G0 docs; "
               f"time = median of 3 query runs ({', '.join(f'{t:.2f}' for t in res['runs_s'])} s)",
               threads=res["threads"], duckdb_version=res["duckdb"], runs_s=res["runs_s"],
               objects=res["jsonl_objects"] + res["json_documents"])


def run_logmine(paths: list[str], store: Path, work: Path, name: str, timeout: float,
                extra: tuple[str, ...] = ()) -> tuple[dict, dict | None]:
    cmd = [sys.executable, "-m", "logmine", "ingest", *paths, "--store", str(store), "-q", "--json", *extra]
    stats = measure(cmd, work, name, timeout)
    if err := failed(stats):
        return {"error": err}, None
    try:
        summary = json.loads(stats["stdout"])
    except json.JSONDecodeError:
        return {"error": "no JSON summary on stdout: " + stats["stdout"][-300:]}, None
    return stats, summary


def logmine_has_jobs() -> bool:
    """Does this ``logmine ingest`` take ``--jobs`` (worker processes)?"""
    helptext = subprocess.run([sys.executable, "-m", "logmine", "ingest", "--help"], capture_output=True,
                              text=True, env={**os.environ, "COLUMNS": "200"})
    return "--jobs" in helptext.stdout


def teich_command() -> list[str] | None:
    if importlib.util.find_spec("teich") is not None:
        return [sys.executable, "-m", "teich"]
    exe = shutil.which("teich")
    return [exe] if exe else None


def teich_version() -> str | None:
    try:
        return importlib.metadata.version("teich")
    except importlib.metadata.PackageNotFoundError:
        return None


# ------------------------------------------------------------------------------------------------ main

def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark logmine ingest against DuckDB and teich.")
    ap.add_argument("--size-mb", type=float, default=200, help="corpus size in MB (10^6 bytes); default 200")
    ap.add_argument("--out", type=Path, help="keep corpus, store and outputs in DIR (a matching corpus is reused)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON (the table goes to stderr)")
    ap.add_argument("--no-teich", action="store_true", help="skip both teich runs")
    ap.add_argument("--no-teich-extract", action="store_true", help="skip the informational `teich extract` run")
    ap.add_argument("--no-scaling", action="store_true", help="skip the half-corpus logmine run (peak RSS growth)")
    ap.add_argument("--no-jobs1", action="store_true", help="skip the informational `logmine ingest --jobs 1` run")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed per measured command")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is not met")
    args = ap.parse_args(argv)

    started = time.perf_counter()
    tmp = None
    if args.out:
        base = args.out.resolve()
        base.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="logmine-bench-")
        base = Path(tmp.name)
    work = base / "work"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    try:
        results = bench(args, base, work)
    finally:
        if tmp is not None:
            tmp.cleanup()
    results["total_s"] = time.perf_counter() - started
    table = render(results)
    if args.json:
        print(table, file=sys.stderr)
        print(json.dumps(results, indent=2, default=str))
    else:
        print(table)
    missed = [k for k, t in results["targets"].items() if t["met"] is False]
    return 1 if args.check and missed else 0


def source_digest() -> str | None:
    """A digest of the sources ``logmine ingest`` runs (the logmine modules that ``logmine.ingest``
    imports, all of ``logmine/ingest/`` with its rules, and the CLI), to notice edits made while the
    benchmark runs. Other stages' modules are left out: their edits do not change the ingest path."""
    probe = ("import json, sys, logmine.ingest.run, logmine.ingest.report; print(json.dumps(sorted(m.__file__ for m in "
             "list(sys.modules.values()) if m.__name__.split('.')[0] == 'logmine' and getattr(m, '__file__', None))))")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if found.returncode != 0:
        return None
    paths = {Path(p) for p in json.loads(found.stdout)}
    pkg = next((p.parent for p in paths if p.name == "__init__.py" and p.parent.name == "logmine"), None)
    if pkg is not None:
        paths |= {p for sub in ("ingest", "redact") for p in (pkg / sub).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts}
        paths |= {p for p in (pkg / "cli.py", pkg / "__main__.py") if p.is_file()}
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def bench(args, base: Path, work: Path) -> dict:
    digest = source_digest()
    corpus = build_corpus(base / "corpus", args.size_mb)
    cache_mb_s = warm_cache(Path(corpus["path"]))
    env = {
        "python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine(),
        "logmine": _version("logmine"), "duckdb": _version("duckdb"), "teich": teich_version(),
    }
    rows: dict[str, dict] = {}
    problems: list[str] = []

    # DuckDB: the raw-scan anchor, default threads (what the target compares with), then one thread.
    rows["duckdb"] = run_duckdb(corpus, work, 0, args.timeout)
    if (env["cpus"] or 1) > 1:
        rows["duckdb_1"] = run_duckdb(corpus, work, 1, args.timeout)

    # logmine: full run into an empty store, re-run on the unchanged corpus, half corpus for RSS growth.
    store = base / "store"
    shutil.rmtree(store, ignore_errors=True)
    log("running logmine ingest (full)")
    stats, summary = run_logmine([corpus["path"]], store, work, "logmine-full", args.timeout)
    if summary is None:
        rows["logmine"] = {"tool": "logmine ingest", "error": stats["error"]}
    else:
        note = (f"{summary['events']} events, {summary['sessions']} sessions, "
                f"{summary['quarantined_lines']} quarantined; own elapsed {summary['elapsed_s']:.2f} s")
        rows["logmine"] = row("logmine ingest (full)", corpus["bytes"], stats["wall_s"], stats,
                              summary["files"]["seen"], note, bytes_read=summary["bytes_read"],
                              summary={k: summary[k] for k in ("files", "sessions", "events", "quarantined_lines",
                                                               "formats", "redactions", "bytes_read", "elapsed_s")})
        if summary["bytes_read"] != corpus["bytes"]:
            problems.append(f"logmine read {summary['bytes_read']} bytes of {corpus['bytes']}")
        if summary["files"]["seen"] != corpus["files"]:
            problems.append(f"logmine saw {summary['files']['seen']} files of {corpus['files']}")
        log("running logmine ingest (re-run, unchanged input)")
        stats, again = run_logmine([corpus["path"]], store, work, "logmine-rerun", args.timeout)
        if again is None:
            rows["logmine_rerun"] = {"tool": "logmine ingest (re-run)", "error": stats["error"]}
        else:
            unchanged = again["files"].get("unchanged", 0)
            rows["logmine_rerun"] = row("logmine ingest (re-run)", again["bytes_read"], stats["wall_s"], stats,
                                        again["files"]["seen"], f"{unchanged} files unchanged, "
                                        f"{again['bytes_read']} bytes read", unchanged=unchanged)
            if unchanged != again["files"]["seen"]:
                problems.append(f"re-run: only {unchanged} of {again['files']['seen']} files unchanged")
    if not args.no_scaling and summary is not None:
        half = corpus["reps"][: max(1, len(corpus["reps"]) // 2)]
        half_bytes = sum(p.stat().st_size for r in half for p in r.rglob("*") if p.is_file())
        log(f"running logmine ingest (half corpus: {len(half)} of {len(corpus['reps'])} copies)")
        stats, hs = run_logmine([str(p) for p in half], base / "store-half", work, "logmine-half", args.timeout)
        shutil.rmtree(base / "store-half", ignore_errors=True)
        if hs is None:
            rows["logmine_half"] = {"tool": "logmine ingest (half)", "error": stats["error"]}
        else:
            rows["logmine_half"] = row("logmine ingest (half corpus)", half_bytes, stats["wall_s"], stats,
                                       hs["files"]["seen"], "peak RSS growth check")
    if not args.no_jobs1 and summary is not None and (env["cpus"] or 1) > 1 and logmine_has_jobs():
        log("running logmine ingest --jobs 1 (one process reading)")
        stats, one = run_logmine([corpus["path"]], base / "store-j1", work, "logmine-j1", args.timeout, ("--jobs", "1"))
        shutil.rmtree(base / "store-j1", ignore_errors=True)
        if one is None:
            rows["logmine_j1"] = {"tool": "logmine ingest --jobs 1", "error": stats["error"]}
        else:
            rows["logmine_j1"] = row("logmine ingest --jobs 1", corpus["bytes"], stats["wall_s"], stats,
                                     one["files"]["seen"], "per-core figure (informational)")

    if summary is not None:
        log("running logmine's redaction alone")
        stats = measure([sys.executable, "-c", _REDACT, corpus["path"]], work, "logmine-redact", args.timeout)
        if err := failed(stats):
            rows["redact"] = {"tool": "logmine redaction alone", "error": err}
        else:
            res = json.loads(stats["stdout"])
            rows["redact"] = row(f"logmine redaction alone ({res['engine']})", corpus["bytes"], res["redact_cpu_s"],
                                 stats, corpus["files"], f"CPU s of redaction only; {res['redactions']} redactions",
                                 redact_cpu_s=res["redact_cpu_s"], engine=res["engine"])

    # teich: `convert` is the anchor; `extract codex` (anonymizing copy) is informational.
    teich = None if args.no_teich else teich_command()
    teich_note = None
    if args.no_teich:
        teich_note = "skipped (--no-teich)"
    elif teich is None:
        teich_note = f"teich is not installed: no teich figures. Install it with: {TEICH_HINT}"
        log(teich_note)
    else:
        teich_env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "200"}
        # teich reads only *.jsonl (its convert/extract glob); the G0 .json documents are not read.
        log("running teich convert")
        out = work / "teich-convert.jsonl"
        stats = measure([*teich, "convert", corpus["path"], "--out", str(out)], work, "teich-convert",
                        args.timeout, env=teich_env)
        if err := failed(stats):
            rows["teich"] = {"tool": "teich convert", "error": err}
        else:
            n_rows = sum(1 for _ in open(out, "rb")) if out.exists() else 0
            rows["teich"] = row("teich convert", corpus["jsonl_bytes"], stats["wall_s"], stats,
                                corpus["jsonl_files"], f"*.jsonl only ({corpus['json_files']} G0 .json not read); "
                                f"{n_rows} training rows written", rows_written=n_rows)
        out.unlink(missing_ok=True)
        if not args.no_teich_extract:
            log("running teich extract codex")
            dest = work / "teich-extract"
            stats = measure([*teich, "extract", "codex", "--sessions-dir", corpus["path"], "--out", str(dest)],
                            work, "teich-extract", args.timeout, stdin="n\n", env=teich_env)
            if err := failed(stats):
                rows["teich_extract"] = {"tool": "teich extract codex", "error": err}
            else:
                written = sum(1 for p in dest.glob("*.jsonl")) if dest.exists() else 0
                rows["teich_extract"] = row("teich extract codex", corpus["jsonl_bytes"], stats["wall_s"], stats,
                                            corpus["jsonl_files"], f"anonymizing copy, {written} files written; "
                                            "anonymized with a process pool", files_written=written)
            shutil.rmtree(dest, ignore_errors=True)

    if source_digest() != digest:
        problems.append("logmine's source files changed during the benchmark: the logmine rows are not comparable")
    env["logmine_sources"] = digest
    return {
        "environment": env,
        "corpus": {k: v for k, v in corpus.items() if k != "reps"},
        "page_cache_read_mb_s": cache_mb_s,
        "rows": rows,
        "ratios": ratios(rows),
        "targets": targets(rows, teich_note),
        "teich": teich_note,
        "problems": problems,
    }


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _ok(r: dict | None) -> bool:
    return bool(r) and "error" not in r


def ratios(rows: dict) -> dict:
    lm, out = rows.get("logmine"), {}
    if _ok(lm):
        for key, anchor in (("logmine/duckdb", "duckdb"), ("logmine/teich", "teich"),
                            ("logmine/teich_extract", "teich_extract")):
            if _ok(rows.get(anchor)):
                out[key] = lm["mb_s"] / rows[anchor]["mb_s"]
        if _ok(rows.get("duckdb_1")) and _ok(rows.get("logmine_j1")):  # one core each
            out["logmine_jobs1/duckdb_1thread"] = rows["logmine_j1"]["mb_s"] / rows["duckdb_1"]["mb_s"]
        if _ok(rows.get("redact")):  # CPU over CPU: the share of ingest's work that is redaction
            out["redaction/ingest cpu"] = rows["redact"]["redact_cpu_s"] / lm["cpu_s"]
        if _ok(rows.get("logmine_rerun")):
            out["rerun/full"] = rows["logmine_rerun"]["seconds"] / lm["seconds"]
        if _ok(rows.get("logmine_half")):
            out["peak_rss full/half"] = lm["peak_rss_mb"] / rows["logmine_half"]["peak_rss_mb"]
            out["input full/half"] = lm["mb"] / rows["logmine_half"]["mb"]
    return out


def targets(rows: dict, teich_note: str | None) -> dict:
    r = ratios(rows)

    def target(key: str, want: str, value, met, why: str | None = None) -> dict:
        return {"ratio": key, "want": want, "value": value, "met": met, "why": why}

    def ge(key, bound, why):
        return target(key, f">= {bound}", r.get(key), None if key not in r else r[key] >= bound,
                      None if key in r else why)

    def error_of(*keys):
        return next((f"{rows[k]['tool']}: {rows[k]['error']}" for k in keys if rows.get(k) and not _ok(rows[k])),
                    None)

    out = {
        "throughput vs DuckDB raw scan": ge("logmine/duckdb", TARGET_VS_DUCKDB, error_of("logmine", "duckdb")),
        "throughput vs teich convert": ge("logmine/teich", TARGET_VS_TEICH,
                                          error_of("logmine", "teich") or teich_note),
    }
    share = r.get("redaction/ingest cpu")
    out["redaction share of ingest"] = target("redaction/ingest cpu", f"<= {TARGET_REDACT_SHARE}", share,
                                              None if share is None else share <= TARGET_REDACT_SHARE,
                                              None if share is not None else error_of("logmine", "redact"))
    rr = r.get("rerun/full")
    out["re-run on unchanged input"] = target("rerun/full", f"<= {TARGET_RERUN}", rr,
                                              None if rr is None else rr <= TARGET_RERUN,
                                              None if rr is not None else error_of("logmine", "logmine_rerun"))
    growth, half = r.get("peak_rss full/half"), rows.get("logmine_half")
    if growth is None:
        why = error_of("logmine", "logmine_half") or "half-corpus run skipped"
        out["memory bounded (streaming)"] = target("peak_rss full/half", f"<= {TARGET_RSS_GROWTH}", None, None, why)
    elif half["mb"] * MB < LOGMINE_BATCH_BYTES:
        out["memory bounded (streaming)"] = target(
            "peak_rss full/half", f"<= {TARGET_RSS_GROWTH}", growth, None,
            f"half corpus ({half['mb']:.0f} MB) is below one commit batch ({LOGMINE_BATCH_BYTES / MB:.0f} MB): "
            "use --size-mb >= 140 to judge")
    else:
        out["memory bounded (streaming)"] = target("peak_rss full/half", f"<= {TARGET_RSS_GROWTH}", growth,
                                                   growth <= TARGET_RSS_GROWTH)
    return out


def render(res: dict) -> str:
    c, env = res["corpus"], res["environment"]
    lines = [
        f"corpus: {c['bytes'] / MB:.1f} MB, {c['files']} files ({c['jsonl_files']} .jsonl, "
        f"{c['json_files']} G0 .json), "
        f"{c['copies']} copies of the fixtures; page cache warm (read once at {res['page_cache_read_mb_s']:.0f} MB/s)",
        f"machine: {env['cpus']} CPUs, Python {env['python']}; logmine {env['logmine']}, duckdb {env['duckdb']}, "
        f"teich {env['teich'] or 'not installed'}",
        "",
        f"{'tool':<34} {'files':>5} {'MB':>6} {'seconds':>7} {'MB/s':>6} {'CPU s':>6} {'procs':>5} "
        f"{'peak RSS MB':>11} {'(largest)':>9}  note",
    ]
    for r in res["rows"].values():
        if "error" in r:
            lines.append(f"{r['tool']:<34} FAILED: {r['error']}")
            continue
        mb_s = f"{r['mb_s']:.1f}" if r["mb_s"] is not None and r["mb"] > 0 else "-"
        lines.append(f"{r['tool']:<34} {r['files']:>5} {r['mb']:>6.1f} {r['seconds']:>7.2f} {mb_s:>6} "
                     f"{r['cpu_s']:>6.1f} {r['procs']:>5} {r['peak_rss_mb']:>11.0f} {r['max_proc_rss_mb']:>9.0f}  "
                     f"{r['note']}")
    if res["teich"]:
        lines.append(f"teich: {res['teich']}")
    lines += ["", "ratios:"]
    for k, v in res["ratios"].items():
        lines.append(f"  {k:<30} {v:.3f}")
    lines += ["", "targets:"]
    for name, t in res["targets"].items():
        verdict = {True: "MET", False: "NOT MET", None: "n/a"}[t["met"]]
        value = f"{t['value']:.3f}" if t["value"] is not None else "-"
        lines.append(f"  {name:<32} {t['ratio']} = {value} (want {t['want']}): {verdict}"
                     + (f" ({t['why']})" if t["why"] else ""))
    for p in res["problems"]:
        lines.append(f"WARNING: {p}")
    lines.append(f"\nbenchmark wall time: {res['total_s']:.0f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
