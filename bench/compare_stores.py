#!/usr/bin/env python3
"""Compare the ingest tables of two stores row by row: did a change of ingest alter what it writes?

Ingest the same input twice, with the code before a change (a ``git worktree`` of the old commit, run
from there so its ``logmine`` package shadows the installed one) and after it, then compare:

    git worktree add /tmp/old HEAD~1
    (cd /tmp/old && python -m logmine ingest CORPUS --store /tmp/a -q)
    logmine ingest CORPUS --store /tmp/b -q
    python bench/compare_stores.py /tmp/a /tmp/b

``sessions`` rows are matched by (source_path, session_id), ``events`` by (source_path, seq) and
``quarantine`` by (source_path, line_no, byte_offset); ``file_gen`` is left out (generations are
numbered in the order workers finish). It prints, per table, the rows only one store has and the
columns that differ, and exits 1 when anything differs. ``--reworded OLD=NEW`` (a regular expression
and its replacement, repeatable) rewrites quarantine reasons of both stores before comparing, for a
change that words a reason anew on purpose.

Pseudonymised secrets differ between any two stores (each store has its own key): compare stores made
with ``--redact-style placeholders``, or read the differences in ``raw`` and ``text`` with that in mind.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from logmine.store import open_store  # noqa: E402 - run from a checkout

KEYS = {"sessions": ("source_path", "session_id"), "events": ("source_path", "seq"),
        "quarantine": ("source_path", "line_no", "byte_offset")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Compare two stores' ingest tables row by row.")
    ap.add_argument("a", type=Path, help="the store made before the change")
    ap.add_argument("b", type=Path, help="the store made after it")
    ap.add_argument("--show", type=int, default=3, help="differences printed per table (default 3)")
    ap.add_argument("--reworded", action="append", default=[], metavar="OLD=NEW",
                    help="rewrite quarantine reasons matching the regular expression OLD to NEW, in both stores")
    args = ap.parse_args(argv)
    rewrites = [tuple(pair.split("=", 1)) for pair in args.reworded]
    same = True
    with open_store(args.a) as a, open_store(args.b) as b:
        for table, key in KEYS.items():
            same &= compare(table, key, a, b, rewrites, args.show)
    print("same" if same else "different")
    return 0 if same else 1


def compare(table: str, key: tuple[str, ...], a, b, rewrites: list[tuple[str, str]], show: int) -> bool:
    columns = [row[0] for row in a.execute(f"DESCRIBE {table}").fetchall() if row[0] != "file_gen"]
    at = [columns.index(name) for name in key]

    def rows(con) -> dict[tuple, tuple]:
        found = {}
        for row in con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall():
            if table == "quarantine":
                row = tuple(_reworded(v, rewrites) if isinstance(v, str) else v for v in row)
            found[tuple(row[i] for i in at)] = row
        return found

    ra, rb = rows(a), rows(b)
    only_a, only_b = sorted(ra.keys() - rb.keys(), key=str), sorted(rb.keys() - ra.keys(), key=str)
    differ = sorted((k for k in ra.keys() & rb.keys() if ra[k] != rb[k]), key=str)
    print(f"{table}: {len(ra)} vs {len(rb)} rows; only in A {len(only_a)}, only in B {len(only_b)}, "
          f"different {len(differ)}")
    for k in only_a[:show]:
        print(f"  only in A: {k}")
    for k in only_b[:show]:
        print(f"  only in B: {k}")
    for k in differ[:show]:
        for name, old, new in zip(columns, ra[k], rb[k]):
            if old != new:
                print(f"  {k}: {name}: {str(old)[:120]!r} != {str(new)[:120]!r}")
    return not (only_a or only_b or differ)


def _reworded(value: str, rewrites: list[tuple[str, str]]) -> str:
    for old, new in rewrites:
        value = re.sub(old, new, value)
    return value


if __name__ == "__main__":
    sys.exit(main())
