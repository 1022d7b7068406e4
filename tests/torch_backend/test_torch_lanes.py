"""The torch lane (``backends/torch/lanes.py``): a small matmul-form product of plain tensors
runs as one ``torch.matmul`` over permuted views, without a plan, and gives what the planned
way gives; everything else declines to the planned way, which runs it or raises as before."""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride import EinsumError, memory
from einstride.engine.backends.numpy import direct
from einstride.engine.backends.numpy.options import default_options, set_default_options
from einstride.engine.backends.torch import lanes, plan
from einstride.engine.backends.torch.records import translate
from einstride.engine.spec.equation import parse_subscripts
from einstride.engine.spec.matmul import matmul_form

DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)
F64 = torch.float64
TOLERANCE = {
    torch.float32: 1e-5,
    torch.complex64: 1e-5,
    torch.float64: 1e-12,
    torch.complex128: 1e-12,
}


@st.composite
def matmul_calls(draw: Any) -> tuple[str, list[tuple[int, ...]], bool]:
    """A matmul-form equation (labels of each kind in a drawn order), its operand shapes
    and whether each operand is given as a permuted or stepped view."""
    kinds = {k: draw(st.integers(lo, 2)) for k, lo in (("b", 0), ("m", 0), ("n", 0), ("k", 1))}
    letters = iter("abcdefghij")
    batch, rows, cols, inner = ([next(letters) for _ in range(kinds[k])] for k in "bmnk")
    sizes = {lab: draw(st.integers(1, 5)) for lab in batch + rows + cols + inner}
    left = draw(st.permutations(batch + rows + inner))
    right = draw(st.permutations(batch + inner + cols))
    output = draw(st.permutations(batch + rows + cols))
    equation = f"{''.join(left)},{''.join(right)}->{''.join(output)}"
    shapes = [tuple(sizes[lab] for lab in term) for term in (left, right)]
    return equation, shapes, draw(st.booleans())


def _tensor(shape: tuple[int, ...], dtype: torch.dtype, view: bool, rng: random.Random) -> Any:
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    if not view or not shape:
        return torch.randn(shape, generator=g, dtype=dtype)
    perm = list(range(len(shape)))
    rng.shuffle(perm)
    base = torch.randn([shape[p] * (1 + (i == 0)) for i, p in enumerate(perm)], generator=g,
                       dtype=dtype)  # fmt: skip
    stepped = base[::2] if perm else base
    return stepped.permute([perm.index(ax) for ax in range(len(shape))])


@given(matmul_calls(), st.sampled_from(DTYPES), st.integers(0, 2**31))
@settings(max_examples=150, deadline=None)
def test_the_lane_gives_the_planned_result(
    call: tuple[str, list[tuple[int, ...]], bool], dtype: torch.dtype, seed: int
) -> None:
    equation, shapes, views = call
    rng = random.Random(seed)
    a, b = (_tensor(shape, dtype, views, rng) for shape in shapes)
    before = lanes.lane_answers()
    result = es.einsum(equation, a, b)
    answered = lanes.lane_answers() - before
    planned = es.einsum(equation, a, b, optimize="greedy")  # another optimize=: the plan
    assert lanes.lane_answers() - before == answered
    assert result.dtype == planned.dtype == dtype and result.shape == planned.shape
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(result, planned, rtol=tol, atol=tol)
    expected = np.einsum(equation, a.numpy(), b.numpy())
    np.testing.assert_allclose(result.numpy(), expected, rtol=tol * 10, atol=tol * 10)
    parsed = parse_subscripts(equation)
    if matmul_form(*parsed.terms, parsed.output) is None:
        # a group out of its operand's order: only past the bound (never drawn here)
        assert answered == 0
    elif a.is_contiguous() and b.is_contiguous():
        assert answered == 1  # nothing declines these: the lane ran


def _one_product_from_scratch(
    equation: str, a: torch.Tensor, b: torch.Tensor
) -> plan.OneProduct | None:
    """How a plan made from scratch for ``a, b`` (not through their shape class) runs them
    as one product (after copies), or None."""
    facts = plan.facts_of([a, b])
    scratch = plan._Call.of(equation, facts, None, None).plan("auto", plan.planner_options())
    parsed = parse_subscripts(equation)
    form = matmul_form(*parsed.terms, parsed.output, runs_only=False)
    assert form is not None
    return plan.as_one_product(translate(scratch), form, scratch.steps[-1].dtype)


def _past_the_bound(
    equation: str, a: torch.Tensor, b: torch.Tensor
) -> tuple[torch.Tensor, int, torch.Tensor]:
    """The call with the lanes' bound at one combination, whether a lane answered, and the
    planned result (another ``optimize=``: no lane)."""
    before = set_default_options(dataclasses.replace(default_options(), lane_max_combos=1))
    try:
        count = lanes.lane_answers()
        result = es.einsum(equation, a, b)
        answered = lanes.lane_answers() - count
        planned = es.einsum(equation, a, b, optimize="greedy")
    finally:
        set_default_options(before)
    return result, answered, planned


@given(matmul_calls(), st.sampled_from(DTYPES), st.integers(0, 2**31))
@settings(max_examples=100, deadline=None)
def test_past_the_bound_the_lane_runs_what_a_plan_from_scratch_runs(
    call: tuple[str, list[tuple[int, ...]], bool], dtype: torch.dtype, seed: int
) -> None:
    """With the bound at one combination every product is past it: the lane answers exactly
    where a plan made from scratch for the call is its product, after copies of stepped
    operands (so the shape class it asks decides as the call's own plan would: a stepped
    or permuted view too), and gives the planned result."""
    equation, shapes, views = call
    rng = random.Random(seed)
    a, b = (_tensor(shape, dtype, views, rng) for shape in shapes)
    result, answered, planned = _past_the_bound(equation, a, b)
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(result, planned, rtol=tol, atol=tol)
    if lanes.lane_for(equation) is None or a.numel() * b.numel() == 0:
        assert answered == 0
        return
    combos = math.prod({**dict(zip(equation[:equation.index(",")], a.shape)),
                        **dict(zip(equation[equation.index(",") + 1 : equation.index("-")],
                                   b.shape))}.values())  # fmt: skip
    if combos > 1:  # (an irregular layout has no class to ask: planned)
        scratch = _one_product_from_scratch(equation, a, b)
        assert answered == (plan.pair_class(a, b) is not None and scratch is not None)
        if answered:
            assert result.stride() == planned.stride()  # the plan's layout too


LAYOUTS = ("as is", "transposed", "every other")


def _laid_out(shape: tuple[int, ...], layout: str, rng: random.Random) -> torch.Tensor:
    """A float64 tensor of ``shape``: C-ordered, its axes reversed in memory, or every other
    element along each axis (no unit stride: BLAS takes it only copied)."""
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    if layout == "transposed":
        return torch.randn(shape[::-1], generator=g, dtype=F64).permute(
            *reversed(range(len(shape)))
        )
    if layout == "every other":
        base = torch.randn([2 * d for d in shape], generator=g, dtype=F64)
        return base[tuple(slice(None, None, 2) for _ in shape)]
    return torch.randn(shape, generator=g, dtype=F64)


@given(
    st.sampled_from(["ij,jk->ik", "ij,kj->ik", "ji,jk->ki", "bij,bjk->bik", "bij,bkj->bki",
                     "abk,kc->abc", "ak,kbc->bca", "ajk,kjb->ab"]),
    st.lists(st.integers(2, 40), min_size=5, max_size=5),
    st.sampled_from(LAYOUTS),
    st.sampled_from(LAYOUTS),
    st.integers(0, 2**31),
)  # fmt: skip
@settings(max_examples=80, deadline=None)
def test_past_the_bound_copies_and_swaps_are_the_plans(
    equation: str, sizes: list[int], left: str, right: str, seed: int
) -> None:
    """Stepped operands (which the plan copies first) and transposed ones or tall results
    (where it swaps the product): past the bound the lane answers exactly where a plan
    made from scratch is one product, with the plan's values and strides."""
    rng = random.Random(seed)
    size = dict(zip("abcijk", sizes + sizes))
    terms = equation.split("->")[0].split(",")
    a, b = (_laid_out(tuple(size[c] for c in t), lay, rng)
            for t, lay in zip(terms, (left, right)))  # fmt: skip
    result, answered, planned = _past_the_bound(equation, a, b)
    torch.testing.assert_close(result, planned, rtol=1e-12, atol=1e-12)
    scratch = _one_product_from_scratch(equation, a, b)
    assert answered == (plan.pair_class(a, b) is not None and scratch is not None)
    if answered:
        assert result.stride() == planned.stride()


@st.composite
def broadcast_calls(draw: Any) -> tuple[str, list[tuple[int, ...]], bool]:
    """Two operands that contract nothing (labels in one or both, every one kept), in drawn
    orders, and whether they are given as permuted or stepped views."""
    letters = iter("abcdefgh")
    shared, left_only, right_only = (
        [next(letters) for _ in range(draw(st.integers(0, 2)))] for _ in range(3)
    )
    sizes = {lab: draw(st.integers(1, 4)) for lab in shared + left_only + right_only}
    left = draw(st.permutations(shared + left_only))
    right = draw(st.permutations(shared + right_only))
    output = draw(st.permutations(shared + left_only + right_only))
    equation = f"{''.join(left)},{''.join(right)}->{''.join(output)}"
    shapes = [tuple(sizes[lab] for lab in term) for term in (left, right)]
    return equation, shapes, draw(st.booleans())


@given(broadcast_calls(), st.sampled_from(DTYPES), st.integers(0, 2**31))
@settings(max_examples=100, deadline=None)
def test_a_product_that_contracts_nothing_is_the_plans_batch_step(
    call: tuple[str, list[tuple[int, ...]], bool], dtype: torch.dtype, seed: int
) -> None:
    """An outer or Hadamard product: the lane's result is the plan's, value for value (one
    multiply each) and stride for stride (a new C-ordered tensor in the output's order)."""
    equation, shapes, views = call
    rng = random.Random(seed)
    a, b = (_tensor(shape, dtype, views, rng) for shape in shapes)
    before = lanes.lane_answers()
    result = es.einsum(equation, a, b)
    assert lanes.lane_answers() - before == 1
    with mock.patch.object(direct, "FIRST_CALL_WORK", -1):  # (a tiny call: not run directly)
        planned = es.einsum(equation, a, b, optimize="greedy")
    assert lanes.lane_answers() - before == 1
    assert torch.equal(result, planned) and _strides(result) == _strides(planned)
    assert result.is_contiguous()
    expected = np.einsum(equation, a.numpy(), b.numpy())
    np.testing.assert_allclose(result.numpy(), expected, rtol=TOLERANCE[dtype])


@st.composite
def views(draw: Any) -> tuple[str, tuple[int, ...]]:
    """One operand of labels that may repeat (diagonals), every label kept once, in a drawn
    order."""
    term = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=4))
    sizes = {lab: draw(st.integers(1, 4)) for lab in term}
    output = draw(st.permutations(list(dict.fromkeys(term))))
    return f"{''.join(term)}->{''.join(output)}", tuple(sizes[lab] for lab in term)


@given(views(), st.sampled_from(DTYPES), st.booleans(), st.integers(0, 2**31))
@settings(max_examples=150, deadline=None)
def test_a_transpose_or_a_diagonal_is_the_plans_view(
    call: tuple[str, tuple[int, ...]], dtype: torch.dtype, view: bool, seed: int
) -> None:
    """One operand, nothing summed: a view of it (a permute, or diagonals as_strided), as
    the plan's result is, stride for stride."""
    equation, shape = call
    a = _tensor(shape, dtype, view, random.Random(seed))
    before = lanes.lane_answers()
    result = es.einsum(equation, a)
    assert lanes.lane_answers() - before == 1
    planned = es.einsum(equation, a, optimize="greedy")
    assert torch.equal(result, planned) and _strides(result) == _strides(planned)
    assert result.data_ptr() == planned.data_ptr()  # views of the operand
    assert result.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
    assert result is not a  # a new view: changing its metadata never changes the operand's
    expected = np.einsum(equation, a.numpy())
    np.testing.assert_array_equal(result.numpy(), expected)


def test_the_identity_is_a_new_view_not_the_operand() -> None:
    x = torch.randn(3, 4)
    es.einsum("ij->ji", x)  # (the lanes are compiled)
    y = es.einsum("ij->ij", x)
    assert y is not x and y.data_ptr() == x.data_ptr()
    y.t_()
    assert x.shape == (3, 4)
    w = torch.randn(2, 2, requires_grad=True)
    v = es.einsum("ij->ij", w)
    assert v is not w and not v.is_leaf


def _strides(t: torch.Tensor) -> tuple[int, ...]:
    """The strides that address anything (a length-1 axis's is any number)."""
    return tuple(st if size != 1 else 0 for st, size in zip(t.stride(), t.shape))


@st.composite
def sums(draw: Any) -> tuple[str, tuple[int, ...], bool]:
    """One operand of labels that may repeat, some summed, the rest kept in a drawn order."""
    term = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4))
    distinct = list(dict.fromkeys(term))
    kept = [lab for lab in distinct if draw(st.booleans())]
    if len(kept) == len(distinct):
        kept.pop(draw(st.integers(0, len(kept) - 1)))
    sizes = {lab: draw(st.integers(1, 5)) for lab in distinct}
    output = "".join(draw(st.permutations(kept)))
    return f"{''.join(term)}->{output}", tuple(sizes[lab] for lab in term), draw(st.booleans())


@given(sums(), st.sampled_from(DTYPES), st.integers(0, 2**31))
@settings(max_examples=100, deadline=None)
def test_a_sum_lane_gives_the_planned_result(
    call: tuple[str, tuple[int, ...], bool], dtype: torch.dtype, seed: int
) -> None:
    equation, shape, view = call
    a = _tensor(shape, dtype, view, random.Random(seed))
    before = lanes.lane_answers()
    result = es.einsum(equation, a)
    assert lanes.lane_answers() - before == 1
    planned = es.einsum(equation, a, optimize="greedy")
    assert result.dtype == planned.dtype == dtype and result.shape == planned.shape
    assert _strides(result) == _strides(planned)  # the plan's new tensor, viewed alike
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(result, planned, rtol=tol, atol=tol)
    expected = np.einsum(equation, a.numpy())
    np.testing.assert_allclose(result.numpy(), expected, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_trace_runs_torch_trace_as_the_plan_does(dtype: torch.dtype) -> None:
    a = torch.randn(7, 7, dtype=dtype)
    for square in (a, a.T, a[::2, ::2]):
        before = lanes.lane_answers()
        result = es.einsum("ii->", square)
        assert lanes.lane_answers() - before == 1
        planned = es.einsum("ii->", square, optimize="greedy")
        assert result.shape == planned.shape == () and result.dtype == dtype
        torch.testing.assert_close(result, planned)
        torch.testing.assert_close(result, torch.trace(square))


def test_one_operand_calls_the_sum_lane_leaves_to_the_plan() -> None:
    a = torch.ones(3, 3, 2)
    assert _declined("i->ii", torch.ones(3))  # an expansion: planned
    for equation in ("ijk->kji", "ijk->ijk", "iik->ik", "iik->ki", "ijk->ki", "iik->k"):
        assert not _declined(equation, a)  # a view, a sum over it, permuted
    with pytest.raises(EinsumError, match="'i'"):  # sizes that disagree: planned, which raises
        es.einsum("ii->i", torch.ones(3, 4))
    assert _declined("ii->", torch.ones(3, 4)[:, :3].T.contiguous()[:2, :2].long())
    assert _declined("ii->", torch.ones(0, 0))
    assert _declined("ijk->i", torch.ones(0, 2, 3))
    with pytest.raises(EinsumError):
        es.einsum("ii->", torch.ones(3, 4))  # sizes disagree: planned, which raises


def test_a_small_product_runs_as_one_matmul_of_views(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = torch.randn(2, 5, 3, dtype=torch.float64), torch.randn(2, 4, 3, dtype=torch.float64)
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    original = torch.matmul
    monkeypatch.setattr(lanes, "_matmul", lambda x, y: seen.append((x, y)) or original(x, y))
    result = es.einsum("bqd,bkd->bqk", a, b)
    ((left, right),) = seen
    assert left.data_ptr() == a.data_ptr() and right.data_ptr() == b.data_ptr()  # views
    assert right.shape == (2, 3, 4)  # b permuted to (batch, inner, cols)
    torch.testing.assert_close(result, a @ b.mT, rtol=1e-12, atol=1e-12)


def _declined(equation: str, *operands: Any) -> bool:
    before = lanes.lane_answers()
    es.einsum(equation, *operands)
    return lanes.lane_answers() == before


def test_what_the_lane_declines_runs_the_planned_way() -> None:
    a, b = torch.ones(3, 4, dtype=torch.float64), torch.ones(4, 5, dtype=torch.float64)
    assert not _declined("ij,jk->ik", a, b)
    leaf = a.clone().requires_grad_()
    assert not _declined("ij,jk->ik", leaf, b)  # a graph: torch's own, as torch.einsum's
    assert es.einsum("ij,jk->ik", leaf, b).grad_fn.name() == "MmBackward0"
    assert _declined("ii->i", torch.ones(3, 3, requires_grad=True))  # a diagonal's: einstride's
    limit = memory.memory_limit()
    row, column = torch.ones(1, 9, dtype=torch.float64), torch.ones(9, 1, dtype=torch.float64)
    memory.set_memory_limit(64)  # the product's 8 bytes fit, an operand's 72 do not
    try:
        # torch.matmul may copy an operand: the lane counts them, the plan (views) runs it
        assert _declined("ij,jk->ik", row, column)
        assert es.einsum("ij,jk->ik", row, column).item() == 9.0
        assert _declined("ij,jk->ik", row.clone().requires_grad_(), column)  # its gradient
    finally:
        memory.set_memory_limit(limit)
    with torch.no_grad():
        assert not _declined("ij,jk->ik", leaf, b)
    assert not _declined("ij,jk->ik", torch.nn.Parameter(a.clone()).detach(), b)
    assert _declined("ij,jk->ik", a.long(), b.long())  # integers: planned (and on CUDA refused)
    assert _declined("ij,jk->ik", a.half(), b.half())
    assert _declined("ij,jk->ik", a.float(), b)  # mixed dtypes: promoted by the plan
    assert es.einsum("ij,jk->ik", a.float(), b).dtype == torch.float64
    assert _declined("ij,jk->ik", a.to(torch.complex128).conj(), b.to(torch.complex128))
    assert _declined("ij,jk->ik", a, b.numpy())  # a NumPy operand: converted
    assert _declined("ii,ij->j", torch.ones(4, 4), torch.ones(4, 5))  # a diagonal first
    assert not _declined("ij,jk->ijk", a, b)  # contracts nothing: one broadcast multiply
    assert _declined("ij,jk->ijk", torch.ones(0, 4), b)  # ... not an empty one
    with pytest.raises(EinsumError, match="'j'"):  # j: 4 and 1 (never broadcast): planned
        _declined("ij,jk->ijk", a, torch.ones(1, 5))
    assert not _declined("ij->ji", a) and _declined("ij->ji", a.long())  # a view
    # past the bound, where the plan is the same product of C-contiguous operands on the CPU
    assert not _declined("ij,jk->ik", torch.ones(600, 600), torch.ones(600, 600))
    assert not _declined("ij,jk->ik", torch.ones(600, 600).T, torch.ones(600, 600))  # a view
    for swapped in (  # MKL's choice, the plan's too: (k, i) = (j, k)^T (i, j)^T
        (torch.rand(600, 600, dtype=F64), torch.rand(600, 8, dtype=F64)),  # a tall result
        (torch.rand(600, 600, dtype=F64).T, torch.rand(600, 600, dtype=F64).T),  # transposed
    ):
        assert not _declined("ij,jk->ik", *swapped)
        result = es.einsum("ij,jk->ik", *swapped)
        assert result.stride() == (1, 600)  # the plan's transposed result
        torch.testing.assert_close(result, swapped[0] @ swapped[1])
        leaf = swapped[0].detach().requires_grad_()  # torch's own autograd, as torch.einsum's
        (grad,) = torch.autograd.grad(es.einsum("ij,jk->ik", leaf, swapped[1]).sum(), leaf)
        torch.testing.assert_close(grad, swapped[1].sum(1).expand(600, -1))
    overlapping = torch.ones(600, 600).as_strided((600, 600), (1, 1))
    assert _declined("ij,jk->ik", overlapping, torch.ones(600, 600))  # irregular: no class
    stepped = torch.ones(1200, 1200)[::2, ::2]  # no unit stride: the plan copies it first
    assert not _declined("ij,jk->ik", stepped, stepped)
    assert _declined("ij,jk->ik", torch.ones(0, 4), torch.ones(4, 5))  # empty
    # merged groups need contiguous operands (a reshape that is a view)
    assert not _declined("abk,kc->abc", torch.ones(2, 3, 4), torch.ones(4, 5))
    assert _declined("abk,kc->abc", torch.ones(3, 2, 4).transpose(0, 1), torch.ones(4, 5))


def test_sizes_that_disagree_raise_as_the_planned_way_does() -> None:
    with pytest.raises(EinsumError, match="'j'"):
        es.einsum("ij,jk->ik", torch.ones(3, 4), torch.ones(1, 5))  # no broadcast of j


def test_lane_max_combos_and_the_memory_limit_bound_the_lane() -> None:
    a, b = torch.ones(8, 8), torch.ones(8, 8)
    before = set_default_options(dataclasses.replace(default_options(), lane_max_combos=0))
    try:
        assert _declined("ij,jk->ik", a, b)
    finally:
        set_default_options(before)
    assert not _declined("ij,jk->ik", a, b)
    limit = memory.memory_limit()
    memory.set_memory_limit(768)  # bytes: the bound falls to 16 combinations (a complex128
    try:  # result and two operands of that many elements at most: 768 B)
        # past it, the result's and the operands' bytes decide (torch.matmul may copy them)
        assert not _declined("ij,jk->ik", a, b)  # 3 x 256 B of float32
        memory.set_memory_limit(767)
        assert _declined("ij,jk->ik", a, b)  # the plan runs it (its peak: 256 B)
        memory.set_memory_limit(255)
        count = lanes.lane_answers()
        with pytest.raises(EinsumError, match="memory limit"):
            es.einsum("ij,jk->ik", a, b)
        assert lanes.lane_answers() == count
    finally:
        memory.set_memory_limit(limit)
    assert not _declined("ij,jk->ik", a, b)


def test_a_lane_never_passes_a_memory_limit_the_plan_keeps() -> None:
    """torch.matmul copies operands whose batch axes do not merge, and a Hadamard product
    under grad is laid out then copied into C order: the lanes count both, so a global
    limit the plan refuses is refused (or met by the plan), never passed by a lane."""
    limit = memory.memory_limit()
    a = torch.randn(16, 2, 32, 64, dtype=torch.complex128).permute(1, 3, 0, 2)  # (b, h) apart
    b = torch.randn(1, 2, 32, 64, dtype=torch.complex128).permute(1, 3, 0, 2)
    x = torch.randn(256, 256, dtype=torch.complex128, requires_grad=True)
    y = torch.randn(256, 256, dtype=torch.complex128)
    try:
        memory.set_memory_limit(1 << 20)
        count = lanes.lane_answers()
        with pytest.raises(EinsumError, match="memory limit"):
            es.einsum("bhqd,bhkd->bhqk", a, b)  # the plan's peak: 1,081,344 B
        result = es.einsum("ij,ij->ji", x, y)  # 1 MiB: the plan's peak, not the lane's 2
        assert lanes.lane_answers() == count
        torch.testing.assert_close(result, (x * y).T)
    finally:
        memory.set_memory_limit(limit)
    assert not _declined("ij,ij->ji", x, y)


def test_past_the_bound_the_copies_count_against_the_memory_limit() -> None:
    """A product past the bound of operands the plan copies first: the lane's peak, as the
    plan's, is the result and the copies (12,800 B each here)."""
    stepped = torch.rand(80, 80, dtype=torch.float64)[::2, ::2]
    expected = stepped.contiguous() @ stepped.contiguous()
    limit = memory.memory_limit()
    before = set_default_options(dataclasses.replace(default_options(), lane_max_combos=1))
    try:
        memory.set_memory_limit(3 * 12_800)
        assert not _declined("ij,jk->ik", stepped, stepped)
        assert "copied into C order" in es.explain("ij,jk->ik", stepped, stepped)
        memory.set_memory_limit(3 * 12_800 - 1)  # (the plan's peak too: it copies both)
        count = lanes.lane_answers()
        try:
            result = es.einsum("ij,jk->ik", stepped, stepped)  # planned: within, or refused
        except EinsumError as error:
            assert "memory limit" in str(error)
        else:
            torch.testing.assert_close(result, expected)
        assert lanes.lane_answers() == count
    finally:
        memory.set_memory_limit(limit)
        set_default_options(before)
    torch.testing.assert_close(es.einsum("ij,jk->ik", stepped, stepped), expected)


def test_explain_says_when_the_lane_runs_a_call() -> None:
    a, b = torch.ones(2, 3, 4), torch.ones(2, 4, 5)
    report = es.explain("bij,bjk->bik", a, b)
    assert "lane: einsum runs this call without a plan, as one torch.matmul over permuted" in report
    assert "step 1" in report  # the plan it replaces follows
    leaf = a.clone().requires_grad_()
    assert "lane:" in es.explain("bij,bjk->bik", leaf, b)  # a graph: torch's own
    assert "lane:" not in es.explain("bii->bi", torch.ones(2, 3, 3, requires_grad=True))
    assert "lane:" not in es.explain("bij,bjk->bik", a, b, optimize="greedy")


def test_clear_plan_cache_forgets_the_lanes() -> None:
    es.einsum("ij,jk->ik", torch.ones(2, 2), torch.ones(2, 2))
    assert "ij,jk->ik" in lanes._LANES
    es.clear_plan_cache()
    assert not lanes._LANES and lanes.lane_answers() == 0
