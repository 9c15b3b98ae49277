"""Real project shapes through verify and export: an npm workspace tested from one package
(``cd packages/core && npm test``), a pnpm workspace whose package runs vitest (``pnpm --filter …
exec vitest``, ``npx vitest``), a src-layout package its tests import without an install, a uv
project in a subdirectory run with ``uv run``. Real git repositories, real sessions, the real sandbox
and real npm/pnpm/uv builds, with no network: the pnpm store and uv's wheel come from what
``.ci/install-tools.sh`` fetched (those tests skip without it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from calc_repo import calc_repo
from conftest import query
from session_builder import SessionBuilder, segmented

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

WORKSPACE = {
    "package.json": json.dumps({"name": "demo", "private": True, "workspaces": ["packages/*"]}),
    ".gitignore": "node_modules/\n",
    "packages/util/package.json": json.dumps({"name": "@demo/util", "version": "1.0.0", "main": "index.js"}),
    "packages/util/index.js": "exports.add = (a, b) => a - b;\nexports.mul = (a, b) => a + b;\n",
    "packages/core/package.json": json.dumps({"name": "@demo/core", "version": "1.0.0",
                                              "scripts": {"test": "node test.js", "test:mul": "node mul.js"},
                                              "dependencies": {"@demo/util": "1.0.0"}}),
    "packages/core/test.js": "const { add } = require('@demo/util');\n"
                             "if (add(2, 3) !== 5) { console.error('add(2, 3) =', add(2, 3)); process.exit(1); }\n"
                             "console.log('ok');\n",
    "packages/core/mul.js": "const { mul } = require('@demo/util');\nif (mul(2, 3) !== 6) process.exit(1);\n",
}
FIX_UTIL = ("*** Begin Patch\n*** Update File: packages/util/index.js\n@@\n-exports.add = (a, b) => a - b;\n"
            "+exports.add = (a, b) => a + b;\n*** End Patch\n")
FIX_MUL = ("*** Begin Patch\n*** Update File: packages/util/index.js\n@@\n-exports.mul = (a, b) => a + b;\n"
           "+exports.mul = (a, b) => a * b;\n*** End Patch\n")
SRC_LAYOUT = {
    "pyproject.toml": '[project]\nname = "shapes"\nversion = "0.1.0"\n',
    "src/shapes/__init__.py": "def area(w, h):\n    return w + h\n",
    "tests/test_area.py": "import unittest\n\nfrom shapes import area\n\n\nclass A(unittest.TestCase):\n"
                          "    def test_area(self):\n        self.assertEqual(area(2, 3), 6)\n",
}
FIX_AREA = ("*** Begin Patch\n*** Update File: src/shapes/__init__.py\n@@\n def area(w, h):\n-    return w + h\n"
            "+    return w * h\n*** End Patch\n")
UNITTEST = "python3 -B -m unittest discover -s tests -q"
CI = Path(__file__).resolve().parents[2] / ".ci"
PNPM_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pnpm-vitest"
VITEST = {
    ".gitignore": "node_modules/\n",
    "packages/web/src/math.js": "export const sum = (a, b) => a - b;\nexport const mul = (a, b) => a + b;\n",
    # a config file, as real projects have: this vite (5) bundles it beside itself; vite 6+ writes
    # node_modules/.vite-temp instead (tests/sandbox/test_binds.py checks that scratch directory)
    "packages/web/vitest.config.js": "import { defineConfig } from 'vitest/config';\n\n"
                                     "export default defineConfig({ test: { include: ['test/**/*.test.js'] } });\n",
    "packages/web/test/sum.test.js": "import { expect, test } from 'vitest';\nimport { sum } from '../src/math.js';\n\n"
                                     "test('sum', () => expect(sum(2, 3)).toBe(5));\n",
    "packages/web/test/mul.test.js": "import { expect, test } from 'vitest';\nimport { mul } from '../src/math.js';\n\n"
                                     "test('mul', () => expect(mul(2, 3)).toBe(6));\n",
}
FIX_SUM = ("*** Begin Patch\n*** Update File: packages/web/src/math.js\n@@\n-export const sum = (a, b) => a - b;\n"
           "+export const sum = (a, b) => a + b;\n*** End Patch\n")
FIX_PRODUCT = ("*** Begin Patch\n*** Update File: packages/web/src/math.js\n@@\n-export const mul = (a, b) => a + b;\n"
               "+export const mul = (a, b) => a * b;\n*** End Patch\n")


def _verify(tmp_path: Path, env_mode: str, *builders: SessionBuilder) -> Path:
    from logmine.verify import VerifyConfig, verify

    store, _ = segmented(tmp_path, *builders)
    verify(VerifyConfig(store=store, jobs=1, env_mode=env_mode))
    return store


def _tests(store: Path) -> list[dict]:
    return query(store, "SELECT t.index, v.status, v.status_reason, v.env_mode, v.after_excerpt FROM verifiers v "
                        "JOIN tasks t USING (task_id) WHERE v.kind = 'test_command' ORDER BY t.index")


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_an_npm_workspace_package_tested_from_its_directory(tmp_path, monkeypatch):
    from logmine.export.funnel import read_funnel
    from logmine.export.tmax import TmaxExportConfig, export_tmax

    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "mono"
    commit = calc_repo(repo, WORKSPACE)
    test = "cd packages/core && npm test"
    add = (SessionBuilder(cwd=str(repo), commit=commit)
           .user("core's test fails: fix add in util").run(test, 1).patch(FIX_UTIL).run(test, 0).agent("Fixed."))
    mul = f"cd {repo}/packages/core && npm run test:mul"  # the workspace's absolute path, as agents write it
    other = (SessionBuilder(cwd=str(repo), commit=commit)
             .user("mul is wrong").run(mul, 1).patch(FIX_MUL).run(mul, 0).agent("Fixed."))
    store = _verify(tmp_path, "auto", add, other)  # a fresh clone has no node_modules: host is skipped, built
    rows = _tests(store)
    assert [(r["status"], r["env_mode"]) for r in rows] == [("validated", "built")] * 2, rows
    (env,) = query(store, "SELECT DISTINCT recipe_key, dirs, binds FROM environments")
    assert env["dirs"] == ["packages/core"]
    # installed at the workspace's root (npm hoists the packages there and links @demo/util to its source)
    assert any(b.endswith(f"-> {repo}/node_modules") for b in env["binds"]), env["binds"]
    builds = read_funnel(store).builds  # one environment for both tasks: built once, reused once
    assert (builds.environments, builds.built, builds.reused) == (1, 1, 1)
    # the bundle grades from the package's directory, with the workspace installed at its root
    summary = export_tmax(TmaxExportConfig(store=store, out=tmp_path / "tmax"))
    assert summary.reproduced == 2, summary
    bundle = next((tmp_path / "tmax" / "tasks").iterdir())
    assert "npm install --no-audit" in (bundle / "environment" / "Dockerfile").read_text()  # no lock file
    scripts = {(b / "tests" / "test.sh").read_text() for b in (tmp_path / "tmax" / "tasks").iterdir()}
    assert any("bash -c 'cd packages/core && npm test'" in s for s in scripts), scripts
    assert any("bash -c 'cd $WORKSPACE/packages/core && npm run test:mul'" in s for s in scripts), scripts


def test_a_src_layout_package_is_importable_as_an_editable_install_makes_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "shapes"
    commit = calc_repo(repo, SRC_LAYOUT)
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("area is wrong").run(UNITTEST, 1).patch(FIX_AREA).run(UNITTEST, 0).agent("Fixed."))
    store = _verify(tmp_path, "auto", b)
    (row,) = _tests(store)
    # this host's python cannot import `shapes` (never installed): the built way puts src/ on PYTHONPATH
    assert (row["status"], row["env_mode"]) == ("validated", "built"), row
    (env,) = query(store, "SELECT mode, notes FROM environments")
    assert any(n.startswith("host: after the replay") for n in env["notes"]), env


def test_a_uv_project_in_a_subdirectory_runs_with_uv_run(tmp_path, monkeypatch):
    wheels = sorted((CI / "wheels").glob("uv-*.whl"))
    if not wheels:
        pytest.skip("uv's wheel is not in .ci/wheels (run .ci/install-tools.sh)")
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # uv from the wheel install-tools fetched: no network
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels[0].parent))
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "home" / "u" / "app"
    files = {f"backend/{k}": v for k, v in SRC_LAYOUT.items()}
    files["backend/pyproject.toml"] = '[project]\nname = "shapes"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n' \
                                      'dependencies = []\n'
    files["backend/uv.lock"] = ('version = 1\nrequires-python = ">=3.11"\n\n[[package]]\nname = "shapes"\n'
                                'version = "0.1.0"\nsource = { virtual = "." }\n')
    files["frontend/package.json"] = "{}"
    commit = calc_repo(repo, files)
    test = "cd backend && uv run python -B -m unittest discover -s tests -q"
    b = (SessionBuilder(cwd=str(repo), commit=commit)
         .user("area is wrong").run(test, 1).patch(FIX_AREA.replace("src/", "backend/src/")).run(test, 0)
         .agent("Fixed."))
    store = _verify(tmp_path, "built", b)
    (row,) = _tests(store)
    assert (row["status"], row["env_mode"]) == ("validated", "built"), row
    (env,) = query(store, "SELECT dirs, binds FROM environments")
    assert env["dirs"] == ["backend"] and any(b.endswith(f"-> {repo}/backend/.venv") for b in env["binds"])


def _pnpm_offline(tmp_path: Path, monkeypatch) -> dict[str, str]:
    """The pnpm workspace fixture's files with its lock file, and npm/pnpm pointed at copies of the
    cache and store ``.ci/install-tools.sh`` filled (offline: nothing is downloaded)."""
    if not (CI / "pnpm-vitest" / ".complete").exists():
        pytest.skip("the pnpm workspace fixture is not installed (run .ci/install-tools.sh)")
    for part in ("npm-cache", "pnpm-store"):
        shutil.copytree(CI / part, tmp_path / part, symlinks=True)
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_store_dir", str(tmp_path / "pnpm-store"))
    monkeypatch.setenv("npm_config_offline", "true")
    monkeypatch.setenv("LOGMINE_CACHE", str(tmp_path / "cache"))
    files = {str(f.relative_to(PNPM_FIXTURE)): f.read_text() for f in PNPM_FIXTURE.rglob("*") if f.is_file()}
    return {**files, "pnpm-lock.yaml": (CI / "pnpm-vitest" / "pnpm-lock.yaml").read_text(), **VITEST}


def _vitest_sessions(repo: Path, commit: str) -> tuple[SessionBuilder, SessionBuilder]:
    sums = "pnpm --filter @demo/web exec vitest run test/sum.test.js"  # the workspace filter, from the root
    muls = f"cd {repo}/packages/web && npx vitest run test/mul.test.js"  # one file, from the package
    return ((SessionBuilder(cwd=str(repo), commit=commit)
             .user("web's tests fail: fix sum").run(sums, 1).patch(FIX_SUM).run(sums, 0).agent("Fixed.")),
            (SessionBuilder(cwd=str(repo), commit=commit)
             .user("mul is wrong").run(muls, 1).patch(FIX_PRODUCT).run(muls, 0).agent("Fixed.")))


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_pnpm_workspace_runs_vitest_in_one_package_built_from_its_lock(tmp_path, monkeypatch):
    from logmine.export.funnel import read_funnel
    from logmine.export.tmax import TmaxExportConfig, export_tmax

    repo = tmp_path / "home" / "u" / "mono"
    store = _verify(tmp_path, "auto", *_vitest_sessions(repo, calc_repo(repo, _pnpm_offline(tmp_path, monkeypatch))))
    rows = _tests(store)  # a fresh clone has no node_modules (and this host no pnpm): built
    assert [(r["status"], r["env_mode"]) for r in rows] == [("validated", "built")] * 2, rows
    graded = query(store, "SELECT test_runner, graded_by, tests_fail_to_pass, after_tests FROM verifications "
                          "WHERE status = 'validated' AND test_runner IS NOT NULL ORDER BY task_id")
    assert [(r["test_runner"], r["graded_by"]) for r in graded] == [("vitest", "tests")] * 2, graded  # its JSON
    assert all(r["tests_fail_to_pass"] and all(t["status"] == "passed" for t in r["after_tests"]) for r in graded)
    builds = read_funnel(store).builds  # one lock file: one build for both tasks
    assert (builds.environments, builds.built, builds.reused) == (1, 1, 1)
    summary = export_tmax(TmaxExportConfig(store=store, out=tmp_path / "tmax"))
    assert summary.reproduced == 2, summary
    bundle = next((tmp_path / "tmax" / "tasks").iterdir())
    dockerfile = (bundle / "environment" / "Dockerfile").read_text()
    assert "pnpm@9.15.9" in dockerfile and "install --frozen-lockfile" in dockerfile, dockerfile


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_pnpm_workspace_in_host_mode_uses_the_authors_install(tmp_path, monkeypatch):
    files = _pnpm_offline(tmp_path, monkeypatch)
    repo = tmp_path / "home" / "u" / "mono"
    sessions = _vitest_sessions(repo, calc_repo(repo, files))
    monkeypatch.setenv("PATH", f"{CI / 'pnpm-tools' / 'bin'}:{os.environ['PATH']}")  # the author's pnpm
    subprocess.run(["pnpm", "install", "--frozen-lockfile", "--ignore-scripts"], cwd=repo, check=True,
                   capture_output=True, timeout=300)
    # the author's runs left vitest's cache (packages/web/node_modules/.vite): the sandbox makes it a
    # private writable tmpfs over the read-only node_modules
    subprocess.run(["pnpm", "vitest", "run"], cwd=repo / "packages" / "web", capture_output=True, timeout=300)
    assert (repo / "packages" / "web" / "node_modules" / ".vite").is_dir()
    store = _verify(tmp_path, "host", *sessions)
    rows = _tests(store)
    assert [(r["status"], r["env_mode"]) for r in rows] == [("validated", "host")] * 2, rows
    for env in query(store, "SELECT binds FROM environments"):  # the workspace's root node_modules, live
        assert any(b.endswith(f"-> {repo}/node_modules") for b in env["binds"]), env["binds"]
