"""Search everything a pipeline wrote for planted secrets, decoded the ways a reader would see it.

    from redact.leaks import find_leaks
    leaks = find_leaks([store, export_dir], needles)   # [] when nothing leaked

Each file is searched as bytes and, where it has a structure, decoded too: a ``.parquet`` file
column by column (every string leaf of every row, inside lists and structs), a DuckDB catalog
table by table (state tables and views), a tarball member by member (recursively), a JSON or
JSON Lines file string by string (JSON text within JSON strings decoded again). A hit names the
file (``archive!member`` inside a tarball), where in it, and the needle.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Leak:
    file: str
    where: str  # "bytes", "column <name>", "table <name>", "json"
    needle: str

    def __str__(self) -> str:
        return f"{self.file} [{self.where}]: {self.needle[:24]}…"


def find_leaks(paths: Iterable[Path], needles: Iterable[str]) -> list[Leak]:
    """Every (file, place, needle) where a needle is found under ``paths`` (files or directories)."""
    needles = sorted(set(needles))
    leaks: list[Leak] = []
    for path in map(Path, paths):
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
        for file in files:
            leaks += _search(str(file), file.read_bytes(), needles)
    return sorted(set(leaks), key=str)


def files_searched(paths: Iterable[Path]) -> list[str]:
    """The files :func:`find_leaks` reads under ``paths`` (tarball members included)."""
    out = []
    for path in map(Path, paths):
        for file in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
            out.append(str(file))
            if file.name.endswith((".tar.gz", ".tgz", ".tar")):
                out += [name for name, _ in _members(str(file), file.read_bytes())]
    return out


def _search(name: str, data: bytes, needles: list[str]) -> list[Leak]:
    found = [Leak(name, "bytes", n) for n in needles if n.encode() in data]
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        for member, content in _members(name, data):
            found += _search(member, content, needles)
    elif name.endswith(".parquet"):
        found += _search_parquet(name, data, needles)
    elif name.endswith(".duckdb"):
        found += _search_duckdb(name, needles)
    else:
        for where, text in _decoded(name, data):
            found += [Leak(name, where, n) for n in needles if n in text]
    return found


def _members(name: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar:
            if member.isfile() and (handle := tar.extractfile(member)) is not None:
                yield f"{name}!{member.name}", handle.read()


def _search_parquet(name: str, data: bytes, needles: list[str]) -> list[Leak]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(data))
    found = []
    for column in table.column_names:
        text = "\n".join(_strings(table.column(column).to_pylist()))
        found += [Leak(name, f"column {column}", n) for n in needles if n in text]
    return found


def _search_duckdb(name: str, needles: list[str]) -> list[Leak]:
    import duckdb

    con = duckdb.connect(name, read_only=True)
    try:
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()]
        found = []
        for table in tables:  # state tables; the views read the Parquet parts searched on their own
            text = "\n".join(_strings(con.execute(f'SELECT * FROM "{table}"').fetchall()))
            found += [Leak(name, f"table {table}", n) for n in needles if n in text]
        return found
    finally:
        con.close()


def _decoded(name: str, data: bytes) -> Iterator[tuple[str, str]]:
    """The file's text, and the strings of its JSON documents (JSON within strings decoded too)."""
    text = data.decode("utf-8", "replace")
    docs = []
    if name.endswith(".json"):
        docs = [text]
    elif name.endswith(".jsonl"):
        docs = text.splitlines()
    values = []
    for doc in docs:
        try:
            values.append(json.loads(doc))
        except ValueError:
            continue
    if values:
        yield "json", "\n".join(_strings(values))


def _strings(value) -> Iterator[str]:
    """Every string leaf of ``value``; a string that holds a JSON object or array, decoded as well."""
    if isinstance(value, str):
        yield value
        stripped = value.strip()
        if stripped and stripped[0] in "{[" and stripped[-1] in "}]":
            try:
                inner = json.loads(stripped)
            except ValueError:
                return
            yield from _strings(inner)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
