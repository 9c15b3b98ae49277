"""The calc scenario several tests replay: a repository whose ``add`` is wrong, its unittest, the fix.

``calc_repo(path)`` makes it a real one-commit git repository and returns the commit; ``files``
adds or replaces files before the commit (a credential file, a file holding a secret).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = ("import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
             "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")
FIX = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"
TESTS = "python3 -B -m unittest -q"


def calc_repo(path: Path, files: dict[str, str] | None = None, message: str = "start") -> str:
    path.mkdir(parents=True, exist_ok=True)
    for rel, text in {"calc.py": CALC, "test_calc.py": TEST_CALC, **(files or {})}.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    env = ["-c", "user.email=t@t", "-c", "user.name=t"]
    for cmd in (["init", "-q"], ["add", "-A"], [*env, "commit", "-qm", message]):
        subprocess.run(["git", *cmd], cwd=path, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True).stdout.strip()
