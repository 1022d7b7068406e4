"""ml_dtypes' narrow floats (bfloat16, float8, ...), imported only when a call needs them.

Importing ml_dtypes registers its types with NumPy, which takes longer than importing NumPy
and einstride together (measured here: 0.67-0.79 s of a 0.8-1.1 s ``import einstride``), so
``import einstride`` leaves it out.  Nothing is lost: an array of one of its dtypes exists
only once ml_dtypes is imported (its extension defines them), and a name that NumPy learns
from ml_dtypes (``"bfloat16"``) imports it on first use (:func:`as_dtype`).

>>> as_dtype("float32"), is_small_float(np.dtype(np.float16)), is_bfloat16(np.dtype("f4"))
(dtype('float32'), True, False)
>>> is_small_float(as_dtype("bfloat16")), is_bfloat16(bfloat16())
(True, True)
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["as_dtype", "bfloat16", "is_bfloat16", "is_small_float"]

_SMALL_NAMES = (
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e8m0fnu",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float4_e2m1fn",
)
_FLOAT16 = np.dtype(np.float16)
_small: frozenset[np.dtype[Any]] | None = None  # ml_dtypes' small floats, once it is imported


def as_dtype(value: Any) -> np.dtype[Any]:
    """``np.dtype(value)``; a name NumPy does not know yet (``"bfloat16"``,
    ``"float8_e4m3fn"``) is tried again after importing ml_dtypes, which teaches NumPy its
    names.  NumPy's errors otherwise (a ``TypeError`` for a name no one knows)."""
    try:
        found: np.dtype[Any] = np.dtype(value)
    except TypeError:
        if "ml_dtypes" in sys.modules:
            raise
        import ml_dtypes  # noqa: F401  (its import registers the names)

        found = np.dtype(value)
    return found


def is_small_float(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` is a float of 16 bits or fewer (float16, ml_dtypes' bfloat16 and
    float8/6/4 types): einsum accumulates them in float32.  Without ml_dtypes imported no
    dtype can be one of its types."""
    return dtype == _FLOAT16 or dtype in _small_floats()


def _small_floats() -> frozenset[np.dtype[Any]]:
    global _small
    if _small is None:
        module = sys.modules.get("ml_dtypes")
        if module is None:
            return frozenset()
        _small = frozenset(
            np.dtype(getattr(module, name)) for name in _SMALL_NAMES if hasattr(module, name)
        )
    return _small


def bfloat16() -> np.dtype[Any]:
    """ml_dtypes' bfloat16 (importing ml_dtypes the first time)."""
    import ml_dtypes

    found: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
    return found


def is_bfloat16(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` is bfloat16 (without importing ml_dtypes: without it, none is)."""
    return dtype in _small_floats() and dtype == bfloat16()


def as_strided(
    arr: np.ndarray[Any, Any],
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    writeable: bool = True,
) -> np.ndarray[Any, Any]:
    """``np.lib.stride_tricks.as_strided`` (byte ``strides``; the caller checked that every
    element lies in ``arr``'s buffer), also for a dtype whose array-interface type string
    NumPy cannot parse back: ml_dtypes' float8_e5m2 exports ``'<f1'`` (a review found every
    view of one failing with ``TypeError: data type '<f1' not understood``); such an array
    is viewed through raw bytes of its item size and back.  Not public: the helper of the
    audited raw-view sites (docs/reliability.md), named as NumPy's so that the audit finds
    every call.

    >>> x = np.arange(6.0)
    >>> as_strided(x, (2, 3), (8, 16)).tolist()
    [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    >>> float8 = as_dtype("float8_e5m2")
    >>> as_strided(np.arange(4).astype(float8), (2,), (2,)).astype(float).tolist()
    [0.0, 2.0]
    """
    try:
        return np.lib.stride_tricks.as_strided(arr, shape, strides, writeable=writeable)
    except TypeError:
        if arr.dtype.hasobject:  # not that failure: an object array has no raw bytes
            raise
    raw = arr.view(np.dtype((np.void, arr.dtype.itemsize)))
    view = np.lib.stride_tricks.as_strided(raw, shape, strides, writeable=writeable)
    return view.view(arr.dtype)
