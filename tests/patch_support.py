"""Helpers shared by the logmine.patch tests (tests/patch/)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures"  # real session files (see tests/fixtures/README.md)
BAD_HEADER = (
    "is not a valid hunk header. Valid hunk headers: "
    "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
)


def wrap(body: str) -> str:
    return f"*** Begin Patch\n{body}\n*** End Patch\n"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def tree(root: Path) -> dict[str, str]:
    """Every file under root with its text (symlinks shown as '-> target')."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes().decode()
    return out
