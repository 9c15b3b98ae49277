"""Where units of work run: this machine's pools, or a Ray cluster. The driver stays the only writer.

A stage hands an :class:`Executor` a function and its units (a source file to read, a task to
verify, a task's K rollouts) and gets back :class:`Done` records as units finish: the unit's result
(or the error it raised) and the node and worker that ran it. Results travel back to the driver,
which commits them to the store as it does with the local pool, so atomic commits, crash safety and
resumable runs hold on a cluster too.

* ``local`` (:mod:`.local`): a thread pool (units that wait on subprocesses: verify) or a
  forkserver process pool (CPU-bound units: ingest's groups of files, its forkserver started before
  the CLI's imports with ingest's modules preloaded).
* ``ray`` (:mod:`.ray_cluster`): one Ray task per unit on an existing cluster (``ray start``), with
  a bounded number in flight; a task whose worker dies is retried by Ray.

Chosen with ``--executor ray --ray-address ADDR`` or the pipeline file's ``[executor]`` table.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from logmine.errors import LogmineError

KINDS = ("local", "ray")


class ExecutorError(LogmineError):
    """The executor cannot run here: Ray missing, no cluster at the address, a node that fails its checks."""


@dataclass(frozen=True, slots=True)
class ExecutorConfig:
    """Which executor runs a stage's units."""

    kind: str = "local"
    address: str | None = None  # ray: the cluster address (``auto`` or ``HOST:PORT``); None: $RAY_ADDRESS
    jobs: int | None = None  # local: pool size (None: the stage's own default)
    in_flight: int | None = None  # ray: units submitted at once (None: twice the cluster's CPUs)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ExecutorError(f"unknown executor {self.kind!r}", f"choose one of {', '.join(KINDS)}")


@dataclass(frozen=True, slots=True)
class Placement:
    """The node and worker that ran a unit."""

    node: str
    worker: str


@dataclass(frozen=True, slots=True)
class Done:
    """A finished unit: its index in the input, its result or error, and where it ran."""

    index: int
    result: Any = None
    error: BaseException | None = None
    placement: Placement | None = None


class Executor(Protocol):
    kind: str

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, ordered: bool = False) -> Iterator[Done]:
        """Run ``fn`` on every item; yield a :class:`Done` per item (in input order when ``ordered``)."""
        ...

    def check_nodes(self, probe: Callable[[], str | None]) -> dict[str, str]:
        """Run ``probe`` on every node; raise :class:`ExecutorError` naming the first node it fails on."""
        ...

    def close(self) -> None: ...


def here() -> Placement:
    """This process's node and worker, as the executor that runs it names them."""
    node = os.environ.get("LOGMINE_NODE") or socket.gethostname()
    return Placement(node=node, worker=f"pid {os.getpid()}/{threading.current_thread().name}")


def make_executor(config: ExecutorConfig, *, processes: bool = False, default_jobs: int = 1,
                  initializer: Callable[[], None] | None = None, preload: tuple[str, ...] = ()) -> Executor:
    """The executor ``config`` names; ``processes`` picks a process pool for the local kind, whose
    forkserver imports ``preload`` once for all its workers."""
    if config.kind == "ray":
        from logmine.executor.ray_cluster import RayExecutor

        return RayExecutor(config.address, in_flight=config.in_flight)
    from logmine.executor.local import LocalExecutor

    return LocalExecutor(config.jobs or default_jobs, processes=processes, initializer=initializer, preload=preload)


def paths_unreadable(paths: tuple[str, ...]) -> str | None:
    """A node's check (for ``check_nodes``): every path readable here, where the driver sees it."""
    missing = [p for p in paths if not os.access(p, os.R_OK)]
    return None if not missing else f"{len(missing)} of {len(paths)} paths are not readable here, e.g. {missing[0]}"


def run_placed(fn: Callable[[Any], Any], item: Any, placement: Callable[[], Placement] = here) -> tuple:
    """``fn(item)`` as ``(result, error, placement)``: a unit's error is a result, not a crash."""
    where = placement()
    try:
        return fn(item), None, where
    except Exception as exc:  # noqa: BLE001 - reported per unit; the stage decides what it means
        return None, exc, where
