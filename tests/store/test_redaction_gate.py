"""The store writer is the redaction gate: every table, every string column, every state reason.

The tables are enumerated from the catalog, so a table or column added later is covered without
touching this test: each gets a row per planted secret, with the secret in every string column
(lists of strings too), is committed through ``Store.commit`` and read back from its Parquet part.
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
from pathlib import Path

import pyarrow as pa
import pytest
from redact.leaks import find_leaks
from redact.planted import planted

import logmine
from logmine.ingest.records import TABLES as INGEST_TABLES
from logmine.redact import store_mask
from logmine.store import Store, StoreError
from logmine.store.catalog import STATE_TEXT, TABLES
from logmine.store.parts import write_part

PLANTED = planted()  # random on every run
GEN = 7


def _value(kind: pa.DataType, text: str, column: str, gen_column: str):
    if column == gen_column:
        return GEN
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return text
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_value(kind.value_type, text, "", gen_column)] * 2
    if pa.types.is_struct(kind):
        return {f.name: _value(f.type, text, f.name, "") for f in kind}
    if pa.types.is_integer(kind):
        return 1
    if pa.types.is_floating(kind):
        return 0.5
    if pa.types.is_boolean(kind):
        return True
    if pa.types.is_timestamp(kind):
        return dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    raise AssertionError(f"column {column}: no test value for type {kind}; add one")


def _table(name: str) -> pa.Table:
    spec = TABLES[name]
    texts = [v for p in PLANTED for v in (p.text, p.variants["json"], p.variants["json_in_json"])]
    rows = [{f.name: _value(f.type, text, f.name, spec.gen_column) for f in spec.schema} for text in texts]
    return pa.Table.from_pylist(rows, schema=spec.schema)


def _live_state(text: str) -> dict[str, list[tuple]]:
    """State rows that make generation GEN live for every table, a secret in every free-text column."""
    return {
        "files": [("/logs/a.jsonl", GEN, "g2", 1, 1, 1, None, None, None, 0, text)],
        "segmented": [("/logs/a.jsonl", GEN, 1, GEN, 0, text)],
        "verified": [("task-1", GEN, GEN, False, text, "inputs")],
    }


def _needles() -> set[str]:
    return {n for p in PLANTED for n in p.needles}


def test_every_table_is_gated_at_commit_unless_redacted_at_source(tmp_path):
    gated = [name for name, spec in TABLES.items() if not spec.redacted_at_source]
    assert {"tasks", "verifiers", "verifications"} <= set(gated)
    with Store(tmp_path / "store") as store:
        store.commit({name: _table(name) for name in gated}, _live_state(PLANTED[0].text))
        assert store.redactions[PLANTED[0].kind] > 0
    parts = {name: list((tmp_path / "store" / name).glob("part-*.parquet")) for name in gated}
    assert all(len(found) == 1 for found in parts.values()), parts  # written and live
    assert find_leaks([p for found in parts.values() for p in found], _needles()) == []
    assert find_leaks([tmp_path / "store" / "catalog.duckdb"], PLANTED[0].needles) == []


def test_state_keys_and_fingerprints_are_kept_as_given(tmp_path):
    text = PLANTED[0].text
    store_mask(tmp_path / "store", style="placeholder", create=True)  # marks to find
    with Store(tmp_path / "store") as store:
        store.commit({}, _live_state(text))
        reason, inputs = store.con.execute("SELECT reason, inputs FROM verified").fetchone()
        assert f"[REDACTED:{PLANTED[0].kind}]" in reason and inputs == "inputs"
        assert store.con.execute("SELECT source_path FROM files").fetchone()[0] == "/logs/a.jsonl"
    assert set(STATE_TEXT) == {"files", "segmented", "verified"}


@pytest.mark.parametrize("name", [n for n, s in TABLES.items() if s.redacted_at_source])
def test_only_ingest_tables_are_trusted_and_their_redactor_exists(name):
    """A table may skip the gate only when ingest writes it (tests/ingest/test_redacted_at_source.py
    drives every path of the function named) and that function exists."""
    assert name in INGEST_TABLES
    module, _, function = TABLES[name].redacted_at_source.rpartition(".")
    assert callable(getattr(importlib.import_module(module), function))


def test_the_writers_of_the_store_are_known():
    """Every module that commits to the store, enumerated: a new writer is reviewed here. Its
    tables pass the gate, unless it writes ingest's tables, which only ingest may (they are
    trusted as redacted at source)."""
    root = Path(logmine.__file__).parent
    writers = {str(p.relative_to(root)) for p in root.rglob("*.py")
               if re.search(r"\bstore\.commit\(|\.commit\(\s*\{", p.read_text())}
    assert writers == {"ingest/run.py", "segment/run.py", "verify/run.py"}, writers
    for name in ("segment/run.py", "verify/run.py"):
        committed = set(re.findall(r'"(\w+)": pa\.Table', (root / name).read_text()))
        assert committed and not committed & set(INGEST_TABLES), (name, committed)
    part_writers = {str(p.relative_to(root)) for p in root.rglob("*.py") if re.search(r"\bwrite_part\(", p.read_text())}
    assert part_writers == {"store/parts.py", "store/core.py", "ingest/run.py"}, part_writers  # ingest: its workers


@pytest.mark.parametrize("name", [n for n, s in TABLES.items() if not s.redacted_at_source])
def test_a_part_written_outside_the_gate_is_refused_for_a_gated_table(tmp_path, name):
    """Parts written before the commit (ingest's workers write theirs) skip the gate, so the store
    takes them only for tables redacted at their source."""
    with Store(tmp_path / "store") as store:
        part = write_part(store.root, name, _table(name))
        with pytest.raises(StoreError, match="must pass the redaction gate"):
            store.commit({}, _live_state("x"), [part])
        assert store.con.execute("SELECT count(*) FROM parts").fetchone()[0] == 0
