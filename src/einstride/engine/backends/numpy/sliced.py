"""A plan run in slices, one after another, within a memory limit.

A :class:`~..spec.slicing.Slicing` cuts some labels into chunks.  Each slice is the same
einsum on views of the operands (the chunks of the sliced labels), planned along the same
path for the chunk shapes, and always written into a destination it is given (``out=`` of
the per-slice plan, so a slice allocates only its intermediates):

* only output labels sliced: each slice writes its own part of the result (a view);
* a summed label sliced too: per part of the result, the first slice writes into an
  accumulator and every other one into a *partial* buffer that is then added to it.  The
  accumulator is the result's part itself when the result has the compute dtype, else a
  buffer in the compute dtype (float32 for float16 results), cast into the result at the
  end of the part.

The result, the accumulator and the partial buffer are allocated once, before the first
slice, and reused by every slice.  Slices of different chunk widths (a narrower last chunk)
have plans of their own, all made before anything runs, so the peak is known in advance:
result + accumulator + partial buffer + the largest peak of one slice's plan.

>>> import numpy as np
>>> from ...spec.equation import parse_equation
>>> from ...spec.slicing import make_slicing, path_model
>>> from .plan import build_plan
>>> a, b = np.arange(12.0).reshape(3, 4), np.arange(20.0).reshape(4, 5)
>>> spec = parse_equation("ij,jk->ik", a.shape, b.shape)
>>> base = build_plan(spec, (a.dtype, b.dtype), (a.strides, b.strides))
>>> sliced = build_sliced(base, make_slicing(path_model(spec, base.path), (2, 3, 5)), None)
>>> sliced.slicing.describe(spec.names), sliced.accumulate
('i: 2 chunks of 2 (the last 1), j: 2 chunks of 3 (the last 1)', 'dest')
>>> np.array_equal(compile_sliced(sliced)((a, b), None), a @ b)
True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ...spec.equation import EinsumSpec, bind
from ...spec.slicing import Slicing
from .execute import Program, compile_plan
from .fold import contiguous_strides
from .options import PlannerOptions
from .peak import plan_peak
from .plan import build_plan
from .report import format_plan
from .steps import Plan

__all__ = ["Accumulate", "Piece", "SlicedPlan", "build_sliced", "compile_sliced", "format_sliced"]

Array = np.ndarray[Any, Any]
Target = Literal["dest", "buffer"]
Accumulate = Literal["none", "dest", "buffer"]
"""How slices of a summed label add up: not at all (only output labels are sliced), in the
result's part itself, or in an accumulator buffer of the compute dtype."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Piece:
    """The plan of the slices whose sliced labels have chunk ``widths`` (in
    :attr:`Slicing.labels` order), writing into the result (``dest``) or a buffer."""

    widths: tuple[int, ...]
    target: Target
    plan: Plan
    run: Program
    peak: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SlicedPlan:
    """The unsliced ``base`` plan, the ``slicing`` and a plan per kind of slice."""

    base: Plan
    slicing: Slicing
    accumulate: Accumulate
    pieces: tuple[Piece, ...]
    result_bytes: int
    accumulator_bytes: int
    partial_bytes: int

    @property
    def spec(self) -> EinsumSpec:
        return self.base.spec

    @property
    def slice_peak(self) -> int:
        return max(piece.peak for piece in self.pieces)

    @property
    def peak(self) -> int:
        """Every byte alive at the worst moment: the result, the accumulator, the partial
        buffer and one slice's peak."""
        return self.result_bytes + self.accumulator_bytes + self.partial_bytes + self.slice_peak

    @property
    def first(self) -> Piece:
        """The plan of the first slice (full chunk widths)."""
        return self.pieces[0]


def build_sliced(
    base: Plan,
    slicing: Slicing,
    out_dtype: np.dtype[Any] | None,
    options: PlannerOptions | None = None,
) -> SlicedPlan:
    """Plan every kind of slice of ``base`` (made for ``out=`` of ``out_dtype`` and
    ``base.out_strides`` when ``out_dtype`` is given), with ``options`` (default: the
    default options)."""
    spec, rt, ct = base.spec, base.result_dtype, base.compute_dtype
    dest_dtype = rt if out_dtype is None else out_dtype
    summed = [x for x in slicing.labels if x not in slicing.output]
    accumulate: Accumulate = "none" if not summed else "dest" if dest_dtype == ct else "buffer"
    dest_strides = (
        base.out_strides
        if base.out_strides is not None
        else contiguous_strides(spec.output_shape, rt.itemsize)
    )
    targets = {
        "dest": (dest_strides, dest_dtype),
        "buffer": (contiguous_strides(buffer_shape(slicing, spec), ct.itemsize), ct),
    }
    pieces = []
    for widths, target in _kinds(slicing, accumulate):
        # a slice that is summed on computes in the compute dtype: only the total rounds to
        # a small-float result (a review: each chunk was rounded to bfloat16 before it was
        # added); one that writes its part of the result whole rounds as the plan does
        whole = target == "dest" and accumulate == "none"
        plan = build_plan(
            bind(spec.equation, _chunk_shapes(spec, slicing, widths)),
            base.dtypes,
            base.strides,
            out=targets[target],
            dtype=rt if whole else ct,
            optimize=base.path,
            options=options,
        )
        pieces.append(
            Piece(
                widths=widths,
                target=target,
                plan=plan,
                run=compile_plan(plan),
                peak=plan_peak(plan),
            )
        )
    buffer_bytes = math.prod(buffer_shape(slicing, spec)) * ct.itemsize
    return SlicedPlan(
        base=base,
        slicing=slicing,
        accumulate=accumulate,
        pieces=tuple(pieces),
        result_bytes=0 if out_dtype is not None else math.prod(spec.output_shape) * rt.itemsize,
        accumulator_bytes=buffer_bytes if accumulate == "buffer" else 0,
        partial_bytes=buffer_bytes if summed else 0,
    )


def buffer_shape(slicing: Slicing, spec: EinsumSpec) -> tuple[int, ...]:
    """The shape of the accumulator and partial buffers: one part of the result."""
    return tuple(min(slicing.widths[x], spec.sizes[x]) for x in spec.output)


def _kinds(slicing: Slicing, accumulate: Accumulate) -> list[tuple[tuple[int, ...], Target]]:
    """Every (chunk widths, target) some slice has, full widths first."""
    widths = [slicing.widths_of(x) for x in slicing.labels]
    every = list(itertools.product(*widths))
    if accumulate == "none":
        return [(w, "dest") for w in every]
    if accumulate == "buffer":
        return [(w, "buffer") for w in every]
    firsts = [ws if x in slicing.output else ws[:1] for x, ws in zip(slicing.labels, widths)]
    return [(w, "dest") for w in itertools.product(*firsts)] + [(w, "buffer") for w in every]


def _chunk_shapes(
    spec: EinsumSpec, slicing: Slicing, widths: Sequence[int]
) -> list[tuple[int, ...]]:
    """The operand shapes of a slice (an axis broadcast from size 1 stays 1)."""
    width = dict(zip(slicing.labels, widths))
    return [
        tuple(
            dim if ax in stretch else width.get(label, dim)
            for ax, (label, dim) in enumerate(zip(term, shape))
        )
        for term, stretch, shape in zip(spec.inputs, spec.stretched, spec.shapes())
    ]


# -- running ---------------------------------------------------------------------------------


Bounds = Mapping[int, tuple[int, int]]
_ALL = slice(None)


def _index(labels: Sequence[int], bounds: Bounds) -> tuple[Any, ...]:
    """The chunks of ``bounds`` of an array with these labels (a view, even of rank 0)."""
    return (*(slice(*bounds[x]) if x in bounds else _ALL for x in labels), Ellipsis)


def _start(labels: Sequence[int], bounds: Bounds) -> tuple[Any, ...]:
    """The corner of a buffer that one part of the result fills."""
    return (
        *(slice(0, bounds[x][1] - bounds[x][0]) if x in bounds else _ALL for x in labels),
        Ellipsis,
    )


def compile_sliced(sliced: SlicedPlan) -> Program:
    """``run(operands, out) -> result``: every slice in turn (see the module doc)."""
    spec, slicing = sliced.spec, sliced.slicing
    runs = {(piece.widths, piece.target): piece.run for piece in sliced.pieces}
    outer = [x for x in slicing.labels if x in slicing.output]
    inner = [x for x in slicing.labels if x not in slicing.output]
    axes = [
        tuple(-1 if ax in stretch else x for ax, x in enumerate(term))
        for term, stretch in zip(spec.inputs, spec.stretched)
    ]
    shape, rt, ct = spec.output_shape, sliced.base.result_dtype, sliced.base.compute_dtype
    zeroed = len(set(spec.output)) != len(spec.output)  # the diagonal's outside stays 0
    rounds = rt != ct  # a small-float result: each part's total is rounded to it once
    add: Callable[..., Any] = np.logical_or if ct == np.bool_ else np.add
    chunk = buffer_shape(slicing, spec)
    outer_chunks = [slicing.chunks(x) for x in outer]
    inner_chunks = [slicing.chunks(x) for x in inner]

    def views(operands: Sequence[Array], bounds: Bounds) -> list[Array]:
        return [
            x if not any(lab in bounds for lab in labels) else x[_index(labels, bounds)]
            for x, labels in zip(operands, axes)
        ]

    labels = slicing.labels  # (a property: computed per slice it left ~22 B of cyclic
    # garbage a slice, 290 KB over a call of 12,800 slices past its limit: a review)

    def key(bounds: Bounds) -> tuple[int, ...]:
        return tuple([bounds[x][1] - bounds[x][0] for x in labels])

    def part(
        operands: Sequence[Array],
        bounds: dict[int, tuple[int, int]],
        view: Array,
        partial: Array,
        acc: Array | None,
    ) -> None:
        target = view if acc is None else acc[_start(spec.output, bounds)]
        for number, chunks in enumerate(itertools.product(*inner_chunks)):
            bounds.update(zip(inner, chunks))
            ops = views(operands, bounds)
            if number == 0:
                runs[key(bounds), "dest" if acc is None else "buffer"](ops, target)
                continue
            into = partial[_start(spec.output, bounds)]
            runs[key(bounds), "buffer"](ops, into)
            add(target, into, out=target)
        if rounds:  # the total, summed in the compute dtype, rounded once to dtype=
            np.copyto(view, target.astype(rt), casting="unsafe")
        elif acc is not None:
            np.copyto(view, target, casting="unsafe")

    def run(operands: Sequence[Array], out: Array | None) -> Any:
        dest = out if out is not None else (np.zeros if zeroed else np.empty)(shape, rt)
        if zeroed and out is not None:  # the slices write the diagonal only (a review:
            out.fill(0)  # out='s old values stayed off it)
        parts = itertools.product(*outer_chunks)
        if not inner:
            for chunks in parts:
                bounds = dict(zip(outer, chunks))
                runs[key(bounds), "dest"](
                    views(operands, bounds), dest[_index(spec.output, bounds)]
                )
        else:
            partial = np.empty(chunk, ct)
            acc = np.empty(chunk, ct) if sliced.accumulate == "buffer" else None
            for chunks in parts:
                bounds = dict(zip(outer, chunks))
                part(operands, bounds, dest[_index(spec.output, bounds)], partial, acc)
        return dest if out is not None or shape else dest[()]

    return run


# -- the report ------------------------------------------------------------------------------


def _bytes(n: int) -> str:
    return f"{n:,} B"


def format_sliced(sliced: SlicedPlan) -> list[str]:
    """The report lines of a sliced plan: labels, slices, the peak, FLOPs, one slice."""
    slicing, spec = sliced.slicing, sliced.spec
    outer = [x for x in slicing.labels if x in slicing.output]
    inner = [x for x in slicing.labels if x not in slicing.output]
    how = (
        [f"chunks of '{spec.label_string(outer)}' write disjoint parts of the result"]
        if outer
        else []
    )
    if inner:
        how.append(
            f"chunks of '{spec.label_string(inner)}' are added up "
            + (
                "in the result"
                if sliced.accumulate == "dest"
                else f"in an accumulator of {sliced.base.compute_dtype}"
            )
        )
    lines = [
        f"  sliced over: {slicing.describe(spec.names)}",
        f"  slices: {slicing.n_slices:,}, one after another: {'; '.join(how)}",
        f"  peak: {_bytes(sliced.peak)} = result {_bytes(sliced.result_bytes)} + accumulator "
        f"{_bytes(sliced.accumulator_bytes)} + partial sums {_bytes(sliced.partial_bytes)} "
        f"+ peak per slice {_bytes(sliced.slice_peak)}",
        f"  FLOPs: unsliced {slicing.base_flops:,}, sliced {slicing.flops:,} "
        f"(overhead {100 * slicing.overhead:.1f}%)",
        "  each slice (the first shown; its operands are views of their chunks):",
    ]
    return lines + ["  " + line for line in format_plan(sliced.first.plan).splitlines()]
