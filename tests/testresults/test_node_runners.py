"""Real ``node --test`` and vitest runs, instrumented, read test by test (jest where it is installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from testresults_support import clean_env, exit_code, run_instrumented, statuses, write

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / ".ci"
NODE_TESTS = """const { test, describe, it } = require('node:test');
const assert = require('node:assert');
const { add } = require('../calc.js');

test('adds', () => { assert.strictEqual(add(1, 2), 3); });
test('adds negatives # signs', () => { assert.strictEqual(add(-1, -1), -2); });
test('later', { skip: 'not yet' }, () => {});
describe('doubles', () => {
  it('one', () => { assert.strictEqual(add(1, 1), 2); });
  describe('negative', () => { it('minus one', () => { assert.strictEqual(add(-1, -1), -2); }); });
});
test('pairs', async (t) => { await t.test('first', () => {}); });
"""
CALC_JS = "exports.add = (a, b) => (a >= 0 ? a + b : a - b);\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_test_reports_each_test_through_tap(tmp_path):
    project = write(tmp_path / "p", {"calc.js": CALC_JS, "test/calc.test.js": NODE_TESTS})
    report, code, output = run_instrumented("node --test", project, tmp_path / "report")
    assert report is not None and (report.runner, report.source) == ("node", "tap")
    assert statuses(report) == {"adds": "passed", "adds negatives # signs": "failed", "later": "skipped",
                                "doubles > one": "passed", "doubles > negative > minus one": "failed",
                                "pairs > first": "passed"}
    assert "✔ adds" in output  # the human reporter still writes to stdout
    assert code == exit_code("node --test", project) == 1


VITEST_TESTS = """import { describe, expect, it, test } from 'vitest';
import { add } from '../src/calc.js';

test('adds', () => { expect(add(1, 2)).toBe(3); });
test('adds negatives', () => { expect(add(-1, -1)).toBe(-2); });
test.skip('later', () => {});
describe('doubles', () => { describe('small', () => { it('one', () => { expect(add(1, 1)).toBe(2); }); }); });
"""
VITEST_IDS = {"packages/web/test/calc.test.js > adds": "passed",
              "packages/web/test/calc.test.js > adds negatives": "failed",
              "packages/web/test/calc.test.js > later": "skipped",
              "packages/web/test/calc.test.js > doubles > small > one": "passed",
              "packages/web/test/broken.test.js": "error"}


@pytest.fixture
def pnpm_workspace(tmp_path) -> Path:
    """The pnpm workspace fixture with vitest installed offline from the store ``.ci/install-tools.sh`` filled."""
    pnpm = CI / "pnpm-tools" / "bin" / "pnpm"
    if shutil.which("node") is None or not (CI / "pnpm-vitest" / ".complete").exists() or not pnpm.exists():
        pytest.skip("the pnpm workspace fixture with vitest is not installed (run .ci/install-tools.sh)")
    workspace = tmp_path / "mono"
    shutil.copytree(CI / "pnpm-vitest", workspace)
    shutil.copytree(CI / "pnpm-store", tmp_path / "pnpm-store", symlinks=True)
    subprocess.run([str(pnpm), "install", "--offline", "--frozen-lockfile", "--ignore-scripts",
                    "--store-dir", str(tmp_path / "pnpm-store")], cwd=workspace, check=True, capture_output=True,
                   timeout=300, env=clean_env(npm_config_offline="true"))
    return write(workspace, {"packages/web/src/calc.js": "export const add = (a, b) => (a >= 0 ? a + b : a - b);\n",
                             "packages/web/test/calc.test.js": VITEST_TESTS,
                             "packages/web/test/broken.test.js": "throw new Error('does not load');\n"})


def test_vitest_reports_each_test_through_its_json_report(tmp_path, pnpm_workspace):
    command = "cd packages/web && npx vitest run"
    report, code, output = run_instrumented(command, pnpm_workspace, tmp_path / "report")
    assert report is not None and (report.runner, report.source) == ("vitest", "json")
    assert statuses(report) == VITEST_IDS
    assert "Test Files" in output  # the default reporter still writes to stdout
    assert code == exit_code(command, pnpm_workspace) == 1


def test_npm_test_is_instrumented_through_the_package_script(tmp_path, pnpm_workspace):
    package = pnpm_workspace / "packages" / "web"
    scripts = json.loads((package / "package.json").read_text())["scripts"]
    report, code, _ = run_instrumented("cd packages/web && npm test", pnpm_workspace, tmp_path / "report",
                                       scripts=scripts)
    assert report is not None and report.runner == "vitest"
    assert statuses(report) == VITEST_IDS and code == 1


@pytest.mark.skipif(shutil.which("jest") is None, reason="jest is not installed on PATH")
def test_jest_reports_each_test_through_its_json_report(tmp_path):
    project = write(tmp_path / "p", {"calc.js": CALC_JS, "package.json": "{}", "calc.test.js": (
        "const { add } = require('./calc.js');\ntest('adds', () => { expect(add(1, 2)).toBe(3); });\n"
        "describe('negatives', () => { test('sum', () => { expect(add(-1, -1)).toBe(-2); }); });\n"
        "test.skip('later', () => {});\n")})
    report, code, _ = run_instrumented("jest", project, tmp_path / "report")
    assert statuses(report) == {"calc.test.js > adds": "passed", "calc.test.js > negatives > sum": "failed",
                                "calc.test.js > later": "skipped"}
    assert code == exit_code("jest", project) == 1
