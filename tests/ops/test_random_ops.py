"""Seeded random sampling: reproducibility, dtypes, bounds and statistics."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import einstride as es
from einstride.ops.init import TRUNCATED_STD

N = 200_000  # large enough for tight statistical tolerances, small enough to be quick
SAMPLERS = [es.random_uniform, es.random_normal, es.truncated_normal]


def within(value, expected, standard_error, sigmas=5.0):
    """``value`` matches ``expected`` up to ``sigmas`` standard errors of the estimate."""
    assert abs(value - expected) <= sigmas * standard_error, (value, expected, standard_error)


@pytest.mark.parametrize("sample", SAMPLERS)
def test_same_seed_same_values(sample):
    a, b = sample((3, 4), seed=11), sample((3, 4), seed=11)
    assert isinstance(a, es.Tensor) and a.dtype == np.float32 and a.shape == (3, 4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), sample((3, 4), seed=12).numpy())
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    first = sample(10, seed=g1).numpy()
    np.testing.assert_array_equal(first, sample(10, seed=g2).numpy())
    assert not np.array_equal(first, sample(10, seed=g1).numpy())  # the generator advanced
    assert sample((), seed=0).shape == ()
    assert sample((2, 0), seed=0).shape == (2, 0)


@pytest.mark.parametrize("sample", SAMPLERS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16])
def test_floating_dtypes(sample, dtype):
    result = sample((5,), seed=1, dtype=dtype)
    assert result.dtype == np.dtype(dtype)
    assert np.isfinite(result.numpy().astype(np.float64)).all()


@pytest.mark.parametrize("sample", SAMPLERS)
def test_argument_errors(sample):
    with pytest.raises(ValueError, match="floating dtype"):
        sample(3, dtype=np.int32)
    with pytest.raises(ValueError, match="floating dtype"):
        sample(3, dtype=np.complex64)
    with pytest.raises(ValueError):
        sample((2, -1))
    with pytest.raises(TypeError):
        sample(3, seed=1.5)
    with pytest.raises(TypeError):
        sample(3, seed=True)
    with pytest.raises(ValueError, match="seed"):
        sample(3, seed=-1)
    with pytest.raises(ValueError, match="finite"):
        sample(3, 0.0, float("nan"))


def test_uniform_bounds_and_moments():
    low, high = -2.0, 3.0
    x = es.random_uniform(N, low, high, seed=0, dtype=np.float64).numpy()
    assert x.min() >= low and x.max() < high
    width = high - low
    within(x.mean(), (low + high) / 2, width / np.sqrt(12 * N))
    within(x.var(), width**2 / 12, width**2 / np.sqrt(180 * N))  # var of U's variance estimate


def test_uniform_never_reaches_high_after_rounding():
    x = es.random_uniform(N, 0.0, 1.0, seed=3, dtype=np.float16).numpy()
    assert x.max() < 1.0 and x.min() >= 0.0
    same = es.random_uniform(4, 2.5, 2.5, seed=0).numpy()
    assert (same == 2.5).all()
    with pytest.raises(ValueError, match="greater than"):
        es.random_uniform(3, 1.0, 0.0)


def test_normal_moments():
    x = es.random_normal(N, 1.5, 2.0, seed=1, dtype=np.float64).numpy()
    within(x.mean(), 1.5, 2.0 / np.sqrt(N))
    within(x.std(), 2.0, 2.0 / np.sqrt(2 * N))
    assert (es.random_normal(3, 4.0, 0.0, seed=0).numpy() == 4.0).all()
    with pytest.raises(ValueError, match="stddev"):
        es.random_normal(3, 0.0, -1.0)


def test_truncated_normal_bounds_and_moments():
    mean, std = -1.0, 0.5
    x = es.truncated_normal(N, mean, std, seed=2, dtype=np.float64).numpy()
    assert x.min() >= mean - 2 * std and x.max() <= mean + 2 * std
    within(x.mean(), mean, std / np.sqrt(N))
    within(x.std(), TRUNCATED_STD * std, std / np.sqrt(2 * N))
    # Close to the cut there must still be samples: the distribution is not squeezed.
    assert (np.abs(x - mean) > 1.9 * std).any()
    narrow = es.truncated_normal(N, 0.1, 1.0, seed=2).numpy()
    assert narrow.dtype == np.float32
    assert narrow.min() >= np.float32(-1.9) and narrow.max() <= np.float32(2.1)
    with pytest.raises(ValueError, match="stddev"):
        es.truncated_normal(3, 0.0, -1.0)


# -- categorical ------------------------------------------------------------------------------------


def test_categorical_frequencies_match_softmax():
    logits = np.array([[0.0, 1.0, 2.0, -np.inf], [3.0, 3.0, -np.inf, 0.0]])
    picks = es.categorical(logits, N // 4, seed=4)
    assert isinstance(picks, np.ndarray)
    assert picks.dtype == np.int64 and picks.shape == (2, N // 4)
    finite = np.where(np.isinf(logits), -1e300, logits)
    probs = np.exp(finite - finite.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    for row in range(2):
        counts = np.bincount(picks[row], minlength=4) / picks.shape[1]
        for k in range(4):
            p = probs[row, k]
            within(counts[k], p, np.sqrt(p * (1 - p) / picks.shape[1]) + 1e-12)
    assert not (picks[0] == 3).any() and not (picks[1] == 2).any()


def test_categorical_reproducible_and_kinds():
    logits = np.log(np.array([[0.2, 0.8], [0.5, 0.5], [1.0, 1e-9]]))
    a = es.categorical(logits, 50, seed=9)
    as_tensor = es.categorical(es.tensor(logits), 50, seed=9)
    assert isinstance(a, np.ndarray) and isinstance(as_tensor, es.Tensor)
    np.testing.assert_array_equal(a, as_tensor.numpy())
    assert es.categorical(logits, 0, seed=1).shape == (3, 0)
    gapped = np.zeros((3, 4))[:, ::2]
    gapped[...] = logits
    transposed = np.asfortranarray(logits)
    np.testing.assert_array_equal(es.categorical(gapped, 50, seed=9), a)
    np.testing.assert_array_equal(es.categorical(transposed, 50, seed=9), a)
    assert es.categorical(np.zeros((0, 3)), 4, seed=1).shape == (0, 4)
    assert es.categorical(np.array([[0.0]], np.float32), 3).tolist() == [[0, 0, 0]]
    assert es.categorical(np.array([[-np.inf, 0.0, -np.inf]]), 5).tolist() == [[1] * 5]
    huge = es.categorical(np.array([[1000.0, 0.0]]), 20, seed=0)
    assert (huge == 0).all()


@pytest.mark.parametrize(
    "logits,samples,match",
    [
        (np.zeros(3), 2, r"\[batch, classes\]"),
        (np.zeros((2, 0)), 2, r"\[batch, classes\]"),
        (np.zeros((2, 2), complex), 2, r"\[batch, classes\]"),
        (np.array([[0.0, np.nan]]), 2, "NaN"),
        (np.array([[0.0, np.inf]]), 2, r"\+inf"),
        (np.array([[0.0, 1.0], [-np.inf, -np.inf]]), 2, "no finite"),
        (np.zeros((2, 2)), -1, ">= 0"),
    ],
)
def test_categorical_errors(logits, samples, match):
    with pytest.raises(ValueError, match=match):
        es.categorical(logits, samples)


@pytest.mark.parametrize("kind", [ml_dtypes.bfloat16, np.float16])
def test_samples_in_small_floats_stay_within_their_bounds(kind) -> None:
    """A review: rounding float64 draws to the nearest bfloat16/float16 stepped past the
    bounds by half a unit (372 of 100,000 uniform draws of [0.7, 1) below 0.7)."""
    u = es.random_uniform(100_000, 0.7, 1.0, seed=0, dtype=kind).numpy().astype(np.float64)
    assert u.min() >= 0.7 and u.max() < 1.0
    t = es.truncated_normal(100_000, 0.0, 0.35, seed=1, dtype=kind).numpy().astype(np.float64)
    assert np.abs(t).max() <= 0.7
    limit = (6 / 1050) ** 0.5
    g = es.glorot_uniform((50, 1000), seed=2, dtype=kind).numpy().astype(np.float64)
    assert g.min() >= -limit and g.max() < limit
    bound = 2 * (2 / 50) ** 0.5 / TRUNCATED_STD
    h = es.he_normal((50, 1000), seed=3, dtype=kind).numpy().astype(np.float64)
    assert np.abs(h).max() <= bound
    narrow = es.random_uniform(4, 0.70005, 0.7001, seed=0, dtype=kind).numpy()  # none inside
    assert (narrow == np.array(0.70005, kind)).all()


def test_numbers_given_as_strings_are_type_errors() -> None:
    """A review: float() read "0.5", so random_uniform(low="0.5") ran."""
    calls = (
        lambda: es.random_uniform(3, low="0.5", high="1"),
        lambda: es.random_normal(3, mean="5"),
        lambda: es.truncated_normal(3, stddev=b"1"),
        lambda: es.orthogonal((2, 2), gain="3"),
        lambda: es.random_normal(3, mean=None),
        lambda: es.random_normal(3, stddev=1j),
    )
    for call in calls:
        with pytest.raises(TypeError, match="must be a real number"):
            call()
    assert es.random_uniform(2, np.float32(0.5), np.array(1.0), seed=0).shape == (2,)


def test_a_bound_or_sample_the_dtype_cannot_hold_is_out_of_range() -> None:
    # a review: they came back as inf, with a RuntimeWarning only
    calls = {
        "random_uniform": lambda: es.random_uniform(3, 1e5, 1e6, seed=0, dtype=np.float16),
        "random_uniform ": lambda: es.random_uniform(3, 1e39, 2e39, seed=0),
        "random_uniform  ": lambda: es.random_uniform(3, 1e39, 1e39, seed=0),
        "truncated_normal": lambda: es.truncated_normal(3, mean=1e39, seed=0),
        "truncated_normal ": lambda: es.truncated_normal(3, 0, 1e5, seed=0, dtype=np.float16),
        "random_normal": lambda: es.random_normal(3, 1e39, seed=0),
        "random_normal ": lambda: es.random_normal(3, 7e4, seed=0, dtype=np.float16),
        "orthogonal": lambda: es.orthogonal((2, 2), gain=1e39, seed=0),  # (float32)
        "orthogonal ": lambda: es.orthogonal((2, 2), gain=1e308, seed=0, dtype=np.float16),
    }
    for name, call in calls.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(es.OutOfRangeError, match=f"{name.strip()}: .* cannot hold"):
                call()
    largest = es.random_uniform(100, 6e4, 65504.0, seed=0, dtype=np.float16).numpy()
    assert np.isfinite(largest).all() and largest.min() >= 6e4
    # every value below 65520 rounds to at most 65504 (65520 itself to inf): fine, as before
    for low, high in ((0.0, 65520.0), (-65520.0, 0.0)):
        edge = es.random_uniform(1000, low, high, seed=0, dtype=np.float16).numpy()
        assert np.isfinite(edge).all() and np.abs(edge).max() <= 65504


def test_a_negative_zero_width_or_stddev_is_zero() -> None:
    # (-0.0 compares equal to 0.0; NumPy's generator took 0.0 .. -0.0 for a negative width:
    # a bare "high - low < 0", and "scale < 0" for a stddev of -0.0, a review)
    assert es.random_uniform(3, 0.0, -0.0, seed=0).numpy().tolist() == [0.0] * 3
    assert es.random_uniform(3, -0.0, 0.0, seed=0).numpy().tolist() == [0.0] * 3
    assert es.random_normal(3, 2.0, -0.0, seed=0).numpy().tolist() == [2.0] * 3


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (np.matrix itself)
def test_categorical_takes_an_array_subclass_as_its_array() -> None:
    # (np.matrix's max() has no keepdims: a bare TypeError, a review)
    logits = np.array([[0.0, 1.0], [2.0, -1.0]])
    want = es.categorical(logits, 5, seed=3)
    np.testing.assert_array_equal(es.categorical(np.matrix(logits), 5, seed=3), want)
