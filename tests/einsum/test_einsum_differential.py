"""einsum against a brute-force oracle and numpy.einsum on random equations and layouts."""

from __future__ import annotations

import contextlib
import dataclasses

import ml_dtypes
import numpy as np
from einsum_oracle import ELL, brute_force
from einsum_strategies import DTYPES, Case, cases, layouts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy.options import default_options, set_default_options

OPTIMIZE = st.sampled_from([False, True, "auto", "greedy", "optimal", "dp", "branch-2"])


def _tolerance(dtype: np.dtype) -> dict[str, float]:
    if dtype.kind in "biu":
        return {"rtol": 0, "atol": 0}
    if dtype in (np.float32, np.complex64):
        return {"rtol": 1e-4, "atol": 1e-3}
    return {"rtol": 1e-10, "atol": 1e-9}


def _check(case: Case, result: object, operands: list[np.ndarray], dtype: object = None) -> None:
    expected = brute_force(case.terms, case.output, operands, dtype)
    got = np.asarray(result.numpy() if isinstance(result, es.Tensor) else result)
    assert got.shape == expected.shape, (case.render(), got.shape, expected.shape)
    assert got.dtype == expected.dtype, (case.render(), got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, **_tolerance(expected.dtype), err_msg=case.render())


@st.composite
def problems(draw):
    case = draw(cases())
    dtypes = [draw(DTYPES) for _ in case.shapes]
    operands = [draw(layouts(shape, dt)) for shape, dt in zip(case.shapes, dtypes)]
    return case, operands


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems(), OPTIMIZE, st.booleans(), st.booleans(), st.booleans())
def test_matches_brute_force_and_numpy(problem, optimize, spaces, as_tensor, fuse):
    case, operands = problem
    before = [op.copy() for op in operands]
    inputs = [es.as_tensor(op) if as_tensor and k == 0 else op for k, op in enumerate(operands)]
    with contextlib.nullcontext() if fuse else _stepwise():
        result = es.einsum(case.render(spaces), *inputs, optimize=optimize)
    assert isinstance(result, es.Tensor) == (as_tensor and len(operands) > 0)
    _check(case, result, operands)
    for op, old in zip(operands, before):
        np.testing.assert_array_equal(op, old)
    numpy_eq = case.numpy_equation()
    if numpy_eq is not None and not as_tensor:
        expected = np.einsum(numpy_eq, *operands)
        np.testing.assert_allclose(
            np.asarray(result), expected, **_tolerance(np.asarray(expected).dtype)
        )


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data(), OPTIMIZE, st.booleans())
def test_out_with_any_layout(data, optimize, fuse):
    case, operands = data.draw(problems())
    expected = brute_force(case.terms, case.output, operands)
    out = data.draw(layouts(expected.shape, str(expected.dtype), writeable=True))
    out = np.require(out, requirements="W") if not out.flags.writeable else out
    with contextlib.nullcontext() if fuse else _stepwise():
        result = es.einsum(case.render(), *operands, out=out, optimize=optimize)
    assert result is out
    np.testing.assert_allclose(out, expected, **_tolerance(expected.dtype))


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems(), st.sampled_from(["float64", "complex128", "int64", "float32"]))
def test_dtype_argument(problem, dtype):
    case, operands = problem
    if any(op.dtype.kind == "c" for op in operands) and dtype in ("float64", "int64", "float32"):
        operands = [op.real.copy() if op.dtype.kind == "c" else op for op in operands]
    if dtype == "int64":
        operands = [op.astype(np.int64) for op in operands]
    with _stepwise():
        result = es.einsum(case.render(), *operands, dtype=dtype)
    assert np.asarray(result).dtype == np.dtype(dtype)
    _check(case, result, operands, dtype)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems())
def test_sublist_form_matches_string_form(problem):
    case, operands = problem
    ids = {x: k for k, x in enumerate(dict.fromkeys(x for t in case.terms for x in t))}
    args: list[object] = []
    for term, op in zip(case.terms, operands):
        args += [op, [Ellipsis if x == ELL else ids[x] for x in term]]
    if case.explicit:
        args.append([Ellipsis if x == ELL else ids[x] for x in case.output])
    else:  # implicit: the labels written once, sorted by their int (not by character)
        singles = [x for x in case.output if x != ELL]
        case.output = [ELL] * (ELL in case.output) + sorted(singles, key=ids.__getitem__)
    _check(case, es.einsum(*args), operands)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data(), st.sampled_from(["float16", "bfloat16"]), OPTIMIZE)
def test_half_precision_types_accumulate_exactly_in_float32(data, dtype, optimize):
    """Small integers keep every float32 partial sum exact, so a float32 accumulator gives
    exactly the oracle's value rounded once to the half type (a half accumulator would not)."""
    case = data.draw(cases())
    operands = [data.draw(layouts(shape, "float32")).astype(dtype) for shape in case.shapes]
    with _stepwise():
        result = np.asarray(es.einsum(case.render(), *operands, optimize=optimize))
    expected = brute_force(case.terms, case.output, [op.astype(np.float64) for op in operands])
    assert result.dtype == np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    np.testing.assert_array_equal(
        result.astype(np.float64), expected.astype(result.dtype).astype(np.float64)
    )


@contextlib.contextmanager
def _options(**changes: float):
    """Plan with the default options but ``changes`` while inside (the options are part of
    every plan's cache key: plans made under others are not reused)."""
    before = set_default_options(dataclasses.replace(default_options(), **changes))
    try:
        yield
    finally:
        set_default_options(before)


def _costs(copy: float, partial: float, call: float):
    """Re-weigh the planner's cost model, and keep tiny problems on the step-by-step path."""
    return _options(
        copy_ns_per_byte=copy, partial_ns_per_byte=partial, call_ns=call, loop_ns=float("inf")
    )


def _stepwise():
    """The default cost model, but never one fused loop: tests the step-by-step planner."""
    return _options(loop_ns=float("inf"))


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems(), OPTIMIZE, st.sampled_from([(1e9, 0.0, 0.0), (0.0, 1e9, 1e9)]))
def test_every_remedy_gives_the_same_values(problem, optimize, costs):
    """Whatever the cost model prefers -- looping over groups that do not fold, or copying
    every operand that does not -- the values are the oracle's."""
    case, operands = problem
    with _costs(*costs):
        result = es.einsum(case.render(), *operands, optimize=optimize)
    _check(case, result, operands)


def test_a_scalar_result_of_looped_contracted_labels_is_planned_under_costly_copies():
    # found by the test above: the last product of a scalar result has no output label
    # to compare its layout with (it raised IndexError)
    a = np.full((2, 2, 2), 2.0)
    b = np.arange(8.0).reshape(2, 2, 2).transpose(0, 2, 1).copy().transpose(0, 2, 1)
    with _costs(1e9, 0.0, 0.0):
        result = es.einsum("abd,...abd", a, b, optimize=False)
    assert result == np.einsum("abd,...abd", a, b)


def test_loops_replace_a_large_copy_when_cheaper():
    a = np.ones((64, 32, 16, 64))  # labels c d b a: c and a do not fold
    report = _report("cdba,ca->db", a, np.ones((64, 64)))
    assert "copy" not in report and "looped" in report
    np.testing.assert_allclose(
        es.einsum("cdba,ca->db", a, np.ones((64, 64))),
        np.einsum("cdba,ca->db", a, np.ones((64, 64))),
    )


def _report(equation: str, *ops: np.ndarray) -> str:
    return es.explain(equation, *ops)


def test_the_cost_model_is_a_planner_option():
    """The same operands planned under two cost models: copying wins when copies are free,
    looping when copies cost the most (and the default options are left as they were)."""
    from einstride.engine.backends.numpy.cache import entry_for as _entry_for
    from einstride.engine.backends.numpy.options import PlannerOptions
    from einstride.engine.backends.numpy.report import format_plan

    a, b = np.ones((64, 32, 16, 64)), np.ones((64, 64))
    before = default_options()

    def report(**costs: float) -> str:
        options = PlannerOptions(loop_ns=float("inf"), **costs)
        return format_plan(
            _entry_for("cdba,ca->db", [a, b], None, None, "auto", options=options).plan
        )

    copied = report(copy_ns_per_byte=0.0, partial_ns_per_byte=1e9, call_ns=1e9)
    looped = report(copy_ns_per_byte=1e9, partial_ns_per_byte=0.0, call_ns=0.0)
    assert "step 1: copy" in copied and "looped" not in copied
    assert "copy" not in looped and "looped" in looped
    with _costs(0.0, 1e9, 1e9):
        assert "step 1: copy" in _report("cdba,ca->db", a, b)
    assert default_options() is before
