"""The dtype rules every backend shares: which dtypes einsum accepts, the result dtype, and
the dtype products and sums run in.

>>> result_dtype([np.dtype("int32"), np.dtype("float32")])
dtype('float64')
>>> compute_dtype(np.dtype("float16")), compute_dtype(np.dtype("int8"))
(dtype('float32'), dtype('int8'))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from ...errors import EinsumError

__all__ = ["SMALL_FLOATS", "check_numeric", "compute_dtype", "result_dtype"]

SMALL_FLOATS = frozenset(
    np.dtype(getattr(ml_dtypes, name))
    for name in (
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
    if hasattr(ml_dtypes, name)
) | {np.dtype(np.float16)}
"""Floats of 16 bits and fewer: einsum accumulates them in float32."""


def check_numeric(dtype: np.dtype[Any], what: str) -> None:
    """Raise ``TypeError`` unless ``dtype`` is bool, int, float (ml_dtypes' too) or complex.

    >>> check_numeric(np.dtype("U3"), "operand 0 has dtype")
    Traceback (most recent call last):
      ...
    TypeError: einsum: operand 0 has dtype <U3 is not numeric (bool, int, float, complex)
    """
    if dtype.kind not in "biufc" and dtype not in SMALL_FLOATS:
        raise TypeError(f"einsum: {what} {dtype} is not numeric (bool, int, float, complex)")


def result_dtype(dtypes: Sequence[np.dtype[Any]], dtype: Any = None) -> np.dtype[Any]:
    """``dtype`` if given, else ``np.result_type`` of the operands' dtypes (checked numeric)."""
    try:
        found = np.dtype(dtype) if dtype is not None else np.result_type(*dtypes)
    except TypeError as exc:
        raise TypeError(f"einsum: no common dtype for {[str(d) for d in dtypes]}: {exc}") from None
    except ValueError:  # np.result_type() of nothing
        raise EinsumError("einsum: at least one operand is required") from None
    check_numeric(found, "the result dtype")
    return found


def compute_dtype(result: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype products and sums run in: float32 for 16-bit and smaller floats."""
    return np.dtype(np.float32) if result in SMALL_FLOATS else result
