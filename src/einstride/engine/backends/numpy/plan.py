"""The planner: an :class:`EinsumSpec` plus the operands' layouts -> an immutable :class:`Plan`.

Per operand: diagonal views for repeated labels, broadcast ``...`` dims of size 1 dropped.
Per contraction (one operand, or a pair along the path):

* every label is classified once: batch (both inputs and kept), contracted (both, not
  kept), left-/right-free (one input, kept) and left-/right-only (one input, not kept);
* left-/right-only labels are summed **before** the product;
* the product is ONE batched ``numpy.matmul`` (BLAS) over views: each label group (batch,
  M = left-free, K = contracted, N = right-free) is folded jointly across both operands and
  the output, so strided and transposed operands are used as they are.  An operand is
  copied only when no ordering of its groups folds (or its strides are not BLAS-ready),
  choosing the cheapest set of copies; the step records what was viewed or copied and why.
* without contracted labels the product is one broadcast ``numpy.multiply``.

The result is written straight into the output (``out=`` or the plan's own array, through
a strided diagonal view when output labels repeat) whenever the strides allow.

>>> import numpy as np
>>> from ...spec.equation import parse_equation
>>> a, b = np.ones((8, 64, 32)), np.ones((8, 32, 16))
>>> plan = build_plan(parse_equation("bij,bjk->bik", a.shape, b.shape),
...                   (a.dtype, b.dtype), (a.strides, b.strides))
>>> [step.kind for step in plan.steps], plan.steps[0].left.note
(['contract'], 'viewed')
>>> plan.allocated_bytes == 8 * 64 * 16 * 8
True
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...._compat import assert_never
from ....errors import EinsumError
from ....memory import MAX_NDARRAY_RANK
from ...spec.costmodel import as_float
from ...spec.dtypes import check_numeric, compute_dtype, result_dtype
from ...spec.equation import EinsumSpec, Equation, bind, quoted, sub_equation
from ...spec.paths import (
    finder_form,
    optimize_key,
    optimize_of_key,
    path_fits_any_size,
    unoptimized,
)
from ...spec.walk import plan_path, walk_path
from .delivery import Alloc, Delivery, DeliveryPlan, OutputCreation
from .fold import (
    BLAS_TYPES,
    Term,
    blas_ready,
    contiguous_strides,
    fold_group,
    fold_stride,
    write_order,
)
from .loopcalls import LoopCalls, loop_calls
from .options import PlannerOptions, default_options
from .pairs import (
    Choice,
    Fold,
    Geometry,
    Groups,
    Out,
    blas_ns,
    choose,
    classify,
    matmul_geometry,
)
from .peak import TEMPORARY
from .skeleton import Decisions, Recorder, ReplayMismatch, ShapeClass, shape_class
from .steps import (
    BLAS_REDUCTIONS,
    BatchStep,
    ContractStep,
    CopyStep,
    FusedStep,
    Kernel,
    OperandView,
    OutputPlan,
    Plan,
    ReduceStep,
    Split,
    Spread,
    Step,
    ViewStep,
)

__all__ = [
    "CACHE_LINE",
    "REPLAY_MISMATCHES",
    "InnerCall",
    "build_plan",
    "bytes_moved",
    "check_memory",
    "check_ranks",
    "class_decisions",
    "dropped_axes",
    "inner_call",
    "reduction_bytes",
    "spread_labels",
    "spread_plan",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Target:
    """The final destination as the last step sees it: distinct labels (``U``) and, when
    fixed, the write view's term (``out=``, or the zeroed array of a diagonal expansion)."""

    labels: tuple[int, ...]
    term: Term | None
    dtype: np.dtype[Any]


def build_plan(
    spec: EinsumSpec,
    dtypes: Sequence[np.dtype[Any]],
    strides: Sequence[Sequence[int]],
    *,
    out: tuple[tuple[int, ...], np.dtype[Any]] | None = None,
    dtype: Any = None,
    optimize: Any = "auto",
    options: PlannerOptions | None = None,
    spread: bool = False,
) -> Plan:
    """Plan ``spec`` for operands of the given dtypes and byte strides (and ``out=``'s
    byte strides and dtype when given), with ``options`` (default: :func:`default_options`).
    With ``spread``, a result that is the same along output labels which every operand
    broadcasts is computed without them and then broadcast (:func:`spread_labels`), and an
    operand that broadcasts a summed label is read without it (:func:`dropped_axes`).

    Dense operands are planned by their shape class (:mod:`.skeleton`): the decisions made
    for the class's representative shapes (cached), replayed with the real sizes."""
    for i, d in enumerate(dtypes):
        check_numeric(np.dtype(d), f"operand {i} has dtype")
    dts = tuple(np.dtype(d) for d in dtypes)
    layouts = tuple(tuple(s) for s in strides)
    if spread and (call := inner_call(spec, dts, layouts, out=out, dtype=dtype)):
        return _spread_plan(spec, dts, layouts, call, out, dtype, optimize, options)
    opts = default_options() if options is None else options
    opt_key = (
        optimize_key(optimize)
        if out is None and not unoptimized(optimize) and path_fits_any_size(optimize, len(dts))
        else None
    )
    cls = None if opt_key is None else shape_class(spec.shapes(), layouts, dts)
    if cls is not None:
        dtype_key = None if dtype is None else np.dtype(dtype)
        before = class_decisions.cache_info().misses
        decisions, planned = class_decisions(spec.equation, cls, dts, dtype_key, opt_key, opts)
        reused = class_decisions.cache_info().misses == before
        if cls.rep_shapes == planned.spec.shapes() == spec.shapes() and cls.rep_strides == layouts:
            return replace(planned, spec=spec, decided_for=decisions.shapes, reused=reused)
        try:
            plan = _plan(spec, dts, layouts, None, dtype, optimize, opts, Recorder(decisions))
            return replace(plan, decided_for=decisions.shapes, reused=reused)
        except ReplayMismatch:  # pragma: no cover - a planner bug; the tests count these
            REPLAY_MISMATCHES.append(spec.text)
    return _plan(spec, dts, layouts, out, dtype, optimize, opts, Recorder())


def spread_labels(spec: EinsumSpec, layouts: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The output labels along which the result is the same: each appears once in the
    output, has a size above 1, and every operand axis carrying it is broadcast (a zero
    stride, or a size-1 ``...`` axis).  Computing the result without them and broadcasting
    it costs its size once instead of a dense copy of each such operand (a matrix of
    identical rows times a matrix: 0.24 s and a 32 MiB copy at 2048, against 2 ms for a
    row times the matrix).  Only where the call sums a label: a product that sums nothing
    (``i,j->ij``) reads broadcast operands as they are, and spreading it would gain nothing
    but hold its small result beside the output (a review).

    >>> from ...spec.equation import parse_equation
    >>> spec = parse_equation("ij,jk->ik", (4, 3), (3, 5))
    >>> spread_labels(spec, ((0, 8), (40, 8))), spread_labels(spec, ((24, 8), (40, 8)))
    ((0,), ())
    """
    if _reads_all(spec, layouts):
        return ()
    return _spread_labels(spec, _carriers(spec, layouts))


def _reads_all(spec: EinsumSpec, layouts: Sequence[Sequence[int]]) -> bool:
    """Whether every operand axis is read as it is: no zero stride (or an empty label, whose
    result reads nothing)."""
    return not any(0 in strides for strides in layouts) or 0 in spec.sizes


def _carriers(
    spec: EinsumSpec, layouts: Sequence[Sequence[int]], gone: Sequence[set[int]] = ()
) -> dict[int, dict[int, bool]]:
    """Per label, the operands carrying it (on axes not ``gone``), each with whether every
    such axis of it is broadcast (a zero stride, or a size-1 ``...`` axis)."""
    found: dict[int, dict[int, bool]] = {}
    for i, (term, strides, stretch) in enumerate(zip(spec.inputs, layouts, spec.stretched)):
        skip = gone[i] if gone else ()
        for ax, lab in enumerate(term):
            if ax in skip:
                continue
            flat = strides[ax] == 0 or ax in stretch
            holders = found.get(lab)
            if holders is None:
                found[lab] = {i: flat}
            else:
                holders[i] = holders.get(i, True) and flat
    return found


def _spread_labels(spec: EinsumSpec, carriers: dict[int, dict[int, bool]]) -> tuple[int, ...]:
    output = spec.output
    if len(carriers) == len(set(output)):
        return ()  # nothing summed
    found = []
    for label in dict.fromkeys(output):
        if spec.sizes[label] >= 2 and output.count(label) == 1 and all(carriers[label].values()):
            found.append(label)
    return tuple(found)


def dropped_axes(spec: EinsumSpec, layouts: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """Per operand, the axes read at index 0 and left out of its term: those of a summed
    label (size above 1) that the operand broadcasts (every axis of its carrying the label
    has a zero stride, or is a size-1 ``...`` axis) while another operand still carries
    the label.  Such an operand is the same at every value of the label, so the sum runs
    over the others alone: a matrix of identical columns times a matrix (``ik,jk->ij``,
    ``x[i, k] = v[i]``) is ``v[i]`` times the sums of the matrix's rows, where BLAS would
    copy it densely and multiply ``2 n**3``.  Where every operand carrying the label
    broadcasts it, the smallest keeps it (its sum over a zero stride is a cheap
    reduction).  Only an operand with a label (of size above 1) that no operand keeping the
    label holds is read so: the product with it then multiplies the label's size by that
    label's, where without it (a broadcast vector times a matrix over their one label,
    ``ij,j->i``) the sum costs what the product did, and the call would lose the shape
    class's plan for nothing.  When any axis is left out, so is every size-1 ``...``
    axis (the labels of the equation without them are named, and named labels never
    broadcast).  All empty: nothing to leave out.

    >>> from ...spec.equation import parse_equation
    >>> spec = parse_equation("ik,jk->ij", (4, 3), (5, 3))
    >>> dropped_axes(spec, ((8, 0), (24, 8))), dropped_axes(spec, ((8, 0), (0, 8)))
    (((1,), ()), ((1,), ()))
    >>> dropped_axes(spec, ((24, 8), (24, 8)))
    ((), ())
    >>> dropped_axes(parse_equation("ij,j->i", (4, 3), (3,)), ((24, 8), (0,)))  # no gain
    ((), ())
    """
    if _reads_all(spec, layouts):
        return ((),) * len(spec.inputs)
    carriers = _carriers(spec, layouts)
    return _dropped_axes(spec, layouts, carriers, _spread_labels(spec, carriers))


def _dropped_axes(
    spec: EinsumSpec,
    layouts: Sequence[Sequence[int]],
    carriers: dict[int, dict[int, bool]],
    spread: tuple[int, ...],
) -> tuple[tuple[int, ...], ...]:
    """:func:`dropped_axes`, round after round until none drops more (an operand that loses
    a label may leave another's gain), with the ``spread`` labels at size 1 (as the steps
    read them): the call of what is left drops nothing, as the plan caches expect of an
    inner call (a review: the smallest operand, chosen at the full sizes, was not the
    inner call's, which dropped the label again)."""
    sizes = list(spec.sizes)
    for label in spread:
        sizes[label] = 1
    gone: list[set[int]] = [set() for _ in spec.inputs]
    # (another round only where one dropped and one was declined: only a declined operand
    # can gain from another's loss)
    while _drop_round(spec, sizes, carriers, gone) == (True, True):
        carriers = _carriers(spec, layouts, gone)
    if not any(gone):
        return ((),) * len(spec.inputs)
    return tuple(tuple(sorted(g | set(st))) for g, st in zip(gone, spec.stretched))


def _drop_round(
    spec: EinsumSpec,
    sizes: Sequence[int],
    carriers: dict[int, dict[int, bool]],
    gone: list[set[int]],
) -> tuple[bool, bool]:
    """One round of :func:`dropped_axes` over ``carriers`` (those of the axes not ``gone``)
    with the labels' ``sizes``, adding to ``gone``: whether an axis was added, and whether
    an operand broadcasting a label kept it for want of a gain."""
    output, added, declined = set(spec.output), False, False
    # a size-1 ``...`` axis holds no label: where anything drops it is left out too, and an
    # operand holding a label only there would not hold it in the inner call (a hypothesis
    # case: the inner call then dropped a label again, and its plan raised AssertionError)
    kept = [
        [x for ax, x in enumerate(term) if ax not in g and ax not in st]
        for term, g, st in zip(spec.inputs, gone, spec.stretched)
    ]
    for label, holders in carriers.items():
        if label in output or sizes[label] < 2:
            continue
        broadcast = [i for i, flat in holders.items() if flat]
        if not broadcast:
            continue
        dense = [i for i, flat in holders.items() if not flat]
        if not dense:  # the smallest keeps it (the first of equal ones)
            elements = [math.prod([sizes[lab] for lab in kept[i]]) for i in broadcast]
            dense.append(broadcast.pop(elements.index(min(elements))))
        held = {lab for i in dense for lab in kept[i]}
        for i in broadcast:
            if any(sizes[lab] > 1 and lab not in held for lab in kept[i]):
                gone[i].update([ax for ax, x in enumerate(spec.inputs[i]) if x == label])
                kept[i] = [x for x in kept[i] if x != label]
                added = True
            else:
                declined = True
    return added, declined


@dataclass(frozen=True, slots=True, kw_only=True)
class InnerCall:
    """The call a plan that reads broadcast axes once runs: the ``equation`` (the call's, or
    :func:`~...spec.equation.sub_equation` without the dropped axes) over the operands read
    by ``spread.reads()``, of these ``shapes`` and byte ``strides``; ``spread`` says what is
    read and how the result is broadcast after (:class:`~.steps.Spread`)."""

    equation: Equation
    shapes: tuple[tuple[int, ...], ...]
    strides: tuple[tuple[int, ...], ...]
    spread: Spread

    def facts(self, dtypes: Sequence[Any], itemsizes: Sequence[int] = ()) -> tuple[Any, ...]:
        """The operands' facts as the plan caches key them (``(shape, strides, dtype)``
        per operand, flattened), for operands of these dtypes; with ``itemsizes``, the
        strides in elements of those sizes (as the torch backend keys them)."""
        found: list[Any] = []
        for k, (shape, strides, dt) in enumerate(zip(self.shapes, self.strides, dtypes)):
            if itemsizes:
                strides = tuple(s // itemsizes[k] for s in strides)
            found += (shape, strides, dt)
        return tuple(found)

    def out_facts(self, out_facts: Any) -> Any:
        """``out=``'s facts for the steps: its first slice along the spread axes."""
        if out_facts is None:
            return None
        axes = self.spread.axes
        return (tuple(1 if ax in axes else n for ax, n in enumerate(out_facts[0])), *out_facts[1:])


def inner_call(
    spec: EinsumSpec,
    dtypes: Sequence[np.dtype[Any]],
    layouts: Sequence[Sequence[int]],
    *,
    out: tuple[tuple[int, ...], np.dtype[Any]] | None = None,
    dtype: Any = None,
) -> InnerCall | None:
    """The :class:`InnerCall` of these operands (byte strides ``layouts``, and ``out=``'s
    strides and dtype when given): the labels :func:`spread_labels` read at size 1, the
    axes :func:`dropped_axes` left out; None where neither applies.

    >>> from ...spec.equation import parse_equation
    >>> spec = parse_equation("ik,jk->ij", (4, 3), (5, 3))
    >>> call = inner_call(spec, (np.dtype(float),) * 2, ((8, 0), (24, 8)))
    >>> call.equation.text, call.shapes, call.strides, call.spread.reads()
    ('i,jk->ij', ((4,), (5, 3)), ((8,), (24, 8)), [(slice(None, None, None), 0), None])
    """
    if _reads_all(spec, layouts):
        return None
    carriers = _carriers(spec, layouts)
    labels = _spread_labels(spec, carriers)
    dropped = _dropped_axes(spec, layouts, carriers, labels)
    if not labels and not any(dropped):
        return None
    spread, given = set(labels), spec.shapes()
    operand_axes = tuple(
        tuple(ax for ax, lab in enumerate(term) if lab in spread and shape[ax] > 1)
        for term, shape in zip(spec.inputs, given)
    )
    shapes = tuple(
        tuple(1 if ax in axes else n for ax, n in enumerate(shape) if ax not in gone)
        for shape, axes, gone in zip(given, operand_axes, dropped)
    )
    kept = [tuple(x for ax, x in enumerate(t) if ax not in g) for t, g in zip(spec.inputs, dropped)]
    strides = tuple(
        tuple(
            _outside_stride(seq, shape, dt.itemsize) if ax in axes else x
            for ax, x in enumerate(seq)
            if ax not in gone
        )
        for seq, shape, dt, axes, gone in zip(layouts, given, dtypes, operand_axes, dropped)
    )
    axes = tuple(ax for ax, lab in enumerate(spec.output) if lab in spread)
    alloc = None
    if axes and out is None:  # the full output
        rt = result_dtype(dtypes, dtype)
        alloc = Alloc(what="output", shape=spec.output_shape, dtype=rt, labels=spec.output)
    elif axes and out is not None:  # out='s first slice, copied before it is broadcast
        first = tuple(1 if lab in spread else spec.sizes[lab] for lab in spec.output)
        alloc = Alloc(what="copy", shape=first, dtype=out[1], labels=spec.output)
    found = Spread(
        spec=spec,
        strides=tuple(tuple(x) for x in layouts),
        axes=axes,
        operand_axes=operand_axes,
        dropped=dropped,
        alloc=alloc,
    )
    equation = sub_equation(spec, kept) if any(dropped) else spec.equation
    return InnerCall(equation=equation, shapes=shapes, strides=strides, spread=found)


def _outside_stride(strides: Sequence[int], shape: Sequence[int], itemsize: int) -> int:
    """The stride of a size-1 axis outside every other axis of this layout: a spread axis
    read at size 1 keeps a regular layout regular (its zero stride would not be: no shape
    class, the call planned per shape).  The steps read it at index 0 whatever its stride."""
    return max([abs(st) * n for st, n in zip(strides, shape) if st and n > 1], default=itemsize)


def spread_plan(inner: Plan, spread: Spread) -> Plan:
    """``inner`` (the plan of an :class:`InnerCall`) as the plan of the call it reads."""
    assert inner.spread is None, "an inner call reads no broadcast axis once more"
    return replace(inner, spread=spread, naive_flops=_naive_flops(spread.spec))


def _spread_plan(
    spec: EinsumSpec,
    dts: tuple[np.dtype[Any], ...],
    layouts: tuple[tuple[int, ...], ...],
    call: InnerCall,
    out: tuple[tuple[int, ...], np.dtype[Any]] | None,
    dtype: Any,
    optimize: Any,
    options: PlannerOptions | None,
) -> Plan:
    """The plan of ``call``'s equation over the operands it reads, as the plan of ``spec``
    (the plain plan where its result is a view of an operand)."""
    inner = build_plan(
        bind(call.equation, call.shapes), dts, call.strides, out=out, dtype=dtype,
        optimize=optimize, options=options,
    )  # fmt: skip
    if inner.viewed_operand() is not None:  # NumPy's einsum returns a view too
        return build_plan(spec, dts, layouts, out=out, dtype=dtype, optimize=optimize,
                          options=options)  # fmt: skip
    return spread_plan(inner, call.spread)


def _naive_flops(spec: EinsumSpec) -> int:
    """The FLOPs of ``spec`` in one pass over every label (opt_einsum's convention)."""
    used = {lab for term in spec.inputs for lab in term}
    return _flop_count(used, bool(used - set(spec.output)), len(spec.inputs), spec.sizes)


REPLAY_MISMATCHES: list[str] = []
"""Equations whose recorded decisions could not be replayed (planned directly instead);
the tests check that it stays empty."""


@functools.lru_cache(maxsize=1024)
def class_decisions(
    equation: Equation,
    cls: ShapeClass,
    dtypes: tuple[np.dtype[Any], ...],
    dtype: np.dtype[Any] | None,
    opt_key: Any,
    options: PlannerOptions,
) -> tuple[Decisions, Plan]:
    """The decisions for a shape class, and the plan of its representative operands that
    made them (cached)."""
    optimize = optimize_of_key(opt_key)
    rep = bind(equation, cls.rep_shapes)
    recorder = Recorder()
    plan = _plan(rep, dtypes, cls.rep_strides, None, dtype, optimize, options, recorder)
    return Decisions(tuple(recorder.made), cls.rep_shapes), plan


def _plan(
    spec: EinsumSpec,
    dts: tuple[np.dtype[Any], ...],
    layouts: tuple[tuple[int, ...], ...],
    out: tuple[tuple[int, ...], np.dtype[Any]] | None,
    dtype: Any,
    optimize: Any,
    opts: PlannerOptions,
    recorder: Recorder,
) -> Plan:
    """Plan (recording the decisions) or replay ``recorder``'s decisions."""
    rt = result_dtype(dts, dtype, None if out is None else out[1])
    form = finder_form(optimize)
    if recorder.decide("tiny", lambda: _fused_unplanned(spec, dts, rt, layouts, opts)):
        path = recorder.decide("path", lambda: plan_path(spec, optimize))
        plan = _Planner(spec, dts, rt, out, opts, recorder, form).fused(layouts, path)
        check_ranks(plan)
        recorder.finished()
        return plan
    plan = _Planner(spec, dts, rt, out, opts, recorder, form).run(layouts, optimize)
    check_ranks(plan)
    if recorder.decide("fuse", lambda: _worth_fusing(plan, opts, layouts)):
        why = BROADCAST_COPY if _copies_a_broadcast(plan, layouts) else None
        plan = _Planner(spec, dts, rt, out, opts, recorder, form).fused(
            layouts, plan.path, reason=why
        )
    else:
        trap = _unoptimized_trap(plan, optimize, opts)
        if trap is not None:
            plan = _Planner(spec, dts, rt, out, opts, recorder, form).fused(
                layouts, plan.path, reason=trap
            )
    recorder.finished()
    return plan


def _unoptimized_trap(plan: Plan, optimize: Any, opts: PlannerOptions) -> str | None:
    """``optimize=False`` asks for no path search, and NumPy then runs one loop that holds
    only the output.  Left-to-right pairs are kept unless an intermediate outgrows NumPy's
    own cap (the largest operand or the output): then the one loop, and the reason why;
    not where the loop's index combinations pass NumPy's iterator (``2**63``: NumPy's
    ``einsum`` refuses that loop, "iterator is too large").
    Not for a backend without NumPy's loop (options that never fuse, torch's: its fused
    step holds the product of every operand, a review found 288 MB under a 1 MiB limit)."""
    spec = plan.spec
    if math.isinf(opts.loop_ns) or not unoptimized(optimize):
        return None
    if len(plan.steps) < 2 or len(spec.sizes) > 52 or math.prod(spec.sizes) >= ITERATOR_MAX:
        return None
    if len(spec.inputs) > 32 or any(d.kind not in "biufc" for d in plan.dtypes):
        return None
    largest = plan.largest_intermediate()
    sizes = [math.prod(s) * d.itemsize for s, d in zip(spec.shapes(), plan.dtypes)]
    cap = max([*sizes, math.prod(spec.output_shape) * plan.result_dtype.itemsize])
    if largest is None or largest[1].nbytes <= cap:
        return None
    return (
        f"optimize=False: left-to-right pairs would allocate a {largest[1].nbytes:,}-byte "
        f"{largest[1].what}, more than the largest operand or output ({cap:,} B)"
    )


def _shapes(step: Step) -> tuple[tuple[int, ...], ...]:
    """Every shape of an array the step makes or views."""
    match step:
        case ViewStep() | ReduceStep() | CopyStep() | FusedStep():
            return (step.shape,)
        case ContractStep() | BatchStep():
            geo = step.geometry
            return (step.shape, geo.left.shape, geo.right.shape, geo.out_shape)
        case _:
            assert_never(step)


def check_ranks(plan: Plan) -> None:
    """Raise :class:`EinsumError` naming the step when an array the plan makes or views would
    have more dimensions than NumPy supports."""
    found = [("output", plan.output.shape)]
    for k, step in enumerate(plan.steps):
        found += [(f"step {k + 1} ({step.kind})", shape) for shape in _shapes(step)]
    for name, shape in found:
        if len(shape) > MAX_NDARRAY_RANK:
            raise EinsumError(
                f"einsum {quoted(plan.spec.text)}: {name} would need an array of rank "
                f"{len(shape)}; NumPy arrays have at most {MAX_NDARRAY_RANK} dimensions"
            )


def _worth_fusing(
    plan: Plan, options: PlannerOptions, layouts: tuple[tuple[int, ...], ...]
) -> bool:
    """Several steps for a problem so small that one sum-of-products loop is cheaper (a rough
    cost model, in the options' estimated nanoseconds: the loop's elements and its inner
    calls, :func:`.loopcalls.loop_calls`); or, at any size, a plan that copies
    a broadcast operand (zero strides: the copy holds its logical size where the operand
    stores a fraction of it, 512 MB for the 8 bytes of ``broadcast_to(1.5, (8192, 8192))``
    times a vector, a review) where the loop, which reads the views as they are, is
    estimated cheaper too."""
    spec = plan.spec
    if len(plan.steps) < 2 or not _loop_takes(spec, plan.dtypes, plan.compute_dtype):
        return False
    combos = math.prod(spec.sizes)
    if combos > options.fuse_max_combos:
        if not _copies_a_broadcast(plan, layouts):
            return False
        # past BROADCAST_FUSE_MAX a loop of minutes and more: the plan (or its refusal) is
        # kept, for every shape of the class too, whose sizes reach 1.5x its own (a review)
        labels = len(spec.sizes)
        if combos * 3**labels > BROADCAST_FUSE_MAX * 2**labels:
            return False
    loop = _elements_ns(spec, options) + _calls_ns(spec, layouts, options)
    return loop < _planned_ns(plan, options)


def _fused_unplanned(
    spec: EinsumSpec,
    dts: tuple[np.dtype[Any], ...],
    rt: np.dtype[Any],
    layouts: tuple[tuple[int, ...], ...],
    options: PlannerOptions,
) -> bool:
    """Whether :func:`_worth_fusing` is sure to choose the one loop whatever steps the
    planner would make, so that they need not be planned (a new shape class of a small
    problem: 0.4-1.2 ms of planning for a loop NumPy runs in microseconds).  It is where the
    loop is estimated under two steps' fixed cost and the steps are certainly two or more:
    three operands or more, or two that contract a label (of size 2 or more) with another
    summed in one operand alone (a reduce step comes before the product, which takes
    none); with no broadcast operand (whose copy the reason would name) and the loop's
    limits.

    >>> from einstride.engine.spec.equation import parse_equation
    >>> f8, options = np.dtype("f8"), default_options()
    >>> spec = parse_equation("ab,bc->a", (3, 4), (4, 5))
    >>> _fused_unplanned(spec, (f8, f8), f8, ((32, 8), (40, 8)), options)
    True
    >>> spec = parse_equation("ab,bc->ac", (3, 4), (4, 5))  # maybe one step
    >>> _fused_unplanned(spec, (f8, f8), f8, ((32, 8), (40, 8)), options)
    False
    """
    if len(spec.inputs) < 2 or not _loop_takes(spec, dts, compute_dtype(rt)):
        return False
    if math.prod(spec.sizes) > options.fuse_max_combos:  # (sizes past a float's range too)
        return False
    two_steps, fused = 2 * options.step_ns, _elements_ns(spec, options)
    if not fused < two_steps:
        return False
    for shape, strides in zip(spec.shapes(), layouts):
        if any(n > 1 and st == 0 for n, st in zip(shape, strides)):
            return False
    if len(spec.inputs) == 2 and not _reduces_then_contracts(spec):
        return False
    return fused + _calls_ns(spec, layouts, options) < two_steps


def _reduces_then_contracts(spec: EinsumSpec) -> bool:
    """Two operands that contract a label of size 2 or more, one of which also sums a
    label of size 2 or more that the other lacks."""
    (a, b), sizes, out = spec.inputs, spec.sizes, set(spec.output)
    wide = {x for x in (*a, *b) if sizes[x] > 1 and x not in out}
    shared = wide & set(a) & set(b)
    alone = (wide & set(a)) ^ (wide & set(b))
    return bool(shared) and bool(alone)


def _loop_takes(spec: EinsumSpec, dtypes: tuple[np.dtype[Any], ...], ct: np.dtype[Any]) -> bool:
    """Whether NumPy's one loop can run ``spec`` (its letters, operands and dtypes)."""
    if len(spec.sizes) > 52 or len(spec.inputs) > 32:
        return False
    return all(d.kind in "biufc" for d in (*dtypes, ct))


def _elements_ns(spec: EinsumSpec, options: PlannerOptions) -> float:
    """The estimated ns of the one loop's elements (every operand's, each combination)."""
    return options.loop_base_ns + options.loop_ns * as_float(
        math.prod(spec.sizes) * len(spec.inputs)
    )


def _calls_ns(
    spec: EinsumSpec, layouts: tuple[tuple[int, ...], ...], options: PlannerOptions
) -> float:
    """The estimated ns of the inner calls of the one loop and its iterator's steps
    (:mod:`.loopcalls`)."""
    walk = loop_calls(spec.inputs, layouts, tuple(dict.fromkeys(spec.output)), spec.sizes)
    return _walk_ns(walk, options)


def _walk_ns(walk: LoopCalls, options: PlannerOptions) -> float:
    """The estimated ns of a loop's inner calls and iterator steps (``walk``)."""
    return (
        as_float(walk.calls) * options.plain_call_ns + as_float(walk.steps) * options.loop_call_ns
    )


ITERATOR_MAX = 1 << 63  # index combinations NumPy's iterator takes (np.intp)
BROADCAST_FUSE_MAX = 1 << 34  # index combinations past which no loop is run instead (~10 s)


BROADCAST_COPY = (
    "the steps would copy a broadcast operand to its full size, and this loop, reading the "
    "operands as they are, is estimated cheaper"
)


def _copies_a_broadcast(plan: Plan, layouts: tuple[tuple[int, ...], ...]) -> bool:
    """Whether a step copies an operand that has a broadcast (zero-stride) axis."""
    shapes = plan.spec.shapes()
    broadcast = {
        k
        for k, (shape, strides) in enumerate(zip(shapes, layouts))
        if any(n > 1 and s == 0 for n, s in zip(shape, strides))
    }
    return any(isinstance(step, CopyStep) and step.src in broadcast for step in plan.steps)


def _planned_ns(plan: Plan, options: PlannerOptions) -> float:
    """The steps' estimated ns, for :func:`_worth_fusing`: matmuls at BLAS speed (thin ones
    slower), other FLOPs and the intermediates' bytes at the options' rates.  The output is
    not counted: the fused loop writes it too."""
    flops, ns = plan.flops, options.step_ns * len(plan.steps)
    for step in plan.steps:
        if isinstance(step, ContractStep) and step.dtype in BLAS_TYPES:
            *batch, rows, cols = step.geometry.out_shape
            inner, calls = step.geometry.left.shape[-1], math.prod(batch)
            ns += blas_ns(step.dtype, rows, inner, cols, calls)
            flops -= 2 * rows * inner * cols * calls
    made = sum(a.nbytes for _, a in plan.intermediates())
    return ns + options.flop_ns * as_float(max(flops, 0)) + options.byte_ns * as_float(made)


class _Planner:
    def __init__(
        self,
        spec: EinsumSpec,
        dtypes: tuple[np.dtype[Any], ...],
        rt: np.dtype[Any],
        out: tuple[tuple[int, ...], np.dtype[Any]] | None,
        options: PlannerOptions,
        recorder: Recorder,
        finder: Any = "auto",
    ) -> None:
        self.spec = spec
        self.recorder = recorder
        self.finder = finder
        self.sizes = spec.sizes
        self.dtypes = dtypes
        self.rt = rt
        self.ct = compute_dtype(rt)
        self.out = out
        self.options = options
        self.steps: list[Step] = []
        self.n_regs = len(spec.inputs)
        self.flops = 0
        self.create = OutputCreation.NONE
        self.own_order: tuple[int, ...] = ()  # the axes of the output it allocates, in memory
        self.result = -1
        self.final_perm: tuple[int, ...] = ()
        self.distinct = tuple(dict.fromkeys(spec.output))
        self.shared_out = frozenset(
            lab for lab in self.distinct if sum(lab in term for term in spec.inputs) > 1
        )  # output labels of several operands: batch labels wherever two of them meet
        self.expand = tuple(
            tuple(ax for ax, lab in enumerate(spec.output) if lab == u) for u in self.distinct
        )
        self.target = self._target()

    # -- the destination ----------------------------------------------------------------

    def _target(self) -> _Target:
        if self.out is not None:
            self.create = OutputCreation.OUT
            out_strides, out_dtype = self.out
            return _Target(
                labels=self.distinct, term=self._write_term(out_strides, out_dtype), dtype=out_dtype
            )
        if len(self.distinct) != len(self.spec.output):
            self.create = OutputCreation.ZEROS
            strides = contiguous_strides(self.spec.output_shape, self.rt.itemsize)
            return _Target(
                labels=self.distinct, term=self._write_term(strides, self.rt), dtype=self.rt
            )
        return _Target(labels=self.distinct, term=None, dtype=self.rt)

    def _write_term(self, strides: Sequence[int], dtype: np.dtype[Any]) -> Term:
        """The write view of the destination: one axis per distinct output label."""
        summed = tuple(sum(strides[ax] for ax in axes) for axes in self.expand)
        shape = tuple(self.sizes[u] for u in self.distinct)
        return Term.of(self.distinct, shape, summed, dtype)

    def _own_term(self) -> Term:
        """The output the plan would allocate (C order, or ``own_order``) for the last step
        to write into."""
        shape = self.spec.output_shape
        if not self.own_order:
            return Term.row_major(self.distinct, shape, self.rt)
        laid = contiguous_strides(tuple(shape[ax] for ax in self.own_order), self.rt.itemsize)
        strides = [0] * len(shape)
        for k, ax in enumerate(self.own_order):
            strides[ax] = laid[k]
        return Term.of(self.distinct, shape, strides, self.rt)

    def _dest_perm(self, labels: Sequence[int]) -> tuple[int, ...]:
        return tuple(self.distinct.index(lab) for lab in labels)

    def _final_ways(self) -> list[Out]:
        """The ways the last step may deliver, the first winning a tie."""
        dest = self.target.term
        if dest is not None:
            temp = Out(
                mode=Delivery.TEMP,
                cost=self.options.copy_ns_per_byte * as_float(dest.size * self.ct.itemsize),
            )
            # straight into an output of the compute dtype, unless values must round to a
            # small-float result dtype first (dtype=float16 into a float32 out=)
            straight = dest.dtype == self.ct and self.ct == self.rt
            return ([Out(mode=Delivery.INTO, term=dest)] if straight else []) + [temp]
        if self.ct != self.rt:
            return [Out(mode=Delivery.TEMP)]
        own = Out(mode=Delivery.INTO, term=self._own_term(), own=True, cost=self.options.into_ns)
        return [own, Out(mode=Delivery.RETURN)]

    def _delivery(
        self, way: Out, labels: tuple[int, ...], shape: tuple[int, ...], what: str = "intermediate"
    ) -> DeliveryPlan:
        """How a step whose register holds ``labels`` (``shape``) writes, the ``way`` chosen
        for it: the one place a write mode becomes a plan (and the plan's own output is
        asked for)."""
        ct = self.ct
        match way.mode:
            case Delivery.NEW:
                return DeliveryPlan(
                    mode=Delivery.NEW,
                    note="new buffer",
                    allocs=(Alloc(what=what, shape=shape, dtype=ct, labels=labels),),
                )
            case Delivery.RETURN:
                # a new C-ordered buffer in the output's order already is the output
                note = (
                    "new buffer"
                    if labels == self.distinct
                    else ("new buffer in matmul order; the result is a transposed view of it")
                )
                return DeliveryPlan(
                    mode=Delivery.RETURN,
                    note=note,
                    allocs=(Alloc(what="output", shape=shape, dtype=ct, labels=labels),),
                )
            case Delivery.INTO:
                if way.own:
                    self.create = OutputCreation.EMPTY
                return DeliveryPlan(
                    mode=Delivery.INTO,
                    dest_perm=self._dest_perm(labels),
                    note="written straight into the output",
                )
            case Delivery.TEMP:
                fixed = self.target.term
                if fixed is None:
                    self.create = OutputCreation.EMPTY
                note = (
                    "the output's strides do not fold; computed into a temporary, then copied"
                    if fixed is not None and fixed.dtype == ct
                    else f"computed in {ct}, then cast into the output"
                )
                wider = fixed is not None and fixed.dtype != self.rt and self.rt != ct
                return DeliveryPlan(
                    mode=Delivery.TEMP,
                    dest_perm=self._dest_perm(labels),
                    allocs=(Alloc(what="temporary", shape=shape, dtype=ct, labels=labels),),
                    note=note + (f", rounded to {self.rt} first" if wider else ""),
                    rounded_to=self.rt if wider else None,
                )
            case _:
                assert_never(way.mode)

    def _final_way(self, *, may_return: bool) -> Out:
        """How a last step that is not a matmul delivers: the first way, or -- a reduce or
        a fused loop (``may_return``) -- its own new array when that can be the result."""
        ways = self._final_ways()
        if may_return:
            return next((w for w in ways if w.mode is Delivery.RETURN), ways[0])
        return ways[0]

    def _add(
        self,
        step: ReduceStep | CopyStep | ContractStep | BatchStep | FusedStep,
        labels: tuple[int, ...],
    ) -> int:
        """Append ``step``, whose register holds ``labels``; a step that returns its array
        makes that register the result."""
        self.steps.append(step)
        if step.delivery.mode is Delivery.RETURN:
            self.result = step.dst
            self.final_perm = tuple(labels.index(u) for u in self.distinct)
        return step.dst

    # -- driver ---------------------------------------------------------------------------

    def new_reg(self) -> int:
        self.n_regs += 1
        return self.n_regs - 1

    def run(self, strides: tuple[tuple[int, ...], ...], optimize: Any) -> Plan:
        shapes = self.spec.shapes()
        live = [self._prepare(i, shapes[i], strides[i]) for i in range(len(shapes))]
        path = self.recorder.decide("path", lambda: plan_path(self.spec, optimize))
        walk_path(
            live,
            path,
            self.distinct,
            unary=self._unary_item,
            pair=self._pair,
            labels_of=lambda item: item[1].labels,
        )
        return self._finish(strides, path)

    def _unary_item(
        self, item: tuple[int, Term], keep: frozenset[int], final: bool
    ) -> tuple[int, Term]:
        return self._unary(*item, keep, final)

    def fused(
        self,
        strides: tuple[tuple[int, ...], ...],
        path: tuple[tuple[int, ...], ...],
        reason: str | None = None,
    ) -> Plan:
        """The whole einsum as one :class:`FusedStep` over the operands as they are."""
        shape = tuple(self.sizes[u] for u in self.distinct)
        delivery = self._delivery(self._final_way(may_return=True), self.distinct, shape)
        n = len(self.spec.inputs)
        cast = any(d != self.ct for d in self.dtypes)
        self._add(
            FusedStep(
                operands=tuple(range(n)),
                dst=self.new_reg(),
                labels=self.spec.inputs,
                out_labels=self.distinct,
                shape=shape,
                dtype=self.ct,
                delivery=delivery,
                cast=cast,
                **({} if reason is None else {"reason": reason}),
            ),
            self.distinct,
        )
        self.flops = _naive_flops(self.spec)  # (one pass: the naive count)
        return self._finish(strides, path)

    def _finish(
        self, strides: tuple[tuple[int, ...], ...], path: tuple[tuple[int, ...], ...]
    ) -> Plan:
        allocs: tuple[Alloc, ...] = ()
        order = self.own_order if self.create is OutputCreation.EMPTY else ()
        if self.create in (OutputCreation.ZEROS, OutputCreation.EMPTY):
            allocs = (
                Alloc(
                    what="output",
                    shape=self.spec.output_shape,
                    dtype=self.rt,
                    labels=self.spec.output,
                ),
            )
        output = OutputPlan(
            labels=self.spec.output,
            shape=self.spec.output_shape,
            dtype=self.rt,
            create=self.create,
            expand=self.expand,
            result=self.result,
            final_perm=self.final_perm,
            allocs=allocs,
            order=order,
        )
        naive = _naive_flops(self.spec)
        return Plan(
            spec=self.spec,
            dtypes=self.dtypes,
            strides=strides,
            out_strides=None if self.out is None else self.out[0],
            result_dtype=self.rt,
            compute_dtype=self.ct,
            path=path,
            steps=tuple(self.steps),
            output=output,
            naive_flops=naive,
            flops=self.flops,
            n_registers=self.n_regs,
            frees=_frees(self.steps, len(self.spec.inputs), self.result),
            finder=self.finder,
        )

    # -- per operand ----------------------------------------------------------------------

    def _prepare(
        self, i: int, shape: tuple[int, ...], strides: tuple[int, ...]
    ) -> tuple[int, Term]:
        """Drop stretched size-1 ``...`` axes, then take diagonals of repeated labels."""
        labels, dims, steps = list(self.spec.inputs[i]), list(shape), list(strides)
        squeeze = self.spec.stretched[i]
        for ax in reversed(squeeze):
            del labels[ax], dims[ax], steps[ax]
        diagonals = []
        while len(set(labels)) != len(labels):
            a = next(k for k, lab in enumerate(labels) if labels.count(lab) > 1)
            b = labels.index(labels[a], a + 1)
            diagonals.append((a, b))
            label, size, stride = labels[a], dims[a], steps[a] + steps[b]
            for ax in (b, a):
                del labels[ax], dims[ax], steps[ax]
            labels.append(label)
            dims.append(size)
            steps.append(stride)
        term = Term.of(labels, dims, steps, self.dtypes[i])
        reg = i
        if squeeze or diagonals:
            reg = self.new_reg()
            self.steps.append(
                ViewStep(
                    src=i,
                    dst=reg,
                    operand=i,
                    squeeze=squeeze,
                    diagonals=tuple(diagonals),
                    labels_in=self.spec.inputs[i],
                    labels=term.labels,
                    shape=term.shape,
                )
            )
        if not np.can_cast(term.dtype, self.ct, "same_kind"):
            return self._copy(reg, term, term.labels, f"cast {term.dtype} -> {self.ct}")
        return reg, term

    def _new_term(self, labels: Sequence[int], dtype: np.dtype[Any]) -> Term:
        return Term.row_major(labels, tuple(self.sizes[lab] for lab in labels), dtype)

    def _reduce(
        self, reg: int, term: Term, keep: frozenset[int], final: bool = False
    ) -> tuple[int, Term]:
        """Sum the labels of ``term`` not in ``keep``: into a new buffer whose axes follow the
        source's memory order (so the summing loop reads and writes in step), or -- the last
        step -- the way the result is delivered.  Labels :func:`deferred_sums` names are kept
        through a first pass and summed by a second, over its smaller result."""
        later = self.recorder.decide("defer", lambda: self._deferred(term, keep))
        if later:
            reg, term = self._reduce(reg, term, keep | later)
            return self._reduce(reg, term, keep, final)
        axes = tuple(ax for ax, lab in enumerate(term.labels) if lab not in keep)
        kept = tuple(lab for lab in term.labels if lab in keep)
        labels = kept if final else _memory_order(term, kept)
        shape = tuple(self.sizes[lab] for lab in labels)
        way = self._final_way(may_return=True) if final else Out(mode=Delivery.NEW)
        delivery = self._delivery(way, labels, shape)
        self.flops += _flop_count(term.labels, True, 1, self.sizes)
        # a BLAS kernel writes its own result, or a new buffer (in the operand's order), never
        # straight into the output, whose layout is anyone's
        blas = delivery.mode is not Delivery.INTO
        kernel, split, order = self.recorder.decide(
            "reduce", lambda: self._reduce_way(term, kept, blas)
        )
        summed = tuple(term.labels[ax] for ax in axes)
        dst = self._add(
            ReduceStep(
                src=reg,
                dst=self.new_reg(),
                axes=axes,
                summed=summed,
                kept=kept,
                labels=labels,
                shape=shape,
                dtype=self.ct,
                delivery=delivery,
                kernel=kernel,
                split=split,
                order=order,
                scratch=self._ones(summed) if kernel in BLAS_REDUCTIONS else (),
            ),
            labels,
        )
        return dst, self._new_term(labels, self.ct)

    def _reduce_way(
        self, term: Term, kept: tuple[int, ...], blas: bool
    ) -> tuple[Kernel, Split | None, tuple[int, ...]]:
        """The reduction's kernel, split, and a BLAS kernel's axis order: a reduction large
        enough to split over threads, writing its own result (``blas``), whose summed or
        kept axes are the operand's innermost dense run is one BLAS matrix-vector product
        with a vector of ones (:func:`_blas_reduction`): BLAS reads the operand at memory
        speed on its own threads, where NumPy's loop runs on one or, split, on chunks
        (measured, 32-128 MiB in float32 and float64, where one core gets a share of the
        memory's speed: row sums 0.45-0.89x the split loop's time, column sums of 256
        columns or more, which do not split, 0.45-0.88x; where one core gets all of it,
        0.9-1.1x).  "Large enough" is a size alone, whatever the thread count: the kernel,
        and so the result's bits, must not depend on it (a review: ``set_num_threads(1)``
        turned these into NumPy's loop)."""
        if blas and self._reduce_bytes(term, kept) >= self.options.split_min_bytes:
            found = _blas_reduction(term, kept, self.ct, self.options)
            if found is not None:
                return found[0], None, found[1]
        return _reduce_kernel(term), self._reduce_split(term, kept), ()

    def _deferred(self, term: Term, keep: frozenset[int]) -> frozenset[int]:
        """:func:`deferred_sums`, unless the reduction is one BLAS call (``_reduce_way``)."""
        kept = tuple(lab for lab in term.labels if lab in keep)
        large = self._reduce_bytes(term, kept) >= self.options.split_min_bytes
        if large and _blas_reduction(term, kept, self.ct, self.options) is not None:
            return frozenset()
        return deferred_sums(term, keep, self.options)

    def _ones(self, summed: tuple[int, ...]) -> tuple[Alloc, ...]:
        shape = tuple(self.sizes[lab] for lab in summed)
        return (Alloc(what=TEMPORARY, shape=shape, dtype=self.ct, labels=summed),)

    def _reduce_bytes(self, term: Term, kept: tuple[int, ...]) -> int:
        """The bytes a reduction of ``term`` to ``kept`` moves (:func:`reduction_bytes`)."""
        result = math.prod(self.sizes[lab] for lab in kept) * self.ct.itemsize
        return reduction_bytes(term.shape, term.strides, term.dtype.itemsize, result)

    def _reduce_split(self, term: Term, kept: tuple[int, ...]) -> Split | None:
        """How to split a reduction of ``term``: along its outermost label in memory when it
        is kept (each chunk streams its own part of the source); None when the step is too
        small or that label is summed."""
        label = _outermost(term)
        if label not in kept:  # a chunk along an inner axis runs NumPy's loop far slower
            return None
        # chunks of two rows at least: NumPy's loop may sum a chunk of one row in another
        # order than the whole (a review), and the executor cuts none (execute.chunked)
        rows = self.sizes[label] // 2
        threads = self.options.split_threads(self._reduce_bytes(term, kept), rows)
        return Split(label=label, threads=threads) if threads > 1 else None

    def _copy(self, reg: int, term: Term, order: Sequence[int], reason: str) -> tuple[int, Term]:
        new = self._new_term(order, self.ct)
        perm = tuple(term.labels.index(lab) for lab in order)
        delivery = self._delivery(Out(mode=Delivery.NEW), new.labels, new.shape, "copy")
        dst = self._add(
            CopyStep(
                src=reg,
                dst=self.new_reg(),
                perm=perm,
                labels=new.labels,
                shape=new.shape,
                dtype=self.ct,
                reason=reason,
                delivery=delivery,
            ),
            new.labels,
        )
        return dst, new

    # -- one operand ----------------------------------------------------------------------

    def _unary(self, reg: int, term: Term, keep: frozenset[int], final: bool) -> tuple[int, Term]:
        kept = tuple(lab for lab in term.labels if lab in keep)
        if kept != term.labels:
            return self._reduce(reg, term, keep, final)
        if not final:
            return reg, term
        if self.target.term is None and term.dtype == self.rt:
            self.result, self.final_perm = reg, tuple(term.labels.index(u) for u in self.distinct)
            return reg, term
        # a copy casts as it writes: straight into the destination, whatever its dtype
        way = Out(mode=Delivery.INTO, own=self.target.term is None)
        delivery = self._delivery(way, term.labels, term.shape)
        dst = self._add(
            CopyStep(
                src=reg,
                dst=self.new_reg(),
                perm=tuple(range(len(term.labels))),
                labels=term.labels,
                shape=term.shape,
                dtype=self.target.dtype,
                reason="written into the output",
                delivery=delivery,
            ),
            term.labels,
        )
        return dst, term

    # -- two operands ---------------------------------------------------------------------

    def _pair(
        self, left: tuple[int, Term], right: tuple[int, Term], keep: frozenset[int], final: bool
    ) -> tuple[int, Term]:
        (ra, a), (rb, b) = left, right
        g = classify(a.labels, b.labels, keep)
        self.flops += _flop_count(
            set(a.labels) | set(b.labels),
            bool(g.contracted or g.left_only or g.right_only),
            2,
            self.sizes,
        )
        if g.left_only:
            ra, a = self._reduce(ra, a, keep | set(b.labels))
        if g.right_only:
            rb, b = self._reduce(rb, b, keep | set(a.labels))
        if g.left_only or g.right_only:
            g = replace(
                classify(a.labels, b.labels, keep), left_only=g.left_only, right_only=g.right_only
            )
        if math.prod(self.sizes[lab] for lab in g.contracted) == 1:
            return self._batch(ra, a, rb, b, g, final)
        return self._matmul(ra, a, rb, b, g, keep, final)

    def _preferred(
        self, labels: Sequence[int], final: bool, fallback: Sequence[int]
    ) -> tuple[int, ...]:
        source = self.distinct if final else fallback
        return tuple(lab for lab in source if lab in labels)

    def _batch(
        self, ra: int, a: Term, rb: int, b: Term, g: Groups, final: bool
    ) -> tuple[int, Term]:
        bt = self._preferred(g.batch, final, a.labels)
        lf = self._preferred(g.left_free, final, a.labels)
        rf = self._preferred(g.right_free, final, b.labels)
        labels = bt + lf + rf
        size = self.sizes
        shape = tuple(size[x] for x in labels)
        geometry = Geometry(
            left=Fold(
                perm=tuple(a.labels.index(x) for x in bt + lf + g.contracted),
                shape=tuple(size[x] for x in bt + lf) + (1,) * len(rf),
            ),
            right=Fold(
                perm=tuple(b.labels.index(x) for x in bt + g.contracted + rf),
                shape=tuple(size[x] for x in bt) + (1,) * len(lf) + tuple(size[x] for x in rf),
            ),
            out_shape=shape,
            labels=labels,
        )
        if final:
            self.own_order = self._batch_order(a, b)
        delivery = self._delivery(
            self._final_way(may_return=False) if final else Out(mode=Delivery.NEW), labels, shape
        )
        kernel = (
            Kernel.LOOP
            if (lf or rf) and len(set(a.labels) | set(b.labels)) <= 52
            else Kernel.MULTIPLY
        )
        groups = Groups(
            batch=bt,
            contracted=g.contracted,
            left_free=lf,
            right_free=rf,
            left_only=g.left_only,
            right_only=g.right_only,
        )
        dst = self._add(
            BatchStep(
                dst=self.new_reg(),
                kernel=kernel,
                left=OperandView(register=ra, labels=a.labels, shape=a.shape),
                right=OperandView(register=rb, labels=b.labels, shape=b.shape),
                geometry=geometry,
                groups=groups,
                shape=shape,
                dtype=self.ct,
                delivery=delivery,
                split=self.recorder.decide(
                    "split", lambda: self._batch_split(a, b, labels, delivery)
                ),
            ),
            labels,
        )
        return dst, self._new_term(labels, self.ct)

    def _batch_order(self, a: Term, b: Term) -> tuple[int, ...]:
        """The layout of an output the last batch step writes (:func:`.fold.write_order`),
        following the operand of more axes (the first of two as many): one pass in its
        memory order reads it in runs, as NumPy's ``order="K"`` lays it out (a product into
        a permuted output, ``cdab,b->dabc`` at 20 a label, warm: 148 -> 101 us, NumPy's own
        103); ``()`` for C order.  The same for every shape of a class (a class keeps the
        axes' order in memory and the sizes 1)."""
        if len(self.distinct) != len(self.spec.output):
            return ()  # (a repeated output label: a zeroed output, written diagonally)
        lead = a if len(a.labels) >= len(b.labels) else b
        order = write_order(self.distinct, lead.labels, lead.shape, lead.strides)
        return () if order == tuple(range(len(order))) else order

    def _batch_split(
        self, a: Term, b: Term, labels: tuple[int, ...], delivery: DeliveryPlan
    ) -> Split | None:
        """Split along the outermost label of what the step writes (chunks write whole rows)."""
        written = (
            self._new_term(labels, self.ct)
            if delivery.mode is not Delivery.INTO
            else (self.target.term if self.target.term is not None else self._own_term())
        )
        label = _outermost(written)
        if label < 0:
            return None
        moved = (
            _bytes_moved(a)
            + _bytes_moved(b)
            + math.prod(self.sizes[x] for x in labels) * self.ct.itemsize
        )
        threads = self.options.split_threads(moved, self.sizes[label])
        return Split(label=label, threads=threads) if threads > 1 else None

    def _matmul(
        self, ra: int, a: Term, rb: int, b: Term, g: Groups, keep: frozenset[int], final: bool
    ) -> tuple[int, Term]:
        pick, swapped = self.recorder.decide("product", lambda: self._layout(a, b, g, final))
        if swapped:
            (ra, a), (rb, b), g = (rb, b), (ra, a), g.swapped()
        bt = self._preferred(g.batch, final, a.labels)
        note_a = note_b = "viewed"
        if pick.copy_a:
            ra, a = self._copy(ra, a, bt + pick.left_order, pick.reason_a)
            note_a = f"copied in the previous step ({pick.reason_a})"
        if pick.copy_b:
            rb, b = self._copy(rb, b, bt + pick.right_order, pick.reason_b)
            note_b = f"copied in the previous step ({pick.reason_b})"
        geo = matmul_geometry(pick, bt, a.labels, b.labels, self.sizes)
        shape = tuple(self.sizes[x] for x in geo.labels)
        way = pick.out
        if way.own and geo.labels == self.distinct:
            way = Out(mode=Delivery.RETURN)  # a new buffer in the output's order is the output
        delivery = self._delivery(
            way, geo.labels, shape, "partial products" if pick.loop_k else "intermediate"
        )
        groups = Groups(
            batch=bt,
            contracted=pick.k + pick.loop_k,
            left_free=pick.m + pick.loop_m,
            right_free=pick.n + pick.loop_n,
            left_only=g.left_only,
            right_only=g.right_only,
        )
        dst = self._add(
            ContractStep(
                dst=self.new_reg(),
                left=OperandView(register=ra, labels=a.labels, shape=a.shape, note=note_a),
                right=OperandView(register=rb, labels=b.labels, shape=b.shape, note=note_b),
                geometry=geo,
                groups=groups,
                looped=pick.loop_m + pick.loop_n + pick.loop_k,
                shape=shape,
                dtype=self.ct,
                delivery=delivery,
            ),
            geo.labels,
        )
        result = self._new_term(geo.labels, self.ct)
        if pick.loop_k:  # the partial products over the looped contracted labels are summed now
            return self._unary(dst, result, keep, final)
        return dst, result

    def _layout(self, a: Term, b: Term, g: Groups, final: bool) -> tuple[Choice, bool]:
        """The cheapest layout of ``a @ b``, and whether it runs as ``b @ a`` instead."""
        ways = self._final_ways() if final else [Out(mode=Delivery.NEW)]
        pick = self._choose(a, b, g, ways, final)
        free = [way for way in ways if way.term is None]
        if free and self.ct in BLAS_TYPES:
            # the product may also run as b @ a (its result viewed transposed); BLAS is
            # measurably faster one way round for some shapes and strides
            alt = self._choose(b, a, g.swapped(), free, final)
            alt_cost = alt.cost + self._later_copy(alt, g.batch, final)
            if alt_cost < 0.97 * (pick.cost + self._later_copy(pick, g.batch, final)):
                return alt, True
        return pick, False

    def _later_copy(self, pick: Choice, batch: tuple[int, ...], final: bool) -> float:
        """What an intermediate's layout costs a later step: a label that is a batch label
        there (an output label of an operand still to come) on its unit-stride axis leaves
        no matrix BLAS takes, and the intermediate is copied (a bilinear form
        ``bi,ioj,bj->bo``: ``ojb`` from the faster way round of the first product, then a
        copy to ``boj``).  A result is returned with the output's last label on that axis
        unless the other way saves more than a copy: the caller's next product would pay it
        (torch's step-by-step products and the backward einsums are such callers)."""
        labels = batch + pick.loop_m + pick.loop_n + pick.loop_k + pick.m + pick.n
        if len(labels) < 2 or pick.out.term is not None:
            return 0.0  # (written into a given array: its layout is that array's)
        if final:
            if not self.distinct or labels[-1] == self.distinct[-1]:
                return 0.0  # (a scalar result: no later copy)
        elif labels[-1] not in self.shared_out:
            return 0.0
        elements = math.prod(self.sizes[lab] for lab in labels)
        return self.options.copy_ns_per_byte * as_float(elements * self.ct.itemsize)

    def _choose(self, a: Term, b: Term, g: Groups, ways: list[Out], final: bool) -> Choice:
        return choose(
            a,
            b,
            g,
            ways,
            ct=self.ct,
            sizes=self.sizes,
            pref_m=self._preferred(g.left_free, final, a.labels),
            pref_n=self._preferred(g.right_free, final, b.labels),
            names=self.spec.label_string,
            options=self.options,
        )


def _bytes_moved(term: Term) -> int:
    """The memory traffic of reading ``term`` once (:func:`bytes_moved`).

    >>> _bytes_moved(Term.of((0, 1), (4, 8), (64, 8), np.dtype(float)))   # dense: 32 x 8 B
    256
    >>> _bytes_moved(Term.of((0,), (4,), (1032,), np.dtype(float)))       # a diagonal: 4 lines
    256
    """
    return bytes_moved(term.shape, term.strides, term.dtype.itemsize)


CACHE_LINE = 64
"""The bytes a strided element costs to read (:func:`bytes_moved`)."""


def bytes_moved(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    """The memory traffic of reading a view of ``shape`` and byte ``strides`` once: its
    distinct elements (stride-0 axes re-read the same ones), each costing its smallest
    stride up to a whole cache line (a diagonal, a strided view read lines it skips).  The
    planner splits a step across threads by it; the broadcast lane asks it the same.

    >>> bytes_moved((3, 4), (0, 8), 8)         # broadcast rows: one row read
    32
    >>> bytes_moved((100,), (16,), 8)          # every other element: 16 B each
    1600
    >>> bytes_moved((100,), (1024,), 8)        # one in 128: a line each
    6400
    """
    count, step = 1, 0
    if 0 in shape:
        return 0
    for dim, stride in zip(shape, strides):
        if stride != 0 and dim > 1:
            count *= dim
            step = abs(stride) if step == 0 else min(step, abs(stride))
    return count * max(itemsize, min(CACHE_LINE, step))


def reduction_bytes(
    shape: Sequence[int], strides: Sequence[int], itemsize: int, result_bytes: int
) -> int:
    """The bytes a reduction moves: it reads its (diagonal) view of ``shape`` and byte
    ``strides`` once (:func:`bytes_moved`) and writes its result; the planner splits it
    across threads, or runs it on BLAS, only from ``split_min_bytes`` of these on (the
    one-operand lane asks the same).

    >>> reduction_bytes((4, 8), (64, 8), 8, 4 * 8)      # a row sum of a dense 4 x 8
    288
    """
    return bytes_moved(shape, strides, itemsize) + result_bytes


def _outermost(term: Term) -> int:
    """The label of ``term``'s largest stride among axes longer than 1 (-1: none).

    >>> _outermost(Term.of((5, 7), (3, 4), (8, 24), np.dtype(float)))    # Fortran order
    7
    """
    found = [
        (abs(st), lab) for lab, dim, st in zip(term.labels, term.shape, term.strides) if dim > 1
    ]
    return max(found)[1] if found else -1


def _blas_reduction(
    term: Term, kept: tuple[int, ...], dtype: np.dtype[Any], options: PlannerOptions
) -> tuple[Kernel, tuple[int, ...]] | None:
    """The matrix-vector product a reduction of ``term`` to ``kept`` is, if any, and the
    axes of ``term`` in the matrix's order (the kept ones, then the summed ones, each group
    outermost first): a float32 or float64 operand (a complex ``inf * (1+0j)`` would give
    NaN), no cast, the kept axes folding into one and the summed ones into another, into a
    C-ordered matrix BLAS takes as is: the summed axes inside (``MATVEC``, a row sum), or
    the kept ones inside, ``matvec_min_columns`` elements or more (``VECMAT``, a column
    sum); at most ``ones_max`` summed elements (of the shape class's sizes, where the plan
    is its class's).

    >>> f64 = np.dtype(float)
    >>> cube = Term.of((0, 1, 2), (4, 5, 6), (240, 48, 8), f64)
    >>> wide = PlannerOptions(matvec_min_columns=1)
    >>> [_blas_reduction(cube, kept, f64, wide) for kept in ((0,), (1, 2), (1,))]
    [(<Kernel.MATVEC: 'matvec'>, (0, 1, 2)), (<Kernel.VECMAT: 'vecmat'>, (1, 2, 0)), None]
    """
    if term.dtype != dtype or dtype not in _BLAS_SUM_TYPES:
        return None
    summed = tuple(lab for lab in term.labels if lab not in kept)
    rows, columns = fold_group(kept, [term]), fold_group(summed, [term])
    width, length = math.prod(map(term.size_of, kept)), math.prod(map(term.size_of, summed))
    if rows is None or columns is None or width <= 1 or not 1 < length <= options.ones_max:
        return None
    row_stride, column_stride = fold_stride(rows, term), fold_stride(columns, term)
    item = dtype.itemsize
    order = tuple(term.labels.index(lab) for lab in rows + columns)
    if column_stride == item and blas_ready(width, length, row_stride, column_stride, item):
        return Kernel.MATVEC, order  # the summed axes inside: a row sum
    wide = width >= options.matvec_min_columns
    if row_stride == item and wide and blas_ready(length, width, column_stride, row_stride, item):
        return Kernel.VECMAT, order
    return None


_BLAS_SUM_TYPES = frozenset(np.dtype(t) for t in ("float32", "float64"))


DEFER_MIN_COMBOS = 1 << 16  # a reduction of fewer elements is one pass (two cost more, and the
#   one-operand lane's test of each new layout, ~4 us, would weigh on calls of ~10 us)
DEFER_GAIN = 0.5  # ... and of more, two passes where estimated at most this share of one
DEFER_MIN_RUN = 128  # innermost runs this long: one call per run costs < DEFER_GAIN's margin
DEFER_PLAIN_RUN = 9  # ... or, at three runs of one kind or fewer (NumPy's plain loop, 3 ns a
#   call against the general iterator's 20), this long
DEFER_MAX_BYTES = 32 << 10  # a first pass's result past this leaves the core's caches: its
#   every element is read and written once per summed index (measured: a 256 KiB one made
#   two passes 1.4x one, where the count of calls alone said 0.5x)


def deferred_sums(term: Term, keep: frozenset[int], options: PlannerOptions) -> frozenset[int]:
    """The summed labels a reduction of ``term`` keeps through a first pass and sums in a
    second, over that pass's result (empty: one pass).  NumPy's loop calls its kernel once
    per innermost run of one kind, kept or summed, so small summed axes inside a kept one
    (memory order) cost a call per few elements: the marginal of qubits 0 and 16 of 18,
    ``abcdefghijklmnopqr->aq``, is 131,072 calls of 2 elements, 2.6 ms, where keeping ``r``
    first leaves runs of 4 in NumPy's plain three-axis loop (0.2 ms, and a 64-byte second
    pass).  The candidates keep every summed label inside the first, second or third kept
    run from the inside, where the first pass's result stays within :data:`DEFER_MAX_BYTES`;
    each is priced as NumPy runs it (:func:`.loopcalls.loop_calls`), and the cheapest is
    taken where it costs at most :data:`DEFER_GAIN` of one pass (the estimate is good to
    2-3x either way).

    >>> qubits = Term.row_major(range(18), (2,) * 18, np.dtype(float))
    >>> sorted(deferred_sums(qubits, frozenset({0, 16}), default_options()))
    [17]
    >>> sorted(deferred_sums(qubits, frozenset({0, 17}), default_options()))  # runs of 2^16
    []
    """
    if math.isinf(options.loop_ns) or term.size < DEFER_MIN_COMBOS or len(term.labels) > 52:
        return frozenset()
    candidates = inner_sums(term.labels, term.shape, term.strides, keep)
    if not candidates:
        return frozenset()
    kept = _memory_order(term, tuple(lab for lab in term.labels if lab in keep))
    best, chosen = DEFER_GAIN * _pass_ns(term, kept, options), frozenset[int]()
    for later in candidates:
        mid = _memory_order(term, tuple(lab for lab in term.labels if lab in keep | later))
        second = Term.row_major(mid, tuple(term.size_of(lab) for lab in mid), term.dtype)
        if second.size * term.dtype.itemsize > DEFER_MAX_BYTES:
            continue
        ns = _pass_ns(term, mid, options) + _pass_ns(second, kept, options) + options.step_ns
        if ns < best:
            best, chosen = ns, later
    return chosen


def inner_sums(
    labels: Sequence[int], shape: Sequence[int], strides: Sequence[int], keep: Collection[int]
) -> list[frozenset[int]]:
    """Per kept run from the inside (up to three): the summed labels inside it, where a
    summed label outside remains for the first pass.  None where the innermost axes of
    one kind hold :data:`DEFER_MIN_RUN` elements or more (:data:`DEFER_PLAIN_RUN` where the
    axes form three runs of one kind or fewer, which NumPy's plain loop takes): NumPy's
    calls, one per run at most, then cost too little for a second pass to pay.  (The lane
    asks this first: it costs a sort, the pricing tens of microseconds.)

    >>> inner_sums(range(4), (2, 2, 2, 2), (64, 32, 16, 8), {0, 2})  # summed: 1 and 3
    [frozenset({3})]
    """
    axes = [(abs(st), lab, n) for lab, n, st in zip(labels, shape, strides) if n > 1]
    if not axes or min(axes)[2] >= DEFER_MIN_RUN:
        return []
    axes.sort()
    inner_first = [lab for _, lab, _ in axes]
    kinds = [lab in keep for lab in inner_first]
    runs = 1 + sum(a != b for a, b in itertools.pairwise(kinds))
    run = 1
    for (_, _, n), kind in zip(axes, kinds):
        if kind != kinds[0]:
            break
        run *= n
    if run >= (DEFER_MIN_RUN if runs > 3 else DEFER_PLAIN_RUN):
        return []
    found: list[frozenset[int]] = []
    summed: list[int] = []
    for k, lab in enumerate(inner_first):
        if lab not in keep:
            summed.append(lab)
        elif (
            summed
            and (not found or found[-1] != frozenset(summed))
            and any(x not in keep for x in inner_first[k + 1 :])
        ):
            found.append(frozenset(summed))
    return found[:3]


def _pass_ns(term: Term, kept: tuple[int, ...], options: PlannerOptions) -> float:
    """One pass of NumPy's loop summing ``term`` to ``kept`` (in that order): its elements,
    its inner calls and the bytes of its result."""
    sizes = dict(zip(term.labels, term.shape))
    walk = loop_calls((term.labels,), (term.strides,), kept, sizes)
    result = math.prod(sizes[lab] for lab in kept) * term.dtype.itemsize
    return (
        options.loop_ns * as_float(term.size)
        + _walk_ns(walk, options)
        + options.byte_ns * as_float(result)
    )


def _memory_order(term: Term, kept: tuple[int, ...]) -> tuple[int, ...]:
    """The kept labels as a reduction's buffer holds them: outermost in ``term`` first."""
    return tuple(sorted(kept, key=lambda lab: -abs(term.stride(lab))))


def _reduce_kernel(term: Term) -> Kernel:
    """NumPy's sum-of-products loop takes at most 52 axes; beyond, a ufunc reduction."""
    return Kernel.LOOP if len(term.labels) <= 52 else Kernel.UFUNC


def _flop_count(labels: Any, inner: bool, terms: int, sizes: Sequence[int]) -> int:
    """opt_einsum's FLOP convention: size of all labels times max(1, terms - 1) (+1 if summed)."""
    size: int = math.prod(sizes[x] for x in set(labels))
    return size * (max(1, terms - 1) + (1 if inner else 0))


def _frees(steps: Sequence[Step], n_inputs: int, result: int) -> tuple[tuple[int, ...], ...]:
    """Per step, the registers (not operands, not the result) whose last reader it is."""
    last: dict[int, int] = {}
    for k, step in enumerate(steps):
        for reg in _reads(step):
            last[reg] = k
    frees: list[list[int]] = [[] for _ in steps]
    for reg, k in last.items():
        if reg >= n_inputs and reg != result:
            frees[k].append(reg)
    return tuple(tuple(f) for f in frees)


def _reads(step: Step) -> tuple[int, ...]:
    match step:
        case ContractStep() | BatchStep():
            return (step.left.register, step.right.register)
        case FusedStep():
            return step.operands
        case ViewStep() | ReduceStep() | CopyStep():
            return (step.src,)
        case _:
            assert_never(step)


def check_memory(plan: Plan, limit: int) -> None:
    """Raise :class:`EinsumError` naming the step when one allocation exceeds ``limit``."""
    for name, alloc in plan.allocations():
        if alloc.nbytes > limit:
            raise EinsumError(
                f"einsum {quoted(plan.spec.text)}: {name} would allocate {alloc.nbytes:,} "
                f"bytes for the {alloc.what} of shape {alloc.shape} ({alloc.dtype}), more than "
                f"the memory limit of {limit:,} bytes"
            )
