"""How a worker process hands its Arrow tables to the driver (:func:`spill`, :func:`unspill`)."""

from __future__ import annotations

import os
import uuid

import pyarrow as pa


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
