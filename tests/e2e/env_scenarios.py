"""Sessions of the real Codex CLI on projects whose environment lives outside git.

Three scenarios (``scenarios/env_*``), each a fail -> pass task or two:

* ``env_venv``: tests import ``unitconv``, a local package installed (really, with pip) only in the
  git-ignored ``.venv``; run as ``.venv/bin/python -m pytest`` and as
  ``source .venv/bin/activate && python -m pytest``;
* ``env_node``: code requires ``is-number``, present only in the git-ignored ``node_modules``
  (written as npm writes it); run with ``npm test``;
* ``env_toolpath``: ``pytest`` from a virtualenv outside the repository, first on the session's PATH
  (the hermetic HOME's ``.profile`` puts it there, as pyenv or a user venv does), never
  ``/usr/bin/python3``.

:func:`generate` makes one: the repository, what lives outside git, the CLI run, then ingest and
segment into a store. Shared by ``test_environments_e2e.py`` and ``bench/environments.py``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import codex_driver as drv  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSIONS = ("0.171.0", "0.45.0")
# scenario -> the CLI generation preferred for it (both generations get covered)
SCENARIOS = {"env_venv": "0.171.0", "env_node": "0.45.0", "env_toolpath": "0.171.0"}
# what each scenario keeps outside git, relative to the repository
IGNORED = {"env_venv": (".venv",), "env_node": ("node_modules",), "env_toolpath": ()}
# fail -> pass tasks each scenario makes
TASKS = {"env_venv": 2, "env_node": 1, "env_toolpath": 1}
# an unreachable registry (loopback only): pip and npm configured to use nothing else
OFFLINE = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0", "PIP_NO_CACHE_DIR": "1",
           "PIP_CONFIG_FILE": os.devnull, "npm_config_registry": "http://127.0.0.1:9/",
           "npm_config_fetch_retries": "0"}
OFFLINE_UNSET = ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX")

IS_NUMBER = """'use strict';

module.exports = function(num) {
  if (typeof num === 'number') {
    return num - num === 0;
  }
  if (typeof num === 'string' && num.trim() !== '') {
    return Number.isFinite ? Number.isFinite(+num) : isFinite(+num);
  }
  return false;
};
"""


class Unavailable(Exception):
    """The scenario cannot be generated here (no CLI, no registry): the reason, for a skip."""


@dataclass
class Generated:
    name: str
    version: str
    run: drv.ScenarioRun
    store: Path
    tools_bin: Path | None = None  # env_toolpath: the venv whose pytest the session used
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def repo(self) -> Path:
        return self.run.repo

    @property
    def path(self) -> str:
        """The PATH of the user's shell, as verify should see it (host mode resolves tools on it)."""
        head = [str(self.tools_bin)] if self.tools_bin else []
        return os.pathsep.join([*head, os.environ.get("PATH", "")])


def codex_bin(version: str) -> Path:
    prefix = os.environ.get("LOGMINE_CODEX_PREFIX")
    root = Path(prefix) if prefix else REPO_ROOT / ".ci" / "codex"
    return root / version / "node_modules" / ".bin" / "codex"


def pick_version(name: str) -> str:
    """The scenario's preferred CLI version, else any installed one; :class:`Unavailable` if none."""
    for version in (SCENARIOS[name], *VERSIONS):
        if codex_bin(version).exists():
            return version
    raise Unavailable(f"no Codex CLI installed under {codex_bin('VERSION')} (run .ci/install-codex.sh)")


def _pip(venv: Path, *args: str, cwd: Path | None = None) -> None:
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)
    if done.returncode != 0:
        raise Unavailable(f"pip install {' '.join(args)} failed (registry unreachable?): {done.stderr[-400:]}")


def _venv(path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)


def prepare_venv(repo: Path) -> None:
    """The git-ignored .venv with the local package (built by pip, as a developer does) and pytest."""
    _venv(repo / ".venv")
    _pip(repo / ".venv", "./localpkg", "pytest", cwd=repo)
    for leftover in ("localpkg/build", "localpkg/unitconv.egg-info"):
        shutil.rmtree(repo / leftover, ignore_errors=True)


def prepare_node(repo: Path) -> None:
    """node_modules/is-number as npm 7+ writes it (package, and the hidden lockfile)."""
    pkg = repo / "node_modules" / "is-number"
    pkg.mkdir(parents=True)
    (pkg / "index.js").write_text(IS_NUMBER)
    (pkg / "package.json").write_text(json.dumps({"name": "is-number", "version": "7.0.0", "main": "index.js",
                                                  "license": "MIT", "engines": {"node": ">=0.12.0"}}, indent=2))
    (repo / "node_modules" / ".package-lock.json").write_text(json.dumps({
        "name": "shop", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
        "packages": {"node_modules/is-number": {
            "version": "7.0.0", "resolved": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
            "license": "MIT", "engines": {"node": ">=0.12.0"}}}}, indent=2))


def generate(name: str, workdir: Path) -> Generated:
    """Run scenario ``name`` with the real CLI in ``workdir``, then ingest and segment it into a store."""
    from logmine.ingest.run import IngestConfig, ingest
    from logmine.segment import SegmentConfig, segment

    version = pick_version(name)
    for tool in ("node", "git", "bwrap"):
        if shutil.which(tool) is None:
            raise Unavailable(f"`{tool}` is not on PATH")
    scenario, files, _ = drv.load_scenario(name, {})
    tools_bin, prefix = None, ()
    prepare = {"env_venv": prepare_venv, "env_node": prepare_node}.get(name)
    if name == "env_toolpath":  # pytest from a venv outside the repository, first on the shell's PATH
        _venv(workdir / "tools")
        _pip(workdir / "tools", "pytest")
        tools_bin, prefix = workdir / "tools" / "bin", (str(workdir / "tools" / "bin"),)
        (workdir / "home").mkdir(parents=True, exist_ok=True)
        (workdir / "home" / ".profile").write_text(f'export PATH="{tools_bin}:$PATH"\n')
    run = drv.run_scenario(codex_bin(version), scenario, files, workdir, turn_timeout_s=240,
                           prepare=prepare, path_prefix=prefix)
    if not run.ok or not run.session_files:
        raise RuntimeError(f"the Codex CLI {version} did not complete {name}\n{run.log()}")
    store = workdir / "store"
    ingest(IngestConfig(paths=(run.codex_home / "sessions",), store=store, jobs=1))
    _check_exits(store, scenario, run)
    segment(SegmentConfig(store=store))
    return Generated(name, version, run, store, tools_bin)


def _check_exits(store: Path, scenario: dict, run: drv.ScenarioRun) -> None:
    """Each command exited as the scenario says (the first test run fails, the last passes), as ingested."""
    import duckdb

    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True)
    try:
        calls = con.execute("SELECT command, exit_code FROM tool_calls WHERE command IS NOT NULL "
                            "ORDER BY session_id, seq").fetchall()
    finally:
        con.close()
    steps = drv.scenario_run_steps(scenario)
    runs = {s["run"] for s in steps}
    seen = [code for command, code in calls if any(command.endswith((r, r + "'")) for r in runs)]
    expected = [s["expect_exit"] for s in steps]
    if seen != expected:
        raise RuntimeError(f"exit codes {seen} in the session, expected {expected}\n{run.log()}")


def copy_store(store: Path, to: Path) -> Path:
    """A copy of ``store`` (each mode verifies its own)."""
    shutil.copytree(store, to)
    return to


class Aside:
    """Move the repository's ignored dependency directories away (and back), as on a fresh clone."""

    def __init__(self, gen: Generated, where: Path):
        self.moves = [(gen.repo / rel, where / rel) for rel in IGNORED[gen.name]]

    def __enter__(self) -> Aside:
        for src, dst in self.moves:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(src), str(dst))
        return self

    def __exit__(self, *exc: object) -> None:
        for src, dst in self.moves:
            shutil.move(str(dst), str(src))
