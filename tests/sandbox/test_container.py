"""docker / podman: command construction (no engine needed) and, where an engine runs, the real thing.

The integration test needs a running engine and an image already present (nothing is pulled):
``LOGMINE_SANDBOX_TEST_IMAGE`` (default ``python:3.11-slim``; it needs bash and python3).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from logmine.sandbox import Limits, SandboxError, available_backends, open_sandbox
from logmine.sandbox.container import ENGINES, create_argv, engine_available, exec_argv, nofile_limit
from logmine.sandbox.identity import Identity

IMAGE = os.environ.get("LOGMINE_SANDBOX_TEST_IMAGE", "python:3.11-slim")
USER = Identity(1_234_567, 1_234_567, drop_privileges=True)


def _create(engine="docker", network=False, rootless=False):
    return create_argv(engine, "logmine-sandbox-x", "img:1", workspace=Path("/state/workspace"),
                       tool=Path("/state/tool"), patch_src=Path("/src/logmine/patch"), mount_at="/home/dev/proj",
                       identity=USER, limits=Limits(cpu_s=10, memory_mb=256, processes=32, file_mb=2, tmp_mb=16),
                       network=network, rootless=rootless)


def _pairs(argv, flag):
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == flag]


def test_the_container_is_isolated_and_limited_like_bwrap():
    argv = _create()
    assert argv[:2] == ["docker", "run"] and "--rm" in argv and "--init" in argv and "--read-only" in argv
    assert _pairs(argv, "--network") == ["none"]
    assert _pairs(argv, "--user") == ["1234567:1234567"]
    assert _pairs(argv, "--cap-drop") == ["ALL"] and _pairs(argv, "--security-opt") == ["no-new-privileges"]
    assert _pairs(argv, "--pids-limit") == ["32"]
    assert _pairs(argv, "--memory") == ["256m"] and _pairs(argv, "--memory-swap") == ["256m"]
    files = nofile_limit()  # explicit, or podman asks for 1048576 (issue 13)
    assert _pairs(argv, "--ulimit") == ["cpu=10:11", f"fsize={2 << 20}:{2 << 20}", "nproc=32:32",
                                        f"nofile={files}:{files}", "core=0:0"]
    assert _pairs(argv, "--tmpfs") == ["/tmp:rw,exec,nosuid,nodev,size=16m,mode=1777"]
    assert _pairs(argv, "--volume") == ["/state/workspace:/home/dev/proj:rw", "/state/tool:/opt/logmine:ro",
                                        "/src/logmine/patch:/opt/logmine/lib/logmine/patch:ro"]
    assert _pairs(argv, "--workdir") == ["/home/dev/proj"]
    assert argv[-5:] == ["--entrypoint", "sh", "img:1", "-c", "mkdir -p /tmp/home && exec sleep infinity"]


def test_network_and_rootless_podman_options():
    assert "--network" not in _create(network=True)
    assert _pairs(_create("podman", rootless=True), "--userns") == ["keep-id"]
    assert "--userns" not in _create("docker", rootless=True)


def test_each_command_is_an_exec_with_its_directory_and_environment():
    argv = exec_argv("podman", "c1", cwd="/home/dev/proj/src", env={"HOME": "/tmp/home", "X": "a b"},
                     interactive=False, inner=["bash", "-c", "make test"])
    assert argv == ["podman", "exec", "--workdir", "/home/dev/proj/src", "--env", "HOME=/tmp/home",
                    "--env", "X=a b", "c1", "bash", "-c", "make test"]
    shell = exec_argv("docker", "c1", cwd="/w", env={}, interactive=True, inner=["bash"])
    assert shell == ["docker", "exec", "--interactive", "--workdir", "/w", "c1", "bash"]


def test_without_an_engine_opening_is_a_sandbox_error(tmp_path):
    missing = [engine for engine in ENGINES if not engine_available(engine)]
    if not missing:
        pytest.skip("every container engine is running here")
    with pytest.raises(SandboxError, match=f"the {missing[0]} backend cannot run here"):
        open_sandbox(tmp_path, backend=missing[0], image=IMAGE)
    assert missing[0] not in available_backends()


def _engine_with_image() -> str | None:
    for engine in ENGINES:
        if engine_available(engine) and subprocess.run([engine, "image", "inspect", IMAGE], capture_output=True,
                                                       timeout=30).returncode == 0:
            return engine
    return None


@pytest.fixture(scope="module")
def engine():
    found = _engine_with_image()
    if found is None:
        pytest.skip(f"no docker/podman engine with image {IMAGE} here (set LOGMINE_SANDBOX_TEST_IMAGE)")
    return found


def test_a_container_sandbox_end_to_end(engine, tmp_path):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    patch = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
             "*** End Patch\n")
    with open_sandbox(tmp_path, backend=engine, image=IMAGE, mount_at="/home/dev/proj",
                      limits=Limits(wall_s=20, output_bytes=1000)) as box:
        assert box.run("pwd").output == "/home/dev/proj\n"
        assert box.run(f"apply_patch {shlex.quote(patch)}").exit_code == 0
        assert "a + b" in (box.workspace / "calc.py").read_text()
        shell = box.shell()
        shell.run("cd /tmp && export X=1")
        assert shell.run("pwd; echo $X").output == "/tmp\n1\n"
        net = box.run("python3 -c 'import socket; socket.create_connection((\"10.255.255.1\", 80), 2)'")
        assert net.exit_code != 0
        assert box.run("sleep 30", timeout_s=1).timed_out
        assert box.run("yes | head -c 10000000").truncated
        box.install_files({"test_hidden.py": "print('graded')\n"})
        graded = box.run("python3 test_hidden.py")  # a fresh container: install_files ended the old one
        assert (graded.exit_code, graded.output) == (0, "graded\n"), graded


def test_environment_binds_are_read_only_volumes():
    argv = create_argv("podman", "c1", "img:1", workspace=Path("/state/workspace"), tool=Path("/state/tool"),
                       patch_src=Path("/src/logmine/patch"), mount_at="/home/dev/proj",
                       identity=USER, limits=Limits(), network=False, rootless=False,
                       binds=(("/cache/env/.venv", "/home/dev/proj/.venv"),))
    assert _pairs(argv, "--volume")[-1] == "/cache/env/.venv:/home/dev/proj/.venv:ro"


def test_an_engine_busy_at_first_is_asked_again(tmp_path, monkeypatch):
    """A probe that failed (a build holding the engine) is not remembered; a missing command is."""
    from logmine.sandbox import container

    flag = tmp_path / "up"
    fake = tmp_path / "bin" / "podman"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = version ] && [ -e {flag} ]\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    monkeypatch.setattr(container, "_ENGINE_OK", {})
    assert not container.engine_available("podman")
    flag.touch()
    assert container.engine_available("podman")
    assert not container.engine_available("docker") and container._ENGINE_OK["docker"] is False
