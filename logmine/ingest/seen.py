"""``logmine ingest`` on unchanged input, answered without opening the store.

A run that finds every file as the catalog knows it reads nothing, yet it used to spend most of a
second importing pyarrow, DuckDB and the CLI and opening the catalog. So each ingest that ends with
every file read cleanly leaves :data:`SEEN` in the store: each input file's size, mtime and
incomplete-last-line bytes as the catalog's ``files`` table now holds them, and the catalog file's
identity (device, inode, size, mtime) taken after the catalog is closed, before the store's lock is
released (:func:`record`). :func:`quick_summary` lists the inputs again (:mod:`.discover`, standard
library only) and stats each file: when the catalog is still the one recorded and every listed file
is recorded with its current size and mtime, the full run would settle every file as unchanged
(:func:`logmine.ingest.source.unchanged`), so the summary it would print is known.

Anything else makes the full run go ahead: a catalog written since (any command that opens the store
to write, which also refreshes its views), a part of the store added, missing or changed (its size
or mtime), a file added, touched, missing or unreadable, a directory
that cannot be listed, a store another process holds, a record from another logmine. A full run
deletes the record when it starts and writes it again only when it ends cleanly.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from logmine import __version__
from logmine.ingest.discover import discover
from logmine.ingest.summary import IngestSummary

SEEN = "ingest-seen.json"
CATALOG = "catalog.duckdb"  # logmine.store.CATALOG (a test pins them equal; the store imports DuckDB)
LOCK = ".lock"  # the store's lock file (logmine.store.core.Store._take_lock)
FORMAT = 1


def forget(store: Path) -> None:
    """Remove the record (a full run is about to change the catalog, which alone outdates it)."""
    try:
        (Path(store) / SEEN).unlink()
    except OSError:  # none, or no store there: opening it says why
        pass


def record(store: Path, files: dict[str, tuple[int, int, int]]) -> None:
    """Write the record: ``files`` maps each path to (size, mtime_ns, pending_bytes) as the catalog
    holds it; the catalog must be closed and the store's lock still held. A record that cannot be
    written only costs the next run its shortcut."""
    store = Path(store)
    catalog = _identity(store)
    if catalog is None:
        return
    body = {"format": FORMAT, "logmine": __version__, "catalog": catalog, "parts": _parts(store),
            "files": {path: list(entry) for path, entry in files.items()}}
    part = store / f".{SEEN}.{os.getpid()}.tmp"
    try:
        part.write_bytes(json.dumps(body, separators=(",", ":")).encode())
        os.replace(part, store / SEEN)
    except OSError:
        part.unlink(missing_ok=True)


def quick_summary(store: Path, inputs: Sequence[Path]) -> IngestSummary | None:
    """The summary of an ingest of ``inputs`` into ``store`` when that ingest would read nothing;
    None when it may have something to do (then run it)."""
    store = Path(store)
    try:
        with open(store / LOCK, "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)  # not while a writer holds the store
            body = json.loads((store / SEEN).read_bytes())
            if (body.get("format"), body.get("logmine")) != (FORMAT, __version__) \
                    or body.get("catalog") != _identity(store) or body.get("parts") != _parts(store):
                return None
            known: dict[str, list[int]] = body["files"]
            files, bad = discover(list(inputs))
            if bad or not files:
                return None
            summary = IngestSummary(files_seen=len(files), changes=Counter(unchanged=len(files)))
            for path in map(str, files):
                entry = known.get(path)
                st = os.stat(path)
                if entry is None or [st.st_size, st.st_mtime_ns] != entry[:2]:
                    return None
                if entry[2]:
                    summary.pending.append((path, entry[2]))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return summary


def _parts(store: Path) -> dict[str, list[int]]:
    """Every Parquet file of the store's table directories with its size and mtime: a part deleted,
    damaged or replaced since the record was written sends the run down the full path, which heals
    it (the store drops the part and marks its source files for reading again)."""
    found: dict[str, list[int]] = {}
    with os.scandir(store) as tables:
        for table in tables:
            if table.is_dir(follow_symlinks=False):
                with os.scandir(table.path) as parts:
                    for part in parts:
                        if part.name.endswith(".parquet"):
                            st = part.stat()
                            found[f"{table.name}/{part.name}"] = [st.st_size, st.st_mtime_ns]
    return found


def _identity(store: Path) -> list[int] | None:
    """The catalog file's device, inode, size and mtime; None while DuckDB has a write-ahead log."""
    try:
        st = os.stat(store / CATALOG)
    except OSError:
        return None
    if os.path.lexists(store / f"{CATALOG}.wal"):
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
