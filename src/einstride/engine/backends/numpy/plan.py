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
>>> [step.kind for step in plan.steps], plan.steps[0].left_note
(['contract'], 'viewed')
>>> plan.allocated_bytes == 8 * 64 * 16 * 8
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ....errors import EinsumError
from ....tensors import MAX_NDARRAY_RANK
from ...spec.dtypes import check_numeric, compute_dtype, result_dtype
from ...spec.equation import EinsumSpec
from ...spec.walk import plan_path, walk_path
from .fold import BLAS_TYPES, Term, contiguous_strides
from .pairs import (
    COPY_NS_PER_BYTE,
    Choice,
    Groups,
    Out,
    choose,
    classify,
    matmul_geometry,
)
from .steps import (
    KERNEL_LOOP,
    KERNEL_MULTIPLY,
    KERNEL_UFUNC,
    WRITE_INTO,
    WRITE_NEW,
    WRITE_RETURN,
    WRITE_TEMP,
    Alloc,
    BatchStep,
    ContractStep,
    CopyStep,
    FusedStep,
    OutputPlan,
    Plan,
    ReduceStep,
    Step,
    ViewStep,
)
from .threads import split_threads

__all__ = ["build_plan", "check_memory", "check_ranks"]

@dataclass(frozen=True)
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
    fuse: bool = True,
) -> Plan:
    """Plan ``spec`` for operands of the given dtypes and byte strides (and ``out=``'s
    byte strides and dtype when given).  ``fuse=False`` never turns a tiny problem into one
    :class:`FusedStep` (a backend without NumPy's sum-of-products loop asks for that)."""
    for i, d in enumerate(dtypes):
        check_numeric(np.dtype(d), f"operand {i} has dtype")
    rt = result_dtype(dtypes, dtype)
    dts = tuple(np.dtype(d) for d in dtypes)
    layouts = tuple(tuple(s) for s in strides)
    plan = _Planner(spec, dts, rt, out).run(layouts, optimize)
    check_ranks(plan)
    if fuse and _worth_fusing(plan):
        return _Planner(spec, dts, rt, out).fused(layouts, plan.path)
    return plan


def check_ranks(plan: Plan) -> None:
    """Raise :class:`EinsumError` naming the step when an array the plan makes or views would
    have more dimensions than NumPy supports."""
    found = [("output", plan.output.shape)]
    for k, step in enumerate(plan.steps):
        for attr in ("shape", "left_shape", "right_shape", "out_shape"):
            if hasattr(step, attr):
                found.append((f"step {k + 1} ({step.kind})", getattr(step, attr)))
    for name, shape in found:
        if len(shape) > MAX_NDARRAY_RANK:
            raise EinsumError(
                f"einsum {plan.spec.text!r}: {name} would need an array of rank {len(shape)}; "
                f"NumPy arrays have at most {MAX_NDARRAY_RANK} dimensions"
            )


# A rough cost model (nanoseconds) for choosing one fused loop over a multi-step plan.
_STEP_NS, _FLOP_NS, _BYTE_NS = 1500.0, 0.2, 0.25
_LOOP_BASE_NS, _LOOP_NS = 500.0, 0.5
# Fusing is for tiny problems only: past this many index combinations the single loop is
# itself the hazard (a plan whose intermediates would exceed memory must fail fast, not run
# a loop over 10^12 combinations).
_FUSE_MAX_COMBOS = 1 << 20


def _worth_fusing(plan: Plan) -> bool:
    """Several steps for a problem so small that one sum-of-products loop is cheaper."""
    spec = plan.spec
    if len(plan.steps) < 2 or len(spec.sizes) > 52 or len(spec.inputs) > 32:
        return False
    if any(d.kind not in "biufc" for d in (*plan.dtypes, plan.compute_dtype)):
        return False
    combos = math.prod(spec.sizes)
    if combos > _FUSE_MAX_COMBOS:
        return False
    fused = _LOOP_BASE_NS + _LOOP_NS * combos * len(spec.inputs)
    planned = (_STEP_NS * len(plan.steps) + _FLOP_NS * plan.flops
               + _BYTE_NS * plan.allocated_bytes)
    return fused < planned


class _Planner:
    def __init__(self, spec: EinsumSpec, dtypes: tuple[np.dtype[Any], ...], rt: np.dtype[Any],
                 out: tuple[tuple[int, ...], np.dtype[Any]] | None) -> None:
        self.spec = spec
        self.sizes = spec.sizes
        self.dtypes = dtypes
        self.rt = rt
        self.ct = compute_dtype(rt)
        self.out = out
        self.steps: list[Step] = []
        self.n_regs = len(spec.inputs)
        self.flops = 0
        self.create = "none"
        self.result = -1
        self.final_perm: tuple[int, ...] = ()
        self.distinct = tuple(dict.fromkeys(spec.output))
        self.expand = tuple(
            tuple(ax for ax, lab in enumerate(spec.output) if lab == u) for u in self.distinct
        )
        self.target = self._target()

    # -- the destination ----------------------------------------------------------------

    def _target(self) -> _Target:
        out_shape = self.spec.output_shape
        if self.out is not None:
            self.create = "out"
            out_strides, out_dtype = self.out
            return _Target(self.distinct, self._write_term(out_strides, out_dtype), out_dtype)
        if len(self.distinct) != len(self.spec.output):
            self.create = "zeros"
            strides = contiguous_strides(out_shape, self.rt.itemsize)
            return _Target(self.distinct, self._write_term(strides, self.rt), self.rt)
        return _Target(self.distinct, None, self.rt)

    def _write_term(self, strides: Sequence[int], dtype: np.dtype[Any]) -> Term:
        """The write view of the destination: one axis per distinct output label."""
        summed = tuple(sum(strides[ax] for ax in axes) for axes in self.expand)
        shape = tuple(self.sizes[u] for u in self.distinct)
        return Term(self.distinct, shape, summed, dtype)

    def _own_output(self) -> Term:
        """The plan allocates the output (C order) and the last step writes into it."""
        self.create = "empty"
        shape = self.spec.output_shape
        return Term(self.distinct, shape, contiguous_strides(shape, self.rt.itemsize), self.rt)

    def _dest_perm(self, labels: Sequence[int]) -> tuple[int, ...]:
        return tuple(self.distinct.index(lab) for lab in labels)

    # -- driver ---------------------------------------------------------------------------

    def new_reg(self) -> int:
        self.n_regs += 1
        return self.n_regs - 1

    def run(self, strides: tuple[tuple[int, ...], ...], optimize: Any) -> Plan:
        shapes = self.spec.shapes()
        live = [self._prepare(i, shapes[i], strides[i]) for i in range(len(shapes))]
        path = plan_path(self.spec, optimize)
        walk_path(live, path, self.distinct, unary=self._unary_item, pair=self._pair,
                  labels_of=lambda item: item[1].labels)
        return self._finish(strides, path)

    def _unary_item(self, item: tuple[int, Term], keep: frozenset[int], final: bool
                    ) -> tuple[int, Term]:
        return self._unary(*item, keep, final)

    def fused(self, strides: tuple[tuple[int, ...], ...], path: tuple[tuple[int, ...], ...]
              ) -> Plan:
        """The whole einsum as one :class:`FusedStep` over the operands as they are."""
        shape = tuple(self.sizes[u] for u in self.distinct)
        dest = self.target.term
        allocs: tuple[Alloc, ...] = ()
        if dest is None and self.ct == self.rt:
            write, allocs = WRITE_RETURN, (Alloc("output", shape, self.ct),)
        else:
            dest = dest if dest is not None else self._own_output()
            write = WRITE_INTO if dest.dtype == self.ct else WRITE_TEMP
            if write == WRITE_TEMP:
                allocs = (Alloc("temporary", shape, self.ct),)
        dst = self.new_reg()
        n = len(self.spec.inputs)
        cast = any(d != self.ct for d in self.dtypes)
        self.steps.append(FusedStep(tuple(range(n)), dst, self.spec.inputs, self.distinct,
                                    shape, self.ct, write, self._dest_perm(self.distinct),
                                    allocs, cast))
        if write == WRITE_RETURN:
            self.result, self.final_perm = dst, tuple(range(len(shape)))
        all_labels = {lab for term in self.spec.inputs for lab in term}
        self.flops = _flop_count(all_labels, bool(all_labels - set(self.distinct)), n,
                                 self.sizes)
        return self._finish(strides, path)

    def _finish(self, strides: tuple[tuple[int, ...], ...], path: tuple[tuple[int, ...], ...]
                ) -> Plan:
        allocs: tuple[Alloc, ...] = ()
        if self.create in ("zeros", "empty"):
            allocs = (Alloc("output", self.spec.output_shape, self.rt),)
        output = OutputPlan(self.spec.output, self.spec.output_shape, self.rt, self.create,
                            self.expand, self.result, self.final_perm, allocs)
        all_labels = {lab for term in self.spec.inputs for lab in term}
        naive = _flop_count(all_labels, bool(all_labels - set(self.distinct)),
                            len(self.spec.inputs), self.sizes)
        return Plan(self.spec, self.dtypes, strides, None if self.out is None else self.out[0],
                    self.rt, self.ct, path, tuple(self.steps), output, naive, self.flops,
                    self.n_regs, _frees(self.steps, len(self.spec.inputs), self.result))

    # -- per operand ----------------------------------------------------------------------

    def _prepare(self, i: int, shape: tuple[int, ...], strides: tuple[int, ...]
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
        term = Term(tuple(labels), tuple(dims), tuple(steps), self.dtypes[i])
        reg = i
        if squeeze or diagonals:
            reg = self.new_reg()
            self.steps.append(ViewStep(i, reg, i, squeeze, tuple(diagonals),
                                       self.spec.inputs[i], term.labels, term.shape))
        if not np.can_cast(term.dtype, self.ct, "same_kind"):
            return self._copy(reg, term, term.labels, f"cast {term.dtype} -> {self.ct}")
        return reg, term

    def _new_term(self, labels: Sequence[int], dtype: np.dtype[Any]) -> Term:
        shape = tuple(self.sizes[lab] for lab in labels)
        return Term(tuple(labels), shape, contiguous_strides(shape, dtype.itemsize), dtype)

    def _reduce(self, reg: int, term: Term, keep: frozenset[int]) -> tuple[int, Term]:
        """Sum the labels of ``term`` not in ``keep`` into a new buffer whose axes follow the
        source's memory order (so the summing loop reads and writes in step)."""
        axes = tuple(ax for ax, lab in enumerate(term.labels) if lab not in keep)
        kept = tuple(lab for lab in term.labels if lab in keep)
        order = sorted(kept, key=lambda lab: -abs(term.stride(lab)))
        new = self._new_term(order, self.ct)
        dst = self.new_reg()
        self.flops += _flop_count(term.labels, True, 1, self.sizes)
        split, threads = self._reduce_split(term, kept)
        self.steps.append(ReduceStep(
            reg, dst, axes, tuple(term.labels[ax] for ax in axes), kept, new.labels, new.shape,
            self.ct, WRITE_NEW, allocs=(Alloc("intermediate", new.shape, self.ct),),
            kernel=_reduce_kernel(term), split=split, threads=threads))
        return dst, new

    def _reduce_split(self, term: Term, kept: tuple[int, ...]) -> tuple[int, int]:
        """(label, threads) to split a reduction of ``term`` over: its outermost label in
        memory when it is kept (each chunk streams its own part of the source); (-1, 1)
        when the step is too small or that label is summed."""
        label = _outermost(term)
        if label not in kept:   # a chunk along an inner axis runs NumPy's loop far slower
            return -1, 1
        moved = _bytes_moved(term) + math.prod(self.sizes[lab] for lab in kept) * \
            self.ct.itemsize
        threads = split_threads(moved, self.sizes[label])
        return (label, threads) if threads > 1 else (-1, 1)

    def _copy(self, reg: int, term: Term, order: Sequence[int], reason: str) -> tuple[int, Term]:
        new = self._new_term(order, self.ct)
        perm = tuple(term.labels.index(lab) for lab in order)
        dst = self.new_reg()
        self.steps.append(CopyStep(reg, dst, perm, new.labels, new.shape, self.ct, WRITE_NEW,
                                   reason, allocs=(Alloc("copy", new.shape, self.ct),)))
        return dst, new

    # -- one operand ----------------------------------------------------------------------

    def _unary(self, reg: int, term: Term, keep: frozenset[int], final: bool
               ) -> tuple[int, Term]:
        kept = tuple(lab for lab in term.labels if lab in keep)
        if not final:
            return (reg, term) if kept == term.labels else self._reduce(reg, term, keep)
        if kept != term.labels:
            return self._final_reduce(reg, term, keep, kept)
        dest = self.target.term
        if dest is None and term.dtype == self.rt:
            self.result, self.final_perm = reg, tuple(term.labels.index(u) for u in self.distinct)
            return reg, term
        if dest is None:
            dest = self._own_output()
        perm = tuple(range(len(term.labels)))
        dst = self.new_reg()
        self.steps.append(CopyStep(reg, dst, perm, term.labels, term.shape, dest.dtype,
                                   WRITE_INTO, "written into the output",
                                   self._dest_perm(term.labels)))
        return dst, term

    def _final_reduce(self, reg: int, term: Term, keep: frozenset[int], kept: tuple[int, ...]
                      ) -> tuple[int, Term]:
        axes = tuple(ax for ax, lab in enumerate(term.labels) if lab not in keep)
        shape = tuple(self.sizes[lab] for lab in kept)
        dest = self.target.term
        allocs: tuple[Alloc, ...]
        if dest is None and self.ct == self.rt:
            write, allocs = WRITE_RETURN, (Alloc("output", shape, self.ct),)
        else:
            dest = dest if dest is not None else self._own_output()
            into = dest.dtype == self.ct
            write = WRITE_INTO if into else WRITE_TEMP
            allocs = () if into else (Alloc("temporary", shape, self.ct),)
        dst = self.new_reg()
        self.flops += _flop_count(term.labels, True, 1, self.sizes)
        split, threads = self._reduce_split(term, kept)
        self.steps.append(ReduceStep(
            reg, dst, axes, tuple(term.labels[ax] for ax in axes), kept, kept, shape, self.ct,
            write, self._dest_perm(kept), allocs=allocs, kernel=_reduce_kernel(term),
            split=split, threads=threads))
        if write == WRITE_RETURN:
            self.result, self.final_perm = dst, tuple(kept.index(u) for u in self.distinct)
        return dst, self._new_term(kept, self.ct)

    # -- two operands ---------------------------------------------------------------------

    def _pair(self, left: tuple[int, Term], right: tuple[int, Term], keep: frozenset[int],
              final: bool) -> tuple[int, Term]:
        (ra, a), (rb, b) = left, right
        g = classify(a.labels, b.labels, keep)
        self.flops += _flop_count(set(a.labels) | set(b.labels),
                                  bool(g.contracted or g.left_only or g.right_only), 2, self.sizes)
        if g.left_only:
            ra, a = self._reduce(ra, a, keep | set(b.labels))
        if g.right_only:
            rb, b = self._reduce(rb, b, keep | set(a.labels))
        if g.left_only or g.right_only:
            g = replace(classify(a.labels, b.labels, keep), left_only=g.left_only,
                        right_only=g.right_only)
        if math.prod(self.sizes[lab] for lab in g.contracted) == 1:
            return self._batch(ra, a, rb, b, g, final)
        return self._matmul(ra, a, rb, b, g, keep, final)

    def _preferred(self, labels: Sequence[int], final: bool, fallback: Sequence[int]
                   ) -> tuple[int, ...]:
        source = self.distinct if final else fallback
        return tuple(lab for lab in source if lab in labels)

    def _batch(self, ra: int, a: Term, rb: int, b: Term, g: Groups, final: bool
               ) -> tuple[int, Term]:
        bt = self._preferred(g.batch, final, a.labels)
        lf = self._preferred(g.left_free, final, a.labels)
        rf = self._preferred(g.right_free, final, b.labels)
        labels = bt + lf + rf
        size = self.sizes
        left_perm = tuple(a.labels.index(x) for x in bt + lf + g.contracted)
        right_perm = tuple(b.labels.index(x) for x in bt + g.contracted + rf)
        left_shape = tuple(size[x] for x in bt + lf) + (1,) * len(rf)
        right_shape = tuple(size[x] for x in bt) + (1,) * len(lf) + tuple(size[x] for x in rf)
        shape = tuple(size[x] for x in labels)
        write, dest_perm, allocs, note = self._product_write(labels, shape, final)
        kernel = KERNEL_LOOP if (lf or rf) and len(set(a.labels) | set(b.labels)) <= 52 \
            else KERNEL_MULTIPLY
        dst = self.new_reg()
        # split along the outermost label of what the step writes (chunks write whole rows)
        written = self._new_term(labels, self.ct) if write != WRITE_INTO else (
            self.target.term if self.target.term is not None else self._own_output())
        label = _outermost(written)
        moved = _bytes_moved(a) + _bytes_moved(b) + math.prod(shape) * self.ct.itemsize
        threads = split_threads(moved, size[label]) if label >= 0 else 1
        self.steps.append(BatchStep(
            ra, rb, dst, kernel, a.labels, b.labels, a.shape, b.shape, bt, lf, rf, left_perm,
            left_shape, right_perm, right_shape, labels, shape, self.ct, write, dest_perm,
            g.left_only, g.right_only, allocs, note, label if threads > 1 else -1, threads))
        return dst, self._new_term(labels, self.ct)

    def _product_write(self, labels: tuple[int, ...], shape: tuple[int, ...], final: bool
                       ) -> tuple[str, tuple[int, ...], tuple[Alloc, ...], str]:
        """How a broadcast product delivers: a new buffer, or into the destination."""
        if not final:
            return WRITE_NEW, (), (Alloc("intermediate", shape, self.ct),), "new buffer"
        dest = self.target.term if self.target.term is not None else self._own_output()
        if dest.dtype == self.ct:
            return WRITE_INTO, self._dest_perm(labels), (), "written into the output"
        return (WRITE_TEMP, self._dest_perm(labels), (Alloc("temporary", shape, self.ct),),
                f"computed in {self.ct}, then cast into the output")

    def _out_options(self, final: bool) -> list[Out]:
        """The ways the last product may deliver (the first wins a tie)."""
        if not final:
            return [Out("new", None, 0.0)]
        dest = self.target.term
        if dest is not None:
            temp = Out("temp", None, COPY_NS_PER_BYTE * dest.size * self.ct.itemsize)
            return ([Out("into", dest, 0.0)] if dest.dtype == self.ct else []) + [temp]
        if self.ct != self.rt:
            return [Out("temp", None, 0.0)]
        shape = self.spec.output_shape
        own = Term(self.distinct, shape, contiguous_strides(shape, self.rt.itemsize), self.rt)
        return [Out("into-own", own, 0.0), Out("return", None, 0.0)]

    def _matmul(self, ra: int, a: Term, rb: int, b: Term, g: Groups, keep: frozenset[int],
                final: bool) -> tuple[int, Term]:
        outs = self._out_options(final)
        pick = self._choose(a, b, g, outs, final)
        free = [out for out in outs if out.term is None]
        if free and self.ct in BLAS_TYPES:
            # the product may also run as b @ a (its result viewed transposed); BLAS is
            # measurably faster one way round for some shapes and strides
            swapped = Groups(g.batch, g.contracted, g.right_free, g.left_free, g.right_only,
                             g.left_only)
            alt = self._choose(b, a, swapped, free, final)
            if alt.cost < 0.97 * pick.cost:
                (ra, a), (rb, b), g, pick = (rb, b), (ra, a), swapped, alt
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
        write, dest_perm, allocs, out_note = self._matmul_write(
            pick.out, geo.labels, shape, bool(pick.loop_k))
        dst = self.new_reg()
        self.steps.append(ContractStep(
            ra, rb, dst, a.shape, b.shape, bt, pick.k + pick.loop_k, pick.m + pick.loop_m,
            pick.n + pick.loop_n, geo.left_perm, geo.left_shape, geo.right_perm,
            geo.right_shape, geo.out_shape, geo.labels, shape, self.ct, write, dest_perm,
            note_a, note_b, out_note, g.left_only, g.right_only, allocs,
            pick.loop_m + pick.loop_n + pick.loop_k))
        if write == WRITE_RETURN:
            self.result = dst
            self.final_perm = tuple(geo.labels.index(u) for u in self.distinct)
        result = self._new_term(geo.labels, self.ct)
        if pick.loop_k:  # the partial products over the looped contracted labels are summed now
            return self._unary(dst, result, keep, final)
        return dst, result

    def _choose(self, a: Term, b: Term, g: Groups, outs: list[Out], final: bool) -> Choice:
        return choose(a, b, g, outs, self.ct, self.sizes,
                      self._preferred(g.left_free, final, a.labels),
                      self._preferred(g.right_free, final, b.labels), self.spec.label_string)

    def _matmul_write(self, out: Out, labels: tuple[int, ...], shape: tuple[int, ...],
                      partial: bool) -> tuple[str, tuple[int, ...], tuple[Alloc, ...], str]:
        if out.mode == "new":
            what = "partial products" if partial else "intermediate"
            return WRITE_NEW, (), (Alloc(what, shape, self.ct),), "new buffer"
        if out.mode == "return" or (out.mode == "into-own" and labels == self.distinct):
            # a new C-ordered buffer in the output's order already is the output
            return WRITE_RETURN, (), (Alloc("output", shape, self.ct),), (
                "new buffer in matmul order; the result is a transposed view of it"
                if labels != self.distinct else "new buffer")
        if out.mode == "into-own":
            self._own_output()
        if out.mode in ("into", "into-own"):
            return WRITE_INTO, self._dest_perm(labels), (), "written straight into the output"
        if self.target.term is None:
            self._own_output()
        reason = "the output's strides do not fold; computed into a temporary, then copied" \
            if self.target.term is not None and self.target.term.dtype == self.ct \
            else f"computed in {self.ct}, then cast into the output"
        return WRITE_TEMP, self._dest_perm(labels), (Alloc("temporary", shape, self.ct),), reason


def _bytes_moved(term: Term) -> int:
    """The memory traffic of reading ``term`` once: its distinct elements (stride-0 axes
    re-read the same ones), each costing a whole cache line when its smallest stride is at
    least one apart (a diagonal, a strided view).

    >>> _bytes_moved(Term((0, 1), (4, 8), (64, 8), np.dtype(float)))      # dense: 32 x 8 B
    256
    >>> _bytes_moved(Term((0,), (4,), (1032,), np.dtype(float)))          # a diagonal: 4 lines
    256
    """
    count, step = 1, 0
    if 0 in term.shape:
        return 0
    for dim, stride in zip(term.shape, term.strides):
        if stride != 0 and dim > 1:
            count *= dim
            step = abs(stride) if step == 0 else min(step, abs(stride))
    return count * max(term.dtype.itemsize, min(64, step))


def _outermost(term: Term) -> int:
    """The label of ``term``'s largest stride among axes longer than 1 (-1: none).

    >>> _outermost(Term((5, 7), (3, 4), (8, 24), np.dtype(float)))    # Fortran order
    7
    """
    found = [(abs(st), lab) for lab, dim, st in zip(term.labels, term.shape, term.strides)
             if dim > 1]
    return max(found)[1] if found else -1


def _reduce_kernel(term: Term) -> str:
    """NumPy's sum-of-products loop takes at most 52 axes; beyond, a ufunc reduction."""
    return KERNEL_LOOP if len(term.labels) <= 52 else KERNEL_UFUNC


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
    if isinstance(step, (ContractStep, BatchStep)):
        return (step.left, step.right)
    if isinstance(step, FusedStep):
        return step.operands
    return (step.src,)


def check_memory(plan: Plan, limit: int) -> None:
    """Raise :class:`EinsumError` naming the step when one allocation exceeds ``limit``."""
    for name, alloc in plan.allocations():
        if alloc.nbytes > limit:
            raise EinsumError(
                f"einsum {plan.spec.text!r}: {name} would allocate {alloc.nbytes:,} bytes for "
                f"the {alloc.what} of shape {alloc.shape} ({alloc.dtype}), more than the memory "
                f"limit of {limit:,} bytes"
            )
