"""Yield on real sessions: how many of them become validated tasks, and where the rest stop.

Runs the whole pipeline as a new user would — ``logmine ingest``, ``segment``, ``verify`` (mapping each
recorded cwd to a fresh clone with ``--repo-map``), ``export tmax`` (every bundle checked 0 -> 1) and
``logmine yield`` — once per project, and prints the funnel per project with the issue's targets:

- tasks rebuilt (of tasks with candidates), target >= 90%;
- tasks whose session showed a test failing and later passing (a fail->pass ``test_command``) that are
  validated, target >= 80%;
- tasks validated on a start tree known to be dirty, target 0 (tasks started from a commit the author
  made during the session, ``later``, are counted apart: docs/verify.md);
- exported bundles that reproduce 0 -> 1, target all.

``--corpus DIR`` holds ``sessions/<project>/*.jsonl`` (Codex session files) and
``clones/<project>/`` (a fresh ``git clone`` of the project's repository: no ``.venv``, no
``node_modules``), ``<project>`` being ``owner__name``; an optional ``manifest.json`` (a list of
``{"project": "owner/name", "session": "sessions/…/file.jsonl"}``) narrows the sessions taken. How to
make one is in ``bench/README.md``; ``--fetch`` makes it first from ``bench/real_yield_sources.json`` (104
sessions of 14 projects; git and github.com needed).

    python bench/real_yield.py --corpus ~/real-sessions [--project owner__name ...] [--out DIR] [--timeout 60]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path, PurePosixPath

import duckdb

sys.path.insert(0, str(Path(__file__).parent))
from corpus import fetch  # noqa: E402


def corpus_parser(description: str, out: str) -> argparse.ArgumentParser:
    """The options every script over such a corpus takes: ``--corpus``, ``--project``, ``--out``,
    ``--timeout``, ``--jobs``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--corpus", type=Path, required=True, help="sessions/<project>/ and clones/<project>/")
    parser.add_argument("--project", action="append", help="only these projects (owner__name), repeatable")
    parser.add_argument("--out", type=Path, default=Path(out), help="stores and exports")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per replayed or grading command")
    parser.add_argument("--jobs", type=int, default=2)
    return parser


def main() -> None:
    parser = corpus_parser(__doc__.split("\n\n")[0], "/tmp/logmine-real-yield")
    parser.add_argument("--fetch", action="store_true",
                        help="first make the corpus in --corpus from bench/real_yield_sources.json (git, github.com)")
    parser.add_argument("--no-export", action="store_true", help="stop after verify (no bundle checks)")
    parser.add_argument("--redact-style", choices=["pseudonym", "placeholder"], default="pseudonym",
                        help="what a secret becomes in the store (logmine ingest --redact-style)")
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    if args.fetch:
        fetch(json.loads((Path(__file__).parent / "real_yield_sources.json").read_text()), corpus, clones=True)
    projects = projects_or_exit(corpus, args.project, "real_yield")
    results = []
    for name, sessions in projects.items():
        started = time.monotonic()
        print(f"== {name}: {len(sessions)} session(s)", flush=True)
        figures = _run_project(name, sessions, corpus / "clones" / name, args)
        figures["seconds"] = round(time.monotonic() - started, 1)
        results.append(figures)
        print(json.dumps(figures), flush=True)
    _report(results)
    (args.out / "real_yield.json").write_text(json.dumps(results, indent=2))
    print(f"figures: {args.out / 'real_yield.json'}")


def projects_or_exit(corpus: Path, only: list[str] | None, script: str) -> dict[str, list[Path]]:
    """:func:`_projects`, or the script ends with a one-line error when there is none."""
    projects = _projects(corpus, only)
    if not projects:
        sys.exit(f"{script}: no project with sessions under {corpus}/sessions and a clone under {corpus}/clones")
    return projects


def _projects(corpus: Path, only: list[str] | None) -> dict[str, list[Path]]:
    manifest = corpus / "manifest.json"
    listed = None
    if manifest.exists():
        listed = {corpus / e["session"] for e in json.loads(manifest.read_text())}
    found: dict[str, list[Path]] = {}
    if not (corpus / "sessions").is_dir():
        return found
    for folder in sorted((corpus / "sessions").iterdir()):
        if not folder.is_dir() or (only and folder.name not in only) or not (corpus / "clones" / folder.name).is_dir():
            continue
        files = sorted(p for p in folder.rglob("*.jsonl") if listed is None or p in listed)
        if files:
            found[folder.name] = files
    return found


def _logmine(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "logmine", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        print(f"  logmine {args[0]} exited {done.returncode}: {(done.stderr or done.stdout).strip()[-600:]}")
    return done


def _repo_maps(store: Path, clone: Path) -> list[str]:
    """``OLD=NEW`` for every recorded cwd: the longest tail of the cwd that is a directory of the clone
    names the repository root (``/home/u/ship/web`` -> ``/home/u/ship=CLONE`` when the clone has ``web/``)."""
    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True)
    try:
        cwds = [r[0] for r in con.execute("SELECT DISTINCT cwd FROM sessions WHERE cwd IS NOT NULL").fetchall()]
    finally:
        con.close()
    maps = {}
    for cwd in cwds:
        parts = PurePosixPath(cwd).parts
        root = cwd
        for i in range(1, len(parts)):
            if (clone.joinpath(*parts[i:])).is_dir():
                root = str(PurePosixPath(*parts[:i]))
                break
        maps[root] = str(clone)
    return [f"{old}={new}" for old, new in sorted(maps.items())]


def _run_project(name: str, sessions: list[Path], clone: Path, args, work: Path | None = None) -> dict:
    work = work or args.out / name
    store, tmax = work / "store", work / "tmax"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir(parents=True)
    _logmine("ingest", *map(str, sessions), "--store", str(store), "--redact-style", args.redact_style, "--quiet")
    _logmine("segment", "--store", str(store), "--quiet")
    maps = [flag for m in _repo_maps(store, clone) for flag in ("--repo-map", m)]
    _logmine("verify", "--store", str(store), *maps, "--timeout", str(args.timeout), "--jobs", str(args.jobs), "--quiet")
    exported = None
    if not args.no_export:
        _logmine("export", "tmax", "--store", str(store), "--out", str(tmax), *maps)
        rows = tmax / "data" / "train-00000-of-00001.parquet"
        exported = _count(f"SELECT count(*) FROM '{rows}'") if rows.exists() else 0
    figures = {"project": name, "sessions": len(sessions), **_targets(store), "bundles_reproduced": exported}
    funnel = _logmine("yield", "--store", str(store), *(["--export", str(tmax)] if exported is not None else []), "--json")
    figures["funnel"] = json.loads(funnel.stdout) if funnel.returncode == 0 and funnel.stdout.strip() else None
    return figures


def _count(sql: str, store: Path | None = None) -> int:
    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True) if store else duckdb.connect()
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


_TARGETS_SQL = """
WITH cand AS (SELECT task_id, kind, status, status_reason, fail_to_pass FROM verifiers),
per_task AS (
    SELECT t.task_id, t.n_candidates > 0 AS has_candidates, v.rebuilt,
           bool_or(c.kind = 'test_command' AND c.fail_to_pass) AS fail_to_pass,
           bool_or(c.status = 'validated') AS validated,
           bool_or(c.kind = 'test_command' AND c.fail_to_pass AND c.status = 'validated') AS f2p_validated,
           bool_or(c.kind = 'test_command' AND c.fail_to_pass AND c.status = 'passes_at_start') AS f2p_at_start,
           bool_or(c.status_reason LIKE 'start tree differed%') AS dirty,
           bool_or(c.status_reason LIKE 'no commit recorded for the session, and the repository%') AS no_start,
           coalesce(v.reason LIKE 'started from later commit%', false) AS later
    FROM tasks t LEFT JOIN verified v USING (task_id) LEFT JOIN cand c USING (task_id) GROUP BY ALL)
SELECT count(*) AS tasks, count(*) FILTER (has_candidates) AS with_candidates,
       count(*) FILTER (rebuilt) AS rebuilt, count(*) FILTER (fail_to_pass) AS fail_to_pass,
       count(*) FILTER (f2p_validated) AS fail_to_pass_validated, count(*) FILTER (validated) AS validated,
       count(*) FILTER (fail_to_pass AND validated) AS fail_to_pass_task_validated,
       count(*) FILTER (dirty) AS dirty_start, count(*) FILTER (no_start) AS no_start,
       count(*) FILTER (fail_to_pass AND NOT dirty AND NOT no_start) AS fail_to_pass_startable,
       count(*) FILTER (f2p_validated AND NOT dirty) AS fail_to_pass_startable_validated,
       count(*) FILTER (f2p_at_start AND NOT f2p_validated AND NOT dirty) AS fail_to_pass_at_start,
       count(*) FILTER (later) AS later_commit,
       count(*) FILTER (later AND validated) AS later_validated,
       count(*) FILTER (validated AND task_id IN (SELECT task_id FROM per_task p2 WHERE p2.dirty)) AS validated_dirty
FROM per_task
"""


def _targets(store: Path) -> dict:
    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True)
    try:
        cur = con.execute(_TARGETS_SQL)
        row = dict(zip([d[0] for d in cur.description], cur.fetchone()))
        cur = con.execute("SELECT status_reason, count(*) AS n FROM verifiers WHERE status = 'not_rebuilt' "
                          "GROUP BY ALL ORDER BY n DESC LIMIT 5")
        row["not_rebuilt_reasons"] = {r[0][:140]: r[1] for r in cur.fetchall()}
    finally:
        con.close()
    return row


def _environment(r: dict) -> dict:
    """Tasks with their environment provided, and the built environments' reuse, from the funnel."""
    funnel = r.get("funnel") or {}
    steps = {s["step"]: s["count"] for s in funnel.get("steps", [])}
    builds = funnel.get("environment_builds") or {}
    return {"env": steps.get("environment", 0), "built": builds.get("built", 0), "reused": builds.get("reused", 0),
            "build_s": builds.get("build_s", 0.0)}


def _report(results: list[dict]) -> None:
    head = f"{'project':38} {'sess':>4} {'tasks':>5} {'w/cand':>6} {'rebuilt':>7} {'env':>4} {'f2p':>4} {'f2p ok':>6} " \
           f"{'valid':>5} {'dirty':>5} {'later':>5} {'bundles':>7} {'builds':>6} {'reused':>6}"
    print("\n" + head)
    total: dict[str, float] = {}
    for r in results:
        r.update(_environment(r))
        print(f"{r['project'][:38]:38} {r['sessions']:>4} {r['tasks']:>5} {r['with_candidates']:>6} {r['rebuilt']:>7} "
              f"{r['env']:>4} {r['fail_to_pass']:>4} {r['fail_to_pass_validated']:>6} {r['validated']:>5} "
              f"{r['dirty_start']:>5} {r['later_commit']:>5} {r['bundles_reproduced'] if r['bundles_reproduced'] is not None else '-':>7} "
              f"{r['built']:>6} {r['reused']:>6}")
        for key in ("sessions", "tasks", "with_candidates", "rebuilt", "env", "fail_to_pass", "fail_to_pass_validated",
                    "validated", "dirty_start", "validated_dirty", "later_commit", "later_validated", "built", "reused", "build_s",
                    "no_start", "fail_to_pass_startable", "fail_to_pass_startable_validated", "fail_to_pass_at_start",
                    "fail_to_pass_task_validated"):
            total[key] = total.get(key, 0) + r.get(key, 0)
    print(f"{'TOTAL':38} {total['sessions']:>4} {total['tasks']:>5} {total['with_candidates']:>6} {total['rebuilt']:>7} "
          f"{total['env']:>4} {total['fail_to_pass']:>4} {total['fail_to_pass_validated']:>6} {total['validated']:>5} "
          f"{total['dirty_start']:>5} {total['later_commit']:>5} {'':>7} {total['built']:>6} {total['reused']:>6}")
    share = lambda a, b: f"{a}/{b} = {a / b:.0%}" if b else f"{a}/0"  # noqa: E731
    print(f"environment provided: {share(total['env'], total['rebuilt'])} of rebuilt tasks; built environments: "
          f"{total['built']} build(s) in {total['build_s']:.0f} s, reused {share(total['reused'], total['built'] + total['reused'])}")
    clean = total["with_candidates"] - total["dirty_start"]
    print(f"rebuilt (target >= 90%): {share(total['rebuilt'], total['with_candidates'])} of tasks with candidates, "
          f"{share(total['rebuilt'], clean)} of those not known to start from a dirty tree, "
          f"{share(total['rebuilt'], clean - total['no_start'])} of those with a start to rebuild (a commit before "
          f"the session); fail->pass validated (target >= 80%): "
          f"{share(total['fail_to_pass_validated'], total['fail_to_pass'])}, "
          f"{share(total['fail_to_pass_startable_validated'], total['fail_to_pass_startable'])} of those neither "
          f"dirty nor without a start, "
          f"{share(total['fail_to_pass_startable_validated'], total['fail_to_pass_startable'] - total['fail_to_pass_at_start'])} "
          f"of those whose test fails on the start ({total['fail_to_pass_at_start']} pass there: the run the session "
          f"saw fail broke on the task's own earlier edit); tasks with a fail->pass test validated by any of "
          f"their candidates: {share(total['fail_to_pass_task_validated'], total['fail_to_pass'])}; "
          f"validated on a dirty start (target 0): {total['validated_dirty']}; started from a commit made during the "
          f"session: {total['later_commit']} task(s), {total['later_validated']} validated")


if __name__ == "__main__":
    main()
