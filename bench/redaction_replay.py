"""Does redaction change what replays? The same real sessions verified twice, pseudonyms against placeholders.

For each project of a ``bench/real_yield.py`` corpus it runs ``ingest`` → ``segment`` → ``verify`` twice,
once with ``--redact-style pseudonym`` (the default) and once with ``--redact-style placeholder``
(``[REDACTED:kind]``), and compares the verdicts task by task (validated or not, and the set of verifier
statuses). A task is *touched* when its events in the placeholder store hold a ``[REDACTED:`` mark: only
there can the two runs legitimately differ. It prints, per project and in total:

- tasks, touched tasks, validated tasks under each style;
- tasks whose verdict differs, split into touched (the redaction's effect: with placeholders a patch or
  a test no longer sees the text it was written for) and untouched (replay noise: timing, network
  refusals; a defect of the pipeline when it shows up every time);
- the touched tasks validated under pseudonyms, and under placeholders.

Redaction cannot be turned off (there is no switch that lets a secret through), so placeholders are the
other arm: a task that validates with pseudonyms but not with placeholders is one the pseudonyms kept.

    python bench/redaction_replay.py --corpus DIR [--project owner__name ...] [--out /tmp/logmine-redaction-replay]
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).parent))
from real_yield import _run_project, corpus_parser, projects_or_exit  # noqa: E402

_STYLES = ("pseudonym", "placeholder")

_VERDICTS_SQL = """
SELECT t.task_id, coalesce(bool_or(v.status = 'validated'), false) AS validated,
       list_sort(list_distinct(list(coalesce(v.status, '-')))) AS statuses
FROM tasks t LEFT JOIN verifiers v USING (task_id) GROUP BY t.task_id
"""

_TOUCHED_SQL = """
SELECT DISTINCT t.task_id FROM tasks t JOIN events e
  ON e.session_id = t.session_id AND e.seq BETWEEN t.first_seq AND t.last_seq
WHERE concat_ws(' ', e.text, e.arguments, e.command) LIKE '%[REDACTED:%'
"""


def main() -> None:
    args = corpus_parser(__doc__.split("\n\n")[0], "/tmp/logmine-redaction-replay").parse_args()
    args.no_export = True
    corpus = args.corpus.resolve()
    projects = projects_or_exit(corpus, args.project, "redaction_replay")
    rows = []
    for name, sessions in projects.items():
        started = time.monotonic()
        stores = {}
        for style in _STYLES:
            run = copy.copy(args)
            run.redact_style = style
            work = args.out / style / name
            _run_project(name, sessions, corpus / "clones" / name, run, work=work)
            stores[style] = work / "store"
        row = _compare(name, stores)
        row["seconds"] = round(time.monotonic() - started, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    _report(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "redaction_replay.json").write_text(json.dumps(rows, indent=2))
    print(f"figures: {args.out / 'redaction_replay.json'}")


def _query(store: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _compare(name: str, stores: dict[str, Path]) -> dict:
    verdicts = {style: {r[0]: (r[1], tuple(r[2])) for r in _query(store, _VERDICTS_SQL)} for style, store in stores.items()}
    touched = {r[0] for r in _query(stores["placeholder"], _TOUCHED_SQL)}
    pseudo, placeholder = verdicts["pseudonym"], verdicts["placeholder"]
    differ = sorted(t for t in pseudo.keys() | placeholder.keys() if pseudo.get(t) != placeholder.get(t))
    return {
        "project": name, "tasks": len(pseudo), "touched": len(touched),
        "validated_pseudonym": sum(v[0] for v in pseudo.values()),
        "validated_placeholder": sum(v[0] for v in placeholder.values()),
        "touched_validated_pseudonym": sum(pseudo.get(t, (False,))[0] for t in touched),
        "touched_validated_placeholder": sum(placeholder.get(t, (False,))[0] for t in touched),
        "differ_touched": [t for t in differ if t in touched],
        "differ_untouched": [t for t in differ if t not in touched],
        "detail": {t: {"pseudonym": pseudo.get(t), "placeholder": placeholder.get(t)} for t in differ},
    }


def _report(rows: list[dict]) -> None:
    head = f"{'project':38} {'tasks':>5} {'touched':>7} {'valid ps':>8} {'valid ph':>8} {'t-valid ps':>10} " \
           f"{'t-valid ph':>10} {'diff touched':>12} {'diff other':>10}"
    print("\n" + head)
    keys = ("tasks", "touched", "validated_pseudonym", "validated_placeholder", "touched_validated_pseudonym",
            "touched_validated_placeholder")
    total = dict.fromkeys(keys + ("differ_touched", "differ_untouched"), 0)
    for r in rows:
        cells = [r[k] for k in keys] + [len(r["differ_touched"]), len(r["differ_untouched"])]
        print(f"{r['project'][:38]:38} {cells[0]:>5} {cells[1]:>7} {cells[2]:>8} {cells[3]:>8} {cells[4]:>10} "
              f"{cells[5]:>10} {cells[6]:>12} {cells[7]:>10}")
        for k in keys:
            total[k] += r[k]
        total["differ_touched"] += cells[6]
        total["differ_untouched"] += cells[7]
    c = [total[k] for k in keys] + [total["differ_touched"], total["differ_untouched"]]
    print(f"{'TOTAL':38} {c[0]:>5} {c[1]:>7} {c[2]:>8} {c[3]:>8} {c[4]:>10} {c[5]:>10} {c[6]:>12} {c[7]:>10}")


if __name__ == "__main__":
    main()
