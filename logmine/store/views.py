"""The SQL of a view's part list: parts named relative to the store, found next to the catalog file
the reading connection opened, so the persisted views work after a ``mv`` and from any directory."""

from __future__ import annotations

from pathlib import Path

from logmine.store.catalog import CATALOG


def quote_sql(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def store_dir_sql(root: Path) -> str:
    """SQL for the directory of the catalog file the reading connection opened. DuckDB's default
    ``temp_directory`` is that file's absolute path plus ``.tmp`` (whatever directory the reader runs
    in), and a table function's arguments may be constant expressions, so a view can find the parts
    next to its catalog. A connection configured with another ``temp_directory`` falls back to
    ``root``, where the store was when the views were written."""
    setting = "current_setting('temp_directory')"
    suffix = "/" + CATALOG.replace(".", "[.]") + "[.]tmp$"
    return f"coalesce(nullif(regexp_replace({setting}, '{suffix}', ''), {setting}), {quote_sql(str(root))})"


def listing_sql(outside: list[str], inside: list[str], root: Path) -> str:
    """The list of parts a view reads: absolute ``outside`` paths, then ``inside`` paths (relative to
    the store) joined to the catalog's directory by :func:`store_dir_sql`."""
    joined = f"list_transform([{', '.join(map(quote_sql, inside))}], lambda p: {store_dir_sql(root)} || '/' || p)"
    return f"list_concat([{', '.join(map(quote_sql, outside))}]::VARCHAR[], {joined})"
