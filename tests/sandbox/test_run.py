"""``Sandbox.run``: a fresh ``bash -c`` per command, its directory, environment and exit code, and
which results are unscored."""

from __future__ import annotations

import os
import shutil
import socket
import time

import pytest

from logmine.sandbox import Limits, SandboxError, available_backends, open_sandbox


def test_a_command_runs_at_mount_at_with_its_exit_code(make_box):
    box = make_box({"src/calc.py": "x = 1\n"}, mount_at="/home/dev/projects/fixadd")
    result = box.run("pwd; cat /home/dev/projects/fixadd/src/calc.py; exit 3")
    assert result.exit_code == 3 and not result.unscored
    assert result.output == "/home/dev/projects/fixadd\nx = 1\n"
    assert box.mount_at == "/home/dev/projects/fixadd"


def test_cwd_may_be_absolute_or_relative_to_mount_at(make_box):
    box = make_box({"src/a.txt": "a\n"})
    assert box.run("pwd", cwd="/workspace/src").output == "/workspace/src\n"
    assert box.run("pwd", cwd="src").output == "/workspace/src\n"


def test_stdout_and_stderr_are_interleaved(make_box):
    result = make_box().run("echo one; echo two >&2; echo three")
    assert result.output == "one\ntwo\nthree\n"


def test_the_environment_is_the_sandbox_s_own_plus_what_the_caller_passes(make_box, monkeypatch):
    monkeypatch.setenv("LOGMINE_HOST_SECRET", "do-not-leak")
    result = make_box().run("env | sort", env={"EXTRA": "1"})
    assert "do-not-leak" not in result.output
    assert "EXTRA=1" in result.output and "HOME=/tmp/home" in result.output
    assert "PATH=/opt/logmine/bin:/usr/bin:" in result.output


def test_files_persist_across_runs_but_tmp_and_exports_do_not(make_box):
    box = make_box()
    box.run("echo kept > out.txt; echo gone > /tmp/x; export Y=1")
    assert box.run("cat out.txt; cat /tmp/x; echo Y=$Y").output == \
        "kept\ncat: /tmp/x: No such file or directory\nY=\n"
    assert (box.workspace / "out.txt").read_text() == "kept\n"  # the caller reads results on the host


def test_a_timeout_is_unscored_with_the_output_so_far(make_box):
    result = make_box().run("echo before; sleep 30", timeout_s=2)
    assert result.timed_out and result.unscored and result.exit_code is None
    assert result.output == "before\n" and result.error is None


def test_a_sandbox_that_cannot_start_is_an_error_not_a_failure(make_box):
    result = make_box().run("echo hi", cwd="/workspace/missing")
    assert result.unscored and result.exit_code is None
    assert result.error.startswith("sandbox failed to start (exit 1): bwrap: Can't chdir to /workspace/missing")


def test_a_closed_sandbox_answers_unscored_and_its_copy_is_gone(make_box):
    box = make_box({"a.txt": "a\n"})
    copy = box.workspace
    box.close()
    box.close()  # idempotent
    assert not copy.exists()
    assert box.run("true").error == "the sandbox is closed"
    assert box.shell().run("true").error == "the sandbox is closed"
    with pytest.raises(SandboxError):
        box.install_files({"a.txt": "b\n"})


def test_the_context_manager_removes_the_copy(bwrap_ready, tmp_path):
    with open_sandbox(tmp_path) as box:
        copy = box.workspace
        assert copy.is_dir() and copy != tmp_path
    assert not copy.exists() and tmp_path.is_dir()


def test_bad_arguments_are_value_errors_and_a_missing_source_a_sandbox_error(bwrap_ready, tmp_path):
    with pytest.raises(ValueError, match="unknown sandbox backend 'lxc'"):
        open_sandbox(tmp_path, backend="lxc")
    with pytest.raises(ValueError, match="collides"):
        open_sandbox(tmp_path, mount_at="/usr/src/app")
    with pytest.raises(ValueError, match="needs an image"):
        open_sandbox(tmp_path, backend="docker")
    with pytest.raises(SandboxError, match="not a directory"):
        open_sandbox(tmp_path / "missing")


def test_bwrap_is_listed_as_available(bwrap_ready):
    assert available_backends()[0] == "bwrap"


def test_commands_see_the_workspace_as_their_own_user(make_box):
    box = make_box({"a.txt": "a\n"})
    result = box.run("stat -c '%U' a.txt; touch new && stat -c '%U' new")
    assert result.output == "agent\nagent\n"
    if os.geteuid() == 0:
        assert (box.workspace / "new").stat().st_uid == box.identity.uid != 0


def test_limits_apply_per_command(make_box):
    box = make_box(limits=Limits(cpu_s=5, processes=64, file_mb=2, memory_mb=512))
    result = box.run("ulimit -t; ulimit -u; ulimit -f; ulimit -d")
    assert result.output.split() == ["5", "64", str(2 * 1024), str(512 * 1024)]  # -f and -d in KiB


def test_the_copy_keeps_symlinks_and_skips_special_files(bwrap_ready, tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "link").symlink_to("a.txt")
    os.mkfifo(tmp_path / "fifo")  # copying it as a file would block forever
    with open_sandbox(tmp_path) as box:
        assert (box.workspace / "link").is_symlink() and not (box.workspace / "fifo").exists()
        assert box.run("cat link").output == "a\n"


def test_files_the_host_writes_into_the_copy_stay_editable_inside(make_box):
    box = make_box({"calc.py": "a\n"})
    (box.workspace / "calc.py").unlink()
    (box.workspace / "calc.py").write_text("b\n")  # e.g. a patch applied on the host, as root
    (box.workspace / "new").mkdir()
    (box.workspace / "new" / "f.txt").write_text("c\n")
    result = box.run("echo more >> calc.py && echo more >> new/f.txt && touch new/g && echo ok")
    assert result.output == "ok\n", result


def test_network_true_shares_the_host_network(make_box):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        port = listener.getsockname()[1]
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('CONNECTED')"
        result = make_box(network=True).run(f"python3 -c \"{probe}\"")
    finally:
        listener.close()
    assert result.output == "CONNECTED\n", result


def test_package_managers_work_offline_without_network(make_box):
    """Without network an install fails at once (or is served from a cache) instead of retrying until
    the command's time runs out; with network the sandbox leaves the managers as they are."""
    offline = make_box().run("env | grep -E '^(npm_config_offline|PIP_NO_INDEX|UV_OFFLINE)=' | sort")
    assert offline.output == "PIP_NO_INDEX=1\nUV_OFFLINE=1\nnpm_config_offline=true\n", offline
    assert make_box(network=True).run("env | grep -c -E '^(npm_config_offline|PIP_NO_INDEX)=' || true").output == "0\n"
    if shutil.which("npm") is None:
        return
    box = make_box({"package.json": '{"name": "p", "version": "1.0.0"}\n'}, limits=Limits(wall_s=60))
    started = time.monotonic()
    result = box.run("npm install --save-dev left-pad")
    assert result.exit_code not in (0, None) and time.monotonic() - started < 30, result
    assert "ENOTCACHED" in result.output or "offline" in result.output.lower(), result.output[-500:]
