"""The embedded default store: Parquet parts plus a DuckDB catalog that exposes them as views.

Layout of ``DIR``::

    catalog.duckdb          state tables of the stages (``files``: one row per source file, how far it
                            was read; ``segmented``: which file state each session's tasks come from),
                            ``parts`` (the live Parquet files) and one view per table (see
                            :mod:`logmine.store.catalog`)
    <table>/part-*.parquet  each row carries a generation (``file_gen``, ``seg_gen``): the version of
                            the unit (source file, segmented session) that produced it

Relocation: the catalog records each part by its file name only, and each view finds the parts next to
the catalog file DuckDB opened (:func:`~logmine.store.views.store_dir_sql`), so a plain ``duckdb.connect`` works from any
directory, after ``mv``, and a ``cp -r`` copy reads only its own parts. The views are rebuilt whenever
the store is opened (as temporary views when it is opened read-only). Catalogs written before views
found their own place named absolute paths: a read-only open that finds them naming another directory
rewrites them when it can write the store (:meth:`Store._rewrite_moved_views`).

Missing parts: each registered part is checked when the store opens (:mod:`.parts`: a stat and the
Parquet magic). A missing or unreadable part is left out of the views and reported in
:attr:`Store.problems` (and logged as a warning); a read-write open also unregisters it and marks the
units whose rows it held for redoing (:data:`~logmine.store.catalog.STALE_SQL`), so the next ingest
re-reads those source files.

Redaction: :meth:`Store.commit` is the gate of every table: each passes
:func:`~logmine.redact.redact_table` (every string column, inside lists and structs too, so a new
column cannot bypass it), except a table whose spec names the function that redacted its rows at
their source (:attr:`~logmine.store.catalog.TableSpec.redacted_at_source`: ingest's, which redacts
each line before parsing it). The free-text columns of the state rows
(:data:`~logmine.store.catalog.STATE_TEXT`) are redacted too. :attr:`Store.redactions` counts by kind.

Crash safety: Parquet parts are written under a temporary name and renamed, then registered together
with the new stage state in one DuckDB transaction. A process killed at any moment leaves either the
old or the new catalog; unregistered parts are deleted when the store is next opened. A unit that is
redone gets a new generation, and each view shows only rows of live generations, so old rows
disappear in the same transaction that adds the new ones.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import logging
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from logmine.errors import LogmineError
from logmine.redact import Mask, Redactor, redact_table, store_mask
from logmine.store.catalog import (
    CATALOG,
    STALE_SQL,
    STATE_DDL,
    STATE_TEXT,
    TABLES,
    VIEWS,
    migrate_state,
)
from logmine.store.parts import Part, PartProblem, deep_problem, quick_problem, write_part
from logmine.store.rows import table_of_columns
from logmine.store.views import listing_sql, quote_sql

_PARTS_DDL = "CREATE TABLE IF NOT EXISTS parts (table_name VARCHAR, path VARCHAR, gens BIGINT[])"
_META_DDL = "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value BIGINT)"
_UPSERT_ROWS = 500  # state rows per INSERT statement
_ARROW_TYPES = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "BOOLEAN": pa.bool_(), "DOUBLE": pa.float64()}
log = logging.getLogger("logmine.store")


class StoreError(LogmineError, RuntimeError):
    """The store cannot be opened or written (fatal for a run)."""


class Store:
    """An open store; one writer at a time (guarded by a lock file)."""

    def __init__(self, root: Path, read_only: bool = False):
        self.root = Path(root).absolute()
        self.read_only = read_only
        #: one line per registered part the views could not use, found when the store was opened
        self.problems: list[str] = []
        self.unusable_parts: list[PartProblem] = []  # the same, as records
        self._unusable: set[tuple[str, str]] = set()
        self._lazy_views: set[str] = set()  # tables with a part whose footer did not read at open
        self._redactor: Redactor | None = None  # made at the first commit (compiling the rules takes time)
        self._after_close: list[Callable[[], None]] = []
        self._lock = self._take_lock(read_only)
        #: how secrets are replaced: pseudonyms under the store's key (``redaction.json``, made at the
        #: first read-write open), or placeholders (docs/redaction.md)
        self.mask: Mask = store_mask(self.root, create=not read_only)
        self._connect()
        if read_only and self._moved():
            self._rewrite_moved_views()
        if read_only:
            self._next_gen = 0
            self._usable_parts()
            self._create_views(temp=True)
            return
        for ddl in STATE_DDL:
            self.con.execute(ddl)
        self.con.execute(_PARTS_DDL)
        self.con.execute(_META_DDL)
        migrate_state(self.con)
        row = self.con.execute("SELECT value FROM meta WHERE key = 'next_gen'").fetchone()
        self._next_gen = row[0] if row else 1
        self._ensure_empty_parts()
        self._migrate_part_paths()
        self._delete_orphans()
        self.refresh_views()

    def _connect(self) -> None:
        try:
            self.con = duckdb.connect(str(self.root / CATALOG), read_only=self.read_only)
        except duckdb.Error as exc:
            self._lock.close()
            raise StoreError(f"cannot open catalog {self.root / CATALOG}: {exc}") from exc

    def _moved(self) -> bool:
        """Do the catalog's persisted views name another directory's parts (an older catalog, written
        before views found their own place, of a store that was moved)?"""
        views = dict(self.con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT temporary").fetchall())
        return any(spec.view in views and "temp_directory" not in views[spec.view]
                   and quote_sql(str(self.root / name / "_empty.parquet")) not in views[spec.view]
                   for name, spec in TABLES.items())

    def _rewrite_moved_views(self) -> None:
        """A read-only open of a moved store rewrites the catalog's views for the new place (nothing
        else: a missing part stays registered, left out of the views) when nobody else holds the store
        and it can be written, so that a plain ``duckdb.connect`` works again; then it reopens
        read-only. Otherwise the temporary views of this open are enough."""
        self.con.close()
        self._lock.close()
        try:
            self._lock = self._take_lock(False)
            try:
                self.con = duckdb.connect(str(self.root / CATALOG))
                try:
                    if all(_has_schema(self.root / n / "_empty.parquet", spec.schema) for n, spec in TABLES.items()):
                        self._usable_parts()
                        self._create_views()
                        log.info("store %s was moved: its views now name this directory", self.root)
                finally:
                    self.con.close()
            finally:
                self._lock.close()
        except (StoreError, duckdb.Error, OSError) as exc:
            log.info("store %s was moved; its views could not be rewritten: %s", self.root, exc)
        self.problems, self.unusable_parts, self._unusable = [], [], set()
        self._lock = self._take_lock(True)
        self._connect()

    def _take_lock(self, read_only: bool):
        root = self.root
        try:
            if read_only:
                if not (root / CATALOG).exists():
                    raise StoreError(f"no logmine store at {root}", hint="run `logmine ingest` first")
            else:
                root.mkdir(parents=True, exist_ok=True)
                for table in TABLES:
                    (root / table).mkdir(exist_ok=True)
            lock = open(root / ".lock", "a+")
        except OSError as exc:
            raise StoreError(f"cannot create store at {root}: {exc.strerror}") from exc
        try:
            fcntl.flock(lock, (fcntl.LOCK_SH if read_only else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError as exc:
            lock.close()
            raise StoreError(f"store {root} is in use by another logmine process") from exc
        return lock

    def close(self) -> None:
        try:
            self.con.close()
            for then in self._after_close:
                then()
        finally:
            self._lock.close()

    def detach(self) -> duckdb.DuckDBPyConnection:
        """Hand over the catalog's connection (its temporary views included) and let go of the store's
        lock; DuckDB's own lock on the catalog file still keeps writers out while it is open."""
        self._lock.close()
        return self.con

    def after_close(self, then: Callable[[], None]) -> None:
        """Call ``then`` when the catalog is closed, before the lock is released (nothing else can
        have written the catalog between the two)."""
        self._after_close.append(then)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- state ----------------------------------------------------------------------------------

    def new_gen(self) -> int:
        """A new generation (of a file, a segmented session…). It is persisted by the next commit; numbers handed out before a
        crash are reused, which is safe because no committed row carries them."""
        gen = self._next_gen
        self._next_gen += 1
        return gen

    # -- writes ---------------------------------------------------------------------------------

    @property
    def redactions(self) -> Counter:
        """What the redaction gate replaced in this store's commits so far, by kind."""
        return self._redactor.counts if self._redactor else Counter()

    def commit(self, tables: dict[str, pa.Table], state: dict[str, list[tuple]], parts: Sequence[Part] = (),
               views: bool = True) -> None:
        """Write the tables as new parts and upsert the stage's state rows, atomically.

        ``views=False`` leaves the views as they were, for a commit that another follows before
        anything reads them (ingest's batches but the last): making the views reads every part's
        footer. The state is committed either way, and every open of the store rebuilds the views.

        ``state`` maps a state table (``files``, ``segmented``) to whole rows for it. Tables and the
        free-text columns of state rows pass the redaction gate first (see the module docstring).
        ``parts`` were written already (:func:`~logmine.store.parts.write_part`, by ingest's workers)
        and are registered here; they are taken only for a table redacted at its source.
        """
        for part in parts:
            if not TABLES[part.table].redacted_at_source:
                raise StoreError(f"a part of table {part.table} must pass the redaction gate: commit its rows")
        tables, state = self._redacted(tables, state)
        written: list[Part] = []
        try:
            for name, table in tables.items():
                if table.num_rows:
                    written.append(write_part(self.root, name, table))
        except OSError as exc:
            for part in written:
                (self.root / part.table / part.name).unlink(missing_ok=True)
            raise StoreError(f"cannot write to store {self.root}: {exc.strerror}") from exc
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            for part in (*parts, *written):
                con.execute("INSERT INTO parts VALUES (?, ?, ?)", [part.table, part.name, list(part.gens)])
            for table, rows in state.items():
                if rows:
                    self._upsert(table, rows)
            con.execute("INSERT OR REPLACE INTO meta VALUES ('next_gen', ?)", [self._next_gen])
            dead = self._dead_parts()
            for name, path in dead:
                con.execute("DELETE FROM parts WHERE table_name = ? AND path = ?", [name, path])
            if views:
                self._create_views(check_footers=False)  # the parts added now are this store's own
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        for name, path in dead:  # after the commit: a crash before this only leaves orphans
            (self.root / name / path).unlink(missing_ok=True)

    def _redacted(self, tables: dict[str, pa.Table], state: dict[str, list[tuple]]) -> tuple[dict, dict]:
        """The redaction gate: every table not redacted at its source, and the state rows' free text."""
        tables = {name: table if TABLES[name].redacted_at_source or not table.num_rows
                  else redact_table(table, self._gate())
                  for name, table in tables.items()}
        gated = dict(state)
        for name, rows in state.items():
            text_columns = STATE_TEXT.get(name, ())
            at = [i for i, column in enumerate(self._state_columns(name)) if column in text_columns] if rows else []
            at = [i for i in at if any(row[i] for row in rows)]  # a column of nulls needs no redactor
            if at:
                lists = [list(row) for row in rows]
                for i in at:
                    for cells, text in zip(lists, self._gate().redact_many([cells[i] for cells in lists])):
                        cells[i] = text
                gated[name] = [tuple(cells) for cells in lists]
        return tables, gated

    def _gate(self) -> Redactor:
        """The redactor of the gate, made on first use (making one loads every rule)."""
        if self._redactor is None:
            self._redactor = Redactor(mask=self.mask)
        return self._redactor

    def redactor(self) -> Redactor:
        """A new redactor with this store's mask: what a stage uses for text it writes outside the store."""
        return Redactor(mask=self.mask)

    def set_redact_style(self, style: str) -> None:
        """Record ``style`` (``pseudonym`` or ``placeholder``) as this store's way of replacing secrets."""
        self.mask = store_mask(self.root, style=style, create=True)
        self._redactor = None

    def _upsert(self, table: str, rows: list[tuple]) -> None:
        """``INSERT OR REPLACE`` of whole rows, a later row winning over an earlier one with the same
        key: from an Arrow table in one statement, else in statements of many rows each (DuckDB's
        ``executemany`` takes about 2 ms a row)."""
        key = [i for i, (pk,) in enumerate(self.con.execute(
            "SELECT pk FROM pragma_table_info(?) ORDER BY cid", [table]).fetchall()) if pk]
        marks = "(" + ", ".join("?" * len(rows[0])) + ")"
        if not key:  # no key to replace on: one row a statement, as rows come
            self.con.executemany(f"INSERT OR REPLACE INTO {table} VALUES {marks}", [list(r) for r in rows])
            return
        last = list({tuple(row[i] for i in key): row for row in rows}.values())
        schema = self._state_schema(table)
        if schema is not None:  # one statement over an Arrow table: far faster than binding parameters
            arrow = table_of_columns([[row[i] for row in last] for i in range(len(schema))], schema)
            self.con.register("_logmine_upsert", arrow)
            try:
                self.con.execute(f"INSERT OR REPLACE INTO {table} SELECT * FROM _logmine_upsert")
            finally:
                self.con.unregister("_logmine_upsert")
            return
        for start in range(0, len(last), _UPSERT_ROWS):
            chunk = last[start:start + _UPSERT_ROWS]
            self.con.execute(f"INSERT OR REPLACE INTO {table} VALUES " + ", ".join([marks] * len(chunk)),
                             [value for row in chunk for value in row])

    def _state_schema(self, name: str) -> pa.Schema | None:
        """The state table's columns as an Arrow schema; None if one has a type not mapped here."""
        columns = self.con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ? "
            "ORDER BY column_index", [name]).fetchall()
        if not all(kind in _ARROW_TYPES for _, kind in columns):
            return None
        return pa.schema([(column, _ARROW_TYPES[kind]) for column, kind in columns])

    def _state_columns(self, name: str) -> list[str]:
        return [c for (c,) in self.con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ? "
            "ORDER BY column_index", [name]).fetchall()]

    def _dead_parts(self) -> list[tuple[str, str]]:
        """Parts none of whose rows belong to a live generation."""
        dead = []
        for name, spec in TABLES.items():
            dead += self.con.execute(
                f"""SELECT table_name, path FROM parts WHERE table_name = ?
                    AND NOT list_has_any(gens, (SELECT coalesce(list(g), []) FROM ({spec.live_gens}) t(g)))""",
                [name]).fetchall()
        return dead

    def _ensure_empty_parts(self) -> None:
        """A zero-row part per table keeps each view's file list non-empty and typed. A store made by
        an older logmine gets the current schema here (new tables, new columns: NULL in old parts)."""
        for name, spec in TABLES.items():
            path = self.root / name / "_empty.parquet"
            path.parent.mkdir(exist_ok=True)
            if not _has_schema(path, spec.schema):
                pq.write_table(_empty_table(spec.schema), path)

    def _empty_part(self, name: str) -> str:
        """The typed zero-row part of table ``name``; for a read-only open of an older store whose own
        is missing or outdated, one written outside the store."""
        path = self.root / name / "_empty.parquet"
        if not self.read_only or _has_schema(path, TABLES[name].schema):
            return str(path)
        outside = _outside_empties() / f"{name}-{abs(hash(TABLES[name].schema.to_string()))}.parquet"
        if not outside.exists():
            pq.write_table(_empty_table(TABLES[name].schema), outside)
        return str(outside)

    def _delete_orphans(self) -> None:
        known = {(t, p) for t, p in self.con.execute("SELECT table_name, path FROM parts").fetchall()}
        for name in TABLES:
            for path in (self.root / name).iterdir():
                if path.name != "_empty.parquet" and (name, path.name) not in known:
                    path.unlink(missing_ok=True)

    # -- views ----------------------------------------------------------------------------------

    def refresh_views(self) -> None:
        """Check the parts, drop the unusable ones (marking their units stale), and rebuild the views."""
        self.drop_parts(self._usable_parts())

    def drop_parts(self, problems: list[PartProblem]) -> None:
        """Unregister unusable parts, mark the units whose rows they held for redoing, rebuild the views."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            for problem in problems:
                self._drop_part(problem)
            self._create_views()
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def check_parts(self) -> list[PartProblem]:
        """Every registered part read whole (slow; what ``logmine doctor`` runs)."""
        rows = self.con.execute("SELECT table_name, path FROM parts ORDER BY table_name, path").fetchall()
        return [p for t, name in rows if (p := deep_problem(self.root, t, name))]

    def _usable_parts(self) -> list[PartProblem]:
        """The registered parts that fail the cheap check, each reported once in :attr:`problems`."""
        rows = self.con.execute("SELECT table_name, path FROM parts ORDER BY table_name, path").fetchall()
        problems = [p for t, name in rows if (p := quick_problem(self.root, t, name.rsplit("/", 1)[-1]))]
        self._unusable = {(p.table, p.name) for p in problems}
        self.unusable_parts += problems
        for problem in problems:
            self.problems.append(problem.line())
            log.warning("store %s: %s; left out of the views%s", self.root, problem.line(),
                        "" if self.read_only else ", its units will be redone (re-run ingest)")
        return problems

    def _drop_part(self, problem: PartProblem) -> None:
        con = self.con
        row = con.execute("SELECT gens FROM parts WHERE table_name = ? AND path = ?",
                          [problem.table, problem.name]).fetchone()
        if row is None:  # reported twice (the check and the open): already unregistered
            return
        (gens,) = row
        con.execute(STALE_SQL[TABLES[problem.table].gen_column], [gens])
        con.execute("DELETE FROM parts WHERE table_name = ? AND path = ?", [problem.table, problem.name])

    def _migrate_part_paths(self) -> None:
        """Catalogs that recorded a part by a longer path keep only its file name."""
        self.con.execute("UPDATE parts SET path = regexp_replace(path, '^.*/', '') WHERE path LIKE '%/%'")

    def _footers_readable(self, listing: str) -> bool:
        """Can every listed part's schema be read? Asked on a cursor of its own, so that a failure
        cannot abort the transaction a commit holds open."""
        cursor = self.con.cursor()
        try:
            cursor.execute(f"DESCRIBE SELECT * FROM read_parquet({listing}, union_by_name = true)")
            return True
        except duckdb.Error:
            return False
        finally:
            cursor.close()

    def _create_views(self, temp: bool = False, check_footers: bool = True) -> None:
        con = self.con
        unusable = self._unusable
        kind = "TEMP VIEW" if temp else "VIEW"
        for name, spec in TABLES.items():
            names = [p.rsplit("/", 1)[-1] for (p,) in con.execute(
                "SELECT path FROM parts WHERE table_name = ? ORDER BY path", [name]).fetchall()]
            empty = self._empty_part(name)
            inside = [f"{name}/{p}" for p in names if (name, p) not in unusable]
            if Path(empty).parent == self.root / name:
                inside.insert(0, f"{name}/{Path(empty).name}")
                outside = []
            else:
                outside = [empty]
            listing = listing_sql(outside, inside, self.root)
            # union_by_name: parts written before a column existed read it as NULL. It reads every
            # footer when the view is made; a table with a broken footer (found by check_parts) gets a
            # lazy view instead. Footers are checked when the store is opened, not at every commit.
            if check_footers and self._footers_readable(listing):
                self._lazy_views.discard(name)
            elif check_footers:
                self._lazy_views.add(name)
            union = "" if name in self._lazy_views else ", union_by_name = true"
            con.execute(f"CREATE OR REPLACE {kind} {spec.view} AS SELECT * FROM read_parquet({listing}{union}) "
                        f"WHERE {spec.gen_column} IN ({spec.live_gens})")
        for view in VIEWS:
            con.execute(view.replace("CREATE OR REPLACE VIEW", f"CREATE OR REPLACE {kind}"))


def _empty_table(schema: pa.Schema) -> pa.Table:
    """A zero-row table; unlike ``schema.empty_table()`` it does not import pandas (half a second)."""
    return pa.Table.from_batches([], schema=schema)


def _has_schema(path: Path, schema: pa.Schema) -> bool:
    try:
        return pq.read_schema(path).remove_metadata().equals(schema.remove_metadata())
    except (OSError, pa.ArrowException):
        return False


@functools.cache
def _outside_empties() -> Path:
    """A per-process directory for the typed empty parts of read-only opens of older stores."""
    path = Path(tempfile.mkdtemp(prefix="logmine-empty-parts-"))
    atexit.register(shutil.rmtree, path, True)
    return path


def fetch_dicts(cursor) -> list[dict]:
    """The rows of an executed DuckDB query, as dicts keyed by column name."""
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
