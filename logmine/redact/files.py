"""The redaction gate for files: every text a stage writes outside the store goes through here.

The store's writer redacts what it commits (``Store.commit``); exports, training logs and samples
are files, and they are written with these functions instead of ``Path.write_text``,
``pq.write_table`` or an open file. ``tests/redact/test_file_writers.py`` reads the source of every
stage for other ways of writing a file, so a new writer cannot bypass the gate unnoticed.

* :func:`write_text`: a text file (``json=True``: a JSON document, kept valid JSON);
* :func:`write_table`: a Parquet file, every string column redacted (:func:`redact_table`);
* :class:`JsonLines`: an append-only ``.jsonl`` log, one redacted JSON object per line.
"""

from __future__ import annotations

import json as _json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logmine.redact.engine import Redactor, default_redactor
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
