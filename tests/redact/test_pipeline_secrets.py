"""Planted secrets through the whole pipeline: ingest → segment → verify → export sft and tmax.

Every kind of ``planted()`` secret (generated when the test runs) is planted in every channel of a
real Codex session (G2 lines written by ``SessionBuilder``) whose cwd is a real git repository:
the user's prompt, a shell command, a function call's argument JSON, a tool output, a tool output
JSON-encoded within the line, files of the repository (copied into the export's seeds; one that the
task's patch changes) and the output of commands verify replays (``python3 check.py N`` prints the
secret of ``secrets/N.txt``). Then every file written — the store's Parquet parts column by column,
its catalog, the export directories, ``task-data.tar.gz`` unpacked — is searched for every planted
value: none may be found.

A session whose working directory is a home-like folder (not a repository) is run twice: as by
default (not rebuilt) and with the user's ``plain_dirs`` opt-in (copied without credential files).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from calc_repo import FIX, TEST_CALC, TESTS, calc_repo
from conftest import query
from redact.leaks import find_leaks
from redact.planted import planted
from session_builder import SessionBuilder

from logmine.export.sft import SftExportConfig, export_sft
from logmine.export.tmax import TmaxExportConfig, export_tmax
from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment
from logmine.verify import VerifyConfig, verify

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

PLANTED = planted()  # random on every run: nothing secret-shaped is committed
NEEDLES = sorted({n for p in PLANTED for n in p.needles})
URL_PASSWORD = next(p for p in PLANTED if p.kind == "url_password")

CALC = f"# {URL_PASSWORD.text}\ndef add(a, b):\n    return a - b\n"  # the patch rewrites this file
CHECK = ("import sys\n\nfrom calc import add\n\nprint(open(f'secrets/{sys.argv[1]}.txt').read())\n"
         "sys.exit(0 if add(2, 3) == 5 else 1)\n")


@dataclass(frozen=True)
class Run:
    inputs: list[Path]  # the session files and the repository
    store: Path
    sft: Path
    tmax: Path
    statuses: dict[str, int]  # (kind, status) of verifiers, counted
    not_exported: list[tuple[str, str]]  # (task_id, why) of tasks export tmax chose yet did not write


def _repo(path: Path) -> str:
    files = {"calc.py": CALC, "check.py": CHECK, "config.txt": "\n".join(p.text for p in PLANTED) + "\n",
             ".env": "".join(f"SECRET_{i}={p.value}\n" for i, p in enumerate(PLANTED) if "\n" not in p.value)}
    files.update((f"secrets/{i}.txt", p.channel_texts()["file"]) for i, p in enumerate(PLANTED))
    return calc_repo(path, files)


def _call(builder: SessionBuilder, i: int, text: str) -> None:
    """A function call with the secret in its argument JSON, answered by a tool output that is
    itself JSON-encoded within the line (as Codex's shell tool writes it)."""
    call_id = f"call_args_{i}"
    builder._add("response_item", {"type": "function_call", "name": "shell", "call_id": call_id,
                                   "arguments": json.dumps({"command": ["bash", "-lc", text], "workdir": builder.cwd})})
    output = json.dumps({"output": text, "metadata": {"exit_code": 127, "duration_seconds": 0.1}})
    builder._add("response_item", {"type": "function_call_output", "call_id": call_id, "output": output})


def _session(repo: Path, commit: str) -> SessionBuilder:
    prompt = "Fix add so that the checks pass. Context:\n" + "\n".join(p.channel_texts()["prompt"] for p in PLANTED)
    builder = SessionBuilder(cwd=str(repo), commit=commit).user(prompt)
    for i, p in enumerate(PLANTED):  # fails at the start, printing its secret: a check command verify replays
        builder.run(f"python3 check.py {i}", 1, output=p.channel_texts()["tool_output"])
    for i, p in enumerate(PLANTED):
        builder.run(p.channel_texts()["command"], 0)
        _call(builder, i, p.text)
    builder.patch(FIX)
    for i, p in enumerate(PLANTED):
        builder.run(f"python3 check.py {i}", 0, output=p.text)
    return builder.run(TESTS, 0).agent("Fixed; the checks pass.")


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> Run:
    tmp = tmp_path_factory.mktemp("pipeline-secrets")
    repo = tmp / "work" / "proj"
    session = _session(repo, _repo(repo)).write(tmp / "sessions")
    store = tmp / "store"
    ingest(IngestConfig(paths=(tmp / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    verified = verify(VerifyConfig(store=store, jobs=2))
    sft, tmax = tmp / "sft", tmp / "tmax"
    export_sft(SftExportConfig(store=store, out=sft))
    exported = export_tmax(TmaxExportConfig(store=store, out=tmax))
    statuses = {f"{kind}:{status}": n for (kind, status), n in verified.statuses.items()}
    return Run([session, repo], store, sft, tmax, statuses, exported.not_exported)


def test_every_secret_is_planted_in_every_channel(pipeline):
    session, repo = pipeline.inputs
    lines = [json.loads(line) for line in session.read_text().splitlines()]
    channels = {
        "prompt": [m["payload"]["message"] for m in lines if m["payload"].get("type") == "user_message"],
        "command": [json.loads(m["payload"]["arguments"]).get("command") for m in lines
                    if m["payload"].get("name") == "shell_command"],
        "arguments": [m["payload"]["arguments"] for m in lines if m["payload"].get("name") == "shell"],
        "tool_output": [m["payload"]["output"] for m in lines if m["payload"].get("type") == "function_call_output"],
        "encoded_output": [json.loads(m["payload"]["output"])["output"] for m in lines
                           if m["payload"].get("call_id", "").startswith("call_args_")
                           and m["payload"].get("type") == "function_call_output"],
        "repository": [p.read_text() for p in (repo / "secrets").iterdir()],
    }
    for name, texts in channels.items():
        joined = "\n".join(str(t) for t in texts)
        assert all(n in joined for n in NEEDLES), name


def test_the_pipeline_did_the_work(pipeline):
    """The search below means something only if verify replayed the checks and both exports wrote."""
    assert pipeline.statuses.get("check_command:validated", 0) == len(PLANTED), pipeline.statuses
    excerpts = query(pipeline.store, "SELECT before_excerpt FROM verifications WHERE before_excerpt LIKE '%REDACTED%'")
    assert len(excerpts) >= len(PLANTED) - 2  # the replayed output held the secret, redacted at the gate
    assert list((pipeline.sft / "data").glob("*.parquet")) and (pipeline.tmax / "task-data.tar.gz").is_file()
    assert len(list((pipeline.tmax / "tasks").iterdir())) == 1, pipeline.not_exported


def test_store_holds_no_planted_secret(pipeline):
    """Ingest's tables, segment's tasks and verifiers, verify's results and excerpts, the catalog."""
    assert find_leaks([pipeline.store], NEEDLES) == []


def test_sft_export_holds_no_planted_secret(pipeline):
    assert find_leaks([pipeline.sft], NEEDLES) == []


def _tmax_files(out: Path, group: str) -> list[Path]:
    bundle = next((out / "tasks").iterdir())
    return {
        "rows": [out / "data", out / "README.md"],
        "instruction": [bundle / "instruction.md", bundle / "task.toml"],
        "seeds": [bundle / "environment"],
        "tests": [bundle / "tests"],
        "solution": [bundle / "solution"],
        "tarball": [out / "task-data.tar.gz"],
    }[group]


@pytest.mark.parametrize("group", ["rows", "instruction", "seeds", "tests", "solution", "tarball"])
def test_tmax_export_holds_no_planted_secret(pipeline, group):
    leaks = find_leaks(_tmax_files(pipeline.tmax, group), NEEDLES)
    assert leaks == [], [str(leak) for leak in leaks]


def test_credential_files_stay_out_of_the_seeds(pipeline):
    bundle = next((pipeline.tmax / "tasks").iterdir())
    seeds = bundle / "environment" / "seeds"
    assert (seeds / "config.txt").is_file() and (seeds / "secrets" / "0.txt").is_file()
    assert not (seeds / ".env").exists() and not (seeds / ".git").exists()
    text, original = (seeds / "config.txt").read_text(), (pipeline.inputs[1] / "config.txt").read_text()
    assert text != original and len(text) == len(original)  # pseudonyms: the same shape, no secret
    assert not any(n in text for n in NEEDLES)


# -- a session whose cwd is a home-like directory, not a git repository --------------------------

def _home(path: Path) -> list[str]:
    """A home directory holding credentials where people keep them; returns the needles."""
    by_kind = {p.kind: p for p in PLANTED}
    plain = "Zq" + URL_PASSWORD.value[::-1]  # a bare password, no context a rule could see
    files = {
        ".bash_history": f"ls\n{by_kind['password'].text}\n",
        ".codex/auth.json": json.dumps({"OPENAI_API_KEY": by_kind["openai_api_key"].value}),
        ".config/gh/hosts.yml": f"github.com:\n    oauth_token: {by_kind['github_token'].value}\n    user: dev\n",
        "passwords.txt": f"bank  {plain}\n",
        "calc.py": "def add(a, b):\n    return a - b\n",
        "test_calc.py": TEST_CALC,
    }
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    return [plain, by_kind["openai_api_key"].value, by_kind["github_token"].value, *by_kind["password"].needles]


@pytest.fixture(scope="module", params=[False, True], ids=["default", "plain-dirs"])
def home_pipeline(request, tmp_path_factory) -> tuple[Run, list[str]]:
    plain_dirs = request.param  # the user's opt-in to copying a directory that is not a repository
    tmp = tmp_path_factory.mktemp("home-secrets")
    home = tmp / "home" / "dev"
    needles = _home(home)
    # the header names a commit (Codex recorded one), but the directory found there is no repository
    builder = (SessionBuilder(cwd=str(home), commit="c" * 40)
               .user("Fix add so the tests pass").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed."))
    session = builder.write(tmp / "sessions")
    store = tmp / "store"
    ingest(IngestConfig(paths=(tmp / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    verified = verify(VerifyConfig(store=store, jobs=2, plain_dirs=plain_dirs))
    sft, tmax = tmp / "sft", tmp / "tmax"
    export_sft(SftExportConfig(store=store, out=sft))
    exported = export_tmax(TmaxExportConfig(store=store, out=tmax, plain_dirs=plain_dirs, include_unvalidated=True))
    statuses = {f"{kind}:{status}": n for (kind, status), n in verified.statuses.items()}
    return Run([session, home], store, sft, tmax, statuses, exported.not_exported), needles


def test_home_directory_secrets_stay_out_of_the_store_and_sft(home_pipeline):
    run, needles = home_pipeline
    assert find_leaks([run.inputs[1]], needles)  # they are there to find
    assert find_leaks([run.store, run.sft], needles) == []


def test_home_directory_is_not_copied_into_the_tmax_export(home_pipeline, request):
    run, needles = home_pipeline
    if "default" in request.node.callspec.id:  # not a repository, no opt-in: not rebuilt at all
        assert run.statuses and all(s.endswith(":not_rebuilt") for s in run.statuses), run.statuses
    else:  # copied without its credential files; the task itself still verifies
        assert run.statuses.get("test_command:validated"), run.statuses
        seeds = next((run.tmax / "tasks").iterdir()) / "environment" / "seeds"
        assert (seeds / "calc.py").is_file() and not (seeds / "passwords.txt").exists()
        assert not (seeds / ".codex").exists() and not (seeds / ".bash_history").exists()
    if run.tmax.exists():
        leaks = find_leaks([run.tmax], needles)
        assert leaks == [], [str(leak) for leak in leaks]
