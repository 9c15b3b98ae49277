"""Fixtures of the sandbox tests: a sandbox factory (skipped where bwrap cannot run) and a process finder."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from logmine.sandbox import Limits, open_sandbox
from logmine.sandbox.bwrap import probe


@pytest.fixture(scope="session")
def bwrap_ready() -> None:
    """Skip unless bwrap can create its namespaces here (tried once: some CI containers forbid it)."""
    reason = probe()
    if reason is not None:
        pytest.skip(f"bubblewrap sandboxes cannot run on this machine: {reason}")


@pytest.fixture
def make_box(bwrap_ready, tmp_path):
    """``make_box(files={"a.py": "..."}, limits=Limits(...), mount_at=..., links={"l": "/target"})``."""
    opened = []

    def make(files: dict[str, str] | None = None, *, links: dict[str, str] | None = None, **kwargs):
        source = tmp_path / f"source-{len(opened)}"
        source.mkdir()
        for rel, text in (files or {}).items():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            (source / rel).write_text(text)
        for rel, target in (links or {}).items():
            (source / rel).symlink_to(target)
        kwargs.setdefault("limits", Limits(wall_s=20))
        box = open_sandbox(source, **kwargs)
        opened.append(box)
        return box

    yield make
    for box in opened:
        box.close()


@pytest.fixture
def public_dir():
    """A host directory anyone may enter (mode 0755, under /tmp): only the sandbox's mounts, not
    file permissions, keep a command from reaching what is in it."""
    path = Path(tempfile.mkdtemp(prefix="logmine-public-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def mark() -> str:
    """A unique value to put in a command's environment, to find its processes from the host."""
    return f"logmine-test-{secrets.token_hex(6)}"


def processes_with(mark: str) -> list[int]:
    """Host pids of the processes (bwrap itself excluded) whose environment contains ``mark``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if Path(f"/proc/{entry.name}/comm").read_text().strip() == "bwrap":
                continue
            if mark.encode() in Path(f"/proc/{entry.name}/environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def processes_appear(mark: str, timeout_s: float = 3.0) -> list[int]:
    """``processes_with(mark)`` once non-empty (a forked child shows the mark only after its exec)."""
    deadline = time.monotonic() + timeout_s
    while not (found := processes_with(mark)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return found


@pytest.fixture
def find_processes():
    return processes_with


@pytest.fixture
def wait_processes():
    return processes_appear
