"""A store written by an older logmine (fewer tables, fewer columns) opens, read-only or not."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq

from logmine.store import Store
from logmine.store.catalog import TABLES


def _older(schema: pa.Schema, drop: tuple[str, ...]) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in drop])


def test_older_store_gains_new_tables_and_columns(tmp_path):
    root = tmp_path / "store"
    with Store(root) as store:
        old = _older(TABLES["verifications"].schema, ("node", "worker", "env_mode", "env_reason"))
        gen = store.new_gen()
        row = {name: None for name in old.names} | {"verifier_id": "v1", "task_id": "t1", "seg_gen": 1,
                                                     "status": "validated", "verify_gen": gen}
        store.commit({"verifications": pa.Table.from_pylist([row], schema=old)},
                     {"verified": [("t1", 1, gen, True, None, None)]})
    # make it look like the older release wrote it: old empty part, no environments table at all
    pq.write_table(old.empty_table(), root / "verifications" / "_empty.parquet")
    shutil.rmtree(root / "environments")
    with Store(root, read_only=True) as store:  # read-only: nothing in the store is rewritten
        rows = store.con.execute("SELECT verifier_id, status, node FROM verifications").fetchall()
        assert rows == [("v1", "validated", None)]
        assert store.con.execute("SELECT count(*) FROM environments").fetchone() == (0,)
    assert not (root / "environments").exists()
    assert pq.read_schema(root / "verifications" / "_empty.parquet").names == old.names
    with Store(root) as store:  # a writer brings the store's own empty parts up to date
        assert store.con.execute("SELECT node, env_mode FROM verifications").fetchall() == [(None, None)]
    assert pq.read_schema(root / "verifications" / "_empty.parquet").names == TABLES["verifications"].schema.names
    assert (root / "environments" / "_empty.parquet").exists()
