"""The redaction gate for files: every text a stage writes outside the store goes through here.

The store's writer redacts what it commits (``Store.commit``); exports, training logs and samples
are files, and they are written with these functions instead of ``Path.write_text``,
``pq.write_table`` or an open file. ``tests/redact/test_file_writers.py`` reads the source of every
stage for other ways of writing a file, so a new writer cannot bypass the gate unnoticed.

* :func:`write_text`: a text file (``json=True``: a JSON document, kept valid JSON);
* :func:`write_table`: a Parquet file, every string column redacted (:func:`redact_table`);
* :class:`JsonLines`: an append-only ``.jsonl`` log, one redacted JSON object per line;
* :func:`copy_tree`: a user's directory copied without its credential files, text redacted;
* :func:`redact_tree`: a directory's text files redacted in place (a rebuilt start state, so that it
  holds the same pseudonyms as the log's patches).
"""

from __future__ import annotations

import json as _json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logmine.errors import LogmineError
from logmine.redact.engine import Redactor, default_redactor
from logmine.redact.paths import credential_path
from logmine.redact.tables import redact_table, redact_value

if TYPE_CHECKING:
    import pyarrow as pa


def write_text(path: str | Path, text: str, redactor: Redactor | None = None, *, json: bool = False) -> Path:
    """Write ``text`` to ``path`` with every secret replaced; returns the path."""
    redactor = redactor or default_redactor()
    path = Path(path)
    path.write_text(redactor.redact_json_line(text) if json else redactor.redact_text(text))
    return path


def write_table(table: pa.Table, path: str | Path, redactor: Redactor | None = None, **options: Any) -> Path:
    """Write ``table`` as Parquet with every string column redacted; ``options`` go to ``pq.write_table``."""
    import pyarrow.parquet as pq

    pq.write_table(redact_table(table, redactor or default_redactor()), path, **options)
    return Path(path)


def dumps(value: Any, redactor: Redactor | None = None, **options: Any) -> str:
    """``json.dumps`` of ``value`` with every string in it redacted first."""
    return _json.dumps(redact_value(value, redactor or default_redactor()), **options)


class JsonLines:
    """An append-only JSON-lines file; each row's strings are redacted, each write is flushed."""

    def __init__(self, path: str | Path, redactor: Redactor | None = None):
        self.path = Path(path)
        self._redactor = redactor or default_redactor()
        self._file = self.path.open("a")

    def write(self, *rows: dict) -> None:
        self._file.write("".join(dumps(row, self._redactor) + "\n" for row in rows))
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> JsonLines:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TreeTooLarge(LogmineError):
    """A directory to copy holds more than the bytes allowed."""


#: Bytecode and tool caches: made by running the code, tied to the machine that ran it (a ``.pyc``
#: records its source's absolute path), never part of a start state. ``copy_tree(..., caches=False)``
#: leaves them out without listing them.
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"})
CACHE_SUFFIXES = (".pyc", ".pyo")


def copy_tree(source: Path, dest: Path, redactor: Redactor | None = None, *, max_bytes: int | None = None,
              max_text_bytes: int | None = None, caches: bool = True) -> list[str]:
    """Copy ``source`` into ``dest``: credential files and directories
    (:func:`~logmine.redact.paths.credential_path`), links and anything not a regular file are left
    out; UTF-8 text is redacted (up to ``max_text_bytes`` a file, larger files are copied as they are),
    and each file keeps its permission bits;
    raises :class:`TreeTooLarge` past ``max_bytes`` in all. ``caches=False``: bytecode and tool caches
    (:data:`CACHE_DIRS`, :data:`CACHE_SUFFIXES`) are not copied either. Returns the relative paths
    left out (credentials, links, special files)."""
    redactor = redactor or default_redactor()
    left_out: list[str] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(source):
        rel_dir = os.path.relpath(dirpath, source)
        kept = []
        for name in sorted(dirnames):
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if credential_path(rel, directory=True):
                left_out.append(rel)
            elif caches or name not in CACHE_DIRS:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not caches and name.endswith(CACHE_SUFFIXES):
                continue
            rel = os.path.normpath(os.path.join(rel_dir, name))
            path = Path(dirpath, name)
            if credential_path(rel) or path.is_symlink() or not path.is_file():
                left_out.append(rel)
                continue
            total += path.stat().st_size
            if max_bytes is not None and total > max_bytes:
                raise TreeTooLarge(f"{source} holds more than {max_bytes >> 20} MiB")
            target = Path(dest) / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            try:
                text = data.decode("utf-8") if max_text_bytes is None or len(data) <= max_text_bytes else None
            except UnicodeDecodeError:
                text = None
            if text is None:
                shutil.copyfile(path, target)
            else:
                write_text(target, text, redactor)
            shutil.copymode(path, target)  # a project script stays executable (`./scripts/new.sh`)
    return sorted(left_out)


TREE_BATCH_BYTES = 32 << 20  # text redacted in one prefilter pass by redact_tree


def redact_tree(root: Path, redactor: Redactor, *, max_text_bytes: int = 4 << 20,
                skip: tuple[str, ...] = (".git",)) -> int:
    """Redact, in place, every UTF-8 text file under ``root`` of at most ``max_text_bytes`` (links and
    the directories named in ``skip`` are left alone; a file keeps its mode). Returns how many files
    changed. The texts go through the prefilter in batches, so a tree without secrets costs one scan."""
    batch: list[tuple[Path, str]] = []
    size = changed = 0

    def flush() -> int:
        done = 0
        for (path, text), out in zip(batch, redactor.redact_many([t for _, t in batch])):
            if out is not text and out != text:
                path.write_bytes(out.encode("utf-8", "surrogateescape"))
                done += 1
        batch.clear()
        return done

    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in filenames:
            path = Path(dirpath, name)
            if path.is_symlink() or not path.is_file() or path.stat().st_size > max_text_bytes:
                continue
            data = path.read_bytes()
            if b"\0" in data[:8192]:
                continue
            try:
                batch.append((path, data.decode("utf-8")))
            except UnicodeDecodeError:
                continue
            size += len(data)
            if size >= TREE_BATCH_BYTES:
                changed += flush()
                size = 0
    return changed + flush()
