"""JSON Schemas in schemas/ describe the tables exactly, and real rows validate against them."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest
from conftest import query

from logmine.segment import SegmentConfig, segment
from logmine.store.catalog import TABLES

SCHEMAS = Path(__file__).parent.parent / "schemas"


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


@pytest.mark.parametrize("name", sorted(TABLES))
def test_schema_lists_exactly_the_columns(name):
    schema = _schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(schema["properties"]) == TABLES[name].schema.names


@pytest.fixture(scope="module")
def segmented_copy(fixture_store, tmp_path_factory) -> Path:
    """A segmented copy of the fixtures store: the shared one stays unsegmented, as the segment tests
    expect (they failed when this module ran before them)."""
    store = tmp_path_factory.mktemp("schemas") / "store"
    shutil.copytree(fixture_store[0], store)
    segment(SegmentConfig(store=store))
    return store


@pytest.mark.parametrize("name", ["sessions", "events", "tasks", "verifiers"])
def test_stored_rows_validate(segmented_copy, name):
    store = segmented_copy
    validator = jsonschema.Draft202012Validator(_schema(name), format_checker=jsonschema.FormatChecker())
    table = TABLES[name].view  # the stored rows, before the views add derived columns
    rows = query(store, f"SELECT * FROM {table}")
    assert rows
    for row in rows:
        row = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}
        for column in ("start_state", "runs", "files", "followups"):
            if row.get(column) is not None:
                json.loads(row[column])  # JSON-valued columns hold valid JSON
        validator.validate(row)


def test_quarantine_rows_validate(tmp_path):
    from logmine.ingest.run import IngestConfig, ingest

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"type":"response_item","payload":{}}\nnot json\n')
    ingest(IngestConfig(paths=(bad,), store=tmp_path / "s"))
    rows = query(tmp_path / "s", "SELECT * FROM quarantine")
    assert len(rows) == 1
    jsonschema.validate(rows[0], _schema("quarantine"))
