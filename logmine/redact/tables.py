"""The redaction gate as plain functions: text, JSON, any value, bytes, a pyarrow table.

Each takes an optional :class:`~logmine.redact.engine.Redactor` to tally counts into; without
one, a fresh one is used and its counts are dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from logmine.redact.engine import Redactor

if TYPE_CHECKING:
    import pyarrow as pa


def redact_text(text: str, redactor: Redactor | None = None) -> str:
    """Plain text (a line, a file, a command's output) with every secret replaced."""
    return (redactor or Redactor()).redact_text(text)


def redact_json(text: str, redactor: Redactor | None = None) -> str:
    """One JSON document's text redacted in its encoding; valid JSON stays valid JSON."""
    return (redactor or Redactor()).redact_json_line(text)


def redact_value(value: Any, redactor: Redactor | None = None) -> Any:
    """A copy of ``value`` (str, list, dict, parsed JSON; other types as they are) with every string
    redacted and the strings under secret-naming keys (``password``, ``api_key``) replaced."""
    return (redactor or Redactor()).redact_obj(value)


def redact_bytes(data: bytes, redactor: Redactor | None = None) -> bytes:
    """``data`` redacted as UTF-8 text; bytes that are not UTF-8 pass through as they were
    (``surrogateescape``), so a file's other bytes are written back unchanged."""
    text = data.decode("utf-8", "surrogateescape")
    out = (redactor or Redactor()).redact_text(text)
    return data if out is text else out.encode("utf-8", "surrogateescape")


def _looks_json(text: str) -> bool:
    head, tail = text.lstrip()[:1], text.rstrip()[-1:]
    return (head, tail) in (("{", "}"), ("[", "]"))


def redact_table(table: pa.Table, redactor: Redactor | None = None) -> pa.Table:
    """``table`` with every string column (``string``, ``large_string``; also inside lists and
    structs) redacted: a value that is a JSON object or array as JSON, any other as plain text.
    One prefilter pass per column; columns of other types are kept as they are."""
    import pyarrow as pa

    redactor = redactor or Redactor()
    columns = [_redact_array(col.combine_chunks() if col.num_chunks != 1 else col.chunk(0), redactor, pa)
               for col in table.columns]
    return pa.Table.from_arrays(columns, schema=table.schema)


def _redact_array(array, redactor: Redactor, pa):
    kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        values = array.to_pylist()
        out = list(values)
        for as_json in (False, True):
            idx = [i for i, v in enumerate(values) if v and _looks_json(v) == as_json]
            for i, v in zip(idx, redactor.redact_many([values[i] for i in idx], json=as_json)):
                out[i] = v
        return pa.array(out, type=kind)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        flat = _redact_array(array.values, redactor, pa)
        cls = pa.LargeListArray if pa.types.is_large_list(kind) else pa.ListArray
        return cls.from_arrays(array.offsets, flat, type=kind, mask=array.is_null() if array.null_count else None)
    if pa.types.is_struct(kind):
        fields = [_redact_array(array.field(i), redactor, pa) for i in range(kind.num_fields)]
        return pa.StructArray.from_arrays(fields, fields=list(kind),
                                          mask=array.is_null() if array.null_count else None)
    return array
