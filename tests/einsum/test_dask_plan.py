"""The Dask plan without Dask: its steps, run one by one with NumPy on whole arrays, give the
NumPy path's result, and the chosen chunk sizes keep every step within the task budget."""

from __future__ import annotations

import numpy as np
import pytest
from einsum_strategies import DTYPES, cases, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride import EinsumError
from einstride.engine.backends.dask.plan import (
    DaskPlan,
    choose_chunks,
    n_blocks,
    plan_steps,
    split_every,
    step_bytes,
)
from einstride.engine.backends.numpy.fold import contiguous_strides
from einstride.engine.backends.numpy.plan import build_plan
from einstride.engine.spec.equation import parse_equation


def _plan(equation: str, operands: list[np.ndarray], optimize: object = "auto") -> DaskPlan:
    spec = parse_equation(equation, *(x.shape for x in operands))
    dtypes = [x.dtype for x in operands]
    strides = [contiguous_strides(x.shape, x.dtype.itemsize) for x in operands]
    np_plan = build_plan(spec, dtypes, strides, optimize=optimize)
    return plan_steps(spec, np_plan.path, dtypes, np_plan.result_dtype, np_plan.compute_dtype)


def _run(plan: DaskPlan, operands: list[np.ndarray]) -> np.ndarray:
    """Each step as one einsum over whole arrays (what every block does on its part)."""
    regs: dict[int, np.ndarray] = {}
    for i, (x, stretched) in enumerate(zip(operands, plan.spec.stretched)):
        regs[i] = x[tuple(0 if ax in stretched else slice(None) for ax in range(x.ndim))]
    for step in plan.steps:
        args: list[object] = []
        for reg, term in zip(step.srcs, step.inputs):
            assert regs[reg].ndim == len(term)
            args += [regs[reg], list(term)]
        regs[step.dst] = np.asarray(es.einsum(*args, list(step.labels), dtype=step.dtype))
        assert set(step.summed) == {lab for t in step.inputs for lab in t} - set(step.labels)
    return regs[plan.result]


@st.composite
def problems(draw):
    case = draw(cases(max_operands=5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    operands = [values(rng, shape, draw(DTYPES)) for shape in case.shapes]
    return case, operands


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems(), st.sampled_from([False, "greedy", "optimal"]))
def test_steps_compute_the_numpy_path_result(problem, optimize):
    case, operands = problem
    plan = _plan(case.render(), operands, optimize)
    expected = np.asarray(es.einsum(case.render(), *operands, optimize=optimize))
    got = _run(plan, operands)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    assert plan.steps[-1:] == () or plan.steps[-1].labels == plan.spec.output


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems(), st.integers(64, 4096))
def test_chosen_chunks_keep_every_step_within_the_budget(problem, budget):
    case, operands = problem
    plan = _plan(case.render(), operands)
    sizes = plan.spec.sizes
    try:
        chunks = choose_chunks(plan, {}, budget)
    except EinsumError as exc:
        assert "even with chunks of one element" in str(exc)
        ones = dict.fromkeys(range(len(sizes)), 1)
        assert max(step_bytes(s, ones, sizes) for s in plan.steps) > budget
        return
    assert all(1 <= chunks[lab] <= max(sizes[lab], 1) for lab in range(len(sizes)))
    for step in plan.steps:
        assert step_bytes(step, chunks, sizes) <= budget
        assert step_bytes(step, chunks, sizes, budget) <= budget


def test_a_path_entry_of_three_operands_contracts_pairwise():
    ops = [np.arange(6.0).reshape(2, 3), np.ones((3, 4)), np.arange(4.0) + 1]
    plan = _plan("ij,jk,k->i", ops, optimize=[(0, 1, 2)])
    assert [s.kind for s in plan.steps] == ["contract", "contract"]
    np.testing.assert_array_equal(_run(plan, ops), es.einsum("ij,jk,k->i", *ops))


def test_steps_follow_the_numpy_plan_order():
    ops = [np.ones((3, 3, 4)), np.ones((4, 5)), np.ones((5, 2))]
    plan = _plan("iij,jk,kl->iil", ops, optimize=[(1, 2), (0, 1)])
    assert [s.kind for s in plan.steps] == ["diagonal", "contract", "contract", "expand"]
    assert plan.steps[1].srcs == (1, 2)  # the path's first pair
    assert plan.steps[-1].labels == plan.spec.output  # i, i, l


def test_labels_of_one_operand_are_summed_before_the_product():
    ops = [np.ones((3, 4)), np.ones((4, 5))]
    plan = _plan("ij,jk->j", ops)
    assert [(s.kind, s.summed) for s in plan.steps] == [
        ("reduce", (0,)),
        ("reduce", (2,)),
        ("product", ()),
    ]


def test_float16_is_computed_in_float32_and_cast_at_the_end():
    ops = [np.ones((3, 4), np.float16), np.ones((4, 5), np.float16)]
    plan = _plan("ij,jk->ik", ops)
    assert [(s.kind, str(s.dtype)) for s in plan.steps] == [
        ("contract", "float32"),
        ("cast", "float16"),
    ]


@pytest.mark.parametrize(
    ("size", "chunk", "blocks"), [(10, 3, 4), (10, 10, 1), (0, 5, 1), (1, 1, 1)]
)
def test_n_blocks(size, chunk, blocks):
    assert n_blocks(size, chunk) == blocks


def test_split_every_fills_the_budget():
    assert split_every(100, 10_000) == 16
    assert split_every(1000, 10_000) == 9
    assert split_every(10_000, 10_000) == 2
