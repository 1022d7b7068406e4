"""Threads for large memory-bound steps (reductions, outer and Hadamard products).

NumPy's sum-of-products loop and its ufuncs run on one core but release the GIL, so a
step that streams megabytes through memory gets faster when its output is cut in two and
each half runs on its own thread (a product's large result in pieces of about 2 MiB that
the threads take in turn: :func:`.execute.piece_count`).  The *planner* decides: it
records in the step the label it splits along (one that is free in every operand, never
summed) and the number of threads; the executor only follows.  Each part reads slices of
the same views and writes its own slice of the output, and every output element is summed
by the same loop in the same order as without threads, so results are bit-identical.

The thread count is a planner option (:class:`.options.PlannerOptions`): by default
``min(2, os.cpu_count())`` unless the environment variable ``EINSTRIDE_NUM_THREADS`` or
:func:`set_num_threads` says otherwise; ``1`` disables splitting.

>>> previous = num_threads()
>>> set_num_threads(1)
>>> num_threads()
1
>>> set_num_threads(None)      # back to the environment / default
>>> num_threads() == previous
True
"""

from __future__ import annotations

import contextvars
import dataclasses
import operator
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from .options import MAX_THREADS, default_options, set_default_options, threads_from_env

__all__ = ["num_threads", "run_chunks", "set_num_threads"]

_pool: ThreadPoolExecutor | None = None
_pool_workers = 0


def num_threads() -> int:
    """The number of threads a large memory-bound step is split over by default (1: no
    splitting)."""
    return default_options().threads


def set_num_threads(n: int | None) -> None:
    """Use ``n`` threads for large memory-bound steps (``1`` disables splitting; ``None``
    goes back to ``EINSTRIDE_NUM_THREADS`` or the default, reading the environment again).
    The thread count is part of the default planner options, so plans made before stay
    cached for their own count (and expressions made before keep their plans)."""
    if n is not None:
        wrong = TypeError(f"set_num_threads: expected an int or None, got {n!r}")
        if isinstance(n, (bool, np.bool_)):
            raise wrong
        try:  # (NumPy's integers too, as set_memory_limit takes them; int itself: a review)
            n = operator.index(n)
        except TypeError:
            raise wrong from None
        if not 1 <= n <= MAX_THREADS:
            raise ValueError(f"set_num_threads: expected an int from 1 to {MAX_THREADS}, got {n}")
    count = threads_from_env() if n is None else n
    set_default_options(dataclasses.replace(default_options(), threads=count))
    _reset_pool()  # the next split step starts a pool of its own size


def _executor(workers: int = 1) -> ThreadPoolExecutor:
    """The pool, with at least ``workers`` threads (a plan made for more threads than any
    before gets a bigger pool)."""
    global _pool, _pool_workers
    if _pool is None or _pool_workers < workers:
        _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="einstride")
        _pool_workers = workers
    return _pool


def _reset_pool() -> None:
    # dropped, not shut down: a concurrent einsum may still be submitting to it (its idle
    # workers exit once the pool is garbage-collected, after the work already handed over)
    global _pool, _pool_workers
    _pool, _pool_workers = None, 0


if hasattr(os, "register_at_fork"):
    # a forked child (multiprocessing, Dask's process workers) inherits the pool object but
    # not its thread: work handed to it would wait forever
    os.register_at_fork(after_in_child=_reset_pool)


def run_chunks(chunks: Sequence[Callable[[], object]], stop: threading.Event | None = None) -> None:
    """Run ``chunks[1:]`` on the pool and ``chunks[0]`` here; wait for all (errors raise).
    When this thread raises (an interrupt, in its own chunk or while it waits for the
    pool's), ``stop`` is set: chunks that check it between their pieces end at the next
    one instead of running all.
    A chunk the pool has not started by then (its thread not scheduled: a busy machine)
    is taken back and run here, so splitting never waits on an idle core that is not there.
    Each pool chunk runs under the caller's ``np.errstate`` (a review: an overflow in the
    pool's half warned under ``all="ignore"`` and did not raise under ``over="raise"``), and
    nothing returns or raises while a chunk still runs (a review: after an exception from a
    signal handler the pool's chunk went on writing the caller's ``out=``).

    >>> done = []
    >>> run_chunks([lambda: done.append(0), lambda: done.append(1)])
    >>> sorted(done)
    [0, 1]
    """
    pool = _executor(max(1, len(chunks) - 1))
    futures: list[Future[object]] = [pool.submit(_carried(c)) for c in chunks[1:]]
    try:
        chunks[0]()
        for future, chunk in zip(futures, chunks[1:]):
            if future.cancel():
                chunk()
    except BaseException:
        if stop is not None:
            stop.set()
        _settle(futures, stop, raising=False)  # this error raises, not the chunks' own
        raise
    _settle(futures, stop, raising=True)


def _carried(chunk: Callable[[], object]) -> Callable[[], object]:
    """``chunk`` under the calling thread's floating-point error state (NumPy 2 keeps it in
    a context variable, NumPy 1 per thread: the pool's thread has its own)."""
    context, errors, call = contextvars.copy_context(), np.geterr(), np.geterrcall()

    def run() -> object:
        state = np.errstate(**errors) if call is None else np.errstate(call=call, **errors)
        with state:
            return context.run(chunk)

    return run


def _settle(
    futures: Sequence[Future[object]], stop: threading.Event | None, *, raising: bool
) -> None:
    """Cancel the chunks not started and wait for the others to end, through any exception
    raised while waiting (a signal handler's: it sets ``stop``, so that they end sooner);
    then, when ``raising``, the first such exception or chunk error raises."""
    error: BaseException | None = None
    for future in futures:
        future.cancel()
        while not future.done():
            try:
                wait([future])
            except BaseException as exc:  # raised while waiting: the chunk still runs
                error = error or exc
                if stop is not None:  # (a review: the pool ran all its pieces meanwhile)
                    stop.set()
    if not raising:
        return
    if error is not None:
        raise error
    for future in futures:
        if not future.cancelled():
            future.result()
