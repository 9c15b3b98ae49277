"""The ingest stage: discover files, read what is new, commit rows to the store in batches."""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from logmine.errors import LogmineError
from logmine.executor import ExecutorConfig, ExecutorError, forkserver, make_executor, paths_unreadable
from logmine.ingest import seen
from logmine.ingest.discover import default_inputs, discover
from logmine.ingest.records import TABLES, FileRecord
from logmine.ingest.source import FileResult, bad_file, read_file, unchanged
from logmine.ingest.summary import IngestSummary
from logmine.pipeline import packaged_default
from logmine.redact import PLACEHOLDERS, Mask, Redactor
from logmine.store.catalog import CATALOG, DEFAULT_STORE
from logmine.store.parts import Part, without_gens, write_part
from logmine.store.rows import table_of

if TYPE_CHECKING:
    from logmine.store.core import Store

DEFAULT_JOBS = min(4, os.cpu_count() or 1)


class NothingToIngest(LogmineError, RuntimeError):
    """No input path exists or none holds a session file."""


def _fields(settings: dict) -> dict:
    """:class:`IngestConfig` fields from a pipeline's ``[ingest]`` settings."""
    return {"paths": tuple(Path(p) for p in settings["paths"]), "store": Path(settings["store"]),
            "max_line_bytes": settings["max_line_mb"] << 20, "batch_bytes": settings["batch_mb"] << 20}


_default = functools.partial(packaged_default, _fields, ("ingest",))


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """What ``logmine ingest`` reads and where it writes."""

    paths: tuple[Path, ...] = ()  # files or directories; empty means the Codex and Claude Code homes
    store: Path = DEFAULT_STORE
    max_line_bytes: int = _default("max_line_bytes")  # longer lines are quarantined without being loaded
    batch_bytes: int = _default("batch_bytes")  # source bytes per commit
    jobs: int = DEFAULT_JOBS  # worker processes reading files
    executor: ExecutorConfig = ExecutorConfig()  # local pools, or a Ray cluster (docs/distributed.md)
    redact_style: str | None = None  # pseudonym | placeholder; None: the store's (a new store: pseudonym)
    source: str = "all"  # codex | claude | all: whose session files are read (discover.of_source)

    @classmethod
    def from_settings(cls, settings: dict, **fields) -> IngestConfig:
        """From a pipeline's ``[ingest]`` settings; ``fields`` (the flags given, the run's store) win."""
        return cls(**{**_fields(settings), **fields})


ProgressFn = Callable[[int, str], None]  # (bytes just done, path)
PARALLEL_MIN_BYTES = 8 << 20  # below this, starting worker processes costs more than it saves


def ingest(config: IngestConfig, total_cb: Callable[[int], None] | None = None,
           progress: ProgressFn | None = None) -> IngestSummary:
    """Ingest ``config.paths`` into ``config.store``; returns what this run did.

    Raises :class:`NothingToIngest` when no session file exists under the inputs, and
    :class:`~logmine.store.StoreError` when the store cannot be opened or written.
    """
    started = time.monotonic()
    inputs = list(config.paths) or default_inputs(source=config.source)
    if not inputs:
        raise NothingToIngest("no input given and no Codex or Claude Code home found (looked for $CODEX_HOME, "
                              "~/.codex, $CLAUDE_CONFIG_DIR/projects, ~/.claude/projects)")
    files, bad_paths = discover(inputs, config.source)
    if not files and not bad_paths:
        what = {"codex": "Codex", "claude": "Claude Code"}.get(config.source, "Codex or Claude Code")
        raise NothingToIngest(f"no {what} session files under " + ", ".join(str(p) for p in inputs))
    summary = IngestSummary(files_seen=len(files) + len(bad_paths))
    stats = {str(p): _stat(p) for p in files}
    sizes = {path: st[0] for path, st in stats.items()}
    if (config.executor.kind == "local" and config.jobs > 1 and sum(sizes.values()) >= PARALLEL_MIN_BYTES
            and not (config.store / CATALOG).exists()):
        forkserver.start(forkserver.INGEST_PRELOAD)  # a new store: every file is to be read; it starts while the store opens
    seen.forget(config.store)
    from logmine.store.core import Store  # here: the workers import this module and never open a store

    with Store(config.store) as store:
        if config.redact_style is not None:
            store.set_redact_style(config.redact_style)
        known = {r[0]: FileRecord(*r) for r in store.con.execute("SELECT * FROM files").fetchall()}
        originals = _Originals(known)
        if total_cb:
            total_cb(sum(sizes.values()))
        settled, tasks = [], []
        for p in files:  # unchanged files are settled here, without starting a worker
            prev = known.get(str(p))
            if unchanged(prev, *stats[str(p)]):
                settled.append(_Outcome(prev, "unchanged", {}, 0, Counter(), Counter(), save=False))
            else:
                tasks.append(_Task(p, prev, store.new_gen(), config.max_line_bytes, sizes[str(p)], store.mask))
        listed = (file_outcome(bad_file(b.path, known.get(b.path), store.new_gen, b.reason), Counter())
                  for b in bad_paths)
        changed_bytes = sum(sizes[str(t.path)] for t in tasks)
        batch = _Batch()
        as_read: dict[str, tuple[int, int, int]] = {}  # what the catalog holds of each file, for seen.record
        reads = itertools.chain((_Read([o]) for o in settled), _read_all(tasks, config, changed_bytes, store.root),
                                (_Read([o]) for o in listed))
        for read in reads:
            read = originals.check_all(read, store.root)
            for outcome in read.outcomes:
                _account(summary, outcome)
                as_read[outcome.record.source_path] = (outcome.record.size, outcome.record.mtime_ns,
                                                       outcome.record.pending_bytes)
                if outcome.save:
                    batch.add(outcome)
                if progress:
                    progress(sizes.get(outcome.record.source_path, 0), outcome.record.source_path)
            batch.parts += read.parts  # committed with the files whose rows they hold, never before
            if batch.bytes >= config.batch_bytes:
                batch.commit(store, views=False)  # the last commit makes the views
        batch.commit(store)
        if not summary.bad_files:
            store.after_close(functools.partial(seen.record, store.root, as_read))
    summary.elapsed_s = time.monotonic() - started
    return summary


@dataclass(frozen=True, slots=True)
class _Task:
    path: Path
    prev: FileRecord | None
    gen: int  # used only if the file's rows are (re)made; unused numbers are harmless
    max_line: int
    size: int = 0  # bytes, as listed
    mask: Mask = PLACEHOLDERS  # the store's: how secrets are replaced


@dataclass
class _Outcome:
    """A file's result in transferable form: Arrow tables instead of row dicts."""

    record: FileRecord
    change: str
    tables: dict[str, pa.Table]
    bytes_read: int
    redactions: Counter
    quarantine_reasons: Counter
    save: bool = True  # the record differs from the catalog's (a touched file's new mtime, say)
    written: dict[str, int] | None = None  # rows per table a worker wrote as parts instead (tables empty)

    def rows(self) -> dict[str, int]:
        """Rows of each table this file made."""
        if self.written is not None:
            return self.written
        return {name: table.num_rows for name, table in self.tables.items()}


@dataclass
class _Read:
    """Files read together (a worker's group, or one file) and the parts their rows were written to."""

    outcomes: list[_Outcome]
    parts: list[Part] = field(default_factory=list)


def _read_one(task: _Task) -> _Outcome:
    """Read one file (in a worker process or in-process); a fresh Redactor counts this file only."""
    redactor = Redactor(mask=task.mask)
    result = read_file(task.path, task.prev, lambda: task.gen, redactor, task.max_line)
    outcome = file_outcome(result, redactor.counts)
    outcome.save = result.change != "unchanged" or result.record != task.prev
    return outcome


def file_outcome(result: FileResult, redactions: Counter) -> _Outcome:
    """What one file read made, as the driver registers it: its tables, bytes, redactions and
    quarantine reasons (the benches in ``bench/`` time this step too)."""
    rows = {"sessions": result.sessions, "quarantine": result.quarantine}
    tables = {name: table_of(r, TABLES[name]) for name, r in rows.items() if r}
    if result.events:
        tables["events"] = result.events.table()
    reasons = Counter(q["reason"].split(":")[0] for q in result.quarantine)
    return _Outcome(result.record, result.change, tables, result.bytes_read, Counter(redactions), reasons)


def _read_all(tasks: list[_Task], config: IngestConfig, total_bytes: int, root: Path) -> Iterator[_Read]:
    """What the files made, in task order. Files are read by ``jobs`` local worker processes when it
    pays off, each writing its group's rows as parts of the store ``root`` (the driver registers them);
    by the Ray cluster's workers, each sending a file's Arrow tables back; else in this process."""
    if config.executor.kind != "local" and tasks:
        yield from (_Read([outcome]) for outcome in _read_remote(tasks, config.executor))
        return
    jobs = config.jobs
    if jobs <= 1 or len(tasks) < 2 or total_bytes < PARALLEL_MIN_BYTES:
        yield from (_Read([_read_one(task)]) for task in tasks)
        return
    size = max(GROUP_MIN_BYTES, total_bytes // (jobs * GROUPS_PER_JOB))
    groups = _groups(tasks, size, tail=jobs * size)
    # the local process pool: forked from the forkserver that preloaded ingest's worker module (the
    # redaction rules, compiled once); each worker dies with it, and it with this process
    pool = make_executor(ExecutorConfig(jobs=jobs), processes=True, preload=forkserver.INGEST_PRELOAD)
    try:
        for done in pool.map(functools.partial(_read_group, root=root), groups, ordered=True):
            if done.error is not None:
                raise done.error
            yield done.result
    finally:
        pool.close()


GROUP_MIN_BYTES = 2 << 20  # files are handed to workers in groups of about this many bytes or more
GROUPS_PER_JOB = 8  # ... and at least this many groups per worker, so that the last ones end together


def _groups(tasks: list[_Task], size: int, tail: int = 0) -> list[list[_Task]]:
    """Consecutive tasks in groups of about ``size`` bytes (a larger file is a group of its own); the
    last ``tail`` bytes in groups a quarter that size (not under :data:`GROUP_MIN_BYTES`), so that the
    workers run out of work together: a whole group left to one worker idled the other for 0.3 s."""
    groups: list[list[_Task]] = [[]]
    held, left = 0, sum(task.size for task in tasks)
    small = min(size, max(GROUP_MIN_BYTES, size // 4))
    for task in tasks:
        if held >= (size if left > tail else small):
            groups.append([])
            held = 0
        groups[-1].append(task)
        held += task.size
        left -= task.size
    return groups


def _read_group(group: list[_Task], root: Path) -> _Read:
    """:func:`_read_one` for each file of a group, in a worker process, which writes the group's rows
    as one part per table of the store ``root``: the driver only registers them (handing the tables
    over and encoding them in the driver cost a fifth of its time, and ended every run on one core)."""
    outcomes = [_read_one(task) for task in group]
    parts: dict[str, list[pa.Table]] = {}
    for outcome in outcomes:
        outcome.written = outcome.rows()
        for name, table in outcome.tables.items():
            parts.setdefault(name, []).append(table)
        outcome.tables = {}
    return _Read(outcomes, [write_part(root, name, pa.concat_tables(tables)) for name, tables in parts.items()])


def _read_remote(tasks: list[_Task], executor_config: ExecutorConfig) -> Iterator[_Outcome]:
    executor = make_executor(executor_config)
    try:
        sample = tuple(sorted({str(t.path) for t in tasks})[:32])
        executor.check_nodes(functools.partial(paths_unreadable, sample))
        for done in executor.map(_read_one, tasks, ordered=True):
            if done.error is not None:
                raise ExecutorError(f"reading {tasks[done.index].path} failed on {done.placement}: {done.error}")
            yield done.result
    finally:
        executor.close()


def _account(summary: IngestSummary, outcome: _Outcome) -> None:
    summary.changes[outcome.change] += 1
    record = outcome.record
    if record.error:
        summary.bad_files.append((record.source_path, record.error))
    if record.pending_bytes:
        summary.pending.append((record.source_path, record.pending_bytes))
    if outcome.change == "unchanged":
        return
    counts = outcome.rows()
    summary.sessions += counts.get("sessions", 0)
    summary.events += counts.get("events", 0)
    summary.quarantined += counts.get("quarantine", 0)
    summary.quarantine_reasons.update(outcome.quarantine_reasons)
    summary.redactions.update(outcome.redactions)
    summary.bytes_read += outcome.bytes_read
    if record.format:
        summary.formats[record.format] += 1


class _Originals:
    """Session files by content hash, so that a file with the same content as another is stored once.

    The second path gets a ``files`` row of format ``duplicate`` naming the first in ``duplicate_of``,
    and no rows of its own; it is read again (and compared again) when it changes.
    """

    def __init__(self, known: dict[str, FileRecord]):
        self.by_hash = {r.content_hash: r.source_path for r in known.values()
                        if r.content_hash and r.error is None and r.format in SESSION_FORMATS}

    def check_all(self, read: _Read, root: Path) -> _Read:
        """:meth:`check` each file; rows a worker already wrote for a file found to be a duplicate are
        taken out of its parts (rare: a copy read in the same run as its original)."""
        checked = [self.check(outcome) for outcome in read.outcomes]
        gone = {o.record.file_gen for o, c in zip(read.outcomes, checked) if c is not o and o.written}
        parts = [kept for part in read.parts for kept in without_gens(root, part, gone)] if gone else read.parts
        return _Read(checked, parts)

    def check(self, outcome: _Outcome) -> _Outcome:
        record = outcome.record
        if not outcome.save or record.error or record.format not in SESSION_FORMATS or not record.content_hash:
            return outcome
        original = self.by_hash.setdefault(record.content_hash, record.source_path)
        if original == record.source_path:
            return outcome
        dup = FileRecord(record.source_path, record.file_gen, "duplicate", record.size, record.mtime_ns,
                         record.consumed, record.content_hash, original, None, record.pending_bytes, None)
        return _Outcome(dup, outcome.change, {}, outcome.bytes_read, Counter(), Counter())


SESSION_FORMATS = frozenset({"g0", "g1", "g2", "claude"})


@dataclass
class _Batch:
    tables: dict[str, list[pa.Table]] = field(default_factory=lambda: {name: [] for name in TABLES})
    records: list[FileRecord] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)  # written by workers
    bytes: int = 0
    views_stale: bool = False

    def add(self, outcome: _Outcome) -> None:
        for name, table in outcome.tables.items():
            self.tables[name].append(table)
        self.records.append(outcome.record)
        self.bytes += outcome.bytes_read

    def commit(self, store: Store, views: bool = True) -> None:
        """Commit what the batch holds; ``views=False`` leaves the views to a later commit (the last
        one makes them, even when it has nothing of its own to commit)."""
        stale = self.views_stale and views  # an earlier commit left the views as they were
        if not self.records and not self.parts and not stale:
            return
        tables = {name: pa.concat_tables(parts) for name, parts in self.tables.items() if parts}
        store.commit(tables, {"files": [r.row() for r in self.records]}, self.parts, views=views)
        self.__init__()
        self.views_stale = not views


def _stat(path: Path) -> tuple[int, int]:
    """(size, mtime_ns), or (0, 0) for a path that cannot be stat'ed (read_file reports it)."""
    try:
        st = path.stat()
    except OSError:
        return 0, 0
    return st.st_size, st.st_mtime_ns
