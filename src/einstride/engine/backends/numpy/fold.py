"""Layout facts the planner decides with: folding label groups and BLAS-ready matrices.

A *term* is an operand as the planner sees it: one distinct label per axis, a shape and
**byte** strides (as ``ndarray.strides``; possibly negative or zero).  A group of labels
*folds* in a term when some ordering of the group makes the term's axes one strided
dimension: ``stride[l_k] == stride[l_k+1] * size[l_k+1]`` along the ordering.  Folding a
group jointly across several terms (TBLIS style) means one ordering works for all of them,
so ``transpose + reshape`` is a view in every one of them.

>>> t = Term.row_major((0, 1, 2), (2, 3, 4), np.dtype(float))      # C order
>>> fold_group((1, 2), [t])               # j, k fold (in that order)
(1, 2)
>>> fold_group((2, 1), [t])               # any given order: the strides decide
(1, 2)
>>> fold_group((0, 2), [t]) is None       # i and k are not adjacent in memory
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....strides import ByteView
from ....strides import row_major_strides as contiguous_strides  # the one row-major rule

__all__ = [
    "BLAS_TYPES",
    "Term",
    "blas_ready",
    "contiguous_strides",
    "fold_group",
    "fold_stride",
    "ordered_empty",
    "write_order",
]

BLAS_TYPES = frozenset(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))
"""The dtypes ``numpy.matmul`` hands to BLAS; other dtypes use NumPy's own loops."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Term:
    """An operand during planning: one distinct label per axis of a byte ``view`` (its item
    size is ``dtype``'s)."""

    labels: tuple[int, ...]
    view: ByteView
    dtype: np.dtype[Any]

    @classmethod
    def of(
        cls,
        labels: Sequence[int],
        shape: Sequence[int],
        strides: Sequence[int],
        dtype: np.dtype[Any],
    ) -> Term:
        view = ByteView(shape=tuple(shape), strides=tuple(strides), itemsize=dtype.itemsize)
        return cls(labels=tuple(labels), view=view, dtype=dtype)

    @classmethod
    def row_major(cls, labels: Sequence[int], shape: Sequence[int], dtype: np.dtype[Any]) -> Term:
        """A new C-ordered array of ``shape``, its axes labelled ``labels``."""
        view = ByteView.row_major(shape, dtype.itemsize)
        return cls(labels=tuple(labels), view=view, dtype=dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.view.shape

    @property
    def strides(self) -> tuple[int, ...]:
        return self.view.strides

    def stride(self, label: int) -> int:
        return self.view.strides[self.labels.index(label)]

    def size_of(self, label: int) -> int:
        return self.view.shape[self.labels.index(label)]

    @property
    def size(self) -> int:
        return self.view.size

    @property
    def nbytes(self) -> int:
        return self.view.nbytes


def _chains(order: Sequence[int], term: Term) -> bool:
    return all(
        term.stride(outer) == term.stride(inner) * term.size_of(inner)
        for outer, inner in itertools.pairwise(order)
    )


def fold_group(group: Sequence[int], terms: Sequence[Term]) -> tuple[int, ...] | None:
    """An ordering of ``group`` that folds in every term, or None.

    Labels of size 1 fold anywhere (they go last); a term without elements folds anything.
    With no terms to satisfy, ``group`` comes back in the given order.
    """
    live = [t for t in terms if t.size != 0]
    if not live:
        return tuple(group)
    big = [label for label in group if live[0].size_of(label) != 1]
    small = [label for label in group if live[0].size_of(label) == 1]
    if len(big) <= 1:
        return tuple(big + small)
    for ref in live:
        order = sorted(big, key=lambda label: -abs(ref.stride(label)))
        if all(_chains(order, t) for t in live):
            return tuple(order + small)
    return None


def fold_stride(order: Sequence[int], term: Term) -> int:
    """The byte stride of the folded dimension (its innermost label of size > 1)."""
    for label in reversed(order):
        if term.size_of(label) != 1:
            return term.stride(label)
    return term.dtype.itemsize


def blas_ready(rows: int, cols: int, row_stride: int, col_stride: int, itemsize: int) -> bool:
    """Whether ``numpy.matmul`` hands this matrix to BLAS as is (no hidden copy).

    Matrices need one unit stride and a leading dimension that does not alias; vectors a
    positive stride that is a whole number of items.

    >>> blas_ready(4, 3, 24, 8, 8), blas_ready(4, 3, 8, 32, 8), blas_ready(4, 3, 48, 16, 8)
    (True, True, False)
    """
    if rows == 0 or cols == 0 or (rows == 1 and cols == 1):
        return True
    if rows == 1:
        return col_stride > 0 and col_stride % itemsize == 0
    if cols == 1:
        return row_stride > 0 and row_stride % itemsize == 0
    whole = row_stride % itemsize == 0 and col_stride % itemsize == 0
    c_order = col_stride == itemsize and row_stride >= cols * itemsize
    f_order = row_stride == itemsize and col_stride >= rows * itemsize
    return whole and (c_order or f_order)


def write_order(
    output: Sequence[int],
    labels: Sequence[int],
    shape: Sequence[int],
    strides: Sequence[int],
) -> tuple[int, ...]:
    """The axes of a new result over the distinct labels ``output``, outermost first, in
    the order one pass of NumPy's loop best writes it from an operand over ``labels`` (of
    ``shape`` and byte ``strides``): the places of the output labels it holds (at a size
    other than 1) taken by them in its memory order (the largest stride first; ties by
    position), the others kept, so that the loop reads it in runs, as NumPy's
    ``order="K"`` lays out its result.  The identity where that is the output's order.

    >>> a, b, c, d = range(4)
    >>> write_order((d, a, b, c), (c, d, a, b), (20,) * 4, (64000, 3200, 160, 8))
    (3, 0, 1, 2)
    >>> write_order((a, b), (a, b), (3, 4), (8, 24))   # a Fortran-ordered operand
    (1, 0)
    >>> write_order((c, b, a), (a, b), (3, 1), (8, 8))  # c lacked, b of size 1: in place
    (0, 1, 2)
    """
    at = {label: k for k, label in enumerate(output)}
    wide = [ax for ax, n in enumerate(shape) if n != 1 and labels[ax] in at]
    places = sorted(at[labels[ax]] for ax in wide)
    wide.sort(key=lambda ax: -abs(strides[ax]))  # (stable: ties keep their positions)
    order = list(range(len(output)))
    for place, ax in zip(places, wide):
        order[place] = at[labels[ax]]
    return tuple(order)


def ordered_empty(order: Sequence[int]) -> Callable[[Sequence[int], Any], np.ndarray[Any, Any]]:
    """``empty(shape, dtype)``: a new array laid out with its axes ``order`` outermost
    first (a transposed view of a C-ordered one; ``()``: ``numpy.empty`` itself).

    >>> ordered_empty((1, 0))((2, 3), np.float64).strides
    (8, 16)
    """
    if not order:
        return np.empty
    order = tuple(order)
    inverse = [0] * len(order)
    for k, ax in enumerate(order):
        inverse[ax] = k

    def empty(shape: Sequence[int], dtype: Any) -> np.ndarray[Any, Any]:
        return np.empty([shape[ax] for ax in order], dtype).transpose(inverse)

    return empty
