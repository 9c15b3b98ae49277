"""``logmine export swe``: SWE-bench-style instances, one per task that verify graded by tests.

A row has SWE-bench's columns — ``instance_id``, ``repo``, ``base_commit``, ``problem_statement``,
``patch``, ``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS`` (JSON-encoded lists of test ids),
``hints_text``, ``created_at`` — plus ``environment_setup`` (the built image's tag, else the task's
install recipe as a Dockerfile), ``test_cmd``, ``start_state`` (the redacted seeds' tarball when the
start state is not exactly a commit) and logmine's provenance (``task_id``, ``session_id``,
``source``). ``patch`` and ``test_patch`` are ``git diff`` output from the task's start state (its
redacted seeds) to its replayed end state, split by path: the test files the verifier graded and
those a test-path pattern names go to ``test_patch``, the rest to ``patch``.

Every instance is validated before it is written (:func:`~logmine.export.swe_check.check_instance`),
and every row against ``schemas/swe_instance.schema.json``. ``docs/export-swe.md`` says more.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import jsonschema
import pyarrow as pa

from logmine.environment.build import EnvironmentUnavailable
from logmine.environment.detect import Environment, detect
from logmine.export import bundle
from logmine.export.images import DEFAULT_PREFIX, ImageBuilder, ImageOptions
from logmine.export.outdir import note_skip
from logmine.export.swe_card import card
from logmine.export.swe_check import CheckFailed, Runtime, TestSpec, check_instance, environment, replay
from logmine.export.tmax import ExportError, NothingToExport
from logmine.patch import within
from logmine.pipeline import packaged_default
from logmine.redact import Redactor, write_table
from logmine.segment.chain import with_earlier
from logmine.segment.records import Candidate, StartState, TaskInput, load_task, read_tasks
from logmine.store import CATALOG, Store, fetch_dicts
from logmine.verify.report import environment_of
from logmine.verify.run import verify_fields
from logmine.workspace import NotRebuilt, RebuiltTree, rebuild_task

SCHEMA = Path(__file__).parents[1] / "schemas" / "swe_instance.schema.json"
DATA_FILE = "data/test-00000-of-00001.parquet"
_REJECTED = ("does not validate", "solution incomplete", "instance check could not run")  # listed as rejected
_VERDICTS_SQL = """SELECT verifier_id, status, env_mode, test_runner, graded_by, tests_fail_to_pass, tests_pass_to_pass
FROM verifiers WHERE task_id = ? AND seg_gen = ?"""
# a test file by its name or directory (pytest, unittest, go, JavaScript runners)
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*\.py|[^/]*_test\.(py|go)|conftest\.py|[^/]*\.(test|spec)\.[cm]?[jt]sx?)$")
_TEST_DIR = re.compile(r"(^|/)(tests?|__tests__)/")
# made by running or installing, never the task's change (when no .gitignore says so)
_BUILT = frozenset({"node_modules", ".venv", "venv", ".tox", ".nox", ".coverage"})
_GIT = ["git", "-c", "core.quotepath=off", "-c", "core.autocrlf=false", "-c", "diff.noprefix=false",
        "-c", "user.name=logmine", "-c", "user.email=logmine@localhost", "-c", "commit.gpgsign=false"]

ROW_SCHEMA = pa.schema([
    ("instance_id", pa.string()), ("repo", pa.string()), ("base_commit", pa.string()),
    ("problem_statement", pa.string()), ("patch", pa.string()), ("test_patch", pa.string()),
    ("FAIL_TO_PASS", pa.string()), ("PASS_TO_PASS", pa.string()), ("hints_text", pa.string()),
    ("created_at", pa.string()), ("environment_setup", pa.string()), ("test_cmd", pa.string()),
    ("start_state", pa.string()), ("task_id", pa.string()), ("session_id", pa.string()), ("source", pa.string()),
])


def _fields(settings: dict, verify: dict) -> dict:
    """:class:`SweExportConfig` fields from a pipeline's ``[export]`` and ``[verify]`` settings."""
    repositories = verify_fields(verify)
    return {"build_images": settings["build_images"], "image_prefix": settings["image_prefix"] or DEFAULT_PREFIX,
            **{name: repositories[name] for name in ("repo_map", "repo_search", "plain_dirs")}}


_default = functools.partial(packaged_default, _fields, ("export", "verify"))


@dataclass(frozen=True, slots=True)
class SweExportConfig:
    store: Path
    out: Path
    repo_map: tuple[tuple[str, str], ...] = _default("repo_map")
    repo_search: tuple[Path, ...] = _default("repo_search")
    plain_dirs: bool = _default("plain_dirs")
    build_images: bool = _default("build_images")  # environment_setup names an image built per environment
    image_prefix: str = _default("image_prefix")
    engine: str | None = None  # podman or docker for build_images
    source: str = "logmine"

    @classmethod
    def from_settings(cls, settings: dict, verify: dict, **fields) -> SweExportConfig:
        """From a pipeline's ``[export]`` settings and the repository settings of its ``[verify]``;
        ``fields`` (``store``, ``out``, the flags given) win."""
        return cls(**{**_fields(settings, verify), **fields})


@dataclass
class SweExportSummary:
    instances: int = 0
    with_base_commit: int = 0  # the others carry start_states/<instance_id>.tar.gz
    skipped: Counter = field(default_factory=Counter)  # tasks not exported, by reason
    rejects: list[tuple[str, str]] = field(default_factory=list)  # (task_id, why): failed validation
    not_exported: list[tuple[str, str]] = field(default_factory=list)  # (task_id, why): chosen, yet not written
    images: dict[str, bool] = field(default_factory=dict)  # --build-images: tag -> built now (False: reused)
    redactions: Counter = field(default_factory=Counter)
    out: Path | None = None


def export_swe(config: SweExportConfig, progress: Callable[[int, int], None] | None = None, *,
               store: Store | None = None) -> SweExportSummary:
    """Write ``OUT/data/test-00000-of-00001.parquet``, ``OUT/start_states/<instance_id>.tar.gz`` and
    ``OUT/README.md``. ``store``: an already-open store, else ``config.store`` is opened. Raises
    :class:`~logmine.export.tmax.ExportError` (``NothingToExport`` without tasks)."""
    if store is None and not (config.store / CATALOG).exists():
        raise ExportError(f"no logmine store at {config.store}")
    builder = ImageBuilder(ImageOptions(config.image_prefix, False, config.engine)) if config.build_images else None
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    summary, rows = SweExportSummary(out=config.out), []
    with nullcontext(store) if store is not None else Store(config.store) as store:
        redactor = store.redactor()
        tasks = read_tasks(store)
        if not tasks:
            raise NothingToExport.in_store(store.root)
        try:
            shutil.rmtree(config.out / "start_states", ignore_errors=True)  # an earlier export's
            (config.out / "start_states").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ExportError(f"cannot write to {config.out}: {exc.strerror}") from exc
        calls: dict[str, dict] = {}
        chains: dict = {}
        for done, task in enumerate(tasks, 1):
            item = with_earlier(store, load_task(store, task, calls), chains, calls)
            verdicts = {v["verifier_id"]: v for v in fetch_dicts(store.con.execute(_VERDICTS_SQL,
                                                                                   [task.task_id, task.seg_gen]))}
            try:
                known = environment_of(store, task.task_id)
                row, reason = _export_task(item, verdicts, config, redactor,
                                           Environment.from_row(known) if known else None, builder)
            except Exception as exc:  # one task's problem is its reason, never the export's end
                row, reason = None, f"export failed: {type(exc).__name__}: {str(exc)[:200]}"
            if row is not None:
                errors = sorted(e.message for e in validator.iter_errors(row))
                if errors:
                    if row["start_state"]:
                        (config.out / row["start_state"]).unlink(missing_ok=True)
                    row, reason = None, f"invalid row: {errors[0]}"
            if row is None:
                note_skip(summary, task.task_id, reason or "not exported", _REJECTED)
            else:
                rows.append(row)
                summary.with_base_commit += row["base_commit"] is not None
            if progress:
                progress(done, len(tasks))
    summary.images = dict(builder.tags) if builder else {}
    _write_outputs(config, rows, summary, redactor)
    summary.instances, summary.redactions = len(rows), redactor.counts
    return summary


def _verifier(item: TaskInput, verdicts: dict[str, dict]) -> tuple[Candidate | None, dict | None, str | None]:
    """The validated verifier graded by tests the instance rests on (the strongest), or why none."""
    validated = [c for c in item.candidates if verdicts.get(c.verifier_id, {}).get("status") == "validated"]
    if not validated:
        return None, None, "no validated verifier" if item.candidates else "no verifier candidate"
    by_test = [c for c in validated if verdicts[c.verifier_id].get("graded_by") == "tests"
               and verdicts[c.verifier_id].get("tests_fail_to_pass")]
    if not by_test:
        how = sorted({(verdicts[c.verifier_id].get("graded_by") or "exit_code").replace("_", " ") for c in validated})
        return None, None, (f"not graded by tests: validated by {' and '.join(how)} only (SWE-bench instances "
                            "need FAIL_TO_PASS test ids)")
    best = max(by_test, key=lambda c: (c.strength, c.verifier_id))
    return best, verdicts[best.verifier_id], None


def _export_task(item: TaskInput, verdicts: dict[str, dict], config: SweExportConfig, redactor: Redactor,
                 known: Environment | None, builder: ImageBuilder | None) -> tuple[dict | None, str | None]:
    """One task's instance, validated, or the reason it has none."""
    task = item.task
    verifier, verdict, reason = _verifier(item, verdicts)
    if verifier is None or verdict is None:
        return None, reason
    with tempfile.TemporaryDirectory(prefix="logmine-swe-") as scratch_dir:
        tmp = Path(scratch_dir)
        try:
            state = rebuild_task(item, dict(config.repo_map), tmp / "start", tuple(config.repo_search),
                                 config.plain_dirs, mask=redactor.mask)
        except NotRebuilt as exc:
            return None, f"start state not rebuilt: {exc}"
        seeds = tmp / "seeds"
        bundle.write_seeds(state.path, seeds, redactor)
        rel = os.path.relpath(state.cwd, state.root)
        scratch = tmp / "scratch"
        shutil.copytree(seeds, scratch, symlinks=True)
        solve = bundle.solve_sh(item.actions, scratch, state.root, state.cwd)
        broken = re.search(r"^# (patch \d+ did not apply when the bundle was made.*)$", solve, re.M)
        if broken:
            return None, f"solution incomplete: {broken.group(1)[:200]}"
        commands = [(a.command, a.workdir or state.cwd) for a in item.actions if a.command] + \
            [(c.command, c.workdir or state.cwd) for c in item.candidates if c.command]
        env = known or detect(state.path, commands, state.root)
        try:
            runtime = Runtime(provided=environment(env, seeds, state.live, verdict.get("env_mode")))
            replay(seeds, solve, runtime, tmp / "end", redactor)
        except (CheckFailed, EnvironmentUnavailable) as exc:
            return None, f"instance check could not run: {exc}"
        hidden = {os.path.normpath(os.path.join(rel, t.path)) for c in item.candidates for t in c.hidden_tests}
        patch, test_patch, start_tree = diffs(seeds, tmp / "end", hidden)
        if not patch:
            return None, "nothing to patch: the task changed no file outside its tests"
        spec = _test_spec(verifier, verdict, state, rel)
        problem = check_instance(seeds, patch, test_patch, spec, runtime)
        if problem:
            return None, problem
        # the install recipe as a Dockerfile whose build context is the repository at its start state
        setup, base_image = bundle.dockerfile(env, seeds, seeds=".")
        if builder is not None:
            try:
                setup = builder.image_for(env, seeds, Path(state.root).name) or base_image
            except EnvironmentUnavailable as exc:
                return None, f"image not built: {exc}"
        repo = repo_name(task.start_state, state.root, state.live)
        instance_id = f"{repo.replace('/', '__')}__{task.task_id}"
        base = base_commit(task.start_state, state, start_tree)
        if base is None:
            _tarball(seeds, config.out / "start_states" / f"{instance_id}.tar.gz")
    return {
        "instance_id": instance_id, "repo": repo, "base_commit": base,
        "problem_statement": redactor.redact_text(task.prompt), "patch": patch, "test_patch": test_patch,
        "FAIL_TO_PASS": json.dumps(list(spec.fail_to_pass)), "PASS_TO_PASS": json.dumps(list(spec.pass_to_pass)),
        "hints_text": "", "created_at": task.started_at.isoformat() if task.started_at else None,
        "environment_setup": setup, "test_cmd": _command_line(spec),
        "start_state": None if base else f"start_states/{instance_id}.tar.gz",
        "task_id": task.task_id, "session_id": task.session_id, "source": config.source,
    }, None


def _test_spec(verifier: Candidate, verdict: dict, state: RebuiltTree, rel: str) -> TestSpec:
    """The verifier's command as the instance runs it: from its own workdir when that lies in the
    repository, else the task's; the repository's original path written ``$WORKSPACE``."""
    root = state.root.rstrip("/")
    command = verifier.command or ""
    command = command.replace(root, "$WORKSPACE") if root else command
    if verifier.workdir and within(verifier.workdir, state.root):
        rel = os.path.relpath(verifier.workdir, state.root)
    return TestSpec(command, rel, str(verdict["test_runner"]), tuple(verdict["tests_fail_to_pass"]),
                    tuple(verdict["tests_pass_to_pass"] or ()))


def _command_line(spec: TestSpec) -> str:
    """The instance's ``test_cmd``: run from the repository root (``$WORKSPACE``)."""
    return spec.command if spec.workdir == "." else f"cd {spec.workdir} && {spec.command}"



def is_test_path(path: str, hidden: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether a changed file belongs in ``test_patch``: a test file the verifier graded with
    (``hidden``), or a test file by its name or directory."""
    return path in hidden or bool(_TEST_FILE.search(path) or _TEST_DIR.search(path))


def diffs(start: Path, end: Path, hidden: set[str]) -> tuple[str, str, str]:
    """``(patch, test_patch, start tree id)``: ``git diff`` (``a/``, ``b/`` prefixes, no renames,
    binary as git's binary patches) from ``start`` to ``end``, split by :func:`is_test_path`. New files
    the end tree's ``.gitignore`` ignores, and dependency directories made by installs, are left out.
    The start tree id is git's object id of ``start`` (every file, ignored or not)."""
    with tempfile.TemporaryDirectory(prefix="logmine-swediff-") as tmp:
        git = [*_GIT, "--git-dir", str(Path(tmp) / "git")]
        env = {**os.environ, "GIT_LITERAL_PATHSPECS": "1"}

        def run(*args: str, tree: Path = start) -> str:
            done = subprocess.run([*git, "--work-tree", str(tree), *args], capture_output=True, env=env,
                                  cwd=tree, check=True)
            return done.stdout.decode("utf-8", errors="replace")

        subprocess.run(["git", "init", "-q", "--bare", str(Path(tmp) / "git")], check=True, capture_output=True)
        run("add", "-A", "-f", ".")
        run("commit", "-q", "--allow-empty", "--no-verify", "-m", "start")
        tree = run("rev-parse", "HEAD^{tree}").strip()
        run("add", "-A", ".", tree=end)
        changed = [p for p in run("diff", "--cached", "--no-renames", "--name-only", "-z", "HEAD", tree=end).split("\0")
                   if p and not set(PurePosixPath(p).parts) & _BUILT and ".egg-info/" not in p]
        tests = [p for p in changed if is_test_path(p, hidden)]
        code = [p for p in changed if p not in tests]

        def diff(paths: list[str]) -> str:
            return run("diff", "--cached", "--no-renames", "--binary", "--no-color", "--no-ext-diff", "HEAD", "--",
                       *paths, tree=end) if paths else ""

        return diff(code), diff(tests), tree


def base_commit(recipe: StartState, state: RebuiltTree, start_tree: str) -> str | None:
    """The commit of the live repository whose tree is exactly the start state (``start_tree``, the
    redacted seeds': no uncommitted change, nothing redacted or left out), preferring the session's
    recorded commit; None when there is none (a plain directory, a dirty start, a ghost snapshot)."""
    if state.live is None or state.method == "working tree":
        return None
    git = ["git", "-C", str(state.live)]
    wanted = [c for c in (recipe.repo.git_commit,) if c]
    logged = subprocess.run([*git, "log", "--all", "--format=%H", "-n", "1000"], capture_output=True, text=True)
    wanted += logged.stdout.split() if logged.returncode == 0 else []
    for sha in dict.fromkeys(wanted):
        done = subprocess.run([*git, "rev-parse", "--verify", "-q", f"{sha}^{{tree}}"], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == start_tree:
            return sha
    return None


def repo_name(recipe: StartState, root: str, live: Path | None = None) -> str:
    """``owner/name`` when the session's recorded remote, else the live clone's ``origin``, is on
    github.com; else the repository's directory name."""
    urls = [recipe.repo.git_repo_url or ""]
    if live is not None and state_is_git(live):
        urls.append(subprocess.run(["git", "-C", str(live), "remote", "get-url", "origin"], capture_output=True,
                                   text=True).stdout.strip())
    for url in urls:
        found = re.search(r"github\.com[:/]+([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url)
        if found:
            return f"{found.group(1)}/{found.group(2)}"
    return PurePosixPath(root).name or "repo"


def state_is_git(live: Path) -> bool:
    """Whether ``live`` is the top of a git work tree (not a plain directory inside another one)."""
    done = subprocess.run(["git", "-C", str(live), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    return done.returncode == 0 and Path(done.stdout.strip()).resolve() == live.resolve()


def _tarball(seeds: Path, path: Path) -> None:
    """The redacted seeds (already through the gate) as a gzipped tar, paths relative to the root."""
    with tarfile.open(path, "w:gz") as tar:
        for child in sorted(seeds.iterdir()):
            tar.add(child, arcname=child.name)


def _write_outputs(config: SweExportConfig, rows: list[dict], summary: SweExportSummary, redactor: Redactor) -> None:
    (config.out / "data").mkdir(parents=True, exist_ok=True)
    write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), config.out / DATA_FILE, redactor)
    write_table(pa.table({"task_id": pa.array([t for t, _ in summary.not_exported], pa.string()),
                          "reason": pa.array([r for _, r in summary.not_exported], pa.string())}),
                config.out / "rejects.parquet", redactor)
    card(config.out / "README.md", rows, summary.images, redactor)
