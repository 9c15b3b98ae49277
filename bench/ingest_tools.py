"""Measuring tools of bench/ingest.py: the corpus, the per-process wrapper, the tool runners.

Kept apart so that each file stays readable; ``bench/ingest.py`` is the script to run.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
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

# Redaction alone: every session file redacted as ingest does (JSONL in chunks of lines, each chunk's
# text with its UTF-8 bytes, which ingest has read; a G0 .json document whole), in one process. Times
# the redaction only (not decoding the lines); the rules are compiled before.
_REDACT = r"""
import json, pathlib, sys, time
from logmine.redact import Redactor, engine_name
r = Redactor(); r.redact_text("warm up")
total = 0.0
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.json*")):
    data = path.read_bytes()
    text = data.decode("utf-8", errors="replace")
    if path.suffix == ".jsonl":
        raw = [line for line in data.split(b"\n") if line.strip()]
        lines = [line.decode("utf-8", errors="replace") for line in raw]
        t0 = time.process_time()
        for i in range(0, len(lines), 4096):
            r.redact_jsonl(lines[i:i + 4096], raw[i:i + 4096])
    else:
        t0 = time.process_time()
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
                "fixtures": [str(rel) for _, rel in files], "distinct_sessions": True}
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
                dst = corpus / f"rep-{i:04d}" / distinct(str(rel), i)
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_bytes(distinct(src.read_bytes(), i))  # a distinct file, not a link
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


_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{8}([0-9a-f]{4})")


def distinct(data, copy: int):
    """``data`` (a file's bytes or its relative path) with every UUID's last four hex digits replaced by
    the copy's number: each copy holds other sessions (ids, call ids) of the same size and shape, so no
    tool can take one copy for another (logmine stores content it has seen once only once)."""
    if isinstance(data, str):
        return distinct(data.encode(), copy).decode()
    tail = b"%04x" % (copy % 0x10000)
    return _UUID.sub(lambda m: m.group(0)[:-4] + tail, data)


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
