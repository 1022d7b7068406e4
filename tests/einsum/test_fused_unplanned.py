"""A small problem's new shape class is fused without planning its steps
(plan._fused_unplanned): only where the planner would fuse it anyway, so the plan is the
one the steps' planning gives; and a class miss of such a problem plans no step."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_shape_generic import DTYPES, _layout, _operand

from einstride.engine.backends.numpy import plan as planner
from einstride.engine.backends.numpy.cache import facts_of, make_entry
from einstride.engine.backends.numpy.options import DEFAULT
from einstride.engine.backends.numpy.skeleton import Recorder
from einstride.engine.spec.equation import parse_equation


@st.composite
def small_problems(draw: Any) -> tuple[str, list[np.ndarray]]:
    """Two to four operands of up to three labels of sizes 1-6, in the layouts the shape
    class test draws (permuted, broadcast, stepped), in one of four dtypes."""
    n = draw(st.integers(2, 4))
    terms = ["".join(draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=3)))
             for _ in range(n)]  # fmt: skip
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    sizes = {x: draw(st.integers(1, 6)) for x in used}
    dtype = draw(st.sampled_from(DTYPES))
    layouts = [draw(_layout(len(term))) for term in terms]
    ops = [_operand(t, sizes, dtype, how) for t, how in zip(terms, layouts)]
    return ",".join(terms) + "->" + output, ops


def _plan(equation: str, ops: list[np.ndarray], recorder: Recorder | None = None) -> Any:
    """The plan of ``ops`` from scratch (its decisions recorded in ``recorder``)."""
    spec = parse_equation(equation, *[op.shape for op in ops])
    return planner._plan(
        spec,
        tuple(op.dtype for op in ops),
        tuple(op.strides for op in ops),
        None,
        None,
        "auto",
        DEFAULT.options,
        Recorder() if recorder is None else recorder,
    )


@settings(max_examples=300, deadline=None)
@given(small_problems())
def test_a_problem_fused_unplanned_is_the_plan_its_steps_planning_gives(
    case: tuple[str, list[np.ndarray]],
) -> None:
    equation, ops = case
    spec = parse_equation(equation, *[op.shape for op in ops])
    dtypes = tuple(op.dtype for op in ops)
    rt = planner.result_dtype(dtypes, None, None)
    layouts = tuple(op.strides for op in ops)
    unplanned = planner._fused_unplanned(spec, dtypes, rt, layouts, DEFAULT.options)
    with mock.patch.object(planner, "_fused_unplanned", return_value=False):
        planned = _plan(equation, ops)
    if unplanned:
        assert [step.kind for step in planned.steps] == ["fused"]
        assert _plan(equation, ops) == planned
    np.testing.assert_allclose(
        make_entry(equation, facts_of(ops), None, None, "auto").run(ops, None),
        np.einsum(equation, *ops),
        rtol=1e-5,
    )


def test_a_new_class_of_a_small_problem_plans_no_step() -> None:
    ops = [np.ones((3, 4, 5)), np.ones((4, 5))]
    recorder = Recorder()
    plan = _plan("abc,bc->c", ops, recorder)
    assert [step.kind for step in plan.steps] == ["fused"]
    assert [site for site, _ in recorder.made] == ["tiny", "path"]
    with mock.patch.object(planner, "_fused_unplanned", return_value=False):
        recorder = Recorder()
        _plan("abc,bc->c", ops, recorder)
    assert [site for site, _ in recorder.made][-1] == "fuse" and len(recorder.made) > 3


def test_two_operands_that_may_be_one_step_are_planned() -> None:
    # a product of views, or of a label summed in one operand and no contracted one (a
    # batch step sums it): maybe one step, which the one loop need not beat
    ops = {"ab,bc->ac": [(3, 4), (4, 5)], "ab,ab->a": [(3, 4), (3, 4)],
           "a,ab->ab": [(3,), (3, 4)], "a,ab->a": [(3,), (3, 4)]}  # fmt: skip
    f8 = np.dtype("f8")
    for equation, shapes in ops.items():
        spec = parse_equation(equation, *shapes)
        layouts = tuple(np.empty(shape).strides for shape in shapes)
        assert not planner._fused_unplanned(spec, (f8, f8), f8, layouts, DEFAULT.options)
    spec = parse_equation("abc,bc->c", (3, 4, 5), (4, 5))
    layouts = ((160, 40, 8), (40, 8))
    assert planner._fused_unplanned(spec, (f8, f8), f8, layouts, DEFAULT.options)
