"""The adapter: the ONE module that reads the NumPy planner's records.

The torch backend runs the very plan the NumPy backend runs (:mod:`..numpy.plan`); this
module translates its :class:`~..numpy.steps.Plan` into the torch backend's own immutable
records, one :data:`TorchOp` per plan step (so step numbers match the plan report), and
nothing else in this folder touches a NumPy step's fields.  When the NumPy records change,
this file is the one to update.

* :class:`ViewOp`: an operand viewed through one ``as_strided`` (size-1 broadcast ``...``
  axes dropped, repeated labels as one axis whose stride is the sum);
* :class:`ReduceOp`: labels summed (``torch.sum``; ``torch.any`` for bool);
* :class:`CopyOp`: a copy (and cast) into a new C-ordered tensor or into the output;
* :class:`MatmulOp`: one batched matrix product over folded views (``torch.mm``/``bmm``);
* :class:`MultiplyOp`: a product without contracted labels (a broadcast ``torch.mul``);
* :class:`FusedOp`: a whole tiny einsum as one broadcast product and one sum (the torch
  backend plans without fusing; the record exists so any plan translates).

>>> import numpy as np
>>> from ...spec.equation import parse_equation
>>> from ..numpy.options import PlannerOptions
>>> from ..numpy.plan import build_plan
>>> spec = parse_equation("ii,ij->j", (3, 3), (3, 4))
>>> f8, never_fused = np.dtype(np.float64), PlannerOptions(loop_ns=float("inf"))
>>> program = translate(build_plan(spec, (f8, f8), ((24, 8), (32, 8)), options=never_fused))
>>> [type(op).__name__ for op in program.steps]
['ViewOp', 'MatmulOp']
>>> program.steps[0].strides          # the diagonal: strides 3 + 1 elements
(4,)
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ...._compat import assert_never
from ...spec.equation import EinsumSpec
from ..numpy.delivery import Delivery, DeliveryPlan, OutputCreation
from ..numpy.pairs import fold_geometry
from ..numpy.peak import plan_peak
from ..numpy.plan import check_memory
from ..numpy.steps import (
    BatchStep,
    ContractStep,
    CopyStep,
    FusedStep,
    Plan,
    ReduceStep,
    Step,
    ViewStep,
)

__all__ = [
    "CopyOp",
    "Destination",
    "Fold",
    "FusedOp",
    "MatmulOp",
    "MultiplyOp",
    "ReduceOp",
    "StepOutput",
    "TorchOp",
    "TorchProgram",
    "ViewOp",
    "Write",
    "check_memory",
    "largest_bytes",
    "peak_bytes",
    "sized_bytes",
    "translate",
    "translate_sized",
]

Strides = Sequence[Sequence[int]]
"""Element strides of each operand."""


class Write(enum.Enum):
    """How an op delivers its result."""

    NEW = "new"  # into a new C-ordered tensor of the register's shape
    RETURN = "return"  # a new tensor that is the einsum result
    INTO = "into"  # straight into the destination's write view
    TEMP = "temp"  # a new tensor, then copied (cast) into the destination


_WRITES = {
    Delivery.NEW: Write.NEW,
    Delivery.RETURN: Write.RETURN,
    Delivery.INTO: Write.INTO,
    Delivery.TEMP: Write.TEMP,
}
_CREATES: dict[OutputCreation, Literal["none", "out", "zeros", "empty"]] = {
    OutputCreation.NONE: "none",
    OutputCreation.OUT: "out",
    OutputCreation.ZEROS: "zeros",
    OutputCreation.EMPTY: "empty",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class StepOutput:
    """Where an op's result goes: register ``dst`` (NEW/RETURN) or the destination, whose
    axes ``dest_perm`` puts in the op's label order (INTO/TEMP); ``rounded_to`` (TEMP): the
    dtype the values pass through first (:class:`..numpy.delivery.DeliveryPlan`'s)."""

    write: Write
    dst: int
    dest_perm: tuple[int, ...]
    rounded_to: np.dtype[Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Fold:
    """An operand's matrix view: ``permute(perm)`` then ``reshape(shape)`` (planned as a
    view: the label groups fold in the register's strides)."""

    perm: tuple[int, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewOp:
    """Operand ``src`` through ``as_strided(shape, strides)`` (elements; same offset)."""

    src: int
    dst: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReduceOp:
    """Sum ``axes`` of register ``src`` in ``dtype``; the kept axes come out in source
    order, which ``kept_perm`` gives in the C-ordered register of ``shape`` (NEW)."""

    src: int
    axes: tuple[int, ...]
    kept_perm: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    to: StepOutput


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyOp:
    """Register ``src`` permuted by ``perm``, copied (cast to ``dtype``)."""

    src: int
    perm: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    to: StepOutput


@dataclass(frozen=True, slots=True, kw_only=True)
class MatmulOp:
    """``(B.., M, K) @ (B.., K, N) -> out_shape`` over the folded views; the register holds
    it unfolded to ``shape``."""

    left: int
    right: int
    left_view: Fold
    right_view: Fold
    out_shape: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    to: StepOutput


@dataclass(frozen=True, slots=True, kw_only=True)
class MultiplyOp:
    """``left * right`` of views that broadcast to ``shape``, in ``dtype``."""

    left: int
    right: int
    left_view: Fold
    right_view: Fold
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    to: StepOutput


@dataclass(frozen=True, slots=True, kw_only=True)
class FusedOp:
    """Every operand through ``as_strided`` onto all labels (``views``: shape, strides;
    size 1 where it lacks a label), one broadcast product, ``summed`` dims summed, the rest
    permuted by ``out_perm`` to the output's distinct labels."""

    operands: tuple[int, ...]
    views: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    summed: tuple[int, ...]
    out_perm: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    to: StepOutput


TorchOp = ViewOp | ReduceOp | CopyOp | MatmulOp | MultiplyOp | FusedOp


@dataclass(frozen=True, slots=True, kw_only=True)
class Destination:
    """The result: ``out=``, a tensor made first (``zeros`` when output labels repeat:
    ``expand`` lists the axes of each distinct label, written through their summed-stride
    view), or register ``result`` viewed through ``final_perm`` (``none``)."""

    create: Literal["none", "out", "zeros", "empty"]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    expand: tuple[tuple[int, ...], ...] | None
    result: int
    final_perm: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TorchProgram:
    """A plan as torch ops: ``steps`` over ``n_registers`` registers (the first
    ``n_inputs`` hold the operands), the plan's name of each step (``kinds``, as its
    report says), the registers each step frees, and the destination."""

    steps: tuple[TorchOp, ...]
    kinds: tuple[str, ...]
    frees: tuple[tuple[int, ...], ...]
    n_inputs: int
    n_registers: int
    output: Destination


def translate(plan: Plan) -> TorchProgram:
    """The torch records of ``plan`` (one op per step)."""
    strides = [_element_strides(plan, op) for op in range(len(plan.spec.inputs))]
    return _program(plan, [_op(step, plan, strides) for step in plan.steps], plan.output.shape)


def translate_sized(plan: Plan, spec: EinsumSpec, strides: Strides) -> TorchProgram | None:
    """The records of ``plan``'s decisions for another shape of its shape class: ``spec``'s
    sizes and the operands' element ``strides`` (equal to the translation of the plan a
    fresh planner makes for that shape: the tests hold them equal), or None where a step's
    records need more than the label sizes (a fused step).
    Every shape a record holds is a product of label sizes; a view's strides are the
    operand's own.

    >>> from ...spec.equation import parse_equation
    >>> from ..numpy.plan import build_plan
    >>> f4 = np.dtype(np.float32)
    >>> def plan(n):
    ...     spec = parse_equation("bij,bjk->bik", (4, n, 16), (4, 16, 8))
    ...     return spec, build_plan(spec, (f4, f4), ((n * 64, 64, 4), (512, 32, 4)))
    >>> (spec, new), (_, other) = plan(37), plan(40)          # one class: the same decisions
    >>> translate_sized(other, spec, ((37 * 16, 16, 1), (128, 8, 1))) == translate(new)
    True
    """
    ops = []
    for step in plan.steps:
        op = _sized_op(step, spec, strides)
        if op is None:
            return None
        ops.append(op)
    return _program(plan, ops, spec.output_shape)


def _program(plan: Plan, ops: list[TorchOp], output_shape: tuple[int, ...]) -> TorchProgram:
    output = plan.output
    destination = Destination(
        create=_CREATES[output.create],
        shape=output_shape,
        dtype=output.dtype,
        expand=output.expand if output.expands else None,
        result=output.result,
        final_perm=output.final_perm,
    )
    return TorchProgram(
        steps=tuple(ops),
        kinds=tuple(step.kind for step in plan.steps),
        frees=plan.frees,
        n_inputs=len(plan.spec.inputs),
        n_registers=plan.n_registers,
        output=destination,
    )


def largest_bytes(plan: Plan) -> int:
    """The bytes of the plan's largest single allocation."""
    return plan.largest_bytes


def peak_bytes(plan: Plan) -> int:
    """The most bytes the plan's allocations hold at once (what ``memory_limit`` bounds)."""
    return plan_peak(plan)


def sized_bytes(plan: Plan, sizes: Sequence[int]) -> tuple[int, int]:
    """The largest single allocation and the peak of ``plan``'s steps at label ``sizes``
    (another shape of its class)."""
    allocs = [alloc for _, alloc in plan.allocations()]
    largest = max((alloc.nbytes_at(sizes) for alloc in allocs), default=0)
    return largest, plan_peak(plan, sizes)


def _delivery(delivery: DeliveryPlan, dst: int) -> StepOutput:
    return StepOutput(
        write=_WRITES[delivery.mode],
        dst=dst,
        dest_perm=delivery.dest_perm,
        rounded_to=delivery.rounded_to,
    )


def _op(step: Step, plan: Plan, strides: Strides) -> TorchOp:
    """A step's record at the plan's own sizes: as another shape's (:func:`_sized_op`), but
    a fused step keeps its operands' views."""
    sized = _sized_op(step, plan.spec, strides)
    if sized is not None:
        return sized
    match step:
        case FusedStep():
            return _fused(step, plan, strides)
        case ViewStep() | ReduceStep() | CopyStep() | BatchStep() | ContractStep():
            raise AssertionError(f"a {step.kind} step's record is its sizes'")
        case _:
            assert_never(step)


def _element_strides(plan: Plan, operand: int) -> list[int]:
    itemsize = plan.dtypes[operand].itemsize
    return [s // itemsize for s in plan.strides[operand]]


def _fused(step: FusedStep, plan: Plan, strides: Strides) -> FusedOp:
    sizes = plan.spec.sizes
    shapes = plan.spec.shapes()
    every = tuple(
        dict.fromkeys([lab for term in step.labels for lab in term] + list(step.out_labels))
    )
    views = []
    for reg, term in zip(step.operands, step.labels):
        dims = dict.fromkeys(every, 1)
        steps = dict.fromkeys(every, 0)
        for ax, lab in enumerate(term):
            if shapes[reg][ax] == sizes[lab]:  # else a size-1 '...' axis that broadcasts
                dims[lab] = sizes[lab]
                steps[lab] += strides[reg][ax]
        views.append((tuple(dims[lab] for lab in every), tuple(steps[lab] for lab in every)))
    kept = [lab for lab in every if lab in step.out_labels]
    return FusedOp(
        operands=step.operands,
        views=tuple(views),
        summed=tuple(k for k, lab in enumerate(every) if lab not in step.out_labels),
        out_perm=tuple(kept.index(lab) for lab in step.out_labels),
        shape=step.shape,
        dtype=step.dtype,
        to=_delivery(step.delivery, step.dst),
    )


# -- another shape of the plan's class -------------------------------------------------------


def _sized_op(step: Step, spec: EinsumSpec, strides: Strides) -> TorchOp | None:
    sizes = spec.sizes
    match step:
        case ViewStep():
            return _sized_view(step, spec, strides)
        case ReduceStep():
            return ReduceOp(
                src=step.src,
                axes=step.axes,
                kept_perm=tuple(step.labels.index(lab) for lab in step.kept),
                shape=_dims(sizes, step.labels),
                dtype=step.dtype,
                to=_delivery(step.delivery, step.dst),
            )
        case CopyStep():
            return CopyOp(
                src=step.src,
                perm=step.perm,
                shape=_dims(sizes, step.labels),
                dtype=step.dtype,
                to=_delivery(step.delivery, step.dst),
            )
        case ContractStep():
            return _matmul(step, sizes)
        case BatchStep():
            return _multiply(step, sizes)
        case FusedStep():
            return None
        case _:
            assert_never(step)


def _dims(sizes: Sequence[int], labels: Sequence[int]) -> tuple[int, ...]:
    return tuple(sizes[lab] for lab in labels)


def _sized_view(step: ViewStep, spec: EinsumSpec, strides: Strides) -> ViewOp:
    """The planner's squeeze-then-diagonals on the operand's own shape and strides."""
    dims = list(spec.shapes()[step.operand])
    steps = list(strides[step.operand])
    for ax in reversed(step.squeeze):
        del dims[ax], steps[ax]
    for a, b in step.diagonals:
        size, stride = dims[a], steps[a] + steps[b]
        for ax in (b, a):
            del dims[ax], steps[ax]
        dims.append(size)
        steps.append(stride)
    return ViewOp(src=step.src, dst=step.dst, shape=tuple(dims), strides=tuple(steps))


def _matmul(step: ContractStep, sizes: Sequence[int]) -> MatmulOp:
    """``(batch, loops..., M, K) @ (batch, loops..., K, N)`` at label ``sizes``: the
    planner's geometry (:func:`..numpy.pairs.fold_geometry`) of the labels its folds hold,
    each operand's in its fold's order (the batch labels, its looped ones, then the folded
    free (M or N) and contracted (K) ones); the result register holds batch + loops + M + N."""
    g, geo, looped = step.groups, step.geometry, step.looped
    nb = len(g.batch)
    left = tuple(step.left.labels[ax] for ax in geo.left.perm)
    right = tuple(step.right.labels[ax] for ax in geo.right.perm)[nb:]

    def kind(labels: Sequence[int], group: Sequence[int], loops: bool) -> tuple[int, ...]:
        return tuple(x for x in labels if x in group and (x in looped) == loops)

    free, inner = (left[nb:], g.left_free), (left[nb:], g.contracted)
    loops = (kind(*free, True), kind(*inner, True), kind(right, g.right_free, True))
    folded = (kind(*free, False), kind(*inner, False), kind(right, g.right_free, False))
    sized = fold_geometry(left[:nb], loops, folded, step.left.labels, step.right.labels, sizes)
    return MatmulOp(
        left=step.left.register,
        right=step.right.register,
        left_view=Fold(perm=sized.left.perm, shape=sized.left.shape),
        right_view=Fold(perm=sized.right.perm, shape=sized.right.shape),
        out_shape=sized.out_shape,
        shape=_dims(sizes, sized.labels),
        dtype=step.dtype,
        to=_delivery(step.delivery, step.dst),
    )


def _multiply(step: BatchStep, sizes: Sequence[int]) -> MultiplyOp:
    """Views that line up with the result's batch + left-free + right-free labels (size 1
    where an operand lacks them), as the planner's batch step makes them."""
    g = step.groups
    return MultiplyOp(
        left=step.left.register,
        right=step.right.register,
        left_view=Fold(
            perm=step.geometry.left.perm,
            shape=_dims(sizes, g.batch + g.left_free) + (1,) * len(g.right_free),
        ),
        right_view=Fold(
            perm=step.geometry.right.perm,
            shape=_dims(sizes, g.batch) + (1,) * len(g.left_free) + _dims(sizes, g.right_free),
        ),
        shape=_dims(sizes, step.geometry.labels),
        dtype=step.dtype,
        to=_delivery(step.delivery, step.dst),
    )
