"""Rows (dicts keyed by column name) to Arrow tables, column by column.

Building each column with one ``pa.array`` call is about 2.5× faster than ``pa.Table.from_pylist``.
pyarrow asks, on its first conversion in a process, whether pandas is installed (to recognise a
pandas Series among its inputs), and imports it to find out: half a second of every ingest process,
for inputs that are plain lists. The first conversion therefore runs with pandas hidden; pyarrow then
takes pandas as absent for that check only, and imports it after all when a conversion needs it
(``to_pandas``), so nothing else in the process changes.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Sequence
from operator import itemgetter

import pyarrow as pa


def table_of(rows: Sequence[dict], schema: pa.Schema) -> pa.Table:
    """``rows`` as a table of ``schema`` (a key a row lacks is null), as ``from_pylist`` makes it."""
    if "pandas" not in sys.modules and not _HIDDEN.done:
        _HIDDEN.done = True
        sys.meta_path.insert(0, _HIDDEN)
        try:
            pa.array([None], pa.string())  # pyarrow's one look for pandas
        finally:
            sys.meta_path.remove(_HIDDEN)
    columns = [pa.array(_column(rows, field.name), type=field.type) for field in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _column(rows: Sequence[dict], name: str) -> list:
    try:
        return list(map(itemgetter(name), rows))
    except KeyError:  # some row lacks the column
        return [row.get(name) for row in rows]


class _HidePandas:
    """A meta-path finder under which ``import pandas`` fails."""

    done = False

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is hidden while pyarrow looks for it")
        return None


_HIDDEN = _HidePandas()


def spill(table: pa.Table, directory: str) -> str:
    """Write ``table`` as an Arrow IPC file under ``directory`` and return its path: how a worker
    process hands a file's tables to the driver without pickling them through a pipe."""
    path = os.path.join(directory, f"{uuid.uuid4().hex}.arrow")
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return path


def unspill(path: str) -> pa.Table:
    """The table of a :func:`spill` file, memory-mapped rather than copied; the file is removed at
    once (the mapping outlives its name)."""
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    os.unlink(path)
    return table
