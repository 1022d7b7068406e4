"""``einstride.tensordot`` against NumPy's, ``einstride.transpose`` with NumPy's calling
convention, and opt_einsum's backend protocol (``backend="einstride"``) on our functions."""

from __future__ import annotations

import numpy as np
import opt_einsum as oe
import pytest
from hypothesis import given
from hypothesis import strategies as st

import einstride as es
from einstride import numpy_compat


@st.composite
def tensordot_cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, object]:
    """Two operands and an ``axes`` that NumPy accepts: a count, or a pair of axis lists
    (negative axes and ints for one axis included), possibly in any order."""
    shape_a = draw(st.lists(st.integers(1, 4), max_size=4))
    count = draw(st.integers(0, len(shape_a)))
    picked = draw(st.permutations(range(len(shape_a))))[:count]
    free_b = draw(st.lists(st.integers(1, 4), max_size=3))
    shape_b = [shape_a[i] for i in picked] + free_b
    order = draw(st.permutations(range(len(shape_b))))
    shape_b = [shape_b[k] for k in order]
    axes_b = [order.index(k) for k in range(count)]
    form = draw(st.sampled_from(["pair", "negative", "count", "0-d count", "int"]))
    axes: object
    if form in ("count", "0-d count"):
        shape_b = shape_a[len(shape_a) - count :] + free_b
        axes = count if form == "count" else np.array(count)  # 0-d: refused until a review
    elif form == "int" and count == 1:
        axes = (picked[0], axes_b[0])
    elif form == "negative":
        axes = ([i - len(shape_a) for i in picked], [j - len(shape_b) for j in axes_b])
    else:
        axes = (list(picked), axes_b)
    dtype = draw(st.sampled_from([np.float64, np.int32, np.complex64, np.bool_]))
    a = (np.arange(int(np.prod(shape_a))) % 5 + 1).astype(dtype).reshape(shape_a)
    b = (np.arange(int(np.prod(shape_b))) % 3 + 1).astype(dtype).reshape(shape_b)
    if draw(st.booleans()) and a.ndim >= 2:
        a = np.asfortranarray(a)  # a strided layout
    return a, b, axes


@given(tensordot_cases())
def test_tensordot_matches_numpy(case):
    a, b, axes = case
    expected = np.tensordot(a, b, axes)
    got = es.tensordot(a, b, axes)
    assert type(got) is np.ndarray
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_tensordot_defaults_to_two_axes_and_keeps_tensors():
    a = es.as_tensor(np.arange(24.0).reshape(2, 3, 4))
    b = es.as_tensor(np.arange(24.0).reshape(3, 4, 2))
    got = es.tensordot(a, b)
    assert isinstance(got, es.Tensor)
    np.testing.assert_array_equal(got.numpy(), np.tensordot(a.numpy(), b.numpy()))
    assert es.tensordot([1, 2], [3, 4], 1).shape == ()  # lists go through np.asarray


def test_tensordot_is_a_planned_einsum():
    assert numpy_compat.tensordot_equation((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])) == "abc,cbd->ad"
    labels = numpy_compat.tensordot_equation((2,) * 30, (2,) * 30, 0)  # past 52 letters
    assert len(set(labels.split("->")[1])) == 60


@pytest.mark.parametrize(
    ("axes", "numpy_error"),
    [
        (([0], [1]), ValueError),  # sizes differ (shape-mismatch for sum)
        (([1, 2], [0]), ValueError),  # lists of different lengths
        (([0, 0], [0, 1]), ValueError),  # duplicate axes
        (1.5, TypeError),
        ("ab", TypeError),
        (([[1]], [[0]]), TypeError),
        (([1],), ValueError),  # not a pair
    ],
)
def test_tensordot_errors_are_numpys_classes(axes, numpy_error):
    a, b = np.ones((2, 3, 4)), np.ones((3, 4, 5))
    with pytest.raises(numpy_error):
        np.tensordot(a, b, axes)
    with pytest.raises(numpy_error) as caught:
        es.tensordot(a, b, axes)
    assert "tensordot" in str(caught.value)


@pytest.mark.parametrize("axes", [4, ([5], [0]), ([0], [-4])])
def test_tensordot_axis_out_of_range_is_an_einsum_error(axes):
    """NumPy raises a bare IndexError here; ours is an EinsumError naming the axis."""
    with pytest.raises(es.EinsumError, match="tensordot"):
        es.tensordot(np.ones((2, 3, 4)), np.ones((3, 4, 5)), axes)


def test_tensordot_rejects_a_negative_count():
    """NumPy silently gives an outer product for axes=-1; a negative count is refused."""
    with pytest.raises(es.EinsumError, match=">= 0"):
        es.tensordot(np.ones(2), np.ones(2), -1)


def test_transpose_takes_numpys_positional_axes_and_none():
    x = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(es.transpose(x, (2, 0, 1)), np.transpose(x, (2, 0, 1)))
    np.testing.assert_array_equal(es.transpose(x, None), np.transpose(x, None))
    np.testing.assert_array_equal(es.transpose(x), np.transpose(x))


def test_opt_einsum_backend_calls_our_functions(monkeypatch):
    calls = []
    for name in ("tensordot", "transpose", "einsum"):
        original = getattr(es, name)

        def spy(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(es, name, spy)
    cached = oe.backends.dispatch._cached_funcs  # forget earlier lookups of our functions
    monkeypatch.setattr(
        oe.backends.dispatch,
        "_cached_funcs",
        {key: fn for key, fn in cached.items() if key[1] != "einstride"},
    )
    x, y, z = np.random.rand(3, 4), np.random.rand(4, 5), np.random.rand(6, 5, 5)
    got = oe.contract("ij,jk,lkk->il", x, y, z, backend="einstride")
    np.testing.assert_allclose(got, np.einsum("ij,jk,lkk->il", x, y, z))
    assert "tensordot" in calls and "einsum" in calls


def test_opt_einsum_infers_the_einstride_backend_from_tensors():
    x, y = es.as_tensor(np.random.rand(3, 4)), es.as_tensor(np.random.rand(4, 5))
    got = oe.contract("ij,jk->ik", x, y)
    assert isinstance(got, es.Tensor)
    np.testing.assert_allclose(got.numpy(), x.numpy() @ y.numpy())


@pytest.mark.parametrize("wrap", [np.asarray, es.as_tensor])
def test_opt_einsum_constants_with_the_einstride_backend(wrap):
    """The constants= path (was KeyError: 'einstride', the first exception of a chain whose
    cause was the missing tensordot)."""
    a, b, c = np.random.rand(2, 3), np.random.rand(3, 4), np.random.rand(4, 5)
    expr = oe.contract_expression("ij,jk,kl->il", a.shape, wrap(b), c.shape, constants=[1])
    for _ in range(2):  # the second call reuses the evaluated constants
        got = expr(a, c, backend="einstride")
        np.testing.assert_allclose(np.asarray(got), a @ b @ c)


def test_numpy_compat_exports():
    assert es.tensordot is numpy_compat.tensordot
    assert set(numpy_compat.__all__) == {"tensordot", "tensordot_equation"}
