"""This machine's pools: threads for units that wait on subprocesses, forkserver processes otherwise.

The process pool is the one every CPU-bound stage uses (ingest reads its files with it): its workers
are forked from the forkserver of :mod:`logmine.executor.forkserver` (started early by
``logmine ingest``, with ``preload`` imported once there), and each dies with that forkserver, which
dies with the driver.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor as _PoolExecutor
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from typing import Any

from logmine.executor import Done, ExecutorError, forkserver, here, run_placed


class LocalExecutor:
    """``jobs`` workers on this machine; ``jobs <= 1`` runs units in the calling thread."""

    kind = "local"

    def __init__(self, jobs: int, *, processes: bool = False, initializer: Callable[[], None] | None = None,
                 preload: tuple[str, ...] = ()):
        self.jobs = max(1, jobs)
        self._processes = processes
        self._initializer = initializer
        self._preload = preload
        self._pool: _PoolExecutor | None = None

    def _open(self) -> _PoolExecutor:
        if self._pool is None:
            if self._processes:
                # forkserver: workers never inherit the parent's DuckDB/Arrow threads
                self._pool = ProcessPoolExecutor(self.jobs, mp_context=forkserver.start(self._preload),
                                                 initializer=functools.partial(_start_worker, self._initializer))
            else:
                self._pool = ThreadPoolExecutor(self.jobs, initializer=self._initializer)
        return self._pool

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, ordered: bool = False) -> Iterator[Done]:
        items = list(items)
        if self.jobs <= 1 or len(items) < 2:
            for index, item in enumerate(items):
                yield _done(index, run_placed(fn, item, here))
            return
        pool = self._open()
        futures = {pool.submit(run_placed, fn, item): i for i, item in enumerate(items)}
        if ordered:
            for future, index in futures.items():
                yield _done(index, future.result())
        else:
            for future in as_completed(futures):
                yield _done(futures[future], future.result())

    def check_nodes(self, probe: Callable[[], str | None]) -> dict[str, str]:
        """Run ``probe`` here (None: fine, else the reason, raised as :class:`ExecutorError`)."""
        reason = probe()
        if reason:
            raise ExecutorError(f"node {here().node}: {reason}")
        return {here().node: "ok"}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _start_worker(initializer: Callable[[], None] | None) -> None:
    """A process worker's start: it dies with its forkserver, then runs the pool's own initializer."""
    forkserver.worker_start()
    if initializer is not None:
        initializer()


def _done(index: int, outcome: tuple) -> Done:
    result, error, placement = outcome
    return Done(index=index, result=result, error=error, placement=placement)

