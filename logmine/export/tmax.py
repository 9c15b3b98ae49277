"""``logmine export tmax``: RL rows in TMax's exact schema, with a runnable task bundle per row.

Rows have exactly TMax's columns — ``messages`` ([system, user]), ``ground_truth`` (the task id),
``dataset`` ("passthrough": the reward comes from the environment), ``env_config``
(``{env_name, image, task_id}``) and ``source`` — and each is validated against
``schemas/tmax_row.schema.json`` before it is written. Bundles are described in
:mod:`logmine.export.bundle`; ``docs/export-tmax.md`` says how open-instruct and Harbor use them.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tarfile
import tempfile
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pyarrow as pa

from logmine.environment.build import EnvironmentUnavailable
from logmine.environment.detect import Environment, detect
from logmine.errors import LogmineError
from logmine.export import bundle
from logmine.export.check import check_bundle
from logmine.export.images import DEFAULT_PREFIX, ImageBuilder, ImageOptions
from logmine.export.outdir import note_skip
from logmine.pipeline import packaged_default
from logmine.protocol import SYSTEM_PROMPT, USER_PROMPT
from logmine.redact import Redactor, write_table, write_text
from logmine.segment.chain import with_earlier
from logmine.segment.records import Candidate, NoTasks, Task, TaskInput, load_task, read_tasks
from logmine.store import CATALOG, Store, fetch_dicts
from logmine.verify.report import environment_of
from logmine.verify.run import verify_fields
from logmine.workspace import NotRebuilt, read_inside, rebuild_task
from logmine.workspace.deps import end_manifests

SCHEMA = Path(__file__).parents[1] / "schemas" / "tmax_row.schema.json"
_REJECTED = ("solution incomplete", "does not reproduce", "bundle check could not run")
_KIND_RANK = {"test_command": 0, "check_command": 1, "file_diff": 2}
# each verifier's verdict, and the tests it rests on when verify graded it by test
_VERDICTS_SQL = """SELECT verifier_id, status, test_runner, graded_by, tests_fail_to_pass, tests_pass_to_pass
FROM verifiers WHERE task_id = ? AND seg_gen = ?"""

ROW_SCHEMA = pa.schema([
    ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("ground_truth", pa.string()),
    ("dataset", pa.string()),
    ("env_config", pa.struct([("env_name", pa.string()), ("image", pa.string()), ("task_id", pa.string())])),
    ("source", pa.string()),
])

class ExportError(LogmineError, RuntimeError):
    """The export cannot run (no store, no tasks, output not writable)."""


class NothingToExport(ExportError, NoTasks):
    """The store has no tasks: ``logmine segment`` has not run."""


_REPOSITORY_FIELDS = ("repo_map", "repo_search", "plain_dirs")  # where verify found the tasks' repositories


def _fields(settings: dict, verify: dict) -> dict:
    """:class:`TmaxExportConfig` fields from a pipeline's ``[export]`` and ``[verify]`` settings."""
    repositories = verify_fields(verify)
    return {"include_unvalidated": settings["include_unvalidated"], "build_images": settings["build_images"],
            "image_prefix": settings["image_prefix"] or DEFAULT_PREFIX,
            **{name: repositories[name] for name in _REPOSITORY_FIELDS}}


_default = functools.partial(packaged_default, _fields, ("export", "verify"))


@dataclass(frozen=True, slots=True)
class TmaxExportConfig:
    store: Path
    out: Path
    repo_map: tuple[tuple[str, str], ...] = _default("repo_map")
    include_unvalidated: bool = _default("include_unvalidated")
    image: str | None = None  # a prebuilt image that holds everything: task.toml names it, nothing is built
    repo_search: tuple[Path, ...] = _default("repo_search")
    plain_dirs: bool = _default("plain_dirs")  # copy a non-git working directory (credentials left out)
    check: bool = True  # run each bundle (reward 0 on the seeds, 1 after the solution) before writing it
    build_images: bool = _default("build_images")  # an image per environment, named in env_config.image
    image_prefix: str = _default("image_prefix")  # REGISTRY/NAMESPACE of the built images
    push: bool = False  # push each built image (needs image_prefix naming a registry)
    engine: str | None = None  # podman or docker for the builds; None: the first installed
    env_name: str = "swerl_vanillux_sandbox"
    source: str = "logmine"
    agent_timeout_s: int = 600
    verifier_timeout_s: int = 120
    cpus: int = 1
    memory_mb: int = 2048

    @classmethod
    def from_settings(cls, settings: dict, verify: dict, **fields) -> TmaxExportConfig:
        """From a pipeline's ``[export]`` settings and the repository settings of its ``[verify]``;
        ``fields`` (``store``, ``out``, the flags given) win."""
        return cls(**{**_fields(settings, verify), **fields})


@dataclass
class TmaxExportSummary:
    rows: int = 0
    unvalidated: int = 0
    skipped: Counter = field(default_factory=Counter)  # tasks not exported, by reason
    rejects: list[tuple[str, str]] = field(default_factory=list)  # (task_id, why) of bundles that did not reproduce
    not_exported: list[tuple[str, str]] = field(default_factory=list)  # (task_id, why): chosen, yet not written
    reproduced: int = 0  # bundles checked: reward 0 on the seeds, 1 after the solution
    images: dict[str, bool] = field(default_factory=dict)  # --build-images: tag -> built now (False: reused)
    left_out_files: int = 0  # credential files kept out of the seeds
    redactions: Counter = field(default_factory=Counter)
    out: Path | None = None


def export_tmax(config: TmaxExportConfig, progress: Callable[[int, int], None] | None = None, *,
                store: Store | None = None) -> TmaxExportSummary:
    """Write ``OUT/data/train-00000-of-00001.parquet``, ``OUT/tasks/<task_id>/``,
    ``OUT/task-data.tar.gz`` and ``OUT/README.md``. ``store``: an already-open store, else
    ``config.store`` is opened. Raises :class:`ExportError` (:class:`NothingToExport` without tasks)."""
    if store is None and not (config.store / CATALOG).exists():
        raise ExportError(f"no logmine store at {config.store}")
    builder = None  # checked before anything is written: no engine, a push without a registry
    if config.build_images and not config.image:
        builder = ImageBuilder(ImageOptions(config.image_prefix, config.push, config.engine))
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    summary, rows = TmaxExportSummary(out=config.out), []
    tasks_dir = config.out / "tasks"
    with nullcontext(store) if store is not None else Store(config.store) as store:
        redactor = store.redactor()  # the store's pseudonyms: seeds, prompts and rows stay consistent
        tasks = read_tasks(store)
        if not tasks:
            raise NothingToExport.in_store(store.root)
        try:
            tasks_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ExportError(f"cannot write to {config.out}: {exc.strerror}") from exc
        calls: dict[str, dict] = {}
        chains: dict = {}
        for done, task in enumerate(tasks, 1):
            item = with_earlier(store, load_task(store, task, calls), chains, calls)
            status = {s["verifier_id"]: s for s in fetch_dicts(store.con.execute(_VERDICTS_SQL,
                                                                                [task.task_id, task.seg_gen]))}
            try:
                known = environment_of(store, task.task_id)  # what verify detected and built on
                row, reason = _export_task(item, status, config, tasks_dir, redactor, summary,
                                           Environment.from_row(known) if known else None, builder)
            except Exception as exc:  # one task's problem is its reason, never the export's end
                shutil.rmtree(tasks_dir / task.task_id, ignore_errors=True)
                row, reason = None, f"export failed: {type(exc).__name__}: {str(exc)[:200]}"
            if row is not None:
                errors = sorted(e.message for e in validator.iter_errors(row))
                if errors:
                    reason = f"invalid row: {errors[0]}"
                    shutil.rmtree(tasks_dir / task.task_id, ignore_errors=True)
                else:
                    rows.append(row)
            if reason:
                note_skip(summary, task.task_id, reason, _REJECTED)
            if progress:
                progress(done, len(tasks))
    summary.images = dict(builder.tags) if builder else {}
    _write_outputs(config, rows, summary, redactor)
    summary.rows, summary.redactions = len(rows), redactor.counts
    return summary


def _export_task(item: TaskInput, status: dict[str, dict], config: TmaxExportConfig, tasks_dir: Path,
                 redactor: Redactor, summary: TmaxExportSummary,
                 known: Environment | None = None, builder: ImageBuilder | None = None) -> tuple[dict | None, str | None]:
    """One task's row and bundle, or the reason it has none. ``known``: the environment verify
    detected for it (detected here again when the task was never verified); ``builder``: build the
    image the row names (``--build-images``)."""
    task = item.task
    validated = [c for c in item.candidates if status.get(c.verifier_id, {}).get("status") == "validated"]
    candidates = validated or (item.candidates if config.include_unvalidated else [])
    # a file check of an agent's own files only (``.codex/skills/…``): the seeds leave them out
    gradable = [c for c in candidates if c.kind != "file_diff" or bundle.graded_diffs(c)]
    if candidates and not gradable:
        return None, "its verifiers check only files the seeds leave out (an agent's own, credentials)"
    candidates = gradable
    if not candidates:
        return None, "no validated verifier" if item.candidates else "no verifier candidate"
    verifier = min(candidates, key=lambda c: (_KIND_RANK[c.kind], -c.strength, c.mode or ""))
    with tempfile.TemporaryDirectory(prefix="logmine-export-") as tmp:
        try:
            state = rebuild_task(item, dict(config.repo_map), Path(tmp) / "start", tuple(config.repo_search),
                                 config.plain_dirs, mask=redactor.mask)
        except NotRebuilt as exc:
            return None, f"start state not rebuilt: {exc}"
        target = tasks_dir / task.task_id
        shutil.rmtree(target, ignore_errors=True)
        left_out = bundle.write_seeds(state.path, target / "environment" / "seeds", redactor)
        summary.left_out_files += len(left_out)
        rel = os.path.relpath(state.cwd, state.root)
        scratch = Path(tmp) / "scratch"  # the redacted seeds: the solution and graders are made from them
        shutil.copytree(target / "environment" / "seeds", scratch, symlinks=True)
        solve = bundle.solve_sh(item.actions, scratch, state.root, state.cwd)
        end = {p: read_inside(scratch / rel, p) for c in item.candidates
               for p in [*(d.path for d in c.diffs), *(t.path for t in c.hidden_tests)]}
        commands = [(a.command, a.workdir or state.cwd) for a in item.actions if a.command] + \
            [(c.command, c.workdir or state.cwd) for c in item.candidates if c.command]
        env = known or detect(state.path, commands, state.root)
        # a task that changed its dependencies: installed from its end-of-task manifests, as verify did
        deps = end_manifests(item.actions, state.path, state.root, state.cwd, Path(tmp) / "deps")
        manifests = bundle.end_manifest_files(env, deps) if deps and not config.image else {}
        dockerfile, image = bundle.dockerfile(env, deps if deps is not None and manifests else state.path, config.image,
                                              manifests=bundle.MANIFESTS_DIR if manifests else None)
        _write_bundle(target, verifier, task.prompt, rel, solve, end, config, task, dockerfile, redactor,
                      state.root, _by_test(status.get(verifier.verifier_id)), manifests)
        if config.check:
            checked = check_bundle(target, env, state.live, left_out=left_out, commands=[c for c, _ in commands])
            if checked.problem:
                shutil.rmtree(target, ignore_errors=True)
                return None, checked.problem
            summary.reproduced += 1
        if builder is not None:
            try:
                image = builder.image_for(env, bundle.install_tree(target, Path(tmp)), Path(state.root).name) or image
            except EnvironmentUnavailable as exc:
                shutil.rmtree(target, ignore_errors=True)
                return None, f"image not built: {exc}"
        write_text(target / "image.txt", image + "\n", redactor)  # what the row names, for runners that read it
    instruction = USER_PROMPT.format(prompt=task.prompt, where="" if rel == "." else f"/{rel}")
    unvalidated = not validated
    summary.unvalidated += unvalidated
    row = {
        "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": instruction}],
        "ground_truth": task.task_id,
        "dataset": "passthrough",
        "env_config": {"env_name": config.env_name, "image": image, "task_id": task.task_id},
        "source": config.source + (":unvalidated" if unvalidated else ""),
    }
    return row, None


def _by_test(verdict: dict | None) -> bundle.ByTest | None:
    """The tests a verifier's bundle is graded on, when verify graded it by test."""
    if not verdict or verdict.get("graded_by") != "tests" or not verdict.get("tests_fail_to_pass"):
        return None
    return bundle.ByTest(verdict["test_runner"], tuple(verdict["tests_fail_to_pass"]),
                         tuple(verdict["tests_pass_to_pass"] or ()))


def _write_bundle(target: Path, verifier: Candidate, instruction: str, rel: str, solve: str,
                  end: dict[str, str | None], config: TmaxExportConfig, task: Task, dockerfile: str,
                  redactor: Redactor, root: str, by_test: bundle.ByTest | None = None,
                  manifests: dict[str, str] | None = None) -> None:
    test_sh, grading = bundle.test_sh(verifier, rel, root, by_test)
    files = {
        **(manifests or {}),
        "instruction.md": instruction.rstrip("\n") + "\n",  # the task text only: TMax's environment wraps it
        "task.toml": _task_toml(config, task, verifier),
        "environment/Dockerfile": dockerfile,
        "tests/test.sh": test_sh,
        **grading,
        "solution/solve.sh": solve,
    }
    if verifier.kind == "file_diff":
        files["tests/grade_files.py"], files["tests/expected.json"] = bundle.grade_files(verifier, end)
    for hidden in verifier.hidden_tests:
        text = hidden.content if hidden.content is not None else end.get(hidden.path)
        if text is not None:  # a changed test file the log has no text for: its replayed end state
            files[os.path.normpath(os.path.join("tests/hidden", rel, hidden.path))] = text
    for name, text in files.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text, redactor, json=name.endswith(".json"))
        if name.endswith(".sh"):
            path.chmod(0o755)


def _task_toml(config: TmaxExportConfig, task: Task, verifier: Candidate) -> str:
    """Harbor's task.toml. The verifier runs in a fresh container of the same image ("separate"
    mode, which ``harbor lint`` asks for) and grades the agent's ``/workspace``, collected as an
    artifact and put back at the same path."""
    image = f'docker_image = "{config.image}"\n' if config.image else ""
    return (
        'version = "1.0"\nartifacts = ["/workspace"]\n\n[metadata]\n'
        f'task_id = "{task.task_id}"\nsource = "{config.source}"\nverifier_kind = "{verifier.kind}"\n'
        f'tmax_kind = "{verifier.tmax_kind}"\n\n'
        f"[agent]\ntimeout_sec = {float(config.agent_timeout_s)}\n\n"
        f'[verifier]\ntimeout_sec = {float(config.verifier_timeout_s)}\nenvironment_mode = "separate"\n\n'
        f'[environment]\n{image}cpus = {config.cpus}\nmemory_mb = {config.memory_mb}\nnetwork_mode = "no-network"\n'
    )


def _write_outputs(config: TmaxExportConfig, rows: list[dict], summary: TmaxExportSummary,
                   redactor: Redactor) -> None:
    data = config.out / "data"
    data.mkdir(parents=True, exist_ok=True)
    write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), data / "train-00000-of-00001.parquet", redactor)
    # every task chosen for the export but not written, with why (``logmine yield --export`` reads it)
    write_table(pa.table({"task_id": pa.array([t for t, _ in summary.not_exported], pa.string()),
                          "reason": pa.array([r for _, r in summary.not_exported], pa.string())}),
                config.out / "rejects.parquet", redactor)
    with tarfile.open(config.out / "task-data.tar.gz", "w:gz") as tar:
        for row in rows:
            tar.add(config.out / "tasks" / row["ground_truth"], arcname=row["ground_truth"])
    write_text(config.out / "README.md", _CARD.format(rows=len(rows), unvalidated=summary.unvalidated,
                                                      left_out=summary.left_out_files,
                                                      image=config.image or "built from each bundle's Dockerfile",
                                                      env=config.env_name, images=_images_note(summary)), redactor)


def _images_note(summary: TmaxExportSummary) -> str:
    if summary.images:
        tags = ", ".join(f"`{t}`" for t in sorted(summary.images))
        return (f"- Images: built by `logmine export tmax --build-images` (one per environment: {tags});\n"
                "  each row's `env_config.image` and its bundle's `image.txt` name the image that holds the task's\n"
                "  dependencies (tasks with nothing to install name their base image). Push them where the\n"
                "  trainer's engine can pull them, or run the export with `--image-prefix REGISTRY/NS --push`.\n")
    return _IMAGES_TO_BUILD


_CARD = """---
tags: [logmine, tmax, terminal-agents, rl]
---
# logmine TMax export

{rows} tasks mined from Codex CLI sessions, in the row format of `allenai/tmax-15k-open-instruct`
(`messages`, `ground_truth`, `dataset`, `env_config`, `source`), with one runnable task bundle per
row under `tasks/` and the same bundles in `task-data.tar.gz`. {unvalidated} rows are not validated
(`source` ends in `:unvalidated`); the others have a verifier that failed on the task's start state
and passed after replaying the original work.

- Environment: `env_name = {env}`, image `{image}`; the seeds become `/workspace`, `tests/` is put at
  `/tests` only at grading time, `tests/test.sh` writes 1 or 0 to `/logs/verifier/reward.txt`.
{images}- Redaction: the workspace snapshots went through the same secret redaction as the logs, with the same
  pseudonyms (a secret in the code and in the task's prompt or tests has one replacement, so tests still pass);
  {left_out} credential files (`.env`, keys, cloud configs, `.git`) were left out.
- Usage: see logmine's `docs/export-tmax.md` (open-instruct's TMax environment, Harbor).
"""

_IMAGES_TO_BUILD = """- Images: `env_config.image` is the base image of each task's recipe (unless `--image` named a prebuilt
  image), not an image holding the task's dependencies. A task that needs a `.venv`, `node_modules` or a toolchain passes only in the image
  built from its `tasks/<task_id>/environment/Dockerfile`: build it (Harbor does; for open-instruct's
  TMax environment, build and push it, then set `env_config.image` to that tag) before training.
"""
