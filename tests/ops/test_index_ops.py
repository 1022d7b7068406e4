"""Indexing operations: gather, boolean_mask, nonzero_indices, where, one_hot, pad."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ops_layouts import assert_kind, values, variants

import einstride as es

BASE = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
SETTINGS = settings(max_examples=40, deadline=None)


# -- gather -----------------------------------------------------------------------------------


def gather_oracle(params, indices, axis, batch_dims):
    """tf.gather by definition: recurse over batch axes, then loop over every index."""
    if batch_dims:
        rows = [
            gather_oracle(params[i], indices[i], axis - 1, batch_dims - 1)
            for i in range(params.shape[0])
        ]
        shape = params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1 :]
        return np.array(rows).reshape(shape) if rows else np.zeros(shape, params.dtype)
    shape = params.shape[:axis] + indices.shape + params.shape[axis + 1 :]
    result = np.zeros(shape, params.dtype)
    for pos in itertools.product(*map(range, indices.shape)):
        target = (slice(None),) * axis + pos
        source = (slice(None),) * axis + (indices[pos],)
        result[target] = params[source]
    return result


@pytest.mark.parametrize("name,x", variants(BASE))
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_values(name, x, axis):
    n = BASE.shape[axis]
    indices = np.array([[n - 1, 0], [0, n - 1], [1 % n, 1 % n]])
    result = es.gather(x, indices, axis=axis)
    assert_kind(result, x)
    np.testing.assert_array_equal(values(result), gather_oracle(BASE, indices, axis % 3, 0))


@SETTINGS
@given(data=st.data())
def test_gather_batch_dims_against_oracle(data):
    rank = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank)))
    params = np.arange(int(np.prod(shape))).reshape(shape)
    axis = data.draw(st.integers(0, rank - 1))
    batch_dims = data.draw(st.integers(0, axis))
    extra = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    index_shape = shape[:batch_dims] + extra
    high = max(shape[axis] - 1, 0)
    indices = data.draw(
        st.lists(
            st.integers(0, high),
            min_size=int(np.prod(index_shape)),
            max_size=int(np.prod(index_shape)),
        )
    )
    indices = np.array(indices, np.int32).reshape(index_shape)
    if shape[axis] == 0 and indices.size:
        with pytest.raises(ValueError, match="out of range"):
            es.gather(params, indices, axis, batch_dims)
        return
    result = es.gather(es.tensor(params), indices, axis=axis - rank, batch_dims=batch_dims)
    assert isinstance(result, es.Tensor)
    np.testing.assert_array_equal(result.numpy(), gather_oracle(params, indices, axis, batch_dims))


def test_gather_negative_batch_dims_and_scalar_index():
    params = np.arange(12).reshape(3, 4)
    indices = np.array([[0, 3], [1, 1], [2, 0]])
    expected = gather_oracle(params, indices, 1, 1)
    np.testing.assert_array_equal(es.gather(params, indices, axis=1, batch_dims=-1), expected)
    np.testing.assert_array_equal(es.gather(params, 2, axis=1), params[:, 2])
    scalar = es.gather(np.arange(3), np.int64(1))
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar == 1
    assert es.gather(es.tensor(np.arange(3)), 2).shape == ()
    assert es.gather(params, [], axis=1).shape == (3, 0)
    broadcast = np.broadcast_to(np.arange(4), (3, 4))
    np.testing.assert_array_equal(es.gather(broadcast, [3, 0], axis=1), broadcast[:, [3, 0]])


@pytest.mark.parametrize(
    "indices,kwargs,match",
    [
        ([0, -1], {}, "index -1 is out of range"),
        ([0, 2], {}, "index 2 is out of range"),
        ([0, 4], {"axis": -1}, "index 4 is out of range"),
        ([0.0, 1.0], {}, "must be integers"),
        ([True, False], {}, "must be integers"),
        ([[0], [1]], {"axis": 1, "batch_dims": 3}, "batch_dims 3 is out of range"),
        ([[0], [1]], {"axis": 1, "batch_dims": -3}, "out of range"),
        ([[0], [1]], {"axis": 0, "batch_dims": 1}, "must be <= axis"),
        ([[0], [1], [2]], {"axis": 1, "batch_dims": 1}, "batch axes differ"),
        ([0], {"axis": 3}, "out of range"),
    ],
)
def test_gather_errors(indices, kwargs, match):
    with pytest.raises(ValueError, match=match):
        es.gather(BASE, indices, **kwargs)


def test_gather_rank_zero_params():
    with pytest.raises(ValueError, match="rank"):
        es.gather(np.float64(1), [0])


# -- boolean_mask -----------------------------------------------------------------------------


@pytest.mark.parametrize("name,x", variants(BASE))
def test_boolean_mask_values(name, x):
    rng = np.random.default_rng(0)
    for axis, mask_shape in [
        (0, (2,)),
        (0, (2, 3)),
        (1, (3, 4)),
        (-1, (4,)),
        (-2, (3,)),
        (0, (2, 3, 4)),
    ]:
        mask = rng.random(mask_shape) < 0.5
        result = es.boolean_mask(x, mask, axis=axis)
        assert_kind(result, x)
        ax = axis % 3
        expected = BASE[(slice(None),) * ax + (mask,)]
        np.testing.assert_array_equal(values(result), expected)


def test_boolean_mask_size_zero_and_kinds():
    assert es.boolean_mask(np.zeros((0, 3)), np.zeros(0, bool)).shape == (0, 3)
    assert es.boolean_mask(BASE, np.zeros((2, 3), bool)).shape == (0, 4)
    result = es.boolean_mask(BASE, es.tensor(np.array([True, False])))
    assert isinstance(result, es.Tensor)
    np.testing.assert_array_equal(result.numpy(), BASE[:1])


@pytest.mark.parametrize(
    "mask,axis,match",
    [
        (np.array([1, 0]), 0, "must be bool"),
        (np.array(True), 0, "rank >= 1"),
        (np.ones(3, bool), 0, "does not match"),
        (np.ones((3, 4), bool), 0, "does not match"),
        (np.ones((4, 1), bool), -1, "does not match"),
        (np.ones(2, bool), 3, "out of range"),
        (np.ones(2, bool), -4, "out of range"),
    ],
)
def test_boolean_mask_errors(mask, axis, match):
    with pytest.raises(ValueError, match=match):
        es.boolean_mask(BASE, mask, axis=axis)


def test_boolean_mask_rank_zero_input():
    with pytest.raises(ValueError, match="rank"):
        es.boolean_mask(np.float64(1), np.ones(1, bool))


# -- nonzero_indices -----------------------------------------------------------------------


@pytest.mark.parametrize("name,x", variants(np.array([[0.0, np.nan, 2.0], [0.0, 0.0, -1.0]])))
def test_nonzero_indices(name, x):
    result = es.nonzero_indices(x)
    assert_kind(result, x)
    got = values(result)
    assert got.dtype == np.int64
    assert got.tolist() == [[0, 1], [0, 2], [1, 2]]


def test_nonzero_indices_shapes_and_errors():
    rng = np.random.default_rng(1)
    data = rng.integers(0, 2, (3, 4, 5))
    np.testing.assert_array_equal(es.nonzero_indices(data), np.argwhere(data))
    assert es.nonzero_indices(np.zeros((2, 3))).shape == (0, 2)
    assert es.nonzero_indices(np.zeros((2, 0, 3))).shape == (0, 3)
    assert es.nonzero_indices(np.array([False, True, True])).tolist() == [[1], [2]]
    with pytest.raises(ValueError, match="rank"):
        es.nonzero_indices(np.float64(3))


# -- where --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,x", variants(BASE))
def test_where_broadcasts(name, x):
    mask = (np.arange(4) % 2).astype(bool)
    result = es.where(mask, x, -1.0)
    assert_kind(result, x)
    np.testing.assert_array_equal(values(result), np.where(mask, BASE, -1.0))
    column = np.arange(3.0).reshape(3, 1)
    np.testing.assert_array_equal(
        values(es.where(BASE > 5, column, x)), np.where(BASE > 5, column, BASE)
    )


def test_where_kinds_and_errors():
    assert isinstance(es.where(es.tensor([True]), 1, 2), es.Tensor)
    assert isinstance(es.where([True], 1, es.tensor([2])), es.Tensor)
    assert isinstance(es.where([True], 1, 2), np.ndarray)
    assert es.where(np.zeros((0, 2), bool), 1, 2).shape == (0, 2)
    with pytest.raises(ValueError):
        es.where(np.ones(3, bool), np.ones(2), 0)


# -- one_hot ------------------------------------------------------------------------------------


def one_hot_oracle(indices, depth, on, off, axis, dtype):
    result = np.full(indices.shape + (depth,), off, dtype)
    for pos in itertools.product(*map(range, indices.shape)):
        if 0 <= indices[pos] < depth:
            result[pos + (indices[pos],)] = on
    return np.moveaxis(result, -1, axis)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_one_hot_values(axis):
    indices = np.array([[0, 3, -1], [2, 5, 1]])
    for _, idx in variants(indices):
        result = es.one_hot(idx, 4, on_value=5, off_value=-2, axis=axis, dtype=np.int16)
        assert_kind(result, idx)
        got = values(result)
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, one_hot_oracle(indices, 4, 5, -2, axis, np.int16))


def test_one_hot_defaults_and_edges():
    result = es.one_hot(np.array([1, 7]), 3)
    assert result.dtype == np.float32
    assert result.tolist() == [[0, 1, 0], [0, 0, 0]]
    assert es.one_hot(np.int64(2), 3).tolist() == [0, 0, 1]
    assert es.one_hot(np.array([0, 1]), 0).shape == (2, 0)
    assert es.one_hot(np.zeros((0, 2), int), 3, axis=0).shape == (3, 0, 2)
    assert isinstance(es.one_hot(es.tensor([0]), 2), es.Tensor)


def test_one_hot_errors():
    with pytest.raises(ValueError, match=">= 0"):
        es.one_hot([0], -1)
    with pytest.raises(ValueError, match="integers"):
        es.one_hot([0.5], 2)
    with pytest.raises(ValueError):
        es.one_hot([[0]], 2, axis=3)
    with pytest.raises(ValueError):
        es.one_hot([[0]], 2, axis=-4)
    with pytest.raises(ValueError, match=r"do(es)? not fit"):
        es.one_hot([0], 2, on_value=300, dtype=np.int8)


# -- pad ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,x", variants(BASE))
@pytest.mark.parametrize(
    "mode,paddings",
    [
        ("constant", [(1, 0), (0, 2), (3, 1)]),
        ("reflect", [(1, 1), (2, 0), (3, 3)]),
        ("symmetric", [(2, 2), (3, 1), (4, 4)]),
        ("REFLECT", [(0, 0), (0, 0), (1, 0)]),
    ],
)
def test_pad_values(name, x, mode, paddings):
    result = es.pad(x, paddings, mode=mode, value=7)
    assert_kind(result, x)
    if mode == "constant":
        expected = np.pad(BASE, paddings, constant_values=7)
    else:
        expected = np.pad(BASE, paddings, mode=mode.lower())
    np.testing.assert_array_equal(values(result), expected)


def test_pad_handwritten_and_edges():
    row = np.array([1, 2, 3])
    assert es.pad(row, [(2, 2)], mode="reflect").tolist() == [3, 2, 1, 2, 3, 2, 1]
    assert es.pad(row, [(3, 3)], mode="symmetric").tolist() == [3, 2, 1, 1, 2, 3, 3, 2, 1]
    assert es.pad(np.float64(2), []).tolist() == 2.0
    assert es.pad(np.zeros((0, 2)), [(1, 1), (0, 0)], value=5).tolist() == [[5, 5], [5, 5]]
    assert es.pad(np.zeros((0, 2)), [(0, 0), (1, 1)], mode="reflect").shape == (0, 4)


@pytest.mark.parametrize(
    "paddings,mode,match",
    [
        ([(0, 0), (0, 0), (4, 0)], "reflect", "less than the length 4"),
        ([(0, 0), (3, 0), (0, 0)], "reflect", "less than the length 3"),
        ([(0, 0), (0, 0), (0, 5)], "symmetric", "at most the length 4"),
        ([(0, 0), (-1, 0), (0, 0)], "constant", ">= 0"),
        ([(0, 0), (0, 0)], "constant", r"shape \(3, 2\)"),
        ([0, 0, 0], "constant", r"shape \(3, 2\)"),
        ([(0, 0)] * 3, "edge", "mode must be one of"),
    ],
)
def test_pad_errors(paddings, mode, match):
    with pytest.raises(ValueError, match=match):
        es.pad(BASE, paddings, mode=mode)


@pytest.mark.parametrize(
    "paddings",
    [[(True, 0)], [[True, 1]], [(0, np.True_)], [(True, False)], [np.array([True, False])]],
)
def test_pad_refuses_every_bool_count(paddings):
    # a review: a bool beside an int became an int64 array first, so (True, 0) padded by one
    with pytest.raises(TypeError, match="not bool"):
        es.pad(np.arange(3), paddings)


def test_pad_symmetric_at_limit_and_reflect_of_empty_axis():
    np.testing.assert_array_equal(
        es.pad(BASE, [(2, 2), (3, 3), (4, 4)], mode="symmetric"),
        np.pad(BASE, [(2, 2), (3, 3), (4, 4)], mode="symmetric"),
    )
    with pytest.raises(ValueError, match="less than the length 0"):
        es.pad(np.zeros((0, 2)), [(1, 0), (0, 0)], mode="reflect")


@pytest.mark.parametrize("value", [[[1, 2], [3, 4]], [7, 9], np.array([1.0])])
def test_pad_value_is_a_scalar(value):
    """NumPy's per-axis constant_values leaked through: [7, 9] padded 7 before and 9 after
    (a review); TensorFlow's constant_values is one scalar."""
    with pytest.raises(es.LayoutError, match=r"value must be a scalar, got shape"):
        es.pad(np.zeros((2, 2)), [(1, 1), (1, 1)], value=value)
    assert es.pad(np.zeros((1,)), [(1, 0)], value=np.float64(5)).tolist() == [5.0, 0.0]


@pytest.mark.parametrize(
    ("dtype", "scalar"),
    [(np.float32, 1.5), (np.float16, 0.0), (np.int8, 3), (np.uint8, True), (np.complex64, 2j)],
)
def test_where_keeps_python_numbers_weak(dtype: Any, scalar: Any) -> None:
    # a review: the scalar became a strong float64/int64 array, widening the result
    mask = np.array([True, False, True])
    x = np.arange(3).astype(dtype)
    for args in ((mask, x, scalar), (mask, scalar, x)):
        want = np.where(*args)
        got = es.where(*args)
        assert got.dtype == want.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)
    assert es.where(mask, es.as_tensor(x), scalar).dtype == np.dtype(dtype)
    with pytest.raises(es.OutOfRangeError):
        es.where(mask, np.zeros(3, np.int8), 1000)  # (NumPy wraps it: -24)


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.one_hot(np.array([1, 2], "m8[s]"), 3),
        lambda: es.gather(np.arange(6).reshape(2, 3), np.array([1, 0], "m8[s]"), axis=1),
        lambda: es.gather(np.arange(6).reshape(2, 3), np.array([True, False]), axis=1),
    ],
)
def test_timedelta_or_bool_indices_are_no_integers(call: Any) -> None:
    # (timedelta64 is an np.integer subtype: one_hot raised an IndexError, gather took them)
    with pytest.raises(ValueError, match="indices must be integers"):
        call()
