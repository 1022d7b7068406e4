"""The shape-generic level of the plan cache: a plan's *decisions*, reused across shapes.

A user whose sequence length or last batch changes from call to call misses the exact plan
cache (keyed by shapes) on every call. Most of a plan's cost is deciding (the path, the
layout of every product, its copies, whether to split or fuse); the decisions depend on
the operands' stride *pattern* (which axes are contiguous, transposed, broadcast, of size
1) and only coarsely on the sizes.  So the planner decides on the operands' **shape
class**, for every operand a regular layout (a permuted C-contiguous block, or one taken
with a whole step along each axis, broadcast axes allowed):

* the *pattern*: per operand, its axes' memory order, which broadcast (stride 0), which
  have size 1, and each axis's step;
* the *representative sizes*: every size rounded down to a half-octave (2, 3, 4, 6, 8, 12,
  16, 24, ...; 0 and 1 kept).  Networks of :data:`NETWORK_OPERANDS` operands and more keep
  their exact sizes (their path decides their cost).

The decisions are made once per class, by planning the representative operands (the class
pattern at the representative sizes), and cached (:func:`.plan.class_decisions`); the plan
for the actual shapes then *replays* them, binding the real numbers.  A plan is therefore
the same whether its class was cached or not, and a new sequence length inside a
half-octave never replans from scratch.  Irregular layouts (negative or overlapping
strides, a slice whose step is not a whole span) and ``out=`` are planned directly at
their own sizes.

>>> rep_size(37), rep_size(48), rep_size(1), rep_size(0)
(32, 48, 1, 0)
>>> import numpy as np
>>> a = np.ones((37, 5)).T                      # a transposed view
>>> cls = shape_class(((5, 37),), (a.strides,), (a.dtype,))
>>> cls.rep_shapes, cls.rep_strides, cls.pattern
(((4, 32),), ((8, 32),), (((1, 0), (), (), ()),))
>>> b = np.ones((40, 30))[::2, ::3]             # a strided view: steps of 3, then of 2
>>> shape_class((b.shape,), (b.strides,), (b.dtype,)).rep_strides
((384, 24),)
>>> shape_class(((5, 37),), ((296, 8),), (a.dtype,)).rep_strides    # C order
((256, 8),)
>>> shape_class(((5, 37),), ((8, 16),), (a.dtype,)) is None   # overlapping: irregular
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Decisions",
    "ReplayMismatch",
    "ShapeClass",
    "broadcasts",
    "c_order_class",
    "dense_class",
    "rep_size",
    "shape_class",
]

Pattern = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]
"""One operand's pattern: its non-broadcast axes from outermost to innermost in memory, its
broadcast (stride-0) axes, its size-1 axes, and the step of each axis of the order in
spans of the axes inside it (empty: all 1, a dense block)."""


class ReplayMismatch(Exception):
    """A replayed plan reached a decision the recorded one did not make (a bug guard: the
    planner then plans the shapes directly)."""


def rep_size(size: int) -> int:
    """``size`` rounded down to a half-octave (2**k or 3 * 2**(k-1)); 0 and 1 stay."""
    if size < 4:
        return size
    low = 1 << (size.bit_length() - 1)
    mid = low + (low >> 1)
    return mid if size >= mid else low


_REP = tuple(rep_size(d) for d in range(1024))  # a look-up for the common sizes


def _rounded(shape: Sequence[int]) -> tuple[int, ...]:
    """Every size of ``shape`` rounded down to its half-octave."""
    try:
        return tuple(map(_REP.__getitem__, shape))
    except IndexError:
        return tuple(rep_size(d) for d in shape)


@dataclass(frozen=True, slots=True)
class ShapeClass:
    """The operands' pattern and their representative shapes and (dense) strides."""

    pattern: tuple[Pattern, ...]
    rep_shapes: tuple[tuple[int, ...], ...]
    rep_strides: tuple[tuple[int, ...], ...]


def _dense_pattern(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> Pattern | None:
    """The pattern of a regular layout (None: not regular).  Regular: the axes of nonzero
    stride, outermost first by stride, each step a whole number of the span of the axes
    inside it (a step of 1 everywhere: a C-contiguous block; a size-1 axis included, with
    the stride it would have there)."""
    n = len(shape)
    order: Sequence[int] = range(n)
    broadcast: tuple[int, ...] = ()
    inner = itemsize
    for ax in range(n - 1, -1, -1):  # C order first: the common case, no sorting
        if strides[ax] != inner:
            break
        inner *= shape[ax]
    else:
        return tuple(order), broadcast, tuple(ax for ax in order if shape[ax] == 1), ()
    if 0 in shape:
        return None
    # outermost first by stride, ties in axis order (a stable sort, reversed)
    order = sorted(range(n), key=strides.__getitem__, reverse=True)
    if 0 in strides:
        broadcast = tuple([ax for ax in range(n) if strides[ax] == 0 and shape[ax] != 1])
        order = [ax for ax in order if ax not in broadcast]
    inner, steps = itemsize, []
    for ax in reversed(order):
        step, rest = divmod(strides[ax], inner)
        if step < 1 or rest:
            return None
        steps.append(step)
        inner = strides[ax] * shape[ax]
    ones = tuple([ax for ax in range(n) if shape[ax] == 1]) if 1 in shape else ()
    kept = tuple(reversed(steps)) if steps.count(1) != len(steps) else ()
    return tuple(order), broadcast, ones, kept


def _rep_strides(pattern: Pattern, shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides of the pattern's layout at ``shape``."""
    order, _, _, steps = pattern
    strides = [0] * len(shape)
    inner = itemsize
    for k in range(len(order) - 1, -1, -1):
        ax = order[k]
        strides[ax] = inner * (steps[k] if steps else 1)
        inner = strides[ax] * shape[ax]
    return tuple(strides)


NETWORK_OPERANDS = 8
"""From this many operands on, an einsum is a tensor network whose path decides its cost:
its class keeps the exact sizes (the path is searched for them; nothing is rounded)."""


def shape_class(
    shapes: Sequence[Sequence[int]],
    strides: Sequence[Sequence[int]],
    dtypes: Sequence[np.dtype[Any]],
) -> ShapeClass | None:
    """The shape class of the operands, or None when one of them is not dense."""
    patterns, rep_shapes, rep_strides = [], [], []
    exact = len(shapes) >= NETWORK_OPERANDS
    for shape, st, dt in zip(shapes, strides, dtypes):
        pattern = _dense_pattern(shape, st, dt.itemsize)
        if pattern is None:
            return None
        rep = tuple(shape) if exact else _rounded(shape)
        patterns.append(pattern)
        rep_shapes.append(rep)
        rep_strides.append(_rep_strides(pattern, rep, dt.itemsize))
    return ShapeClass(tuple(patterns), tuple(rep_shapes), tuple(rep_strides))


def broadcasts(facts: Sequence[Any]) -> bool:
    """Whether an operand has a broadcast axis: a zero stride over more than one element
    (``facts`` as :func:`.cache.facts_of`).

    >>> broadcasts(((2, 3), (0, 8), "f8")), broadcasts(((1, 3), (0, 8), "f8"))
    (True, False)
    """
    for k in range(1, len(facts), 3):
        strides = facts[k]
        if 0 in strides and any(s == 0 and n > 1 for n, s in zip(facts[k - 1], strides)):
            return True
    return False


def c_order_class(facts: Sequence[Any]) -> tuple[Any, ...] | None:
    """Every operand's representative shape and dtype when every operand is C-contiguous
    (then they name the class: the pattern is C order with the size-1 axes the shapes
    show), else None: the cheap first look of a cache miss (``facts``: shape, strides,
    dtype of each operand in turn).

    >>> c_order_class([(37, 5), (40, 8), np.dtype(float)])
    ((32, 4), dtype('float64'))
    >>> c_order_class([(37, 5), (8, 296), np.dtype(float)]) is None
    True
    """
    if len(facts) >= 3 * NETWORK_OPERANDS:
        return None
    found: list[Any] = []
    for k in range(0, len(facts), 3):
        shape, strides, dtype = facts[k], facts[k + 1], facts[k + 2]
        inner = dtype.itemsize
        ax = len(shape) - 1
        while ax >= 0:
            if strides[ax] != inner:
                return None
            inner *= shape[ax]
            ax -= 1
        if inner == 0:
            return None
        found.append(_rounded(shape))
        found.append(dtype)
    return tuple(found)


def dense_class(facts: Sequence[Any]) -> tuple[Any, ...] | None:
    """The class key of operands of any regular layout (transposed, strided, broadcast):
    every operand's pattern, representative shape and dtype, which determine its
    :class:`ShapeClass`; None when one of them is not regular, or for a network (whose
    class keeps exact sizes).  The cheap look of a cache miss on operands that are not all
    C-contiguous (:func:`c_order_class` is cheaper still for those that are).

    >>> first = dense_class([(37, 5), (8, 296), np.dtype(float)])        # transposed
    >>> first == dense_class([(40, 4), (8, 320), np.dtype(float)])       # the same class
    True
    >>> first == dense_class([(37, 5), (40, 8), np.dtype(float)])        # C order
    False
    """
    if len(facts) >= 3 * NETWORK_OPERANDS:
        return None
    found: list[Any] = ["dense"]  # never equal to a c_order_class key
    for k in range(0, len(facts), 3):
        shape, dtype = facts[k], facts[k + 2]
        pattern = _dense_pattern(shape, facts[k + 1], dtype.itemsize)
        if pattern is None:
            return None
        found += (pattern, _rounded(shape), dtype)
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Decisions:
    """What the planner decided for a shape class, in the order it decided: ``(site,
    value)`` pairs (the path, each product's layout, each split, whether to fuse), and the
    shapes it decided for."""

    made: tuple[tuple[str, Any], ...]
    shapes: tuple[tuple[int, ...], ...]


class Recorder:
    """Records decisions while planning (``replay`` None) or gives back recorded ones."""

    __slots__ = ("made", "position", "replay")

    def __init__(self, replay: Decisions | None = None) -> None:
        self.made: list[tuple[str, Any]] = []
        self.replay = replay
        self.position = 0

    def decide(self, site: str, compute: Any) -> Any:
        """``compute()`` (recorded), or the value recorded for this site when replaying."""
        if self.replay is None:
            value = compute()
            self.made.append((site, value))
            return value
        if self.position >= len(self.replay.made):
            raise ReplayMismatch(site)
        recorded_site, value = self.replay.made[self.position]
        if recorded_site != site:
            raise ReplayMismatch(site)
        self.position += 1
        return value

    def finished(self) -> None:
        """Every recorded decision was replayed."""
        if self.replay is not None and self.position != len(self.replay.made):
            raise ReplayMismatch("end")
