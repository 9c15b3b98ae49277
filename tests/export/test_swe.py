"""export swe: SWE-bench-style instances, validated by test id in the sandbox before they are written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
import pytest
from calc_repo import CALC, FIX, TESTS, calc_repo
from session_builder import SessionBuilder
from typer.testing import CliRunner

from logmine.cli.commands import app
from logmine.demo import DEMO_DIR
from logmine.export.swe import DATA_FILE, ROW_SCHEMA, SCHEMA, SweExportConfig, export_swe, is_test_path
from logmine.export.swe_check import Runtime, TestSpec, check_instance
from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment
from logmine.verify import VerifyConfig, verify

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

MATHX = "def double(x):\n    return x * 3\n\n\ndef neg(x):\n    return -x\n"
TEST_NEG = "from mathx import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n"
TEST_DOUBLE = "from mathx import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
# the fix and a new test file in one patch: patch and test_patch must split it
FIX_DOUBLE = ("*** Begin Patch\n*** Update File: mathx.py\n@@\n def double(x):\n-    return x * 3\n+    return x * 2\n"
              "*** Add File: tests/test_double.py\n" + "".join(f"+{line}\n" for line in TEST_DOUBLE.splitlines())
              + "*** End Patch\n")
PYTEST = f"{sys.executable} -B -m pytest -q"  # this interpreter has pytest; verify binds it from the host
CHECK = "sh check.sh"  # not a test command: the task is validated by the files it changed, no test ids


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def _sessions(tmp: Path) -> dict[str, str]:
    """Three repositories and their sessions: calc (unittest), mathx (pytest, adds a test file), shx
    (a shell check, validated by the files it changed): returns each repository's commit."""
    calc = tmp / "work" / "calc"
    commits = {"calc": calc_repo(calc)}
    _git(calc, "remote", "add", "origin", "https://github.com/acme/calc.git")
    (SessionBuilder(cwd=str(calc), commit=commits["calc"])
     .user("Fix add so the tests pass").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed.")
     .user("Explain what calc does").agent("It adds.")).write(tmp / "sessions")
    mathx = tmp / "work" / "mathx"
    for rel, text in {"mathx.py": MATHX, "tests/test_neg.py": TEST_NEG}.items():
        (mathx / rel).parent.mkdir(parents=True, exist_ok=True)
        (mathx / rel).write_text(text)
    _git(mathx, "init", "-q")
    _git(mathx, "add", "-A")
    _git(mathx, "commit", "-qm", "start")
    commits["mathx"] = _git(mathx, "rev-parse", "HEAD")
    (SessionBuilder(cwd=str(mathx), commit=commits["mathx"])
     .user("Fix double and add a test for it").run(PYTEST, 1).patch(FIX_DOUBLE).run(PYTEST, 0)
     .agent("Done.")).write(tmp / "sessions")
    shx = tmp / "work" / "shx"
    commits["shx"] = calc_repo(shx, {"check.sh": "python3 -c 'from calc import add; assert add(2, 3) == 5'\n"})
    (SessionBuilder(cwd=str(shx), commit=commits["shx"])
     .user("Make the check pass").run(CHECK, 1).patch(FIX).run(CHECK, 0).agent("Done.")).write(tmp / "sessions")
    return commits


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("swe")
    commits = _sessions(tmp)
    store = tmp / "store"
    ingest(IngestConfig(paths=(tmp / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    verify(VerifyConfig(store=store))
    out = tmp / "out"
    summary = export_swe(SweExportConfig(store=store, out=out))
    rows = {r["repo"].split("/")[-1]: r for r in pq.read_table(out / DATA_FILE).to_pylist()}
    return tmp, commits, summary, rows


def _checkout(repo: Path, commit: str, dest: Path) -> Path:
    """The repository's files at ``commit``, as a consumer of the instance gets them."""
    subprocess.run(["git", "clone", "-q", str(repo), str(dest)], check=True)
    _git(dest, "checkout", "-q", commit)
    shutil.rmtree(dest / ".git")
    return dest


def _spec(row: dict, **change) -> TestSpec:
    fields = {"command": row["test_cmd"], "workdir": ".", "runner": "pytest" if "pytest" in row["test_cmd"] else "unittest",
              "fail_to_pass": tuple(json.loads(row["FAIL_TO_PASS"])), "pass_to_pass": tuple(json.loads(row["PASS_TO_PASS"]))}
    return TestSpec(**{**fields, **change})


def test_one_validated_instance_per_task_graded_by_tests(exported):
    tmp, _, summary, rows = exported
    assert pq.read_table(tmp / "out" / DATA_FILE).column_names == ROW_SCHEMA.names
    assert sorted(rows) == ["calc", "mathx"] and summary.instances == 2 and summary.with_base_commit == 2
    assert summary.skipped == {"no verifier candidate": 1, "not graded by tests": 1}
    (task, why), = summary.not_exported
    assert why == "not graded by tests: validated by files only (SWE-bench instances need FAIL_TO_PASS test ids)"
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()), format_checker=jsonschema.FormatChecker())
    for row in rows.values():
        validator.validate(row)
    calc = rows["calc"]
    assert calc["repo"] == "acme/calc" and calc["instance_id"] == f"acme__calc__{calc['task_id']}"
    assert calc["problem_statement"] == "Fix add so the tests pass" and calc["test_cmd"] == TESTS
    assert json.loads(calc["FAIL_TO_PASS"]) == ["test_calc.T.test_add"] and json.loads(calc["PASS_TO_PASS"]) == []
    assert calc["created_at"].startswith("2026-01-01T00:") and calc["session_id"] and calc["source"] == "logmine"
    assert calc["environment_setup"].startswith("FROM python:3.11-slim\n") and calc["start_state"] is None
    assert rows["mathx"]["repo"] == "mathx"  # no github.com remote: the directory's name
    card = (tmp / "out" / "README.md").read_text()
    assert "SWE-Gym / SkyRL-style trainers" in card and "2 instances name a `base_commit`" in " ".join(card.split())


def test_patch_and_test_patch_split_and_apply_on_the_base_commit(exported, tmp_path):
    tmp, commits, _, rows = exported
    mathx = rows["mathx"]
    assert mathx["base_commit"] == commits["mathx"]
    assert mathx["patch"].startswith("diff --git a/mathx.py b/mathx.py\n") and "test_double" not in mathx["patch"]
    assert mathx["test_patch"].startswith("diff --git a/tests/test_double.py b/tests/test_double.py\nnew file mode")
    assert json.loads(mathx["FAIL_TO_PASS"]) == ["tests/test_double.py::test_double"]
    assert json.loads(mathx["PASS_TO_PASS"]) == ["tests/test_neg.py::test_neg"]
    tree = _checkout(tmp / "work" / "mathx", mathx["base_commit"], tmp_path / "git-apply")
    for text in (mathx["test_patch"], mathx["patch"]):
        subprocess.run(["git", "apply", "-"], cwd=tree, input=text, text=True, check=True)
    assert (tree / "tests/test_double.py").read_text() == TEST_DOUBLE
    assert (tree / "mathx.py").read_text() == MATHX.replace("x * 3", "x * 2")
    calc = rows["calc"]
    assert calc["test_patch"] == "" and calc["base_commit"] == commits["calc"]
    tree = _checkout(tmp / "work" / "calc", calc["base_commit"], tmp_path / "patch-p1")
    subprocess.run(["patch", "-p1", "-s"], cwd=tree, input=calc["patch"], text=True, check=True)
    assert (tree / "calc.py").read_text() == CALC.replace("a - b", "a + b")


def test_test_paths():
    hidden = {"checks/golden.py"}
    for path in ("tests/test_x.py", "pkg/test_y.py", "y_test.go", "a/conftest.py", "web/src/a.test.ts",
                 "web/__tests__/b.js", "src/c.spec.jsx", "checks/golden.py"):
        assert is_test_path(path, hidden), path
    for path in ("calc.py", "src/testing_utils.py", "latest.py", "contest.py", "web/src/a.ts"):
        assert not is_test_path(path, hidden), path


def test_validation_rejects_a_tampered_instance(exported, tmp_path):
    tmp, _, _, rows = exported
    calc = rows["calc"]
    seeds = _checkout(tmp / "work" / "calc", calc["base_commit"], tmp_path / "seeds")
    assert check_instance(seeds, calc["patch"], calc["test_patch"], _spec(calc)) is None
    assert check_instance(seeds, "", calc["test_patch"], _spec(calc)) == \
        "does not validate: not resolved by the patch: test_calc.T.test_add not passing"
    missing = _spec(calc, fail_to_pass=("test_calc.T.test_add", "test_calc.T.test_nope"))
    assert check_instance(seeds, calc["patch"], calc["test_patch"], missing) == \
        "does not validate: not resolved by the patch: test_calc.T.test_nope not passing"
    (seeds / "calc.py").write_text(CALC.replace("a - b", "a + b"))  # the start already solved
    assert check_instance(seeds, "", "", _spec(calc)) == \
        "does not validate: FAIL_TO_PASS test passes without the patch: test_calc.T.test_add"
    (seeds / "calc.py").write_text(CALC)
    assert check_instance(seeds, calc["patch"].replace("-    return a - b", "-    return a * b"), "", _spec(calc)) \
        .startswith("does not validate: patch does not apply: error: patch failed: calc.py:1")


def test_cli_summary_and_json(exported, tmp_path):
    tmp, _, _, _ = exported
    runner = CliRunner()
    result = runner.invoke(app, ["export", "swe", "--store", str(tmp / "store"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"logmine export swe: 2 instances (2 with a base commit, 0 with a start_state tarball) → {tmp_path / 'o'}"
    assert "  skipped 1 task(s): not graded by tests" in lines
    result = runner.invoke(app, ["export", "swe", "--store", str(tmp / "store"), "--out", str(tmp_path / "j"), "--json"])
    summary = json.loads(result.output)
    assert summary["instances"] == 2 and summary["skipped_tasks"]["not graded by tests"] == 1
    missing = runner.invoke(app, ["export", "swe", "--store", str(tmp_path / "none"), "--out", str(tmp_path / "x")])
    assert missing.exit_code == 1 and missing.output.strip() == f"Error: no logmine store at {tmp_path / 'none'}"


def test_datasets_loads_the_instances(exported, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = exported[0] / "out"
    data = datasets.load_dataset("parquet", data_files=str(out / DATA_FILE), split="train",
                                 cache_dir=str(tmp_path / "cache"))
    assert data.num_rows == 2 and data.column_names == ROW_SCHEMA.names
    split = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "cache"))
    assert sorted(split["instance_id"]) == sorted(data["instance_id"])


def test_the_demos_tasks_are_plain_directories_with_start_state_tarballs(demo_tmax, tmp_path):
    calc = shutil.copytree(DEMO_DIR / "repos" / "calc", tmp_path / "calc")
    out = tmp_path / "swe"
    summary = export_swe(SweExportConfig(store=demo_tmax.parents[1] / "store", out=out, plain_dirs=True,
                                         repo_map=(("/home/dev/projects/calc", str(calc)),)))
    rows = pq.read_table(out / DATA_FILE).to_pylist()
    assert summary.instances == len(rows) == 2 and summary.rejects == []
    for row in rows:
        assert row["base_commit"] is None and row["start_state"] == f"start_states/{row['instance_id']}.tar.gz"
        with tarfile.open(out / row["start_state"]) as tar:
            assert "calc.py" in tar.getnames()
        assert json.loads(row["FAIL_TO_PASS"])


def _podman_image() -> bool:
    return shutil.which("podman") is not None and subprocess.run(
        ["podman", "image", "exists", "python:3.11-slim"], capture_output=True).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _podman_image(), reason="podman with the python:3.11-slim image is not available")
def test_an_instance_validates_in_a_container(exported, tmp_path):
    """Start state + test_patch: FAIL_TO_PASS fails; + patch: every test passes, in the image's Python."""
    tmp, _, _, rows = exported
    calc = rows["calc"]
    seeds = _checkout(tmp / "work" / "calc", calc["base_commit"], tmp_path / "seeds")
    container = Runtime(backend="podman", image="python:3.11-slim")
    assert check_instance(seeds, calc["patch"], calc["test_patch"], _spec(calc), container) is None


@pytest.mark.slow
@pytest.mark.skipif(not _podman_image(), reason="podman with the python:3.11-slim image is not available")
def test_the_demos_instances_validate_in_a_container(demo_tmax, tmp_path):
    """The demo's instances, as a consumer gets them (the start-state tarball), validated the SWE-bench
    way in a python:3.11-slim container: FAIL_TO_PASS fails with test_patch alone, all pass with patch."""
    calc = shutil.copytree(DEMO_DIR / "repos" / "calc", tmp_path / "calc")
    out = tmp_path / "swe"
    export_swe(SweExportConfig(store=demo_tmax.parents[1] / "store", out=out, plain_dirs=True,
                               repo_map=(("/home/dev/projects/calc", str(calc)),)))
    rows = pq.read_table(out / DATA_FILE).to_pylist()
    assert len(rows) == 2
    container = Runtime(backend="podman", image="python:3.11-slim")
    for row in rows:
        seeds = tmp_path / row["instance_id"]
        with tarfile.open(out / row["start_state"]) as tar:
            tar.extractall(seeds, filter="data")
        assert check_instance(seeds, row["patch"], row["test_patch"], _spec(row), container) is None, row["instance_id"]
