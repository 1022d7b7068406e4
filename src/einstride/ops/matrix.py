"""Matrix-structure operations on the last two axes (``[..., M, N]``), batched over the rest.

``diag_part`` is a **view** (the diagonal is a stride sum); the others build new tensors.

>>> import numpy as np
>>> diag_part(np.arange(6).reshape(2, 3)).tolist()
[0, 4]
>>> band_part(np.ones((3, 3), int), 0, -1).tolist()      # upper triangle
[[1, 1, 1], [0, 1, 1], [0, 0, 1]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import LayoutError, named_errors
from ..layout import Layout, as_int_tuple
from ..memory import check_array
from ..narrow import is_small_float
from ..tensors import Tensor, any_tensor, as_array, as_tensor
from ._common import Array, as_count, as_int, dense, finish, map_view, require_rank

__all__ = ["band_part", "diag", "diag_part", "eye", "set_diag", "trace"]


def _diagonal_layout(layout: Layout) -> Layout:
    """``[..., M, N] -> [..., min(M, N)]``: the leading square block, axes merged."""
    k = min(layout.shape[-2:])
    square = layout.slice(-2, 0, k).slice(-1, 0, k)
    return square.diagonal((-2, -1))


@named_errors
def diag_part(t: Any) -> Any:
    """The main diagonal ``[..., M, N] -> [..., min(M, N)]``, a **view** (stride sum); rank
    below 2 is an error.

    >>> a = np.arange(9.0).reshape(3, 3)
    >>> d = diag_part(a)
    >>> d.tolist(), np.shares_memory(d, a)
    ([0.0, 4.0, 8.0], True)
    """
    require_rank(as_array(t), 2, "diag_part")
    return map_view(t, _diagonal_layout)


def _diagonal_of(result: Array) -> Array:
    """The writeable diagonal view of a freshly allocated dense ``result``."""
    dense = as_tensor(result)
    return dense.view(_diagonal_layout(dense.layout)).numpy()


@named_errors
def diag(d: Any) -> Any:
    """A batch of diagonal matrices ``[..., M] -> [..., M, M]``, zero off the diagonal; a new
    dense tensor.  Rank 0 is an error.

    >>> diag(np.array([1, 2])).tolist()
    [[1, 0], [0, 2]]
    """
    values = as_array(d)
    require_rank(values, 1, "diag")
    check_array(values.shape + values.shape[-1:], values.dtype, "diag")
    result = np.zeros(values.shape + values.shape[-1:], values.dtype)
    _diagonal_of(result)[...] = values
    return finish(result, any_tensor(d))


@named_errors
def set_diag(t: Any, d: Any) -> Any:
    """A copy of ``t`` (``[..., M, N]``) whose main diagonal is ``d``, which must have shape
    ``t.shape[:-2] + (min(M, N),)`` exactly.  The dtype is NumPy's promotion of both.

    >>> set_diag(np.zeros((2, 3), int), np.array([7, 8])).tolist()
    [[7, 0, 0], [0, 8, 0]]
    """
    arr, values = as_array(t), as_array(d)
    require_rank(arr, 2, "set_diag")
    expected = arr.shape[:-2] + (min(arr.shape[-2:]),)
    if values.shape != expected:
        raise LayoutError(
            f"set_diag: the diagonal has shape {values.shape}; t of shape {arr.shape} "
            f"needs {expected}"
        )
    kind = np.result_type(arr, values)
    check_array(arr.shape, kind, "set_diag")  # ``t`` may be a broadcast view
    result = np.array(arr, dtype=kind, order="C", copy=True)
    _diagonal_of(result)[...] = values
    return finish(result, any_tensor(t, d))


@named_errors
def band_part(t: Any, lower: int, upper: int) -> Any:
    """Keep entry ``(i, j)`` of each matrix where ``(i - j <= lower or lower < 0) and
    (j - i <= upper or upper < 0)``, zero the rest; a new dense tensor.

    >>> band_part(np.ones((3, 3), int), 1, 0).tolist()
    [[1, 0, 0], [1, 1, 0], [0, 1, 1]]
    """
    arr = as_array(t)
    require_rank(arr, 2, "band_part")
    low, up = as_int(lower, "lower"), as_int(upper, "upper")
    check_array(arr.shape, arr.dtype, "band_part")
    if arr.size == 0:  # no mask to build (a row or column count may still be huge)
        return finish(np.empty(arr.shape, arr.dtype), any_tensor(t))
    check_array(arr.shape[-2:], np.intp, "band_part (its row - column mask)")
    rows = np.arange(arr.shape[-2])[:, np.newaxis]
    cols = np.arange(arr.shape[-1])[np.newaxis, :]
    keep = ((rows - cols <= low) | (low < 0)) & ((cols - rows <= up) | (up < 0))
    result = np.where(keep, arr, np.zeros((), arr.dtype))
    return finish(dense(result), any_tensor(t))


@named_errors
def eye(rows: int, cols: int | None = None, batch_shape: Any = (), dtype: Any = float) -> Tensor:
    """Identity matrices ``batch_shape + (rows, cols)`` (``cols`` defaults to ``rows``), ones
    on the main diagonal; a new dense Tensor.

    >>> eye(2, 3, batch_shape=[2]).shape
    (2, 2, 3)
    """
    m = as_count(rows, "eye rows")
    n = m if cols is None else as_count(cols, "eye cols")
    batch = as_int_tuple(batch_shape, "batch length")
    if any(b < 0 for b in batch):
        raise LayoutError(f"eye: batch_shape {batch} has a negative length")
    check_array(batch + (m, n), dtype, "eye")
    result = np.zeros(batch + (m, n), dtype)
    _diagonal_of(result)[...] = 1
    return as_tensor(result)


@named_errors
def trace(t: Any) -> Any:
    """Sum of the ``min(M, N)`` main diagonal of the last two axes: shape ``t.shape[:-2]``
    (a rank-0 array or Tensor for a single matrix); a new result, not a view.

    >>> trace(np.arange(6).reshape(2, 3))
    array(4)

    Small floats (float16, bfloat16, ...) accumulate in float32 and are rounded once, as
    einsum's and ``Tensor.sum``'s do (a review: bfloat16's own sum stalls at 256).
    """
    require_rank(as_array(t), 2, "trace")
    diagonal = as_array(diag_part(t))
    # NumPy's sum dtype (bool -> int64, ...); over an axis, so that object stays an array
    try:
        total = np.zeros((0, 0), diagonal.dtype).sum(axis=-1).dtype
    except TypeError:  # str, datetime: a ValueError, as docs/ops.md promises (a review)
        raise ValueError(f"trace: elements of dtype {diagonal.dtype} cannot be summed") from None
    check_array(diagonal.shape[:-1], total, "trace")  # a broadcast batch may be huge
    if not is_small_float(diagonal.dtype):
        # (the dtype: a single matrix's sum of objects is a bare Python number)
        return finish(np.asarray(diagonal.sum(axis=-1), dtype=total), any_tensor(t))
    summed = np.asarray(diagonal.sum(axis=-1, dtype=np.float32)).astype(diagonal.dtype)
    return finish(summed, any_tensor(t))
