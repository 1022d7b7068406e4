"""Arguments the ops read as NumPy reads them: a 0-d integer array is one integer wherever
an integer is (a split count, a shape, a length, an axis: it was an axis and not a count,
a review), and a fill value is cast into the dtype as NumPy's assignment casts it, or
refused with an ``OutOfRangeError`` naming the function (NumPy's bare messages named
none, and ``one_hot`` refused a complex number that ``full`` and ``pad`` cast)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import einstride as es

COUNT = np.array(3)  # a 0-d integer array


@pytest.mark.parametrize(
    ("ours", "expected"),
    [
        (lambda: es.split(np.arange(6), COUNT), np.split(np.arange(6), 3)),
        (lambda: es.split(np.arange(6), [np.array(2), 4]), [np.arange(2), np.arange(2, 6)]),
        (lambda: es.reshape(np.arange(6), np.array(6)), np.arange(6)),
        (lambda: es.reshape(np.arange(6), (COUNT, 2)), np.arange(6).reshape(3, 2)),
        (lambda: es.tensor(np.arange(6)).reshape(np.array(6)), np.arange(6)),
        (lambda: es.tile(np.arange(2), COUNT), np.tile(np.arange(2), 3)),
        (lambda: es.expand_dims(np.arange(2), np.array(0)), np.arange(2)[None]),
        (lambda: es.squeeze(np.ones((2, 1)), np.array(1)), np.ones(2)),
        (lambda: es.reverse(np.arange(3), np.array(0)), np.arange(3)[::-1]),
        (lambda: es.broadcast_to(np.arange(1), COUNT), np.zeros(3, int)),
        (lambda: es.eye(2, batch_shape=COUNT), np.broadcast_to(np.eye(2), (3, 2, 2))),
    ],
)
def test_a_0d_integer_array_is_one_integer(ours: Callable[[], Any], expected: Any) -> None:
    got = ours()
    if isinstance(expected, list):
        assert len(got) == len(expected)
        for part, want in zip(got, expected):
            np.testing.assert_array_equal(np.asarray(part), want)
    else:
        np.testing.assert_array_equal(np.asarray(got), expected)


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.split(np.arange(6), np.array(3.0)),
        lambda: es.split(np.arange(6), np.array(True)),
        lambda: es.reshape(np.arange(6), np.array(6.0)),
        lambda: es.split(np.arange(6), True),
    ],
)
def test_a_0d_array_of_no_integer_is_still_refused(call: Callable[[], Any]) -> None:
    with pytest.raises(TypeError, match=r"split size|reshape shape|split count"):
        call()


def test_a_rank_2_array_as_a_shape_is_a_layout_error_in_the_layout_too() -> None:
    with pytest.raises(es.LayoutError, match="Layout shape must be an int or a 1-D sequence"):
        es.Layout(np.ones((2, 2), int), (1, 1))
    with pytest.raises(es.LayoutError, match="reshape shape must be an int or a 1-D sequence"):
        es.reshape(np.arange(4), np.ones((2, 2), int))


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: es.full(2, "a", dtype=np.float64), "full: 'a' cannot be converted to float64"),
        (lambda: es.full_like(np.ones(2), "x"), "full_like: 'x' cannot be converted"),
        (lambda: es.pad(np.ones(3), [(1, 1)], value="a"), "pad value: 'a' cannot be converted"),
        (lambda: es.one_hot([0], 2, on_value="a"), "one_hot: on_value does not fit: 'a'"),
        (lambda: es.one_hot([0], 2, off_value="b"), "one_hot: off_value does not fit: 'b'"),
        (lambda: es.full(2, ["1", "x"], dtype=np.int64), "full: invalid literal"),
        (lambda: es.full(2, 10**400, dtype=np.float64), "full: int too large"),
    ],
)
def test_a_fill_value_that_is_no_number_is_out_of_range_naming_the_op(
    call: Callable[[], Any], words: str
) -> None:
    with pytest.raises(es.OutOfRangeError) as caught:
        call()
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("ours", "numpys"),
    [
        (lambda: es.full(2, 1j, dtype=np.float64), lambda: np.full(2, 1j, np.float64)),
        (lambda: es.full(2, 2 + 1j, dtype=np.int8), lambda: np.full(2, 2 + 1j, np.int8)),
        (
            lambda: es.pad(np.ones(2), [(1, 0)], value=3 + 1j),
            lambda: np.pad(np.ones(2), [(1, 0)], constant_values=3 + 1j),
        ),
        (
            lambda: es.one_hot([1], 2, on_value=2 + 1j, dtype=np.float32),
            lambda: np.array([[0, 2]], np.float32),
        ),
        (lambda: es.one_hot([1], 2, on_value=2.7, dtype=np.int8), lambda: np.int8([[0, 2]])),
        (lambda: es.full(2, "7", dtype=np.float32), lambda: np.full(2, "7", np.float32)),
        (
            lambda: es.one_hot([0], 2, on_value=5j, dtype=np.complex64),
            lambda: np.complex64([[5j, 0]]),
        ),
    ],
)
def test_a_fill_value_is_cast_as_numpy_casts_it(
    ours: Callable[[], Any], numpys: Callable[[], Any]
) -> None:
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        got = np.asarray(ours())
    with warnings.catch_warnings(record=True) as numpy_warned:
        warnings.simplefilter("always")
        expected = numpys()
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype
    if numpy_warned:  # NumPy's ComplexWarning, where the imaginary part is dropped
        assert {type(w.message) for w in ours_warned} == {type(w.message) for w in numpy_warned}


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: es.full(2, None, dtype=np.int8), "full: None cannot be converted to int8"),
        (lambda: es.full(2, object(), dtype=np.float32), "full: <object object"),
        (
            lambda: es.pad(np.ones(2, np.int64), [(1, 0)], value=None),
            "pad value: None cannot be converted",
        ),
        (
            lambda: es.one_hot([0], 2, on_value=None, dtype=np.int8),
            "one_hot: on_value does not fit: None",
        ),
    ],
)
def test_a_fill_value_of_no_kind_the_dtype_takes_is_a_type_error_naming_the_op(
    call: Callable[[], Any], words: str
) -> None:
    # (None into a float is NaN, as NumPy casts it)
    with pytest.raises(TypeError) as caught:
        call()
    assert words in str(caught.value)


def test_a_string_into_bfloat16_is_a_type_error_naming_the_op() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with pytest.raises(TypeError, match="full: '3' cannot be converted to bfloat16"):
        es.full(2, "3", dtype=ml_dtypes.bfloat16)


@pytest.mark.parametrize("mode", ["REFLECT", "symmetric"])
def test_pad_reads_no_value_it_does_not_use(mode: str) -> None:
    # a review: the fill value was converted before the mode was known
    np.testing.assert_array_equal(
        es.pad(np.arange(3.0), [[1, 1]], mode=mode, value="a"),
        np.pad(np.arange(3.0), [[1, 1]], mode=mode.lower()),
    )
    assert es.pad(np.zeros(()), [], value="a").shape == ()
    with pytest.raises(es.OutOfRangeError):  # (as before: a value the dtype cannot hold)
        es.pad(np.zeros(3, np.int8), [[1, 1]], mode=mode, value=1000)


@pytest.mark.parametrize(
    ("shape", "error", "words"),
    [
        (np.array([[6]]), es.LayoutError, "resize length must be an int or a 1-D sequence"),
        ("x", TypeError, "resize length must be an integer"),
        (2**62, es.LayoutError, "resize: new shape (4611686018427387904,) has a negative"),
        (np.array(6), None, ""),
    ],
)
def test_resize_names_a_shape_it_cannot_take(shape: Any, error: Any, words: str) -> None:
    # a review: a rank-2 array was said to have a negative length
    if error is None:
        assert es.resize(np.ones((2, 3)), shape).shape == (6,)
        return
    with pytest.raises(error) as caught:
        es.resize(np.ones((2, 3)), shape)
    assert words in str(caught.value)


def _huge_view() -> np.ndarray:
    """10**14 elements of one float: a view that no conversion may copy."""
    return np.broadcast_to(np.ones(1), (10**7, 10**7))


@pytest.mark.parametrize(
    ("call", "kind", "words"),
    [
        (lambda: es.full(3, _huge_view()), es.LayoutError, "full: fill_value of shape"),
        (lambda: es.full_like(np.ones(3), _huge_view()), es.LayoutError, "full_like: fill_value"),
        (lambda: es.full_like(np.ones((2, 3)), [1, 0]), es.LayoutError, "full_like: fill_value"),
        (lambda: es.one_hot([0], 2, on_value=_huge_view()), es.LayoutError, "must be a scalar"),
        (lambda: es.arange(0, 5, _huge_view()), TypeError, "step must be a scalar"),
        (lambda: es.pad(np.ones(3), [(1, 1)], mode=_huge_view()), ValueError, "not a ndarray"),
    ],
)
def test_an_array_where_a_scalar_or_a_fitting_shape_belongs_is_refused_unconverted(
    call: Any, kind: type[Exception], words: str
) -> None:
    # (each converted or compared the whole view first: NumPy's MemoryError for 728 TiB, or
    # 25-200 MB under a 1 MB limit; full_like's mismatch was NumPy's unnamed message)
    previous = es.memory.set_memory_limit(10**6)
    try:
        with pytest.raises(kind, match=words):
            call()
    finally:
        es.memory.set_memory_limit(previous)


def test_a_fill_value_with_leading_length_one_axes_fits_as_numpy_takes_it() -> None:
    # (a review: the shape check refused what NumPy's copyto takes)
    for got, want in (
        (es.full_like(np.zeros((2, 3)), np.ones((1, 2, 3))), np.full_like(np.zeros((2, 3)), 1)),
        (es.full((2, 3), np.arange(3.0).reshape(1, 1, 3)), np.full((2, 3), np.arange(3.0))),
    ):
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(ValueError, match="pad: mode must be one of"):  # NumPy's class
        es.pad(np.arange(3.0), [(1, 1)], mode=None)  # type: ignore[arg-type]
