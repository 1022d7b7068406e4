"""Initializers: fan formulas, bounds and resulting standard deviations on large samples."""

from __future__ import annotations

import math

import numpy as np
import pytest

import einstride as es
from einstride.ops.init import TRUNCATED_STD, fans

# fan_in + fan_out and fan_in of the shapes below, written out by hand.
SHAPES = {
    (400, 300): (700, 400),
    (3, 5, 200, 100): (4500, 3000),
    (7, 150, 90): (1680, 1050),
}
UNIFORM = {
    es.glorot_uniform: lambda avg, fan_in: math.sqrt(6 / avg),
    es.he_uniform: lambda avg, fan_in: math.sqrt(6 / fan_in),
    es.lecun_uniform: lambda avg, fan_in: math.sqrt(3 / fan_in),
}
NORMAL = {
    es.glorot_normal: lambda avg, fan_in: math.sqrt(2 / avg),
    es.he_normal: lambda avg, fan_in: math.sqrt(2 / fan_in),
    es.lecun_normal: lambda avg, fan_in: math.sqrt(1 / fan_in),
}


def test_fans():
    assert fans((4, 5)) == (4, 5)
    assert fans((3, 5, 200, 100)) == (3 * 5 * 200, 3 * 5 * 100)
    assert fans((7, 150, 90)) == (7 * 150, 7 * 90)
    assert fans((0, 5)) == (0, 5)
    for bad in [(), (5,)]:
        with pytest.raises(ValueError, match="rank >= 2"):
            fans(bad)


def test_truncated_std_constant():
    # The std of a unit normal truncated at +-2 (Keras' 0.87962566103423978).
    assert pytest.approx(0.87962566103423978, abs=1e-15) == TRUNCATED_STD


@pytest.mark.parametrize("init", list(UNIFORM))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_uniform_initializers(init, shape):
    avg, fan_in = SHAPES[shape]
    limit = UNIFORM[init](avg, fan_in)
    w = init(shape, seed=0, dtype=np.float64)
    assert isinstance(w, es.Tensor) and w.shape == shape
    x = w.numpy().reshape(-1)
    n = x.size
    assert x.min() >= -limit and x.max() < limit
    assert x.max() > 0.999 * limit and x.min() < -0.999 * limit
    within = 5 * (limit / math.sqrt(3)) / math.sqrt(2 * n)
    assert abs(x.std() - limit / math.sqrt(3)) <= within
    assert abs(x.mean()) <= 5 * limit / math.sqrt(3 * n)


@pytest.mark.parametrize("init", list(NORMAL))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_normal_initializers_have_the_target_std(init, shape):
    avg, fan_in = SHAPES[shape]
    target = NORMAL[init](avg, fan_in)
    w = init(shape, seed=1, dtype=np.float64)
    assert isinstance(w, es.Tensor) and w.shape == shape
    x = w.numpy().reshape(-1)
    n = x.size
    # A truncated normal: bounded by 2 of the *untruncated* standard deviations.
    cut = 2 * target / TRUNCATED_STD
    assert np.abs(x).max() <= cut and np.abs(x).max() > 0.99 * cut
    assert abs(x.std() - target) <= 5 * target / math.sqrt(2 * n)
    assert abs(x.mean()) <= 5 * target / math.sqrt(n)


@pytest.mark.parametrize("init", [*UNIFORM, *NORMAL, es.orthogonal])
def test_initializers_reproducible_and_checked(init):
    a = init((4, 6), seed=3).numpy()
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, init((4, 6), seed=3).numpy())
    assert not np.array_equal(a, init((4, 6), seed=4).numpy())
    assert init((0, 6), seed=0).shape == (0, 6)
    assert init((3, 0, 2), seed=0).shape == (3, 0, 2)
    for bad in [(5,), ()]:
        with pytest.raises(ValueError, match="rank >= 2"):
            init(bad)
    with pytest.raises(ValueError, match="floating dtype"):
        init((2, 2), dtype=np.int64)


@pytest.mark.parametrize("shape", [(5, 5), (8, 3), (3, 8), (2, 3, 4), (4, 3, 2)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_orthogonal(shape, gain):
    w = es.orthogonal(shape, gain, seed=5, dtype=np.float64)
    assert isinstance(w, es.Tensor) and w.shape == shape
    flat = w.numpy().reshape(-1, shape[-1])
    rows, cols = flat.shape
    gram = flat.T @ flat if rows >= cols else flat @ flat.T
    np.testing.assert_allclose(gram, gain**2 * np.eye(min(rows, cols)), atol=1e-12)


def test_orthogonal_is_sign_corrected():
    # Sign correction makes the distribution uniform (Haar): over many draws the diagonal of
    # the 2x2 result averages to 0 for each position instead of being biased positive.
    diagonals = np.array(
        [np.diag(es.orthogonal((2, 2), seed=s, dtype=np.float64).numpy()) for s in range(400)]
    )
    assert np.abs(diagonals.mean(axis=0)).max() < 5 * np.sqrt(0.5 / 400)
    with pytest.raises(ValueError, match="gain"):
        es.orthogonal((2, 2), float("inf"))
