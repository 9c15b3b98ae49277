"""Disk quota of the workspace, tagged temporary directories swept after a kill -9, children reaped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logmine.sandbox import Limits
from logmine.sandbox.tmp import sweep_stale, tagged_tempdir

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the disk quota is a tmpfs, mounted only as root")
QUOTA = Limits(wall_s=30, disk_mb=64, file_mb=8192)  # the per-file limit must not be what stops the writes


def _used_mb(path: Path) -> float:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize / 2**20


@ROOT_ONLY
def test_fallocate_cannot_pass_the_quota(make_box):
    box = make_box(limits=QUOTA)
    result = box.run("fallocate -l 6G big; echo rc=$?; ls -s big 2>/dev/null")
    assert "rc=1" in result.output and "No space left on device" in result.output
    assert _used_mb(box.workspace) <= 64


@ROOT_ONLY
def test_dd_stops_at_the_quota(make_box):
    box = make_box(limits=QUOTA)
    result = box.run("dd if=/dev/zero of=zeros bs=1M count=200 2>&1; echo rc=$?")
    assert "No space left on device" in result.output and "rc=1" in result.output
    assert (box.workspace / "zeros").stat().st_size < 64 * 2**20
    assert box.run("for i in $(seq 100); do head -c 1M /dev/zero > f$i || break; done; ls | wc -l").exit_code == 0
    assert _used_mb(box.workspace) <= 64


@ROOT_ONLY
def test_the_quota_is_gone_with_the_sandbox(make_box):
    box = make_box(limits=QUOTA)
    root = box.workspace.parent
    assert os.path.ismount(root)
    box.close()
    assert not root.exists()


_KILLED = """
import sys, time
from pathlib import Path
from logmine.sandbox import Limits, open_sandbox
from logmine.sandbox.tmp import tagged_tempdir
src = Path(sys.argv[1])
box = open_sandbox(src, limits=Limits(wall_s=30, disk_mb=16))
verify = tagged_tempdir("logmine-verify-")
print(box.workspace.parent, verify, flush=True)
box.run("sleep 60")
"""


def test_temp_dirs_of_a_killed_process_are_swept(bwrap_ready, tmp_path):
    (tmp_path / "src").mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(tmp_path / "src")], stdout=subprocess.PIPE, text=True)
    state, verify = (Path(p) for p in proc.stdout.readline().split())
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert state.exists() and verify.exists()
    mine = tagged_tempdir("logmine-verify-")
    try:
        removed = sweep_stale()
        assert state in removed and verify in removed
        assert not state.exists() and not verify.exists() and mine.exists()
    finally:
        mine.rmdir()


def test_untagged_and_foreign_dirs_are_left_alone(tmp_path):
    (tmp_path / "logmine-verify-abc").mkdir()
    (tmp_path / "logmine-verify-1.2-x").write_text("a file, not a directory")
    (tmp_path / "other-99999999.1-x").mkdir()
    dead = tmp_path / "logmine-sandbox-99999999.1-x"
    dead.mkdir()
    assert sweep_stale(dir=str(tmp_path)) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logmine-verify-1.2-x", "logmine-verify-abc",
                                                          "other-99999999.1-x"]


def _zombie_children() -> list[int]:
    zombies = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if stat[0] == b"Z" and int(stat[1]) == os.getpid():
                zombies.append(int(entry))
    return zombies


def test_no_defunct_bwrap_after_runs(make_box):
    box = make_box()
    box.run("true")
    box.run("sleep 5", timeout_s=0.5)  # killed at its deadline
    shell = box.shell()
    shell.run("cd /tmp")
    shell.run("sleep 5", timeout_s=0.5)
    shell.close()
    box.run("sleep 30 &")  # a background child left behind
    box.close()
    assert _zombie_children() == []
