"""What ingest's worker processes share, made once in the forkserver that forks them.

The forkserver imports this module before it forks the first worker (``set_forkserver_preload``),
so every worker starts with ingest imported, the redaction rules compiled, and pyarrow's one look
for pandas done (:mod:`logmine.store.rows`), instead of each paying for them again.
"""

from __future__ import annotations

import pyarrow as pa

import logmine.ingest.run  # noqa: F401 - what the workers run
from logmine.ingest.arrow import table_of
from logmine.redact import ruleset

ruleset()
table_of([], pa.schema([]))
