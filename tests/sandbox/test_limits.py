"""Limits, the start-up script, the setpriv prefix and the unscored rule, without a sandbox."""

from __future__ import annotations

import os
import resource
import subprocess

import pytest

from logmine.sandbox import CommandResult, Limits
from logmine.sandbox.identity import Identity, drop_argv
from logmine.sandbox.limits import startup_script

SHOW = ("ulimit -S -t; ulimit -H -t; ulimit -u; ulimit -d; ulimit -f; ulimit -c; "
        "echo ${BASH_ENV-unset} ${LOGMINE_START-unset}")


def _start(tmp_path, limits: Limits, preexec=None) -> subprocess.CompletedProcess:
    script = tmp_path / "startup.bash"
    script.write_text(startup_script(limits))
    script.chmod(0o644)
    env = {"PATH": os.environ["PATH"], "BASH_ENV": str(script), "LOGMINE_START": "TOKEN:"}
    return subprocess.run(["bash", "-c", SHOW], env=env, capture_output=True, text=True, preexec_fn=preexec)


def test_the_startup_script_sets_every_limit_then_prints_the_token(tmp_path):
    done = _start(tmp_path, Limits(cpu_s=7, memory_mb=100, processes=9, file_mb=3))
    assert done.stdout.split() == ["TOKEN:7", "8", "9", str(100 * 1024), str(3 * 1024), "0", "unset", "unset"]
    assert done.returncode == 0 and done.stderr == ""


def test_a_lower_host_limit_is_kept(public_dir):
    def capped():  # as the sandbox user: unprivileged, under a host limit lower than asked for
        resource.setrlimit(resource.RLIMIT_NPROC, (5, 5))
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)

    done = _start(public_dir, Limits(processes=512), preexec=capped)
    assert done.stdout.split()[2] == "5" and done.returncode == 0, done


@pytest.mark.parametrize("field", ["wall_s", "cpu_s", "memory_mb", "processes", "file_mb", "output_bytes", "tmp_mb"])
def test_a_limit_must_be_positive(field):
    with pytest.raises(ValueError, match=f"Limits.{field} must be positive"):
        Limits(**{field: 0})


def test_root_drops_to_the_sandbox_user_for_good():
    assert drop_argv(Identity(1234567, 1234567, drop_privileges=True)) == [
        "setpriv", "--reuid=1234567", "--regid=1234567", "--clear-groups", "--inh-caps=-all",
        "--bounding-set=-all", "--no-new-privs", "--"]
    assert drop_argv(Identity(1000, 1000, drop_privileges=False)) == []


def test_timeouts_and_errors_are_unscored_failures_are_not():
    assert not CommandResult(1, "assert failed", 0.1).unscored  # a failed grade is a real 0
    assert not CommandResult(0, "", 0.1).unscored
    assert CommandResult(None, "", 120.0, timed_out=True).unscored
    assert CommandResult(None, "", 0.0, error="sandbox failed to start").unscored
