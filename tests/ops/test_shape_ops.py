"""Shape operations: values against NumPy, views, TensorFlow-specific errors, laws."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ops_layouts import assert_kind, shares, values, variants

import einstride as es

BASE = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
SETTINGS = settings(max_examples=40, deadline=None)


def shapes(min_dims: int = 1, max_dims: int = 3, max_side: int = 4) -> st.SearchStrategy:
    return st.lists(st.integers(0, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


# -- unstack ------------------------------------------------------------------------------


@pytest.mark.parametrize("name,x", variants(BASE))
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_unstack_values_and_views(name, x, axis):
    parts = es.unstack(x, axis=axis)
    expected = [np.take(BASE, i, axis=axis) for i in range(BASE.shape[axis])]
    assert len(parts) == len(expected)
    for part, want in zip(parts, expected):
        assert_kind(part, x)
        np.testing.assert_array_equal(values(part), want)
        assert shares(part, x)


def test_unstack_size_zero_and_errors():
    empty = np.zeros((0, 3))
    assert es.unstack(empty) == []
    assert [p.shape for p in es.unstack(empty, axis=1)] == [(0,)] * 3
    with pytest.raises(ValueError, match="rank 0"):
        es.unstack(np.float64(1))
    with pytest.raises(ValueError):
        es.unstack(BASE, axis=3)
    with pytest.raises(ValueError):
        es.unstack(BASE, axis=-4)


# -- split --------------------------------------------------------------------------------


@pytest.mark.parametrize("name,x", variants(BASE))
def test_split_by_count_and_sizes(name, x):
    for axis, count in [(1, 3), (-1, 2), (0, 1)]:
        parts = es.split(x, count, axis=axis)
        for part, want in zip(parts, np.split(BASE, count, axis=axis), strict=True):
            assert_kind(part, x)
            np.testing.assert_array_equal(values(part), want)
            assert shares(part, x)
    parts = es.split(x, [1, 0, 3], axis=-1)
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 0), (2, 3, 3)]
    np.testing.assert_array_equal(values(parts[2]), BASE[..., 1:])
    assert shares(parts[2], x)


def test_split_size_zero_axis():
    parts = es.split(np.zeros((0, 4)), 2)
    assert [p.shape for p in parts] == [(0, 4), (0, 4)]
    assert es.split(np.zeros((0, 4)), []) == []


@pytest.mark.parametrize(
    "arg,match",
    [
        (5, "does not divide"),
        (0, "> 0"),
        (-2, "> 0"),
        ([2, 3], "sum to 5, not 4"),
        ([2, 1], "sum to 3"),
        ([-1, 3], "a -1 is not inferred"),
        ([5, -1], ">= 0"),
    ],
)
def test_split_errors(arg, match):
    with pytest.raises(ValueError, match=match):
        es.split(BASE, arg, axis=2)


def test_split_rank_zero_and_bad_types():
    with pytest.raises(ValueError, match="rank 0"):
        es.split(np.float64(1), 1)
    with pytest.raises(ValueError):
        es.split(BASE, 2, axis=3)
    with pytest.raises(TypeError):
        es.split(BASE, [1.5, 2.5], axis=2)


@SETTINGS
@given(shape=shapes(), data=st.data())
def test_concat_of_split_is_identity(shape, data):
    t = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    divisors = [k for k in range(1, 5) if n % k == 0]
    count = data.draw(st.sampled_from(divisors))
    parts = es.split(es.tensor(t), count, axis=axis)
    np.testing.assert_array_equal(es.concat(parts, axis=axis).numpy(), t)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    sizes = np.diff([0, *cuts, n]).tolist()
    np.testing.assert_array_equal(es.concat(es.split(t, sizes, axis), axis), t)


@SETTINGS
@given(shape=shapes(), data=st.data())
def test_stack_of_unstack_is_identity(shape, data):
    t = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    parts = es.unstack(t, axis)
    if parts:
        np.testing.assert_array_equal(es.stack(parts, axis), t)


# -- stack / concat -----------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4])
def test_stack_values(axis):
    inputs = [x for _, x in variants(BASE)][:3]
    result = es.stack(inputs, axis=axis)
    assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(result, np.stack([BASE] * 3, axis=axis))
    mixed = es.stack([inputs[0], es.tensor(BASE + 1)], axis=axis)
    assert isinstance(mixed, es.Tensor)
    np.testing.assert_array_equal(mixed.numpy(), np.stack([BASE, BASE + 1], axis=axis))


def test_stack_errors():
    with pytest.raises(ValueError, match="empty"):
        es.stack([])
    with pytest.raises(ValueError, match="input 1 has shape"):
        es.stack([np.zeros(2), np.zeros(3)])
    with pytest.raises(ValueError):
        es.stack([BASE, BASE], axis=4)
    with pytest.raises(ValueError):
        es.stack([BASE, BASE], axis=-5)
    assert es.stack([np.float64(1), np.float64(2)]).tolist() == [1.0, 2.0]
    assert es.stack([np.zeros((0, 2))] * 3, axis=1).shape == (0, 3, 2)


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_concat_values(axis):
    pieces = [np.take(BASE, range(k), axis=axis) for k in (1, 0, 2)]
    odd = [es.as_tensor(np.asfortranarray(p)) for p in pieces]
    result = es.concat(odd, axis=axis)
    assert isinstance(result, es.Tensor)
    np.testing.assert_array_equal(result.numpy(), np.concatenate(pieces, axis=axis))


def test_concat_errors():
    with pytest.raises(ValueError, match="empty"):
        es.concat([])
    with pytest.raises(ValueError, match="rank-0"):
        es.concat([np.float64(1), np.float64(2)])
    with pytest.raises(ValueError, match="does not match"):
        es.concat([np.zeros((2, 3)), np.zeros((2, 4))])
    with pytest.raises(ValueError, match="does not match"):
        es.concat([np.zeros((2, 3)), np.zeros(3)])
    with pytest.raises(ValueError):
        es.concat([np.zeros(3)], axis=1)
    with pytest.raises(TypeError):
        es.concat(es.tensor([1, 2]))


@pytest.mark.parametrize("op", ["stack", "concat"])
@pytest.mark.parametrize("kind", ["numpy", "tensor"])
def test_out_is_written_and_returned(op, kind):
    a, b = np.arange(3.0), np.arange(3.0, 6.0)
    storage = np.full(20, -1.0)
    shape = (2, 3) if op == "stack" else (6,)
    gappy = storage[1::3][:6].reshape(shape)  # a gapped destination
    out = gappy if kind == "numpy" else es.as_tensor(gappy)
    result = getattr(es, op)([a, b], out=out)
    assert result is out
    expected = np.stack([a, b]) if op == "stack" else np.concatenate([a, b])
    np.testing.assert_array_equal(values(out), expected)
    assert (storage[np.setdiff1d(np.arange(20), np.arange(1, 19, 3))] == -1).all()


@pytest.mark.parametrize("op", [es.stack, es.concat])
def test_out_rejects_overlap_before_writing(op):
    storage = np.arange(12.0)
    src = es.Tensor(storage, shape=(3,), strides=(2,))  # 0, 2, 4
    shape = (2, 3) if op is es.stack else (6,)
    dst = es.Tensor(storage, shape=shape, offset=6)  # 6..11: disjoint
    other = es.Tensor(storage, shape=shape, offset=4)  # 4..9: overlaps src's element 4
    before = storage.copy()
    with pytest.raises(es.LayoutError, match="overlaps input 1"):
        op([np.ones(3), src], out=other)
    np.testing.assert_array_equal(storage, before)
    op([np.ones(3), src], out=dst)
    assert storage[6:].tolist() == [1, 1, 1, 0, 2, 4]


@pytest.mark.parametrize("op", [es.stack, es.concat])
def test_out_rejects_bad_destinations(op):
    parts = [np.ones(2), np.zeros(2)]
    shape = (2, 2) if op is es.stack else (4,)
    with pytest.raises(ValueError, match="out has shape"):
        op(parts, out=np.empty(5))
    with pytest.raises(es.LayoutError, match="repeated locations"):
        op(parts, out=es.Tensor(np.zeros(4), shape=shape, strides=(0,) * len(shape)))
    frozen = np.zeros(shape)
    frozen.flags.writeable = False
    with pytest.raises(es.LayoutError, match="read-only"):
        op(parts, out=frozen)
    with pytest.raises(TypeError, match="cannot hold"):
        op(parts, out=np.zeros(shape, np.int64))
    with pytest.raises(TypeError):
        op(parts, out=[0, 0, 0, 0])


# -- tile -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name,x", variants(BASE))
def test_tile_values(name, x):
    for reps in [(1, 1, 1), (2, 1, 3), (0, 2, 1)]:
        result = es.tile(x, reps)
        assert_kind(result, x)
        np.testing.assert_array_equal(values(result), np.tile(BASE, reps))
        assert not shares(result, x)


def test_tile_edge_cases_and_errors():
    assert es.tile(np.float64(2), ()).tolist() == 2.0
    assert es.tile(np.arange(3), 2).tolist() == [0, 1, 2, 0, 1, 2]
    assert es.tile(np.zeros((0, 2)), [3, 2]).shape == (0, 4)
    with pytest.raises(ValueError, match="2 multiples"):
        es.tile(BASE, [2, 2])
    with pytest.raises(ValueError, match="4 multiples"):
        es.tile(BASE, [1, 1, 1, 1])
    with pytest.raises(ValueError, match=">= 0"):
        es.tile(BASE, [1, -1, 1])


# -- reshape / flatten ----------------------------------------------------------------------


@pytest.mark.parametrize("name,x", variants(BASE))
def test_reshape_values_and_view_when_possible(name, x):
    for shape in [(6, 4), (-1,), (2, -1, 2), (24, 1)]:
        result = es.reshape(x, shape)
        assert_kind(result, x)
        np.testing.assert_array_equal(values(result), BASE.reshape(shape))
    dense = name.endswith("dense")
    assert shares(es.reshape(x, (6, 4)), x) == dense
    assert shares(es.reshape(x, (2, 12)), x) == dense
    assert shares(es.reshape(x, (1, 2, 3, 4)), x)
    assert shares(es.reshape(x, (2, 3, 2, 2)), x)  # splitting one axis: always a view


def test_reshape_view_of_row_slice():
    rows = np.arange(40.0).reshape(10, 4)[::2]  # gaps between rows only
    merged = es.reshape(es.as_tensor(rows), (5, 2, 2))
    assert shares(merged, rows)
    np.testing.assert_array_equal(merged.numpy(), rows.reshape(5, 2, 2))


def test_reshape_errors_and_size_zero():
    with pytest.raises(ValueError):
        es.reshape(BASE, (5, -1))
    with pytest.raises(ValueError):
        es.reshape(BASE, (-1, -1))
    with pytest.raises(ValueError):
        es.reshape(BASE, (25,))
    assert es.reshape(np.zeros((0, 3)), (3, 0, 5)).shape == (3, 0, 5)


@pytest.mark.parametrize("name,x", variants(BASE))
def test_flatten(name, x):
    result = es.flatten(x)
    assert_kind(result, x)
    np.testing.assert_array_equal(values(result), BASE.reshape(-1))
    assert shares(result, x) == (name.endswith("dense"))
    assert es.flatten(np.float32(5)).tolist() == [5.0]
    assert es.flatten(np.zeros((3, 0))).shape == (0,)


# -- expand_dims / squeeze / transpose / broadcast_to ---------------------------------------


@pytest.mark.parametrize("name,x", variants(BASE))
def test_expand_dims(name, x):
    for axis, want in [(0, (1, 2, 3, 4)), (-1, (2, 3, 4, 1)), ((1, -1), (2, 1, 3, 4, 1))]:
        result = es.expand_dims(x, axis)
        assert_kind(result, x)
        assert result.shape == want
        np.testing.assert_array_equal(values(result), np.expand_dims(BASE, axis))
        assert shares(result, x)
    with pytest.raises(ValueError):
        es.expand_dims(x, 4)
    with pytest.raises(ValueError):
        es.expand_dims(x, -5)
    with pytest.raises(ValueError):
        es.expand_dims(x, (0, -5))
    with pytest.raises(ValueError, match="repeated"):
        es.expand_dims(x, (1, 1))
    assert es.expand_dims(np.zeros((2, 0)), (-1, 0)).shape == (1, 2, 0, 1)
    with pytest.raises(TypeError):
        es.expand_dims(x, 1.0)


@pytest.mark.parametrize("name,x", variants(BASE.reshape(1, 2, 1, 3, 4)))
def test_squeeze(name, x):
    full = BASE.reshape(1, 2, 1, 3, 4)
    for axis in [None, 0, -3, (0, 2)]:
        result = es.squeeze(x, axis)
        assert_kind(result, x)
        np.testing.assert_array_equal(values(result), np.squeeze(full, axis))
        assert shares(result, x)
    with pytest.raises(ValueError, match="axis 1 of length 2"):
        es.squeeze(x, 1)
    with pytest.raises(ValueError):
        es.squeeze(x, 5)


def test_squeeze_to_rank_zero_and_empty():
    assert es.squeeze(np.ones((1, 1))).shape == ()
    assert es.squeeze(np.ones((1, 0, 1))).shape == (0,)
    with pytest.raises(ValueError, match="length 0"):
        es.squeeze(np.ones((1, 0)), 1)


@pytest.mark.parametrize("name,x", variants(BASE))
def test_transpose(name, x):
    for perm in [None, (1, 0, 2), (-1, 0, 1)]:
        result = es.transpose(x, perm)
        assert_kind(result, x)
        np.testing.assert_array_equal(values(result), np.transpose(BASE, perm))
        assert shares(result, x)
    for bad in [(0, 1), (0, 1, 1), (0, 1, 3)]:
        with pytest.raises(ValueError):
            es.transpose(x, bad)
    assert es.transpose(np.zeros((0, 2))).shape == (2, 0)


@pytest.mark.parametrize("name,x", variants(np.arange(3.0).reshape(3, 1)))
def test_broadcast_to(name, x):
    result = es.broadcast_to(x, (2, 3, 4))
    assert_kind(result, x)
    expected = np.broadcast_to(np.arange(3.0).reshape(3, 1), (2, 3, 4))
    np.testing.assert_array_equal(values(result), expected)
    assert shares(result, x)
    layout = es.as_tensor(result).layout
    assert layout.strides[0] == 0 and layout.strides[2] == 0
    if isinstance(result, np.ndarray):
        assert not result.flags.writeable
    assert es.broadcast_to(x, (0, 3, 1)).shape == (0, 3, 1)
    for bad in [(3,), (2, 4), (3, -1)]:
        with pytest.raises(ValueError):
            es.broadcast_to(x, bad)


def test_views_of_numpy_keep_zero_strides():
    row = np.broadcast_to(np.arange(4.0), (3, 4))  # a zero-stride NumPy input
    parts = es.unstack(row)
    assert all(shares(p, row) for p in parts)
    np.testing.assert_array_equal(es.transpose(row), row.T)
    assert es.as_tensor(es.transpose(row)).layout.strides == (1, 0)


@pytest.mark.parametrize("op", [es.stack, es.concat])
@pytest.mark.parametrize("into", [np.int64, np.int8, np.float32])
def test_out_takes_each_input_s_same_kind_cast_as_numpy(op, into):
    """NumPy checks each input against out= (uint64 into int64 is same_kind); einstride
    checked their common dtype (int64 with uint64: float64) and refused (a review)."""
    parts = [np.array([1, 2], np.int64), np.array([3, 4], np.uint64)]
    numpy_op = np.stack if op is es.stack else np.concatenate
    expected = np.zeros((2, 2) if op is es.stack else (4,), into)
    numpy_op(parts, out=expected)
    out = np.zeros_like(expected)
    assert op(parts, out=out) is out
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(TypeError, match="cannot hold float64"):
        op([np.ones(2, np.int64), np.ones(2)], out=np.zeros_like(expected, np.int64))


@pytest.mark.parametrize("op", [es.stack, es.concat])
def test_out_is_untouched_when_a_cast_stops_half_way(op: Any) -> None:
    # a review: each input was written into out in turn, so a cast that raised on the
    # second (a floating-point error under np.errstate, bytes no character decodes) left
    # the first written
    out = np.zeros((2, 2), np.float32) if op is es.stack else np.zeros(4, np.float32)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        op([np.ones(2), np.array([1e300, 1.0])], out=out)
    assert not out.any()
    text = np.array([["-"], ["-"]], dtype="U1") if op is es.stack else np.array(["-", "-"], "U1")
    with pytest.raises(UnicodeDecodeError):  # (a ValueError)
        op([np.array(["a"]), np.array([b"\xff"])], out=text)
    assert text.ravel().tolist() == ["-", "-"]
    fine = np.zeros(4, np.float32)
    with np.errstate(over="raise"):
        es.concat([np.ones(2), np.array([2.0, 3.0])], out=fine)
    assert fine.tolist() == [1.0, 1.0, 2.0, 3.0]


def test_an_axis_out_of_range_names_the_function() -> None:
    # a review: "axis 2 is out of range for rank 2", naming no function
    calls = {
        "stack": lambda: es.stack([np.zeros(2)] * 2, axis=2),
        "concat": lambda: es.concat([np.zeros(2)] * 2, axis=1),
        "unstack": lambda: es.unstack(np.zeros(2), 1),
        "split": lambda: es.split(np.zeros(2), 2, axis=3),
        "gather": lambda: es.gather(np.zeros(2), [0], axis=2),
        "boolean_mask": lambda: es.boolean_mask(np.zeros(2), np.ones(2, bool), axis=4),
        "one_hot": lambda: es.one_hot([1], 3, axis=3),
        "expand_dims": lambda: es.expand_dims(np.zeros(2), 5),
        "squeeze": lambda: es.squeeze(np.zeros(2), 3),
    }
    for name, call in calls.items():
        with pytest.raises(es.LayoutError, match=rf"^{name} axis -?\d+ is out of range"):
            call()


def test_every_op_docstring_says_whether_its_result_is_a_view() -> None:
    # the spec: "say in each docstring whether the result is a view" (a review found 40
    # functions that did not: the random ones, the initializers, the element-wise ones)
    import einstride.elementwise as elementwise
    import einstride.ops as ops

    not_tensors = {"fans", "is_reduced_precision"}  # (a tuple of ints, a bool)
    names = [n for n in (*ops.__all__, *elementwise.__all__) if n not in not_tensors]
    silent = [
        n
        for n in names
        if not isinstance(getattr(es, n), type)
        and not re.search(r"\bview|\bnew\b|\bcopy\b", (getattr(es, n).__doc__ or "").lower())
    ]
    assert not silent, silent


def test_a_set_or_a_mapping_is_no_sequence_of_tensors_or_sizes() -> None:
    # a review: stack({1: x}) stacked the key 1; split(a, {1, 2}) took the set's order
    for call in (
        lambda: es.stack({1: np.zeros(2)}),
        lambda: es.concat({np.zeros(2).tobytes(): 1}),
        lambda: es.stack({3, 4}),
        lambda: es.split(np.zeros(3), {1, 2}),
    ):
        with pytest.raises(TypeError, match="must be a sequence"):
            call()
    assert es.stack(x for x in [np.zeros(1)]).tolist() == [[0.0]]  # (an iterator is fine)
