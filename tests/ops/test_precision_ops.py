"""bfloat16 conversion: round to nearest even against a bit-level oracle."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ops_layouts import assert_kind, values, variants

import einstride as es

BF16 = np.dtype(ml_dtypes.bfloat16)


def rne_bits(x: np.ndarray) -> np.ndarray:
    """The bfloat16 bit pattern of finite float32 values, by round-to-nearest-even on bits."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=30)
)
def test_round_to_nearest_even(xs):
    x = np.array(xs, np.float32)
    reduced = es.to_reduced_precision(x)
    assert reduced.dtype == BF16
    np.testing.assert_array_equal(reduced.view(np.uint16), rne_bits(x))
    full = es.to_full_precision(reduced)
    assert full.dtype == np.float32
    np.testing.assert_array_equal(full.view(np.uint32), rne_bits(x).astype(np.uint32) << 16)


def test_ties_specials_and_exact_round_trip():
    one = np.float32(1.0)
    ulp = np.float32(2.0**-7)  # bfloat16 spacing at 1
    ties = np.array([one + ulp / 2, one + 3 * ulp / 2, -(one + ulp / 2)], np.float32)
    assert es.to_full_precision(es.to_reduced_precision(ties)).tolist() == [1.0, 1 + 2 * ulp, -1.0]
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4e38], np.float32)
    back = es.to_full_precision(es.to_reduced_precision(special))
    assert np.isposinf(back[0]) and np.isneginf(back[1]) and np.isnan(back[2])
    assert back[3] == 0 and np.signbit(back[4]) and np.isposinf(back[5])
    exact = np.arange(-256, 256, dtype=np.float32)
    np.testing.assert_array_equal(es.to_full_precision(es.to_reduced_precision(exact)), exact)


@pytest.mark.parametrize("name,x", variants(np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)))
def test_layouts_kinds_and_predicate(name, x):
    reduced = es.to_reduced_precision(x)
    assert_kind(reduced, x)
    assert es.is_reduced_precision(reduced) and not es.is_reduced_precision(x)
    got = values(reduced)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got.view(np.uint16), rne_bits(values(x)))
    full = es.to_full_precision(reduced)
    assert_kind(full, x)
    assert values(full).shape == (3, 4)
    assert es.to_reduced_precision(np.zeros((0, 2), np.float32)).shape == (0, 2)
    assert es.to_reduced_precision(np.float32(2)).shape == ()


def test_other_float_widths_and_errors():
    assert es.to_reduced_precision(np.array([0.1], np.float64)).dtype == BF16
    assert es.to_reduced_precision(np.array([0.5], np.float16)).tolist() == [0.5]
    with pytest.raises(ValueError, match="already bfloat16"):
        es.to_reduced_precision(np.zeros(2, BF16))
    with pytest.raises(ValueError, match="floating dtype"):
        es.to_reduced_precision(np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="floating dtype"):
        es.to_reduced_precision(np.zeros(2, np.complex64))
    with pytest.raises(ValueError, match="bfloat16 tensor is required"):
        es.to_full_precision(np.zeros(2, np.float32))
    assert not es.is_reduced_precision([1.0, 2.0])


def _bfloat16_nearest_even(x: float) -> float:
    """Round a normal float64 to bfloat16 from the definition: the two neighbours one bfloat16
    ulp apart, the nearer one, ties to the even mantissa (all steps exact in float64)."""
    ulp = 2.0 ** (math.floor(math.log2(abs(x))) - 7)
    low = math.floor(x / ulp) * ulp
    rest = x - low
    if rest > ulp / 2 or (rest == ulp / 2 and math.floor(x / ulp) % 2 == 1):
        return low + ulp
    return low


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-1e30, max_value=1e30, allow_nan=False).filter(lambda v: abs(v) > 1e-30))
def test_float64_rounds_once_to_nearest_even(x: float) -> None:
    got = float(es.to_reduced_precision(np.array([x]))[0])
    assert got == _bfloat16_nearest_even(x)


def test_float64_double_rounding_case() -> None:
    x = 1 + 2**-8 + 2**-30  # float32 rounding first would land on the tie 1 + 2**-8
    assert float(es.to_reduced_precision(np.array([x]))[0]) == 1.0078125


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is float64 here")
def test_long_double_rounds_to_bfloat16_once() -> None:
    """A long double went through float64 first: 1 + 2**-8 + 2**-60 landed on the tie and
    rounded to 1.0, not to the nearest 1.0078125 (a review)."""
    one = np.longdouble(1)
    x = np.array(
        [one + one / 2**8 + one / 2**60, one + one / 2**8, -(one + one / 2**8 + one / 2**60)]
    )
    got = es.to_reduced_precision(x)
    assert np.asarray(got).astype(np.float64).tolist() == [1 + 2**-7, 1.0, -(1 + 2**-7)]
