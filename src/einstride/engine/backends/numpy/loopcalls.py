"""How many times NumPy's sum-of-products loop calls its inner kernel over operands as they
are: the price of a fused step, or of a reduction's pass, that element counts miss.

``numpy.einsum`` walks one iterator over every label and calls its kernel once per inner
run; each call costs about 20 ns beyond its elements.  Where the operands' strides leave a
short innermost run, the calls dominate: a two-qubit gate on a 17-qubit state
(``abcdefghijklmnopq,YZcp->abYdefghijklmnoZq``, every axis of size 2) runs 262,144 calls of
two elements, 10.6 ms where a copy and one matmul take under 2 ms.  The count follows NumPy's
iterator (2.3 and later): axes ordered by the operands' strides, the allocated output laid
out in that order, adjacent axes coalesced, then the buffered "core" chosen by NumPy's own
rule (cost ``1 + buffered operands`` per element of the buffer, at most 8,192 elements, not
past the first change of a reduction); earlier NumPy differs only where it buffers.

>>> loop_calls([(0, 1), (1, 2)], [(64, 8), (32, 8)], (0, 2), [4, 8, 4])  # 'ij,jk->ik'
LoopCalls(calls=32, steps=0, plain=True)
>>> strides = [(128, 64, 32, 16, 8), (64, 32, 16, 8)]  # 'abcde,fgad->fbcge', all of size 2
>>> loop_calls([(0, 1, 2, 3, 4), (5, 6, 0, 3)], strides, (5, 1, 2, 6, 4), [2] * 7)
LoopCalls(calls=64, steps=64, plain=False)
>>> loop_calls([(0, 1, 2)], [(128, 32, 8)], (0, 2), [2, 4, 4]).plain  # 'amk->ak'
True

>>> loop_calls([range(6)], [(256, 128, 64, 32, 16, 8)], (0, 3), [2] * 6)  # 'abcdef->ad'
LoopCalls(calls=16, steps=8, plain=False)

(A 4 x 8 by 8 x 4 matmul: one call per row and summed index, over the 4 columns, from
NumPy's three-axis loop; the gate: 64 calls of 2 elements, each a step of its general
iterator; the marginal: calls over ``ef`` (4 elements), each pair summed into one buffer
over ``d``'s two values, then a step.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from .execute import fused_letters

__all__ = ["BUFFER_ELEMENTS", "LoopCalls", "loop_calls"]

BUFFER_ELEMENTS = 8192  # NumPy's default buffer size (the iterator's largest inner run)


class LoopCalls(NamedTuple):
    """How NumPy's loop runs: ``calls`` of its kernel (a few ns each), and ``steps`` of its
    general iterator between them (~20 ns each: one per buffer, a reduction's calls over
    the buffer's outer axis coming in between); none where NumPy runs the calls from its
    own two- or three-axis loop (``plain``: one or two operands, no buffer, axes coalesced
    to three or fewer)."""

    calls: int
    steps: int
    plain: bool


_Axis = tuple[int, tuple[int, ...]]  # (size, the stride of every operand, output last)
_Labelled = tuple[int, int, tuple[int, ...]]  # (label, size, the operands' strides)


def loop_calls(
    terms: Sequence[Sequence[int]],
    strides: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int] | Mapping[int, int],
) -> LoopCalls:
    """The inner-kernel calls of ``numpy.einsum`` over operands whose axes carry the labels
    ``terms`` (repeats: a diagonal; at most 52 labels, as a fused step has) with these
    strides (bytes or elements, per operand), into a new array of the distinct labels
    ``output``; ``sizes[label]``."""
    labels = _numpy_label_order(terms, output)
    axes = _ordered([_axis(lab, terms, strides, sizes) for lab in reversed(labels)])
    merged = _coalesced(_with_output(axes, frozenset(output)))
    total = math.prod(size for size, _ in merged)
    if total == 0:
        return LoopCalls(0, 0, plain=True)
    core = _buffered_core(merged, reduces=len(labels) > len(output))
    plain = len(terms) <= 2 and len(merged) <= 3 and _unbuffered(merged, core)
    return LoopCalls(_calls(core, total), 0 if plain else _buffers(core, total), plain=plain)


def _numpy_label_order(terms: Sequence[Sequence[int]], output: Sequence[int]) -> list[int]:
    """The iterator's axes in C order: the output's labels, then the summed ones in the
    order of their letters in the fused step's equation (NumPy sorts them by code)."""
    letter = fused_letters(terms, output)
    summed = sorted((lab for lab in letter if lab not in output), key=letter.__getitem__)
    return [*output, *summed]


def _axis(
    label: int,
    terms: Sequence[Sequence[int]],
    strides: Sequence[Sequence[int]],
    sizes: Sequence[int] | Mapping[int, int],
) -> _Labelled:
    """(label, size, per-operand stride): a diagonal's strides add up; an axis of size 1
    has none.  (NumPy flips no axis walked backwards when it allocates the output.)"""
    size = sizes[label]
    walk = tuple(
        0 if size == 1 else sum(s for lab, s in zip(term, st) if lab == label)
        for term, st in zip(terms, strides)
    )
    return label, size, walk


def _ordered(axes: list[_Labelled]) -> list[_Labelled]:
    """NumPy's stable insertion sort, innermost first: an axis moves inwards past another
    only when every operand striding along both strides less along it."""
    order = list(axes)
    for i in range(1, len(order)):
        moving, place = order[i], i
        for j in range(i - 1, -1, -1):
            verdict = _inner_first(moving[2], order[j][2])
            if verdict is None:
                continue
            if not verdict:
                break
            place = j
        order[place + 1 : i + 1] = order[place:i]
        order[place] = moving
    return order


def _inner_first(moving: tuple[int, ...], placed: tuple[int, ...]) -> bool | None:
    """Whether ``moving`` goes inside ``placed`` (None: no operand strides along both)."""
    verdict: bool | None = None
    for a, b in zip(moving, placed):
        if a and b:
            verdict = abs(b) > abs(a) and verdict is not False
    return verdict


def _with_output(axes: list[_Labelled], output: frozenset[int]) -> list[_Axis]:
    """Each axis with the new output's stride appended: NumPy lays the output out in the
    iteration order, its summed axes at stride 0."""
    laid: list[_Axis] = []
    stride = 1
    for label, size, walk in axes:
        step = stride if label in output and size > 1 else 0
        laid.append((size, (*walk, step)))
        if step:
            stride *= size
    return laid


def _coalesced(axes: list[_Axis]) -> list[_Axis]:
    """Adjacent axes merged where every operand (and the output) walks them as one."""
    merged: list[_Axis] = [axes[0]] if axes else [(1, ())]
    for size, walk in axes[1:]:
        prev_size, prev = merged[-1]
        if all(
            (prev_size == 1 and a == 0) or (size == 1 and b == 0) or a * prev_size == b
            for a, b in zip(prev, walk)
        ):
            merged[-1] = (prev_size * size, tuple(b if a == 0 else a for a, b in zip(prev, walk)))
        else:
            merged.append((size, walk))
    return merged


class _Core(NamedTuple):
    """NumPy's buffered core: ``size`` elements a buffer (the core and its outer axis,
    ``dim``), ``core`` elements a call when it reduces over that axis (``flip``)."""

    core: int
    size: int
    dim: int
    flip: int
    single: tuple[int, ...]  # per operand: the axes it walks with one stride


def _buffered_core(axes: list[_Axis], *, reduces: bool) -> _Core:
    """NumPy's choice of the buffered core (``npyiter_find_buffering_setup``): grow it over
    the outer axes while ``1 + buffered operands`` per element of buffer falls, up to
    ``BUFFER_ELEMENTS``, stopping at the first axis where the summed output's stride turns
    to or from 0."""
    n_ops = len(axes[0][1])
    single, cost, flip = [1] * n_ops, 1, 0
    size = axes[0][0]
    best_cost, best = 1, (1, size, 0)
    for dim in range(1, len(axes)):
        if flip or size >= BUFFER_ELEMENTS:
            break
        (prev_size, prev), (_, walk) = axes[dim - 1], axes[dim]
        for op in range(n_ops):
            if single[op] == dim:
                if prev[op] * prev_size == walk[op]:
                    single[op] += 1
                    continue
                cost += 1
            if op == n_ops - 1 and reduces and (walk[op] == 0 or prev[op] == 0):
                flip = dim
        core, size = size, size * axes[dim][0]
        if cost * best[1] <= best_cost * min(size, BUFFER_ELEMENTS):
            best_cost, best = cost, (core, size, dim)
    return _Core(*best, flip=flip, single=tuple(single))


def _buffers(core: _Core, total: int) -> int:
    """The buffers NumPy's iterator walks: ``size`` elements each, cut to at most
    ``BUFFER_ELEMENTS`` (a whole number of cores)."""
    chunk = min(core.size, core.core * (BUFFER_ELEMENTS // core.core))
    return (total // core.size) * -(-core.size // chunk)


def _calls(core: _Core, total: int) -> int:
    """One call per core where the buffer reduces over its outer axis, else per buffer."""
    if core.flip and core.dim == core.flip:
        return total // core.core
    return _buffers(core, total)


def _unbuffered(axes: list[_Axis], core: _Core) -> bool:
    """No operand needs NumPy's buffers: each walks the core with one stride, or (a
    reduction over the core's outer axis) up to it with a stride of 0 there."""
    reducing = core.flip != 0 and core.dim == core.flip
    outer = axes[core.flip][1] if reducing else ()
    last = len(core.single) - 1
    for op, single in enumerate(core.single):
        as_reduce = reducing and (
            op == last or single == core.dim or (outer[op] == 0 and single <= core.dim)
        )
        if single + as_reduce <= core.dim:
            return False
    return True
