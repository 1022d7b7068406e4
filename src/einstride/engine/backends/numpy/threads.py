"""Threads for large memory-bound steps (reductions, outer and Hadamard products).

NumPy's sum-of-products loop and its ufuncs run on one core but release the GIL, so a
step that streams megabytes through memory gets faster when its output is cut in two and
each half runs on its own thread.  The *planner* decides: it records in the step the
label it splits along (one that is free in every operand, never summed) and the number
of chunks; the executor only follows.  Each chunk reads slices of the same views and
writes its own slice of the output, and every output element is summed by the same loop
in the same order as without threads, so results are bit-identical.

The thread count is ``min(2, os.cpu_count())`` unless the environment variable
``EINSTRIDE_NUM_THREADS`` or :func:`set_num_threads` says otherwise; ``1`` disables it.

>>> previous = num_threads()
>>> set_num_threads(1)
>>> num_threads()
1
>>> set_num_threads(None)      # back to the environment / default
>>> num_threads() == previous
True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["SPLIT_MIN_BYTES", "num_threads", "run_chunks", "set_num_threads", "split_threads"]

SPLIT_MIN_BYTES = 4 << 20
"""A step is split only when it moves at least this many bytes through memory (below,
the ~30-50 us of handing work to another thread eats the gain: measured on 2 cores, a
2 MiB diagonal sum got slower, a 32 MiB reduction 25% faster)."""

_ENV = "EINSTRIDE_NUM_THREADS"
_override: int | None = None
_pool: ThreadPoolExecutor | None = None


def _from_env() -> int:
    text = os.environ.get(_ENV, "").strip()
    if text:
        try:
            return max(1, int(text))
        except ValueError:
            pass  # an unreadable setting means the default, not a failing einsum
    return max(1, min(2, os.cpu_count() or 1))


def num_threads() -> int:
    """The number of threads a large memory-bound step is split over (1: no splitting)."""
    return _override if _override is not None else _from_env()


def set_num_threads(n: int | None) -> None:
    """Use ``n`` threads for large memory-bound steps (``1`` disables splitting; ``None``
    goes back to ``EINSTRIDE_NUM_THREADS`` or the default).  Plans are made for a thread
    count, so this clears the plan cache (expressions made before keep their plans)."""
    global _override
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"set_num_threads: expected a positive int or None, got {n!r}")
    _override = n
    _reset_pool()
    from .cache import clear_plan_cache  # cache imports the planner, which imports this

    clear_plan_cache()


def split_threads(bytes_moved: int, size: int) -> int:
    """How many chunks a step moving ``bytes_moved`` bytes, split along an axis of
    ``size``, should run as (1: not split).

    >>> split_threads(100, 64), split_threads(1 << 30, 1)
    (1, 1)
    """
    if bytes_moved < SPLIT_MIN_BYTES or size < 2:
        return 1
    return min(num_threads(), size)


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=max(1, num_threads() - 1),
                                   thread_name_prefix="einstride")
    return _pool


def _reset_pool() -> None:
    # dropped, not shut down: a concurrent einsum may still be submitting to it (its idle
    # worker exits once the pool is garbage-collected)
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    # a forked child (multiprocessing, Dask's process workers) inherits the pool object but
    # not its thread: work handed to it would wait forever
    os.register_at_fork(after_in_child=_reset_pool)


def run_chunks(chunks: Sequence[Callable[[], object]]) -> None:
    """Run ``chunks[1:]`` on the pool and ``chunks[0]`` here; wait for all (errors raise).
    A chunk the pool has not started by then (its thread not scheduled: a busy machine)
    is taken back and run here, so splitting never waits on an idle core that is not there.

    >>> done = []
    >>> run_chunks([lambda: done.append(0), lambda: done.append(1)])
    >>> sorted(done)
    [0, 1]
    """
    futures: list[Future[object]] = [_executor().submit(c) for c in chunks[1:]]
    try:
        chunks[0]()
    finally:
        for future, chunk in zip(futures, chunks[1:]):
            if future.cancel():
                chunk()
            else:
                future.result()
