"""A new result that the last batch step writes (an outer or elementwise product) is laid out
in its larger operand's memory order (fold.write_order, plan._batch_order), as NumPy's
order="K" lays it out, so that the loop reads that operand in runs; the lane lays it out
the same way."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from test_lanes import PLANNED, broadcast_cases, warm_planned

import einstride as es
from einstride.engine.backends.numpy.fold import ordered_empty, write_order


def _memory_order(x: np.ndarray) -> list[int]:
    """The axes of more than one element, outermost first (a reversed axis too)."""
    wide = [ax for ax in range(x.ndim) if x.shape[ax] > 1]
    return sorted(wide, key=lambda ax: -abs(x.strides[ax]))


def _dense(x: np.ndarray) -> bool:
    """Whether ``x`` holds its elements in one block, in some order of its axes."""
    order = sorted(range(x.ndim), key=lambda ax: -x.strides[ax])
    return bool(x.transpose(order).flags.c_contiguous)


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_the_order_follows_any_operand_layout_over_the_whole_domain(rank: int) -> None:
    """Every permuted layout of an operand holding the output's labels (sizes 1-3, at most
    one 1, stepped)
    against every output order: the result is dense, and its axes of more than one
    element run in the operand's memory order."""
    for sizes in itertools.product([1, 2, 3], repeat=rank):
        if sizes.count(1) > 1:
            continue
        for perm in itertools.permutations(range(rank)):
            base = np.empty(tuple(sizes[p] + (sizes[p] > 1) for p in perm))
            view = base.transpose(np.argsort(perm))  # labels 0..rank-1 in a permuted layout
            shape = view.shape
            for output in itertools.permutations(range(rank)):
                order = write_order(output, range(rank), shape, view.strides)
                assert sorted(order) == list(range(rank))
                result = ordered_empty(order)([shape[x] for x in output], np.float64)
                assert _dense(result)
                want = [output.index(x) for x in _memory_order(view)]
                assert _memory_order(result) == want


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("cdab,b->dabc", [(5, 6, 7, 8), (8,)]),
        ("abcd,c->dcba", [(5, 6, 7, 8), (7,)]),
        ("abc,b->cab", [(9, 10, 11), (10,)]),
        ("bhsd,d->bshd", [(2, 3, 16, 8), (8,)]),
        ("ab,c->cab", [(5, 6), (7,)]),
    ],
)
def test_a_product_into_a_permuted_output_is_laid_out_as_numpy_lays_it_out(
    equation: str, shapes: list[tuple[int, ...]]
) -> None:
    rng = np.random.default_rng(0)
    ops = [rng.standard_normal(s) for s in shapes]
    want = np.einsum(equation, *ops)
    warm_planned(equation, *ops)
    for got in (es.einsum(equation, *ops), es.einsum(equation, *ops, **PLANNED)):
        np.testing.assert_array_equal(got, want)
        assert got.strides == want.strides


def test_a_fortran_ordered_hadamard_product_is_fortran_ordered() -> None:
    a = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    warm_planned("ij,ij->ij", a, a)
    for got in (es.einsum("ij,ij->ij", a, a), es.einsum("ij,ij->ij", a, a, **PLANNED)):
        assert got.flags.f_contiguous and not got.flags.c_contiguous
        np.testing.assert_array_equal(got, a * a)
    report = es.explain("ij,ij->ij", a, a, **PLANNED)
    assert "allocated first (empty, laid out as ji in memory" in report


def test_a_repeated_output_label_or_out_keeps_its_layout() -> None:
    """A zeroed output written diagonally, and out=, are laid out as before."""
    a, b = np.ones((3, 4)), np.ones(4)
    got = es.einsum("ij,j->jii", a, b, **PLANNED)
    assert got.flags.c_contiguous
    out = np.zeros((4, 3))
    assert es.einsum("ij,j->ji", a.T.copy().T, b, out=out) is out


@settings(max_examples=200, deadline=None)
@given(broadcast_cases())
def test_the_planned_result_is_dense_and_reads_its_lead_operand_in_order(
    case: tuple[str, np.ndarray, np.ndarray],
) -> None:
    equation, a, b = case
    warm_planned(equation, a, b)
    got = es.einsum(equation, a, b, **PLANNED)
    np.testing.assert_allclose(got, np.einsum(equation, a, b), rtol=1e-6)
    if got.ndim == 0 or got.size == 0 or 0 in a.strides + b.strides:
        return  # (a broadcast operand is read once: the steps' call decides)
    assert _dense(got)
    ins, out = equation.split("->")
    left, right = ins.split(",")
    lead, labels = (a, left) if len(left) >= len(right) else (b, right)
    want = [out.index(labels[ax]) for ax in _memory_order(lead)]
    assert [ax for ax in _memory_order(got) if ax in want] == want
