"""Creation functions: as NumPy, Tensor results (the *_like follow their input)."""

from __future__ import annotations

import numpy as np
import pytest
from ops_layouts import assert_kind, shares, values, variants

import einstride as es


@pytest.mark.parametrize(
    "make,expected",
    [
        (lambda: es.zeros((2, 3)), np.zeros((2, 3))),
        (lambda: es.zeros(4, dtype=np.int8), np.zeros(4, np.int8)),
        (lambda: es.ones((3, 0)), np.ones((3, 0))),
        (lambda: es.ones((), dtype=bool), np.ones((), bool)),
        (lambda: es.full((2, 2), 3), np.full((2, 2), 3)),
        (lambda: es.full(3, 1.5, dtype=np.float32), np.full(3, 1.5, np.float32)),
        (lambda: es.arange(5), np.arange(5)),
        (lambda: es.arange(1, 2, 0.25), np.arange(1, 2, 0.25)),
        (lambda: es.arange(5, 0, -2), np.arange(5, 0, -2)),
        (lambda: es.arange(3, 1), np.arange(3, 1)),
        (lambda: es.arange(4, dtype=np.float32), np.arange(4, dtype=np.float32)),
        (lambda: es.linspace(0, 1, 5), np.linspace(0, 1, 5)),
        (lambda: es.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False)),
        (lambda: es.linspace(2, 3, 0), np.linspace(2, 3, 0)),
        (lambda: es.linspace(0, 6, 4, dtype=int), np.linspace(0, 6, 4, dtype=int)),
    ],
)
def test_creation_matches_numpy(make, expected):
    result = make()
    assert isinstance(result, es.Tensor)
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    assert result.is_dense
    np.testing.assert_array_equal(result.numpy(), expected)


@pytest.mark.parametrize("name,x", variants(np.arange(6, dtype=np.int16).reshape(2, 3)))
def test_like_functions_follow_the_input(name, x):
    for result, fill in [
        (es.zeros_like(x), 0),
        (es.ones_like(x), 1),
        (es.full_like(x, 7), 7),
    ]:
        assert_kind(result, x)
        got = values(result)
        assert got.dtype == np.int16 and got.shape == (2, 3)
        assert (got == fill).all() and got.flags.c_contiguous
        assert not shares(result, x)
    assert values(es.zeros_like(x, dtype=np.float32)).dtype == np.float32
    assert values(es.full_like(x, 2.5, dtype=float)).tolist() == [[2.5] * 3] * 2


def test_creation_errors():
    for bad in [lambda: es.zeros((2, -1)), lambda: es.ones(-3), lambda: es.full((-1,), 0)]:
        with pytest.raises(ValueError, match="negative"):
            bad()
    with pytest.raises(ValueError, match="zero"):
        es.arange(0, 5, 0)
    with pytest.raises(ValueError):
        es.linspace(0, 1, -1)
    with pytest.raises(ValueError):
        es.zeros((2**40, 2**40))
    with pytest.raises(TypeError):
        es.zeros((2.5,))


def test_arange_and_linspace_values_the_integer_dtype_cannot_hold_are_out_of_range() -> None:
    # a review: arange raised a bare OverflowError for a bound the dtype cannot hold, and
    # arange(0, 300, int8) / linspace(0, 1000, 3, int8) wrapped around silently, where
    # full(1, 300, int8) raises
    calls = [
        lambda: es.arange(-1, 5, dtype=np.uint8),
        lambda: es.arange(0, 1000, 500, dtype=np.int8),
        lambda: es.arange(2**64, 2**64 + 2, dtype=np.uint64),
        lambda: es.arange(2**70, -(10**20), 2**70, dtype="M8[s]"),
        lambda: es.arange(0, 300, dtype=np.int8),
        lambda: es.arange(0.0, 300.0, dtype=np.int8),
        lambda: es.arange(5, -3, -1, dtype=np.uint8),
        lambda: es.arange(0.5, 100, 0.5, dtype=np.int8),  # (NumPy steps by 1 here: to 198)
        lambda: es.linspace(0, 1000, 3, dtype=np.int8),
        lambda: es.linspace(-128.5, 0, 3, dtype=np.int8),
    ]
    for call in calls:
        with pytest.raises(es.OutOfRangeError, match=r"^(arange|linspace): "):
            call()
    fits = [
        (es.arange(0, 128, dtype=np.int8), np.arange(0, 128, dtype=np.int8)),
        (es.arange(-128, 0, 64, dtype=np.int8), np.arange(-128, 0, 64, dtype=np.int8)),
        (es.arange(0.5, 127.9, dtype=np.int8), np.arange(0.5, 127.9, dtype=np.int8)),
        (es.arange(-128.5, -128, 1, dtype=np.int8), np.array([-128], np.int8)),
        (es.linspace(0, 128, 2, endpoint=False, dtype=np.int8), np.array([0, 64], np.int8)),
        (es.linspace(-1.5, 127.9, 4, dtype=np.int8), np.linspace(-1.5, 127.9, 4, dtype=np.int8)),
    ]
    for got, expected in fits:
        np.testing.assert_array_equal(got.numpy(), expected)
        assert got.dtype == expected.dtype


def test_a_fill_value_that_does_not_broadcast_is_a_layout_error_naming_it() -> None:
    # a review: NumPy's "could not broadcast input array from shape (2,) into shape (2,3)"
    for shape, value in (((2, 3), [1, 2]), (3, [[1], [2]])):
        with pytest.raises(es.LayoutError, match=r"^full: fill_value of shape"):
            es.full(shape, value)
    assert es.full((2, 3), [[1], [2]]).numpy().tolist() == [[1, 1, 1], [2, 2, 2]]


def test_an_arange_of_no_finite_length_says_so() -> None:
    # a review: NumPy's "Maximum allowed size exceeded" / "arange: cannot compute length"
    for bounds in ((0, np.inf), (0, np.nan), (0, 1, np.nan), (np.inf, 1, -1)):
        with pytest.raises(ValueError, match=r"^arange: the length from .* is not finite"):
            es.arange(*bounds)
