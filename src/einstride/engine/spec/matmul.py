"""The matmul form of a two-operand equation: when one batched matmul computes it.

Two operands are of the matmul form when no label repeats within an operand (a diagonal
comes first), none is summed inside one operand alone (a reduction comes first), and at
least one label is contracted: then ``matmul`` over the operands transposed to ``(batch,
rows, inner)`` and ``(batch, inner, cols)`` is the product, its result transposed to the
output's order.  With one label of each kind (:class:`Indices`), a missing kind is an axis
of length 1 inserted by an index; kinds of several labels (:class:`Groups`) are merged
into one axis each by a reshape, which is a view only where the group is a run of the
operand's axes (a C-contiguous operand: the backend checks that per call).  Backend-free:
the lanes of the NumPy and torch backends (``backends/*/lanes.py``) run it with their own
arrays, without a plan, for products too small for a plan's decisions to pay.

>>> form = matmul_form((0, 1, 2), (0, 2, 3), (0, 1, 3))        # bij,bjk->bik
>>> form.perms, form.shaping, form.same
(((0, 1, 2), (0, 1, 2), (0, 1, 2)), Indices(left=None, right=None, result=None), ((0, 0), (2, 1)))
>>> matmul_form((0, 1), (2, 1), (0, 2)).perms                  # bsi,oi: right transposed
((0, 1), (1, 0), (0, 1))
>>> matmul_form((0, 0), (0, 1), (1,)) is None                  # a diagonal first
True
>>> contracts_nothing((0,), (1,), (0, 1)), matmul_form((0,), (1,), (0, 1))  # outer product
(True, None)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = [
    "Groups",
    "Indices",
    "MatmulForm",
    "contracts_nothing",
    "core_index",
    "kind_counts",
    "matmul_form",
    "merged_shapes",
]

Labels = tuple[int, ...]


class Indices(NamedTuple):
    """One label of each kind: the indices that give each side its matrix axes and drop
    them from the result (None: none needed, see :func:`core_index`)."""

    left: tuple[Any, ...] | None
    right: tuple[Any, ...] | None
    result: tuple[Any, ...] | None


class Groups(NamedTuple):
    """Kinds of several labels: the left operand's batch, row and contracted axes, the
    right one's column axes."""

    batch: tuple[int, ...]
    rows: tuple[int, ...]
    inner: tuple[int, ...]
    cols: tuple[int, ...]


class MatmulForm(NamedTuple):
    """How one matmul computes a two-operand equation.

    ``perms``: the left operand's axes in ``(batch, rows, inner)`` order, the right one's in
    ``(batch, inner, cols)`` order, and the output's axes among ``batch + rows + cols``;
    ``shaping``: :class:`Indices` or :class:`Groups`; ``same``: pairs of axes (left,
    right) of one label, which must be of equal size; ``sized``: one ``(operand, axis)``
    per label, whose sizes multiply to the index combinations; ``merge_left`` /
    ``merge_right``: whether that operand's groups are merged by a reshape (a view only
    when it is C-contiguous)."""

    ranks: tuple[int, int]
    perms: tuple[Labels, Labels, Labels]
    shaping: Indices | Groups
    same: tuple[tuple[int, int], ...]
    sized: tuple[tuple[int, int], ...]
    merge_left: bool
    merge_right: bool


def kind_counts(form: MatmulForm) -> tuple[int, int, int, int]:
    """How many batch, row, inner and column labels ``form`` has.

    >>> kind_counts(matmul_form((0, 1, 2), (0, 2, 3), (0, 1, 3)))  # bij,bjk->bik
    (1, 1, 1, 1)
    """
    left, right = (len(p) for p in form.perms[:2])
    shared = len(form.same)  # batch and inner labels
    inner = left + right - len(form.perms[2]) - shared
    return shared - inner, left - shared, inner, right - shared


def contracts_nothing(left: Labels, right: Labels, output: Labels) -> bool:
    """Whether the product is an outer or Hadamard product: no repeated label within an
    operand, every label an output label."""
    distinct = len(set(left)) == len(left) and len(set(right)) == len(right)
    return distinct and all(lab in output for lab in left + right)


def matmul_form(
    left: Labels, right: Labels, output: Labels, *, runs_only: bool = True
) -> MatmulForm | None:
    """The matmul form of ``left, right -> output`` (distinct labels in ``output``), or None
    (a diagonal or a one-operand sum first, nothing contracted, or, unless ``runs_only`` is
    False, a kind of several labels that is not a run of an operand's axes in its order:
    merging it would copy, which a plan may do first).

    >>> abcd_dcbe = ((0, 1, 2, 3), (3, 2, 1, 4), (0, 4))              # inner bcd, then dcb
    >>> matmul_form(*abcd_dcbe) is None, matmul_form(*abcd_dcbe, runs_only=False).perms
    (True, ((0, 1, 2, 3), (2, 1, 0, 3), (0, 1)))
    """
    if len(set(left)) != len(left) or len(set(right)) != len(right):
        return None
    if any(lab not in right and lab not in output for lab in left) or any(
        lab not in left and lab not in output for lab in right
    ):
        return None
    batch = [lab for lab in output if lab in left and lab in right]
    rows = [lab for lab in left if lab in output and lab not in right]
    cols = [lab for lab in right if lab in output and lab not in left]
    inner = [lab for lab in left if lab in right and lab not in output]
    if not inner:
        return None
    made = batch + rows + cols
    perms = (
        tuple(left.index(lab) for lab in batch + rows + inner),
        tuple(right.index(lab) for lab in batch + inner + cols),
        tuple(made.index(lab) for lab in output),
    )
    same = tuple((left.index(lab), right.index(lab)) for lab in batch + inner)
    sized = tuple((0, ax) for ax in range(len(left))) + tuple((1, right.index(lab)) for lab in cols)
    ranks = (len(left), len(right))
    if len(rows) <= 1 and len(cols) <= 1 and len(inner) == 1:
        indices = Indices(
            core_index(bool(rows), True, None),
            core_index(True, bool(cols), None),
            core_index(bool(rows), bool(cols), 0) if made else (0, 0),  # (0, 0): a scalar
        )
        return MatmulForm(ranks, perms, indices, same, sized, False, False)
    runs = ((left, rows), (left, inner), (right, inner), (right, cols))
    if runs_only and not all(_block(term, group) for term, group in runs):
        return None
    groups = Groups(
        tuple(left.index(lab) for lab in batch),
        tuple(left.index(lab) for lab in rows),
        tuple(left.index(lab) for lab in inner),
        tuple(right.index(lab) for lab in cols),
    )
    merge_left = len(rows) > 1 or len(inner) > 1
    merge_right = len(cols) > 1 or len(inner) > 1
    return MatmulForm(ranks, perms, groups, same, sized, merge_left, merge_right)


def _block(term: Labels, group: list[int]) -> bool:
    """Whether ``group`` is a run of consecutive axes of ``term``, in its order (then a
    C-contiguous operand's axes merge as a view)."""
    at = [term.index(lab) for lab in group]
    return at == list(range(at[0], at[0] + len(at))) if at else True


def core_index(first: bool, second: bool, fill: int | None) -> tuple[Any, ...] | None:
    """The index that gives the last two axes of a matrix whose two kinds of labels are
    there or not (``fill``: None inserts a length-1 axis, 0 drops it); None: no index.

    >>> core_index(True, False, None), core_index(False, True, 0)
    ((Ellipsis, None), (Ellipsis, 0, slice(None, None, None)))
    """
    if first and second:
        return None
    if first:
        return (Ellipsis, fill)
    return (Ellipsis, fill, slice(None)) if second else (Ellipsis, fill, fill)


def merged_shapes(
    left: Sequence[int], right: Sequence[int], groups: Groups
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """For operands of shapes ``left`` and ``right`` whose kinds are merged: the left
    operand's ``(batch..., rows, inner)`` shape, the right one's ``(batch..., inner, cols)``
    and the product's ``batch + rows + cols`` shape (before the output's permutation).

    >>> merged_shapes((2, 3, 4), (4, 5), Groups((), (0, 1), (2,), (1,)))   # abk,kc->abc
    ((6, 4), (4, 5), (2, 3, 5))
    """
    head = tuple(left[ax] for ax in groups.batch)
    rows = tuple(left[ax] for ax in groups.rows)
    cols = tuple(right[ax] for ax in groups.cols)
    m, k, n = math.prod(rows), math.prod(left[ax] for ax in groups.inner), math.prod(cols)
    return (*head, m, k), (*head, k, n), head + rows + cols
