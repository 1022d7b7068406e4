"""An outer product's kernel: NumPy's sum-of-products loop in cache, one broadcast
``numpy.multiply`` past ``MULTIPLY_MIN_BYTES`` (the loop zeroes the output and then adds
into it; the multiply writes each element once), the same values either way."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import einstride as es
from einstride.engine.backends.numpy.cache import entry_for
from einstride.engine.backends.numpy.plan import MULTIPLY_MIN_BYTES
from einstride.engine.backends.numpy.steps import BatchStep, Kernel
from einstride.engine.backends.numpy.threads import set_num_threads


def _kernels(equation: str, *ops: np.ndarray) -> list[Kernel]:
    plan = entry_for(equation, list(ops), None, None, "auto").plan
    return [step.kernel for step in plan.steps if isinstance(step, BatchStep)]


@pytest.mark.parametrize(
    ("equation", "shapes", "dtype", "kernel"),
    [
        ("i,j->ij", [(2048,), (2048,)], "float64", Kernel.MULTIPLY),  # 32 MiB
        ("i,j->ji", [(2048,), (2048,)], "float64", Kernel.MULTIPLY),
        ("i,j->ij", [(1024,), (1024,)], "complex128", Kernel.MULTIPLY),  # 16 MiB
        ("i,jk->ijk", [(8,), (512, 512)], "float64", Kernel.MULTIPLY),
        ("i,j->ij", [(1024,), (1024,)], "float64", Kernel.LOOP),  # 8 MiB: in cache
        ("i,j->ij", [(262144,), (8,)], "float64", Kernel.LOOP),  # a run of 8: the loop
        ("ij,ij->ij", [(64, 64), (64, 64)], "float64", Kernel.MULTIPLY),  # Hadamard
    ],
)
def test_the_kernel_follows_the_results_size(
    equation: str, shapes: list[tuple[int, ...]], dtype: str, kernel: Kernel
) -> None:
    rng = np.random.default_rng(0)
    ops = [rng.standard_normal(s).astype(dtype) for s in shapes]
    assert _kernels(equation, *ops) == [kernel]
    # one product per element either way: the values are NumPy's, bit for bit
    np.testing.assert_array_equal(es.einsum(equation, *ops), np.einsum(equation, *ops))
    want = np.einsum(equation, *ops)
    out = np.empty(want.shape, want.dtype, order="F")
    es.einsum(equation, *ops, out=out)
    np.testing.assert_array_equal(out, want)


@pytest.fixture
def one_thread() -> Iterator[None]:
    set_num_threads(1)
    try:
        yield
    finally:
        set_num_threads(None)


@pytest.mark.usefixtures("one_thread")
def test_the_lane_leaves_a_multiplied_product_to_the_plan() -> None:
    """On one thread nothing is split, and the lane took outer products of any size; the
    planner writes those past MULTIPLY_MIN_BYTES with a multiply, and the lane leaves them
    to it (below, it still answers)."""
    a, b = np.ones(2048), np.ones(2048)
    assert MULTIPLY_MIN_BYTES <= 2048 * 2048 * 8
    for n, lane in ((2048, False), (512, True)):
        before = es.plan_cache_info().lanes
        es.einsum("i,j->ij", a[:n], b[:n])
        assert (es.plan_cache_info().lanes > before) == lane, n
    assert "one broadcast multiply" in es.explain("i,j->ij", a, b)
