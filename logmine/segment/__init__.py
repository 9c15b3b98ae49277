"""Segment stage: sessions → tasks (one user request and the work it caused) + verifier candidates.

Names are loaded lazily (:mod:`logmine.lazy`): the store's catalog imports this stage's records.
"""

from logmine.lazy import lazy_exports

_EXPORTS = {
    "SegmentConfig": "logmine.segment.run",
    "SegmentSummary": "logmine.segment.run",
    "NothingToSegment": "logmine.segment.run",
    "segment": "logmine.segment.run",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
