"""The yield funnel: how many sessions became validated tasks and reproduced bundles, and why the rest stopped.

Steps, each counted from the store by SQL (``docs/verify.md``, "Yield funnel"):

    sessions → sessions with tasks → tasks → tasks with verifier candidates → rebuilt
    → environment provided → validated → bundle reproduced (only given a ``logmine export tmax`` directory)

Every session or task that does not reach the next step stopped at exactly one step, for one reason:
the one its stage recorded (``segmented.no_task_reason``, ``verified.reason``, the candidates'
``status_reason``, the export's rejects). Reasons are free text naming paths and commits; they are
grouped into categories by :data:`REASONS`, one ordered table of (regex, category, fix hint), the
first match winning, else the reason's first clause. A pattern's ``what`` group is the reason's
subject (a repository path, an error type), shown with the category.

It lives in the export layer because its last step reads an export's files.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import duckdb
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from logmine.errors import LogmineError
from logmine.store import Store, fetch_dicts
from logmine.verify.records import STATUSES


class FunnelError(LogmineError, ValueError):
    """The export directory given is not a ``logmine export tmax`` output."""


@dataclass(frozen=True, slots=True)
class ReasonRule:
    pattern: re.Pattern
    category: str
    hint: str | None


def _rule(pattern: str, category: str, hint: str | None = None) -> ReasonRule:
    return ReasonRule(re.compile(pattern), category, hint)


_BY_DESIGN = "by design: nothing to do"
_BUG = "unexpected: report it with the reason (logmine yield --json)"
_FAILS_AFTER = r"^the candidate still fails after the replay \(.*"
_NO_ENV = r"^environment not provided: "
_OTHER_PYTHON = ("environment differs from the session's",
                 "verify where the session's interpreter is: --env-mode host on the machine that ran it")

#: Reason → (category, hint), first match wins; extend it here. Reasons that no rule matches are
#: grouped by their first clause (the text before " (" or ":"), without a hint.
REASONS: tuple[ReasonRule, ...] = (
    # a stage that has not run on these units yet
    _rule(r"^not segmented yet", "not segmented yet", "run `logmine segment`"),
    _rule(r"^unreadable: (?P<what>.+)", "session file unreadable", "run `logmine doctor --repair`"),
    _rule(r"^not verified yet", "not verified yet", "run `logmine verify`"),
    # segment: sessions without a task, tasks without a candidate
    _rule(r"^(?P<what>subagent\S*) session", "sub-agent session",
          "by design: its parent session holds the task"),
    _rule(r"^no genuine user request", "no genuine user request",
          "by design: injected context or follow-ups only"),
    _rule(r"^empty session", "empty session", _BY_DESIGN),
    _rule(r"^no tool call", "no tool call", "by design: answered in prose"),
    _rule(r"^aborted before any edit", "aborted before any edit or test", "by design: the user interrupted it"),
    _rule(r"^no patch edit and no test", "no patch edit, no test or check command",
          "a test runner of yours: [segment] extra_test_commands"),
    # rebuilding the start state
    _rule(r"^no (git )?commit recorded for the session", "no commit recorded",
          "no commit recorded, and none in the clone made before the session began: a clone with its history "
          "(a session before the first commit starts from nothing only where its `ls` showed its directory)"),
    _rule(r"^no cwd recorded for the session", "no cwd recorded", "--repo-search DIR (a folder of clones)"),
    _rule(r"^repository not found at (?P<what>.+?) \(", "repository not found", "--repo-map OLD=NEW or --repo-search DIR"),
    _rule(r"^(neither .*|(commit|ghost snapshot) \w+) is (not )?in the repository at (?P<what>.+?)( \(| and)",
          "commit missing from the clone", "fetch the commit, or --repo-search DIR with a clone that has it"),
    _rule(r"^(?P<what>[^(;]+?) is not a git repository and holds more", "plain directory too large",
          "--repo-map it to a git clone"),
    _rule(r"^(?P<what>[^(;]+?) is not a git repository", "not a git repository", "--plain-dirs (copied, credentials left out)"),
    _rule(r"^earlier task \d+ edited files by shell", "an earlier task edited files by shell",
          "by design: the start state is not in the log"),
    _rule(r"^an earlier task's patch does not apply", "an earlier task's patch does not apply",
          "the file it names was untracked at the start, or made by a command not replayed: "
          "[segment] extra_file_edit_patterns for a generator"),
    _rule(r"^the session ran in .* not a POSIX path", "cwd not a POSIX or Windows path",
          "map it with --repo-map RECORDED=PATH"),
    _rule(r"^a patch of .* does not apply: redaction replaced", "redaction changed a patch",
          "`logmine scan` the session: a redaction rule took code for a secret"),
    _rule(r"^a patch of .* does not apply after an earlier shell edit failed", "an earlier shell edit failed at replay",
          "the edit needs a tool or platform this host lacks (e.g. macOS `sed -i ''`)"),
    _rule(r"^start tree differed from", "started from uncommitted changes",
          "by design: the session began from uncommitted changes, not validatable"),
    _rule(r"^patch names a path outside the repository", "patch outside the repository", _BY_DESIGN),
    _rule(r"^git archive of \w+ failed|the clone lacks objects", "damaged clone", "re-clone, or git fetch --refetch"),
    _rule(r"^rebuild failed: (?P<what>\w+)", "rebuild failed", _BUG),
    # providing the environment (the last way tried decides)
    _rule(_NO_ENV + r".*timed out", "environment build timed out", "build once with network: docs/environments.md"),
    _rule(_NO_ENV + r".*(toolchain registry unreachable|offline|network)", "environment build needs network",
          "build once with network: docs/environments.md"),
    _rule(_NO_ENV + r".*no build recipe for (?P<what>\w+)", "no build recipe",
          "--env-mode host, with the dependencies installed in the live repository"),
    _rule(_NO_ENV + r"(?!.*built: ).*not in the live repository", "dependencies missing on this host",
          "install them in the live repository, or --env-mode built"),
    _rule(_NO_ENV + r".*(?P<what>docker|podman) is not installed", "container engine missing",
          "install it, or --backend bwrap"),
    _rule(_NO_ENV + r".*failed \(exit", "environment build failed", "see `logmine env show TASK`, or install the dependencies for --env-mode host"),
    _rule(_NO_ENV, "environment not provided", "docs/environments.md; --env-mode host|built|none"),
    _rule(r"^environment differs from the session's: it ran (?P<what>Python [\d.]+)", *_OTHER_PYTHON),
    _rule(r"^the environment lacks what it needs: .*Executable doesn't exist at \S*(?P<what>ms-playwright)",
          "browser not downloaded", "npx playwright install on this host (its browsers are bound read-only)"),
    _rule(r"^the environment lacks what it needs: .*the (?P<what>Cypress) binary is missing", "browser not downloaded",
          "npx cypress install on this host (its cache is bound read-only)"),
    _rule(r"^the environment lacks what it needs: (?P<what>[^(;]{1,80}?)\s*(\(|;|$)", "environment lacks a tool, "
          "package or service", "--env-mode host where its dependencies and services are, or build once with "
          "network: docs/environments.md"),
    _rule(r"toolchain registry unreachable", "toolchain registry unreachable",
          "build once with network: docs/environments.md"),
    # grading
    _rule(r"^sandbox could not start|^could not grade on the [a-z ]+: sandbox failed to start", "sandbox could not start",
          "check bwrap and user namespaces, or --backend docker|podman"),
    _rule(r"^could not grade on the (?P<what>start state|replayed state)", "could not grade",
          "a grading command timed out or crashed: --timeout SECONDS"),
    _rule(r"^verify failed: (?P<what>\w+)", "verify failed", _BUG),
    _rule(r"^the candidate already passes", "passes at start", "by design: it cannot tell the task's work apart"),
    _rule(_FAILS_AFTER + r"as in the session, whose last run", "fails as it did in the session",
          "by design: the session never saw it pass after its last run; another candidate may verify the task"),
    _rule(_FAILS_AFTER + r"the task changed the dependencies in (?P<what>\S+):", "the task changed its dependencies",
          "by design: what the task added needs an install the offline sandbox cannot make"),
    _rule(_FAILS_AFTER + r"the session's Python is not the replay's: it ran (?P<what>Python [\d.]+)", *_OTHER_PYTHON),
    _rule(_FAILS_AFTER + r"start tree differed from", "started from uncommitted changes",
          "by design: the session began from uncommitted changes, not validatable"),
    _rule(_FAILS_AFTER + r"replay: patch at seq \d+", "replay diverged: a patch did not apply",
          "a file the task edits was made by a command not replayed, or left the repository"),
    _rule(_FAILS_AFTER + r"ghost snapshot \w+ is not in the clone", "replayed from the header commit",
          "--repo-search DIR with a clone holding the session's ghost snapshots"),
    _rule(_FAILS_AFTER + r"replay: command at seq \d+", "replay diverged: a command did not run",
          "--timeout SECONDS (the sandbox has no network)"),
    _rule(r"^the candidate still fails after the replay", "still fails after the replay",
          "the task never made it pass, or it needed network (the sandbox has none)"),
    # the TMax export and its bundle check
    _rule(r"^not in the export", "not in the export", "run `logmine export tmax` again: its summary lists rejects"),
    _rule(r"^solution incomplete", "solution incomplete", "a patch did not apply to the redacted seeds"),
    _rule(r"^its verifiers check only files the seeds leave out", "checks only files the seeds leave out",
          "by design: an agent's own files and credential files are never exported"),
    _rule(r"^does not reproduce", "bundle does not reproduce",
          "the seeds lack what the task used (.env left out, network)"),
    _rule(r"^bundle check could not run", "bundle check could not run", "check the bwrap sandbox, then export again"),
    _rule(r"^start state not rebuilt", "export could not rebuild",
          "give `logmine export tmax` verify's --repo-map/--repo-search/--plain-dirs"),
    _rule(r"^invalid row", "invalid row", _BUG),
    _rule(r"^export failed: (?P<what>\w+)", "export failed", _BUG),
)


def categorize(reason: str | None) -> tuple[str, str | None, str | None]:
    """(category, fix hint, subject) of one free-text reason, by :data:`REASONS`."""
    text = " ".join((reason or "unknown").split())
    for rule in REASONS:
        match = rule.pattern.search(text)
        if match:
            return rule.category, rule.hint, match.groupdict().get("what")
    return re.split(r" \(|:", text, maxsplit=1)[0].strip() or text, None, None


@dataclass(frozen=True, slots=True)
class Reason:
    """Why ``count`` units of the previous step did not reach a step."""

    category: str
    count: int
    hint: str | None
    subjects: tuple[tuple[str, int], ...] = ()  # what it names (a path, an error type), most common first


@dataclass(frozen=True, slots=True)
class Step:
    key: str  # stable name: sessions, sessions_with_tasks, tasks, with_candidates, rebuilt, environment, ...
    label: str
    unit: str  # sessions | tasks
    count: int
    stopped: tuple[Reason, ...] = ()  # why the previous step's other units stopped here, most common first
    candidates: int | None = None  # the step's verifier candidates (all of them / the validated ones)


@dataclass(frozen=True, slots=True)
class EnvironmentBuilds:
    """The built environments behind the tasks' latest verification: one build per recipe key, reused
    by every other task whose manifests are the same (docs/environments.md)."""

    tasks: int  # tasks whose environment was built (or reused)
    environments: int  # distinct recipe keys among them
    built: int  # tasks whose call built it
    reused: int  # tasks that found it in the cache
    build_s: float  # seconds spent building

    @property
    def reuse(self) -> float | None:
        return self.reused / self.tasks if self.tasks else None

    def to_dict(self) -> dict:
        return {"tasks": self.tasks, "environments": self.environments, "built": self.built, "reused": self.reused,
                "reuse": round(self.reuse, 4) if self.reuse is not None else None, "build_s": round(self.build_s, 1)}


@dataclass(frozen=True, slots=True)
class Funnel:
    store: Path
    steps: tuple[Step, ...]
    candidates: dict[str, int]  # every candidate by verification status ("unverified" when it has none)
    export: Path | None = None
    other_rows: int = 0  # export rows that are not a validated task of this store (unvalidated, stale)
    builds: EnvironmentBuilds | None = None  # the built environments of the tasks (None: none built)

    def step(self, key: str) -> Step:
        return next(s for s in self.steps if s.key == key)

    def to_dict(self) -> dict:
        """The JSON form (``docs/verify.md``, "Yield funnel")."""
        steps = []
        for before, step in zip((None, *self.steps), self.steps):
            steps.append({
                "step": step.key, "unit": step.unit, "count": step.count,
                "share": round(step.count / before.count, 4) if before and before.count else None,
                **({"candidates": step.candidates} if step.candidates is not None else {}),
                "stopped": [{"reason": r.category, "count": r.count, "hint": r.hint,
                             "subjects": [{"subject": s, "count": n} for s, n in r.subjects]} for r in step.stopped],
            })
        return {"store": str(self.store), "export": str(self.export) if self.export else None,
                "other_export_rows": self.other_rows, "candidates": self.candidates, "steps": steps,
                "environment_builds": self.builds.to_dict() if self.builds else None}


_SESSIONS_SQL = """
SELECT CASE WHEN s.n_tasks > 0 THEN NULL
            ELSE coalesce(s.no_task_reason, CASE WHEN f.error IS NOT NULL THEN 'unreadable: ' || f.error
                                                 ELSE 'not segmented yet' END) END AS reason,
       count(*) AS n
FROM files f LEFT JOIN segmented s USING (source_path)
WHERE f.format IN ('g0', 'g1', 'g2', 'claude')  -- session files (history.jsonl holds prompts only)
GROUP BY ALL
"""

# Each task's step where it stopped (NULL: validated) and why. A task stopped at validation is told
# by one of its candidates: unscored first (an infrastructure failure hides the rest), then fails_after.
_TASK_STOPS = """
WITH cand AS (
    SELECT task_id, seg_gen, count(*) FILTER (WHERE status = 'validated') AS validated,
           arg_min(status_reason, CASE status WHEN 'unscored' THEN 0 WHEN 'fails_after' THEN 1 ELSE 2 END)
               FILTER (WHERE status IS DISTINCT FROM 'validated') AS why_not
    FROM verifiers GROUP BY ALL),
stops AS (
    SELECT t.task_id, t.n_candidates, coalesce(c.validated, 0) AS validated,
        CASE WHEN t.n_candidates = 0 THEN 'with_candidates'
             WHEN v.task_id IS NULL OR v.seg_gen <> t.seg_gen OR NOT v.rebuilt THEN 'rebuilt'
             WHEN e.mode IS NULL OR e.mode = 'unavailable' THEN 'environment'
             WHEN coalesce(c.validated, 0) = 0 THEN 'validated' END AS stopped_at,
        CASE WHEN t.n_candidates = 0 THEN
                 CASE WHEN t.n_tool_calls = 0 THEN 'no tool call'  -- as segment.run._why_no_candidate
                      WHEN t.aborted THEN 'aborted before any edit or test'
                      ELSE 'no patch edit and no test or check command' END
             WHEN v.task_id IS NULL OR v.seg_gen <> t.seg_gen THEN 'not verified yet'
             WHEN NOT v.rebuilt THEN v.reason
             WHEN coalesce(c.validated, 0) = 0 THEN c.why_not END AS reason
    FROM tasks t
    LEFT JOIN verified v USING (task_id)
    LEFT JOIN environments e ON e.task_id = t.task_id AND e.verify_gen = v.verify_gen
    LEFT JOIN cand c ON c.task_id = t.task_id AND c.seg_gen = t.seg_gen)
"""
_TASKS_SQL = _TASK_STOPS + """
SELECT stopped_at, reason, count(*) AS n, sum(n_candidates)::BIGINT AS candidates,
       sum(validated)::BIGINT AS validated
FROM stops GROUP BY ALL
"""
_EXPORT_SQL = _TASK_STOPS + """,
exported AS (SELECT DISTINCT ground_truth AS task_id FROM read_parquet($rows)),
rejects AS (SELECT task_id, any_value(reason) AS reason FROM (
    SELECT unnest($ids::VARCHAR[]) AS task_id, unnest($reasons::VARCHAR[]) AS reason {rejects_file}) GROUP BY ALL)
SELECT CASE WHEN x.task_id IS NULL THEN coalesce(j.reason, 'not in the export') END AS reason, count(*) AS n
FROM stops s LEFT JOIN exported x USING (task_id) LEFT JOIN rejects j USING (task_id)
WHERE s.stopped_at IS NULL GROUP BY ALL
"""
_OTHER_ROWS_SQL = _TASK_STOPS + """
SELECT count(*) FROM read_parquet($rows) WHERE ground_truth NOT IN (SELECT task_id FROM stops WHERE stopped_at IS NULL)
"""
_BUILDS_SQL = """
WITH latest AS (SELECT * FROM environments
                QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY verify_gen DESC) = 1)
SELECT count(*) AS tasks, count(DISTINCT recipe_key) AS environments,
       count(*) FILTER (WHERE NOT coalesce(cached, false)) AS built, count(*) FILTER (WHERE cached) AS reused,
       coalesce(sum(provide_s) FILTER (WHERE NOT coalesce(cached, false)), 0) AS build_s
FROM latest WHERE mode = 'built' AND recipe_key IS NOT NULL
"""
_CANDIDATES_SQL = "SELECT coalesce(status, 'unverified') AS status, count(*) AS n FROM verifiers GROUP BY ALL"
_TASK_STEPS = (("with_candidates", "tasks with candidates"), ("rebuilt", "rebuilt"),
               ("environment", "environment provided"), ("validated", "validated"))


def read_funnel(path: Path, export: Path | None = None, rejects: Mapping[str, str] | None = None) -> Funnel:
    """:func:`build_funnel` of the store at ``path``, opened read-only (``StoreError`` when there is none)."""
    with Store(path, read_only=True) as store:
        return build_funnel(store, export, rejects)


def build_funnel(store: Store, export: Path | None = None, rejects: Mapping[str, str] | None = None) -> Funnel:
    """The store's yield funnel. ``export``: a ``logmine export tmax`` output directory, for the last
    step (its rows, and its ``rejects.parquet`` when it wrote one); ``rejects``: task id → why its
    bundle was not exported, from a caller that holds them (``logmine run``)."""
    con = store.con
    sessions = fetch_dicts(con.execute(_SESSIONS_SQL))
    tasks = fetch_dicts(con.execute(_TASKS_SQL))
    n_sessions = sum(r["n"] for r in sessions)
    steps = [Step("sessions", "sessions", "sessions", n_sessions),
             Step("sessions_with_tasks", "sessions with tasks", "sessions",
                  sum(r["n"] for r in sessions if r["reason"] is None),
                  _reasons((r["reason"], r["n"]) for r in sessions if r["reason"] is not None)),
             Step("tasks", "tasks", "tasks", sum(r["n"] for r in tasks))]
    remaining = list(tasks)
    for key, label in _TASK_STEPS:
        stopped = [r for r in remaining if r["stopped_at"] == key]
        remaining = [r for r in remaining if r["stopped_at"] != key]
        candidates = {"with_candidates": sum(r["candidates"] for r in remaining),
                      "validated": sum(r["validated"] for r in remaining)}.get(key)
        steps.append(Step(key, label, "tasks", sum(r["n"] for r in remaining),
                          _reasons((r["reason"], r["n"]) for r in stopped), candidates))
    other_rows = 0
    if export is not None:
        step, other_rows = _export_step(store, export, rejects or {})
        steps.append(step)
    counts = dict(con.execute(_CANDIDATES_SQL).fetchall())
    candidates = {s: counts.pop(s) for s in (*STATUSES, "unverified") if s in counts} | counts
    built = fetch_dicts(con.execute(_BUILDS_SQL))[0]
    builds = EnvironmentBuilds(**built) if built["tasks"] else None
    return Funnel(store.root, tuple(steps), candidates, export, other_rows, builds)


def _export_step(store: Store, export: Path, rejects: Mapping[str, str]) -> tuple[Step, int]:
    rows = sorted((export / "data").glob("*.parquet"))
    if not rows:
        raise FunnelError(f"no TMax export at {export}: it holds no data/*.parquet", "run `logmine export tmax --out DIR`")
    params = {"rows": [str(p) for p in rows], "ids": list(rejects), "reasons": list(rejects.values())}
    rejects_file = export / "rejects.parquet"
    union = ""
    if rejects_file.is_file():
        union = "UNION ALL SELECT task_id, reason FROM read_parquet($rejects_file)"
        params["rejects_file"] = str(rejects_file)
    try:
        found = fetch_dicts(store.con.execute(_EXPORT_SQL.format(rejects_file=union), params))
        other = store.con.execute(_OTHER_ROWS_SQL, {"rows": params["rows"]}).fetchone()[0]
    except duckdb.Error as exc:  # not the files export tmax writes (no ground_truth, no task_id/reason)
        raise FunnelError(f"cannot read the TMax export at {export}: {str(exc).splitlines()[0]}") from exc
    step = Step("reproduced", "bundle reproduced", "tasks", sum(r["n"] for r in found if r["reason"] is None),
                _reasons((r["reason"], r["n"]) for r in found if r["reason"] is not None))
    return step, other


def _reasons(counted) -> tuple[Reason, ...]:
    """Group (reason, count) pairs by category, most common first."""
    totals: Counter = Counter()
    hints: dict[str, str | None] = {}
    subjects: dict[str, Counter] = {}
    for reason, n in counted:
        category, hint, subject = categorize(reason)
        totals[category] += n
        hints[category] = hint
        if subject:
            subjects.setdefault(category, Counter())[subject] += n
    return tuple(Reason(c, n, hints[c], tuple(subjects.get(c, Counter()).most_common()))
                 for c, n in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))


def render_funnel(console: Console, funnel: Funnel, top: int = 4) -> None:
    """One table: each step's count and share of the previous step, then (at most ``top`` per step)
    why the others stopped there, with the flag or action that would fix it."""
    table = Table("step", "count", "share", "lost", "why → fix", title=f"yield funnel of {funnel.store}",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for column in table.columns[:4]:
        column.no_wrap, column.justify = True, "left" if column.header == "step" else "right"
    for before, step in zip((None, *funnel.steps), funnel.steps):
        rows = [(str(r.count), _why(r, r.hint)) for r in step.stopped[:top]]
        rest = step.stopped[top:]
        if rest:
            rows.append((str(sum(r.count for r in rest)), _why(f"{len(rest)} other reasons", "logmine yield --json")))
        rows = rows or [("", Text())]
        table.add_row(Text(step.label, style="bold"), str(step.count), _share(before, step), *rows[0])
        for row in rows[1:]:
            table.add_row("", "", "", *row)
    console.print(table)
    statuses = ", ".join(f"{s.replace('_', ' ')} {n}" for s, n in funnel.candidates.items())
    console.print(f"candidates: {sum(funnel.candidates.values())}" + (f" ({statuses})" if statuses else ""),
                  highlight=False, soft_wrap=True)
    if funnel.builds:
        b = funnel.builds
        console.print(f"built environments: {b.environments} for {b.tasks} task(s); built {b.built} time(s) in "
                      f"{b.build_s:.0f} s, reused from the cache {b.reused} time(s) ({b.reuse:.0%})",
                      highlight=False, soft_wrap=True)
    if funnel.other_rows:
        console.print(f"the export also holds {funnel.other_rows} row(s) that are not validated tasks of this "
                      "store (--include-unvalidated, or an older store)", highlight=False, soft_wrap=True)


def _share(before: Step | None, step: Step) -> str:
    if before is None or not before.count:
        return ""
    if before.unit != step.unit:
        return f"{step.count / before.count:.1f}×"
    return f"{100 * step.count / before.count:.0f}%"


def _why(reason: Reason | str, hint: str | None) -> Text:
    """The reason, with its two most common subjects, then its fix (dimmed)."""
    text = reason if isinstance(reason, str) else reason.category
    if not isinstance(reason, str) and reason.subjects:
        named = ", ".join(s if len(reason.subjects) == 1 else f"{s} ({n})" for s, n in reason.subjects[:2])
        text += f": {named}" + (", …" if len(reason.subjects) > 2 else "")
    return Text(text) + (Text(f" → {hint}", style="dim") if hint else Text())
