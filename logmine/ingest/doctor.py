"""``logmine doctor``: check a store's parts and file states, and repair by re-reading sources.

Problems found:

- ``missing part`` / ``unreadable part``: a registered Parquet part that is gone or cannot be read
  (each part is read whole);
- ``stale file``: a source file whose rows sat in a lost part; the next ingest re-reads it;
- ``source gone``: a file state whose source file no longer exists. Its rows stay in the store; if
  the file is also stale, what was lost cannot be recovered.

``repair=True`` unregisters the bad parts (marking their files stale) and re-ingests every stale
file whose source still exists. It lives in ingest, not in the store, because repairing means
reading source files again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from logmine.ingest.run import IngestConfig, ingest
from logmine.ingest.summary import IngestSummary
from logmine.store import CATALOG, Store, StoreError
from logmine.store.catalog import STALE_ERROR


@dataclass(frozen=True, slots=True)
class StoreProblem:
    kind: str  # missing part | unreadable part | stale file | source gone
    path: str  # a part relative to the store root, or a source file
    detail: str = ""

    def line(self) -> str:
        return f"{self.kind}: {self.path}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class DoctorReport:
    store: Path
    problems: list[StoreProblem] = field(default_factory=list)  # as found, before any repair
    remaining: list[StoreProblem] = field(default_factory=list)  # after the repair (= problems without it)
    repaired: IngestSummary | None = None  # the re-ingest of the stale files, when there was one

    @property
    def ok(self) -> bool:
        return not [p for p in self.remaining if p.kind != "source gone"]


def doctor(store: Path, repair: bool = False) -> DoctorReport:
    """Report every problem of ``store``; with ``repair``, fix what re-reading the sources can fix."""
    if not (store / CATALOG).exists():
        raise StoreError(f"no logmine store at {store}", hint="run `logmine ingest` first")
    report = DoctorReport(store)
    with Store(store, read_only=not repair) as opened:
        part_problems = opened.check_parts()
        found = list(dict.fromkeys(opened.unusable_parts + part_problems))  # a read-only open finds them twice
        report.problems = [StoreProblem(f"{p.kind} part", p.path, p.detail) for p in found]
        if repair:
            opened.drop_parts(part_problems)
        report.problems += _file_problems(opened)
        stale = [p.path for p in _file_problems(opened) if p.kind == "stale file" and os.path.exists(p.path)]
    if repair and stale:
        report.repaired = ingest(IngestConfig(paths=tuple(Path(p) for p in stale), store=store))
    if not repair:
        report.remaining = list(report.problems)
        return report
    with Store(store, read_only=True) as opened:
        report.remaining = [StoreProblem(f"{p.kind} part", p.path, p.detail) for p in opened.check_parts()]
        report.remaining += _file_problems(opened)
    return report


def _file_problems(store: Store) -> list[StoreProblem]:
    problems = []
    for path, error in store.con.execute("SELECT source_path, error FROM files ORDER BY source_path").fetchall():
        gone = not os.path.exists(path)
        if error == STALE_ERROR:
            problems.append(StoreProblem("stale file", path, "source gone: lost rows cannot be re-read" if gone
                                         else "re-read by the next ingest or `doctor --repair`"))
        elif gone:
            problems.append(StoreProblem("source gone", path, "its rows stay in the store"))
    return problems


def doctor_dict(report: DoctorReport) -> dict:
    """The report as plain data (``--json``)."""
    def rows(problems):
        return [{"kind": p.kind, "path": p.path, "detail": p.detail} for p in problems]

    repaired = report.repaired
    return {
        "store": str(report.store),
        "ok": report.ok,
        "problems": rows(report.problems),
        "remaining": rows(report.remaining),
        "reingested_files": 0 if repaired is None else sum(repaired.changes.values()),
    }


def render_doctor(console, report: DoctorReport) -> None:
    """One line per problem, then a verdict."""
    from rich.markup import escape

    for problem in report.problems:
        fixed = problem not in report.remaining
        console.print(("[green]repaired[/] " if fixed else "[yellow]problem[/] ") + escape(problem.line()),
                      highlight=False, soft_wrap=True)
    left = [p for p in report.remaining if p.kind != "source gone"]
    verdict = "ok" if not left else f"{len(left)} problem(s) left"
    if left and report.remaining == report.problems:
        verdict += "; run `logmine doctor --repair`"
    console.print(f"store {escape(str(report.store))}: {verdict}", highlight=False)
