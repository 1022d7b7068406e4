"""The torch backend's lanes: a product, a view or a sum of plain tensors, run without a plan.

A torch call on a new shape (a sequence length that changes per call) misses the plan
cache: its shape class's plan is translated with the new sizes and compiled, 60-100 µs of
Python for a product that torch runs in a few.  Where the equation is of the matmul form
(:func:`..spec.matmul.matmul_form`) and the product small
(:attr:`~..numpy.options.PlannerOptions.lane_max_combos` index combinations, the NumPy
lane's bound), the plan is one batched matmul over views, which ``torch.matmul`` over the
permuted operands is: the lane runs that, compiled once per equation string, with no
cache look; past that bound, where the operands' shape class's plan is that product
(dense operands on the CPU; asked once per class).  Only for what the planned way
runs the same: two plain strided tensors of one device and one floating or complex
dtype, sizes that agree (a label of size 1 never
broadcasts), a result within the memory limit, no graph to record (no operand requires
grad, or grad mode is off: a graph's backward is einstride's, :mod:`.autograd`); groups of
several labels merged only where the operand is contiguous (a view).  Anything else
returns None and takes the planned way, which also raises the errors.  Two operands that
contract nothing are one ``torch.mul`` into a new tensor (the plan's batch step); one
operand of which nothing is summed a view of it (the plan's: a ``permute``, or its
diagonals ``as_strided``); one operand summed
over some labels, the rest kept in its order, one ``torch.sum`` (the plan's reduce step);
the trace of a square matrix ``torch.trace`` (the plan's kernel for it).

>>> import torch
>>> lane = lane_for("bij,bjk->bik")
>>> lane((torch.ones(2, 3, 4), torch.ones(2, 4, 5))).shape
torch.Size([2, 3, 5])
>>> lane((torch.ones(2, 3, 4, requires_grad=True), torch.ones(2, 4, 5))) is None  # a graph
True
>>> lane_for("ijk->i")((torch.ones(2, 3, 4),))
tensor([12., 12.])
>>> lane_for("i->ii") is None                                     # an expansion: planned
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, cast

import torch

from .... import memory as _memory
from ...spec.equation import parse_subscripts
from ...spec.matmul import (
    Groups,
    Indices,
    MatmulForm,
    contracts_nothing,
    matmul_form,
    merged_shapes,
)
from ..numpy.cache import CLEAR_HOOKS
from ..numpy.options import DEFAULT, OPTIONS_HOOKS
from ..numpy.skeleton import rep_size
from .guard import CPU, limit_for
from .plan import one_product_class, pair_class

__all__ = ["TorchLane", "clear_lanes", "lane_answers", "lane_for", "lane_report"]

TorchLane = Callable[..., Any]
"""``lane(operands, dry=False)``: the product, or None (then the planned way runs);
``dry``: what the lane would run (a sentence), computing nothing."""

_LANES: dict[str, TorchLane | None] = {}
_CACHE_SIZE = 4096
_DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)
"""What ``torch.matmul`` multiplies on every device as the plan's kernel does (integer
products do not run on CUDA; half and bfloat16 are left to the plan)."""
_ITEM_BYTES = 16  # the largest item of a lane dtype (complex128)
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_STRIDED = torch.strided
_matmul = torch.matmul
_answered = itertools.count()  # next() is one atomic C call: no lock on the lane
_answered_before = 0


def lane_answers() -> int:
    """How many calls a torch lane answered since :func:`clear_lanes` (for tests)."""
    return _count() - _answered_before


def _count() -> int:
    return int(repr(_answered)[len("count(") : -1])


def clear_lanes() -> None:
    """Forget every compiled lane (and restart :func:`lane_answers`)."""
    global _answered_before
    _LANES.clear()
    _answered_before = _count()


def lane_for(subscripts: str) -> TorchLane | None:
    """The equation's lane (cached), None when it has none; compiled with the default
    options' bound and the memory limit of the moment (changing either forgets it).  An
    equation that does not parse has none (the planned way raises its error)."""
    try:
        return _LANES[subscripts]
    except KeyError:
        pass
    options, limit = DEFAULT.options, _memory.LIMIT
    lane = _compile(subscripts, min(options.lane_max_combos, limit // _ITEM_BYTES))
    if len(_LANES) >= _CACHE_SIZE:
        _LANES.clear()
    if DEFAULT.options is options and limit == _memory.LIMIT:  # else: changed meanwhile
        _LANES[subscripts] = lane
    return lane


def lane_report(subscripts: str, operands: tuple[Any, ...]) -> str | None:
    """How the lane would run ``operands`` (``explain``'s line), or None.

    >>> lane_report("ij,jk->ik", (torch.ones(2, 3), torch.ones(3, 4)))
    'one torch.matmul over permuted views (24 index combinations, at most 262,144)'
    """
    lane = lane_for(subscripts)
    return None if lane is None else cast(str | None, lane(operands, dry=True))


def _compile(subscripts: str, most: int) -> TorchLane | None:
    try:
        equation = parse_subscripts(subscripts)
    except ValueError:
        return None
    if most <= 0 or equation.has_ellipsis or len(set(equation.output)) != len(equation.output):
        return None
    if len(equation.terms) == 1:
        (term,) = equation.terms
        if term and set(term) == set(equation.output):  # nothing summed (output distinct)
            return _view_lane(term, equation.output)
        return _sum_lane(term, equation.output) if term else None
    if len(equation.terms) != 2:
        return None
    left, right = equation.terms
    axes = tuple((0, left.index(x)) if x in left else (1, right.index(x)) for x in equation.output)
    if contracts_nothing(left, right, equation.output):
        return _broadcast_lane(left, right, equation.output, axes)
    form = matmul_form(left, right, equation.output)
    return None if form is None else _matmul_lane(form, most, subscripts, axes)


def _view_lane(term: tuple[int, ...], output: tuple[int, ...]) -> TorchLane:
    """One operand, nothing summed: the plan's result is the operand itself viewed (no
    step, or one view step): in the output's order, one ``permute`` where no label repeats;
    else its diagonals, each output label's stride the sum of its axes' (``ii->i``,
    ``bii->bi``), one ``as_strided``."""
    rank = len(term)
    perm = tuple(term.index(x) for x in output)
    axes = tuple(tuple(ax for ax, y in enumerate(term) if y == x) for x in output)
    diagonal = len(output) < rank

    def view(operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 1:
            return None
        (a,) = operands
        if type(a) not in _PLAIN or not _plain(a) or a.dim() != rank or not a.numel():
            return None
        if not diagonal:
            if dry:
                return "a view of the operand (torch.permute)"
            next(_answered)
            return a.permute(perm)
        shape, strides = a.shape, a.stride()
        sizes, steps = [], []
        for group in axes:
            size, step = shape[group[0]], 0
            for ax in group:
                if shape[ax] != size:
                    return None  # sizes that disagree: the plan's error
                step += strides[ax]
            sizes.append(size)
            steps.append(step)
        if dry:
            return "a view of the operand's diagonal (torch.as_strided)"
        next(_answered)
        return a.as_strided(sizes, steps, a.storage_offset())

    return view


def _broadcast_lane(
    left: tuple[int, ...],
    right: tuple[int, ...],
    output: tuple[int, ...],
    result_axes: tuple[tuple[int, int], ...],
) -> TorchLane:
    """Two operands that contract nothing (an outer or a Hadamard product): the plan's one
    batch step, ``torch.mul`` of the operands viewed in the output's order (a size-1 axis
    where one lacks a label) into a new C-ordered tensor of the output's shape, within the
    memory limit (its peak: the result).  Measured on a new shape each call (k of 100-159):
    ``bi,bj->bij`` of k x 64 223 µs through the plan, torch.einsum 80; ``i,j->ij`` 164
    against 45."""
    ranks = (len(left), len(right))
    same = tuple((left.index(x), right.index(x)) for x in left if x in right)
    viewed = tuple(_broadcast_view(term, output) for term in (left, right))

    def product(operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 2:
            return None
        a, b = operands
        if type(a) not in _PLAIN or type(b) not in _PLAIN or not _plain_pair(a, b):
            return None
        shapes = (a.shape, b.shape)
        if (len(shapes[0]), len(shapes[1])) != ranks:
            return None
        for x, y in same:
            if shapes[0][x] != shapes[1][y]:
                return None
        shape = [shapes[op][ax] for op, ax in result_axes]
        elements = 1
        for size in shape:
            elements *= size
        if not elements or elements * a.element_size() > limit_for(a.device, None):
            return None  # empty (the plan's), or past the memory limit (the plan's error)
        if dry:
            return "one torch.mul of broadcast views into a new tensor"
        next(_answered)
        out = torch.empty(shape, dtype=a.dtype, device=a.device)
        return torch.mul(viewed[0](a), viewed[1](b), out=out)

    return product


def _broadcast_view(term: tuple[int, ...], output: tuple[int, ...]) -> Callable[[Any], Any]:
    """An operand of ``term`` viewed in the output's order, a size-1 axis where it lacks a
    label (the fewest torch calls: each costs microseconds on a new shape's call)."""
    perm = tuple(term.index(x) for x in output if x in term)
    index = tuple(slice(None) if x in term else None for x in output)
    moved = perm != tuple(range(len(term)))
    inserted = len(index) > len(term)
    if moved and inserted:
        return lambda t: t.permute(perm)[index]
    if moved:
        return lambda t: t.permute(perm)
    if inserted:
        return lambda t: t[index]
    return lambda t: t


def _sum_lane(term: tuple[int, ...], output: tuple[int, ...]) -> TorchLane | None:
    """One operand summed over some of its labels, the others kept in its order: one
    ``torch.sum`` (the plan's reduce step, into a new tensor in the output's order, which
    this order is); the trace of a square matrix (``ii->``): ``torch.trace``, the plan's
    kernel for it.  Anything else (a diagonal kept, a transpose, nothing summed): None."""
    if term == (term[0], term[0]) and not output:
        return _trace_lane()
    if len(set(term)) != len(term) or output != tuple(x for x in term if x in output):
        return None
    axes = tuple(ax for ax, x in enumerate(term) if x not in output)
    if not axes:
        return None
    rank = len(term)
    kept_axes = tuple(ax for ax in range(rank) if ax not in axes)
    whole = not kept_axes  # a scalar: torch.sum with no dim=, as the plan's reduce

    def total(operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 1:
            return None
        (a,) = operands
        if type(a) not in _PLAIN or not _plain(a) or a.dim() != rank:
            return None
        shape, kept = a.shape, 1
        for ax in kept_axes:
            kept *= shape[ax]
        if not a.numel() or kept * a.element_size() > limit_for(a.device, None):
            return None  # empty (the plan's zeros), or a result past the memory limit
        if dry:
            return f"one torch.sum over {len(axes)} of its {rank} axes"
        next(_answered)
        return torch.sum(a) if whole else torch.sum(a, dim=axes)

    return total


def _trace_lane() -> TorchLane:
    def trace(operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 1:
            return None
        (a,) = operands
        if type(a) not in _PLAIN or not _plain(a) or a.dim() != 2:
            return None
        rows, cols = a.shape
        if rows != cols or not rows or a.element_size() > limit_for(a.device, None):
            return None
        if dry:
            return "one torch.trace"
        next(_answered)
        return torch.trace(a)

    return trace


def _matmul_lane(
    form: MatmulForm, most: int, subscripts: str, result_axes: tuple[tuple[int, int], ...]
) -> TorchLane:
    """``torch.matmul`` over the operands permuted to ``(batch, rows, inner)`` and
    ``(batch, inner, cols)``, its result permuted to the output's order (the NumPy lane's
    product, :func:`..numpy.lanes._matmul_lane`, with torch's ops).  Past ``most`` index
    combinations, dense operands on the CPU whose shape class's plan is this
    product (:func:`.plan.one_product_class`, asked once per class) take the lane too:
    a new shape of the class would translate the class's plan into the same product
    (measured, an attention score ``bhqd,bhkd->bhqk`` of 1 x 4 x k x 32 on a new k of
    49-92: 357 µs a call through the plan, 128 of them making its entry, torch.einsum
    197).  ``result_axes``: an ``(operand, axis)`` of each output label's size."""
    (left_rank, right_rank), perms, shaping, same, sized, merge_left, merge_right = form
    classes: dict[Any, bool] = {}  # whether the class's plan is this product, per class
    layouts: dict[tuple[Any, ...], bool] = {}  # ... and per operand layout
    left_perm, right_perm, out_perm = perms
    left_moved = None if left_perm == tuple(range(left_rank)) else left_perm
    right_moved = None if right_perm == tuple(range(right_rank)) else right_perm
    out_moved = None if out_perm == tuple(range(len(out_perm))) else out_perm
    groups = shaping if isinstance(shaping, Groups) else None
    indices = shaping if isinstance(shaping, Indices) else Indices(None, None, None)
    left_index, right_index, result_index = indices
    merged = ", label groups merged as views" if groups is not None else ""

    def product(operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 2:
            return None
        a, b = operands
        if type(a) not in _PLAIN or type(b) not in _PLAIN or not _plain_pair(a, b):
            return None
        left, right = a.shape, b.shape
        if len(left) != left_rank or len(right) != right_rank:
            return None
        for x, y in same:
            if left[x] != right[y]:
                return None
        combos = 1
        for op, ax in sized:
            combos *= (left, right)[op][ax]
        if not combos:  # empty: the plan's (its result may pass the limit)
            return None
        if combos > most and not _planned_as_this(a, b, left, right):
            return None
        if (merge_left and not a.is_contiguous()) or (merge_right and not b.is_contiguous()):
            return None
        device = a.device
        if device != CPU and combos * a.element_size() > limit_for(device, None):
            return None
        if dry:
            bound = f"at most {most:,}"
            if combos > most:
                bound = f"past {most:,}, its shape class's plan is this product"
            return (
                f"one torch.matmul over permuted views{merged} ({combos:,} index "
                f"combinations, {bound})"
            )
        next(_answered)
        if left_moved is not None:
            a = a.permute(left_moved)
        if right_moved is not None:
            b = b.permute(right_moved)
        if groups is not None:
            return _merged_product(a, b, left, right, groups, out_moved)
        if left_index is not None:
            a = a[left_index]
        if right_index is not None:
            b = b[right_index]
        result = _matmul(a, b)
        if result_index is not None:
            result = result[result_index]
        return result if out_moved is None else result.permute(out_moved)

    def _planned_as_this(a: torch.Tensor, b: torch.Tensor, left: Any, right: Any) -> bool:
        """Whether a product past the bound is the plan's too, and within the memory limit
        (the plan's peak: the result, its operands viewed); remembered per layout (a
        repeated call asks two dictionaries) and per shape class (a new shape asks one
        class key)."""
        if a.device != CPU:
            return False
        elements = 1
        for op, ax in result_axes:
            elements *= (left, right)[op][ax]
        if elements * a.element_size() > limit_for(CPU, None):
            return False
        layout = (left, a.stride(), right, b.stride(), a.dtype)
        found = layouts.get(layout)
        if found is None:
            found = _class_is_this(a, b, left, right)
            if len(layouts) >= _CACHE_SIZE:
                layouts.clear()
            layouts[layout] = found
        return found

    def _class_is_this(a: torch.Tensor, b: torch.Tensor, left: Any, right: Any) -> bool:
        key: Any
        if a.is_contiguous() and b.is_contiguous():  # (the class: C order, sizes rounded)
            key = (tuple(map(rep_size, left)), tuple(map(rep_size, right)), a.dtype)
        else:
            key = pair_class(a, b)
            if key is None:
                return False  # not dense: the plan copies
        found = classes.get(key)
        if found is None:
            if len(classes) >= _CACHE_SIZE:
                classes.clear()
            shapes, strides = (tuple(left), tuple(right)), (a.stride(), b.stride())
            found = one_product_class(subscripts, shapes, strides, a.dtype, perms)
            classes[key] = found
        return found

    return product


def _plain_pair(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Two :func:`_plain` tensors of one device and one dtype."""
    return b.dtype is a.dtype and a.device == b.device and _plain(a) and _plain(b)


def _plain(a: torch.Tensor) -> bool:
    """A strided tensor of a lane dtype, not a lazy conjugate or negation, with no graph to
    record."""
    if a.dtype not in _DTYPES or a.layout is not _STRIDED or a.is_conj() or a.is_neg():
        return False
    return not (a.requires_grad and torch.is_grad_enabled())


def _merged_product(
    a: torch.Tensor, b: torch.Tensor, left: Any, right: Any, groups: Groups, out_moved: Any
) -> torch.Tensor:
    """The product of permuted operands whose kinds are merged by reshapes (views)."""
    left_shape, right_shape, shape = merged_shapes(left, right, groups)
    result = _matmul(a.reshape(left_shape), b.reshape(right_shape)).reshape(shape)
    return result if out_moved is None else result.permute(out_moved)


def _forget() -> None:
    _LANES.clear()


OPTIONS_HOOKS.append(_forget)
_memory.LIMIT_HOOKS.append(_forget)
CLEAR_HOOKS.append(clear_lanes)  # ``einstride.clear_plan_cache()``
