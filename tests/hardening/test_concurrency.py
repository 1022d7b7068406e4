"""Concurrency: 8 threads hammer ``einsum`` and one shared ``contract_expression`` with mixed
equations, shapes, layouts, dtypes and ``out=`` for a few seconds (much longer under
``make fuzz``); every result is checked against ``numpy.einsum``, and afterwards the plan
caches are bounded (they did evict) and consistent (every call was counted once; cached plans
still give correct answers)."""

from __future__ import annotations

import dataclasses
import threading
import time
import traceback
from typing import Any

import numpy as np
from fuzzing import seconds

import einstride as es
from einstride.engine.backends.numpy.cache import (
    clear_plan_cache,
    general_cache,
    hot_cache,
    plan_cache_info,
)

THREADS = 8
DURATION = seconds(3.0, 60.0)

MIXED = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("ii->i", [(4, 4)]),
    ("i->ii", [(3,)]),
    ("ij->", [(5, 6)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]),
    ("...i,...i->...", [(2, 3, 4), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk->kij", [(2, 3, 4)]),
]
EXPRESSION = ("ij,jk->ik", (4, 6), (6, 3))


def layout_variant(rng: np.random.Generator, array: np.ndarray) -> Any:
    """The same values as a C array, a transposed copy's view, a strided view or a Tensor."""
    kind = rng.integers(4)
    if kind == 1 and array.ndim >= 2:
        return np.ascontiguousarray(array.T).T
    if kind == 2:
        padded = np.zeros(array.shape + (2,), array.dtype)
        padded[..., 0] = array
        return padded[..., 0]
    if kind == 3:
        return es.tensor(array)
    return array


def reference(equation: str, operands: list[np.ndarray]) -> np.ndarray:
    output = equation.split("->")[1].replace("...", "")
    if len(set(output)) == len(output):
        return np.einsum(equation, *operands)
    values = np.einsum(equation.replace("->ii", "->i"), *operands)  # i->ii: a diagonal
    full = np.zeros(values.shape * 2, values.dtype)
    full[np.arange(values.size), np.arange(values.size)] = values
    return full


def one_call(rng: np.random.Generator, expression: es.Expression) -> str:
    """One random call, checked; returns which kind it was."""
    pick = rng.integers(10)
    if pick < 3:  # a fresh shape, to churn the bounded cache
        i, j, k = (int(n) for n in rng.integers(1, 12, 3))
        equation, shapes = "ij,jk->ik", [(i, j), (j, k)]
    elif pick < 5:
        equation, shapes = EXPRESSION[0], list(EXPRESSION[1:])
    else:
        equation, shapes = MIXED[rng.integers(len(MIXED))]
    dtype = [np.float64, np.float32, np.int64, np.complex128][rng.integers(4)]
    operands = [rng.integers(-3, 4, s).astype(dtype) for s in shapes]
    expected = reference(equation, operands)
    views = [layout_variant(rng, a) for a in operands]
    use_out = rng.integers(2) == 0
    out = np.empty(expected.shape, expected.dtype) if use_out else None
    if 3 <= pick < 5:
        got = expression(*views, out=out)
        kind = "expression"
    else:
        got = es.einsum(equation, *views, out=out)
        kind = "einsum"
    got = out if use_out else np.asarray(got)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert np.shape(got) == expected.shape
    return kind


def test_threads_hammering_einsum_and_one_expression():
    clear_plan_cache()
    expression = es.contract_expression(*EXPRESSION)
    stop = time.monotonic() + DURATION
    counts = [{"einsum": 0, "expression": 0} for _ in range(THREADS)]
    failures: list[str] = []
    start = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        rng = np.random.default_rng(index)
        start.wait()
        try:
            while time.monotonic() < stop:
                counts[index][one_call(rng, expression)] += 1
        except BaseException:
            failures.append(traceback.format_exc())

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DURATION + 120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not failures, failures[0]

    calls = sum(c["einsum"] for c in counts)
    info = plan_cache_info()
    assert info.hits + info.misses + info.lanes == calls  # each einsum call answered once
    assert info.generic <= info.misses  # some misses ran a shape class's program
    for cache in (hot_cache, general_cache):  # the fast path's LRU and the general one
        assert cache.cache_info().currsize <= cache.cache_info().maxsize == info.maxsize
    assert info.misses > info.maxsize, "the workload should have made the cache evict"
    assert expression._entry.cache_info().currsize <= 64
    assert sum(c["expression"] for c in counts) > 0

    rng = np.random.default_rng(99)  # the survivors of the churn still answer correctly
    for _ in range(50):
        one_call(rng, expression)


def test_einsum_inside_any_of_the_engines_locks_does_not_hang() -> None:
    """A signal handler or a finalizer runs inside whatever lock its thread holds and may
    call einsum, which takes the same locks (a review hung in the path report's lock, a
    3-operand einsum in a SIGALRM handler): every lock must be reentrant."""
    from einstride.engine.backends.numpy import cache, options
    from einstride.engine.spec import search

    results: list[float] = []

    def inside(lock: Any) -> None:
        with lock:
            es.clear_plan_cache()
            chain = [np.ones((3, 4)), np.ones((4, 5)), np.ones((5, 3))]
            results.append(float(es.einsum("ij,jk,ki->", *chain)))  # a path, remembered
            es.einsum("ij,jk,ki->", *[np.ones((3, 4)), np.ones((4, 6)), np.ones((6, 3))])
            dataclasses.replace(options.default_options(), split_min_bytes=1 << 20)  # interned
            results.append(float(es.plan_cache_info().generic))

    for lock in (search._RECENT_LOCK, cache._COUNT_LOCK, options._INTERN_LOCK):
        thread = threading.Thread(target=inside, args=(lock,), daemon=True)
        thread.start()
        thread.join(30)
        assert not thread.is_alive(), f"einsum hung on {lock!r}"
    assert results[0::2] == [60.0] * 3
