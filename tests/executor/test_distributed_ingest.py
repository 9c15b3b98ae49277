"""Ingest on a two-node Ray cluster gives the same tables as the local pool."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from conftest import FIXTURES, query

DRIVER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from logmine.executor import ExecutorConfig
    from logmine.ingest.run import IngestConfig, ingest

    paths = tuple(Path(p) for p in sys.argv[2:])
    summary = ingest(IngestConfig(paths=paths, store=Path(sys.argv[1]), executor=ExecutorConfig(kind="ray")))
    print("files", summary.files_seen, "events", summary.events)
""")

TABLES = {
    "sessions": "SELECT * FROM sessions ORDER BY source_path, session_id",
    "events": "SELECT * EXCLUDE (file_gen) FROM events ORDER BY source_path, seq",
    "quarantine": "SELECT * EXCLUDE (file_gen) FROM quarantine ORDER BY source_path, line_no",
}


def test_ray_ingest_equals_local(ray_cluster, tmp_path):
    from logmine.ingest.run import IngestConfig, ingest

    inputs = [FIXTURES / "codex-public", FIXTURES / "codex-generated"]
    ingest(IngestConfig(paths=tuple(inputs), store=tmp_path / "local", jobs=2))
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    done = ray_cluster.run([sys.executable, str(script), str(tmp_path / "ray"), *map(str, inputs)], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for name, sql in TABLES.items():
        local, remote = query(tmp_path / "local", sql), query(tmp_path / "ray", sql)
        if name == "sessions":
            local = [{k: v for k, v in r.items() if k != "file_gen"} for r in local]
            remote = [{k: v for k, v in r.items() if k != "file_gen"} for r in remote]
        assert remote == local, name
    assert len(query(tmp_path / "ray", TABLES["events"])) > 1000


def test_a_node_without_the_inputs_is_named(ray_cluster, tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.replace("paths = tuple(Path(p) for p in sys.argv[2:])",
                                     "paths = tuple(Path(p) for p in sys.argv[2:])\n"
                                     "import logmine.ingest.run as r\n"
                                     "r.paths_unreadable = lambda sample: 'inputs are not mounted here'"))
    done = ray_cluster.run([sys.executable, str(script), str(tmp_path / "ray"),
                            str(Path(FIXTURES / "codex-generated"))], timeout=300)
    assert done.returncode != 0 and "ExecutorError: node 127.0.0.1/" in done.stderr
