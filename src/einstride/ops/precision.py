"""bfloat16 conversion through ``ml_dtypes``: float32 <-> bfloat16, rounding to nearest even.

>>> import numpy as np
>>> half = to_reduced_precision(np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8], np.float32))
>>> is_reduced_precision(half), to_full_precision(half).tolist()       # ties go to even
(True, [1.0, 1.0, 1.015625])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import named_errors
from ..memory import check_array
from ..narrow import bfloat16, is_bfloat16
from ..tensors import any_tensor, as_array
from ._common import finish

Array = np.ndarray[Any, Any]

__all__ = ["is_reduced_precision", "to_full_precision", "to_reduced_precision"]


@named_errors
def is_reduced_precision(t: Any) -> bool:
    """Whether ``t`` holds bfloat16 values.

    >>> is_reduced_precision(np.zeros(2, np.float32))
    False
    """
    return is_bfloat16(as_array(t).dtype)


@named_errors
def to_reduced_precision(t: Any) -> Any:
    """A new bfloat16 tensor of ``t``'s values (a real floating dtype, usually float32),
    rounded to nearest even (overflow gives infinity, NaN stays NaN).  A tensor that is
    already bfloat16 is a ``ValueError``.

    >>> to_reduced_precision(np.float32(3.0)).dtype
    dtype(bfloat16)
    """
    arr = as_array(t)
    if is_bfloat16(arr.dtype):
        raise ValueError("to_reduced_precision: the tensor is already bfloat16")
    if arr.dtype.kind != "f":
        raise ValueError(f"to_reduced_precision: a floating dtype is required, got {arr.dtype}")
    wide = np.promote_types(arr.dtype, np.float64)  # the temporaries
    check_array(arr.shape, wide, "to_reduced_precision")
    return finish(_round_to_bfloat16(arr), any_tensor(t))


def _round_to_bfloat16(arr: Array) -> Array:
    """Round to nearest even in one step.  ml_dtypes converts float64 through float32, and
    rounding twice can be wrong (``1 + 2**-8 + 2**-30`` would become 1.0); rounding to float32
    *to odd* first keeps the final nearest-even rounding exact.  A long double is compared
    in its own precision (a review: through float64 first, ``1 + 2**-8 + 2**-60`` became
    1.0)."""
    if arr.dtype.itemsize <= 4:
        return np.array(arr, dtype=bfloat16(), order="C", copy=True)
    wide = arr
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = wide.astype(np.float32)
        away = np.abs(narrow.astype(wide.dtype)) > np.abs(wide)
        narrow = np.where(away, np.nextafter(narrow, np.float32(0)), narrow)
        inexact = narrow.astype(wide.dtype) != wide
    bits = narrow.view(np.uint32) | inexact.astype(np.uint32)
    return np.array(bits.view(np.float32), dtype=bfloat16(), order="C", copy=True)


@named_errors
def to_full_precision(t: Any) -> Any:
    """A new float32 tensor of a bfloat16 ``t``'s values (exact); any other dtype is a
    ``ValueError``.

    >>> to_full_precision(to_reduced_precision(np.float32(0.1))).item()
    0.10009765625
    """
    arr = as_array(t)
    if not is_bfloat16(arr.dtype):
        raise ValueError(f"to_full_precision: a bfloat16 tensor is required, got {arr.dtype}")
    check_array(arr.shape, np.float32, "to_full_precision")
    return finish(np.array(arr, dtype=np.float32, order="C", copy=True), any_tensor(t))
