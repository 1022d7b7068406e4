"""NumPy-signature functions that other libraries call on an array module: ``tensordot``.

opt_einsum's backend protocol (``opt_einsum.contract(..., backend="einstride")``) imports
``einstride`` and calls ``einstride.tensordot(a, b, axes=...)``, ``einstride.transpose(x,
axes)`` and ``einstride.einsum``.  ``tensordot`` here has NumPy's signature and semantics; it
builds the einsum equation of the contraction and runs it through :func:`einstride.einsum`,
so it gets a planned contraction over views (no copy of NumPy's reshape-and-dot).

>>> import numpy as np
>>> a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(4, 3)
>>> tensordot(a, b, axes=([1, 2], [1, 0])).tolist()
[440.0, 1232.0]
>>> tensordot_equation((2, 3, 4), (4, 3), axes=([1, 2], [1, 0]))
'abc,cb->a'
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .engine import einsum
from .engine.call import check_conversion
from .errors import EinsumError, EinsumTypeError
from .layout import as_int_tuple
from .memory import check_listing

__all__ = ["tensordot", "tensordot_equation"]

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Labels past the 52 letters: CJK ideographs, ordinary characters for einstride's parser.
_MORE_LABELS = 0x4E00


def _label(i: int) -> str:
    return _LETTERS[i] if i < len(_LETTERS) else chr(_MORE_LABELS + i)


def _axis_index(value: Any, side: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"tensordot: axes of {side} must be integers, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"tensordot: axes of {side} must be integers, not {type(value).__name__}"
        ) from None


def _axis_list(value: Any, side: str) -> list[int]:
    """One side of a pair: an int or a sequence of ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return [int(value)]
    check_listing(value, f"tensordot: axes of {side}")  # (a huge view: listed for seconds)
    try:
        items = list(value)
    except TypeError:
        raise TypeError(
            f"tensordot: axes of {side} must be an int or a sequence of ints, "
            f"not {type(value).__name__}"
        ) from None
    return [_axis_index(v, side) for v in items]


def axis_pairs(axes: Any, rank_a: int) -> tuple[list[int], list[int]]:
    """NumPy's ``axes``: ``N`` (the last ``N`` axes of ``a`` with the first ``N`` of ``b``) or
    a pair ``(axes_a, axes_b)`` of ints or sequences (not yet normalized).

    >>> axis_pairs(2, 3), axis_pairs(([0, -1], 1), 3), axis_pairs(np.array(1), 2)
    (([1, 2], [0, 1]), ([0, -1], [1]), ([1], [0]))
    """
    if isinstance(axes, np.ndarray) and axes.ndim == 0 and axes.dtype.kind in "iu":
        axes = axes.item()  # a 0-d integer array is a count, as NumPy takes it (a review)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, (bool, np.bool_)):
        count = int(axes)
        if count < 0:
            raise EinsumError(f"tensordot: axes must be >= 0 (a count), got {count}")
        if count > rank_a:
            raise EinsumError(f"tensordot: axes={count} but a has only {rank_a} axes")
        return list(range(rank_a - count, rank_a)), list(range(count))
    # both classes: NumPy raises ValueError or TypeError here, depending on the value
    if isinstance(axes, (str, bytes, bool, np.bool_)):
        raise EinsumTypeError(
            f"tensordot: axes must be an int or a pair (axes_a, axes_b), not {axes!r}"
        )
    check_listing(axes, "tensordot: axes")
    try:
        pair = list(axes)
    except TypeError:
        raise EinsumTypeError(
            f"tensordot: axes must be an int or a pair (axes_a, axes_b), not {axes!r}"
        ) from None
    if len(pair) != 2:
        raise EinsumError(
            f"tensordot: axes must be a pair (axes_a, axes_b), got {len(pair)} item(s)"
        )
    return _axis_list(pair[0], "a"), _axis_list(pair[1], "b")


def _listed(axes: list[int], most: int = 8) -> str:
    """Axes for a message, the first ``most`` of a long list (a review: ten million axes
    printed whole).

    >>> _listed([0, 1]), _listed(list(range(20)), 3)
    ('[0, 1]', '[0, 1, 2, ... (20 axes)]')
    """
    if len(axes) <= most:
        return str(axes)
    return f"[{', '.join(map(str, axes[:most]))}, ... ({len(axes)} axes)]"


def _normalized(axes: list[int], shape: tuple[int, ...], side: str) -> list[int]:
    rank = len(shape)
    result = []
    for axis in axes:
        if not -rank <= axis < rank:
            raise EinsumError(f"tensordot: axis {axis} is out of range for {side} of shape {shape}")
        result.append(axis % rank)
    if len(set(result)) != len(result):
        raise EinsumError(f"tensordot: duplicate axes {_listed(axes)} of {side}")
    return result


def tensordot_equation(shape_a: Sequence[int], shape_b: Sequence[int], axes: Any = 2) -> str:
    """The einsum equation of ``tensordot(a, b, axes)`` for operands of these shapes: the
    free axes of ``a`` then those of ``b``, in order; every error NumPy's ``tensordot`` finds
    (a count or an axis out of range, duplicate axes, lists of different lengths, contracted
    sizes that differ) is an :class:`~einstride.EinsumError` naming the axes and sizes.

    >>> tensordot_equation((2, 3), (3, 4), axes=1)
    'ab,bc->ac'
    >>> tensordot_equation((2, 3), (3, 4), axes=0)
    'ab,cd->abcd'
    >>> tensordot_equation((2, 3), (4, 3), axes=([1], [0]))
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: tensordot: axis 1 of a has size 3 but axis 0 of b has size 4
    """
    shape_a = as_int_tuple(shape_a, "tensordot_equation: shape_a")
    shape_b = as_int_tuple(shape_b, "tensordot_equation: shape_b")
    raw_a, raw_b = axis_pairs(axes, len(shape_a))
    if len(raw_a) != len(raw_b):
        raise EinsumError(
            f"tensordot: {len(raw_a)} axes of a {_listed(raw_a)} but {len(raw_b)} of b "
            f"{_listed(raw_b)}; "
            "the lists pair up and must have the same length"
        )
    axes_a = _normalized(raw_a, shape_a, "a")
    axes_b = _normalized(raw_b, shape_b, "b")
    for i, j in zip(axes_a, axes_b):
        if shape_a[i] != shape_b[j]:
            raise EinsumError(
                f"tensordot: axis {i} of a has size {shape_a[i]} but axis {j} of b has size "
                f"{shape_b[j]}"
            )
    labels_a = [_label(i) for i in range(len(shape_a))]
    fresh = iter(range(len(shape_a), len(shape_a) + len(shape_b)))
    paired = dict(zip(axes_b, axes_a))
    labels_b = [
        labels_a[paired[j]] if j in paired else _label(next(fresh)) for j in range(len(shape_b))
    ]
    free_a = [lab for i, lab in enumerate(labels_a) if i not in axes_a]
    free_b = [lab for j, lab in enumerate(labels_b) if j not in paired]
    return f"{''.join(labels_a)},{''.join(labels_b)}->{''.join(free_a + free_b)}"


def _operand(x: Any, name: str) -> Any:
    """Arrays, Tensors and Dask arrays as they are; anything else through ``np.asarray``."""
    if hasattr(x, "shape") and hasattr(x, "ndim") and not isinstance(x, np.generic):
        return x
    check_conversion(x, f"tensordot: {name}")
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise EinsumTypeError(
            f"tensordot: {name} ({type(x).__name__}) cannot be converted to an array: {exc}"
        ) from None


def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """NumPy's ``tensordot``: sum the products of ``a`` and ``b`` over the paired ``axes``
    (an int ``N``: the last ``N`` axes of ``a`` with the first ``N`` of ``b``; or a pair of
    axis lists, negative axes allowed).  The result has the free axes of ``a`` then those of
    ``b``.  It runs as the einsum of :func:`tensordot_equation`; NumPy in -> NumPy out (a
    rank-0 result is a 0-d array, as NumPy's), any Tensor in -> Tensor out.

    >>> tensordot(np.ones((2, 3)), np.ones((3, 4)), axes=1)
    array([[3., 3., 3., 3.],
           [3., 3., 3., 3.]])
    >>> tensordot(np.arange(3), np.arange(3), axes=1)
    array(5)
    """
    left, right = _operand(a, "a"), _operand(b, "b")
    subscripts = tensordot_equation(left.shape, right.shape, axes)
    result = einsum(subscripts, left, right)
    return np.asarray(result) if isinstance(result, np.generic) else result
