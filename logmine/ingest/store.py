"""The embedded default store: Parquet parts plus a DuckDB catalog that exposes them as views.

Layout of ``DIR``::

    catalog.duckdb          tables ``files`` (one row per source file: its generation, how far it
                            was read, and the mapper state to resume it) and ``parts`` (live Parquet
                            files); views ``sessions``, ``events``, ``quarantine``, ``tool_calls``
    events/part-*.parquet   rows of all tables carry ``file_gen``: the generation of the source file
    sessions/…  quarantine/…   that produced them

Crash safety: Parquet parts are written under a temporary name and renamed, then registered together
with the new file states in one DuckDB transaction. A process killed at any moment leaves either the
old or the new catalog; unregistered parts are deleted when the store is next opened. A rewritten
source file gets a new generation, and the views show only rows of each file's current generation,
so its old rows disappear in the same transaction that adds the new ones.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from logmine.ingest.records import TABLES

CATALOG = "catalog.duckdb"

_FILES_DDL = """
CREATE TABLE IF NOT EXISTS files (
    source_path VARCHAR PRIMARY KEY, file_gen BIGINT, format VARCHAR, size BIGINT, mtime_ns BIGINT,
    consumed BIGINT, head_hash VARCHAR, tail_hash VARCHAR, state VARCHAR, pending_bytes BIGINT, error VARCHAR)
"""
_PARTS_DDL = "CREATE TABLE IF NOT EXISTS parts (table_name VARCHAR, path VARCHAR, gens BIGINT[])"
_META_DDL = "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value BIGINT)"


class StoreError(RuntimeError):
    """The store cannot be opened or written (fatal for a run)."""


@dataclass
class FileRecord:
    """A source file as the catalog knows it."""

    source_path: str
    file_gen: int
    format: str | None
    size: int
    mtime_ns: int
    consumed: int
    head_hash: str | None
    tail_hash: str | None
    state: str | None
    pending_bytes: int = 0
    error: str | None = None


class Store:
    """An open store; one writer at a time (guarded by a lock file)."""

    def __init__(self, root: Path, read_only: bool = False):
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True)
            for table in TABLES:
                (root / table).mkdir(exist_ok=True)
            self._lock = open(root / ".lock", "a+")
        except OSError as exc:
            raise StoreError(f"cannot create store at {root}: {exc.strerror}") from exc
        try:
            fcntl.flock(self._lock, (fcntl.LOCK_SH if read_only else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError as exc:
            raise StoreError(f"store {root} is in use by another logmine process") from exc
        try:
            self.con = duckdb.connect(str(root / CATALOG), read_only=read_only)
        except duckdb.Error as exc:
            raise StoreError(f"cannot open catalog {root / CATALOG}: {exc}") from exc
        if not read_only:
            self.con.execute(_FILES_DDL)
            self.con.execute(_PARTS_DDL)
            self.con.execute(_META_DDL)
            row = self.con.execute("SELECT value FROM meta WHERE key = 'next_gen'").fetchone()
            self._next_gen = row[0] if row else 1
            self._ensure_empty_parts()
            self._delete_orphans()
            self.refresh_views()

    def close(self) -> None:
        self.con.close()
        self._lock.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- state ----------------------------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        rows = self.con.execute("SELECT * FROM files").fetchall()
        return {r[0]: FileRecord(*r) for r in rows}

    def new_gen(self) -> int:
        """A new file generation. It is persisted by the next commit; numbers handed out before a
        crash are reused, which is safe because no committed row carries them."""
        gen = self._next_gen
        self._next_gen += 1
        return gen

    # -- writes ---------------------------------------------------------------------------------

    def commit(self, tables: dict[str, pa.Table], records: list[FileRecord]) -> None:
        """Write the tables as new parts and record the files' new states, atomically."""
        written: list[tuple[str, Path, list[int]]] = []
        try:
            for name, table in tables.items():
                if table.num_rows:
                    gens = sorted(set(table.column("file_gen").to_pylist()))
                    written.append((name, self._write_part(name, table), gens))
        except OSError as exc:
            for _, path, _ in written:
                path.unlink(missing_ok=True)
            raise StoreError(f"cannot write to store {self.root}: {exc.strerror}") from exc
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            for name, path, gens in written:
                con.execute("INSERT INTO parts VALUES (?, ?, ?)", [name, path.name, gens])
            if records:
                con.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [list(vars(r).values()) for r in records],
                )
            con.execute("INSERT OR REPLACE INTO meta VALUES ('next_gen', ?)", [self._next_gen])
            dead = self._dead_parts()
            for name, path in dead:
                con.execute("DELETE FROM parts WHERE table_name = ? AND path = ?", [name, path])
            self._create_views()
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        for name, path in dead:  # after the commit: a crash before this only leaves orphans
            (self.root / name / path).unlink(missing_ok=True)

    def _write_part(self, name: str, table: pa.Table) -> Path:
        final = self.root / name / f"part-{uuid.uuid4().hex}.parquet"
        tmp = final.with_suffix(".tmp")
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, final)
        return final

    def _dead_parts(self) -> list[tuple[str, str]]:
        """Parts none of whose rows belong to a live file generation."""
        return self.con.execute(
            """SELECT table_name, path FROM parts
               WHERE NOT list_has_any(gens, (SELECT coalesce(list(file_gen), []) FROM files))"""
        ).fetchall()

    def _ensure_empty_parts(self) -> None:
        """A zero-row part per table keeps each view's file list non-empty and typed."""
        for name, schema in TABLES.items():
            path = self.root / name / "_empty.parquet"
            if not path.exists():
                pq.write_table(schema.empty_table(), path)

    def _delete_orphans(self) -> None:
        known = {(t, p) for t, p in self.con.execute("SELECT table_name, path FROM parts").fetchall()}
        for name in TABLES:
            for path in (self.root / name).iterdir():
                if path.name != "_empty.parquet" and (name, path.name) not in known:
                    path.unlink(missing_ok=True)

    # -- views ----------------------------------------------------------------------------------

    def refresh_views(self) -> None:
        """(Re)create the views; paths are absolute, so this runs whenever the store is opened."""
        self.con.execute("BEGIN TRANSACTION")
        self._create_views()
        self.con.execute("COMMIT")

    def _create_views(self) -> None:
        con = self.con
        for name in TABLES:
            paths = [str(self.root / name / "_empty.parquet")]
            paths += [str(self.root / name / p) for (p,) in con.execute(
                "SELECT path FROM parts WHERE table_name = ? ORDER BY path", [name]).fetchall()]
            listing = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
            source = f"read_parquet([{listing}])"
            live = "file_gen IN (SELECT file_gen FROM files)"
            if name == "sessions":
                con.execute(f"CREATE OR REPLACE VIEW _sessions_raw AS SELECT * FROM {source} WHERE {live}")
            else:
                con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {source} WHERE {live}")
        con.execute(_SESSIONS_VIEW)
        con.execute(_TOOL_CALLS_VIEW)


# A session's model is named by its turn_context lines; history.jsonl prompts make sessions of
# their own (format 'history') so that prompts whose rollout is gone still have a session row.
_SESSIONS_VIEW = """
CREATE OR REPLACE VIEW sessions AS
WITH models AS (
    SELECT source_path, arg_min(model, seq) AS model FROM events
    WHERE kind = 'turn_context' AND model IS NOT NULL GROUP BY source_path),
hist AS (
    SELECT session_id, source_path, 'history' AS format, min(ts) AS started_at, min(file_gen) AS file_gen
    FROM events WHERE format = 'history' GROUP BY session_id, source_path)
SELECT s.* REPLACE (coalesce(s.model, m.model) AS model)
FROM _sessions_raw s LEFT JOIN models m USING (source_path)
UNION ALL BY NAME
SELECT * FROM hist
"""

# One row per tool call, paired with its output (by call_id within the file). A unified-exec
# command still running at its first output gets its exit code from the write_stdin poll that saw
# it exit; exec_command_end / item_completed events fill in exit codes the output text lacks.
_TOOL_CALLS_VIEW = """
CREATE OR REPLACE VIEW tool_calls AS
WITH calls AS (SELECT * FROM events WHERE kind = 'tool_call'),
outs AS (
    SELECT * FROM events WHERE kind = 'tool_output' AND record_type NOT LIKE 'event_msg/%'
    QUALIFY row_number() OVER (PARTITION BY source_path, call_id ORDER BY seq) = 1),
ends AS (
    SELECT source_path, call_id, arg_min(exit_code, seq) AS exit_code, arg_min(duration_s, seq) AS duration_s
    FROM events WHERE kind = 'tool_output' AND record_type LIKE 'event_msg/%' AND exit_code IS NOT NULL
    GROUP BY ALL),
polls AS (
    SELECT c.source_path, c.exec_session_id, arg_min(o.exit_code, o.seq) AS exit_code
    FROM calls c JOIN outs o ON o.source_path = c.source_path AND o.call_id = c.call_id
    WHERE c.tool_name = 'write_stdin' AND o.exit_code IS NOT NULL GROUP BY ALL)
SELECT c.session_id, c.source_path, c.seq, c.ts, c.turn_id, c.call_id, c.tool_name, c.command, c.workdir,
       c.arguments, c.status AS call_status, o.seq AS output_seq, o.text AS output,
       coalesce(o.exit_code, e.exit_code, p.exit_code) AS exit_code,
       coalesce(o.duration_s, e.duration_s) AS duration_s,
       o.exec_session_id AS exec_session_id,
       o.seq IS NOT NULL AS has_output,
       c.tool_name <> 'web_search' AND o.seq IS NULL AS interrupted
FROM calls c
LEFT JOIN outs o ON o.source_path = c.source_path AND o.call_id = c.call_id
LEFT JOIN ends e ON e.source_path = c.source_path AND e.call_id = c.call_id
LEFT JOIN polls p ON p.source_path = c.source_path AND p.exec_session_id = o.exec_session_id
"""
