#!/usr/bin/env python3
"""Instructions one ingest process spends reading a corpus: this checkout against another, in one run.

Wall and CPU seconds on a shared 2-core machine drift by 15% and more between runs, which hides
the few-percent changes most ingest work is made of. Instruction counts do not drift: callgrind
counts the same total for the same code, input and environment. For each checkout (``--base``, the
anchor, and this one) this runs the reading half of ingest in one process under callgrind —
:func:`logmine.ingest.source.read_file` on every file, the Arrow tables, the Parquet encoding: what a
worker does, without the driver or the store — once with the corpus and once without it; the
difference is the work. It prints both and their ratio (this checkout / the anchor).

    python bench/instructions.py --base /tmp/base            # a checkout of main, e.g. git worktree add /tmp/base main
    python bench/instructions.py --base /tmp/base --copies 2  # more of the bench corpus (about 4 MB a copy)

Needs valgrind (Debian: ``apt-get install valgrind``) and the corpus ``bench/ingest.py`` builds
(``--corpus DIR``, default: one is built in a temporary directory). About a minute per copy.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_tools import build_corpus  # noqa: E402 - bench/ is the script's directory

HERE = Path(__file__).resolve().parent.parent

# Run inside each checkout (PYTHONPATH=checkout): read every file, build the tables, write Parquet.
_WORK = r"""
import glob, sys
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq
try:
    from logmine.ingest.run import file_outcome
except ImportError:  # a base checkout from before it was public
    from logmine.ingest.run import _outcome as file_outcome
from logmine.ingest.source import read_file
from logmine.redact import Redactor, ruleset
ruleset()
files = sorted(glob.glob(sys.argv[1] + "/**/*.json*", recursive=True)) if len(sys.argv) > 1 else []
outs = []
for path in files:
    redactor = Redactor()
    outs.append(file_outcome(read_file(Path(path), None, lambda: 1, redactor, 32 << 20), redactor.counts))
for name in ("events", "sessions", "quarantine"):
    tables = [o.tables[name] for o in outs if name in o.tables]
    if tables:
        pq.write_table(pa.concat_tables(tables), sys.argv[2] + f"/{name}.parquet", compression="zstd")
"""


def instructions(checkout: Path, corpus: Path | None, scratch: Path) -> int:
    """Instructions callgrind counts for :data:`_WORK` in ``checkout`` (no corpus: start-up only)."""
    out = scratch / f"cg-{os.getpid()}-{abs(hash((str(checkout), str(corpus))))}"
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    args = [str(corpus), str(scratch)] if corpus else []
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c",
                           _WORK, *args], capture_output=True, text=True, env=env, cwd=scratch)
    out.unlink(missing_ok=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"instructions: callgrind failed in {checkout}: {done.stderr.strip()[-400:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Instructions of ingest's reading: this checkout against --base.")
    ap.add_argument("--base", type=Path, required=True, help="the anchor: another checkout of logmine")
    ap.add_argument("--copies", type=int, default=1, help="copies of the bench corpus to read (about 4 MB each)")
    ap.add_argument("--corpus", type=Path, help="a corpus bench/ingest.py built (default: build one)")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    if not (args.base / "logmine" / "__init__.py").is_file():
        print(f"instructions: {args.base} is not a logmine checkout", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="logmine-instr-") as tmp:
        scratch = Path(tmp)
        root = args.corpus or scratch / "corpus"
        if args.corpus is None:
            build_corpus(root, args.copies * 3.9)  # MB; a copy is about 3.99 MB
        copies = sorted(p for p in root.iterdir() if p.is_dir())[:args.copies]
        corpus = scratch / "selected"
        corpus.mkdir()
        for copy in copies:
            (corpus / copy.name).symlink_to(copy.resolve())
        trees = (args.base.resolve(), HERE)
        for tree in trees:  # bytecode compiled beforehand, so that neither run counts compiling it
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "logmine")], check=True)
        runs = [(tree, data) for tree in trees for data in (corpus, None)]
        with ThreadPoolExecutor(max_workers=2) as pool:  # one callgrind per core
            counts = list(pool.map(lambda run: instructions(run[0], run[1], scratch), runs))
    base_work, work = counts[0] - counts[1], counts[2] - counts[3]
    print(f"corpus: {len(copies)} copies under {root}")
    print(f"{'checkout':40s} {'total Ir':>15s} {'start-up Ir':>15s} {'work Ir':>15s}")
    for label, total, start in ((str(args.base), counts[0], counts[1]), (str(HERE), counts[2], counts[3])):
        print(f"{label[-40:]:40s} {total:15,d} {start:15,d} {total - start:15,d}")
    print(f"ratio work this/base: {work / base_work:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
