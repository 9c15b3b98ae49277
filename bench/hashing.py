"""Cost of exact change detection: xxh3-128 over every byte read, against ingest of the same bytes.

Ingest hashes each changed file's content in full (logmine/ingest/source.py). This builds a corpus
from the test fixtures (copies with fresh session ids), ingests it once (one process, so the times
compare), then hashes the same files as ingest does (chunks of 4 MiB) and prints both rates and the
share of ingest time the hash accounts for.

    .venv/bin/python bench/hashing.py [--mb 64]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

import xxhash

from logmine.ingest.run import IngestConfig, ingest

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "codex-generated"


def build_corpus(out: Path, target_mb: int) -> list[Path]:
    sources = sorted(FIXTURES.glob("codex-0.*/*.jsonl"))
    files, total, i = [], 0, 0
    while total < target_mb << 20:
        src = sources[i % len(sources)]
        old = src.name[-42:-6]
        new = str(uuid.UUID(int=i + 1))
        path = out / src.name.replace(old, new)
        path.write_bytes(src.read_bytes().replace(old.encode(), new.encode()))
        files.append(path)
        total += path.stat().st_size
        i += 1
    return files


def hash_files(files: list[Path]) -> float:
    started = time.perf_counter()
    for path in files:
        hasher = xxhash.xxh3_128()
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                hasher.update(chunk)
        hasher.hexdigest()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="corpus size in MB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="logmine-bench-hash-") as tmp:
        corpus = Path(tmp) / "sessions"
        corpus.mkdir()
        files = build_corpus(corpus, args.mb)
        mb = sum(p.stat().st_size for p in files) / 1e6
        started = time.perf_counter()
        ingest(IngestConfig(paths=(corpus,), store=Path(tmp) / "store", jobs=1))
        ingest_s = time.perf_counter() - started
        hash_s = min(hash_files(files) for _ in range(3))  # warm page cache, as in ingest's own pass
    print(f"corpus: {len(files)} files, {mb:.1f} MB")
    print(f"ingest (1 process): {ingest_s:.2f} s = {mb / ingest_s:.1f} MB/s")
    print(f"xxh3-128 full-content hash: {hash_s:.3f} s = {mb / hash_s:.0f} MB/s")
    print(f"hash / ingest time: {hash_s / ingest_s:.2%}")


if __name__ == "__main__":
    main()
