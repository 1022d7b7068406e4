"""Measure einstride's Dask backend on a LocalCluster: the figures of docs/scaling.md.

    python benchmarks/dask_scaling.py --batch 120000 --size 64 --worker-memory 512MiB \\
        --task-memory 64MiB

Contracts ``bik,bkj->bij`` over random operands made on the workers, writes the result to
``.npy`` files (``da.to_npy_stack``) and prints the problem size, the chunking, the wall
time and each worker's peak resident memory.  Needs ``einstride[dask]``.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time

import dask.array as da
import distributed
from dask.utils import format_bytes, parse_bytes

import einstride as es
from einstride.engine.backends.dask.backend import plan_dask


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=120000)
    parser.add_argument("--size", type=int, default=64, help="i = j = k")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="512MiB")
    parser.add_argument("--task-memory", default="64MiB")
    parser.add_argument("--input-batch-chunk", type=int, default=500)
    return parser.parse_args()


def main() -> None:
    args = _arguments()
    n, shape = args.size, (args.batch, args.size, args.size)
    with (
        tempfile.TemporaryDirectory() as scratch,
        distributed.LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            memory_limit=args.worker_memory,
            dashboard_address=None,
            worker_dashboard_address=None,
            local_directory=scratch,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        rng = da.random.default_rng(0)
        a = rng.random(shape, chunks=(args.input_batch_chunk, n, n // 2))
        b = rng.random(shape, chunks=(args.input_batch_chunk, n // 2, n))
        built = plan_dask("bik,bkj->bij", [a, b], memory_limit=args.task_memory)
        print(built.explain())
        print(
            f"operands: 2 x {format_bytes(a.nbytes)}; result {format_bytes(a.nbytes)}; "
            f"worker memory limit {format_bytes(parse_bytes(args.worker_memory))} "
            f"x {args.workers}"
        )
        workers = set(client.scheduler_info()["workers"])
        start = time.perf_counter()
        da.to_npy_stack(
            scratch + "/result",
            es.einsum("bik,bkj->bij", a, b, memory_limit=args.task_memory),
            axis=0,
        )
        elapsed = time.perf_counter() - start
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        print(f"time: {elapsed:.1f} s (random operands made, contracted, result written)")
        same = set(client.scheduler_info()["workers"]) == workers
        print("workers: " + ("the same, none restarted" if same else "RESTARTED"))
        for worker, peak in sorted(peaks.items()):
            print(f"peak resident memory of worker {worker}: {format_bytes(peak)}")


if __name__ == "__main__":
    main()
