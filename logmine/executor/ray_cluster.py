"""Units as Ray tasks on an existing cluster (``ray start --head`` / ``ray start --address``).

The driver connects with ``ray.init(address=…)``, submits at most ``in_flight`` units at a time (so
a run over 100,000 files does not queue 100,000 tasks), and collects results with ``ray.wait`` as
they finish. Each result names the Ray node and worker that produced it. A unit whose worker process
dies is retried by Ray (``max_retries``); a unit whose function raised returns its error as a result.
What every node must hold — logmine installed at the same version, the inputs and repositories at the
same paths, bubblewrap or the container engine — is ``docs/distributed.md``'s subject;
:meth:`RayExecutor.check_nodes` runs a probe on every node so a missing piece is one line naming it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from logmine.executor import Done, ExecutorError, Placement, run_placed
from logmine.locations import ray_address

MAX_RETRIES = 3


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError("the ray executor needs Ray", "pip install 'logmine[ray]'") from exc
    return ray


def _ray_placement() -> Placement:
    import ray

    context = ray.get_runtime_context()
    node = context.get_node_id()
    ip = ray.util.get_node_ip_address()
    return Placement(node=f"{ip}/{node[:12]}", worker=f"{context.get_worker_id()[:12]} pid {os.getpid()}")


def _unit(fn: Callable[[Any], Any], item: Any) -> tuple:
    return run_placed(fn, item, _ray_placement)


class RayExecutor:
    """Runs units on the Ray cluster at ``address`` (None: ``$RAY_ADDRESS``, else ``auto``)."""

    kind = "ray"

    def __init__(self, address: str | None = None, *, in_flight: int | None = None, num_cpus: float = 1.0):
        ray = _ray()
        self._ray = ray
        address = address or ray_address() or "auto"
        _reachable(address)
        try:
            if not ray.is_initialized():
                ray.init(address=address, logging_level="ERROR", log_to_driver=False,
                         include_dashboard=False if address == "local" else None)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ExecutorError(f"cannot connect to a Ray cluster at {address}: {str(exc).splitlines()[0]}",
                                "start one with `ray start --head`, or pass --ray-address HOST:PORT") from exc
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.in_flight = in_flight or max(2, 2 * cpus)
        self._remote = ray.remote(num_cpus=num_cpus, max_retries=MAX_RETRIES)(_unit)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], *, ordered: bool = False) -> Iterator[Done]:
        ray = self._ray
        pending: dict[Any, int] = {}
        finished: dict[int, Done] = {}
        next_out = 0
        source = enumerate(items)
        exhausted = False
        while pending or not exhausted:
            while not exhausted and len(pending) < self.in_flight:
                try:
                    index, item = next(source)
                except StopIteration:
                    exhausted = True
                    break
                pending[self._remote.remote(fn, item)] = index
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index = pending.pop(ref)
                done = self._collect(ref, index)
                if not ordered:
                    yield done
                else:
                    finished[index] = done
            while ordered and next_out in finished:
                yield finished.pop(next_out)
                next_out += 1

    def _collect(self, ref, index: int) -> Done:
        try:
            result, error, placement = self._ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - the task failed beyond its retries (node lost, …)
            return Done(index=index, error=ExecutorError(f"ray task failed: {str(exc).splitlines()[0]}"))
        return Done(index=index, result=result, error=error, placement=placement)

    def check_nodes(self, probe: Callable[[], str | None]) -> dict[str, str]:
        """Run ``probe`` on every alive node (None: fine, else a reason); raise naming the first bad node."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        remote = ray.remote(num_cpus=0)(_probe)
        alive = [n for n in ray.nodes() if n.get("Alive")]
        refs = {n["NodeManagerAddress"] + "/" + n["NodeID"][:12]: remote.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(probe) for n in alive}
        reasons = {node: reason for node, reason in zip(refs, ray.get(list(refs.values()))) if reason}
        if reasons:
            node, reason = next(iter(reasons.items()))
            raise ExecutorError(f"node {node}: {reason}",
                                f"{len(reasons)} of {len(refs)} nodes fail this check" if len(reasons) > 1 else None)
        return {node: "ok" for node in refs}

    def close(self) -> None:
        pass  # the cluster is the user's; the driver's connection ends with the process

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on a ``HOST:PORT`` nobody listens at (``ray.init`` would retry for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", "local": Ray finds (or refuses) the cluster itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ExecutorError(f"cannot connect to a Ray cluster at {address}: {exc.strerror or exc}",
                            "start one with `ray start --head`, or pass --ray-address HOST:PORT") from exc


def _probe(probe: Callable[[], str | None]) -> str | None:
    try:
        return probe()
    except Exception as exc:  # noqa: BLE001 - the probe's failure is the reason
        return f"{type(exc).__name__}: {exc}"
