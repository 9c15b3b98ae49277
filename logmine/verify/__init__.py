"""Verify stage: rebuild each task's start state in a sandbox, replay it, keep proven verifiers.

Names are loaded lazily (:mod:`logmine.lazy`): the store's catalog imports this stage's records.
"""

from logmine.lazy import lazy_exports

_EXPORTS = {
    "VerifyConfig": "logmine.verify.run",
    "VerifySummary": "logmine.verify.run",
    "NothingToVerify": "logmine.verify.run",
    "verify": "logmine.verify.run",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
