"""The torch backend spreads too: a result the same along labels every operand broadcasts
(``Tensor.expand``'s zero strides) is computed at index 0 of them, then expanded into the
output (see tests/einsum/test_spread.py for the NumPy backend)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from einsum_strategies import broadcast_equations
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.torch import plan as torch_plan
from einstride.engine.backends.torch.operands import facts_of
from einstride.engine.backends.torch.plan import entry_for
from einstride.engine.backends.torch.records import translate


@st.composite
def _cases(draw: Any) -> tuple[str, list[torch.Tensor]]:
    """:func:`einsum_strategies.broadcast_equations` with expanded float64 or complex128
    tensors."""
    equation, shapes = draw(broadcast_equations())
    dtype = draw(st.sampled_from([torch.float64, torch.complex128]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    ops = [torch.randn(stored, generator=gen, dtype=dtype).expand(shape)
           for shape, stored in shapes]  # fmt: skip
    return equation, ops


@settings(max_examples=200, deadline=None)
@given(_cases(), st.booleans())
def test_a_spread_result_is_torchs(case: tuple[str, list[torch.Tensor]], into: bool) -> None:
    equation, ops = case
    want = torch.einsum(equation, *ops)
    if into:
        got = torch.empty_like(want)
        assert es.einsum(equation, *ops, out=got) is got
    else:
        got = es.einsum(equation, *ops)
        assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want)


def test_a_matrix_of_identical_rows_is_one_row_times_the_matrix() -> None:
    """The lane (one torch.mm over the operands as they are, which copies the expanded one
    and multiplies 2 * n**3) leaves such a product to the plan, which spreads it."""
    n = 1024
    rows = torch.rand(n, dtype=torch.float64).expand(n, n)
    matrix = torch.rand(n, n, dtype=torch.float64)
    entry = entry_for("ij,jk->ik", facts_of([rows, matrix]), None, None, "auto")
    assert entry.spread is not None and entry.peak == n * n * 8 + n * 8  # output and a row
    report = es.explain("ij,jk->ik", rows, matrix)
    assert "lane:" not in report and "spread: the result is the same along i" in report
    torch.testing.assert_close(es.einsum("ij,jk->ik", rows, matrix), rows @ matrix)


@pytest.mark.parametrize("equation", ["ij,jk->ik", "ij,jk,kl->il", "bij,jk->bik"])
def test_gradients_through_a_spread_are_torchs(equation: str) -> None:
    # each operand constant along its first label
    _check_gradients(equation, lambda term, output: [1] + [SIZES[x] for x in term[1:]])


def test_a_matrix_of_identical_columns_is_read_without_them() -> None:
    """A summed label the operand broadcasts is dropped (..numpy.plan.dropped_axes): a
    reduction and an outer product, where torch.mm copies the expanded operand."""
    n = 1024
    column = torch.rand(n, 1, dtype=torch.float64)
    columns, matrix = column.expand(n, n), torch.rand(n, n, dtype=torch.float64)
    entry = entry_for("ik,jk->ij", facts_of([columns, matrix]), None, None, "auto")
    assert entry.spread is not None and entry.spread.dropped == ((1,), ())
    assert entry.peak == n * n * 8 + n * 8  # the output and the matrix's row sums
    report = es.explain("ik,jk->ij", columns, matrix)
    assert "lane:" not in report and "dropped: operand 0 broadcasts the summed label k" in report
    torch.testing.assert_close(es.einsum("ik,jk->ij", columns, matrix), columns @ matrix.T)
    out = torch.empty(n, n, dtype=torch.float64)
    assert es.einsum("ik,jk->ij", columns, matrix, out=out) is out
    torch.testing.assert_close(out, columns @ matrix.T)


@pytest.mark.parametrize("equation", ["ik,jk->ij", "bik,bkj->bij", "ik,kj,jl->il"])
def test_gradients_through_dropped_labels_are_torchs(equation: str) -> None:
    # each operand constant along its summed labels
    _check_gradients(equation, lambda term, output: [SIZES[x] if x in output else 1 for x in term])


SIZES = {"b": 3, "i": 4, "j": 5, "k": 6, "l": 2}


def _check_gradients(equation: str, stored: Callable[[str, str], list[int]]) -> None:
    """Gradients of leaves of the ``stored`` shapes (per term and the output), expanded to
    the equation's sizes, through einstride and through torch.einsum."""
    torch.manual_seed(1)
    terms, output = equation.split("->")[0].split(","), equation.split("->")[1]
    leaves = [
        torch.randn(stored(term, output), dtype=torch.float64).requires_grad_() for term in terms
    ]

    def expanded() -> list[torch.Tensor]:
        return [leaf.expand([SIZES[x] for x in term]) for leaf, term in zip(leaves, terms)]

    (es.einsum(equation, *expanded()) ** 2).sum().backward()
    got = [leaf.grad.clone() for leaf in leaves]  # type: ignore[union-attr]
    for leaf in leaves:
        leaf.grad = None
    (torch.einsum(equation, *expanded()) ** 2).sum().backward()
    for mine, theirs in zip(got, leaves):
        torch.testing.assert_close(mine, theirs.grad)


@settings(max_examples=100, deadline=None)
@given(_cases())
def test_an_entry_through_the_inner_calls_cache_is_the_plan_made_for_its_shapes(
    case: tuple[str, list[torch.Tensor]],
) -> None:
    """A call of several operands that reads broadcast axes once looks its steps' call up in
    the torch plan cache (a new shape of a known class: the class's program); its plan and
    program are those made for its own shapes."""
    equation, ops = case
    entry = entry_for(equation, facts_of(ops), None, None, "auto")
    call = torch_plan._Call.of(equation, facts_of(ops), None, None)
    fresh = call.plan("auto", torch_plan.planner_options(), spread=True)
    assert entry.plan == fresh and entry.spread == fresh.spread
    if fresh.spread is not None:
        assert entry.program == translate(fresh)
    torch.testing.assert_close(entry.run(ops, None), torch.einsum(equation, *ops))


def test_a_new_shape_of_a_known_class_is_not_planned() -> None:
    """The steps' call of an expanded operand's call takes its shape class's program: the
    call's plan is built only when read (before, every new shape was planned)."""
    matrix = torch.rand(128, 128, dtype=torch.float64)
    for m in (128, 130):  # the same half-octave class
        columns = torch.rand(m, 1, dtype=torch.float64).expand(m, 128)
        entry = entry_for("ik,jk->ij", facts_of([columns, matrix]), None, None, "auto")
        torch.testing.assert_close(entry.run([columns, matrix], None), columns @ matrix.T)
    assert not entry.planned and entry.spread is not None
    assert entry.plan.spread is not None and entry.plan.spread.dropped == ((1,), ())


def test_the_steps_call_computes_in_the_calls_dtype() -> None:
    """A review: an operand read without its axes may be 0-dim in the steps' call, where
    torch's promotion weighs it less: the int64 operand was cast to int32 (wrong values)."""
    a = torch.full((1, 1), 2**40 + 1, dtype=torch.int64).expand(1, 5)  # '...' stretched
    b, c = torch.ones(5, dtype=torch.int32), torch.ones(3, dtype=torch.int32)
    got = es.einsum("...j,j,...->...", a, b, c)
    assert got.dtype == torch.int64 and got.tolist() == [5 * (2**40 + 1)] * 3
    floats = torch.rand(1, 1, dtype=torch.float64).expand(1, 5)
    got = es.einsum("...j,j,...->...", floats, b.float(), c.float())
    assert got.dtype == torch.float64


@pytest.mark.parametrize(
    ("equation", "stored", "shape"),
    [("ab->b", (3, 1), (3, 4)), ("abc->ac", (3, 1, 2), (3, 4, 2)), ("ab->a", (1, 4), (5, 4))],
)
@pytest.mark.parametrize("how", ["einsum", "greedy", "expression"])
def test_the_gradient_of_an_expanded_operand_itself_is_torchs(
    equation: str, stored: tuple[int, ...], shape: tuple[int, ...], how: str
) -> None:
    # a one-operand reduction of a spread result ran torch's own graph over the operand
    # read at index 0 of its broadcast axes: the whole gradient landed there (a review);
    # a leaf behind the expand summed it back, the expanded tensor's own was wrong
    def result(x: torch.Tensor) -> torch.Tensor:
        if how == "expression":
            return es.contract_expression(equation, shape)(x)  # type: ignore[no-any-return]
        optimize = "greedy" if how == "greedy" else "auto"
        return es.einsum(equation, x, optimize=optimize)  # type: ignore[no-any-return]

    torch.manual_seed(2)
    x = torch.randn(stored, dtype=torch.float64).expand(shape).requires_grad_()
    cotangent = torch.randn(torch.einsum(equation, x).shape, dtype=torch.float64)
    (got,) = torch.autograd.grad(result(x), x, cotangent)
    (want,) = torch.autograd.grad(torch.einsum(equation, x), x, cotangent)
    torch.testing.assert_close(got, want)
