"""Verify stage: rebuild each task's start state in a sandbox, replay it, keep proven verifiers.

Names are loaded lazily so that ``logmine.verify.records`` can be imported by the store's catalog
without pulling in the stage's runner.
"""

from __future__ import annotations

import importlib

_EXPORTS = {"VerifyConfig": "logmine.verify.run", "VerifySummary": "logmine.verify.run",
            "NothingToVerify": "logmine.verify.run", "verify": "logmine.verify.run"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'logmine.verify' has no attribute {name!r}")
