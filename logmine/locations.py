"""Where logmine finds what lies outside a run: the one reader of each environment variable that
names a place.

* ``LOGMINE_CACHE`` (:func:`cache_dir`): what logmine reuses between runs. ``LOGMINE_CACHE=DIR`` puts
  the cache in ``DIR``; unset, it is ``$XDG_CACHE_HOME/logmine`` (else ``~/.cache/logmine``).
  ``LOGMINE_CACHE=off`` turns off the caches that only save time (the compiled redaction rules);
  built environments (``envs/``), which a replay needs, then stay in the default place.
* ``LOGMINE_STORE`` (:func:`store_from_env`): the store when ``--store`` is not given, for the
  program's quick answer to an unchanged ingest (``logmine/__main__.py``). The CLI's ``--store``
  options name it as their ``envvar`` (:data:`STORE_ENV`), and click reads it the same way (an empty
  value is no value).
* ``RAY_ADDRESS`` (:func:`ray_address`): Ray's own variable, the cluster to join; set, it implies the
  ray executor (``--ray-address`` names it as its ``envvar``: :data:`RAY_ADDRESS_ENV`), and the ray
  executor joins it when given no address.

Standard library only: ingest's workers and ``logmine/__main__.py`` read it before anything else is
imported. ``tests/test_locations.py`` fails when a second function reads one of these variables.
"""

from __future__ import annotations

import os
from pathlib import Path

OFF = "off"
CACHE_ENV = "LOGMINE_CACHE"
STORE_ENV = "LOGMINE_STORE"
RAY_ADDRESS_ENV = "RAY_ADDRESS"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/logmine``, else ``~/.cache/logmine``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "logmine"


def cache_dir() -> Path | None:
    """The cache directory, or None when ``LOGMINE_CACHE=off``."""
    value = os.environ.get(CACHE_ENV)
    if value == OFF:
        return None
    return Path(value) if value else default_cache_dir()


def store_from_env() -> str | None:
    """``$LOGMINE_STORE``, or None when it is unset or empty."""
    return os.environ.get(STORE_ENV) or None


def ray_address() -> str | None:
    """``$RAY_ADDRESS``, or None when it is unset or empty."""
    return os.environ.get(RAY_ADDRESS_ENV) or None
