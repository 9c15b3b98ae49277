"""export tmax: TMax rows and Harbor-style bundles that really run in the sandbox."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
import pytest
from calc_repo import CALC, FIX, TESTS, calc_repo
from session_builder import SessionBuilder

from logmine.export.tmax import SCHEMA, TmaxExportConfig, export_tmax
from logmine.ingest.run import IngestConfig, ingest
from logmine.protocol import SUBMIT
from logmine.sandbox import open_sandbox
from logmine.segment import SegmentConfig, segment
from logmine.verify import VerifyConfig, verify

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")



@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tmax")
    repo = tmp / "work" / "proj"
    commit = calc_repo(repo, {
        ".env": "API_TOKEN=abc123\n",  # a credential file: must not leave the machine
        "notes.txt": "deploy with ghp_" + "FAKE0123456789abcdefghijklmnopqrstuv"[:36] + "\n",
        # caches committed by accident: bytecode naming the author's paths, pytest's last failures
        "__pycache__/calc.cpython-311.pyc": "/home/dev/.venv/bin/python3\n", "stale.pyc": "x",
        ".pytest_cache/v/cache/lastfailed": "{}\n"}, message="s")
    builder = (SessionBuilder(cwd=str(repo), commit=commit)
               .user("Fix add so the tests pass").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed.")
               .user("Explain what calc does").agent("It adds."))
    builder.write(tmp / "sessions")
    store = tmp / "store"
    ingest(IngestConfig(paths=(tmp / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    verify(VerifyConfig(store=store))
    out = tmp / "out"
    return out, export_tmax(TmaxExportConfig(store=store, out=out))


def test_rows_have_exactly_tmax_columns(exported):
    out, summary = exported
    table = pq.read_table(out / "data/train-00000-of-00001.parquet")
    assert table.column_names == ["messages", "ground_truth", "dataset", "env_config", "source"]
    rows = table.to_pylist()
    assert len(rows) == summary.rows == 1 and summary.skipped == {"no verifier candidate": 1}
    schema = json.loads(SCHEMA.read_text())
    for row in rows:
        jsonschema.validate(row, schema)
    row = rows[0]
    assert [m["role"] for m in row["messages"]] == ["system", "user"]
    assert SUBMIT in row["messages"][0]["content"] and "Fix add so the tests pass" in row["messages"][1]["content"]
    assert row["dataset"] == "passthrough" and row["source"] == "logmine"
    assert row["env_config"] == {"env_name": "swerl_vanillux_sandbox", "image": "python:3.11-slim",
                                 "task_id": row["ground_truth"]}


def test_bundle_layout_and_redaction(exported):
    out, summary = exported
    task_id = pq.read_table(out / "data/train-00000-of-00001.parquet").column("ground_truth")[0].as_py()
    bundle = out / "tasks" / task_id
    for name in ("instruction.md", "task.toml", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh",
                 "environment/seeds/calc.py", "environment/seeds/test_calc.py"):
        assert (bundle / name).is_file(), name
    seeds = bundle / "environment/seeds"
    assert not (seeds / ".env").exists() and not (seeds / ".git").exists()
    notes = (seeds / "notes.txt").read_text()  # the token's pseudonym: its prefix and length, other characters
    assert "FAKE0123456789" not in notes and re.fullmatch(r"deploy with ghp_[A-Za-z0-9]{36}\n", notes), notes
    assert (seeds / "calc.py").read_text() == CALC  # the start state, not the end
    assert 'network_mode = "no-network"' in (bundle / "task.toml").read_text()  # replaced allow_internet = false
    with tarfile.open(out / "task-data.tar.gz") as tar:
        assert f"{task_id}/tests/test.sh" in tar.getnames()
    assert summary.left_out_files >= 2  # .env and .git
    assert (bundle / "image.txt").read_text() == "python:3.11-slim\n"  # the row's image, for runners reading it
    card = (out / "README.md").read_text()  # the row's image is a base: the card says to build the Dockerfile
    assert "passes only in the image built from its `tasks/<task_id>/environment/Dockerfile`" in " ".join(card.split())
    caches = [p for p in seeds.rglob("*") if p.name in ("__pycache__", ".pytest_cache") or p.suffix == ".pyc"]
    assert not caches  # bytecode and tool caches are never seeds


def _reward(box, bundle: Path, solve: bool) -> str:
    files = {f".tests/{p.relative_to(bundle / 'tests')}": p.read_text() for p in (bundle / "tests").rglob("*") if p.is_file()}
    files[".solution/solve.sh"] = (bundle / "solution/solve.sh").read_text()
    box.install_files(files)
    env = "WORKSPACE=/workspace TESTS_DIR=/workspace/.tests LOGS_DIR=/workspace/.logs"
    if solve:
        assert box.run(f"{env} bash /workspace/.solution/solve.sh").exit_code is not None
    # as Harbor runs it: the script's stdout captured into $LOGS_DIR/test-stdout.txt
    result = box.run(f"mkdir -p /workspace/.logs && {env} bash /workspace/.tests/test.sh "
                     "> /workspace/.logs/test-stdout.txt 2>&1")
    logs = Path(box.workspace) / ".logs"
    assert result.exit_code == 0, (logs / "test-stdout.txt").read_text()
    assert (logs / "test-stdout.txt").read_text().startswith((logs / "check-output.txt").read_text() or "?")
    return (logs / "reward.txt").read_text().strip()


def test_bundle_rewards_zero_at_start_and_one_after_solve(exported):
    out, _ = exported
    task_id = pq.read_table(out / "data/train-00000-of-00001.parquet").column("ground_truth")[0].as_py()
    bundle = out / "tasks" / task_id
    with open_sandbox(bundle / "environment/seeds", mount_at="/workspace") as box:
        assert _reward(box, bundle, solve=False) == "0"
    with open_sandbox(bundle / "environment/seeds", mount_at="/workspace") as box:
        assert _reward(box, bundle, solve=True) == "1"


def test_a_solution_that_deletes_the_failing_test_gets_reward_zero(exported):
    """verify graded the task by test: the bundle's grader wants test_add to pass, not just exit 0."""
    out, _ = exported
    task_id = pq.read_table(out / "data/train-00000-of-00001.parquet").column("ground_truth")[0].as_py()
    bundle = out / "tasks" / task_id
    spec = json.loads((bundle / "tests/tests.json").read_text())
    assert spec["runner"] == "unittest" and spec["fail_to_pass"] == ["test_calc.T.test_add"]
    skip = "import unittest\n\n\nclass T(unittest.TestCase):\n    @unittest.skip('later')\n    def test_add(self):\n        pass\n"
    for cheat, why in ((f"rm test_calc.py && {TESTS}", "the test run reported no test"),
                       (f"printf %s {shlex.quote(skip)} > test_calc.py && {TESTS}", "not passing: test_calc.T.test_add")):
        with open_sandbox(bundle / "environment/seeds", mount_at="/workspace") as box:
            # Python 3.11's unittest exits 0 when no test ran or all were skipped: by exit code, a pass
            assert box.run(cheat, cwd="/workspace").exit_code == 0
            assert _reward(box, bundle, solve=False) == "0"
            assert why in (Path(box.workspace) / ".logs/grade.txt").read_text()


HARBOR = Path(os.environ.get("LOGMINE_HARBOR", Path(__file__).parents[2] / ".ci/harbor-venv/bin/harbor"))


@pytest.mark.skipif(not HARBOR.exists(), reason="harbor is not installed (bash .ci/install-tools.sh, or set LOGMINE_HARBOR)")
def test_exported_bundles_pass_harbor_lint(exported):
    out, summary = exported
    assert summary.reproduced == summary.rows >= 1
    for task in (out / "tasks").iterdir():
        lint = subprocess.run([str(HARBOR), "lint", str(task)], capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
        toml = (task / "task.toml").read_text()
        assert "docker_image" not in toml and "allow_internet" not in toml
        assert (task / "instruction.md").read_text() == "Fix add so the tests pass\n"


def test_a_verified_task_is_exported_on_the_environment_verify_detected(exported, monkeypatch, tmp_path):
    """Export reads verify's ``environments`` row rather than detecting again: the Dockerfile then
    matches the environment the verdict was reached in."""
    out, summary = exported

    def detect_again(*_args):
        raise AssertionError("detected again")

    monkeypatch.setattr("logmine.export.tmax.detect", detect_again)
    again = export_tmax(TmaxExportConfig(store=out.parent / "store", out=tmp_path / "again"))
    assert again.rows == summary.rows >= 1 and not again.not_exported
    task_id = pq.read_table(out / "data/train-00000-of-00001.parquet").column("ground_truth")[0].as_py()
    dockerfile = "environment/Dockerfile"
    assert (tmp_path / "again/tasks" / task_id / dockerfile).read_text() == \
        (out / "tasks" / task_id / dockerfile).read_text()


def test_build_images_refuses_what_cannot_work(exported, tmp_path, monkeypatch):
    from logmine.export.images import ImageBuilder, ImageError, ImageOptions, _image_name

    out, _ = exported
    store = out.parent / "store"
    with pytest.raises(ImageError, match="--push needs --image-prefix"):
        export_tmax(TmaxExportConfig(store=store, out=tmp_path / "a", build_images=True, push=True))
    with pytest.raises(ImageError, match="invalid --image-prefix"):
        ImageBuilder(ImageOptions(prefix="Registry Host/ns"))
    monkeypatch.setenv("PATH", str(tmp_path))  # neither podman nor docker
    with pytest.raises(ImageError, match="needs podman or docker; neither is installed"):
        export_tmax(TmaxExportConfig(store=store, out=tmp_path / "b", build_images=True))
    with pytest.raises(ImageError, match="docker is not installed"):
        ImageBuilder(ImageOptions(engine="docker"))
    assert not (tmp_path / "b").exists()
    assert _image_name("My Project (copy)") == "my-project-copy" and _image_name("...") == "task"
