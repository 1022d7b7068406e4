"""The torch backend's lanes: a product, a view or a sum of plain tensors, run without a plan.

A torch call on a new shape (a sequence length that changes per call) misses the plan
cache: its shape class's plan is translated with the new sizes and compiled, 60-130 µs of
Python for what torch runs in a few.  Where the plan is one kernel anyway, the lane runs
that kernel, compiled once per equation string, with no cache look:

- two operands of the matmul form (:func:`..spec.matmul.matmul_form`): one
  ``torch.matmul`` over the permuted operands, for a product of at most
  :attr:`~..numpy.options.PlannerOptions.lane_max_combos` index combinations (the NumPy
  lane's bound), or past it where the operands' shape class's plan is one product (dense
  operands on the CPU; asked once per class), run as the plan runs it: operands copied
  into C order first where it copies them, the result's transpose where it swaps them;
  groups of several labels merged only where the operand is contiguous (a view) or the
  plan says they are;
- two operands that contract nothing: one ``torch.mul`` into a new tensor (the plan's
  batch step);
- one operand: viewed onto its distinct labels (its diagonals ``as_strided``), summed over
  those not in the output by one ``torch.sum``, permuted to the output's order, as the
  plan's view, reduce and result steps run it; the trace of a square matrix is
  ``torch.trace`` (the plan's kernel for it).

Only for what the planned way runs the same: plain strided tensors of one device and one
floating or complex dtype, sizes that agree (a label of size 1 never broadcasts), a peak
within the memory limit (a product's: its result and both operands, which torch.matmul may
copy; a Hadamard product's under a graph: twice its result, laid out then copied).
With a graph to record (an operand requires grad under grad mode), torch's own autograd
records the kernel, as it does ``torch.einsum``'s (operands within the memory limit: each
gradient is an operand's size), except for a diagonal and a large outer or Hadamard
product, whose backward is einstride's (:mod:`.autograd`).
Anything else returns None and takes the planned way, which also raises the errors.

>>> import torch
>>> lane = lane_for("bij,bjk->bik")
>>> lane((torch.ones(2, 3, 4), torch.ones(2, 4, 5))).shape
torch.Size([2, 3, 5])
>>> lane((torch.ones(2, 3, 4, requires_grad=True), torch.ones(2, 4, 5))).grad_fn.name()
'UnsafeViewBackward0'
>>> lane_for("ijk->i")((torch.ones(2, 3, 4),))
tensor([12., 12.])
>>> lane_for("i->ii") is None                                     # an expansion: planned
True
"""

from __future__ import annotations

import itertools
import math
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
from ..numpy.options import DEFAULT, OPTIONS_HOOKS, PlannerOptions
from .execute import matmul
from .guard import CPU, limit_for
from .plan import OneProduct, one_product_plan, pair_class

__all__ = ["TorchLane", "clear_lanes", "lane_answers", "lane_bound", "lane_for", "lane_report"]

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
_matmul = matmul  # torch.matmul, a full contraction's 1 x 1 product by torch.dot
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


def lane_bound(options: PlannerOptions | None = None, limit: int | None = None) -> int:
    """The index combinations within which a lane runs a product without asking a plan:
    the options' ``lane_max_combos`` (the default options'), and where the result and both
    operands (torch.matmul may copy them) fit the memory limit (the limit of the moment)."""
    options = DEFAULT.options if options is None else options
    limit = _memory.LIMIT if limit is None else limit
    return min(options.lane_max_combos, limit // (3 * _ITEM_BYTES))


def lane_for(subscripts: str) -> TorchLane | None:
    """The equation's lane (cached), None when it has none; compiled with the default
    options' bound and the memory limit of the moment (changing either forgets it).  An
    equation that does not parse has none (the planned way raises its error)."""
    try:
        return _LANES[subscripts]
    except KeyError:
        pass
    options, limit = DEFAULT.options, _memory.LIMIT
    lane = _compile(subscripts, lane_bound(options, limit))
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
        return _unary_lane(term, equation.output) if term else None
    if len(equation.terms) != 2:
        return None
    left, right = equation.terms
    axes = tuple((0, left.index(x)) if x in left else (1, right.index(x)) for x in equation.output)
    if contracts_nothing(left, right, equation.output):
        return _broadcast_lane(left, right, equation.output, axes, most)
    form = matmul_form(left, right, equation.output)
    if form is not None:
        return _matmul_lane(form, most, subscripts, axes)
    # kinds that merge only copied (abcd,dcbe->ae): past the bound, where the plan copies
    form = matmul_form(left, right, equation.output, runs_only=False)
    return None if form is None else _matmul_lane(form, most, subscripts, axes, small=False)


def _broadcast_lane(
    left: tuple[int, ...],
    right: tuple[int, ...],
    output: tuple[int, ...],
    result_axes: tuple[tuple[int, int], ...],
    most: int,
) -> TorchLane:
    """Two operands that contract nothing (an outer or a Hadamard product): the plan's one batch
    step, ``torch.mul`` of the operands viewed in the output's order (a size-1 axis where
    one lacks a label) into a new C-ordered tensor of the output's shape, within the memory
    limit (its peak: the result; under a graph, twice it).  Measured on a new shape each
    call (k of 100-159): ``bi,bj->bij`` of k x 64 223 µs through the plan, torch.einsum 80;
    ``i,j->ij`` 164 against 45.  With a graph to record, only results of at most ``most``
    elements (the matmul lane's bound): torch's own backward of an outer product multiplies
    the whole cotangent out before it sums (2048 x 2048: 43.7 ms forward and backward,
    einstride's 22.2)."""
    ranks = (len(left), len(right))
    same = tuple((left.index(x), right.index(x)) for x in left if x in right)
    viewed = tuple(_broadcast_view(term, output) for term in (left, right))

    def product(operands: tuple[Any, ...], dry: bool = False) -> Any:
        pair = _plain_pair(operands)
        if pair is None:
            return None
        a, b = pair
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
        graph = torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)
        # under a graph torch lays the product out after its operands, and the lane copies
        # it into the plan's C order: twice the result at its peak
        if not elements or (1 + graph) * elements * a.element_size() > limit_for(a.device, None):
            return None  # empty (the plan's), or past the memory limit (the plan's error)
        if elements > most and graph:
            return None  # a large graph: einstride's backward
        if dry:
            return "one torch.mul of broadcast views into a new tensor"
        next(_answered)
        if graph:  # (out= records no graph)
            return torch.mul(viewed[0](a), viewed[1](b)).contiguous()
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


def _unary_lane(term: tuple[int, ...], output: tuple[int, ...]) -> TorchLane:
    """One operand, as the plan's steps run it: the operand viewed onto its distinct labels
    (its own axes where no label repeats; else its diagonals, the labels it holds once
    first, each repeated one's stride the sum of its axes', one ``as_strided``: the plan's
    view step), the labels not in the output summed by one ``torch.sum`` (the plan's
    reduce step, into a new tensor of the kept labels in that order), the rest permuted
    to the output's order (the plan's result view).  The trace of a square matrix
    (``ii->``) is ``torch.trace`` (the plan's kernel for it).  Measured on a new shape each
    call: ``bii->b`` of k x 64 x 64 357 µs through the plan, 114 torch.einsum;
    ``bij->bji`` 102 against 11."""
    if term == (term[0], term[0]) and not output:
        return _trace_lane()
    rank = len(term)
    labels = [x for x in term if term.count(x) == 1]
    labels += [x for x in dict.fromkeys(term) if term.count(x) > 1]  # the view's axes
    groups = tuple(tuple(ax for ax, y in enumerate(term) if y == x) for x in labels)
    diagonal = len(labels) < rank
    summed = tuple(k for k, x in enumerate(labels) if x not in output)
    kept = [x for x in labels if x in output]
    kept_axes = tuple(term.index(x) for x in kept)  # an axis of each kept label's size
    perm = tuple(kept.index(x) for x in output)
    moved = perm != tuple(range(len(perm)))
    how = "a view of the operand" + ("'s diagonals (torch.as_strided)" if diagonal else "")
    if summed:
        how = f"one torch.sum over {len(summed)} of the {len(labels)} axes of {how}"

    def unary(operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 1:
            return None
        (a,) = operands
        if type(a) not in _PLAIN or not _plain(a, not diagonal) or a.dim() != rank:
            return None  # (a diagonal's graph: einstride's backward, not as_strided's)
        if not a.numel():
            return None  # (empty: the plan's zeros)
        viewed, shape = a, a.shape
        if diagonal:
            strides = a.stride()
            sizes, steps = [], []
            for group in groups:
                size, step = shape[group[0]], 0
                for ax in group:
                    if shape[ax] != size:
                        return None  # sizes that disagree: the plan's error
                    step += strides[ax]
                sizes.append(size)
                steps.append(step)
        if summed:
            elements = 1
            for k in kept_axes:
                elements *= shape[k]
            if elements * a.element_size() > limit_for(a.device, None):
                return None  # a sum past the memory limit: the plan's error
        if dry:
            return how
        if diagonal:
            viewed = a.as_strided(sizes, steps, a.storage_offset())
        next(_answered)
        if summed:
            viewed = torch.sum(viewed, dim=summed) if kept else torch.sum(viewed)
        elif not (moved or diagonal):  # ij->ij: a new view, never the operand itself
            return viewed.view(shape)
        return viewed.permute(perm) if moved else viewed

    return unary


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
    form: MatmulForm,
    most: int,
    subscripts: str,
    result_axes: tuple[tuple[int, int], ...],
    small: bool = True,
) -> TorchLane:
    """``torch.matmul`` over the operands permuted to ``(batch, rows, inner)`` and
    ``(batch, inner, cols)``, its result permuted to the output's order (the NumPy lane's
    product, :func:`..numpy.lanes._matmul_lane`, with torch's ops).  Past ``most`` index
    combinations, dense operands on the CPU whose shape class's plan is one product
    (:func:`.plan.one_product_plan`, asked once per class) take the lane too, which runs
    that product as the plan does (the form's own, or where the plan copies or swaps,
    :func:`_as_planned`): a new shape of the class would translate the class's plan into
    the same product (measured, an attention score
    ``bhqd,bhkd->bhqk`` of 1 x 4 x k x 32 on a new k of 49-92: 357 µs a call through the
    plan, 128 of them making its entry, torch.einsum 197; ``ij,jk->ik`` of every other row
    and column, 193-252 x 192, copied first: 720-770 µs, 230 of them its entry and
    compiling it, torch.einsum 480-500).  ``result_axes``: an ``(operand, axis)`` of each
    output label's size; ``small`` False: a form whose kinds merge only copied, which runs
    only past the bound, where the plan copies (``abcd,dcbe->ae``)."""
    (left_rank, right_rank), perms, shaping, same, sized, merge_left, merge_right = form
    classes: dict[Any, OneProduct | None] = {}  # the class's plan as one product, per class
    layouts: dict[tuple[Any, ...], OneProduct | None] = {}  # ... and per operand layout
    left_perm, right_perm, out_perm = perms
    left_moved = None if left_perm == tuple(range(left_rank)) else left_perm
    right_moved = None if right_perm == tuple(range(right_rank)) else right_perm
    out_moved = None if out_perm == tuple(range(len(out_perm))) else out_perm
    groups = shaping if isinstance(shaping, Groups) else None
    indices = shaping if isinstance(shaping, Indices) else Indices(None, None, None)
    left_index, right_index, result_index = indices
    merged = ", label groups merged as views" if groups is not None else ""

    def product(operands: tuple[Any, ...], dry: bool = False) -> Any:
        pair = _plain_pair(operands)
        if pair is None:
            return None
        a, b = pair
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
        if combos <= most and not small:
            return None
        if combos > most:
            planned = _planned_as_this(a, b, left, right)
            if planned is None:
                return None
            if (
                not small
                or planned.copies != (None, None)
                or planned.swapped
                or (merge_left and not a.is_contiguous())
                or (merge_right and not b.is_contiguous())
            ):  # (its merges are views of the operands' class: the plan checked them)
                if dry:
                    return _planned_report(planned, combos, most)
                next(_answered)
                return _as_planned(a, b, planned)
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

    def _planned_as_this(
        a: torch.Tensor, b: torch.Tensor, left: Any, right: Any
    ) -> OneProduct | None:
        """The plan's one product past the bound, within the memory limit (the result and
        each operand once: copied as the plan copies it, or by torch.matmul where its
        batch axes do not merge; the plan's peak may be less, then it runs); remembered
        per layout (a repeated call asks two dictionaries) and per shape class (a new
        shape asks one class key)."""
        if a.device != CPU:
            return None
        layout = (left, a.stride(), right, b.stride(), a.dtype)
        if layout in layouts:
            planned = layouts[layout]
        else:
            planned = _class_product(a, b, left, right)
            if len(layouts) >= _CACHE_SIZE:
                layouts.clear()
            layouts[layout] = planned
        if planned is None:
            return None
        # the result, and each operand once: copied as the plan copies it, or by torch.matmul
        # where its batch axes do not merge (the plan's peak may be less: then it runs)
        elements = 1
        for op, ax in result_axes:
            elements *= (left, right)[op][ax]
        elements += a.numel() + b.numel()
        return planned if elements * a.element_size() <= limit_for(CPU, None) else None

    def _class_product(
        a: torch.Tensor, b: torch.Tensor, left: Any, right: Any
    ) -> OneProduct | None:
        key = pair_class(a, b)
        if key is None:
            return None  # no shape class (irregular): planned for its own layout
        if key in classes:
            return classes[key]
        if len(classes) >= _CACHE_SIZE:
            classes.clear()
        shapes, strides = (tuple(left), tuple(right)), (a.stride(), b.stride())
        planned = classes[key] = one_product_plan(subscripts, shapes, strides, a.dtype, form)
        return planned

    return product


def _as_planned(a: torch.Tensor, b: torch.Tensor, how: OneProduct) -> torch.Tensor:
    """The product as the plan runs it (:class:`.plan.OneProduct`): the operands copied
    (``Tensor.contiguous``: a new C-ordered tensor) where it copies them, viewed in its
    order with each kind merged (a view: the plan checked it for the class), multiplied
    (the right one first where it swaps them), the result unmerged and permuted."""
    x = _prepared(a, how.copies[0], how.folds[0])
    y = _prepared(b, how.copies[1], how.folds[1])
    nb, rows, inner, cols = how.counts
    free = rows
    if how.swapped:
        x, y, free = y, x, cols
    head, x_shape, y_shape = x.shape[:nb], x.shape, y.shape
    first = tuple(x_shape[nb : nb + free])
    second = tuple(y_shape[nb + inner :])
    k = math.prod(x_shape[nb + free :])
    result = _matmul(
        x.reshape((*head, math.prod(first), k)), y.reshape((*head, k, math.prod(second)))
    ).reshape((*head, *first, *second))
    final = how.final
    return result if final == tuple(range(len(final))) else result.permute(final)


def _prepared(t: torch.Tensor, copy: tuple[int, ...] | None, fold: tuple[int, ...]) -> Any:
    identity = tuple(range(t.dim()))
    if copy is not None:
        t = (t if copy == identity else t.permute(copy)).contiguous()
    return t if fold == identity else t.permute(fold)


def _planned_report(how: OneProduct, combos: int, most: int) -> str:
    """What :func:`_as_planned` runs, for ``explain``."""
    copied = [side for side, copy in zip(("left", "right"), how.copies) if copy is not None]
    first = f"the {' and '.join(copied)} operand copied into C order, then " if copied else ""
    order = ", the result's transpose as right^T @ left^T" * how.swapped
    return (
        f"{first}one torch.matmul over views{order} ({combos:,} index combinations, "
        f"past {most:,}: its shape class's plan is this product)"
    )


def _plain_pair(operands: tuple[Any, ...]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Two :func:`_plain` tensors of one device and one dtype, or None (a graph allowed:
    both lanes of two operands run one kernel torch's own autograd differentiates)."""
    if len(operands) != 2:
        return None
    a, b = operands
    if type(a) not in _PLAIN or type(b) not in _PLAIN or b.dtype is not a.dtype:
        return None
    if a.device != b.device or not _plain(a, True) or not _plain(b, True):
        return None
    return a, b


def _plain(a: torch.Tensor, graph: bool = False) -> bool:
    """A strided tensor of a lane dtype, not a lazy conjugate or negation, with no graph to
    record, or (``graph``: the lane's kernel is what torch's own autograd differentiates as
    it does ``torch.einsum``'s) operands within the memory limit, which bounds each of
    their gradients."""
    if a.dtype not in _DTYPES or a.layout is not _STRIDED or a.is_conj() or a.is_neg():
        return False
    if a.is_nested:  # (strided too, but without sizes: the full path says so)
        return False
    if not (a.requires_grad and torch.is_grad_enabled()):
        return True
    return graph and a.numel() * a.element_size() <= limit_for(a.device, None)


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
