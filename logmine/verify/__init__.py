"""Verify stage: rebuild each task's start state in a sandbox, replay it, keep proven verifiers."""

from logmine.verify.run import NothingToVerify, VerifyConfig, VerifySummary, verify

__all__ = ["NothingToVerify", "VerifyConfig", "VerifySummary", "verify"]
