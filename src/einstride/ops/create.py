"""Creation functions, as NumPy (default dtype float64), each returning a new dense tensor.

Without a tensor input the result is a ``Tensor``; the ``*_like`` functions follow their
input's kind (NumPy in, NumPy out) and always produce a dense row-major result.

>>> full((2, 2), 7).numpy().tolist()
[[7, 7], [7, 7]]
>>> arange(0.0, 1.0, 0.25).numpy().tolist()
[0.0, 0.25, 0.5, 0.75]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..layout import Layout
from ..memory import check_array
from ..tensors import Tensor, any_tensor, as_array, as_tensor
from ._common import as_count, finish

__all__ = [
    "arange",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]


def _shape(shape: Any, dtype: Any, op: str) -> tuple[int, ...]:
    """A validated shape: lengths ``>= 0``, an element count int64 can hold, and an array of
    ``dtype`` within the memory limit.

    >>> _shape((10**8, 10**8), float, "zeros")
    Traceback (most recent call last):
    ValueError: zeros of shape (100000000, 100000000) (float64) would allocate ...
    """
    dims = Layout.create(shape).shape
    check_array(dims, dtype, op)
    return dims


def zeros(shape: Any, dtype: Any = float) -> Tensor:
    """A new Tensor of zeros.

    >>> zeros((2, 0)).shape
    (2, 0)
    """
    return as_tensor(np.zeros(_shape(shape, dtype, "zeros"), dtype))


def ones(shape: Any, dtype: Any = float) -> Tensor:
    """A new Tensor of ones.

    >>> ones(3, dtype=int).numpy().tolist()
    [1, 1, 1]
    """
    return as_tensor(np.ones(_shape(shape, dtype, "ones"), dtype))


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """A new Tensor filled with ``fill_value`` (dtype inferred from it unless given).

    >>> full(2, 1.5).numpy().tolist()
    [1.5, 1.5]
    """
    kind = np.asarray(fill_value).dtype if dtype is None else dtype
    return as_tensor(np.full(_shape(shape, kind, "full"), fill_value, dtype))


def zeros_like(t: Any, dtype: Any = None) -> Any:
    """Zeros with ``t``'s shape and (unless given) dtype; dense, in ``t``'s kind.

    >>> zeros_like(np.ones((2, 3)).T).strides
    (16, 8)
    """
    arr = as_array(t)
    kind = arr.dtype if dtype is None else dtype
    check_array(arr.shape, kind, "zeros_like")  # ``t`` may be a broadcast view
    return finish(np.zeros(arr.shape, kind), any_tensor(t))


def ones_like(t: Any, dtype: Any = None) -> Any:
    """Ones with ``t``'s shape and (unless given) dtype; dense, in ``t``'s kind.

    >>> ones_like(np.zeros(2, np.int8)).tolist()
    [1, 1]
    """
    arr = as_array(t)
    kind = arr.dtype if dtype is None else dtype
    check_array(arr.shape, kind, "ones_like")
    return finish(np.ones(arr.shape, kind), any_tensor(t))


def full_like(t: Any, fill_value: Any, dtype: Any = None) -> Any:
    """``fill_value`` with ``t``'s shape and (unless given) dtype; dense, in ``t``'s kind.

    >>> full_like(np.zeros(2), 4).tolist()
    [4.0, 4.0]
    """
    arr = as_array(t)
    kind = arr.dtype if dtype is None else dtype
    check_array(arr.shape, kind, "full_like")
    return finish(np.full(arr.shape, fill_value, kind), any_tensor(t))


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` as ``numpy.arange``; a zero step is a
    ``ValueError``.

    >>> arange(3).numpy().tolist()
    [0, 1, 2]
    """
    if step is not None and step == 0:
        raise ValueError("arange: step must not be zero")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    _check_arange_size(start, stop, step, dtype)
    values = np.arange(start, stop, step, dtype=dtype)
    return as_tensor(values)


def _check_arange_size(start: Any, stop: Any, step: Any, dtype: Any) -> None:
    """Size ``arange``'s result first; arguments that are not real numbers are left to NumPy.

    >>> _check_arange_size(0, 1e18, 1, None)
    Traceback (most recent call last):
    ValueError: arange of shape (1000000000000000000,) (float64) would allocate ...
    """
    try:
        count = max(0, math.ceil((stop - start) / step))
        kind = np.result_type(start, stop, step) if dtype is None else np.dtype(dtype)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        return
    check_array((count,), kind, "arange")


def linspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` as ``numpy.linspace``.

    >>> linspace(0, 1, 5).numpy().tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    count = as_count(num, "linspace num")
    check_array((count,), np.float64 if dtype is None else dtype, "linspace")
    return as_tensor(np.linspace(start, stop, count, endpoint=endpoint, dtype=dtype))
