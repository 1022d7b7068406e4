"""Out of core on a real dask.distributed LocalCluster (2 worker processes, loopback only):
operands and output about three times a worker's memory limit, no worker killed."""

from __future__ import annotations

import resource

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import einstride as es  # noqa: E402

WORKER_MEMORY = 200 * 2**20
TASK_BUDGET = 24 * 2**20
SHAPE = (18000, 64, 64)  # 590 MB per operand and for the output
CHUNKS_A = (200, 64, 32)  # k in two chunks: partial results summed in a tree
CHUNKS_B = (200, 32, 64)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        memory_limit=WORKER_MEMORY,
        dashboard_address=None,
        worker_dashboard_address=None,
        local_directory=str(tmp_path_factory.mktemp("dask-worker-space")),
    )
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

    da.to_npy_stack(str(tmp_path), result, axis=0)  # every block written by the workers

    assert set(client.scheduler_info()["workers"]) == workers  # none killed or restarted

    def own_peak_rss() -> int:
        """The worker's own peak resident bytes.  Linux's ``ru_maxrss`` carries the parent's
        peak over fork and exec (a worker spawned by a pytest process that once held NumPy's
        large test arrays starts at that peak), so read the process's own high-water mark
        (VmHWM) where /proc has it."""
        try:
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    # the peak resident memory of each worker process (a nested function is sent by value:
    # workers cannot import tests)
    peaks = client.run(own_peak_rss)
    assert len(peaks) == 2 and max(peaks.values()) < WORKER_MEMORY, peaks
    edges = np.cumsum((0, *result.chunks[0]))
    for block in range(0, len(edges) - 1, 9):
        lo, hi = edges[block], edges[block + 1]
        got = np.load(tmp_path / f"{block}.npy")
        x = a[lo:hi].compute(scheduler="sync")  # the same random blocks, made here
        y = b[lo:hi].compute(scheduler="sync")
        np.testing.assert_allclose(got, np.matmul(x, y), rtol=1e-12)
