#!/usr/bin/env python3
"""How fast could ingest be at best? The C-level work its contract needs, against teich, in one run.

``bench/ingest.py`` measures what ingest takes; this script measures what it cannot avoid. Every
ingest must read and hash each file, cut it into lines, run the redaction prefilter over every byte
(Hyperscan's scan and the base64-run pass), parse every line's JSON, turn the parsed values into
Arrow columns and write them as zstd Parquet. Each of those is one library call in C, timed here
alone (CPU seconds of one process, after its imports) on the ``bench/ingest.py`` corpus:

* ``read+hash``: ``Path.read_bytes`` and xxh3-128 of each file;
* ``split``: ``bytes.split(b"\\n")``;
* ``prefilter``: the redaction rules' Hyperscan database over each file's bytes, every match
  reported to a Python callback, and :func:`~logmine.redact.prefilter.base64_runs`;
* ``parse``: ``orjson.loads`` of every line;
* ``arrow``: ``pa.array`` of each column of the events, sessions and quarantine rows the real
  ingest made (as Python values: what a Python mapper hands over);
* ``parquet``: ``pq.write_table(..., compression="zstd")`` of those tables, as the store writes them.

Their sum is the *floor*: what an ingest whose mapping cost nothing would still spend. It also runs
the real reading (:func:`~logmine.ingest.source.read_file` on every file, then the same Arrow and
Parquet steps) for the same process's figure, a bare Python loop over the parsed lines (the least a
mapper in Python does: :func:`bare_loop`), and two start-ups in fresh processes: the CLI's
(``logmine ingest --help``) and a reading worker's imports (``logmine.ingest.worker``, what the
forkserver loads). With ``cores`` CPUs and perfect parallelism the best wall time is
``(CLI start + worker start + floor) / cores``; teich's time (``teich convert``, one process, so its
CPU seconds; run before the steps and after them, the faster run counts) over that is the best
logmine/teich any implementation of the mapping could reach. It prints
the time left for the mapping at the 2× target, per line, next to what the mapping takes now.

    python bench/floor.py --corpus /tmp/lmb/corpus     # the corpus bench/ingest.py --out /tmp/lmb built
    python bench/floor.py --size-mb 20                 # build a small corpus in a temporary directory
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import orjson  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import xxhash  # noqa: E402
from ingest_tools import MB, TARGET_VS_TEICH, build_corpus, teich_command  # noqa: E402 - bench/ is the script's directory

from logmine.ingest.run import file_outcome  # noqa: E402
from logmine.ingest.source import read_file  # noqa: E402
from logmine.redact import Redactor, ruleset  # noqa: E402
from logmine.redact.prefilter import base64_runs  # noqa: E402


def cpu(fn, repeat: int = 2):
    """(the least CPU seconds of this process that ``fn()`` took in ``repeat`` calls, its result):
    a floor, so the best call counts (the first one also pays for the memory it touches first)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def child_cpu(cmd: list[str]) -> float:
    """CPU seconds of ``cmd`` run to its end in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def floor_parts(files: list[str]) -> tuple[dict[str, float], int, float]:
    """CPU seconds of each unavoidable C-level step over ``files``, the number of lines, and the CPU
    seconds :func:`bare_loop` adds to parsing them."""
    secs: dict[str, float] = {}

    def read():
        datas = [Path(path).read_bytes() for path in files]
        for data in datas:
            xxhash.xxh3_128(data).digest()
        return datas
    secs["read+hash"], datas = cpu(read)
    secs["split"], per_file = cpu(lambda: [[line for line in data.split(b"\n") if line.strip()] for data in datas])
    prefilter = ruleset().prefilter
    hits = [0]

    def found(*_):
        hits[0] += 1

    def scan():
        for data in datas:
            prefilter._db.scan(data, match_event_handler=found, scratch=prefilter._scratch())
            hits[0] += sum(1 for _ in base64_runs(data))
    secs["prefilter"], _ = cpu(scan)

    def parse():
        for lines in per_file:
            for line in lines:
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    pass  # a G0 document's lines are no JSON each
    secs["parse"], _ = cpu(parse)
    # the loop parses too, a line at a time as ingest does (holding a whole file's objects costs more)
    parse_and_loop, _ = cpu(lambda: [bare_loop(lines) for lines in per_file])
    loop_s = max(0.0, parse_and_loop - secs["parse"])
    return secs, sum(map(len, per_file)), loop_s


def bare_loop(lines: list[bytes]) -> list[tuple]:
    """The least a mapper written in Python does per line: parse it, read the record's type and its
    payload's, and keep one row of the 13 values every event has. No redaction, no tool or patch
    parsing, no error handling beyond skipping what is no JSON."""
    rows = []
    for seq, raw in enumerate(lines):
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        kind, payload = (obj.get("type"), obj.get("payload")) if isinstance(obj, dict) else (None, None)
        sub = payload.get("type") if isinstance(payload, dict) else None
        rows.append(("session", seq, seq + 1, 0, obj.get("timestamp") if kind else None, None, kind,
                     f"{kind}/{sub}", "path", "g2", raw, 1, False))
    return rows


def real_read(files: list[str]) -> tuple[float, dict[str, pa.Table]]:
    """CPU seconds of ingest's own reading (``read_file`` and each file's tables), and the tables."""
    def work():
        outs = []
        for path in files:
            redactor = Redactor()
            outs.append(file_outcome(read_file(Path(path), None, lambda: 1, redactor, 32 << 20), redactor.counts))
        return {name: pa.concat_tables(t) for name in ("events", "sessions", "quarantine")
                if (t := [o.tables[name] for o in outs if name in o.tables])}
    return cpu(work)  # measured as the floor's steps are, so that the two subtract


def arrow_and_parquet(tables: dict[str, pa.Table], scratch: Path) -> tuple[float, float]:
    """CPU seconds to build ``tables`` again from Python values (column by column), and to write them."""
    columns = {name: [(table.schema.field(i).type, table.column(i).to_pylist()) for i in range(table.num_columns)]
               for name, table in tables.items()}

    def build():
        return {name: pa.table([pa.array(values, type) for type, values in cols], schema=tables[name].schema)
                for name, cols in columns.items()}

    def write():
        for name, table in tables.items():
            pq.write_table(table, scratch / f"{name}.parquet", compression="zstd")
    arrow_s, _ = cpu(build)
    parquet_s, _ = cpu(write)
    return arrow_s, parquet_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="The floor of ingest's work (C-level steps alone) against teich.")
    ap.add_argument("--corpus", type=Path, help="a corpus bench/ingest.py built (default: build one)")
    ap.add_argument("--size-mb", type=float, default=200, help="size of the corpus to build (MB); default 200")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="CPUs for the best wall time")
    ap.add_argument("--no-teich", action="store_true", help="skip teich convert")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="logmine-floor-") as tmp:
        scratch = Path(tmp)
        corpus = args.corpus or Path(build_corpus(scratch / "corpus", args.size_mb)["path"])
        files = sorted(glob.glob(f"{corpus}/**/*.json*", recursive=True))
        nbytes = sum(os.path.getsize(f) for f in files)
        ruleset()  # compiled (or loaded) before any step is timed
        teich = None if args.no_teich else teich_command()

        def run_teich() -> float:
            return child_cpu([*teich, "convert", str(corpus), "--out", str(scratch / "teich.jsonl")])
        teich_runs = [run_teich()] if teich else []
        parts, n_lines, loop_s = floor_parts(files)
        current_s, tables = real_read(files)
        parts["arrow"], parts["parquet"] = arrow_and_parquet(tables, scratch)
        cli_s = min(child_cpu([sys.executable, "-m", "logmine", "ingest", "--help"]) for _ in range(2))
        worker_s = min(child_cpu([sys.executable, "-c", "import logmine.ingest.worker"]) for _ in range(2))
        if teich:  # once before the steps, once after: the host's speed drifts, the faster run counts
            teich_runs.append(run_teich())
        teich_s = min(teich_runs, default=None)

    floor = sum(parts.values())
    start = cli_s + worker_s
    best = (start + floor) / args.cores
    print(f"corpus: {nbytes / MB:.1f} MB, {len(files)} files, {n_lines} lines; one process; {args.cores} cores for the bound")
    print(f"{'step':<28}{'CPU s':>8}{'MB/s':>9}")
    for name, secs in parts.items():
        print(f"{name:<28}{secs:8.2f}{nbytes / MB / secs if secs else float('inf'):9.1f}")
    print(f"{'floor (sum)':<28}{floor:8.2f}{nbytes / MB / floor:9.1f}")
    print(f"{'read_file + arrow + parquet':<28}{current_s + parts['parquet']:8.2f}  (ingest's reading as it is)")
    print(f"{'start-up: CLI':<28}{cli_s:8.2f}")
    print(f"{'start-up: a worker':<28}{worker_s:8.2f}")
    print(f"best wall on {args.cores} cores, mapping free: ({start:.2f} + {floor:.2f}) / {args.cores} = {best:.2f} s")
    # the real read's CPU less the floor steps it contains (arrow's build is inside read_file's tables)
    mapping_now = current_s - (floor - parts["parquet"])
    print(f"mapping and plumbing now: {mapping_now:.2f} CPU s ({mapping_now / n_lines * 1e6:.1f} us a line)")
    print(f"a bare Python loop over the parsed lines: {loop_s:.2f} CPU s ({loop_s / n_lines * 1e6:.1f} us a line)")
    if teich_s is not None:
        # teich is one process: its CPU time is its wall time, less the waits a loaded host adds
        print(f"teich convert: {teich_s:.2f} CPU s (one process, the faster of 2 runs); best logmine/teich = {teich_s / best:.2f} "
              f"(target {TARGET_VS_TEICH:g})")
        budget = (teich_s / TARGET_VS_TEICH) * args.cores - start - floor
        print(f"left for mapping and plumbing at {TARGET_VS_TEICH:g}x teich: {budget:.2f} CPU s "
              f"({budget / n_lines * 1e6:.1f} us a line)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
