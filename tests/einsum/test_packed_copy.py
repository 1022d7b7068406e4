"""A copy step whose trailing axes form a short contiguous block copies that block as one
item (:func:`~einstride.engine.backends.numpy.execute.packed_copy`): the same values, in
C order, on every layout and item size."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy.execute import PACK_MAX_BYTES, packed_copy

DTYPES = ["float64", "float32", "complex128", "int8", "bool", ml_dtypes.bfloat16]


@st.composite
def _arrays(draw: Any) -> np.ndarray:
    """An array of small axes in any axis order, gapped or reversed along some."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=7))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    gaps = [draw(st.sampled_from([1, 1, 1, 2])) for _ in shape]
    flips = [draw(st.integers(0, 5)) == 0 for _ in shape]
    perm = draw(st.permutations(range(len(shape))))
    if draw(st.booleans()):  # the last axis stored last, whole: a trailing block
        perm = [a for a in perm if a != len(shape) - 1] + [len(shape) - 1]
        gaps[-1], flips[-1] = 1, False
    stored = [shape[a] * gaps[a] for a in perm]
    base = (np.arange(math.prod(stored)) % 7).astype(dtype).reshape(stored)
    array = base.transpose(np.argsort(perm))
    return array[tuple(slice(None, None, -g if f else g) for g, f in zip(gaps, flips))]


@settings(max_examples=300, deadline=None)
@given(_arrays())
def test_a_packed_copy_is_the_c_ordered_copy(x: np.ndarray) -> None:
    packed = packed_copy(x)
    event("packed" if packed is not None else "not packed")
    if packed is None:
        return
    assert packed.flags.c_contiguous and packed.dtype == x.dtype and packed.shape == x.shape
    assert not np.shares_memory(packed, x)
    np.testing.assert_array_equal(packed.view(np.uint8), np.ascontiguousarray(x).view(np.uint8))


def test_only_short_trailing_blocks_are_packed() -> None:
    state = np.zeros((2,) * 10)
    moved = state.transpose(2, 8, 0, 1, 3, 4, 5, 6, 7, 9)  # the last axis stays: a run of 2
    assert packed_copy(moved) is not None
    assert packed_copy(state) is None  # one block: nothing outside it
    assert packed_copy(state.transpose(1, 0, *range(2, 10))) is None  # a block of 2**8
    assert packed_copy(np.zeros((4, 4), object).T) is None
    wide = np.zeros((8, PACK_MAX_BYTES // 8 * 2)).T  # a last axis of stride 8 * 16
    assert packed_copy(wide) is None


def test_a_gate_on_qubits_is_the_plans_copy_and_numpys_result() -> None:
    rng = np.random.default_rng(2)
    state, gate = rng.random((2,) * 17), rng.random((2, 2, 2, 2))
    equation = "abcdefghijklmnopq,YZcp->abYdefghijklmnoZq"
    assert "copy  operand 0" in es.explain(equation, state, gate)
    got = es.einsum(equation, state, gate)
    np.testing.assert_allclose(got, np.einsum(equation, state, gate))
    assert math.prod(got.shape) == 2**17
