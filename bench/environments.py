#!/usr/bin/env python3
"""Environments in verify: how many test-verifier tasks validate host vs built, what a build and a
cached reuse cost, and verify time per task.

Not a timed test: it prints figures (never fails).

    python bench/environments.py                 # demo, fixtures, and the three e2e scenarios
    python bench/environments.py --no-scenarios  # without the real Codex CLI
    python bench/environments.py --json

Corpora:

* ``demo``: ``logmine/demo`` (its shipped repository mapped as ``logmine run --demo`` does);
* ``fixtures``: ``tests/fixtures`` (sessions of four CLI generations on ``scenario-fixadd``, whose
  starting files are mapped in as a plain directory; the public sessions' repositories are not here,
  so their tasks stay ``not_rebuilt``);
* ``scenarios``: ``tests/e2e/env_scenarios.py`` (a ``.venv`` with a local package, ``node_modules``,
  pytest from a venv outside the repository), generated now with the real Codex CLI.

Per corpus, ``verify`` runs on copies of one segmented store: ``host`` (bubblewrap, ``env_mode=host``
with the live repositories as they are) and ``built`` (``env_mode=built``, the scenarios' ignored
directories moved away), the built one twice: on an empty environment cache (builds) and again with
``--redo`` (reuses). "Share" counts the tasks with a ``test_command`` candidate whose candidate is
``validated``. Build/reuse times are the ``environments.provide_s`` of the tasks that built / reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "e2e"))


def _query(store: Path, sql: str) -> list[dict]:
    import duckdb

    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
    finally:
        con.close()


def _segmented(paths: tuple[Path, ...], store: Path) -> Path:
    from logmine.ingest.run import IngestConfig, ingest
    from logmine.segment import SegmentConfig, segment

    ingest(IngestConfig(paths=paths, store=store, jobs=1))
    segment(SegmentConfig(store=store))
    return store


def demo(work: Path) -> dict:
    from logmine.demo import DEMO_INPUTS

    repos = work / "repos"
    shutil.copytree(ROOT / "logmine/demo/repos", repos)
    shutil.copytree(ROOT / "logmine/demo/scenario-fixadd/repo", repos / "fixadd")
    return {"store": _segmented(DEMO_INPUTS, work / "store"), "aside": [], "path": None,
            "repo_map": (("/home/dev/projects/calc", str(repos / "calc")),
                         ("/home/dev/projects/fixadd", str(repos / "fixadd")))}


def fixtures(work: Path) -> dict:
    base = ROOT / "tests" / "fixtures"
    repo, starting = work / "scenario-fixadd", base / "codex-generated" / "scenario-fixadd" / "repo"
    for path in starting.rglob("*"):  # the scenario's starting files (a plain directory, taken as it is)
        if not path.is_file():
            continue
        target = repo / path.relative_to(starting)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    sessions = tuple(p for p in (base / "codex-generated").iterdir() if p.name.startswith("codex-"))
    return {"store": _segmented((*sessions, base / "codex-public"), work / "store"),
            "repo_map": (("/home/dev/projects/fixadd", str(repo)),), "aside": [], "path": None}


def scenarios(work: Path) -> dict | None:
    import env_scenarios as es

    generated = []
    for name in es.SCENARIOS:
        try:
            generated.append(es.generate(name, work / name))
        except es.Unavailable as exc:
            print(f"scenario {name} skipped: {exc}", file=sys.stderr)
    if not generated:
        return None
    sessions = work / "sessions"
    for k, gen in enumerate(generated):
        shutil.copytree(gen.run.codex_home / "sessions", sessions / str(k))
    path = os.pathsep.join([str(g.tools_bin) for g in generated if g.tools_bin] + [os.environ["PATH"]])
    return {"store": _segmented((sessions,), work / "store"), "repo_map": (),
            "aside": [es.Aside(g, work / "aside" / g.name) for g in generated], "path": path}


def _verify(corpus: dict, store: Path, mode: str, cache: Path, redo: bool) -> dict:
    from logmine.verify import VerifyConfig, verify
    from logmine.verify.run import REDO_STATUSES

    env = {"LOGMINE_CACHE": str(cache), **({"PATH": corpus["path"]} if corpus["path"] else {})}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        started = time.monotonic()
        summary = verify(VerifyConfig(store=store, repo_map=corpus["repo_map"], env_mode=mode,
                                      redo=REDO_STATUSES if redo else ()))
        seconds = time.monotonic() - started
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return {"tasks": summary.tasks, "seconds": seconds, **_shares(store)}


def _shares(store: Path) -> dict:
    rows = _query(store, "SELECT task_id, bool_or(status = 'validated') AS ok, list(DISTINCT status) AS st "
                         "FROM verifiers WHERE kind = 'test_command' GROUP BY task_id")
    envs = _query(store, "SELECT provide_s, cached FROM environments WHERE mode = 'built'")
    built = [e["provide_s"] for e in envs if e["cached"] is False and e["provide_s"] is not None]
    reused = [e["provide_s"] for e in envs if e["cached"] and e["provide_s"] is not None]
    statuses: dict[str, int] = {}
    for row in rows:
        if not row["ok"]:
            for s in row["st"]:
                statuses[s] = statuses.get(s, 0) + 1
    return {"test_tasks": len(rows), "validated": sum(r["ok"] for r in rows), "not_validated": statuses,
            "build_s": max(built) if built else None, "reuse_s": max(reused) if reused else None}


def measure(name: str, corpus: dict, work: Path) -> dict:
    host_store = work / f"{name}-host"
    shutil.copytree(corpus["store"], host_store)
    result = {"host": _verify(corpus, host_store, "host", work / "cache-host", False)}
    built_store = work / f"{name}-built"
    shutil.copytree(corpus["store"], built_store)
    with ExitStack() as stack:
        for aside in corpus["aside"]:
            stack.enter_context(aside)
        result["built (cold cache)"] = _verify(corpus, built_store, "built", work / "cache", False)
        result["built (warm cache)"] = _verify(corpus, built_store, "built", work / "cache", True)
    return result


def _fmt(x, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def table(results: dict) -> str:
    head = f"{'corpus':<10} {'mode':<19} {'test tasks':>10} {'validated':>10} {'share':>6} " \
           f"{'verify s/task':>13} {'build s':>8} {'reuse s':>8}  not validated"
    lines = [head, "-" * len(head)]
    for corpus, modes in results.items():
        for mode, r in modes.items():
            share = r["validated"] / r["test_tasks"] if r["test_tasks"] else None
            per_task = r["seconds"] / r["tasks"] if r["tasks"] else None
            lines.append(f"{corpus:<10} {mode:<19} {r['test_tasks']:>10} {r['validated']:>10} "
                         f"{_fmt(share, '.0%'):>6} {_fmt(per_task, '.2f'):>13} {_fmt(r['build_s']):>8} "
                         f"{_fmt(r['reuse_s'], '.3f'):>8}  {r['not_validated'] or ''}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-scenarios", action="store_true", help="skip the real-CLI scenarios")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        sys.exit("bench/environments.py needs bubblewrap (bwrap)")
    results = {}
    with tempfile.TemporaryDirectory(prefix="logmine-bench-env-") as tmp:
        corpora = [("demo", demo), ("fixtures", fixtures)] + ([] if args.no_scenarios else [("scenarios", scenarios)])
        for name, make in corpora:
            work = Path(tmp) / name
            work.mkdir()
            corpus = make(work)
            if corpus is not None:
                results[name] = measure(name, corpus, work)
        subprocess.run(["chmod", "-R", "u+w", tmp], check=False)  # venvs and prefixes: removable
    print(json.dumps(results, indent=1, default=str) if args.json else table(results))


if __name__ == "__main__":
    main()
