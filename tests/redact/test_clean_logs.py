"""False positives, measured: nothing in the clean real logs (the public and generated Codex
fixtures, the demo corpus) is redacted, by either engine. They hold no true secret; were one
found, it would be listed here with the reason."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from redact.planted import planted

from logmine.errors import LogmineError
from logmine.redact import Redactor, scan

ROOT = Path(__file__).resolve().parents[2]
CLEAN = [ROOT / "tests" / "fixtures" / "codex-public", ROOT / "tests" / "fixtures" / "codex-generated",
         ROOT / "logmine" / "demo"]
TRUE_SECRETS: dict[str, int] = {}  # kind -> count of real secrets in the clean corpus (none)


def test_clean_logs_have_no_redactions():
    report = scan(CLEAN)
    mb = report.bytes_read / 1e6
    per_mb = {kind: round(n / mb, 3) for kind, n in report.kinds.items()}
    print(f"\nredactions per MB over {mb:.1f} MB of clean logs: {per_mb or 'none'}")
    assert mb > 4 and len(report.files) > 30
    assert dict(report.kinds) == TRUE_SECRETS, report.rows()[:10]


def test_both_engines_agree_on_clean_logs():
    lines = [line for root in CLEAN[:2] for path in sorted(root.rglob("*.jsonl"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) > 3000
    assert Redactor().redact_jsonl(lines) == Redactor("keywords").redact_jsonl(lines) == lines


def test_scan_reports_per_file_and_kind_in_files_archives_and_parquet(tmp_path):
    ps = planted()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text("\n".join(p.variants["json"] for p in ps[:3]) + "\n")
    (tmp_path / "logs" / "clean.txt").write_text("nothing here\n")
    (tmp_path / "logs" / "blob.bin").write_bytes(b"\0\1\2" * 100)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = ps[7].text.encode()
        info = tarfile.TarInfo("seeds/.env")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (tmp_path / "task-data.tar.gz").write_bytes(buf.getvalue())
    pq.write_table(pa.table({"text": [ps[10].text, "ok"], "n": [1, 2]}), tmp_path / "events.parquet")

    report = scan([tmp_path])
    files = {Path(f.split("!")[0]).name + ("!" + f.split("!")[1] if "!" in f else ""): c
             for f, c in report.files.items()}
    assert sum(files["a.jsonl"].values()) >= 3 and not files["clean.txt"]
    assert files["task-data.tar.gz!seeds/.env"][ps[7].kind] == 1
    assert files["events.parquet"][ps[10].kind] == 1
    assert list(report.skipped.values()) == ["binary"]
    rows = report.rows()
    assert rows and set(rows[0]) == {"file", "kind", "count"}
    assert {r["kind"] for r in report.kind_rows()} == set(report.kinds)
    summary = report.summary()
    assert summary["findings"] == report.total and summary["files_skipped"] == 1
    json.dumps(summary)


def test_scan_of_a_missing_path_is_an_error(tmp_path):
    with pytest.raises(LogmineError, match="no such file or directory"):
        scan([tmp_path / "nope"])
