"""Seeded random sampling; each function returns a new dense ``Tensor`` (``categorical``:
in the kind of its logits).

``seed`` is an int (the same int gives the same values), a ``numpy.random.Generator``
(drawn from, so it advances) or ``None`` (fresh entropy).  Floating dtypes only: float16,
float32, float64 and bfloat16; samples are drawn in float64 and rounded once.

>>> a = random_normal((2, 3), seed=7)
>>> b = random_normal((2, 3), seed=7)
>>> bool((a.numpy() == b.numpy()).all()), a.dtype
(True, dtype('float32'))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import LayoutError, OutOfRangeError, named_errors
from ..layout import Layout
from ..memory import check_array
from ..narrow import as_dtype, is_bfloat16
from ..tensors import Tensor, any_tensor, as_array, as_tensor
from ._common import Array, as_count, dense, finish

__all__ = ["categorical", "random_normal", "random_uniform", "truncated_normal"]

# Truncated normals are cut at this many standard deviations (TensorFlow's choice).
TRUNCATION = 2.0


def generator(seed: Any) -> np.random.Generator:
    """The Generator behind ``seed`` (int, Generator or ``None``)."""
    if seed is None or isinstance(seed, np.random.Generator):
        return np.random.default_rng(seed)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or a numpy.random.Generator, not {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return np.random.default_rng(int(seed))


def float_dtype(dtype: Any) -> np.dtype[Any]:
    """``dtype`` as a NumPy dtype, which must be a real floating type (bfloat16 included)."""
    kind = as_dtype(dtype)
    if kind.kind != "f" and not is_bfloat16(kind):
        raise ValueError(f"a floating dtype is required, got {kind}")
    return kind


def sample_shape(shape: Any) -> tuple[int, ...]:
    return Layout.create(shape).shape


def draw_shape(shape: Any, op: str) -> tuple[int, ...]:
    """``sample_shape`` for a draw: samples are made in float64, which must fit the memory
    limit."""
    dims = sample_shape(shape)
    check_array(dims, np.float64, op)
    return dims


def finite_number(value: Any, what: str) -> float:
    """A finite real number; a string (which ``float`` would read) is a ``TypeError``, as
    any other argument of the wrong type (a review found ``mean="5"`` accepted)."""
    if isinstance(value, (str, bytes, complex, np.complexfloating)):
        raise TypeError(f"{what} must be a real number, not {value!r}")
    try:
        number = float(value)  # (a NumPy scalar or 0-d array, a Fraction, a Decimal too)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a real number, not {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} must be finite, got {number}")
    return number


def rounded_within(
    values: Array,
    low: float,
    high: float,
    kind: np.dtype[Any],
    what: str,
    *,
    below_high: bool = False,
) -> Array:
    """Float64 ``values`` in ``[low, high]`` (``[low, high)`` with ``below_high``) rounded to
    ``kind``, then kept within the bounds: rounding to the nearest float16 or bfloat16 may
    step past a bound by half a unit (a review: draws of ``[0.7, 1)`` in bfloat16 gave
    0.69921875).  Where ``kind`` holds no value within the bounds, ``low`` rounded (the
    nearest it holds); bounds whose values next to them, inside, round to an infinity in
    ``kind`` are an ``OutOfRangeError`` naming ``what`` (a review: float16 draws in ``[1e5,
    1e6)`` were all ``inf``; ``[0, 65520)`` is fine, every value below 65520 rounds to at most
    65504).

    >>> import ml_dtypes
    >>> kind = np.dtype(ml_dtypes.bfloat16)
    >>> rounded_within(np.array([0.6995, 0.9999]), 0.7, 1.0, kind, "u", below_high=True).tolist()
    [0.703125, 0.99609375]
    >>> rounded_within(np.array([2e5]), 1e5, 1e6, np.dtype("f2"), "random_uniform")
    Traceback (most recent call last):
    einstride.errors.OutOfRangeError: random_uniform: float16 cannot hold the bound 100000.0 (its values lie within +-65504.0)
    """  # noqa: E501
    bounds = np.array([low, high])
    inside = np.nextafter(bounds, bounds[::-1]) if low < high else bounds
    with np.errstate(over="ignore"):
        lowest, highest = bounds.astype(kind)
        finite = np.isfinite(inside.astype(kind))
    if not finite.all():
        bound = float(bounds[~finite][0])
        raise OutOfRangeError(
            f"{what}: {kind} cannot hold the bound {bound} (its values lie within "
            f"+-{_largest(kind)})"
        )
    if float(lowest) < low:
        lowest = np.nextafter(lowest, np.array(np.inf, kind))
    if float(highest) > high or (below_high and float(highest) >= high):
        highest = np.nextafter(highest, np.array(-np.inf, kind))
    if not lowest <= highest:
        return np.full(values.shape, np.array(low, kind))
    kept: Array = np.minimum(np.maximum(values.astype(kind), lowest), highest)
    return kept


def cast_finite(values: Array, kind: np.dtype[Any], what: str) -> Array:
    """Finite float64 ``values`` cast to ``kind``; one that ``kind`` cannot hold (it would
    be infinite) is an ``OutOfRangeError`` naming ``what`` (a review: ``truncated_normal``
    of mean 1e39 in float32 gave ``inf``, with a warning only).

    >>> cast_finite(np.array([1.5, 3e38]), np.dtype("f4"), "random_normal").dtype
    dtype('float32')
    >>> cast_finite(np.array([1.5, 4e38]), np.dtype("f4"), "random_normal")
    Traceback (most recent call last):
    einstride.errors.OutOfRangeError: random_normal: float32 cannot hold a sample 4e+38 (its values lie within +-3.4028234663852886e+38)
    """  # noqa: E501
    with np.errstate(over="ignore"):
        cast: Array = values.astype(kind)
    finite = np.isfinite(cast)
    if not finite.all():
        bad = float(values[~finite].flat[0])
        raise OutOfRangeError(
            f"{what}: {kind} cannot hold a sample {bad} (its values lie within +-{_largest(kind)})"
        )
    return cast


def _largest(kind: np.dtype[Any]) -> float:
    """``kind``'s largest finite value."""
    return float(np.nextafter(np.array(np.inf, kind), np.array(0, kind)))


@named_errors
def random_uniform(
    shape: Any, low: Any = 0.0, high: Any = 1.0, *, seed: Any = None, dtype: Any = np.float32
) -> Tensor:
    """Uniform samples in ``[low, high)`` (all ``low`` when they are equal); ``low > high``
    is a ``ValueError``, a width ``high - low`` beyond float64 an ``OutOfRangeError``.  Values
    that would round up to ``high`` in ``dtype`` are kept below; a bound ``dtype`` cannot
    hold is an ``OutOfRangeError``.  A new Tensor.

    >>> u = random_uniform(1000, -1, 1, seed=0).numpy()
    >>> bool(u.min() >= -1 and u.max() < 1)
    True
    """
    # (+ 0.0: a -0.0 bound is 0.0, as it compares; NumPy's uniform took 0.0 .. -0.0 for a
    # negative width, a review)
    lo, hi = finite_number(low, "low") + 0.0, finite_number(high, "high") + 0.0
    if lo > hi:
        raise ValueError(f"random_uniform: low {lo} is greater than high {hi}")
    if not math.isfinite(hi - lo):
        raise OutOfRangeError(
            f"random_uniform: the width high - low = {hi} - {lo} overflows float64"
        )
    kind, dims = float_dtype(dtype), draw_shape(shape, "random_uniform")
    draws = generator(seed).uniform(lo, hi, dims)
    if hi == lo:
        return as_tensor(dense(cast_finite(draws, kind, "random_uniform")))
    within = rounded_within(draws, lo, hi, kind, "random_uniform", below_high=True)
    return as_tensor(dense(within))


@named_errors
def random_normal(
    shape: Any, mean: Any = 0.0, stddev: Any = 1.0, *, seed: Any = None, dtype: Any = np.float32
) -> Tensor:
    """Normal samples with the given ``mean`` and ``stddev`` (``>= 0``); a new Tensor (a sample
    ``dtype`` cannot hold is an ``OutOfRangeError``).

    >>> random_normal((2, 0), seed=1).shape
    (2, 0)
    """
    mu, sigma = finite_number(mean, "mean"), finite_number(stddev, "stddev") + 0.0  # (-0.0)
    if sigma < 0:
        raise ValueError(f"random_normal: stddev must be >= 0, got {sigma}")
    kind, dims = float_dtype(dtype), draw_shape(shape, "random_normal")
    draws = generator(seed).normal(mu, sigma, dims)
    return as_tensor(dense(cast_finite(draws, kind, "random_normal")))


def standard_truncated(rng: np.random.Generator, dims: tuple[int, ...]) -> Array:
    """Standard normal samples re-drawn until each lies within ``TRUNCATION``."""
    draws = rng.standard_normal(dims)
    outside = np.abs(draws) > TRUNCATION
    while outside.any():
        draws[outside] = rng.standard_normal(int(outside.sum()))
        outside = np.abs(draws) > TRUNCATION
    return draws


@named_errors
def truncated_normal(
    shape: Any, mean: Any = 0.0, stddev: Any = 1.0, *, seed: Any = None, dtype: Any = np.float32
) -> Tensor:
    """Normal samples with ``mean`` and ``stddev`` (of the untruncated distribution, as
    TensorFlow), re-drawn until each lies within 2 standard deviations of the mean.  The
    resulting std is about ``0.88 * stddev`` (see the initializers for the exact factor).  A
    new Tensor.

    >>> x = truncated_normal(10000, 5.0, 2.0, seed=3).numpy()
    >>> bool(x.min() >= 1.0 and x.max() <= 9.0)
    True
    """
    mu, sigma = finite_number(mean, "mean"), finite_number(stddev, "stddev")
    if sigma < 0:
        raise ValueError(f"truncated_normal: stddev must be >= 0, got {sigma}")
    kind, dims = float_dtype(dtype), draw_shape(shape, "truncated_normal")
    values = mu + sigma * standard_truncated(generator(seed), dims)
    bound = TRUNCATION * sigma
    within = rounded_within(values, mu - bound, mu + bound, kind, "truncated_normal")
    return as_tensor(dense(within))


@named_errors
def categorical(logits: Any, num_samples: int, *, seed: Any = None) -> Any:
    """``num_samples`` class indices per row of ``[batch, classes]`` unnormalized
    log-probabilities: int64 ``[batch, num_samples]``, in the logits' kind (NumPy or
    Tensor).  A ``-inf`` logit is never drawn; NaN, ``+inf`` or a row with no finite logit is
    a ``ValueError``, a shape other than ``[batch, classes >= 1]`` a ``LayoutError``.  A new
    result.

    >>> categorical(np.array([[-np.inf, 0.0], [0.0, -np.inf]]), 3, seed=0).tolist()
    [[1, 1, 1], [0, 0, 0]]
    """
    values = as_array(logits).view(np.ndarray)  # (an np.matrix's max has no keepdims)
    if not (values.dtype.kind in "iuf" or is_bfloat16(values.dtype)):
        raise ValueError(
            f"categorical: logits must be real [batch, classes], got dtype {values.dtype}"
        )
    if values.ndim != 2 or values.shape[1] == 0:
        raise LayoutError(
            f"categorical: logits must be [batch, classes] with classes >= 1, got shape "
            f"{values.shape}"
        )
    count = as_count(num_samples, "num_samples")
    batch, classes = values.shape
    check_array((batch, count), np.float64, "categorical")
    check_array(values.shape, np.float64, "categorical (the probabilities)")  # logits may be
    if batch > _LOOP_ROWS:  # a broadcast; the sorted search needs keys for edges and draws
        check_array((batch * (classes + count),), np.int64, "categorical (the search keys)")
    cdf = _row_cdfs(values.astype(np.float64))
    uniforms = generator(seed).random((batch, count))
    if batch > _LOOP_ROWS:
        picks = sorted_search(cdf, uniforms)
    else:
        picks = np.empty((batch, count), np.int64)
        for row, (edges, draws) in enumerate(zip(cdf, uniforms)):
            picks[row] = np.searchsorted(edges, draws, side="right")
    return finish(picks, any_tensor(logits))


# Up to this many rows, one ``searchsorted`` per row is fastest; beyond, a Python loop per row
# would take long, and ``sorted_search`` does all rows at once.
_LOOP_ROWS = 4096


def sorted_search(edges: Array, draws: Array) -> Array:
    """Row by row ``searchsorted(edges[r], draws[r], side="right")`` without a Python loop:
    one stable sort of (row, value, edge-before-draw) keys, then a running count of edges.
    Exact (no arithmetic on the values).

    >>> sorted_search(np.array([[0.5, 1.0], [0.2, 1.0]]), np.array([[0.5, 0.1], [0.9, 0.2]]))
    array([[1, 0],
           [1, 1]])
    """
    batch, classes = edges.shape
    count = draws.shape[1]
    numbers = np.arange(batch)
    rows = np.concatenate([np.repeat(numbers, classes), np.repeat(numbers, count)])
    values = np.concatenate([edges.reshape(-1), draws.reshape(-1)])
    is_draw = np.repeat(np.array([False, True]), [batch * classes, batch * count])
    order = np.lexsort((is_draw, values, rows))  # at equal values an edge sorts first
    edges_so_far = np.cumsum(~is_draw[order])
    at_draw = is_draw[order]
    picks = np.empty(batch * count, np.int64)
    slots = order[at_draw] - batch * classes
    picks[slots] = edges_so_far[at_draw] - rows[order[at_draw]] * classes
    return picks.reshape(batch, count)


def _row_cdfs(logits: Array) -> Array:
    """Per-row cumulative probabilities ending at exactly 1.0 (stable softmax)."""
    if np.isnan(logits).any() or np.isposinf(logits).any():
        raise ValueError("categorical: logits must not be NaN or +inf")
    top = logits.max(axis=1, keepdims=True) if logits.size else logits[:, :1]
    if np.isneginf(top).any():
        raise ValueError("categorical: a row of logits has no finite value")
    cdf = np.cumsum(np.exp(logits - top), axis=1)
    normalized: Array = cdf / cdf[:, -1:]
    return normalized
