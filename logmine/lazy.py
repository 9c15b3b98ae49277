"""Lazy package exports (PEP 562), so that importing a stage's schemas does not import its runner.

The store's catalog imports every stage's ``records`` module; a stage package that imported its
runner eagerly would make that import circular (runner → store → catalog → records).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``exports[name]`` (a module path) on first use."""

    def __getattr__(name: str) -> object:
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
