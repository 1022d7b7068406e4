"""Weight initializers (Glorot/Xavier, He, LeCun, orthogonal); each returns a new ``Tensor``.

Fans of a shape of rank ``>= 2``: rank 2 -> ``(shape[0], shape[1])``; higher ranks use the
receptive field ``rf = prod(shape[:-2])``: ``fan_in = shape[-2] * rf``,
``fan_out = shape[-1] * rf``.  Uniform variants sample ``[-limit, limit)``; normal variants
draw a normal truncated at 2 standard deviations, scaled so that the *resulting* std is
the target (the truncation shrinks a unit normal's std to ``TRUNCATED_STD``).

>>> fans((3, 3, 16, 32))
(144, 288)
>>> round(TRUNCATED_STD, 6)
0.879626
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import LayoutError, named_errors
from ..memory import check_array
from ..tensors import Tensor, as_tensor
from ._common import dense
from .random import (
    TRUNCATION,
    cast_finite,
    draw_shape,
    finite_number,
    float_dtype,
    generator,
    random_uniform,
    rounded_within,
    sample_shape,
    standard_truncated,
)

__all__ = [
    "fans",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "lecun_normal",
    "lecun_uniform",
    "orthogonal",
]


def _truncated_std(cut: float) -> float:
    """Std of a unit normal conditioned on ``|x| <= cut``: ``1 - 2 cut phi(cut) / Z``."""
    density = math.exp(-cut * cut / 2) / math.sqrt(2 * math.pi)
    mass = math.erf(cut / math.sqrt(2))
    return math.sqrt(1 - 2 * cut * density / mass)


TRUNCATED_STD = _truncated_std(TRUNCATION)


@named_errors
def fans(shape: Any) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight shape of rank ``>= 2`` (rank below 2 is an error)."""
    dims = sample_shape(shape)
    if len(dims) < 2:
        raise LayoutError(f"fans need a shape of rank >= 2, got {dims}")
    field = math.prod(dims[:-2])
    return dims[-2] * field, dims[-1] * field


def _uniform(shape: Any, scale: float, which: str, seed: Any, dtype: Any) -> Tensor:
    """Uniform in ``[-limit, limit)`` with ``limit = sqrt(scale / n)``, ``n`` chosen by
    ``which`` ("avg": fan_in + fan_out, "in": fan_in)."""
    count = _fan_count(shape, which)
    limit = math.sqrt(scale / count) if count else 0.0
    return random_uniform(shape, -limit, limit, seed=seed, dtype=dtype)


def _normal(shape: Any, scale: float, which: str, seed: Any, dtype: Any) -> Tensor:
    """Truncated normal whose resulting std is ``sqrt(scale / n)`` (``n`` as ``_uniform``)."""
    kind, dims = float_dtype(dtype), draw_shape(shape, "initializer")
    count = _fan_count(dims, which)
    target = math.sqrt(scale / count) if count else 0.0
    scale = target / TRUNCATED_STD
    draws = standard_truncated(generator(seed), dims) * scale
    bound = TRUNCATION * scale  # (kept within it in ``kind`` too: a review)
    return as_tensor(dense(rounded_within(draws, -bound, bound, kind, "initializer")))


def _fan_count(shape: Any, which: str) -> int:
    fan_in, fan_out = fans(shape)
    return fan_in + fan_out if which == "avg" else fan_in


@named_errors
def glorot_uniform(shape: Any, *, seed: Any = None, dtype: Any = np.float32) -> Tensor:
    """Glorot (Xavier) uniform: limit ``sqrt(6 / (fan_in + fan_out))``; a new Tensor.

    >>> w = glorot_uniform((100, 50), seed=0).numpy()
    >>> bool(abs(w).max() < (6 / 150) ** 0.5)
    True
    """
    return _uniform(shape, 6.0, "avg", seed, dtype)


@named_errors
def glorot_normal(shape: Any, *, seed: Any = None, dtype: Any = np.float32) -> Tensor:
    """Glorot (Xavier) normal: resulting std ``sqrt(2 / (fan_in + fan_out))``; a new Tensor.

    >>> glorot_normal((4, 4), seed=0).shape
    (4, 4)
    """
    return _normal(shape, 2.0, "avg", seed, dtype)


@named_errors
def he_uniform(shape: Any, *, seed: Any = None, dtype: Any = np.float32) -> Tensor:
    """He uniform: limit ``sqrt(6 / fan_in)``; a new Tensor.

    >>> he_uniform((2, 3, 4), seed=0).shape
    (2, 3, 4)
    """
    return _uniform(shape, 6.0, "in", seed, dtype)


@named_errors
def he_normal(shape: Any, *, seed: Any = None, dtype: Any = np.float32) -> Tensor:
    """He normal: resulting std ``sqrt(2 / fan_in)``; a new Tensor.

    >>> he_normal((3, 2), seed=0, dtype=np.float64).dtype
    dtype('float64')
    """
    return _normal(shape, 2.0, "in", seed, dtype)


@named_errors
def lecun_uniform(shape: Any, *, seed: Any = None, dtype: Any = np.float32) -> Tensor:
    """LeCun uniform: limit ``sqrt(3 / fan_in)``; a new Tensor.

    >>> lecun_uniform((2, 2), seed=0).shape
    (2, 2)
    """
    return _uniform(shape, 3.0, "in", seed, dtype)


@named_errors
def lecun_normal(shape: Any, *, seed: Any = None, dtype: Any = np.float32) -> Tensor:
    """LeCun normal: resulting std ``sqrt(1 / fan_in)``; a new Tensor.

    >>> lecun_normal((2, 2), seed=0).shape
    (2, 2)
    """
    return _normal(shape, 1.0, "in", seed, dtype)


@named_errors
def orthogonal(shape: Any, gain: Any = 1.0, *, seed: Any = None, dtype: Any = np.float32) -> Tensor:
    """A (semi-)orthogonal matrix times ``gain``, reshaped to ``shape`` (rank ``>= 2``) from
    ``rows = prod(shape[:-1])`` by ``cols = shape[-1]``: the Q of a normal sample's QR,
    columns sign-corrected by ``sign(diag(R))``; orthonormal rows when ``rows < cols``.  A
    new Tensor.

    >>> w = orthogonal((3, 3), seed=0).numpy()
    >>> bool(np.allclose(w @ w.T, np.eye(3), atol=1e-6))
    True
    """
    kind, dims = float_dtype(dtype), sample_shape(shape)
    if len(dims) < 2:
        raise LayoutError(f"orthogonal needs a shape of rank >= 2, got {dims}")
    scale = finite_number(gain, "orthogonal: gain")
    rows, cols = math.prod(dims[:-1]), dims[-1]
    check_array((max(rows, cols), min(rows, cols)), np.float64, "orthogonal")
    sample = generator(seed).standard_normal((max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(sample)
    q = q * np.where(np.diagonal(r) < 0, -1.0, 1.0)
    if rows < cols:
        q = q.T
    # (entries of Q lie within +-1: the product is finite in float64; the dtype may not
    # hold it, an OutOfRangeError, never infinities: a review, gain=1e39 in float32)
    return as_tensor(dense(cast_finite((scale * q).reshape(dims), kind, "orthogonal")))
