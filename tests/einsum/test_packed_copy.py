"""A copy step whose trailing axes form a short contiguous block copies that block as one
item (:func:`~einstride.engine.backends.numpy.execute.packed_copy`; into ``out=``,
:func:`~einstride.engine.backends.numpy.execute.packed_copyto`, where ``out``'s trailing
axes form the same block): the same values, in C order or ``out``'s, on every layout and
item size."""

from __future__ import annotations

import math
from typing import Any
from unittest import mock

import ml_dtypes
import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy.execute import PACK_MAX_BYTES, packed_copy, packed_copyto

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


@settings(max_examples=300, deadline=None)
@given(_arrays(), _arrays())
def test_a_packed_copy_into_out_writes_every_element_and_no_other(
    x: np.ndarray, layout: np.ndarray
) -> None:
    """Into an ``out`` laid out as another drawn array (its layout, ``x``'s shape and dtype,
    inside a sentinel-filled buffer): packed where both trailing blocks agree."""
    rank = min(x.ndim, layout.ndim)
    x = x[(0,) * (x.ndim - rank)]
    order = sorted(range(rank), key=lambda a: -abs(layout.strides[layout.ndim - rank + a]))
    stored = [x.shape[a] for a in order]
    base = np.full([2 * stored[0], *stored[1:]], 7, x.dtype)  # every other outer row: 7s
    out, before = base[::2].transpose(np.argsort(order)), base[1::2].copy()
    done = packed_copyto(out, x)
    event("packed" if done else "not packed")
    if not done:
        return
    np.testing.assert_array_equal(out.view(np.uint8), np.asarray(x).view(np.uint8))
    assert base[1::2].tobytes() == before.tobytes()  # nothing written between


def test_a_permutation_into_out_is_packed_and_numpys_result() -> None:
    """A pure permutation into a C-ordered ``out=`` whose last axis stays: its runs of two
    elements are copied as one item each."""
    from einstride.engine.backends.numpy import execute

    state = np.random.default_rng(3).random((2,) * 18)
    letters = "abcdefghijklmnopqr"
    equation = letters + "->pq" + letters[:15] + "r"  # two qubits to the front
    out = np.full(state.shape, np.nan)
    packed: list[bool] = []
    original = execute.packed_copyto

    def spy(target: np.ndarray, x: np.ndarray) -> bool:
        packed.append(original(target, x))
        return packed[-1]

    with mock.patch.object(execute, "packed_copyto", spy):
        for _ in range(10):  # (a shape's first calls may run directly)
            out[...] = np.nan
            es.einsum(equation, state, out=out)
    assert True in packed  # (a review: the test held with packing switched off)
    np.testing.assert_array_equal(out, np.einsum(equation, state))
    ints = np.arange(2**13).reshape(64, 64, 2)  # into an out= of another dtype: a cast
    cast = np.empty((64, 64, 2))
    es.einsum("ijk->jik", ints, out=cast)
    np.testing.assert_array_equal(cast, np.einsum("ijk->jik", ints))
    assert not execute.packed_copyto(cast, ints.transpose(1, 0, 2))


@settings(max_examples=100, deadline=None)
@given(st.permutations(range(15)), st.integers(0, 14), st.sampled_from(["float64", "complex128"]),
       st.booleans())  # fmt: skip
def test_the_direct_way_s_fold_is_transpose_and_reshape(
    perm: list[int], merged: int, dtype: str, last_stays: bool
) -> None:
    """The direct way's step operand (``direct._folded``): transposed, then reshaped with
    its trailing axes merged, a copy packed where it can be; NumPy's values and shape."""
    from einstride.engine.backends.numpy import direct

    if last_stays:  # (a trailing block: packed)
        perm = [a for a in perm if a != 14] + [14]
    x = np.arange(2**15).astype(dtype).reshape((2,) * 15)  # (direct.COPY_CHOICE: 2**14)
    view = x.transpose(perm)
    shape = view.shape[:merged] + (math.prod(view.shape[merged:]),)
    got = direct._folded(x, tuple(perm), shape)
    want = view.reshape(shape)
    np.testing.assert_array_equal(got, want)
    if np.shares_memory(want, x):
        event("a view")
        assert np.shares_memory(got, x)  # no copy where a view does
    else:
        packs = packed_copy(view) is not None
        event("packed" if packs else "copied")
        with mock.patch.object(direct, "packed_copy", wraps=packed_copy) as spy:
            direct._folded(x, tuple(perm), shape)
        assert spy.call_count == 1 or not packs  # (a review: it held with packing off)
