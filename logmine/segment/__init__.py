"""Segment stage: sessions → tasks (one user request and the work it caused) + verifier candidates.

Names are loaded lazily so that ``logmine.segment.records`` can be imported by the store's catalog
without pulling in the stage's runner.
"""

from __future__ import annotations

import importlib

_EXPORTS = {"SegmentConfig": "logmine.segment.run", "SegmentSummary": "logmine.segment.run",
            "NothingToSegment": "logmine.segment.run", "segment": "logmine.segment.run"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'logmine.segment' has no attribute {name!r}")
