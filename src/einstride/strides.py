"""A strided view in bytes: shape, signed byte strides and item size (and, optionally, the
address of logical element 0).  The one view model of the overlap rules
(:class:`~einstride.footprint.Footprint`) and of the einsum planner (its ``Term``), with the
row-major rule written once.  (:class:`~einstride.layout.Layout` is the validated public value:
element strides, never negative.)

>>> view = ByteView(shape=(2, 3), strides=(24, 8), itemsize=8)
>>> view.is_dense, view.size, view.nbytes
(True, 6, 48)
>>> ByteView(shape=(3, 2), strides=(8, 24), itemsize=8).is_dense       # a transposed view
False
>>> row_major_strides((2, 0, 4), 8)                         # a zero length counts as one
(32, 32, 8)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ByteView", "is_row_major", "row_major_strides"]


def row_major_strides(shape: Sequence[int], itemsize: int = 1) -> tuple[int, ...]:
    """Row-major (C order) strides of ``shape``, in units of ``itemsize`` (1: element
    strides).  A zero-length axis counts as length 1, so a shape without elements gets the
    strides of its shape with the zeros made ones (NumPy 1.x's rule for a new array; NumPy 2
    gives it zero strides: any strides describe a view without elements, and
    :meth:`~einstride.layout.Layout.create` makes them all zero).

    >>> row_major_strides((2, 3, 4))
    (12, 4, 1)
    >>> row_major_strides((2, 0, 4), 8)
    (32, 32, 8)
    """
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def is_row_major(shape: Sequence[int], strides: Sequence[int], itemsize: int = 1) -> bool:
    """Whether a view is row-major contiguous without gaps: length-1 axes are ignored (their
    stride is never used) and a view without elements is dense.

    >>> is_row_major((2, 1, 3), (3, 99, 1)), is_row_major((2, 3), (1, 2))
    (True, False)
    >>> is_row_major((0, 3), (5, 5))
    True
    """
    if 0 in shape:
        return True
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 1:
            continue
        if s != expected:
            return False
        expected *= n
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class ByteView:
    """``shape``, signed byte ``strides`` (as ``ndarray.strides``: negative when reversed,
    zero when broadcast) and ``itemsize``; ``address``, where known, is the byte address of
    logical element 0 (it means nothing for a view without elements)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int
    address: int | None = None

    @classmethod
    def row_major(cls, shape: Sequence[int], itemsize: int) -> ByteView:
        """The view of a new C-ordered array of ``shape``.

        >>> ByteView.row_major((2, 3), 4).strides
        (12, 4)
        """
        return cls(
            shape=tuple(shape), strides=row_major_strides(shape, itemsize), itemsize=itemsize
        )

    @property
    def size(self) -> int:
        """The number of logical elements (exact, however large)."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def is_dense(self) -> bool:
        """Row-major contiguous without gaps (see :func:`is_row_major`)."""
        return is_row_major(self.shape, self.strides, self.itemsize)

    def moving_axes(self) -> tuple[tuple[int, int], ...]:
        """(length, stride) of the axes that move: a length-1 axis's stride is never used."""
        return tuple((n, s) for n, s in zip(self.shape, self.strides) if n != 1)

    def same_view(self, other: ByteView) -> bool:
        """The same logical-index -> memory mapping: same item size, same shape and strides
        once length-1 axes are dropped, same address (two views without elements: the same
        squeezed shape).

        >>> a = ByteView(shape=(1, 3), strides=(0, 8), itemsize=8, address=64)
        >>> a.same_view(ByteView(shape=(3,), strides=(8,), itemsize=8, address=64))
        True
        """
        if self.size == 0 or other.size == 0:
            mine = [n for n in self.shape if n != 1]
            theirs = [n for n in other.shape if n != 1]
            return self.size == other.size == 0 and mine == theirs
        return (
            self.itemsize == other.itemsize
            and self.address == other.address
            and self.moving_axes() == other.moving_axes()
        )
