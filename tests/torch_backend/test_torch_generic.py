"""A new shape of a known shape class (torch): its records are the class plan's translated
with its sizes, equal to the records of the plan a fresh planner makes for it, and so are
its bytes, its plan (built when read) and its result."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.torch import plan as torch_plan
from einstride.engine.backends.torch.execute import compile_program, spread_run
from einstride.engine.backends.torch.operands import facts_of
from einstride.engine.backends.torch.records import largest_bytes, peak_bytes, translate

LABELS = "abcde"
# sizes of one half-octave class each (1, 2 and 3 are their own classes)
BUCKETS = [(1,), (2,), (3,), (4, 5), (6, 7), (8, 9, 10, 11)]
DTYPES = [torch.float64, torch.float32, torch.complex64, torch.int64]


@st.composite
def twins(draw: Any) -> tuple[str, list[torch.Tensor], list[torch.Tensor]]:
    """An equation and two operand lists of one shape class (the same layouts: permuted,
    stepped, a broadcast axis; each label's sizes from one half-octave)."""
    n = draw(st.integers(1, 3))
    terms = ["".join(draw(st.lists(st.sampled_from(LABELS), max_size=4))) for _ in range(n)]
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    buckets = {x: draw(st.sampled_from(BUCKETS)) for x in used}
    first = {x: draw(st.sampled_from(b)) for x, b in buckets.items()}
    second = {  # another size of the half-octave where it has one
        x: draw(st.sampled_from([n for n in b if n != first[x]] or b)) for x, b in buckets.items()
    }
    dtype = draw(st.sampled_from(DTYPES))
    layouts = [
        (
            tuple(draw(st.permutations(range(len(term))))),
            draw(st.sampled_from([None, None, *range(len(term))])),
            tuple(draw(st.sampled_from([1, 1, 2])) for _ in term),
        )
        for term in terms
    ]
    return (
        ",".join(terms) + "->" + output,
        [_operand(term, first, dtype, how) for term, how in zip(terms, layouts)],
        [_operand(term, second, dtype, how) for term, how in zip(terms, layouts)],
    )


def _operand(term: str, sizes: dict[str, int], dtype: torch.dtype, how: Any) -> torch.Tensor:
    perm, broadcast, steps = how
    shape = tuple(sizes[x] for x in term)
    base = tuple(shape[p] * step for p, step in zip(perm, steps))
    values = (torch.arange(1, 1 + int(np.prod(base))) % 7).to(dtype).reshape(base)
    values = values[tuple(slice(None, None, step) for step in steps)]
    view = values.permute(tuple(int(k) for k in np.argsort(perm)))
    if broadcast is not None:
        view = view.narrow(broadcast, 0, 1).expand(shape)
    return view


def _entry(equation: str, operands: list[torch.Tensor]) -> torch_plan.Entry:
    return torch_plan.make_entry(equation, facts_of(operands), None, None, "auto")


def _fresh_plan(equation: str, operands: list[torch.Tensor]) -> Any:
    """The plan the planner makes for ``operands`` (as the planned way builds it)."""
    call = torch_plan._Call.of(equation, facts_of(operands), None, None)
    # (broadcast axes read once where they can be, as make_entry's own route reads them)
    return call.plan("auto", torch_plan.planner_options(), spread=True)


@settings(max_examples=150, deadline=None)
@given(twins())
def test_a_known_class_translates_as_a_fresh_plan(
    case: tuple[str, list[torch.Tensor], list[torch.Tensor]],
) -> None:
    equation, first, second = case
    es.clear_plan_cache()
    _entry(equation, first)  # the class's plan is made here
    through_class = _entry(equation, second)
    es.clear_plan_cache()
    fresh = _fresh_plan(equation, second)
    assert through_class.program == translate(fresh)
    assert (through_class.largest, through_class.peak) == (largest_bytes(fresh), peak_bytes(fresh))
    assert through_class.output_shape == fresh.call_spec.output_shape
    assert through_class.plan == fresh  # built when read
    run = compile_program(translate(fresh))
    want = (run if fresh.spread is None else spread_run(run, fresh.spread))(second, None)
    got = through_class.run(second, None)
    assert got.dtype == want.dtype and torch.equal(got, want)
    expected = np.einsum(equation, *(x.numpy() for x in second))
    assert np.allclose(got.numpy(), expected, rtol=1e-5)  # small integers: exact sums


LOOPED = ["fb,abcd->afcd", "abcd,bx->axcd", "ea,fb,abcd,gc,hd->efgh"]
LARGER = [(8, 9, 10, 11), (12, 13, 14, 15), (16, 19, 23)]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(LOOPED), st.sampled_from(LARGER), st.integers(0, 2**31))
def test_a_product_over_looped_labels_of_a_known_class_is_translated(
    equation: str, bucket: tuple[int, ...], seed: int
) -> None:
    """A contraction of an operand's middle axis leaves free labels that do not fold (the
    planner loops over one: a looped product, at these sizes of one half-octave); a new
    shape of its class is translated with its sizes (not planned), equal to a fresh plan's
    records, and gives its result."""
    rng = np.random.default_rng(seed)
    first = {x: int(rng.choice(bucket)) for x in "abcdefghx"}
    second = {x: int(rng.choice([n for n in bucket if n != first[x]])) for x in first}
    terms = equation.split("->")[0].split(",")
    how = [(tuple(range(len(t))), None, (1,) * len(t)) for t in terms]  # C order
    ops = [[_operand(t, sizes, torch.float64, h) for t, h in zip(terms, how)]
           for sizes in (first, second)]  # fmt: skip
    es.clear_plan_cache()
    _entry(equation, ops[0])  # the class's plan is made here
    through_class = _entry(equation, ops[1])
    assert not through_class.planned
    es.clear_plan_cache()
    fresh = _fresh_plan(equation, ops[1])
    assert any(getattr(step, "looped", ()) for step in fresh.steps)  # (the point)
    assert through_class.program == translate(fresh)
    for step, op in zip(fresh.steps, through_class.program.steps):
        if getattr(step, "looped", ()):  # the records' shapes are the planner's geometry
            geo = step.geometry
            assert (op.left_view.perm, op.left_view.shape) == (geo.left.perm, geo.left.shape)
            assert (op.right_view.perm, op.right_view.shape) == (geo.right.perm, geo.right.shape)
            assert (op.out_shape, op.shape) == (geo.out_shape, step.shape)
    assert (through_class.largest, through_class.peak) == (largest_bytes(fresh), peak_bytes(fresh))
    got = through_class.run(ops[1], None)
    expected = np.einsum(equation, *(x.numpy() for x in ops[1]), optimize=True)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_a_new_shape_of_a_known_class_is_not_planned() -> None:
    es.clear_plan_cache()
    a, b = torch.rand(4, 37, 16), torch.rand(4, 16, 8)
    _entry("bij,bjk->bik", [a, b])  # the class's first shape: its plan is made
    c = torch.rand(4, 40, 16)
    entry = _entry("bij,bjk->bik", [c, b])
    assert not entry.planned
    assert torch.allclose(entry.run([c, b], None), torch.einsum("bij,bjk->bik", c, b))
    assert "bij,bjk->bik" in es.explain("bij,bjk->bik", c, b)


@pytest.mark.parametrize("sizes", [(37, 40), (40, 37)])
def test_gradients_through_a_known_class(sizes: tuple[int, int]) -> None:
    es.clear_plan_cache()
    for n in sizes:
        a = torch.rand(3, n, 5, dtype=torch.float64, requires_grad=True)
        b = torch.rand(5, 6, dtype=torch.float64, requires_grad=True)
        es.einsum("bij,jk->bik", a, b).sum().backward()
        assert a.grad is not None and b.grad is not None
        assert torch.allclose(a.grad, b.sum(1).expand(3, n, 5))
        assert torch.allclose(b.grad, a.detach().sum((0, 1))[:, None].expand(5, 6))
