"""The ``logmine`` program: what it starts before importing its command modules (ingest's forkserver,
for an ingest with local worker processes only); its console script reads with worker processes; and
ingest's forkserver and workers die with their driver."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES

from logmine.__main__ import COMMAND_MODULES, command_module, wants_ingest_workers
from logmine.executor.forkserver import INGEST_PRELOAD


@pytest.mark.parametrize(("argv", "wanted"), [
    (["ingest", "logs/"], True),
    (["--debug", "ingest", "logs/", "--jobs", "4"], True),
    (["ingest", "logs/", "--executor=local"], True),
    (["ingest", "logs/", "--jobs", "1"], False),
    (["ingest", "logs/", "-j", "1"], False),
    (["ingest", "logs/", "--jobs=1"], False),
    (["ingest", "logs/", "--executor", "ray", "--ray-address", "h:6379"], False),
    (["ingest", "--help"], False),
    (["segment"], False),
    (["stats", "ingest"], False),
    ([], False),
])
def test_only_an_ingest_with_local_workers_starts_them_early(argv, wanted):
    assert wants_ingest_workers(argv) is wanted


def test_the_early_preload_is_the_one_ingest_uses():
    assert INGEST_PRELOAD == ("logmine.ingest.worker",)


def _registered(modules: list[str]) -> set[str]:
    """The command names the app has after importing ``modules`` of logmine.cli, in a fresh process."""
    code = ("import importlib, sys, typer.main; [importlib.import_module('logmine.cli.' + m) for m in sys.argv[1:]]; "
            "from logmine.cli.main import app; print(' '.join(typer.main.get_command(app).commands))")
    out = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_each_command_is_registered_by_the_module_the_program_imports_for_it():
    every = _registered(sorted(set(COMMAND_MODULES.values())))
    assert every == set(COMMAND_MODULES) == _registered(["commands"])
    for module in sorted(set(COMMAND_MODULES.values())):
        assert _registered([module]) == {c for c, m in COMMAND_MODULES.items() if m == module}, module


@pytest.mark.parametrize(("argv", "module"), [
    (["ingest", "logs/"], "ingest"), (["--debug", "stats"], "ingest"), (["export", "sft", "--help"], "export"),
    (["train", "grpo"], "train"), (["filter"], "evaluate"), (["--help"], None), ([], None), (["ingset"], None),
])
def test_a_command_line_names_the_module_of_its_command(argv, module):
    assert command_module(argv) == module


def test_an_ingest_command_line_imports_neither_training_nor_export(tmp_path):
    # reported by an exit handler: an ingest ends its process once the handlers have run
    code = ("import atexit, runpy, sys; sys.argv = ['logmine', 'ingest', '--help']\n"
            "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith(("
            "'logmine.cli.', 'logmine.export', 'logmine.train', 'logmine.verify'))), file=sys.stderr))\n"
            "runpy.run_module('logmine', run_name='__main__')\n")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert "'logmine.cli.ingest'" in loaded and "logmine.cli.export" not in loaded, loaded
    assert "logmine.export" not in loaded and "logmine.train" not in loaded and "logmine.verify" not in loaded, loaded


def test_importing_the_program_imports_neither_the_cli_nor_a_stage():
    # multiprocessing's workers import the main script again (the console script imports this module):
    # anything more here is imported again by every worker
    code = "import sys, logmine.__main__; print(sorted(m for m in sys.modules if m.startswith(('logmine.', 'pyarrow'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['logmine.__main__']"


def test_the_console_script_ingests_with_worker_processes(tmp_path):
    # the console script is the workers' main script; it used to start a forkserver again in each
    # worker (from the copied argv), which failed: every ingest of 8 MB or more died
    entry = importlib.metadata.entry_points(group="console_scripts", name="logmine")
    module, func = next(iter(entry)).value.split(":")
    script = tmp_path / "logmine"  # what pip writes for the entry point
    script.write_text(f"import re, sys\nfrom {module} import {func}\nif __name__ == '__main__':\n"
                      f"    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    sys.exit({func}())\n")
    corpus = tmp_path / "corpus"
    for i in range(3):  # 12 MB: above the size below which ingest reads in-process
        shutil.copytree(FIXTURES, corpus / f"c{i}")
    done = subprocess.run([sys.executable, str(script), "ingest", str(corpus), "--store", str(tmp_path / "store"),
                           "--jobs", "2", "-q", "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    files = summary["files"]
    assert files["new"] + files.get("empty", 0) == files["seen"] > 0 and not summary["bad_files"]  # Claude's empty files


def test_ingest_workers_and_their_forkserver_die_with_the_driver():
    # the workers run a unit that outlives the driver; before, they (and the forkserver, kept alive by
    # their copies of its pipe) lived on after a kill -9
    code = ("import json, threading, time; from logmine.executor import ExecutorConfig, forkserver, make_executor; "
            "from multiprocessing import forkserver as server; pool = make_executor(ExecutorConfig(jobs=2), "
            "processes=True, preload=forkserver.INGEST_PRELOAD); "
            "threading.Thread(target=lambda: list(pool.map(time.sleep, [60, 60])), daemon=True).start(); "
            "time.sleep(3); print(server._forkserver._forkserver_pid, flush=True); time.sleep(60)")
    driver = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    server = int(driver.stdout.readline())
    pids = [server, *_children(server)]
    assert len(pids) == 3 and all(_running(pid) for pid in pids)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if _running(pid)]


def _children(parent: int) -> list[int]:
    """The processes whose parent is ``parent`` (from ``/proc/*/stat``)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize(("exit_with", "code", "stderr"), [("None", 0, ""), ("3", 3, ""), ("'no store'", 1, "no store\n")])
def test_an_ingest_process_ends_without_teardown_as_python_would_end(tmp_path, exit_with, code, stderr):
    """The exit handlers run, what was printed arrives, and the exit status is Python's own."""
    mark = tmp_path / "atexit-ran"
    program = ("import atexit, sys\nfrom logmine.__main__ import exit_without_teardown\n"
               f"atexit.register(lambda: open({str(mark)!r}, 'w').close())\n"
               f"def app():\n    sys.stdout.write('summary')\n    raise SystemExit({exit_with})\n"
               "exit_without_teardown(app)\nprint('not reached')\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr, mark.exists()) == (code, "summary", stderr, True)


@pytest.mark.parametrize(("argv", "preset", "seen"), [
    (["ingest", "--help"], None, "1"), (["ingest", "--help"], "4", "4"), (["segment", "--help"], None, None)])
def test_an_ingest_starts_no_blas_threads_unless_the_user_asks(argv, preset, seen):
    code = ("import atexit, os, runpy, sys\n"
            f"sys.argv = ['logmine', *{argv!r}]\n"
            "atexit.register(lambda: print(repr(os.environ.get('OPENBLAS_NUM_THREADS')), file=sys.stderr))\n"
            "runpy.run_module('logmine', run_name='__main__')\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == repr(seen), done.stderr[-2000:]
