"""Every plan's writes, as the planner decided them once per step (``DeliveryPlan``) and the
output it creates (``OutputCreation``), agree with each other on random equations, layouts,
``out=`` and ``dtype=``; every step kind runs through the one write combinator."""

from __future__ import annotations

import numpy as np
from einsum_oracle import brute_force
from einsum_strategies import DTYPES, cases, layouts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from einstride.engine.backends.numpy.cache import entry_for
from einstride.engine.backends.numpy.delivery import Delivery, OutputCreation
from einstride.engine.backends.numpy.options import PlannerOptions
from einstride.engine.backends.numpy.steps import (
    BLAS_REDUCTIONS,
    Plan,
    ReduceStep,
    Step,
    ViewStep,
)

NEW_ALLOCS = {"intermediate", "copy", "partial products"}


def _check_writes(plan: Plan, out_given: bool) -> None:
    """Only the last step writes the result; what it writes agrees with the output plan."""
    output = plan.output
    writers: list[tuple[int, Step]] = [
        (k, s)
        for k, s in enumerate(plan.steps)
        if not isinstance(s, ViewStep) and s.delivery.mode is not Delivery.NEW
    ]
    assert len(writers) <= 1, plan.steps
    assert (output.create is OutputCreation.OUT) == out_given
    for step in plan.steps:
        if not isinstance(step, ViewStep) and step.delivery.mode is Delivery.NEW:
            assert [a.what for a in step.delivery.allocs] in ([], *([w] for w in NEW_ALLOCS))
        if isinstance(step, ReduceStep):  # a BLAS reduction's vector of ones, and only it
            assert bool(step.scratch) == (step.kernel in BLAS_REDUCTIONS)
            assert [a.what for a in step.scratch] in ([], ["temporary"])
    if not writers:  # the result is an operand or a register viewed
        assert output.create is OutputCreation.NONE
        return
    k, step = writers[0]
    assert k == len(plan.steps) - 1
    assert not isinstance(step, ViewStep)
    mode = step.delivery.mode
    if mode is Delivery.RETURN:
        assert output.create is OutputCreation.NONE and output.result == step.dst
        assert [a.what for a in step.delivery.allocs] == ["output"]
    else:
        assert output.create is not OutputCreation.NONE
        assert sorted(step.delivery.dest_perm) == list(range(len(step.delivery.dest_perm)))
        temporary = ["temporary"] if mode is Delivery.TEMP else []
        assert [a.what for a in step.delivery.allocs] == temporary
    has_output_alloc = output.create in (OutputCreation.ZEROS, OutputCreation.EMPTY)
    assert bool(output.allocs) == has_output_alloc


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    st.data(),
    st.sampled_from([None, "same", "complex128"]),
    st.sampled_from([None, "float64", "complex128"]),
    st.booleans(),
)
def test_every_plan_writes_its_result_once_and_as_planned(data, out_dtype, dtype, fuse):
    """``out=`` of another dtype than the result makes the last product a ``TEMP`` write."""
    case = data.draw(cases())
    operands = [data.draw(layouts(shape, data.draw(DTYPES))) for shape in case.shapes]
    if dtype == "float64":
        operands = [op.real if op.dtype.kind == "c" else op for op in operands]
    expected = brute_force(case.terms, case.output, operands, dtype)
    out = None
    if out_dtype is not None:
        kind = str(expected.dtype) if out_dtype == "same" else out_dtype
        out = data.draw(layouts(expected.shape, kind, writeable=True))
        out = np.require(out, requirements="W") if not out.flags.writeable else out
        if dtype is None:  # computed in the common dtype of the operands and out= (NumPy 2's
            # rule, docs/einsum.md: bools summed into a complex out= count, 2+0j, not True)
            computed = np.result_type(expected.dtype, out.dtype)
            expected = brute_force(case.terms, case.output, operands, computed)
    options = PlannerOptions(
        threads=2, split_min_bytes=0, **({} if fuse else {"loop_ns": float("inf")})
    )
    entry = entry_for(case.render(), operands, out, dtype, "auto", options=options)
    _check_writes(entry.plan, out is not None)
    result = entry.run(operands, out)
    got = out if out is not None else np.asarray(result)
    tol = (
        {"rtol": 1e-4, "atol": 1e-3}
        if expected.dtype in (np.float32, np.complex64)
        else {"rtol": 1e-10, "atol": 1e-9}
    )
    np.testing.assert_allclose(got, expected.astype(got.dtype), **tol)
