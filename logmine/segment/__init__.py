"""Segment stage: sessions → tasks (one user request and the work it caused) + verifier candidates."""

from logmine.segment.run import NothingToSegment, SegmentConfig, SegmentSummary, segment

__all__ = ["NothingToSegment", "SegmentConfig", "SegmentSummary", "segment"]
