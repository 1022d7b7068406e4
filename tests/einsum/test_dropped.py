"""An operand that broadcasts a summed label is read without it (``plan.dropped_axes``).

A matrix of identical columns (``x[i, k] = v[i]``, a zero stride along ``k``) times a matrix
over ``k`` is ``v[i]`` times the sums of the matrix's rows: the planner reads the operand at
index 0 of ``k`` and leaves it out of the sum, where before BLAS copied it densely and
multiplied ``2 n**3`` (1024 x 1024: an 8 MiB copy and a 2-GFLOP matmul before, a reduction
and an outer product now).  The gradient of a row sum is such an operand.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from einsum_oracle import brute_force
from einsum_strategies import Case, broadcast_equations, cases
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy.cache import entry_for
from einstride.engine.backends.numpy.peak import plan_peak
from einstride.engine.backends.numpy.plan import build_plan, dropped_axes, inner_call
from einstride.engine.backends.numpy.steps import ContractStep, CopyStep
from einstride.engine.call import equation_of
from einstride.engine.spec.equation import bind, parse_equation
from einstride_bench.memory import traced_peak


def _columns(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A matrix of identical columns (n x m, zero strides along its second axis), and its
    column."""
    column = np.random.default_rng(seed).standard_normal(n)
    return np.broadcast_to(column[:, None], (n, m)), column


def test_identical_columns_times_a_matrix_is_a_reduction_and_an_outer_product() -> None:
    n = 512
    columns, column = _columns(n, n)
    matrix = np.random.default_rng(1).standard_normal((n, n))
    es.einsum("ik,jk->ij", columns, matrix)  # (its plan is built and cached first)
    got, peak = traced_peak(lambda: es.einsum("ik,jk->ij", columns, matrix))
    np.testing.assert_allclose(got, np.einsum("ik,jk->ij", columns, matrix), rtol=1e-9)
    np.testing.assert_allclose(got, np.outer(column, matrix.sum(axis=1)), rtol=1e-12)
    assert peak < got.nbytes + 64 * n  # the output and the row sums: no dense copy
    plan = entry_for("ik,jk->ij", [columns, matrix], None, None, "auto").plan
    assert plan.spread is not None and plan.spread.dropped == ((1,), ())
    assert plan.spread.axes == () and plan.spread.alloc is None
    assert not any(isinstance(step, (CopyStep, ContractStep)) for step in plan.steps)
    report = es.explain("ik,jk->ij", columns, matrix)
    assert f"operand 0: ({n}, {n}) float64, byte strides (8, 0)" in report
    assert (
        "dropped: operand 0 broadcasts the summed label k (zero strides): the steps read it "
        "at index 0 of axes [1], outside the sum over k" in report
    )


def test_where_every_operand_broadcasts_a_summed_label_the_smallest_keeps_it() -> None:
    spec = parse_equation("ik,jk->ij", (4, 3), (5, 3))
    assert dropped_axes(spec, ((8, 0), (8, 0))) == ((), (1,))  # operand 0: 12 elements
    spec = parse_equation("ik,jk->ij", (6, 3), (5, 3))
    assert dropped_axes(spec, ((8, 0), (8, 0))) == ((1,), ())
    a, _ = _columns(300, 200)
    b, _ = _columns(100, 200, seed=1)
    got = es.einsum("ik,jk->ij", a, b)
    np.testing.assert_allclose(got, np.einsum("ik,jk->ij", a, b), rtol=1e-12)
    plan = entry_for("ik,jk->ij", [a, b], None, None, "auto").plan
    assert plan.spread is not None and plan.spread.dropped == ((1,), ())
    assert not any(isinstance(step, (CopyStep, ContractStep)) for step in plan.steps)


def test_a_single_carrier_and_a_dense_operand_drop_nothing() -> None:
    spec = parse_equation("ik,k->i", (4, 3), (3,))
    assert dropped_axes(spec, ((0, 8), (8,))) == ((), ())  # k is dense in both
    spec = parse_equation("ik->i", (4, 3))
    assert dropped_axes(spec, ((8, 0),)) == ((),)  # its only carrier sums it
    spec = parse_equation("ij,jk->ik", (4, 3), (3, 5))
    assert dropped_axes(spec, ((0, 8), (40, 8))) == ((), ())  # i is an output label
    # a broadcast vector times a matrix: summing the matrix costs what the product does
    spec = parse_equation("ij,j->i", (4, 3), (3,))
    assert dropped_axes(spec, ((24, 8), (0,))) == ((), ())
    matrix, vector = np.ones((300, 200)), np.broadcast_to(2.0, (200,))
    plan = entry_for("ij,j->i", [matrix, vector], None, None, "auto").plan
    assert plan.spread is None  # (and the shape class's plan serves it)
    np.testing.assert_array_equal(es.einsum("ij,j->i", matrix, vector), np.full(300, 400.0))


def test_into_out_the_steps_write_out_directly() -> None:
    n = 256
    columns, column = _columns(n, n)
    matrix = np.ones((n, n))
    out = np.empty((n, n), order="F")
    assert es.einsum("ik,jk->ij", columns, matrix, out=out) is out
    np.testing.assert_allclose(out, np.outer(column, np.full(n, float(n))))
    plan = entry_for("ik,jk->ij", [columns, matrix], out, None, "auto").plan
    assert plan.spread is not None and plan.allocated_bytes == n * 8  # the row sums alone


def test_size_one_ellipsis_axes_are_read_at_index_0_with_it() -> None:
    """A summed label dropped from the equation renames its '...' dimensions: a size-1 one
    that broadcasts is read at index 0 too (the named label would not broadcast)."""
    x = np.broadcast_to(np.arange(3.0)[:, None, None], (3, 1, 5))  # '...' (3, 1), k
    z = np.arange(20.0).reshape(4, 5)
    spec = parse_equation("...k,...jk->...j", x.shape, (2, z.shape[0], 5))
    assert dropped_axes(spec, (x.strides, (0, 40, 8))) == ((1, 2), ())
    y = np.broadcast_to(z, (2, 4, 5))
    got = es.einsum("...k,...jk->...j", x, y)
    np.testing.assert_allclose(got, np.einsum("...k,...jk->...j", x, y))
    report = es.explain("...k,...jk->...j", x, y)
    assert "its size-1 '...' axes [1] are read at index 0" in report


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["ik,jk->ij", "bik,bkj->bij", "ijk,jk->i", "ik,kj,jl->il", "iik,k->i"]),
    st.integers(1, 5),
    st.integers(0, 2**16),
    st.sampled_from(["float64", "int64", "complex128", "float32"]),
)
def test_dropped_labels_give_numpys_result(equation: str, size: int, seed: int, dtype: str) -> None:
    """Each operand broadcasts a drawn set of its summed labels (every axis carrying one)."""
    rng = np.random.default_rng(seed)
    inputs, output = equation.split("->")
    terms = inputs.split(",")
    summed = sorted(set(inputs) - set(output) - {","})
    sizes = {x: int(rng.integers(1, size + 1)) for x in set(inputs) - {","}}
    ops = []
    for term in terms:
        flat = {x for x in summed if rng.random() < 0.6}
        stored = [1 if x in flat else sizes[x] for x in term]
        values = (rng.standard_normal(stored) * 3).astype(dtype)
        ops.append(np.broadcast_to(values, [sizes[x] for x in term]))
    want = np.einsum(equation, *ops)
    got = es.einsum(equation, *ops)
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert got.dtype == want.dtype and got.shape == want.shape


def test_the_gradient_of_a_row_sum_is_not_copied() -> None:
    """y = x @ w, loss = y.sum(axis=1) . c: the cotangent of y is c broadcast along y's
    columns, and dx = g w^T sums it against w's rows (the backward einsum 'ij,kj->ik': a
    copy of the cotangent and a 2 n**3 matmul before)."""
    n = 512
    rng = np.random.default_rng(2)
    x, w, c = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
    cotangent = np.broadcast_to(c[:, None], (n, n))
    dx, dw = es.einsum_vjp("ik,kj->ij", (x, w), cotangent)
    np.testing.assert_allclose(dx, np.outer(c, w.sum(axis=1)), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dw, np.outer(x.T @ c, np.ones(n)), rtol=1e-9, atol=1e-9)
    got, peak = traced_peak(lambda: es.einsum("ij,kj->ik", cotangent, w))
    np.testing.assert_allclose(got, dx, rtol=1e-12)
    assert peak < dx.nbytes + 64 * n  # dx and w's row sums: no dense copy of the cotangent


@pytest.mark.parametrize("limit", [None, 10**9])
def test_an_expression_drops_them_too(limit: int | None) -> None:
    n = 256
    columns, column = _columns(n, n)
    matrix = np.ones((n, n))
    expr = es.contract_expression("ik,jk->ij", columns.shape, matrix.shape)
    got = expr(columns, matrix, memory_limit=limit)
    np.testing.assert_allclose(got, np.outer(column, np.full(n, float(n))))


@settings(max_examples=150, deadline=None)
@given(broadcast_equations(), st.integers(0, 2**16))
def test_a_plan_through_the_inner_calls_cache_is_the_plan_made_for_its_shapes(
    case: tuple[str, list[tuple[tuple[int, ...], tuple[int, ...]]]], seed: int
) -> None:
    """A call of several operands that reads broadcast axes once looks its inner call up in
    the plan caches (a new shape of a known class: the class's program, no planning); its
    plan is the one made for its own shapes."""
    equation, shapes = case
    rng = np.random.default_rng(seed)
    ops = [np.broadcast_to(rng.standard_normal(stored), shape) for shape, stored in shapes]
    entry = entry_for(equation, ops, None, None, "auto")
    spec = parse_equation(equation, *[op.shape for op in ops])
    fresh = build_plan(spec, [op.dtype for op in ops], [op.strides for op in ops], spread=True)
    assert entry.plan == fresh
    for _ in range(2):  # (a class's first call may run its path directly, under its bounds)
        np.testing.assert_allclose(entry.run(ops, None), np.einsum(equation, *ops), atol=1e-12)
    assert (entry.largest, entry.peak) == (fresh.largest_bytes, plan_peak(fresh))


def test_a_new_shape_of_a_known_class_is_not_planned() -> None:
    es.clear_plan_cache()
    for m in (40, 41):  # the same half-octave class
        columns, _ = _columns(m, 32, seed=m)
        matrix = np.ones((24, 32))
        before = es.plan_cache_info().generic
        got = es.einsum("ik,jk->ij", columns, matrix)
        np.testing.assert_allclose(got, np.einsum("ik,jk->ij", columns, matrix))
    assert es.plan_cache_info().generic == before + 1  # the second inner call: its class's


def test_under_a_limit_the_inner_call_is_sliced() -> None:
    """A review: with a limit just under the plan's peak (the output and the row sums), the
    call ran without dropping the axis, its dense plan in 16,384 slices (0.75 s at 1024 x
    1024); the inner call is now limited itself, the dropped axis kept out (2 slices)."""
    n = 256
    columns, column = _columns(n, n)
    matrix = np.ones((n, n))
    limit = n * n * 8 + n * 4  # the output and half the row sums
    es.einsum("ik,jk->ij", columns, matrix, memory_limit=limit)
    got, peak = traced_peak(lambda: es.einsum("ik,jk->ij", columns, matrix, memory_limit=limit))
    np.testing.assert_allclose(got, np.outer(column, np.full(n, float(n))))
    assert peak <= limit + 4096  # (tracemalloc's own and the slices' small objects)
    report = es.explain("ik,jk->ij", columns, matrix, memory_limit=limit)
    assert "dropped: operand 0 broadcasts the summed label k" in report
    assert "sliced over: j: 2 chunks of 128" in report and "without dropping" not in report


def test_the_inner_call_drops_nothing_more() -> None:
    """A review: the smallest operand keeping a summed label was chosen at the full sizes,
    and the steps' call (its spread label at size 1) chose another and dropped it again:
    the plan through the caches was not the plan made for the shapes."""
    x = np.lib.stride_tricks.as_strided(np.arange(3.0), (4, 4, 3), (0, 0, 8))
    y = np.lib.stride_tricks.as_strided(np.ones(1), (4, 4, 4), (0, 0, 0))
    entry = entry_for("cba,ccb->c", [x, y], None, None, "auto")
    spec = parse_equation("cba,ccb->c", x.shape, y.shape)
    fresh = build_plan(spec, [x.dtype, y.dtype], [x.strides, y.strides], spread=True)
    assert entry.plan == fresh and entry.plan.spec.text == "ca,ccb->c"
    np.testing.assert_allclose(entry.run([x, y], None), np.einsum("cba,ccb->c", x, y))


def test_a_size_one_ellipsis_axis_holds_no_label_for_the_drop() -> None:
    """Found by hypothesis (test_einsum_differential's dtype= test, another seed): operand 3
    carries ``a`` and holds ``...`` only on a size-1 axis, which is left out with the rest;
    counted as holding it, operand 4 kept its broadcast ``a`` (no gain), the inner call
    then dropped it, and the spread's plan raised AssertionError on every call."""
    strided = np.lib.stride_tricks.as_strided
    ops = [
        np.array(2.0),
        strided(np.array([2.0]), (2, 2), (0, 0)),
        strided(np.array([2.0]), (1, 2, 2, 2), (0, 0, 0, 0)),
        strided(np.array([2.0, 1.0]), (1, 2, 2, 2), (0, 0, 8, 0)),
        strided(np.array([2.0, 1.0]), (2, 2), (8, 0)),
    ]
    equation = "...,ad,...aaa,...aad,...a"
    np.testing.assert_allclose(es.einsum(equation, *ops), np.einsum(equation, *ops))
    np.testing.assert_allclose(es.einsum(equation, *ops, dtype="float64"), [96.0, 48.0])
    assert "dropped: operand 4 broadcasts the summed label a" in es.explain(equation, *ops)


@st.composite
def _broadcast_problems(draw: Any) -> tuple[Case, list[np.ndarray]]:
    """Equations of up to five operands (``...`` among them) whose axes broadcast half the
    time (stride 0)."""
    case = draw(cases())
    operands = []
    for shape in case.shapes:
        flat = [n > 1 and draw(st.booleans()) for n in shape]
        stored = tuple(1 if f else n for n, f in zip(shape, flat))
        values = np.arange(1.0, 1.0 + math.prod(stored)).reshape(stored) % 3 + 1
        operands.append(np.broadcast_to(values, shape))
    return case, operands


@settings(max_examples=200, deadline=None)
@given(_broadcast_problems())
def test_an_inner_call_reads_every_axis_it_keeps(problem: tuple[Case, list[np.ndarray]]) -> None:
    """What a call reads once (its spread labels at size 1, its dropped axes left out) is a
    call that drops and spreads nothing more: its plan is the plan the caches keep for it,
    and a spread's plan wraps it (a hypothesis case, ``...,ad,...aaa,...aad,...a`` of
    broadcast operands: the size-1 ``...`` axis of the operand carrying ``a`` counted as
    holding ``...``, the inner call dropped ``a`` from another operand again, and every
    call raised AssertionError)."""
    case, operands = problem
    equation = case.render()
    spec = bind(equation_of(equation), [op.shape for op in operands])
    dtypes = [op.dtype for op in operands]
    call = inner_call(spec, dtypes, [op.strides for op in operands])
    if call is not None:
        again = inner_call(bind(call.equation, call.shapes), dtypes, call.strides)
        assert again is None
    assert "einsum" in es.explain(equation, *operands)
    expected = brute_force(case.terms, case.output, operands)
    np.testing.assert_allclose(es.einsum(equation, *operands), expected, rtol=1e-12)


def test_a_sliced_spread_reports_the_calls_peak() -> None:
    """A review: under a limit the sliced report gave the steps' peak, not the call's (the
    spread's full output on top)."""
    n = 128
    rows = np.broadcast_to(np.arange(float(n)), (n, n))
    a, b = np.ones((n, n)), np.ones((n, n))
    path, limit = ["einsum_path", (1, 2), (0, 1)], n * n * 8 + 30_000
    report = es.explain("ij,jk,kl->il", rows, a, b, optimize=path, memory_limit=limit)
    es.einsum("ij,jk,kl->il", rows, a, b, optimize=path, memory_limit=limit)
    got, peak = traced_peak(
        lambda: es.einsum("ij,jk,kl->il", rows, a, b, optimize=path, memory_limit=limit)
    )
    np.testing.assert_allclose(got, np.einsum("ij,jk,kl->il", rows, a, b))
    line = next(x for x in report.splitlines() if "the sliced steps' result" in x)
    claimed = int(line.rsplit("peaks at ", 1)[1].split(" B")[0].replace(",", ""))
    assert n * n * 8 < claimed <= limit and peak <= limit
