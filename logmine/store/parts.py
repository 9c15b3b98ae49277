"""Health of a store's Parquet parts: is every registered part there, and can it be read?

The check at open is cheap (a stat and the 4-byte Parquet magic at both ends of each part); the deep
check (:func:`deep_problem`) reads each part whole and is what ``logmine doctor`` runs.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from logmine.store.catalog import TABLES

_MAGIC = b"PAR1"


@dataclass(frozen=True, slots=True)
class PartProblem:
    """A registered part the views cannot use."""

    table: str
    name: str  # file name inside the table's directory
    kind: str  # missing | unreadable
    detail: str = ""

    @property
    def path(self) -> str:
        """The part's path relative to the store root."""
        return f"{self.table}/{self.name}"

    def line(self) -> str:
        return f"part {self.path} is {self.kind}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True, slots=True)
class Part:
    """A part written (:func:`write_part`) and not yet registered: its table, file name and the
    generations of its rows. :meth:`Store.commit <logmine.store.Store.commit>` registers it."""

    table: str
    name: str
    gens: tuple[int, ...]


def write_part(root: Path, table: str, rows: pa.Table) -> Part:
    """Write ``rows`` as a new part of ``table`` under the store ``root``: a temporary name, fsync,
    then its own name. Until a commit registers it, it is an orphan the next open deletes. Any process
    may write one (ingest's workers do, while their driver holds the store)."""
    final = Path(root) / table / f"part-{uuid.uuid4().hex}.parquet"
    tmp = final.with_suffix(".tmp")
    pq.write_table(rows, tmp, compression="zstd")
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, final)
    gens = pc.unique(rows.column(TABLES[table].gen_column)).to_pylist()
    return Part(table, final.name, tuple(sorted(gens)))


def without_gens(root: Path, part: Part, gens: set[int]) -> list[Part]:
    """An unregistered ``part`` without the rows of generations ``gens``: itself when it has none of
    them, else written again without them (and the old file deleted), or nothing when no row is left."""
    if not gens.intersection(part.gens):
        return [part]
    path = Path(root) / part.table / part.name
    rows = pq.read_table(path)
    gen = rows.column(TABLES[part.table].gen_column)
    kept = rows.filter(pc.invert(pc.is_in(gen, pa.array(sorted(gens), gen.type))))
    path.unlink()  # not registered yet: nothing refers to it
    return [write_part(root, part.table, kept)] if kept.num_rows else []


def quick_problem(root: Path, table: str, name: str) -> PartProblem | None:
    """Missing, not a regular file, unreadable, or without the Parquet magic at either end."""
    path = root / table / name
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
            size = handle.seek(0, 2)
            if size >= 12:
                handle.seek(size - 4)
            tail = handle.read(4)
    except FileNotFoundError:
        return PartProblem(table, name, "missing")
    except OSError as exc:
        return PartProblem(table, name, "unreadable", exc.strerror or str(exc))
    if size < 12 or head != _MAGIC or tail != _MAGIC:
        return PartProblem(table, name, "unreadable", "not a Parquet file")
    return None


def deep_problem(root: Path, table: str, name: str) -> PartProblem | None:
    """:func:`quick_problem`, then read the whole part."""
    problem = quick_problem(root, table, name)
    if problem:
        return problem
    try:
        pq.read_table(root / table / name)
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) for a bad file
        return PartProblem(table, name, "unreadable", " ".join(str(exc).split())[:200])
    return None
