"""End to end: the real Codex CLI (npm) -> session files -> logmine ingest -> catalog.

A scripted Responses API (tests/e2e/codex_driver.py) makes the real CLI run the
``fixadd_secrets`` scenario: a failing unittest fixed by apply_patch and rerun,
then (``exec resume``) a second turn adding a function, a test file and deleting
a scratch file, with FAKE secrets planted in a prompt, in a command's output and
in a command's arguments.  What logmine ingested is compared with what the
script made the CLI do.

The CLI binaries are looked up at ``<repo>/.ci/codex/<version>/node_modules/.bin/codex``
(``.ci/install-codex.sh`` installs them) or under ``$LOGMINE_CODEX_PREFIX/<version>/...``;
a missing binary skips the test.  Run with ``pytest -m e2e tests/e2e``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codex_driver as drv  # noqa: E402

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
# at least two CLI generations: 0.45 (shell argv tool, apply_patch through the shell tool)
# and >= 0.170 (unified exec_command, freeform apply_patch, paginated history)
VERSIONS = ("0.45.0", "0.171.0")
SCENARIO = "fixadd_secrets"
REDACTED = re.compile(r"\[REDACTED:[^\]\s]*\]")
PLACEHOLDER = re.compile(r"\$\{(FAKE_[A-Z0-9_]+)\}")


def codex_bin_for(version: str) -> Path:
    prefix = os.environ.get("LOGMINE_CODEX_PREFIX")
    root = Path(prefix) if prefix else REPO_ROOT / ".ci" / "codex"
    return root / version / "node_modules" / ".bin" / "codex"


# --------------------------------------------------------------------------
# fixtures: one CLI run and one ingest per version, shared by the tests below
# --------------------------------------------------------------------------

@dataclass
class Generated:
    version: str
    run: drv.ScenarioRun
    scenario: dict      # secrets filled in
    template: dict      # with the ${FAKE_...} placeholders
    secrets: dict[str, str]


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"codex-{v}")
def generated(request, tmp_path_factory) -> Generated:
    version = request.param
    binary = codex_bin_for(version)
    if not binary.exists():
        pytest.skip(f"Codex CLI {version} not installed at {binary} "
                    f"(run .ci/install-codex.sh or set LOGMINE_CODEX_PREFIX)")
    for tool in ("node", "git"):
        if shutil.which(tool) is None:
            pytest.skip(f"`{tool}` not on PATH; needed to run the Codex CLI {version}")
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"Codex CLI {version} at {binary} does not start: {e}")
    if out.returncode != 0 or version not in out.stdout:
        pytest.skip(f"Codex CLI at {binary} does not report version {version}: "
                    f"rc={out.returncode} stdout={out.stdout!r} stderr={out.stderr[-500:]!r}")

    secrets = drv.fake_secrets()
    scenario, repo_files, template = drv.load_scenario(SCENARIO, secrets)
    workdir = tmp_path_factory.mktemp(f"codex-{version}")
    run = drv.run_scenario(binary, scenario, repo_files, workdir, turn_timeout_s=240)
    return Generated(version, run, scenario, template, secrets)


@dataclass
class Ingested:
    gen: Generated
    store: Path
    summary: Any
    con: Any  # duckdb connection, read-only
    session_id: str

    def rows(self, sql: str, *params: Any) -> list[dict]:
        cur = self.con.execute(sql, list(params))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def context(self) -> str:
        return f"\nsummary: {self.summary!r}\n{self.gen.run.log(3000)}"

    def pseudonyms(self) -> dict[str, str]:
        """What each planted secret became in this store: its pseudonym under the store's key."""
        from logmine.redact import store_mask

        mask = store_mask(self.store)
        return {name: mask(self.gen.secrets[name], "secret") for name in self.gen.template["secrets"]}

    def pattern(self, template_text: str) -> re.Pattern:
        return redacted_pattern(template_text, self.pseudonyms())


def _require_run(gen: Generated) -> None:
    run = gen.run
    if not run.ok or len(run.turns) != len(gen.scenario["turns"]):
        pytest.fail(f"the Codex CLI {gen.version} did not complete the scenario\n{run.log()}",
                    pytrace=False)
    if not run.session_files:
        pytest.fail(f"the Codex CLI {gen.version} wrote no session file\n{run.log()}", pytrace=False)


@pytest.fixture(scope="module")
def ingested(generated: Generated, tmp_path_factory) -> Ingested:
    _require_run(generated)
    duckdb = pytest.importorskip("duckdb")
    from logmine.ingest.run import IngestConfig, ingest  # a missing ingest is a failure, not a skip

    store = tmp_path_factory.mktemp(f"store-{generated.version}") / "store"
    summary = ingest(IngestConfig(paths=(generated.run.codex_home / "sessions",), store=store))
    catalog = store / "catalog.duckdb"
    assert catalog.exists(), f"ingest wrote no {catalog}; summary={summary!r}"
    con = duckdb.connect(str(catalog), read_only=True)
    sessions = con.execute("SELECT session_id FROM sessions").fetchall()
    sid = sessions[0][0] if len(sessions) == 1 else None
    ing = Ingested(generated, store, summary, con, sid)
    yield ing
    con.close()


# --------------------------------------------------------------------------
# expectations from the scenario
# --------------------------------------------------------------------------

def redacted_pattern(template_text: str, pseudonyms: dict[str, str]) -> re.Pattern:
    """A regex for a scenario text after redaction: each ${FAKE_...} becomes its pseudonym
    (``pseudonyms``, by the secret's name) or one ``[REDACTED:...]``; the word the secret is glued
    to (``KEY=``) may have been redacted with it, the rest of the text must be verbatim."""
    parts = PLACEHOLDER.split(template_text)
    literals, names = parts[0::2], parts[1::2]
    out: list[str] = []
    for i, lit in enumerate(literals):
        head, body, tail = "", lit, ""
        if i > 0:  # follows a secret: its leading non-space run may be gone
            m = re.match(r"\S*", body)
            head, body = body[:m.end()], body[m.end():]
        if i < len(literals) - 1:  # precedes a secret: its trailing non-space run may be gone
            m = re.search(r"\S*\Z", body)
            body, tail = body[:m.start()], body[m.start():]
        if head:
            out.append(f"(?:{re.escape(head)})?")
        out.append(re.escape(body))
        if tail:
            out.append(f"(?:{re.escape(tail)})?")
        if i < len(literals) - 1:
            out.append(f"(?:{REDACTED.pattern}|{re.escape(pseudonyms[names[i]])})")
    return re.compile("".join(out), re.S)


def _rel(path: str | None, repo: Path) -> str | None:
    """A patch path as the scenario writes it (relative to the repo)."""
    if path is None:
        return None
    for root in (str(repo), str(repo.resolve())):
        if path.startswith(root + "/"):
            return path[len(root) + 1:]
    return PurePosixPath(path).as_posix()


def _expected_calls(gen: Generated) -> list[dict]:
    """The tool calls the mock issued, in order, joined with their scenario steps."""
    forms = gen.run.tool_forms()
    runs = drv.scenario_run_steps(gen.template)
    n_patch = sum(1 for t in gen.template["turns"] for req in t["steps"] for st in req if "patch" in st)
    assert [f["step"] for f in forms].count("run") == len(runs), f"mock/scenario mismatch: {forms}"
    assert [f["step"] for f in forms].count("patch") == n_patch, f"mock/scenario mismatch: {forms}"
    ri = iter(runs)
    out = []
    for f in forms:
        if f["step"] == "run":
            out.append({**f, **next(ri)})
        else:
            out.append(dict(f))
    return out


# --------------------------------------------------------------------------
# the CLI really did it (no logmine involved)
# --------------------------------------------------------------------------

def test_cli_ran_the_scenario(generated: Generated):
    gen, run = generated, generated.run
    _require_run(gen)
    assert run.version == gen.version, run.log()
    assert run.session_id, f"no session id found in {run.session_files}\n{run.log()}"
    # every request was scripted (none fell through to the closing message)
    posts = [r for r in run.requests if "answered" in r]
    per_turn = [len(t["steps"]) for t in gen.scenario["turns"]]
    assert [sum(1 for r in posts if r["turn"] == k) for k in range(len(per_turn))] == per_turn, \
        f"unexpected model requests per turn\n{run.log()}"
    # the worked repo ends in the scripted state
    calc = (run.repo / "calc.py").read_text()
    assert "return a + b" in calc and "def sub(a, b)" in calc, calc
    assert (run.repo / "test_sub.py").exists() and not (run.repo / "scratch.txt").exists()
    # the planted secrets really are in the CLI's session files (so redaction is tested)
    raw = "".join(p.read_text() for p in run.session_files)
    for name in gen.template["secrets"]:
        assert gen.secrets[name] in raw, \
            f"{name} is not in the raw session files of {gen.version}; the redaction check would be vacuous"


# --------------------------------------------------------------------------
# what logmine ingested
# --------------------------------------------------------------------------

def test_session_row(ingested: Ingested):
    gen, run = ingested.gen, ingested.gen.run
    rows = ingested.rows("SELECT * FROM sessions")
    assert len(rows) == 1, f"expected one session (resume appends to it), got {rows}{ingested.context()}"
    s = rows[0]
    assert s["session_id"] == run.session_id
    assert s["cli_version"] == gen.version
    assert s["format"] == "g2"  # both versions write typed-wrapper lines
    assert s["originator"] == "codex_exec"
    assert s["source"] == "exec"
    assert s["model"] == gen.scenario["model"]
    assert s["source_path"] and Path(s["source_path"]).name == run.session_files[0].name
    assert s["cwd"] and s["cwd"].endswith(f"projects/{SCENARIO}"), s["cwd"]
    assert s["git_commit"] == run.initial_commit
    assert s["git_branch"] == run.branch
    assert s["started_at"] is not None


def test_nothing_quarantined(ingested: Ingested):
    q = ingested.rows("SELECT source_path, line_no, reason, excerpt FROM quarantine")
    assert q == [], f"quarantined lines: {json.dumps(q, default=str, indent=1)}"


def test_user_prompts(ingested: Ingested):
    got = [r["text"] for r in ingested.rows(
        "SELECT text FROM events WHERE session_id = ? AND kind = 'user_message' AND NOT is_injected "
        "AND record_type = 'response_item/message' ORDER BY seq", ingested.session_id)]
    want = drv.scenario_prompts(ingested.gen.template)
    assert len(got) == len(want), f"prompts: got {got!r}, want {want!r}"
    for g, w in zip(got, want):
        assert ingested.pattern(w).fullmatch(g or ""), f"prompt {g!r} does not match {w!r} (secrets redacted)"


def _tool_calls(ingested: Ingested) -> list[dict]:
    return ingested.rows(
        "SELECT t.call_id, t.tool_name, t.command, t.exit_code, t.duration_s, t.has_output, "
        "  (SELECT min(e.seq) FROM events e WHERE e.session_id = t.session_id AND e.call_id = t.call_id "
        "   AND e.kind = 'tool_call') AS first_seq "
        "FROM tool_calls t WHERE t.session_id = ? ORDER BY first_seq, t.call_id", ingested.session_id)


def _patch_call_ids(ingested: Ingested) -> set[str]:
    return {r["call_id"] for r in ingested.rows(
        "SELECT DISTINCT call_id FROM events WHERE session_id = ? AND kind = 'patch'", ingested.session_id)}


def test_tool_calls_match_the_script(ingested: Ingested):
    calls = _tool_calls(ingested)
    expected = _expected_calls(ingested.gen)
    table = json.dumps(calls, default=str, indent=1)
    assert [c["call_id"] for c in calls] == [e["call_id"] for e in expected], \
        f"tool calls (call_id order) differ from the mock's: {table}\nwant {expected}{ingested.context()}"
    missing = [c for c in calls if not c["has_output"]]
    assert not missing, f"tool calls without output: {missing}"
    patch_ids = _patch_call_ids(ingested)
    for c, e in zip(calls, expected):
        if e["step"] == "patch":
            assert c["call_id"] in patch_ids, f"apply_patch call {c} has no patch events ({e['form']})"
            assert c["exit_code"] in (0, None), c
        else:
            assert c["call_id"] not in patch_ids, f"shell call {c} has patch events"


def test_shell_commands_and_exit_codes(ingested: Ingested):
    patch_ids = _patch_call_ids(ingested)
    shell = [c for c in _tool_calls(ingested) if c["command"] is not None and c["call_id"] not in patch_ids]
    runs = drv.scenario_run_steps(ingested.gen.template)
    got = [(c["command"], c["exit_code"]) for c in shell]
    assert len(shell) == len(runs), f"shell commands: got {got}, want {[r['run'] for r in runs]}"
    for c, r in zip(shell, runs):
        assert ingested.pattern(r["run"]).fullmatch(c["command"]), \
            f"command {c['command']!r} does not match {r['run']!r} (secrets redacted)"
        assert c["exit_code"] == r["expect_exit"], f"exit code of {c['command']!r}: {c}"
        assert c["duration_s"] is not None and c["duration_s"] >= 0, c
    # the observed first test run failed, the later ones passed
    assert [c["exit_code"] for c in shell][:2] == [1, 0]


def test_patch_events(ingested: Ingested):
    run = ingested.gen.run
    rows = ingested.rows(
        "SELECT call_id, patch_op, path, move_path, seq FROM events "
        "WHERE session_id = ? AND kind = 'patch' ORDER BY seq", ingested.session_id)
    patch_calls = [f["call_id"] for f in run.tool_forms() if f["step"] == "patch"]
    want = [(patch_calls[o["call"]], o["op"], o["path"], o["move_path"])
            for o in drv.scenario_patch_ops(ingested.gen.template)]
    got = [(r["call_id"], r["patch_op"], _rel(r["path"], run.repo), _rel(r["move_path"], run.repo))
           for r in rows]
    # calls in order; the order of file operations inside one call is not part of the contract
    def by_call(items):
        order = list(dict.fromkeys(i[0] for i in items))
        return [(cid, sorted(i[1:] for i in items if i[0] == cid)) for cid in order]
    assert by_call(got) == by_call(want), f"patch events: got {got}, want {want}"


def _cell_text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, str):
        return v
    return json.dumps(v, default=str)


def test_secrets_redacted_everywhere(ingested: Ingested):
    import pyarrow.parquet as pq

    gen = ingested.gen
    files = sorted(ingested.store.rglob("*.parquet"))
    assert files, f"no parquet files under {ingested.store}"
    needles = {}
    for name in gen.template["secrets"]:
        s = gen.secrets[name]
        needles[name] = s
        needles[name + " (random part)"] = s[-12:]
    leaks = []
    for f in files:
        table = pq.read_table(f)
        for col in table.column_names:
            for i, v in enumerate(table.column(col).to_pylist()):
                text = _cell_text(v)
                for label, needle in needles.items():
                    if needle in text:
                        leaks.append(f"{f.relative_to(ingested.store)}:{col}[{i}] holds {label}")
    assert not leaks, "planted fake secrets leaked into the store:\n" + "\n".join(leaks)

    pseudonyms = ingested.pseudonyms()
    texts = [" ".join(filter(None, r)) for r in ingested.con.execute(
        "SELECT text, command, arguments FROM events WHERE session_id = ?", [ingested.session_id]).fetchall()]
    replaced = {name for name, p in pseudonyms.items() if any(p in t for t in texts)}
    assert replaced, f"no pseudonym of a planted secret in events: {pseudonyms}"
    # the secret printed by `cat deploy.env` is redacted in that call's output, the rest kept
    cat = next(f["call_id"] for f in _expected_calls(gen) if f.get("run") == "cat deploy.env")
    outs = [r["text"] or "" for r in ingested.rows(
        "SELECT text FROM events WHERE session_id = ? AND kind = 'tool_output' AND call_id = ?",
        ingested.session_id, cat)]
    assert any("DEPLOY_HOST=deploy.example.invalid" in t and any(p in t for p in pseudonyms.values()) for t in outs), \
        f"output of `cat deploy.env` lacks the redacted token: {outs!r}"


# --------------------------------------------------------------------------
# segment on what the real CLI wrote, against the repository it really worked
# --------------------------------------------------------------------------

def test_segment_matches_the_worked_repository(ingested: Ingested):
    from collections import Counter

    import duckdb

    from logmine.segment import SegmentConfig, segment

    ingested.con.close()  # one process may not hold the catalog read-only and read-write at once
    summary = segment(SegmentConfig(store=ingested.store))
    ingested.con = duckdb.connect(str(ingested.store / "catalog.duckdb"), read_only=True)
    tasks = ingested.rows("SELECT * FROM tasks ORDER BY index")
    prompts = [t["prompt"] for t in ingested.gen.template["turns"]]
    assert summary.tasks == len(tasks) == len(prompts), ingested.context()
    for task, template in zip(tasks, prompts):
        assert ingested.pattern(template).fullmatch(task["prompt"]), (task["prompt"], template)
    first = ingested.rows("SELECT * FROM verifiers WHERE task_id = ? AND kind = 'test_command'", tasks[0]["task_id"])
    assert [v["fail_to_pass"] for v in first] == [True] and first[0]["command"] == "python3 -B -m unittest -q"
    # the tasks' net changes, put together, are `git diff` of the worked repository since the start
    repo = ingested.gen.run.repo
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    diff = subprocess.run(["git", "diff", "--cached", "-U0", "--no-color", ingested.gen.run.initial_commit],
                          cwd=repo, capture_output=True, text=True, check=True).stdout
    expected: dict[str, list[Counter]] = {}
    deleted, path = set(), None
    for line in diff.splitlines():
        if line.startswith("--- a/"):
            path = line[6:]
        elif line.startswith("+++ "):
            if line == "+++ /dev/null":
                deleted.add(path)
            path = line[6:] if line != "+++ /dev/null" else path
        elif line.startswith(("+", "-")) and not line.startswith("@@") and path not in deleted:
            expected.setdefault(path, [Counter(), Counter()])[line[0] == "-"][line[1:]] += 1
    got: dict[str, list[Counter]] = {}
    got_deleted = set()
    for task in tasks:
        row = ingested.rows("SELECT files FROM verifiers WHERE task_id = ? AND kind = 'file_diff' AND mode = 'hunks'",
                            task["task_id"])[0]
        for change in json.loads(row["files"]):
            if change["op"] == "delete":
                got_deleted.add(change["path"])
                continue
            added, removed = got.setdefault(change["path"], [Counter(), Counter()])
            added.update(change["added"])
            removed.update(change["removed"])
    # compare net line multisets: git may align a diff differently (a line removed and added back)
    net = lambda sides: {p: [a - r, r - a] for p, (a, r) in sides.items()}  # noqa: E731
    got, expected = net(got), net(expected)
    assert got == expected, diff
    assert got_deleted == deleted == {"scratch.txt"}


def test_verify_validates_the_fixadd_task(ingested: Ingested):
    import duckdb

    from logmine.segment import SegmentConfig, segment
    from logmine.verify import VerifyConfig, verify

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    ingested.con.close()
    segment(SegmentConfig(store=ingested.store))
    summary = verify(VerifyConfig(store=ingested.store))
    ingested.con = duckdb.connect(str(ingested.store / "catalog.duckdb"), read_only=True)
    assert summary.rebuilt == summary.tasks == 2, ingested.context()
    rows = ingested.rows("SELECT t.index, v.kind, v.mode, v.status, v.status_reason, v.before_excerpt, "
                         "v.after_excerpt FROM verifiers v JOIN tasks t USING (task_id) ORDER BY t.index, v.kind")
    first = [r for r in rows if r["index"] == 0 and r["kind"] == "test_command"]
    assert [r["status"] for r in first] == ["validated"], rows
    assert all(r["status"] in ("validated", "passes_at_start", "fails_after") for r in rows), rows


def test_tmax_bundle_of_the_real_session_runs(ingested: Ingested, tmp_path):
    """The fixadd task's bundle: reward 0 on the start state, 1 after solution/solve.sh (in the sandbox)."""
    import duckdb
    import pyarrow.parquet as pq

    from logmine.export.tmax import TmaxExportConfig, export_tmax
    from logmine.sandbox import open_sandbox
    from logmine.segment import SegmentConfig, segment
    from logmine.verify import VerifyConfig, verify

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    ingested.con.close()
    segment(SegmentConfig(store=ingested.store))
    verify(VerifyConfig(store=ingested.store))
    summary = export_tmax(TmaxExportConfig(store=ingested.store, out=tmp_path / "out"))
    ingested.con = duckdb.connect(str(ingested.store / "catalog.duckdb"), read_only=True)
    assert summary.rows >= 1, summary
    first = ingested.rows("SELECT task_id FROM tasks WHERE index = 0")[0]["task_id"]
    assert first in pq.read_table(tmp_path / "out/data/train-00000-of-00001.parquet").column("ground_truth").to_pylist()
    bundle = tmp_path / "out/tasks" / first
    for secret in ingested.gen.secrets.values():
        for path in bundle.rglob("*"):
            assert not path.is_file() or secret not in path.read_text(errors="replace"), path
    env = "WORKSPACE=/workspace TESTS_DIR=/workspace/.tests LOGS_DIR=/workspace/.logs"
    for solve, reward in ((False, "0"), (True, "1")):
        with open_sandbox(bundle / "environment/seeds", mount_at="/workspace") as box:
            files = {f".tests/{p.relative_to(bundle / 'tests')}": p.read_text()
                     for p in (bundle / "tests").rglob("*") if p.is_file()}
            files[".solution/solve.sh"] = (bundle / "solution/solve.sh").read_text()
            box.install_files(files)
            if solve:
                box.run(f"{env} bash /workspace/.solution/solve.sh")
            box.run(f"{env} bash /workspace/.tests/test.sh")
            assert (Path(box.workspace) / ".logs/reward.txt").read_text().strip() == reward, solve
