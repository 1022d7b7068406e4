"""Reductions large enough to split over threads run as one BLAS matrix-vector product with
a vector of ones where the operand's innermost dense run is all summed (a row sum) or all
kept (a column sum) and the rest merges into one axis: chosen exactly there, equal to
NumPy's sum on every layout, with every byte counted."""

from __future__ import annotations

import itertools
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy.cache import entry_for
from einstride.engine.backends.numpy.options import (
    PlannerOptions,
    set_default_options,
)
from einstride.engine.backends.numpy.peak import plan_peak
from einstride.engine.backends.numpy.steps import Kernel, ReduceStep

# every reduction large, a column sum of any width a matrix product
SPLIT_ALWAYS = PlannerOptions(threads=2, split_min_bytes=0, matvec_min_columns=1)
LETTERS = "abcd"
ONES_MAX = PlannerOptions().ones_max


def _entry(equation: str, x: np.ndarray, options: PlannerOptions = SPLIT_ALWAYS) -> object:
    return entry_for(equation, [x], None, None, "auto", options=options)


def _kernels(equation: str, x: np.ndarray, options: PlannerOptions = SPLIT_ALWAYS) -> list[Kernel]:
    plan = _entry(equation, x, options).plan  # type: ignore[attr-defined]
    return [s.kernel for s in plan.steps if isinstance(s, ReduceStep)]


def _run(equation: str, x: np.ndarray, options: PlannerOptions = SPLIT_ALWAYS) -> np.ndarray:
    return np.asarray(_entry(equation, x, options).run([x], None))  # type: ignore[attr-defined]


def _blas_kind(x: np.ndarray, kept: tuple[int, ...], min_columns: int = 1) -> Kernel | None:
    """The oracle, from NumPy alone: the kernel whose matrix NumPy makes as a view (a
    reshape that shares memory) with unit stride along its rows and rows at least a row
    apart, a whole number of elements; None where there is none."""
    if x.dtype not in (np.float32, np.float64):
        return None  # complex: inf * (1+0j) would give NaN
    long_axes = [ax for ax in range(x.ndim) if x.shape[ax] > 1]
    memory = sorted(long_axes, key=lambda ax: -x.strides[ax])
    summed = [ax for ax in memory if ax not in kept]
    rows = [ax for ax in memory if ax in kept]
    ones = [ax for ax in range(x.ndim) if x.shape[ax] == 1]
    length = int(np.prod([x.shape[ax] for ax in summed]))
    width = int(np.prod([x.shape[ax] for ax in rows]))
    if not rows or not summed or length > ONES_MAX:
        return None  # (a sum to one number is never split, so never a matrix product)
    row_sum = x.transpose(rows + summed + ones).reshape(width, length)
    if np.shares_memory(row_sum, x) and _whole_rows(row_sum, x):
        return Kernel.MATVEC
    column_sum = x.transpose(summed + rows + ones).reshape(length, width)
    if np.shares_memory(column_sum, x) and _whole_rows(column_sum, x) and width >= min_columns:
        return Kernel.VECMAT
    return None


def _whole_rows(matrix: np.ndarray, x: np.ndarray) -> bool:
    step, unit = matrix.strides
    return unit == x.itemsize and step >= matrix.shape[1] * x.itemsize and step % x.itemsize == 0


@st.composite
def _reductions(draw: st.DrawFn) -> tuple[np.ndarray, str, tuple[int, ...]]:
    """An operand of rank 2-4 in any memory order, with steps, reversed or broadcast axes,
    and the axes it keeps (at least one, not all)."""
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    order = draw(st.permutations(range(rank)))  # the axes' order in memory
    steps = tuple(draw(st.lists(st.sampled_from([1, 1, 1, 2, -1]), min_size=rank, max_size=rank)))
    broadcast = draw(st.sampled_from([None, *range(rank)]))
    dtype = draw(st.sampled_from(["float64", "float32", "complex128", "int64"]))
    kept = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank - 1))))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    base_shape = [shape[ax] * abs(steps[ax]) for ax in order]
    base = rng.standard_normal(base_shape).astype(dtype)
    x = base[tuple(slice(None, None, steps[ax]) for ax in order)].transpose(np.argsort(order))
    if broadcast is not None:
        x = np.broadcast_to(x[(slice(None),) * broadcast + (slice(0, 1),)], shape)
    equation = LETTERS[:rank] + "->" + "".join(LETTERS[ax] for ax in kept)
    return x, equation, kept


@settings(max_examples=200, deadline=None)
@given(case=_reductions(), flip=st.booleans())
def test_the_kernel_is_a_matrix_vector_product_exactly_where_numpy_makes_the_matrix(
    case: tuple[np.ndarray, str, tuple[int, ...]], flip: bool
) -> None:
    x, equation, kept = case
    if flip:  # the output in another order than the operand's
        inputs, output = equation.split("->")
        equation = inputs + "->" + output[::-1]
    kernels = _kernels(equation, x)
    if kernels:  # none when the reduction is no step (every summed axis of size 1)
        # a kept broadcast axis is spread: the steps read the operand at its index 0
        read = x[tuple(slice(0, 1) if ax in kept and x.strides[ax] == 0 else slice(None)
                       for ax in range(x.ndim))]  # fmt: skip
        expected_kernel = _blas_kind(read, kept) or Kernel.LOOP
        assert kernels == [expected_kernel], (equation, x.shape, x.strides, kernels)
    got = _run(equation, x)
    expected = np.einsum(equation, x.astype(np.complex128 if x.dtype.kind == "c" else float))
    scale = np.einsum(equation, np.abs(x).astype(float)).max(initial=0.0)
    tol = 1e-5 if x.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize(
    "equation, kernel",
    [
        ("ijk->i", Kernel.MATVEC),
        ("ijk->ij", Kernel.MATVEC),
        ("ijk->k", Kernel.LOOP),  # 64 columns: BLAS gains nothing
        ("ijk->jk", Kernel.VECMAT),  # 16,384 columns
        ("ijk->kj", Kernel.VECMAT),
        ("ijk->j", Kernel.LOOP),  # the kept axis between summed ones
    ],
)
def test_a_large_reduction_is_one_matrix_vector_product_and_matches_numpy(
    equation: str, kernel: Kernel
) -> None:
    x = np.random.default_rng(0).standard_normal((256, 256, 64))  # 32 MiB: split size
    two = PlannerOptions(threads=2)
    assert _kernels(equation, x, two) == [kernel]
    # the same kernel on one thread: the bits never depend on the thread count (a review)
    assert _kernels(equation, x, PlannerOptions(threads=1)) == [kernel]
    assert _kernels(equation, x[:, :, ::-1], two) == [Kernel.LOOP]  # reversed: not BLAS
    np.testing.assert_allclose(_run(equation, x, two), np.einsum(equation, x), rtol=1e-10)
    report = es.explain(equation, x)
    words = {Kernel.MATVEC: "matrix-vector product, matrix @ ones",
             Kernel.VECMAT: "vector-matrix product, ones @ matrix"}  # fmt: skip
    if kernel in words:
        assert f"a BLAS {words[kernel]}" in report
        assert "temporary" in report  # the vector of ones, counted


def test_out_keeps_the_loop_and_a_temporary_takes_blas() -> None:
    """Straight into ``out=`` (any layout) the loop writes; into a temporary of the compute
    dtype (``out=`` of another dtype) BLAS does, and the copy follows."""
    x = np.random.default_rng(1).standard_normal((9, 5, 7))
    for out, kernel in ((np.empty((9,)), Kernel.LOOP), (np.empty((9,), np.float32), Kernel.MATVEC)):
        entry = entry_for("ijk->i", [x], out, None, "auto", options=SPLIT_ALWAYS)
        assert [s.kernel for s in entry.plan.steps if isinstance(s, ReduceStep)] == [kernel]
        entry.run([x], out)
        np.testing.assert_allclose(out, x.sum(axis=(1, 2)), rtol=1e-6)
    assert _kernels("ijk->ji", x) == [Kernel.MATVEC]  # returned: a transposed view of it


def test_a_reduction_inside_a_plan_writes_its_buffer_directly() -> None:
    """A reduction before a product writes the C-ordered buffer the planner allocates in
    the operand's order: the kernel's result lands there, no temporary of its size."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((64, 48, 32)), rng.standard_normal((48, 5))
    entry = entry_for("ijk,jl->il", [x, w], None, None, "auto", options=SPLIT_ALWAYS)
    kernels = [s.kernel for s in entry.plan.steps if isinstance(s, ReduceStep)]
    assert kernels == [Kernel.MATVEC]
    np.testing.assert_allclose(entry.run([x, w], None), np.einsum("ijk,jl->il", x, w))


@pytest.mark.parametrize(
    "equation, shape",
    [
        ("ij->i", (4096, 64)),
        ("ij->j", (64, 4096)),
        ("ijk->ij", (64, 64, 32)),
        ("ijk->kj", (16, 64, 512)),
    ],
)
def test_the_bytes_it_allocates_are_the_plans(equation: str, shape: tuple[int, ...]) -> None:
    """The vector of ones is a temporary of the step: tracemalloc sees no more than the
    plan's peak (up to small Python objects), which a result of 32 KiB or more would pass."""
    x = np.random.default_rng(3).standard_normal(shape)
    entry = _entry(equation, x)
    assert _kernels(equation, x) != [Kernel.LOOP]
    entry.run([x], None)  # type: ignore[attr-defined]
    tracemalloc.start()
    try:
        entry.run([x], None)  # type: ignore[attr-defined]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    planned = plan_peak(entry.plan)  # type: ignore[attr-defined]
    ones = [a for s in entry.plan.steps for a in s.allocs if a.what == "temporary"]  # type: ignore[attr-defined]
    assert ones and planned >= ones[0].nbytes
    assert peak <= planned + 8192, (peak, planned)


def test_complex_operands_keep_the_loop_and_its_infinities() -> None:
    x = np.ones((4, 6), complex)
    x[0, 0] = np.inf
    assert _kernels("ij->i", x) == [Kernel.LOOP] and _kernels("ij->j", x) == [Kernel.LOOP]
    np.testing.assert_array_equal(_run("ij->i", x), np.einsum("ij->i", x))
    np.testing.assert_array_equal(_run("ij->j", x), np.einsum("ij->j", x))


@pytest.mark.parametrize("equation", ["ij->i", "ij->j"])
@pytest.mark.parametrize("fill", ["invalid", "overflow"])
def test_floating_point_flags_are_ignored_as_by_the_loop(equation: str, fill: str) -> None:
    x = np.ones((4, 6))
    if fill == "invalid":
        x[:, 0], x[0, :], x[1, 1] = np.inf, np.inf, -np.inf
    else:
        x[:] = 1e308
    assert _kernels(equation, x) != [Kernel.LOOP]
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _run(equation, x)
    np.testing.assert_array_equal(got, np.einsum(equation, x))


def test_a_column_sum_is_a_matrix_product_from_its_least_width() -> None:
    large = PlannerOptions(threads=2, split_min_bytes=0)  # the default least width, 256
    assert _kernels("ij->j", np.ones((4, 255)), large) == [Kernel.LOOP]
    assert _kernels("ij->j", np.ones((4, 256)), large) == [Kernel.VECMAT]
    assert _kernels("ij->i", np.ones((4, 2)), large) == [Kernel.MATVEC]  # rows: any width


@pytest.mark.parametrize(
    "shape, equation",
    [((3, 2**17), "ab->a"), ((2**17, 3), "ab->b"), ((2, 3, 3 * 2**15), "abc->ab")],
)
def test_a_summed_run_past_the_bound_keeps_the_loop(shape: tuple[int, ...], equation: str) -> None:
    x = np.ones(shape)
    kept = tuple(LETTERS.index(c) for c in equation.split("->")[1])
    assert _kernels(equation, x) == [Kernel.LOOP]
    assert _blas_kind(x, kept) is None


def test_a_shape_past_the_bound_in_a_class_decided_below_it() -> None:
    """The decision is its shape class's (sizes rounded down to a half-octave): 2**16 + 1
    summed elements bind a decision made for 2**16, and its vector is counted at its size."""
    x = np.arange(2 * (ONES_MAX + 1), dtype=float).reshape(2, -1)
    assert _kernels("ab->a", x) == [Kernel.MATVEC]
    ones = [a for s in _entry("ab->a", x).plan.steps for a in s.allocs if a.what == "temporary"]  # type: ignore[attr-defined]
    assert [a.nbytes for a in ones] == [8 * (ONES_MAX + 1)]
    np.testing.assert_allclose(_run("ab->a", x), x.sum(axis=1), rtol=1e-12)


def test_every_small_layout_of_a_matrix() -> None:
    """Both orders, both kept axes, every step pair: the oracle and the planner agree."""
    base = np.arange(1.0, 1.0 + 8 * 6).reshape(8, 6)
    for order, keep, steps in itertools.product(("C", "F"), (0, 1), ((1, 1), (2, 1), (1, 2))):
        x = np.asarray(base, order=order)[:: steps[0], :: steps[1]]
        equation = "ab->" + "ab"[keep]
        assert _kernels(equation, x) == [_blas_kind(x, (keep,)) or Kernel.LOOP], (order, steps)
        np.testing.assert_allclose(_run(equation, x), x.sum(axis=1 - keep))


@pytest.mark.parametrize("shape", [(5, 3, 4), (3, 5, 4)])  # j sorts before i, or after
def test_rows_that_overlap_the_summed_run_keep_the_loop(shape: tuple[int, ...]) -> None:
    """BLAS takes rows at least a summed run apart; NumPy's matmul would run its own slow
    loop over rows that overlap it (here the kept j has the stride of the summed i)."""
    x = np.lib.stride_tricks.as_strided(np.arange(128.0), shape, (32, 32, 8), writeable=False)
    assert _blas_kind(x, (1,)) is None
    assert _kernels("ijk->j", x) == [Kernel.LOOP]
    np.testing.assert_allclose(_run("ijk->j", x), x.sum(axis=(0, 2)))


def test_rows_between_elements_keep_the_loop() -> None:
    """Rows 100 bytes apart (not a whole number of float64s): BLAS cannot take them."""
    raw = np.arange(2000, dtype=np.uint8)
    x = np.lib.stride_tricks.as_strided(raw.view(np.float64), (12, 4), (100, 8), writeable=False)
    assert _blas_kind(x, (0,)) is None
    assert _kernels("ij->i", x) == [Kernel.LOOP]
    np.testing.assert_allclose(_run("ij->i", x), x.sum(axis=1))


def test_every_memory_order_and_kept_set_of_rank_three_and_four() -> None:
    """Every order of the axes in memory, every kept set: the oracle and the planner agree,
    and the kernel's matrix is a view (a copy would fail) of the right axes."""
    for rank in (3, 4):
        sizes = (3, 4, 5, 2)[:rank]
        base = np.arange(1.0, 1.0 + np.prod(sizes))
        for order in itertools.permutations(range(rank)):
            x = base.reshape([sizes[ax] for ax in order]).transpose(np.argsort(order))
            for count in range(1, rank):
                for kept in itertools.combinations(range(rank), count):
                    output = "".join(LETTERS[ax] for ax in kept)
                    for out in {output, output[::-1]}:
                        equation = LETTERS[:rank] + "->" + out
                        assert _kernels(equation, x) == [_blas_kind(x, kept) or Kernel.LOOP]
                        np.testing.assert_allclose(_run(equation, x), np.einsum(equation, x))


def test_layouts_with_gaps_keep_the_loop_where_a_run_does_not_merge() -> None:
    """A step or a padded axis inside a run: the oracle and the planner agree (a kernel
    that took such a run would fail on its reshape)."""
    base = np.arange(1.0, 1.0 + 4 * 6 * 10).reshape(4, 6, 10)
    for x in (base[:, ::2, :], base[:, :, :5], base[::2], base[:, :3, :], base[:, :, ::2]):
        for kept in ((0,), (2,), (0, 1), (1, 2)):
            equation = "abc->" + "".join(LETTERS[ax] for ax in kept)
            assert _kernels(equation, x) == [_blas_kind(x, kept) or Kernel.LOOP], (x.strides, kept)
            np.testing.assert_allclose(_run(equation, x), np.einsum(equation, x))


def test_an_operand_off_its_alignment_takes_the_loop_without_a_copy() -> None:
    raw = np.zeros(512 * 1024 * 8 + 1, np.uint8)
    x = np.frombuffer(raw, np.float64, offset=1, count=512 * 1024).reshape(512, 1024)
    assert not x.flags.aligned and _kernels("ij->i", x) == [Kernel.MATVEC]
    entry = _entry("ij->i", x)
    tracemalloc.start()
    try:
        got = entry.run([x], None)  # type: ignore[attr-defined]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # matmul would copy the 4 MiB operand
    np.testing.assert_array_equal(got, np.zeros(512))


def test_a_memory_limit_below_the_vector_of_ones_takes_the_loop() -> None:
    x = np.ones((128, 65536))  # 64 MiB: a row sum BLAS runs where the threads split
    before = set_default_options(PlannerOptions(threads=2))
    try:
        assert "matrix-vector" in es.explain("ij->i", x)
        report = es.explain("ij->i", x, memory_limit=100_000)
        assert "matrix-vector" not in report
        np.testing.assert_array_equal(es.einsum("ij->i", x, memory_limit=100_000), x.sum(axis=1))
        np.testing.assert_array_equal(es.einsum("ij->i", x, memory_limit=5_000), x.sum(axis=1))
    finally:
        set_default_options(before)
