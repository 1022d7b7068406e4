"""Whether strided views share memory: NumPy's exact solver, within a bound of work.

The exact question (do two strided views share a byte; do two logical positions of one view
meet) is an integer-programming problem, and NumPy's solver can take exponential time: a
22-axis view of 4M elements whose strides have distinct subset sums took it 50 s, each two
axes more about 7x as long (a review).  :func:`shares_memory` runs the solver within
:data:`SOLVER_WORK` steps (about 30 ms); past that bound, views of up to
:data:`LISTED_MAX` elements are answered exactly from their sorted addresses (about 0.3 s at
4M), and larger ones count as sharing: the safe side for a destination (a copy through a
temporary, or an error before anything is written).

>>> storage = np.arange(12)
>>> shares_memory(storage[0::2], storage[1::2]), shares_memory(storage[:4], storage[3:])
(False, True)
>>> repeats_listed([(1, 3), (1, 2)], 6)        # sliding windows: 0,1,2 and 1,2,3 meet
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from . import memory as _memory

__all__ = ["LISTED_MAX", "SOLVER_WORK", "repeats_listed", "shares_memory", "solved"]

Array = np.ndarray[Any, Any]

SOLVER_WORK: Final = 10**6  # NumPy's solver steps (measured: 33 ns each, so ~30 ms)
LISTED_MAX: Final = 2**22  # elements past which a view too hard to solve counts as sharing
_ADDRESS_BYTES: Final = 24  # per element listed: its address, the sort's copy, the search's

_TooHardError: type[Exception] = getattr(np, "exceptions", np).TooHardError


def solved(x: Array, y: Array) -> bool | None:
    """NumPy's exact answer within :data:`SOLVER_WORK` steps; None past it."""
    try:
        # (NumPy's stub lists -1 and 0 only; the function takes any bound)
        return bool(np.shares_memory(x, y, max_work=SOLVER_WORK))  # type: ignore[arg-type]
    except _TooHardError:
        return None


def shares_memory(x: Array, y: Array) -> bool:
    """Whether ``x`` and ``y`` share at least one byte: exact, but for views too hard for the
    solver and too large to list (more than :data:`LISTED_MAX` elements together, or
    listings past the memory limit), which count as sharing."""
    found = solved(x, y)
    if found is not None:
        return found
    if not _listable(x.size + y.size):
        return True
    xs, ys = _addresses(x), _addresses(y)
    after = np.searchsorted(ys, xs)  # the first element of y at or past each one of x
    meets_next = (after < ys.size) & (ys[np.minimum(after, ys.size - 1)] < xs + x.itemsize)
    meets_last = (after > 0) & (ys[np.maximum(after - 1, 0)] + y.itemsize > xs)
    return bool((meets_next | meets_last).any())


def repeats_listed(dims: Sequence[tuple[int, int]], size: int) -> bool:
    """Whether the positions of a view of ``(stride, length)`` axes (``size`` elements) meet,
    from its sorted addresses; True (the safe side) where it cannot be listed."""
    if not _listable(size):
        return True
    addresses = _listing(0, dims)
    return bool((np.diff(addresses) == 0).any())


def _listable(elements: int) -> bool:
    return elements <= min(LISTED_MAX, _memory.LIMIT // _ADDRESS_BYTES)


def _addresses(a: Array) -> Array:
    """The byte address of each element of ``a``, sorted."""
    start = int(a.__array_interface__["data"][0])
    return _listing(start, [(s, n) for n, s in zip(a.shape, a.strides)])


def _listing(start: int, dims: Sequence[tuple[int, int]]) -> Array:
    addresses = np.array([start], np.int64)
    for stride, length in dims:
        if length != 1 and stride != 0:
            steps = np.arange(length, dtype=np.int64) * stride
            addresses = (addresses[:, None] + steps).ravel()
    addresses.sort()
    return addresses
