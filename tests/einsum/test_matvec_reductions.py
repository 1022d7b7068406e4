"""Reductions large enough to split over threads run as one BLAS matrix-vector product with
a vector of ones where the operand's innermost dense run is all summed (a row sum) or all
kept (a column sum): chosen exactly there, and equal to NumPy's sum on every layout."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy.cache import entry_for
from einstride.engine.backends.numpy.execute import ones_vector
from einstride.engine.backends.numpy.options import PlannerOptions
from einstride.engine.backends.numpy.steps import MATVEC_MAX_SUMMED, Kernel, ReduceStep

# every reduction large, a column sum of any width a matrix product
SPLIT_ALWAYS = PlannerOptions(threads=2, split_min_bytes=0, matvec_min_columns=1)
LETTERS = "abcd"


def _kernels(equation: str, ops: list[np.ndarray], options: PlannerOptions) -> list[Kernel]:
    plan = entry_for(equation, ops, None, None, "auto", options=options).plan
    return [s.kernel for s in plan.steps if isinstance(s, ReduceStep)]


def _blas_kind(x: np.ndarray, kept: tuple[int, ...]) -> Kernel | None:
    """The oracle, from NumPy alone: the kernel whose matrix NumPy makes as a view (a
    reshape that shares memory) with unit stride along its columns and its rows a whole
    number of elements apart, at least a row; None where there is none."""
    if x.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        return None
    long_axes = [ax for ax in range(x.ndim) if x.shape[ax] > 1]
    memory = sorted(long_axes, key=lambda ax: -x.strides[ax])
    summed = [ax for ax in memory if ax not in kept]
    rows = [ax for ax in long_axes if ax in kept]
    if not rows or not summed:
        return None  # (a sum to one number is never split, so never a matrix product)
    ones = [ax for ax in range(x.ndim) if x.shape[ax] == 1]
    length = int(np.prod([x.shape[ax] for ax in summed]))
    width = int(np.prod([x.shape[ax] for ax in rows]))
    if length > MATVEC_MAX_SUMMED:
        return None
    row_sum = x.transpose(rows + summed + ones).reshape([x.shape[ax] for ax in rows] + [length])
    if np.shares_memory(row_sum, x) and _whole_rows(row_sum, rows, x, length):
        return Kernel.MATVEC
    kept_memory = [ax for ax in memory if ax in kept]
    column_sum = x.transpose(summed + kept_memory + ones).reshape(length, width)
    if np.shares_memory(column_sum, x) and _whole_rows(column_sum, summed[-1:], x, width):
        return Kernel.VECMAT
    return None


def _whole_rows(matrix: np.ndarray, outer: list[int], x: np.ndarray, run: int) -> bool:
    return (
        matrix.strides[-1] == x.itemsize
        and all(x.strides[ax] >= run * x.itemsize for ax in outer)
        and all(x.strides[ax] % x.itemsize == 0 for ax in outer)
    )


@st.composite
def _reductions(draw: st.DrawFn) -> tuple[np.ndarray, str, tuple[int, ...]]:
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    order = draw(st.permutations(range(rank)))  # the axes' order in memory
    steps = tuple(draw(st.lists(st.sampled_from([1, 1, 2]), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(["float64", "float32", "complex128", "int64"]))
    kept = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank - 1))))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    base_shape = [shape[ax] * steps[ax] for ax in order]
    base = rng.standard_normal(base_shape).astype(dtype)
    x = base[tuple(slice(None, None, steps[ax]) for ax in order)].transpose(np.argsort(order))
    equation = LETTERS[:rank] + "->" + "".join(LETTERS[ax] for ax in kept)
    return x, equation, kept


@settings(max_examples=150, deadline=None)
@given(case=_reductions(), flip=st.booleans())
def test_the_kernel_is_a_matrix_vector_product_exactly_where_numpy_makes_the_matrix(
    case: tuple[np.ndarray, str, tuple[int, ...]], flip: bool
) -> None:
    x, equation, kept = case
    if flip:  # the output in another order than the operand's
        inputs, output = equation.split("->")
        equation = inputs + "->" + output[::-1]
    kernels = _kernels(equation, [x], SPLIT_ALWAYS)
    if kernels:  # none when the reduction is no step (every summed axis of size 1)
        expected_kernel = _blas_kind(x, kept) or Kernel.LOOP
        assert kernels == [expected_kernel], (equation, x.shape, x.strides, kernels)
    entry = entry_for(equation, [x], None, None, "auto", options=SPLIT_ALWAYS)
    got = np.asarray(entry.run([x], None))
    expected = np.einsum(equation, x.astype(np.complex128 if x.dtype.kind == "c" else float))
    scale = np.einsum(equation, np.abs(x).astype(float)).max(initial=0.0)
    tol = 1e-5 if x.dtype in (np.float32, np.complex64) else 1e-12
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
    assert _kernels(equation, [x], two) == [kernel]
    assert _kernels(equation, [x], PlannerOptions(threads=1)) == [Kernel.LOOP]  # never split
    assert _kernels(equation, [x[:, :, ::-1]], two) == [Kernel.LOOP]  # reversed: not BLAS
    entry = entry_for(equation, [x], None, None, "auto", options=two)
    expected = np.einsum(equation, x)
    np.testing.assert_allclose(entry.run([x], None), expected, rtol=1e-10, atol=1e-10)
    report = es.explain(equation, x)
    words = {Kernel.MATVEC: "matrix @ ones", Kernel.VECMAT: "ones @ matrix"}
    if kernel in words and "split" not in report:  # the default thread count is 2 or more
        assert (
            f"a BLAS {'matrix-vector' if kernel is Kernel.MATVEC else 'vector-matrix'}"
            f" product, {words[kernel]}" in report
        )


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_into_out_views_and_another_shape_of_the_class(dtype: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((9, 5, 7)).astype(dtype)
    entry = entry_for("ijk->ji", [x], None, None, "auto", options=SPLIT_ALWAYS)
    assert Kernel.MATVEC in [s.kernel for s in entry.plan.steps if isinstance(s, ReduceStep)]
    out = np.full((10, 18), np.nan, dtype)[::2, ::2]  # a strided view, transposed result
    entry_out = entry_for("ijk->ji", [x], out, None, "auto", options=SPLIT_ALWAYS)
    entry_out.run([x], out)
    np.testing.assert_allclose(out, x.sum(axis=2).T, rtol=1e-5)
    y = rng.standard_normal((11, 5, 7)).astype(dtype)  # the same half-octave class
    again = entry_for("ijk->ji", [y], None, None, "auto", options=SPLIT_ALWAYS)
    assert again.plan.reused
    np.testing.assert_allclose(again.run([y], None), y.sum(axis=2).T, rtol=1e-5)


def test_the_vector_of_ones_is_cached_read_only_up_to_its_bound() -> None:
    f64 = np.dtype(np.float64)
    short = ones_vector(f64, 5)
    assert short.tolist() == [1.0] * 5 and not short.flags.writeable
    assert np.shares_memory(short, ones_vector(f64, MATVEC_MAX_SUMMED))
    longer = ones_vector(f64, MATVEC_MAX_SUMMED + 1)  # made for the call
    assert longer.shape == (MATVEC_MAX_SUMMED + 1,) and not np.shares_memory(longer, short)
    assert ones_vector(np.dtype(np.float32), 3).dtype == np.float32


@pytest.mark.parametrize("shape, kept", [((3, 2**17), (0,)), ((2, 1, 3 * 2**15), (0, 1))])
def test_a_summed_run_past_the_bound_keeps_the_loop(
    shape: tuple[int, ...], kept: tuple[int, ...]
) -> None:
    x = np.ones(shape)
    equation = LETTERS[: len(shape)] + "->" + "".join(LETTERS[ax] for ax in kept)
    assert _kernels(equation, [x], SPLIT_ALWAYS) == [Kernel.LOOP]
    assert _blas_kind(x, kept) is None


def test_a_shape_past_the_bound_in_a_class_decided_below_it() -> None:
    """The decision is its shape class's (sizes rounded down to a half-octave): 2**16 + 1
    summed elements bind a decision made for 2**16, and the vector is made for the call."""
    x = np.arange(2 * (MATVEC_MAX_SUMMED + 1), dtype=float).reshape(2, -1)
    assert _kernels("ab->a", [x], SPLIT_ALWAYS) == [Kernel.MATVEC]
    entry = entry_for("ab->a", [x], None, None, "auto", options=SPLIT_ALWAYS)
    np.testing.assert_allclose(entry.run([x], None), x.sum(axis=1), rtol=1e-12)


def test_every_small_layout_of_a_matrix() -> None:
    """Both orders, both kept axes, every step pair: the oracle and the planner agree."""
    base = np.arange(1.0, 1.0 + 8 * 6).reshape(8, 6)
    for order, keep, steps in itertools.product(("C", "F"), (0, 1), ((1, 1), (2, 1), (1, 2))):
        x = np.asarray(base, order=order)[:: steps[0], :: steps[1]]
        equation = "ab->" + "ab"[keep]
        kernels = _kernels(equation, [x], SPLIT_ALWAYS)
        assert kernels == [_blas_kind(x, (keep,)) or Kernel.LOOP], (order, keep, steps)
        np.testing.assert_allclose(es.einsum(equation, x), x.sum(axis=1 - keep))


@pytest.mark.parametrize("shape", [(5, 3, 4), (3, 5, 4)])  # j sorts before i, or after
def test_rows_that_overlap_the_summed_run_keep_the_loop(shape: tuple[int, ...]) -> None:
    """BLAS takes rows at least a summed run apart; NumPy's matmul would run its own slow
    loop over rows that overlap it (here the kept j has the stride of the summed i)."""
    base = np.arange(128.0)
    x = np.lib.stride_tricks.as_strided(base, shape, (32, 32, 8), writeable=False)
    assert _blas_kind(x, (1,)) is None
    assert _kernels("ijk->j", [x], SPLIT_ALWAYS) == [Kernel.LOOP]
    np.testing.assert_allclose(es.einsum("ijk->j", x), x.sum(axis=(0, 2)))


def test_a_column_sum_is_a_matrix_product_from_its_least_width() -> None:
    large = PlannerOptions(threads=2, split_min_bytes=0)  # the default least width, 256
    assert _kernels("ij->j", [np.ones((4, 255))], large) == [Kernel.LOOP]
    assert _kernels("ij->j", [np.ones((4, 256))], large) == [Kernel.VECMAT]
    assert _kernels("ij->i", [np.ones((4, 2))], large) == [Kernel.MATVEC]  # rows: any width


@pytest.mark.parametrize("equation", ["ij->i", "ij->j"])
def test_into_out_of_its_dtype_no_temporary_is_made(equation: str) -> None:
    import tracemalloc

    x = np.ascontiguousarray(np.random.default_rng(2).standard_normal((4, 4096)))
    out = np.empty(4 if equation == "ij->i" else 4096)
    entry = entry_for(equation, [x], out, None, "auto", options=SPLIT_ALWAYS)
    assert [s.kernel for s in entry.plan.steps if isinstance(s, ReduceStep)] != [Kernel.LOOP]
    entry.run([x], out)  # the vector of ones is made once
    tracemalloc.start()
    try:
        entry.run([x], out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024  # the column sum's result alone takes 32 KiB
    np.testing.assert_allclose(out, np.einsum(equation, x))
