"""``scan``: what redaction would replace in logs, directories or an export, before publishing.

Reads text files (JSON Lines line by line, other text whole), unpacks ``.tar.gz``/``.tgz``
archives in memory and reads every string column of ``.parquet`` files. Binary files are
skipped and listed. Nothing is written.
"""

from __future__ import annotations

import io
import tarfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logmine.errors import LogmineError
from logmine.redact.engine import Finding, Redactor
from logmine.redact.pseudonym import PLACEHOLDERS, Mask

_TEXT_PROBE = 8192


@dataclass
class ScanReport:
    """Findings of :func:`scan`: per file and kind, how many secrets redaction would replace."""

    files: dict[str, Counter] = field(default_factory=dict)  # every file read, findings or none
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why it was not read (binary, unreadable)
    bytes_read: int = 0
    findings: list[tuple[str, Finding]] = field(default_factory=list)  # (file, finding), in reading order

    def finding_rows(self) -> list[dict]:
        """One dict per finding: ``file``, ``kind``, ``rule``, ``why`` (``format`` or ``context +
        entropy N``), ``preview`` (what precedes it, and the value shortened) and ``digest``."""
        return [{"file": name, "kind": f.kind, "rule": f.rule, "why": f.why, "preview": f.preview, "digest": f.digest}
                for name, f in self.findings]

    @property
    def kinds(self) -> Counter:
        """Findings per kind over all files."""
        return sum(self.files.values(), Counter())

    @property
    def total(self) -> int:
        return sum(self.kinds.values())

    def rows(self) -> list[dict]:
        """One dict per (file, kind) with findings, most first: ``file``, ``kind``, ``count``."""
        rows = [{"file": f, "kind": k, "count": n} for f, c in self.files.items() for k, n in c.items()]
        return sorted(rows, key=lambda r: (-r["count"], r["file"], r["kind"]))

    def kind_rows(self) -> list[dict]:
        """One dict per kind: ``kind``, ``count``, ``files`` (how many files hold it)."""
        return [{"kind": k, "count": n, "files": sum(1 for c in self.files.values() if c[k])}
                for k, n in self.kinds.most_common()]

    def summary(self) -> dict:
        """Totals, ready to print or dump as JSON."""
        return {"files_read": len(self.files), "files_with_findings": sum(1 for c in self.files.values() if c),
                "files_skipped": len(self.skipped), "bytes_read": self.bytes_read, "findings": self.total,
                "kinds": dict(self.kinds.most_common())}


def scan(paths: Iterable[str | Path], redactor: Redactor | None = None, mask: Mask = PLACEHOLDERS) -> ScanReport:
    """What redaction would replace in ``paths`` (files or directories, read recursively), each
    finding with its rule and why it counted. ``mask``: a store's, so that its pseudonyms (in an
    export of that store) are known as replacements, not reported as secrets.

    Raises :class:`~logmine.errors.LogmineError` for a path that does not exist.
    """
    report = ScanReport()
    redactor = redactor or Redactor()
    for path in map(Path, paths):
        if not path.exists():
            raise LogmineError(f"no such file or directory: {path}", hint="scan takes files and directories")
        for name, data in _files(path):
            _scan_file(name, data, report, redactor, mask)
    return report


def _files(path: Path) -> Iterator[tuple[str, bytes]]:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        try:
            data = file.read_bytes()
        except OSError as exc:
            yield str(file), exc  # type: ignore[misc]
            continue
        if file.name.endswith((".tar.gz", ".tgz", ".tar")):
            yield from _members(str(file), data)
        else:
            yield str(file), data


def _members(name: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar:
                if member.isfile() and (handle := tar.extractfile(member)) is not None:
                    yield f"{name}!{member.name}", handle.read()
    except (tarfile.TarError, EOFError, OSError) as exc:
        yield name, exc  # type: ignore[misc]


def _scan_file(name: str, data, report: ScanReport, redactor: Redactor, mask: Mask) -> None:
    if isinstance(data, Exception):
        report.skipped[name] = f"unreadable: {data}"
        return
    scanner = Redactor(mask=mask, findings=True)  # over the shared rules; the counts of this file only
    if name.endswith(".parquet"):
        if (why := _scan_parquet(data, scanner)) is not None:
            report.skipped[name] = why
            return
    elif b"\0" in data[:_TEXT_PROBE]:
        report.skipped[name] = "binary"
        return
    else:
        text = data.decode("utf-8", "replace")
        if name.endswith(".jsonl"):
            scanner.redact_jsonl(text.splitlines())
        elif name.endswith(".json"):
            scanner.redact_json_line(text)
        else:
            scanner.redact_text(text)
    report.bytes_read += len(data)
    report.files[name] = scanner.counts
    report.findings += [(name, f) for f in scanner.findings]
    redactor.counts.update(scanner.counts)


def _scan_parquet(data: bytes, scanner: Redactor) -> str | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from logmine.redact.tables import redact_table

    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        return f"unreadable Parquet: {exc}"
    redact_table(table, scanner)
    return None
