"""Sweep cells on a Dask cluster: each cell one task.

`remat-harness sweep --workers N` starts a local cluster of N single-threaded
worker processes (Dask `distributed`, the embedded default); `--scheduler
tcp://HOST:8786` uses a running one (`dask scheduler` on one machine, `dask
worker tcp://HOST:8786 --nthreads 1` on each other, every machine with this
checkout's engine built and the model HLO cache at the same path, e.g. a
shared folder). The client keeps the results file: records are appended as
cells finish, so a sweep stays resumable. Each task first checks that its
worker's engine is the client's build (`hlo-remat --version`): results of two
builds are never mixed. A cell whose worker is lost is run again by Dask (at
most three times); a cell that fails is recorded as failed, and the sweep
goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from remat_harness.engine import engine_build

# A cell's outcome as a task returns it: its record, or its failure message,
# with the seconds it took on the worker.
Outcome = tuple[dict | None, str | None, float]


@dataclass(frozen=True)
class ClusterSpec:
    workers: int = 0  # a local cluster of this many processes
    address: str = ""  # or an existing scheduler, tcp://HOST:8786

    @property
    def enabled(self) -> bool:
        return self.workers > 0 or bool(self.address)


def _run_task(run: Callable[[], dict], build: str) -> Outcome:
    """On the worker: the cell, never raising for the cell's own failure
    (Dask retries only what a lost worker did not finish)."""
    start = time.monotonic()
    try:
        here = engine_build()
        if here != build:
            raise RuntimeError(
                f"this worker's hlo-remat is build {here}, the client's {build}: "
                "build the same checkout on every worker"
            )
        return run(), None, time.monotonic() - start
    except Exception as e:  # noqa: BLE001 - any failure is this cell's, recorded
        return None, f"{type(e).__name__}: {e}".strip(), time.monotonic() - start


def _client(spec: ClusterSpec) -> Any:
    from dask.distributed import Client, LocalCluster

    if spec.address:
        return Client(spec.address, timeout="30s")
    cluster = LocalCluster(
        n_workers=spec.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
    )
    return Client(cluster)


class ClusterSession:
    """One client for many rounds of tasks (`fit` asks a round of batches at
    a time): a local cluster starts once, not at every round. Use it as a
    context manager; the cluster starts at the first round."""

    def __init__(self, spec: ClusterSpec) -> None:
        self._spec = spec
        self._client: Any = None
        self._submitted = 0  # keys stay unique across rounds

    def run(
        self, tasks: list[tuple[str, Callable[[], dict]]], build: str
    ) -> Iterator[tuple[str, Outcome]]:
        """Runs each (key, work) on the cluster; yields (key, outcome) as each
        finishes. `work` must pickle (a functools.partial of module
        functions)."""
        from dask.distributed import as_completed

        if self._client is None:
            self._client = _client(self._spec)
        futures = {}
        for key, work in tasks:
            self._submitted += 1
            task_key = f"cell-{self._submitted}"
            futures[self._client.submit(_run_task, work, build, key=task_key, pure=False)] = key
        for future in as_completed(futures):
            key = futures[future]
            try:
                outcome: Outcome = future.result()
            except Exception as e:  # noqa: BLE001 - the worker was lost for good
                outcome = (None, f"{type(e).__name__}: {e}".strip(), 0.0)
            yield key, outcome

    def close(self) -> None:
        if self._client is None:
            return
        cluster = getattr(self._client, "cluster", None)
        self._client.close()
        if cluster is not None:
            cluster.close()
        self._client = None

    def __enter__(self) -> ClusterSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_on_cluster(
    spec: ClusterSpec, tasks: list[tuple[str, Callable[[], dict]]], build: str
) -> Iterator[tuple[str, Outcome]]:
    """Runs each (key, work) on a cluster started for these tasks alone;
    yields (key, outcome) as each finishes."""
    with ClusterSession(spec) as session:
        yield from session.run(tasks, build)
