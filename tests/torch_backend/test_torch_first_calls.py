"""The first call of a shape class on torch tensors runs its path directly with torch
operations (engine/backends/torch/first.py): torch.einsum's values, nothing cached, the
class planned at its next call; calls that need a graph, equations with a lane and calls
over the memory limit are planned."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import event, given, settings
from hypothesis import strategies as st
from opt_einsum import paths as oe_paths  # type: ignore[import-untyped]

import einstride as es
from einstride import EinsumError
from einstride.engine.backends.numpy import direct
from einstride.engine.backends.numpy.generic import PROMOTE_AT
from einstride.engine.backends.torch import backend as torch_backend
from einstride.engine.backends.torch import first
from einstride.engine.backends.torch import plan as torch_plan
from einstride.engine.backends.torch.lanes import lane_for
from einstride.engine.backends.torch.operands import facts_of

DTYPES = [torch.float64, torch.float32, torch.complex128]


@st.composite
def first_calls(draw: Any, largest: int = 6) -> tuple[str, list[torch.Tensor]]:
    """Two to six operands of distinct labels (sizes 1 to ``largest``) in one dtype, some
    permuted."""
    n = draw(st.integers(2, 6))
    terms = ["".join(draw(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=4,
                                   unique=True))) for _ in range(n)]  # fmt: skip
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    sizes = {x: draw(st.integers(1, largest)) for x in used}
    dtype = draw(st.sampled_from(DTYPES))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    ops = []
    for term in terms:
        shape = [sizes[x] for x in term]
        x = torch.randn(shape[::-1], generator=gen, dtype=dtype)
        ops.append(x.permute(*reversed(range(len(shape)))) if draw(st.booleans()) else
                   x.reshape(shape))  # fmt: skip
    return ",".join(terms) + "->" + output, ops


def _planned() -> int:
    return torch_plan._cached.cache_info().currsize


@settings(max_examples=150, deadline=None)
@given(first_calls())
def test_a_first_call_gives_torch_s_values_and_caches_nothing(
    case: tuple[str, list[torch.Tensor]],
) -> None:
    equation, ops = case
    es.clear_plan_cache()
    want = torch.einsum(equation, *[x.to(torch.complex128) for x in ops])
    tolerance = 1e-4 if ops[0].dtype == torch.float32 else 1e-10
    answers: list[object] = []
    with mock.patch.object(torch_backend, "first_call",
                           lambda *a: answers.append(first.first_call(*a)) or answers[-1]):  # fmt: skip
        got = es.einsum(equation, *ops)
    ran_directly = any(answer is not None for answer in answers)
    tiny = direct.tiny_equation(equation, first._numpy_facts(facts_of(ops))) is not None
    event(f"ran directly: {ran_directly}" + (" (tiny: one torch.einsum)" if tiny else ""))
    if ran_directly:
        assert _planned() == 0
    assert got.dtype == ops[0].dtype and got.shape == want.shape
    torch.testing.assert_close(got.to(torch.complex128), want, rtol=tolerance, atol=tolerance)
    for _ in range(PROMOTE_AT - 1 if tiny else 1):  # the same call again: planned (a tiny
        again = es.einsum(equation, *ops)  # one at its PROMOTE_AT-th: it runs its plan's loop)
        torch.testing.assert_close(again.to(torch.complex128), want, rtol=tolerance, atol=tolerance)
    if ran_directly:
        assert (lane_for(equation) is None or tiny) and _planned() == 1


@settings(max_examples=60, deadline=None)
@given(first_calls(largest=24))  # (past 4,096 combinations a step is a product)
def test_numpy_and_torch_walk_the_same_steps_to_the_same_values(
    case: tuple[str, list[torch.Tensor]],
) -> None:
    """The direct way's one walk (``direct.walk_steps``) with NumPy's operations and with
    torch's: the same steps (sums alone, loops, products with swapped matrices) give
    numpy.einsum's values."""
    equation, ops = case
    facts = first._numpy_facts(facts_of(ops))
    assert facts is not None
    found = direct.first_call_steps(equation, facts, None, "auto")
    event(f"steps: {'none' if found is None else sorted({type(s).__name__ for s in found[0]})}")
    if found is None:
        return
    steps, output = found[0], found[1]
    on_torch = first._run(steps, output, ops)
    on_numpy = direct._runner(steps, output)([x.numpy() for x in ops], None)
    want = np.einsum(equation, *[x.numpy().astype(np.complex128) for x in ops])
    tolerance = 1e-4 if ops[0].dtype == torch.float32 else 1e-10
    # float32's error bound scales with the sum of the terms' magnitudes, not the result's
    # (a float32 sum of 5 operands' products cancelled to 0.39 missed 1e-4 by 1.9e-4)
    magnitude = np.einsum(equation, *[np.abs(x.numpy()).astype(np.float64) for x in ops])
    for got in (np.asarray(on_numpy), on_torch.numpy()):
        error = np.abs(got - want)
        assert (error <= tolerance * (np.abs(want) + magnitude + 1)).all(), error.max()


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [("abcx,cd->bad", [(20, 30, 40, 5), (40, 8)]), ("xabc,cd->bad", [(5, 20, 30, 40), (40, 8)])],
)
def test_a_step_of_one_operand_walks_alike(equation: str, shapes: list[tuple[int, ...]]) -> None:
    """A path's step of one operand (its own label summed first: a product of one
    register), which drawn first calls never make (a review), on both backends' walks."""
    gen = torch.Generator().manual_seed(2)
    ops = [torch.randn(shape, generator=gen, dtype=torch.float64) for shape in shapes]
    facts = first._numpy_facts(facts_of(ops))
    assert facts is not None
    found = direct.first_call_steps(equation, facts, None, [(0,), (0, 1)])
    assert found is not None and [step.b for step in found[0]] == [-1, 1]
    steps, output = found[0], found[1]
    want = np.einsum(equation, *[x.numpy() for x in ops])
    np.testing.assert_allclose(first._run(steps, output, ops).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(direct._runner(steps, output)([x.numpy() for x in ops], None),
                               want, rtol=1e-12)  # fmt: skip


def test_a_class_runs_directly_twice_and_a_graph_is_planned() -> None:
    es.clear_plan_cache()
    chain = [torch.ones(37, 20, dtype=torch.float64), torch.ones(20, 30, dtype=torch.float64),
             torch.ones(30, 5, dtype=torch.float64)]  # fmt: skip
    counts = []
    for rows in (36, 37, 38, 39):  # one shape class
        chain[0] = torch.full((rows, 20), 0.5, dtype=torch.float64)
        np.testing.assert_allclose(es.einsum("ij,jk,kl->il", *chain).numpy(), 300.0)
        counts.append(_planned())
    assert counts == [0, 0, 1, 2]  # (DIRECT_LOOKS: two looks run directly)
    es.clear_plan_cache()  # forgets the classes looked up too
    leaf = chain[0].clone().requires_grad_()
    result = es.einsum("ij,jk,kl->il", leaf, *chain[1:])
    assert result.grad_fn is not None and _planned() >= 1  # its backward is einstride's
    with torch.no_grad():
        es.clear_plan_cache()
        es.einsum("ij,jk,kl->il", leaf, *chain[1:])  # no graph: run directly
        assert _planned() == 0


def test_an_equation_with_a_lane_and_a_call_over_the_limit_are_planned() -> None:
    es.clear_plan_cache()
    a, b = torch.ones(40, 30, dtype=torch.float64).T, torch.ones(30, 20, dtype=torch.float64)
    es.einsum("ji,jk->ik", a, b, optimize="greedy")  # matmul form: the lane's plan
    assert _planned() == 1
    es.clear_plan_cache()
    chain = [torch.ones(40, 30, dtype=torch.float64), torch.ones(30, 50, dtype=torch.float64),
             torch.ones(50, 6, dtype=torch.float64)]  # fmt: skip
    facts = tuple(x for t in chain for x in (tuple(t.shape), tuple(8 * s for s in t.stride()),
                                             np.dtype(np.float64)))  # fmt: skip
    found = direct.first_call_steps("ab,bc,cd->ad", facts, None, "auto")
    assert found is not None
    limit = found[3] - 8  # under the direct way's peak, over the plan's
    got = es.einsum("ab,bc,cd->ad", *chain, memory_limit=limit)
    np.testing.assert_allclose(got.numpy(), 1500.0)
    assert _planned() == 1


@pytest.mark.parametrize("dtype", [torch.int64, torch.float16])
def test_other_dtypes_are_planned(dtype: torch.dtype) -> None:
    es.clear_plan_cache()
    chain = [torch.ones(3, 4, dtype=dtype), torch.ones(4, 5, dtype=dtype),
             torch.ones(5, 2, dtype=dtype)]  # fmt: skip
    assert es.einsum("ab,bc,cd->ad", *chain).tolist() == [[20, 20]] * 3
    assert _planned() == 1


def test_a_tiny_problem_runs_as_one_torch_einsum_at_each_new_shape() -> None:
    """At most LOOP_ELEMENTS combinations: each new shape of a class runs directly
    (planning the class costs more), two operands as one torch.einsum, an equation with a
    lane too where the lane declines the call (``fab,baf->b``: its labels merge only
    copied), three as the steps; the same call is planned at its PROMOTE_AT-th."""
    es.clear_plan_cache()
    gen = torch.Generator().manual_seed(4)
    for equation in ("ab,bc,cd->ad", "fab,baf->b"):
        terms = equation.split("->")[0].split(",")
        for step in range(4):  # one shape class (a of 8-11): at most 11 * 5**3 combinations
            sizes = dict(zip("abcdf", (8 + step, 5, 4, 5, 4)))
            ops = [torch.randn([sizes[x] for x in t], generator=gen, dtype=torch.float64)
                   for t in terms]  # fmt: skip
            with mock.patch.object(first, "_run", wraps=first._run) as run:
                got = es.einsum(equation, *ops)
            assert run.call_count == (len(ops) > 2) and _planned() == 0
            torch.testing.assert_close(got, torch.einsum(equation, *ops))
        for _ in range(PROMOTE_AT - 2):
            es.einsum(equation, *ops)
        assert _planned() == 0  # (run directly until the call's PROMOTE_AT-th)
        es.einsum(equation, *ops)
        assert _planned() == 1
        es.clear_plan_cache()
    assert lane_for("fab,baf->b") is not None


def test_a_tiny_call_keeps_the_limit_the_path_and_the_optimizer() -> None:
    """The one torch.einsum only where what it may allocate fits the limit (else as before:
    the steps' peak, or the plan's, decides), ``optimize=`` a finder's name (a path given is
    checked, an optimizer object called), and two operands (a ring of more runs its steps:
    torch.einsum's own path search costs more); a review found all three."""
    gen = torch.Generator().manual_seed(0)
    chain = [
        torch.randn(s, generator=gen, dtype=torch.float64) for s in [(2, 30), (30, 30), (30, 2)]
    ]
    pair = [torch.randn(s, generator=gen, dtype=torch.float64) for s in [(12, 4, 5), (5, 4, 12)]]
    lone = [torch.randn(s, generator=gen, dtype=torch.float64) for s in [(4, 4), (4, 5, 2)]]
    assert lane_for("ce,cda->") is None  # (a second review: its steps' torch.einsum copies)
    for equation, ops, limit in (("ab,bc,cd->ad", chain, 200), ("fab,baf->b", pair, 40),
                                 ("ce,cda->", lone, 8)):  # fmt: skip
        es.clear_plan_cache()
        for _ in range(2):  # the first call and the planned one alike
            with pytest.raises(EinsumError, match="limit"):
                es.einsum(equation, *ops, memory_limit=limit)
    for path in (("einsum_path", (0, 5)), ((0, 5),), ()):
        es.clear_plan_cache()
        with pytest.raises(EinsumError):
            es.einsum("ab,bc,cd->ad", *chain, optimize=path)

    class Optimizer(oe_paths.PathOptimizer):  # type: ignore[misc]
        calls = 0

        def __call__(self, inputs: Any, output: Any, sizes: Any, memory_limit: Any = None) -> Any:
            Optimizer.calls += 1
            return [(0, 1), (0, 1)]

    es.clear_plan_cache()
    small = [x[:, :4] if x.shape[0] == 2 else x[:4, :4] for x in chain]  # 2 x 4 x 4 x 2
    torch.testing.assert_close(es.einsum("ab,bc,cd->ad", *small, optimize=Optimizer()),
                               torch.einsum("ab,bc,cd->ad", *small))  # fmt: skip
    assert Optimizer.calls >= 1
    ring = [torch.randn(2, 3, generator=gen, dtype=torch.float64) for _ in range(4)]
    ring = [ring[0], ring[1].T, ring[2], ring[3].T]  # ab,bc,cd,da of 2 x 3 x 2 x 3
    es.clear_plan_cache()
    with mock.patch.object(first, "_run", wraps=first._run) as run:
        got = es.einsum("ab,bc,cd,da->", *ring)
    assert run.call_count == 1 and _planned() == 0
    torch.testing.assert_close(got, torch.einsum("ab,bc,cd,da->", *ring))


def test_a_tiny_call_the_direct_way_declines_is_planned_from_its_next_call() -> None:
    """Over the memory limit a tiny call is planned; its repeats pay one look, not the
    direct way's attempt again (a review: calls 2-7 searched its path each time)."""
    ops = [torch.ones(3, 4, dtype=torch.float64), torch.ones(4, 5, dtype=torch.float64),
           torch.ones(5, 2, dtype=torch.float64)]  # fmt: skip
    es.clear_plan_cache()
    with mock.patch.object(first, "first_call_steps", wraps=first.first_call_steps) as steps:
        for _ in range(PROMOTE_AT):
            got = es.einsum("ab,bc,cd->ad", *ops, memory_limit=150)
            torch.testing.assert_close(got, torch.full((3, 2), 20.0, dtype=torch.float64))
    assert steps.call_count == 1
