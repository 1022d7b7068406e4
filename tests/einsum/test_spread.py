"""A result the same along broadcast labels is spread: computed once, then broadcast.

Where every operand axis of an output label is broadcast (a zero stride), the NumPy backend
computes the result at index 0 of that label and broadcasts it into the output, instead of
copying each broadcast operand densely for BLAS (a matrix of identical rows times a matrix,
2048 x 2048: a 32 MiB copy and a 17-GFLOP matmul before, a vector-matrix product now).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from einsum_strategies import broadcast_equations
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride import EinsumError
from einstride.engine.backends.numpy.cache import entry_for
from einstride.engine.backends.numpy.plan import inner_call, spread_labels
from einstride.engine.backends.numpy.steps import CopyStep
from einstride_bench.memory import traced_peak


@st.composite
def _cases(draw: Any) -> tuple[str, list[np.ndarray], str]:
    """:func:`einsum_strategies.broadcast_equations` with NumPy operands of a drawn dtype."""
    equation, shapes = draw(broadcast_equations())
    dtype = draw(st.sampled_from(["float64", "float32", "int64", "complex128"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    ops = [np.broadcast_to((rng.standard_normal(stored) * 3).astype(dtype), shape)
           for shape, stored in shapes]  # fmt: skip
    return equation, ops, dtype


@settings(max_examples=300, deadline=None)
@given(_cases(), st.sampled_from([None, "C", "F"]))
def test_a_spread_result_is_numpys(
    case: tuple[str, list[np.ndarray], str], out: str | None
) -> None:
    equation, ops, dtype = case
    want = np.einsum(equation, *ops)
    plan = entry_for(equation, ops, None, None, "auto").plan
    read_once = inner_call(plan.call_spec, [op.dtype for op in ops], [op.strides for op in ops])
    # spread exactly where an output label is broadcast by every operand axis carrying it,
    # or an operand broadcasts a summed label (a result that is a view of an operand stays
    # one, as NumPy's)
    assert (plan.spread is not None) == (read_once is not None and not np.shares_memory(
        es.einsum(equation, *ops), ops[0]))  # fmt: skip
    tol = 1e-4 if dtype == "float32" else 1e-10
    if out is None:
        got = es.einsum(equation, *ops)
        assert got.shape == want.shape and got.dtype == want.dtype
    else:
        got = np.empty(want.shape, want.dtype, order=out)
        assert es.einsum(equation, *ops, out=got) is got
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if plan.spread is not None and out is None:  # a new array, not a view
        assert got.flags.writeable and not any(np.shares_memory(got, op) for op in ops)


def test_a_matrix_of_identical_rows_is_not_copied() -> None:
    """The issue's memory promise: no dense copy of a broadcast operand (before: a copy of
    operand 0, 32 MiB at 2048, the peak 64 MiB; now the output and a row)."""
    n = 512
    rng = np.random.default_rng(0)
    row, matrix = rng.standard_normal(n), rng.standard_normal((n, n))
    rows = np.broadcast_to(row, (n, n))
    es.einsum("ij,jk->ik", rows, matrix)  # (its plan is built and cached first)
    got, peak = traced_peak(lambda: es.einsum("ij,jk->ik", rows, matrix))
    np.testing.assert_allclose(got, np.einsum("ij,jk->ik", rows, matrix), rtol=1e-12)
    assert peak < got.nbytes + 64 * n  # the output and one row of it
    plan = entry_for("ij,jk->ik", [rows, matrix], None, None, "auto").plan
    assert not any(isinstance(step, CopyStep) for step in plan.steps)
    assert plan.spread is not None and plan.spread.operand_axes == ((0,), ())
    report = es.explain("ij,jk->ik", rows, matrix)
    assert "spread: the result is the same along i" in report
    assert f"operand 0: ({n}, {n}) float64, byte strides (0, 8)" in report
    assert f"result:    ({n}, {n}) float64 (new array)" in report


def test_a_spread_counts_the_full_output_against_the_memory_limit() -> None:
    n = 256
    rows = np.broadcast_to(np.ones(n), (n, n))
    matrix = np.ones((n, n))
    plan = entry_for("ij,jk->ik", [rows, matrix], None, None, "auto").plan
    assert plan.allocated_bytes == n * n * 8 + n * 8  # the full output and the row's result
    with pytest.raises(EinsumError, match="memory limit"):
        es.einsum("ij,jk->ik", rows, matrix, memory_limit=n * n * 8 - 1)
    got = es.einsum("ij,jk->ik", rows, matrix, memory_limit=n * n * 8 + n * 8)
    np.testing.assert_array_equal(got, np.full((n, n), float(n)))


def test_a_view_of_a_broadcast_operand_stays_a_view() -> None:
    rows = np.broadcast_to(np.arange(3.0), (4, 3))
    got = es.einsum("ij->ji", rows)
    assert np.shares_memory(got, rows) and got.shape == (3, 4)


def test_an_expression_and_a_gradient_spread_too() -> None:
    n = 512
    rows = np.broadcast_to(np.arange(float(n)), (n, n))
    matrix = np.ones((n, n))
    expr = es.contract_expression("ij,jk->ik", rows.shape, matrix.shape)
    expr(rows, matrix)
    got, peak = traced_peak(lambda: expr(rows, matrix))
    np.testing.assert_allclose(got, np.einsum("ij,jk->ik", rows, matrix))
    assert peak < got.nbytes + 64 * n  # no dense copy of the broadcast operand
    # a cotangent of ones (the gradient of a sum) is broadcast along both output labels
    ones = np.broadcast_to(1.0, (n, n))
    es.einsum_vjp("ij,jk->ik", (rows, matrix), ones)
    grads, peak = traced_peak(lambda: es.einsum_vjp("ij,jk->ik", (rows, matrix), ones))
    np.testing.assert_allclose(grads[0], np.full((n, n), float(n)))
    np.testing.assert_allclose(grads[1], np.einsum("ij,ik->jk", rows, ones))
    assert peak < 2 * got.nbytes + 64 * n  # the two gradients, no dense copy of the ones


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_spread_into_out_stays_within_the_limit(order: str) -> None:
    """A review: the broadcast of out='s first slice into out= overlapped, and NumPy copied
    the source whole (the size of out=, 16.8 MB for an 8 x 512 x 512 output) where the plan
    counted nothing: the slice is copied first (its bytes counted)."""
    n = 256
    rows = np.broadcast_to(np.arange(float(n)), (4, n, n))
    matrix = np.ones((n, n))
    out = np.empty((4, n, n), order=order)
    limit = 64 * 1024
    es.einsum("bij,jk->bik", rows, matrix, out=out, memory_limit=limit)
    _, peak = traced_peak(
        lambda: es.einsum("bij,jk->bik", rows, matrix, out=out, memory_limit=limit)
    )
    np.testing.assert_allclose(out, np.einsum("bij,jk->bik", rows, matrix))
    assert peak < limit
    plan = entry_for("bij,jk->bik", [rows, matrix], out, None, "auto").plan
    assert plan.spread is not None and plan.allocated_bytes == n * 8  # one row, copied


def test_the_report_counts_the_calls_naive_flops() -> None:
    """A review: the report gave the spread plan's naive FLOPs (the label at size 1)."""
    n = 256
    rows = np.broadcast_to(np.ones(n), (n, n))
    report = es.explain("ij,jk->ik", rows, np.ones((n, n)))
    naive = np.einsum_path("ij,jk->ik", rows, np.ones((n, n)), optimize="greedy")[1]
    assert f"naive FLOPs: {2 * n**3:,}" in report and "Naive FLOP count:  3.355e+07" in naive
    # the steps' call (i at size 1, its zero stride read as an outer one) has a shape class
    assert (
        f"decisions: of the shape class of (1, {n}), ({n}, {n}) (half-octave sizes)" in report
        and "for the steps' call 'ij,jk->ik' (broadcast axes read once)" in report
    )


def test_a_product_that_sums_nothing_is_not_spread() -> None:
    """A review: i,j->ij with a broadcast operand gained nothing from the spread (the
    product reads it as it is) and held its small result beside the output."""
    a, b = np.broadcast_to(np.float64(3.0), (600,)), np.ones(500)
    plan = entry_for("i,j->ij", [a, b], None, None, "auto").plan
    assert spread_labels(plan.spec, [a.strides, b.strides]) == () and plan.spread is None
    np.testing.assert_array_equal(es.einsum("i,j->ij", a, b), np.full((600, 500), 3.0))


def test_under_a_limit_the_report_says_the_spread_plan_is_over_it() -> None:
    """A review: over the limit, the report quoted the peak of the plan without the spread
    as the call's, and where that plan fits gave a reason for another case."""
    n = 64
    rows, matrix = np.broadcast_to(np.arange(float(n)), (n, n)), np.ones((n, n))
    report = es.explain("ij,jk->ik", rows, matrix, memory_limit=33_000)
    assert "the spread plan would peak at 33,280 B: the call runs without the spread" in report
    got = es.einsum("ij,jk->ik", rows, matrix, memory_limit=33_000)
    np.testing.assert_allclose(got, np.einsum("ij,jk->ik", rows, matrix))
    # the spread plan holds its one-element result beside the output; the plan without it,
    # NumPy's loop over the views, the output alone: it fits a limit of the output's bytes
    matrix = np.lib.stride_tricks.as_strided(np.arange(4096.0), (4096, 4096), (0, 8))
    vector = np.ones(4096)
    report = es.explain("ij,j->i", matrix, vector, memory_limit=4096 * 8)
    assert "the spread plan would peak at 32,776 B" in report
    assert "peaks at 32,768 B, within it" in report and "instead of a BLAS" not in report
    got = es.einsum("ij,j->i", matrix, vector, memory_limit=4096 * 8)
    np.testing.assert_allclose(got, np.einsum("ij,j->i", matrix, vector))
