"""The ingest stage: discover files, read what is new, commit rows to the store in batches."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from logmine.ingest.reader import default_inputs, discover
from logmine.ingest.records import TABLES
from logmine.ingest.redact import Redactor
from logmine.ingest.source import FileResult, bad_file, read_file
from logmine.ingest.store import FileRecord, Store


class NothingToIngest(RuntimeError):
    """No input path exists or none holds a session file."""


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """What ``logmine ingest`` reads and where it writes."""

    paths: tuple[Path, ...] = ()  # files or directories; empty means the Codex home defaults
    store: Path = Path("logmine-store")
    max_line_bytes: int = 32 << 20  # longer lines are quarantined without being loaded
    batch_bytes: int = 64 << 20  # source bytes per commit


@dataclass
class IngestSummary:
    """Counts of one run (only what this run added, except the store totals)."""

    files_seen: int = 0
    changes: Counter = field(default_factory=Counter)  # new/grown/rewritten/unchanged/bad
    bad_files: list[tuple[str, str]] = field(default_factory=list)
    pending: list[tuple[str, int]] = field(default_factory=list)  # files with an incomplete last line
    sessions: int = 0
    events: int = 0
    quarantined: int = 0
    quarantine_reasons: Counter = field(default_factory=Counter)
    bytes_read: int = 0
    redactions: Counter = field(default_factory=Counter)
    formats: Counter = field(default_factory=Counter)
    elapsed_s: float = 0.0

    @property
    def readable(self) -> bool:
        """Did anything at all come out of the inputs (rows, or files already known)?"""
        return self.files_seen > len(self.bad_files)


ProgressFn = Callable[[int, str], None]  # (bytes just done, path)


def ingest(config: IngestConfig, total_cb: Callable[[int], None] | None = None,
           progress: ProgressFn | None = None) -> IngestSummary:
    """Ingest ``config.paths`` into ``config.store``; returns what this run did.

    Raises :class:`NothingToIngest` when no session file exists under the inputs, and
    :class:`~logmine.ingest.store.StoreError` when the store cannot be opened or written.
    """
    started = time.monotonic()
    inputs = list(config.paths) or default_inputs()
    if not inputs:
        raise NothingToIngest("no input given and no Codex home found (looked for $CODEX_HOME, ~/.codex)")
    files, bad_paths = discover(inputs)
    if not files and not bad_paths:
        raise NothingToIngest("no Codex session files under " + ", ".join(str(p) for p in inputs))
    summary = IngestSummary(files_seen=len(files) + len(bad_paths))
    redactor = Redactor()
    with Store(config.store) as store:
        known = store.files()
        if total_cb:
            total_cb(sum(_size(p) for p in files))
        batch = _Batch()
        results = (read_file(p, known.get(str(p)), store.new_gen, redactor, config.max_line_bytes) for p in files)
        listing = (bad_file(b.path, known.get(b.path), store.new_gen, b.reason) for b in bad_paths)
        for result in itertools.chain(results, listing):
            _account(summary, result)
            if result.change != "unchanged":
                batch.add(result)
            if progress:
                progress(max(result.record.size, 0), result.record.source_path)
            if batch.bytes >= config.batch_bytes:
                batch.commit(store)
        batch.commit(store)
    summary.redactions = redactor.counts
    summary.elapsed_s = time.monotonic() - started
    return summary


def _account(summary: IngestSummary, result: FileResult) -> None:
    summary.changes[result.change] += 1
    record = result.record
    if record.error:
        summary.bad_files.append((record.source_path, record.error))
    if record.pending_bytes:
        summary.pending.append((record.source_path, record.pending_bytes))
    if result.change == "unchanged":
        return
    summary.sessions += len(result.sessions)
    summary.events += len(result.events)
    summary.quarantined += len(result.quarantine)
    summary.quarantine_reasons.update(q["reason"].split(":")[0] for q in result.quarantine)
    summary.bytes_read += result.bytes_read
    if record.format:
        summary.formats[record.format] += 1


@dataclass
class _Batch:
    rows: dict[str, list[dict]] = field(default_factory=lambda: {name: [] for name in TABLES})
    records: list[FileRecord] = field(default_factory=list)
    bytes: int = 0

    def add(self, result: FileResult) -> None:
        self.rows["events"] += result.events
        self.rows["sessions"] += result.sessions
        self.rows["quarantine"] += result.quarantine
        self.records.append(result.record)
        self.bytes += result.bytes_read

    def commit(self, store: Store) -> None:
        if not self.records:
            return
        tables = {name: pa.Table.from_pylist(rows, schema=TABLES[name]) for name, rows in self.rows.items()}
        store.commit(tables, self.records)
        self.__init__()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
