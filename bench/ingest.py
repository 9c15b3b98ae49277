#!/usr/bin/env python3
"""Throughput benchmark of ``logmine ingest`` against two anchors, in one run, on one corpus.

Not a timed test: it prints figures and whether the targets of the ingest stage are met.

    python bench/ingest.py                 # 200 MB corpus in a temporary directory
    python bench/ingest.py --size-mb 20    # quick check
    python bench/ingest.py --out /tmp/lm-bench --json

The corpus is the session files of ``tests/fixtures/codex-public`` and ``tests/fixtures/codex-generated``
(``.jsonl`` and ``.json``; not ``scenario.json`` nor the scenario's ``repo/``) copied again and again into
``rep-NNNN/`` subdirectories until it holds at least ``--size-mb`` MB (1 MB = 10^6 bytes). Copies are
distinct files (no links) holding distinct sessions: every UUID (session ids, call ids, in names and
content) ends in the copy's number, so no tool stores a copy as a duplicate of another (logmine stores
content it has already seen once; with plain copies it wrote 1/51 of the rows teich writes).

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
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_tools import (  # noqa: E402 - bench/ is the script's directory
    _REDACT,
    LOGMINE_BATCH_BYTES,
    MB,
    TARGET_REDACT_SHARE,
    TARGET_RERUN,
    TARGET_RSS_GROWTH,
    TARGET_VS_DUCKDB,
    TARGET_VS_TEICH,
    TEICH_HINT,
    build_corpus,
    failed,
    log,
    logmine_has_jobs,
    measure,
    row,
    run_duckdb,
    run_logmine,
    teich_command,
    teich_version,
    warm_cache,
)


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
        f"{c['copies']} copies of the fixtures (distinct sessions); page cache warm (read once at {res['page_cache_read_mb_s']:.0f} MB/s)",
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
