"""The CLI's one error path: a logmine error is one line ``Error: … (hint)``; an unexpected exception is
one line naming the file that holds its (redacted) traceback, or, with ``--debug``, the traceback itself.

A bug cannot be provoked through a public flag on purpose, so these tests replace the stage function
a command calls with one that raises: the only place the tests patch our own code.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logmine.cli.commands import app

runner = CliRunner()
SECRET = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 3  # an OpenAI project key, as a log line might quote it
LINE = re.compile(r"Error: unexpected RuntimeError: the parser choked on (.*) — traceback written to (\S+) "
                  r"\(run with --debug to see it\)")


def _bug(*args, **kwargs):
    raise RuntimeError(f"the parser choked on {SECRET}\nsecond line")


@pytest.fixture
def buggy_ingest(monkeypatch, tmp_path):
    monkeypatch.setattr("logmine.cli.ingest.ingest", _bug)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    return ["ingest", "--demo", "--store", str(tmp_path / "store"), "-q"]


def test_an_unexpected_exception_is_one_line_and_a_traceback_file(buggy_ingest, tmp_path):
    result = runner.invoke(app, buggy_ingest)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    match = LINE.fullmatch(lines[0])
    assert match, lines[0]
    assert SECRET not in result.output and "[REDACTED:" in match[1]
    written = Path(match[2])
    assert written.parent == tmp_path and written.name.startswith("logmine-traceback-")
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    text = written.read_text()
    assert "Traceback (most recent call last)" in text and "in ingest_cmd" in text and "in _bug" in text
    assert "RuntimeError: the parser choked on [REDACTED:" in text and "second line" in text
    assert SECRET not in text


def test_debug_lets_the_exception_through(buggy_ingest, tmp_path):
    result = runner.invoke(app, ["--debug", *buggy_ingest])
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)
    assert "Error:" not in result.output
    assert not list(tmp_path.glob("logmine-traceback-*"))


def test_keyboard_interrupt(monkeypatch, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("logmine.cli.ingest.ingest", interrupted)
    result = runner.invoke(app, ["ingest", "--demo", "--store", str(tmp_path / "store")])
    assert result.exit_code == 130
    assert result.output.strip() == "Error: interrupted"


PATCHED = """
import sys
import logmine.cli.ingest
def bug(*args, **kwargs):
    raise RuntimeError("the parser choked")
logmine.cli.ingest.ingest = bug
from logmine.cli.commands import app
sys.argv[0] = "logmine"
app()
"""


@pytest.mark.parametrize("debug", [False, True])
def test_in_a_real_process(tmp_path, debug):
    """Through the console entry point's own exit handling: stderr only, exit code 1."""
    args = [sys.executable, "-c", PATCHED, *(["--debug"] if debug else []), "ingest", "--demo", "-q",
            "--store", str(tmp_path / "store")]
    done = subprocess.run(args, capture_output=True, text=True, env={"TMPDIR": str(tmp_path), "COLUMNS": "500"})
    assert done.returncode == 1 and done.stdout == ""
    if debug:
        assert "Traceback (most recent call last)" in done.stderr
        assert done.stderr.strip().endswith("RuntimeError: the parser choked")
        assert not list(tmp_path.glob("logmine-traceback-*"))
    else:
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
        written = Path(re.search(r"traceback written to (\S+)", done.stderr)[1])
        assert written.parent == tmp_path and "RuntimeError: the parser choked" in written.read_text()


def test_train_without_torch_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # what an install without the train extra sees
    result = runner.invoke(app, ["train", "init-model", "--out", str(tmp_path / "tiny")])
    assert result.exit_code == 1
    assert result.output.strip() == ("Error: logmine train needs torch, transformers and accelerate (torch is "
                                     "missing) (pip install 'logmine[train]')")



@pytest.mark.parametrize("reader", [True, False])
def test_a_pipe_whose_reader_left_is_seen_even_with_nothing_left_to_flush(monkeypatch, reader):
    """``logmine sql --help | head -1``: the write that met the closed pipe emptied the buffer, so a
    flush succeeds; the pipe itself says its reader is gone (and the error is then not reported)."""
    from logmine.cli.errors import _stdout_closed

    read, write = os.pipe()
    if not reader:
        os.close(read)
    with os.fdopen(write, "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        assert _stdout_closed() is not reader
    if reader:
        os.close(read)
