"""Where logmine keeps what it reuses between runs: the one reader of ``$LOGMINE_CACHE``.

``LOGMINE_CACHE=DIR`` puts the cache in ``DIR``; unset, it is ``$XDG_CACHE_HOME/logmine`` (else
``~/.cache/logmine``). ``LOGMINE_CACHE=off`` turns off the caches that only save time (the compiled
redaction rules); built environments (``envs/``), which a replay needs, then stay in the default
place. Standard library only: ingest's workers read it.
"""

from __future__ import annotations

import os
from pathlib import Path

OFF = "off"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/logmine``, else ``~/.cache/logmine``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "logmine"


def cache_dir() -> Path | None:
    """The cache directory, or None when ``LOGMINE_CACHE=off``."""
    value = os.environ.get("LOGMINE_CACHE")
    if value == OFF:
        return None
    return Path(value) if value else default_cache_dir()
