"""Indexing operations with TensorFlow semantics; every result is a new dense tensor.

>>> import numpy as np
>>> gather(np.array([10, 20, 30]), [2, 0]).tolist()
[30, 10]
>>> one_hot([0, 5], 3).tolist()                 # 5 is out of range: an all-off row
[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import LayoutError, named_errors, ragged_errors
from ..layout import normalize_axis
from ..memory import check_array, check_array_like
from ..tensors import any_tensor, as_array
from ._common import (
    Array,
    as_count,
    as_int,
    check_holds,
    converted_fill,
    dense,
    finish,
    require_rank,
)

__all__ = ["boolean_mask", "gather", "nonzero_indices", "one_hot", "pad", "where"]

_PAD_MODES = ("constant", "reflect", "symmetric")


def _integer_indices(indices: Any, op: str) -> Array:
    idx = as_array(indices)
    if idx.dtype.kind not in "iu":  # (timedelta64 is an np.integer subtype: a review)
        if idx.size == 0 and idx.dtype == np.float64:  # an empty list: no indices at all
            return idx.astype(np.int64)
        raise ValueError(f"{op}: indices must be integers, got dtype {idx.dtype}")
    return idx


@named_errors
def gather(t: Any, indices: Any, axis: int = 0, batch_dims: int = 0) -> Any:
    """Slices of ``t`` along ``axis`` picked by ``indices``, as ``tf.gather``.

    Result shape ``t.shape[:axis] + indices.shape[batch_dims:] + t.shape[axis+1:]``.  With
    ``batch_dims = b`` the first ``b`` axes of ``t`` and ``indices`` are batch axes (equal
    lengths, ``b <= axis``); each batch gathers with its own indices.  A negative
    ``batch_dims`` counts from ``indices``' rank.  A negative or out-of-range index is a
    ``LayoutError`` (NumPy's ``take`` would wrap).  A new dense tensor; only the elements
    picked are read (a broadcast ``t`` is never copied whole).

    >>> params = np.arange(6).reshape(2, 3)
    >>> gather(params, [[2, 0], [1, 1]], axis=1, batch_dims=1).tolist()
    [[2, 0], [4, 4]]
    """
    arr = as_array(t)
    idx = _integer_indices(indices, "gather")
    require_rank(arr, 1, "gather", "t")
    ax = normalize_axis(axis, arr.ndim, "gather axis")
    b = _batch_dims(batch_dims, idx.ndim, ax)
    if arr.shape[:b] != idx.shape[:b]:
        raise LayoutError(
            f"gather: the {b} batch axes differ: t has shape {arr.shape}, "
            f"indices have shape {idx.shape}"
        )
    shape = arr.shape[:ax] + idx.shape[b:] + arr.shape[ax + 1 :]
    check_array(shape, arr.dtype, "gather")
    check_array(idx.shape, np.intp, "gather (reading the indices)")  # they may be a broadcast
    _check_index_range(idx, arr.shape[ax], ax)
    if 0 in shape:  # nothing to take (and a broadcast batch may be huge): skip the index work
        return finish(np.empty(shape, arr.dtype), any_tensor(t, indices))
    picked = _batched_take(arr, idx.astype(np.intp, copy=False), ax, b)
    return finish(picked, any_tensor(t, indices))


def _batch_dims(batch_dims: Any, index_rank: int, axis: int) -> int:
    b = as_int(batch_dims, "batch_dims")
    if b < 0:
        b += index_rank
    if not 0 <= b <= index_rank:
        raise LayoutError(
            f"gather: batch_dims {batch_dims} is out of range for indices of rank {index_rank}"
        )
    if b > axis:
        raise LayoutError(f"gather: batch_dims {b} must be <= axis {axis}")
    return b


def _check_index_range(idx: Array, length: int, axis: int) -> None:
    if idx.size == 0:
        return
    low, high = idx.min(), idx.max()
    if low < 0 or high >= length:
        bad = low if low < 0 else high
        raise LayoutError(
            f"gather: index {bad} is out of range [0, {length}) for axis {axis} "
            "(negative indices do not wrap)"
        )


def _batched_take(arr: Array, idx: Array, axis: int, b: int) -> Array:
    """``arr[batch..., middle..., idx[batch..., k...], rest...]`` by advanced indexing, which
    reads only the picked elements (``np.take`` and a reshape would copy all of ``arr``)."""
    if b == 0:
        return dense(arr[(slice(None),) * axis + (idx,)])
    # One index array per batch axis, broadcasting against ``idx`` (whose leading axes are
    # the batch): advanced indices separated by slices put their broadcast shape first.
    batch = tuple(
        np.arange(n).reshape((n,) + (1,) * (idx.ndim - k - 1)) for k, n in enumerate(idx.shape[:b])
    )
    keys: tuple[Any, ...] = (*batch, *(slice(None),) * (axis - b), idx)
    picked = arr[keys]
    if axis > b:  # (batch, k..., middle...) -> (batch, middle..., k...)
        k, middle = idx.ndim - b, axis - b
        order = [*range(b), *range(b + k, b + k + middle), *range(b, b + k)]
        picked = np.transpose(picked, order + list(range(b + k + middle, picked.ndim)))
    return dense(picked)


@named_errors
def boolean_mask(t: Any, mask: Any, axis: int = 0) -> Any:
    """The entries of ``t`` where ``mask`` is true: ``mask`` (bool, rank ``K >= 1``) must have
    the shape ``t.shape[axis:axis+K]``; those axes collapse into one holding the true
    positions in row-major order.  A new dense tensor.

    >>> boolean_mask(np.arange(6).reshape(2, 3), [[True, False, True], [False, True, False]])
    array([0, 2, 4])
    """
    arr = as_array(t)
    m = as_array(mask)
    if m.dtype != np.bool_:
        raise ValueError(f"boolean_mask: the mask must be bool, got dtype {m.dtype}")
    require_rank(m, 1, "boolean_mask", "mask")
    require_rank(arr, 1, "boolean_mask", "t")
    ax = normalize_axis(axis, arr.ndim, "boolean_mask axis")
    if arr.shape[ax : ax + m.ndim] != m.shape:
        raise LayoutError(
            f"boolean_mask: mask shape {m.shape} does not match t.shape[{ax}:{ax + m.ndim}] "
            f"of t with shape {arr.shape}"
        )
    check_array(m.shape, np.bool_, "boolean_mask (reading the mask)")  # it may be a broadcast
    count = int(np.count_nonzero(m))
    check_array((count, m.ndim), np.intp, "boolean_mask (the true positions)")
    rest = arr.shape[ax + m.ndim :]
    check_array(arr.shape[:ax] + (count,) + rest, arr.dtype, "boolean_mask")
    positions = np.nonzero(m)  # row-major order; indexing with them needs no reshape copy
    picked = arr[(slice(None),) * ax + positions]
    return finish(dense(picked), any_tensor(t, mask))


@named_errors
def nonzero_indices(t: Any) -> Any:
    """The int64 ``[num_nonzero, rank]`` coordinates of the non-zero entries in row-major
    order (NaN counts as non-zero); rank 0 is an error.  The scan over ``t`` is bounded
    like a copy of it before it starts (``t`` may be a 10^12-element broadcast).  A new array
    (or Tensor, for a Tensor).

    >>> nonzero_indices(np.array([[0, 3], [np.nan, 0]])).tolist()
    [[0, 1], [1, 0]]
    """
    arr = as_array(t)
    require_rank(arr, 1, "nonzero_indices")
    check_array(arr.shape, np.bool_, "nonzero_indices (reading the input)")
    count = int(np.count_nonzero(arr))
    check_array((count, arr.ndim), np.int64, "nonzero_indices")
    coords = np.argwhere(arr).astype(np.int64, copy=False)
    return finish(dense(coords), any_tensor(t))


@named_errors
def where(mask: Any, x: Any, y: Any) -> Any:
    """Element-wise ``x`` where ``mask`` is true, else ``y``, with NumPy broadcasting of all
    three (incompatible shapes are a ``LayoutError``).  A new dense tensor.

    A Python number stays *weak*, as in NumPy (``float32`` and ``1.5`` give ``float32``).

    >>> where(np.array([True, False]), np.array([1, 2]), 0).tolist()
    [1, 0]
    >>> where(np.array([True]), np.ones(1, np.float32), 1.5).dtype
    dtype('float32')
    """
    m, a, b = as_array(mask), _weak(x), _weak(y)
    shapes = (m.shape, np.shape(a), np.shape(b))
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise LayoutError(
            f"where: mask, x and y of shapes {shapes[0]}, {shapes[1]} and {shapes[2]} do not "
            "broadcast"
        ) from None
    kind = np.result_type(a, b)
    for value in (a, b):
        if isinstance(value, int):  # a weak Python int (NumPy's where wraps 1000 into int8)
            check_holds(value, kind, "where")
    check_array(shape, kind, "where")
    result = np.where(m, a, b)
    return finish(dense(result), any_tensor(mask, x, y))


def _weak(x: Any) -> Any:
    """A Python number as it is (NumPy keeps it weak: a review found ``where`` widened
    ``float32`` by ``1.5`` to ``float64``); anything else as an array."""
    return x if isinstance(x, (int, float, complex)) else as_array(x)


@named_errors
def one_hot(
    indices: Any,
    depth: int,
    on_value: Any = 1,
    off_value: Any = 0,
    axis: int = -1,
    dtype: Any = np.float32,
) -> Any:
    """One-hot encoding: a new axis of length ``depth`` at ``axis`` (in ``[-(r+1), r]`` for
    indices of rank ``r``) holding ``on_value`` at the index and ``off_value`` elsewhere.  An
    index ``< 0`` or ``>= depth`` gives an all-``off_value`` row.  ``on_value`` and
    ``off_value`` are scalars that ``dtype`` must hold (else an ``OutOfRangeError``); under
    an unsized string dtype (``U0``) the result is as wide as the wider of them.  A new
    dense tensor.

    >>> one_hot(np.array([1, -1]), 3, axis=0, dtype=np.int8).tolist()
    [[0, 0], [1, 0], [0, 0]]
    """
    idx = _integer_indices(indices, "one_hot")
    n = as_count(depth, "one_hot depth")
    ax = normalize_axis(axis, idx.ndim + 1, "one_hot axis")
    on, off = _scalar(on_value, dtype, "on_value"), _scalar(off_value, dtype, "off_value")
    made = off.dtype  # strings (an unsized U0) as wide as the wider: on_value was cut
    if on.dtype.kind in "SU" and off.dtype.kind in "SU":
        made = np.promote_types(on.dtype, off.dtype)
    check_array(idx.shape + (n,), made, "one_hot")
    values = np.full(idx.shape + (n,), off, dtype=made)
    if values.size:  # then idx has no more elements than the result: its copies are bounded
        flat = idx.reshape(-1)
        rows = np.flatnonzero((flat >= 0) & (flat < n))
        values.reshape(-1, n)[rows, flat[rows]] = on
    return finish(dense(np.moveaxis(values, -1, ax)), any_tensor(indices))


def _scalar(value: Any, dtype: Any, what: str) -> Array:
    """``value`` as a 0-d array of ``dtype``: a shape is a ``LayoutError``, a value the dtype
    cannot hold an ``OutOfRangeError``."""
    check_array_like(value, dtype, f"one_hot {what}")
    with ragged_errors(f"one_hot {what}"):
        shape = np.shape(value)  # (before converting: a broadcast view was converted whole)
    if shape:
        raise LayoutError(f"one_hot: {what} must be a scalar, got shape {shape}")
    return converted_fill(value, dtype, f"one_hot: {what} does not fit")


@named_errors
def pad(t: Any, paddings: Any, mode: str = "constant", value: Any = 0) -> Any:
    """``t`` padded by ``paddings[d] = (before, after)`` (all ``>= 0``, one pair per axis).

    Modes (case-insensitive): ``"constant"`` fills with ``value``; ``"reflect"`` mirrors
    without repeating the edge (each pad ``< length``); ``"symmetric"`` mirrors repeating
    the edge (each pad ``<= length``).  Larger mirror pads are a ``LayoutError`` (NumPy keeps
    reflecting); a pad of 0 is always allowed.  ``value`` is a scalar (TensorFlow's
    ``constant_values``; an array is a ``LayoutError``); one the dtype cannot hold is an
    ``OutOfRangeError``.  A new dense tensor.

    >>> pad(np.array([1, 2, 3]), [(2, 1)], mode="reflect").tolist()
    [3, 2, 1, 2, 3, 2]
    """
    arr = as_array(t)
    pairs = _paddings(paddings, arr.ndim)
    kind = mode.lower() if isinstance(mode, str) else mode
    if not isinstance(kind, str):  # (an array was compared with each mode, element-wise)
        raise ValueError(f"pad: mode must be one of {_PAD_MODES}, not a {type(mode).__name__}")
    if kind not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    if kind != "constant":
        _check_mirror_pads(pairs, arr.shape, kind)
    check_array(tuple(n + a + b for n, (a, b) in zip(arr.shape, pairs)), arr.dtype, "pad")
    check_array_like(value, None, "pad value")
    with ragged_errors("pad value"):
        rank = np.ndim(value)
    if rank:  # NumPy's per-axis constant_values are not TensorFlow's (a review)
        raise LayoutError(f"pad: value must be a scalar, got shape {np.shape(value)}")
    if kind == "constant" and arr.ndim:  # (np.pad wraps -1 into uint8)
        fill = converted_fill(value, arr.dtype, "pad value")
    else:  # (unused: converted, it raised for a string the old code never read, a review)
        check_holds(value, arr.dtype, "pad value")
    if arr.ndim == 0:
        result = np.array(arr, copy=True)
    elif kind == "constant":
        result = np.pad(arr, pairs, mode="constant", constant_values=fill)
    elif kind == "reflect":
        result = np.pad(arr, pairs, mode="reflect")
    else:
        result = np.pad(arr, pairs, mode="symmetric")
    return finish(dense(result), any_tensor(t))


def _paddings(paddings: Any, rank: int) -> list[tuple[int, int]]:
    _refuse_bools(paddings)  # (before as_array: a list of bools and ints becomes int64)
    raw = as_array(paddings)
    if raw.size == 0 and rank == 0:
        return []
    if raw.shape != (rank, 2):
        raise LayoutError(f"pad: paddings must have shape ({rank}, 2), got {raw.shape}")
    pairs = [(as_int(p[0], "padding"), as_int(p[1], "padding")) for p in raw.tolist()]
    if any(n < 0 for pair in pairs for n in pair):
        raise LayoutError(f"pad: paddings {pairs} must be >= 0")
    return pairs


def _refuse_bools(paddings: Any, depth: int = 0) -> None:
    """A bool among nested paddings is a ``TypeError``, as a bool count is everywhere (a
    review: ``[(True, 0)]`` padded by one where ``[(True, False)]`` was refused).  Two
    levels at most (``(rank, 2)``): a deeper nesting is refused by its shape, and a list
    holding itself recursed without end (a review)."""
    if isinstance(paddings, (bool, np.bool_)):
        as_int(paddings, "padding")  # raises its TypeError
    if getattr(paddings, "dtype", None) == np.bool_:  # an array or Tensor of bools, nested
        raise TypeError("padding must be an integer, not bool")
    if isinstance(paddings, (list, tuple)) and depth < 2:
        for item in paddings:
            _refuse_bools(item, depth + 1)


def _check_mirror_pads(pairs: list[tuple[int, int]], shape: tuple[int, ...], mode: str) -> None:
    limit = 1 if mode == "reflect" else 0  # reflect: pad < length; symmetric: pad <= length
    for axis, (pair, length) in enumerate(zip(pairs, shape)):
        if max(pair) > 0 and max(pair) > length - limit:
            bound = "less than" if mode == "reflect" else "at most"
            raise LayoutError(
                f"pad: {mode} padding {pair} on axis {axis} must be {bound} the length {length}"
            )
