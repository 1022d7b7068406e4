"""torch dtypes as the planner sees them (NumPy dtypes), and torch's result-type rule.

The planner works on NumPy dtypes; every torch dtype the backend supports has one
(``torch.bfloat16`` is ``ml_dtypes.bfloat16``).  The result dtype follows
``torch.result_type``: dimensioned operands decide within a category, and a 0-dim operand
only counts when its category (bool < integer < float < complex) is higher.

>>> import torch
>>> numpy_dtype(torch.bfloat16, "operand 0 has dtype")
dtype(bfloat16)
>>> result_dtype([(torch.int32, 1), (torch.float32, 1)])     # NumPy: float64
torch.float32
>>> result_dtype([(torch.float16, 2), (torch.float64, 0)])   # a 0-dim float64 does not widen
torch.float16
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ....errors import EinsumTypeError
from ....narrow import bfloat16, is_bfloat16

__all__ = ["SUPPORTED", "numpy_dtype", "result_dtype", "torch_dtype"]

_NUMPY: dict[torch.dtype, np.dtype[Any]] = {
    torch.bool: np.dtype(np.bool_),
    torch.uint8: np.dtype(np.uint8),
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32),
    torch.int64: np.dtype(np.int64),
    torch.float16: np.dtype(np.float16),
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.complex64: np.dtype(np.complex64),
    torch.complex128: np.dtype(np.complex128),
}
"""The NumPy dtype the planner sees for each torch dtype, but bfloat16: ml_dtypes' twin,
imported with the first bfloat16 operand (:mod:`einstride.narrow`: its import is slow)."""

SUPPORTED: tuple[torch.dtype, ...] = (*_NUMPY, torch.bfloat16)
"""The torch dtypes the backend runs.  (torch's uint16/32/64 have no sums on CPU; float8 and
complex32 no matrix products.)"""

_TORCH = {np_dtype: torch_dt for torch_dt, np_dtype in _NUMPY.items()}
_NAMES = ", ".join(str(d).removeprefix("torch.") for d in SUPPORTED)


def numpy_dtype(dtype: torch.dtype, what: str) -> np.dtype[Any]:
    """The planner's dtype for a torch dtype; ``TypeError`` (``what`` names the thing) for
    one the backend does not run.

    >>> numpy_dtype(torch.uint16, "operand 1 has dtype")
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumTypeError: einsum: operand 1 has dtype torch.uint16, which the torch ...
    """
    found = _NUMPY.get(dtype)
    if found is None:
        if dtype == torch.bfloat16:
            return bfloat16()
        raise EinsumTypeError(
            f"einsum: {what} {dtype}, which the torch backend does not support (it runs {_NAMES})"
        )
    return found


def torch_dtype(dtype: np.dtype[Any], what: str) -> torch.dtype:
    """The torch dtype of a planner (NumPy) dtype; ``TypeError`` when torch has none here.

    >>> torch_dtype(np.dtype("complex64"), "dtype="), torch_dtype(np.dtype(">f4"), "dtype=")
    (torch.complex64, torch.float32)
    """
    kind = np.dtype(dtype).newbyteorder("=")  # (torch has one byte order: ">f4" is float32)
    found = _TORCH.get(kind)
    if found is None:
        if is_bfloat16(kind):
            return torch.bfloat16
        raise EinsumTypeError(
            f"einsum: {what} {dtype} has no torch dtype the torch backend supports ({_NAMES})"
        )
    return found


def _category(dtype: torch.dtype) -> int:
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 0 if dtype == torch.bool else 1


def _combine(higher: torch.dtype | None, lower: torch.dtype | None) -> torch.dtype | None:
    """c10's ``combine_categories``: ``lower`` (0-dim operands) only wins a higher category."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if _category(higher) == 3:
        return higher
    if _category(lower) == 3:
        return higher.to_complex() if _category(higher) == 2 else lower
    if _category(higher) == 2:
        return higher
    if higher == torch.bool or _category(lower) == 2:
        return torch.promote_types(higher, lower)
    return higher


def result_dtype(operands: Sequence[tuple[torch.dtype, int]]) -> torch.dtype:
    """``torch.result_type`` over any number of operands, given as ``(dtype, ndim)``.

    >>> result_dtype([(torch.int64, 1), (torch.complex64, 0)])
    torch.complex64
    """
    dimensioned = [dt for dt, ndim in operands if ndim > 0]
    zero_dim = [dt for dt, ndim in operands if ndim == 0]
    promote = functools.partial(functools.reduce, torch.promote_types)
    found = _combine(
        promote(dimensioned) if dimensioned else None, promote(zero_dim) if zero_dim else None
    )
    assert found is not None, "einsum takes at least one operand"
    return found
