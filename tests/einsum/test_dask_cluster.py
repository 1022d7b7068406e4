"""Out of core on a real dask.distributed LocalCluster (2 worker processes, loopback only):
operands and output about three times a worker's memory limit, no worker killed."""

from __future__ import annotations

import os
import resource

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import einstride as es  # noqa: E402

WORKER_MEMORY = 200 * 2**20
TASK_BUDGET = 24 * 2**20
SHAPE = (18000, 64, 64)             # 590 MB per operand and for the output
CHUNKS_A = (200, 64, 32)            # k in two chunks: partial results summed in a tree
CHUNKS_B = (200, 32, 64)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        memory_limit=WORKER_MEMORY, dashboard_address=None, worker_dashboard_address=None,
        local_directory=str(tmp_path_factory.mktemp("dask-worker-space")))
    with cluster, distributed.Client(cluster) as connected:
        yield connected


def test_contraction_larger_than_the_workers_memory_completes(client, tmp_path):
    workers = set(client.scheduler_info()["workers"])
    rng = da.random.default_rng(7)
    a = rng.random(SHAPE, chunks=CHUNKS_A)
    b = rng.random(SHAPE, chunks=CHUNKS_B)
    result = es.einsum("bik,bkj->bij", a, b, memory_limit=TASK_BUDGET)
    assert min(a.nbytes, b.nbytes, result.nbytes) > 2.5 * WORKER_MEMORY
    assert len(result.chunks[0]) > 1 and result.chunks[1:] == ((64,), (64,))

    da.to_npy_stack(str(tmp_path), result, axis=0)   # every block written by the workers

    assert set(client.scheduler_info()["workers"]) == workers   # none killed or restarted
    def peak_rss() -> int:
        # VmHWM, not ru_maxrss: ru_maxrss survives exec, so a worker would report the peak of
        # the process it was forked from (this pytest process, large once torch is imported).
        # Defined in here: workers cannot import tests, and cloudpickle sends it by value.
        if os.path.exists("/proc/self/status"):
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    peaks = client.run(peak_rss)
    assert len(peaks) == 2 and max(peaks.values()) < WORKER_MEMORY, peaks
    edges = np.cumsum((0, *result.chunks[0]))
    for block in range(0, len(edges) - 1, 9):
        lo, hi = edges[block], edges[block + 1]
        got = np.load(tmp_path / f"{block}.npy")
        x = a[lo:hi].compute(scheduler="sync")     # the same random blocks, made here
        y = b[lo:hi].compute(scheduler="sync")
        np.testing.assert_allclose(got, np.matmul(x, y), rtol=1e-12)
