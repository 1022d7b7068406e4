"""Shape operations: views through the Layout algebra wherever the strides allow it.

Views (no copy, same storage): ``unstack``, ``split``, ``transpose``, ``broadcast_to``,
``squeeze``, ``expand_dims``, and ``reshape``/``flatten`` when the strides allow it.
Copies: ``stack``, ``concat`` (or written into ``out=``), ``tile``.

>>> import numpy as np
>>> a = np.arange(6).reshape(2, 3)
>>> [p.tolist() for p in split(a, [1, 2], axis=1)]
[[[0], [3]], [[1, 2], [4, 5]]]
>>> np.shares_memory(transpose(a), a)
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import LayoutError, named_errors, value_errors
from ..layout import (
    Layout,
    as_int,
    as_int_tuple,
    infer_shape,
    is_int_scalar,
    normalize_axes,
    normalize_axis,
)
from ..memory import check_array, check_listing, check_views
from ..tensors import Tensor, any_tensor, as_array, as_tensor
from ..transfer import cast_may_stop, check_out, errors_may_raise
from ._common import Array, finish, map_view, map_views

__all__ = [
    "broadcast_to",
    "concat",
    "expand_dims",
    "flatten",
    "reshape",
    "split",
    "squeeze",
    "stack",
    "tile",
    "transpose",
    "unstack",
]


@named_errors
def unstack(t: Any, axis: int = 0) -> list[Any]:
    """The ``t.shape[axis]`` slices along ``axis``, that axis removed; each is a **view**.

    >>> [row.tolist() for row in unstack(np.arange(6).reshape(2, 3), axis=-1)]
    [[0, 3], [1, 4], [2, 5]]
    """
    t = _operand(t)
    if t.ndim == 0:
        raise LayoutError("unstack: the input has rank 0; there is no axis to unstack")

    def parts(layout: Layout) -> list[Layout]:
        ax = normalize_axis(axis, layout.ndim, "unstack axis")
        lead = (slice(None),) * ax
        check_views(layout.shape[ax], "unstack")  # a broadcast axis may be huge
        return [layout.index((*lead, i)) for i in range(layout.shape[ax])]

    return map_views(t, parts)


@named_errors
def split(t: Any, count_or_sizes: Any, axis: int = 0) -> list[Any]:
    """Split along ``axis`` into **views**: ``count`` equal parts (``count`` must divide the
    length), or parts of the given ``sizes`` (each ``>= 0``, summing exactly to the length;
    no ``-1``).

    >>> [p.tolist() for p in split(np.arange(6), 3)]
    [[0, 1], [2, 3], [4, 5]]
    >>> split(np.arange(5), 2)
    Traceback (most recent call last):
    einstride.errors.LayoutError: split: 2 does not divide the length 5 of axis 0
    """
    t = _operand(t)
    if t.ndim == 0:
        raise LayoutError("split: the input has rank 0; there is no axis to split")

    def parts(layout: Layout) -> tuple[Layout, ...]:
        ax = normalize_axis(axis, layout.ndim, "split axis")
        sizes = _split_sizes(count_or_sizes, layout.shape[ax], ax)
        return layout.split(ax, sizes)

    return map_views(t, parts)


def _split_sizes(count_or_sizes: Any, length: int, axis: int) -> tuple[int, ...]:
    if is_int_scalar(count_or_sizes):
        count = as_int(count_or_sizes, "split count")
        if count <= 0:
            raise LayoutError(f"split: the count must be > 0, got {count}")
        if length % count:
            raise LayoutError(f"split: {count} does not divide the length {length} of axis {axis}")
        check_views(count, "split")  # any count divides an empty axis
        return (length // count,) * count
    _ordered(count_or_sizes, "split sizes")
    sizes = as_int_tuple(count_or_sizes, "split size")
    check_views(len(sizes), "split")
    if any(n < 0 for n in sizes):
        raise LayoutError(f"split: sizes {sizes} must be >= 0 (a -1 is not inferred)")
    if sum(sizes) != length:
        raise LayoutError(f"split: sizes {sizes} sum to {sum(sizes)}, not {length} (axis {axis})")
    return sizes


@named_errors
def stack(tensors: Iterable[Any], axis: int = 0, out: Any = None) -> Any:
    """Stack equal-shape tensors along a new ``axis`` (in ``[-(r+1), r]``); a new dense
    tensor, or written into ``out``, which may not overlap any input (returns ``out``).

    >>> stack([np.array([1, 2]), np.array([3, 4])], axis=1).tolist()
    [[1, 3], [2, 4]]
    """
    items = _collect(tensors, "stack")
    arrays = [as_array(x) for x in items]
    shape = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape != shape:
            raise LayoutError(f"stack: input {i} has shape {a.shape}, input 0 has shape {shape}")
    ax = normalize_axis(axis, len(shape) + 1, "stack axis")
    result_shape = shape[:ax] + (len(arrays),) + shape[ax:]
    dst = _destination(out, result_shape, np.result_type(*arrays), arrays, "stack")
    parts = [((slice(None),) * ax + (i,), a) for i, a in enumerate(arrays)]
    _write_parts(dst, parts, out is not None, "stack")
    return out if out is not None else finish(dst, any_tensor(*items))


@named_errors
def concat(tensors: Iterable[Any], axis: int = 0, out: Any = None) -> Any:
    """Join tensors of one rank (``>= 1``) along an existing ``axis``; the other lengths must
    match.  A new dense tensor, or written into a non-overlapping ``out`` (returned).

    >>> concat([np.zeros((1, 2)), np.ones((2, 2))]).tolist()
    [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
    """
    items = _collect(tensors, "concat")
    arrays = [as_array(x) for x in items]
    first = arrays[0].shape
    if any(a.ndim == 0 for a in arrays):
        raise LayoutError("concat: rank-0 inputs cannot be concatenated")
    ax = normalize_axis(axis, len(first), "concat axis")
    for i, a in enumerate(arrays):
        if a.ndim != len(first) or a.shape[:ax] + a.shape[ax + 1 :] != first[:ax] + first[ax + 1 :]:
            raise LayoutError(
                f"concat: input {i} has shape {a.shape}, which does not match input 0's "
                f"{first} outside axis {ax}"
            )
    total = sum(a.shape[ax] for a in arrays)
    result_shape = first[:ax] + (total,) + first[ax + 1 :]
    dst = _destination(out, result_shape, np.result_type(*arrays), arrays, "concat")
    parts, start = [], 0
    for a in arrays:
        parts.append(((slice(None),) * ax + (slice(start, start + a.shape[ax]),), a))
        start += a.shape[ax]
    _write_parts(dst, parts, out is not None, "concat")
    return out if out is not None else finish(dst, any_tensor(*items))


def _write_parts(dst: Array, parts: Sequence[tuple[Any, Array]], given: bool, op: str) -> None:
    """Each ``(index, array)`` of ``parts`` written into ``dst``; into a temporary first when
    ``dst`` is the caller's ``out=`` (``given``) and a cast may stop half-way
    (:func:`.transfer.cast_may_stop`), so ``out`` is untouched on any error (a review found
    ``concat([ones(2), [1e300]], out=float32)`` under ``np.errstate(over="raise")`` leaving
    ``[1, 1, inf]``)."""
    target = dst
    errors = given and errors_may_raise()  # (asked once: a part each cost 4-5 us, a review)
    if given and any(cast_may_stop(a.dtype, dst.dtype, errors) for _, a in parts):
        check_array(dst.shape, dst.dtype, f"{op} (a temporary for out=)")
        target = np.empty(dst.shape, dst.dtype)
    with value_errors(op):
        for index, a in parts:
            target[index] = a
    if target is not dst:
        np.copyto(dst, target, casting="no")


def _collect(tensors: Iterable[Any], op: str) -> list[Any]:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}: pass a sequence of tensors, not a single Tensor")
    _ordered(tensors, f"{op} tensors")
    check_listing(tensors, f"{op} tensors")
    items = list(tensors)
    if not items:
        raise LayoutError(f"{op}: the list of tensors is empty")
    return items


def _ordered(values: Any, what: str) -> None:
    """A set has no order and a mapping lists its keys: neither is a sequence of tensors or
    sizes (a review: ``stack({1: x})`` stacked the key, ``split(a, {1, 2})`` took the set's
    order)."""
    if isinstance(values, (set, frozenset, dict)):
        raise TypeError(
            f"{what} must be a sequence (a list or tuple), not a {type(values).__name__}"
        )


def _destination(
    out: Any, shape: tuple[int, ...], dtype: np.dtype[Any], sources: Sequence[Array], op: str
) -> Array:
    """A new dense array, or ``out``'s ndarray view after every check (nothing written yet):
    each input's dtype must go into ``out``'s by a same_kind cast, as NumPy checks them (a
    review: their common dtype was checked, and int64 with uint64 is float64)."""
    if out is None:
        check_array(shape, dtype, op)  # the inputs may be broadcast views
        return np.empty(shape, dtype)
    into = getattr(out, "dtype", None)
    if isinstance(into, np.dtype):  # (else check_out refuses out itself)
        refused = (s.dtype for s in sources if not np.can_cast(s.dtype, into, "same_kind"))
        dtype = next(refused, into)
    return check_out(out, sources, dtype, op, shape)


@named_errors
def tile(t: Any, multiples: Any) -> Any:
    """Repeat ``t`` ``multiples[d]`` times along each axis ``d``; one multiple per axis, each
    ``>= 0`` (NumPy would pad a short list; this does not).  A new dense tensor.

    >>> tile(np.array([[1, 2]]), [2, 2]).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    arr = as_array(t)
    reps = as_int_tuple(multiples, "multiple")
    if len(reps) != arr.ndim:
        raise LayoutError(f"tile: {len(reps)} multiples {reps} for an input of rank {arr.ndim}")
    if any(m < 0 for m in reps):
        raise LayoutError(f"tile: multiples {reps} must be >= 0")
    shape = tuple(n * m for n, m in zip(arr.shape, reps))
    check_array(shape, arr.dtype, "tile")
    if 0 in shape:  # np.tile would still copy a (maybe broadcast) input
        return finish(np.empty(shape, arr.dtype), any_tensor(t))
    return finish(np.tile(arr, reps), any_tensor(t))


@named_errors
def reshape(t: Any, shape: Any) -> Any:
    """The elements in row-major order under ``shape`` (one ``-1`` is inferred): a **view**
    when the strides allow it, otherwise a dense copy.

    >>> a = np.arange(6)
    >>> np.shares_memory(reshape(a, (2, -1)), a)
    True
    >>> np.shares_memory(reshape(transpose(a.reshape(2, 3)), (6,)), a)   # needs a copy
    False
    """
    src = as_tensor(t)
    if not isinstance(shape, (int, np.integer)):
        shape = as_int_tuple(shape, "reshape shape")
    layout = src.layout.reshape(shape)
    if layout is not None:
        view = src.view(layout)
        return view if isinstance(t, Tensor) else view.numpy()
    target = infer_shape(shape, src.size)
    check_array(target, src.dtype, "reshape (a copy)")
    dense = np.array(src.numpy(), order="C", copy=True).reshape(target)
    return finish(dense, isinstance(t, Tensor))


@named_errors
def flatten(t: Any) -> Any:
    """1-D in row-major order (rank 0 gives shape ``(1,)``): a **view** when the strides allow
    it, otherwise a dense copy.

    >>> flatten(np.float32(3)).shape
    (1,)
    """
    t = _operand(t)
    return reshape(t, (-1,) if t.ndim else (1,))


def _operand(t: Any) -> Any:
    """A Tensor as it is, anything else as an ndarray (its conversion sized first)."""
    return t if isinstance(t, Tensor) else as_array(t)


@named_errors
def expand_dims(t: Any, axis: Any) -> Any:
    """Insert length-1 axes at ``axis`` (an int or a tuple, positions in the result); a
    **view**.

    >>> expand_dims(np.zeros((2, 3)), (0, -1)).shape
    (1, 2, 3, 1)
    """
    wanted = as_int_tuple(axis, "expand_dims axis")

    def expanded(layout: Layout) -> Layout:
        for ax in sorted(normalize_axes(wanted, layout.ndim + len(wanted), "expand_dims axis")):
            layout = layout.expand(ax)
        return layout

    return map_view(t, expanded)


@named_errors
def squeeze(t: Any, axis: Any = None) -> Any:
    """Remove length-1 axes: all of them (``axis=None``) or the named ones (an int or a tuple),
    each of which must have length 1; a **view**.

    >>> squeeze(np.zeros((1, 2, 1))).shape
    (2,)
    >>> squeeze(np.zeros((1, 2, 1)), 1)
    Traceback (most recent call last):
    einstride.errors.LayoutError: squeeze: cannot squeeze axis 1 of length 2
    """
    axes = None if axis is None else as_int_tuple(axis, "squeeze axis")
    return map_view(t, lambda layout: layout.squeeze(axes, "squeeze axis"))


@named_errors
def transpose(t: Any, perm: Any = None) -> Any:
    """Axes permuted (new axis ``k`` is old axis ``perm[k]``), reversed when ``perm`` is
    ``None``; a **view**.

    >>> transpose(np.zeros((2, 3, 4)), (1, -1, 0)).shape
    (3, 4, 2)
    """

    def permuted(layout: Layout) -> Layout:
        if perm is None:
            return layout.permute(tuple(reversed(range(layout.ndim))))
        return layout.permute(as_int_tuple(perm, "transpose axis"))

    return map_view(t, permuted)


@named_errors
def broadcast_to(t: Any, shape: Any) -> Any:
    """``t`` broadcast to ``shape`` (NumPy rules) as a **view** with zero strides.  A NumPy
    result is read-only, as NumPy's own (its elements repeat).

    >>> b = broadcast_to(np.arange(3), (2, 3))
    >>> b.tolist(), b.strides
    ([[0, 1, 2], [0, 1, 2]], (0, 8))
    """
    target = as_int_tuple(shape, "length")
    view = map_view(t, lambda layout: layout.broadcast_to(target))
    if isinstance(view, np.ndarray):
        view.flags.writeable = False
    return view
