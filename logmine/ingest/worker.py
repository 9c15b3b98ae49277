"""What ingest's worker processes share, made once in the forkserver that forks them.

The forkserver imports this module before it forks the first worker (``set_forkserver_preload``),
so every worker starts with ingest imported, the redaction rules compiled, and pyarrow's one look
for pandas and its load of the time zones done (:mod:`logmine.store.rows`, :func:`~logmine.ingest.records.ts_array`), instead of each paying for them again. The forkserver
dies with the ingest that started it (:mod:`logmine.executor.forkserver`).
"""

from __future__ import annotations

import gc

import pyarrow as pa

import logmine.ingest.run  # noqa: F401 - what the workers run
from logmine.executor.forkserver import adopt_if_forkserver
from logmine.ingest.records import ts_array
from logmine.redact import ruleset
from logmine.store.rows import table_of

adopt_if_forkserver()
ruleset()
table_of([], pa.schema([]))
ts_array(["2025-01-01T00:00:00Z"])
gc.freeze()  # what the imports made is never garbage: the workers' collections no longer walk it
