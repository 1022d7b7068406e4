"""The torch backend against the brute-force oracle, the NumPy path and torch.einsum, on
random equations (tests/einsum's strategies), shapes and torch layouts: contiguous,
permuted, sliced with steps, expanded (zero strides)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from einsum_oracle import brute_force
from einsum_strategies import Case, cases, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy.options import default_options, set_default_options

OPTIMIZE = st.sampled_from([False, True, "auto", "greedy", "optimal", "dp"])
DTYPES = st.sampled_from(["float64"] * 5 + ["float32", "int64", "complex128", "bool"])
SLOW = [HealthCheck.too_slow, HealthCheck.filter_too_much]


@st.composite
def torch_layouts(draw: Any, shape: tuple[int, ...], dtype: str) -> torch.Tensor:
    """A tensor of ``shape``: its storage permuted, sliced with steps, and expanded along
    some axes (stride 0)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim))) if ndim else []
    steps = [draw(st.sampled_from([1, 1, 2, 3])) for _ in range(ndim)]
    zeros = [draw(st.integers(0, 4)) == 0 for _ in range(ndim)]
    base_shape = [1 if z else n * s for n, s, z in zip(shape, steps, zeros)]
    base = torch.from_numpy(np.asarray(values(rng, tuple(base_shape[p] for p in perm), dtype)))
    t = base.permute(np.argsort(perm).tolist())
    t = t[tuple(slice(0, 1 if z else n * s, s) for n, s, z in zip(shape, steps, zeros))]
    t = t.expand(*shape) if any(zeros) else t
    assert tuple(t.shape) == tuple(shape)
    return t


@st.composite
def problems(draw: Any) -> tuple[Case, list[torch.Tensor]]:
    case = draw(cases(max_operands=4))
    dtype = draw(DTYPES)
    return case, [draw(torch_layouts(shape, dtype)) for shape in case.shapes]


def _tolerance(dtype: np.dtype[Any]) -> dict[str, float]:
    if dtype.kind in "biu":
        return {"rtol": 0, "atol": 0}
    if dtype in (np.float32, np.complex64):
        return {"rtol": 1e-4, "atol": 1e-4}
    return {"rtol": 1e-10, "atol": 1e-10}


def _close(got: Any, expected: Any, what: str) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    assert got.dtype == expected.dtype, (what, got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, **_tolerance(expected.dtype), err_msg=what)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(problems(), OPTIMIZE)
def test_matches_the_oracle_numpy_and_torch_einsum(problem: Any, optimize: Any) -> None:
    case, tensors = problem
    before = [t.clone() for t in tensors]
    arrays = [t.numpy() for t in tensors]  # the same memory, the same strides
    result = es.einsum(case.render(), *tensors, optimize=optimize)
    assert isinstance(result, torch.Tensor)
    what = case.render()
    _close(result.numpy(), brute_force(case.terms, case.output, arrays), what)
    _close(result.numpy(), es.einsum(case.render(), *arrays, optimize=optimize), what)
    for t, old in zip(tensors, before):
        assert torch.equal(t, old)
    letters = case.numpy_equation()
    if letters is not None and tensors[0].dtype != torch.bool:  # torch sums bools into int64
        try:
            expected = torch.einsum(letters, *tensors)
        except RuntimeError:
            return  # torch.einsum does not take it (bool products, a named label of size 1)
        _close(result.numpy(), expected.numpy(), f"{what} vs torch.einsum")


@settings(max_examples=80, deadline=None, suppress_health_check=SLOW)
@given(st.data(), OPTIMIZE)
def test_out_of_any_layout(data: Any, optimize: Any) -> None:
    case, tensors = data.draw(problems())
    expected = brute_force(case.terms, case.output, [t.numpy() for t in tensors])
    dtype = str(expected.dtype)
    shape = expected.shape
    perm = data.draw(st.permutations(range(len(shape))))
    steps = [data.draw(st.sampled_from([1, 2])) for _ in shape]
    storage = torch.zeros(
        [shape[p] * steps[p] for p in perm], dtype=torch.from_numpy(np.zeros(0, dtype)).dtype
    )
    out = storage.permute(np.argsort(perm).tolist())[tuple(slice(None, None, s) for s in steps)]
    assert tuple(out.shape) == shape
    result = es.einsum(case.render(), *tensors, out=out, optimize=optimize)
    assert result is out
    _close(out.numpy(), expected, case.render())


@contextlib.contextmanager
def _costs(copy: float, partial: float, call: float) -> Iterator[None]:
    """Re-weigh the planner's cost model while inside (the options are part of every plan's
    cache key, the torch backend's too: plans made under others are not reused)."""
    changed = dataclasses.replace(
        default_options(), copy_ns_per_byte=copy, partial_ns_per_byte=partial, call_ns=call
    )
    before = set_default_options(changed)
    try:
        yield
    finally:
        set_default_options(before)


@settings(max_examples=80, deadline=None, suppress_health_check=SLOW)
@given(problems(), OPTIMIZE, st.sampled_from([(1e9, 0.0, 0.0), (0.0, 1e9, 1e9)]))
def test_every_remedy_gives_the_same_values(problem: Any, optimize: Any, costs: Any) -> None:
    """Looping over batch groups that do not fold (and broadcast size-1 batch dims), or
    copying every operand that does not: the oracle's values either way."""
    case, tensors = problem
    with _costs(*costs):
        result = es.einsum(case.render(), *tensors, optimize=optimize)
    _close(
        result.numpy(),
        brute_force(case.terms, case.output, [t.numpy() for t in tensors]),
        case.render(),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW)
@given(st.data(), st.sampled_from([torch.float16, torch.bfloat16]), OPTIMIZE)
def test_half_precision_accumulates_exactly_in_float32(
    data: Any, dtype: torch.dtype, optimize: Any
) -> None:
    """Small integers keep every float32 partial sum exact: the result is the oracle's value
    rounded once to the half type."""
    case = data.draw(cases(max_operands=3))
    tensors = [data.draw(torch_layouts(shape, "float32")).to(dtype) for shape in case.shapes]
    result = es.einsum(case.render(), *tensors, optimize=optimize)
    expected = brute_force(case.terms, case.output, [t.double().numpy() for t in tensors])
    assert result.dtype == dtype
    assert torch.equal(result, torch.from_numpy(np.asarray(expected)).to(dtype))


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(st.data(), OPTIMIZE)
def test_gradients_match_torch_einsums_step_by_step_or_not(data: Any, optimize: Any) -> None:
    """Random equations of up to five operands (n-ary ones run step by step under autograd)
    in float64 and complex128, any layout: every operand's gradient for a random cotangent
    equals ``torch.einsum``'s, wherever torch takes the equation."""
    case = data.draw(cases(max_operands=5))
    letters = case.numpy_equation()
    if letters is None or len(set(case.output)) != len(case.output):
        return  # torch.einsum takes neither more than 52 labels nor expansion
    dtype = data.draw(st.sampled_from(["float64", "complex128"]))
    leaves = [data.draw(torch_layouts(s, dtype)).clone().requires_grad_() for s in case.shapes]
    try:
        expected_out = torch.einsum(letters, *leaves)
    except RuntimeError:
        return  # a named label of size 1 against a larger one: torch refuses it
    out = es.einsum(case.render(), *leaves, optimize=optimize)
    cotangent = torch.from_numpy(
        np.asarray(values(np.random.default_rng(0), tuple(out.shape), dtype))
    )
    ours = torch.autograd.grad(out, leaves, cotangent, allow_unused=True)
    theirs = torch.autograd.grad(expected_out, leaves, cotangent, allow_unused=True)
    for k, (g, h) in enumerate(zip(ours, theirs)):
        if h is None:
            h = torch.zeros_like(leaves[k])
        assert g is not None
        _close(g.resolve_conj().detach().numpy(), h.resolve_conj().detach().numpy(),
               f"{case.render()} operand {k}")  # fmt: skip
