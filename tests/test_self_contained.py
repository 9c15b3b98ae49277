"""The repository stands alone: a user clones only it, so nothing in it may send them elsewhere on disk.

- No tracked file names the development workspace around the checkout (``../shared/…``), except the
  CI scripts under ``.ci/``, which run in that workspace and say so.
- Every relative link of every Markdown file resolves to a file inside the repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\.\./shared/|\bshared/(?:reference|fixtures|tools|STYLE)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
TEXT = (".md", ".py", ".toml", ".ipynb", ".sh", ".json", ".yaml", ".yml", ".txt", ".cfg")


def _tracked() -> list[str]:
    done = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [f for f in done.stdout.splitlines() if f.endswith(TEXT) and not f.startswith(".ci/")]


def test_no_file_names_the_workspace_outside_the_repository():
    found = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
             for name in _tracked() if name != "tests/test_self_contained.py"
             for text in [(ROOT / name).read_text(errors="replace")] for m in OUTSIDE.finditer(text)]
    assert not found, "references to paths outside the repository:\n" + "\n".join(found)


def test_every_relative_markdown_link_resolves_inside_the_repository():
    broken = []
    for name in (f for f in _tracked() if f.endswith(".md") and not f.startswith("tests/fixtures/")):
        for m in LINK.finditer((ROOT / name).read_text()):
            target = m.group(1).split("#")[0]
            if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            path = ((ROOT / name).parent / target).resolve()
            if not path.exists() or not path.is_relative_to(ROOT):
                broken.append(f"{name}: {m.group(1)}")
    assert not broken, "links that do not resolve inside the repository:\n" + "\n".join(broken)
