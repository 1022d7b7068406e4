"""Run a :class:`~.records.TorchProgram` with torch ops over views.

:func:`compile_program` turns the records into one callable ``run(tensors, out)``, a
closure per op, made once and cached with the plan.  Views are ``as_strided``/``permute``/
``reshape`` of the registers (the planner checked they are views); products are
``torch.mm``/``torch.bmm`` on those views (batch dimensions folded where their strides
allow, else looped), written straight into their destination through ``out=``; sums are
``torch.sum`` (``torch.any`` for bool) in the compute dtype; a repeated output label is
written through the summed-stride view of a zeroed output.  Nothing here reads a NumPy
plan: only the records.

>>> import torch
>>> a, b = torch.ones(2, 3, 4), torch.ones(2, 4, 5)
>>> out = torch.empty(5, 2, 3).permute(1, 2, 0)      # a permuted destination
>>> matmul_into(a, b, out) is None and bool((out == 4).all())
True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ...._compat import assert_never
from ..numpy.steps import Spread
from .dtypes import torch_dtype
from .guard import CPU
from .records import (
    CopyOp,
    Destination,
    Fold,
    FusedOp,
    MatmulOp,
    MultiplyOp,
    ReduceOp,
    StepOutput,
    TorchOp,
    TorchProgram,
    ViewOp,
    Write,
)

__all__ = ["Run", "assign", "compile_program", "matmul_into", "one_native", "spread_run"]

Run = Callable[[Sequence[torch.Tensor], "torch.Tensor | None"], torch.Tensor]
OpFn = Callable[[list[Any], Any], None]
View = Callable[[torch.Tensor], torch.Tensor]


def compile_program(program: TorchProgram) -> Run:
    """The program as one callable ``run(tensors, out) -> result``."""
    general = _general(program)
    return _trace(program, general) or general


def _general(program: TorchProgram) -> Run:
    fns = [_compile(op) for op in program.steps]
    work = list(zip(fns, program.frees))
    pad = [None] * (program.n_registers - program.n_inputs)
    make_dest = _destination(program.output)
    finish = _finisher(program.output, program.n_inputs)

    def run(tensors: Sequence[torch.Tensor], out: torch.Tensor | None) -> torch.Tensor:
        regs: list[Any] = [*tensors, *pad]
        full, dest = make_dest(out, tensors[0].device)
        for fn, free in work:
            fn(regs, dest)
            for reg in free:
                regs[reg] = None
        return finish(full, regs)

    return run


def spread_run(run: Run, spread: Spread) -> Run:
    """``run`` (the steps over the operands read at index 0 of their broadcast axes) and
    then its result expanded into the full output (:class:`~..numpy.steps.Spread`): a new
    contiguous tensor, or ``out=`` (its first slice written, cloned, then copied along the
    spread axes: a copy from an overlapping source is undefined in torch).  Slicing and
    ``expand`` are torch's differentiable views."""
    takes, first, shape = spread.reads(), spread.first(), spread.spec.output_shape
    if not spread.axes:  # axes dropped, nothing spread: the steps' result is the result

        def read(tensors: Sequence[torch.Tensor], out: torch.Tensor | None) -> torch.Tensor:
            return run([t if take is None else t[take] for t, take in zip(tensors, takes)], out)

        return read

    def go(tensors: Sequence[torch.Tensor], out: torch.Tensor | None) -> torch.Tensor:
        ops = [t if take is None else t[take] for t, take in zip(tensors, takes)]
        if out is not None:
            run(ops, out[first])
            out.copy_(out[first].clone().expand(shape))
            return out
        return run(ops, None).expand(shape).contiguous()

    return go


def one_native(program: TorchProgram, operand: np.dtype[Any]) -> bool:
    """Whether ``program`` is its one operand (of dtype ``operand``) permuted, or one
    ``torch.sum`` of it in its own dtype: torch's own autograd differentiates that as it
    does ``torch.einsum``'s (a permuted view: ``PermuteBackward``; a sum: ``SumBackward``,
    the cotangent expanded, a view), so under autograd it runs without an
    :class:`~.autograd.EinsumFunction` around it.  A permuted result then stays a view
    torch tracks: an in-place change of the operand (or of the result) afterwards is
    torch's to handle, as for ``torch.einsum``'s, where a custom Function's view output
    refuses both; and the Function's Python and graph node cost ~0.1 ms a call (1.91
    against 1.72 ms for ``ijk->i`` on 256 x 256 x 128 float64, forward and backward).  A
    diagonal keeps the Function: its backward writes the cotangent into zero pages
    (``calloc``), 3-4x faster than ``as_strided``'s or ``diagonal``'s, which zero the whole
    gradient (an in-place change of the operand after a diagonal view is taken then fails
    the backward with torch's error).  So does a sum into another dtype (``dtype=``), whose
    backward also takes a real operand's gradient from a complex result, which torch's
    sum has none for.

    >>> import einstride as es
    >>> x, m = torch.ones(2, 3, 4, requires_grad=True), torch.ones(3, 3, requires_grad=True)
    >>> es.einsum("ijk->ki", x).grad_fn.name(), es.einsum("ii->i", m).grad_fn.name()
    ('PermuteBackward0', 'EinsumFunctionBackward')
    >>> es.einsum("ij->ji", m, optimize="greedy").grad_fn.name()     # planned: no lane
    'PermuteBackward0'
    """
    if program.n_inputs != 1 or program.output.create != "none":
        return False
    match program.steps:
        case ():
            return program.output.result == 0
        case (ReduceOp(src=0, dtype=dtype, to=StepOutput(write=Write.RETURN, dst=dst)),):
            return dtype == operand and program.output.result == dst
        case _:
            return False


def _trace(program: TorchProgram, general: Run) -> Run | None:
    """``torch.trace`` for a program that sums the main diagonal of one square matrix into a
    new scalar in its own dtype: its kernel takes 17 µs on a 2,048 x 2,048 float64 matrix
    where the strided sum of the diagonal's view takes 21-29 µs (measured).  Any other
    operand (not that matrix, another dtype) runs ``general``."""
    match program.steps:
        case (
            ViewOp(src=0, dst=view, shape=(n,), strides=(step,)),
            ReduceOp(src=summed, axes=(0,), shape=(), dtype=dtype, to=to),
        ) if (
            program.n_inputs == 1
            and summed == view
            and to.write is Write.RETURN
            and program.output.create == "none"
            and dtype.kind in "fc"
        ):
            pass
        case _:
            return None
    want = torch_dtype(dtype, "the compute dtype")

    def run(tensors: Sequence[torch.Tensor], out: torch.Tensor | None) -> torch.Tensor:
        (x,) = tensors
        if (
            out is None
            and x.dtype == want
            and x.shape == (n, n)
            and x.stride(0) + x.stride(1) == step
        ):
            return torch.trace(x)
        return general(tensors, out)

    return run


def _compile(op: TorchOp) -> OpFn:
    match op:
        case ViewOp():
            return _view_fn(op)
        case ReduceOp():
            return _reduce_fn(op)
        case CopyOp():
            return _copy_fn(op)
        case MatmulOp():
            return _matmul_fn(op)
        case MultiplyOp():
            return _multiply_fn(op)
        case FusedOp():
            return _fused_fn(op)
        case _:
            assert_never(op)


# -- helpers ----------------------------------------------------------------------------------


def mm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.mm(a, b)`` (into ``out``), but a ``(1 x K) @ (K x 1)`` product (a full
    contraction's) by ``torch.dot``: torch's CPU ``mm`` sums it one term at a time (a
    review: float32 of K = 4e6 off by 1e-2 relative, ``dot`` by 1e-6, as torch.einsum's
    ``bmm``).

    >>> float(mm(torch.ones(1, 3), torch.ones(3, 1)))
    3.0
    """
    if a.shape[0] == 1 == b.shape[1] and a.dim() == 2 == b.dim():
        if out is None:
            return torch.dot(a[0], b[:, 0]).view(1, 1)
        torch.dot(a[0], b[:, 0], out=out[0, 0])
        return out
    return torch.mm(a, b) if out is None else torch.mm(a, b, out=out)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``torch.matmul``, a 2-D ``(1 x K) @ (K x 1)`` product by :func:`mm`'s ``dot``."""
    if a.dim() == 2 == b.dim():
        return mm(a, b)
    return torch.matmul(a, b)


def assign(dst: torch.Tensor, src: torch.Tensor) -> None:
    """``dst.copy_(src)``, casting as NumPy's ``casting="unsafe"`` (complex into real keeps
    the real part, without torch's warning)."""
    if src.is_complex() and not dst.is_complex():
        src = src.real
    dst.copy_(src)


def _cast(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` in ``dtype`` (a converted copy when it differs)."""
    if x.dtype == dtype:
        return x
    if x.is_complex() and not dtype.is_complex:
        x = x.real
    return x.to(dtype)


def _fold(fold: Fold) -> View:
    """``permute`` + ``reshape`` into the planned view (the planner checked that the label
    groups fold in the register's strides, so ``reshape`` is a view)."""
    perm, shape = fold.perm, fold.shape
    if perm == tuple(range(len(perm))):
        return lambda x: x if x.shape == shape else x.reshape(shape)
    return lambda x: x.permute(perm).reshape(shape)


def _empty(shape: tuple[int, ...], dtype: torch.dtype, like: torch.Tensor) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=like.device)


# -- per op -----------------------------------------------------------------------------------


def _view_fn(op: ViewOp) -> OpFn:
    src, dst, shape, strides = op.src, op.dst, op.shape, op.strides

    def run(regs: list[Any], dest: Any) -> None:
        x = regs[src]
        regs[dst] = torch.as_strided(x, shape, strides, x.storage_offset())

    return run


def _sum_kernel(
    axes: tuple[int, ...], dtype: torch.dtype, whole: bool = False
) -> Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]:
    """Sum ``axes`` in ``dtype`` (OR for bool), into ``out`` when given (``whole``: the
    result is a scalar)."""
    if dtype == torch.bool:

        def any_of(x: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
            x = x if x.dtype == torch.bool else x != 0
            return torch.any(x, dim=axes) if out is None else torch.any(x, dim=axes, out=out)

        return any_of

    # an integer sum without dtype= is int64 in torch: dtype= keeps it in the compute
    # dtype, wrapping around as NumPy's does
    exact = dtype.is_floating_point or dtype.is_complex

    def sum_of(x: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
        if x.dtype != dtype or not exact:  # accumulate in the compute dtype
            if out is None:
                return torch.sum(x, dim=axes, dtype=dtype)
            return torch.sum(x, dim=axes, dtype=dtype, out=out)
        # no dtype= when it changes nothing: torch takes a slower path with it (+25%
        # on a 2048-element strided sum)
        return torch.sum(x, dim=axes) if out is None else torch.sum(x, dim=axes, out=out)

    def sum_all(x: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
        if out is not None:
            return sum_of(x, out)
        # a scalar result sums every axis: no dim= (a 2048-element strided trace, 31 -> 28
        # us)
        return torch.sum(x) if x.dtype == dtype and exact else torch.sum(x, dtype=dtype)

    return sum_all if whole else sum_of


def _reduce_fn(op: ReduceOp) -> OpFn:
    assert op.axes, "a reduce op sums at least one axis (torch.sum(dim=()) sums them all)"
    src, shape, kept_perm, to = op.src, op.shape, op.kept_perm, op.to
    dtype = torch_dtype(op.dtype, "the compute dtype")
    kernel = _sum_kernel(op.axes, dtype, whole=not shape)
    rounded_to = None if to.rounded_to is None else torch_dtype(to.rounded_to, "dtype=")

    def run(regs: list[Any], dest: Any) -> None:
        x = regs[src]
        match to.write:
            case Write.NEW:
                buf = _empty(shape, dtype, x)
                kernel(x, buf.permute(kept_perm))
                regs[to.dst] = buf
            case Write.RETURN:
                regs[to.dst] = kernel(x, None)
            case Write.INTO:
                kernel(x, dest.permute(to.dest_perm))
            case Write.TEMP:
                value = kernel(x, None)
                assign(
                    dest.permute(to.dest_perm),
                    value if rounded_to is None else value.to(rounded_to),
                )
            case _:
                assert_never(to.write)

    return run


def _copy_fn(op: CopyOp) -> OpFn:
    src, perm, shape, to = op.src, op.perm, op.shape, op.to
    dtype = torch_dtype(op.dtype, "the compute dtype")

    def run(regs: list[Any], dest: Any) -> None:
        x = regs[src].permute(perm)
        if to.write is Write.INTO:
            assign(dest.permute(to.dest_perm), x)
            return
        buf = _empty(shape, dtype, x)
        assign(buf, x)
        regs[to.dst] = buf

    return run


def _deliver(
    to: StepOutput,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    compute: Callable[[list[Any], torch.Tensor], None],
) -> OpFn:
    """Run ``compute(regs, into)`` into a new tensor (NEW/RETURN), the destination's view
    (INTO) or a temporary copied into it (TEMP)."""
    dst, dest_perm = to.dst, to.dest_perm
    rounded_to = None if to.rounded_to is None else torch_dtype(to.rounded_to, "dtype=")

    def run(regs: list[Any], dest: Any) -> None:
        match to.write:
            case Write.INTO:
                compute(regs, dest.permute(dest_perm))
            case Write.NEW | Write.RETURN:
                buf = torch.empty(shape, dtype=dtype, device=regs[0].device)
                compute(regs, buf)
                regs[dst] = buf
            case Write.TEMP:
                buf = torch.empty(shape, dtype=dtype, device=regs[0].device)
                compute(regs, buf)
                assign(dest.permute(dest_perm), buf if rounded_to is None else buf.to(rounded_to))
            case _:
                assert_never(to.write)

    return run


def _multiply_fn(op: MultiplyOp) -> OpFn:
    dtype = torch_dtype(op.dtype, "the compute dtype")
    left, right = op.left, op.right
    view_a, view_b = _fold(op.left_view), _fold(op.right_view)

    def compute(regs: list[Any], into: torch.Tensor) -> None:
        a, b = _cast(view_a(regs[left]), dtype), _cast(view_b(regs[right]), dtype)
        torch.mul(a, b, out=into)

    return _deliver(op.to, op.shape, dtype, compute)


def _matmul_fn(op: MatmulOp) -> OpFn:
    dtype = torch_dtype(op.dtype, "the compute dtype")
    left, right, out_shape, shape = op.left, op.right, op.out_shape, op.shape
    view_a, view_b = _fold(op.left_view), _fold(op.right_view)
    unfold = out_shape != shape

    def compute(regs: list[Any], into: torch.Tensor) -> None:
        target = into.view(out_shape) if unfold else into
        matmul_into(view_a(regs[left]), view_b(regs[right]), target)

    deliver = _deliver(op.to, shape, dtype, compute)
    if op.to.write not in (Write.NEW, Write.RETURN) or dtype == torch.bool:
        return deliver
    dst = op.to.dst
    # batch dimensions merged into one, where both views have the same (none broadcasts):
    # a view wherever they fold
    merged = _batch_merged(op.left_view.shape, op.right_view.shape)
    merges = [merged is not None]

    def run_new(regs: list[Any], dest: Any) -> None:
        # into a new tensor, mm/bmm allocate it themselves: a separate torch.empty and an
        # out= product (and for more batch dimensions matmul_into's folding, in Python)
        # cost 5-10 µs more per call, what a 4x4 product takes in all, and several times
        # that when a large product before has left the caches cold
        a, b = view_a(regs[left]), view_b(regs[right])
        if a.dtype == dtype and b.dtype == dtype:
            rank = a.dim()
            if rank == 2 == b.dim():
                product = mm(a, b)
                regs[dst] = product.view(shape) if unfold else product
                return
            if rank == 3 == b.dim() and a.shape[0] == b.shape[0]:
                product = torch.bmm(a, b)
                regs[dst] = product.view(shape) if unfold else product
                return
            if merged is not None and merges[0]:
                try:  # view never copies: it raises where the batch axes do not fold
                    a3, b3 = a.view(merged[0]), b.view(merged[1])
                except RuntimeError:
                    merges[0] = False  # the same layouts every call of this plan
                else:
                    regs[dst] = torch.bmm(a3, b3).view(shape)
                    return
        deliver(regs, dest)

    return run_new


def _batch_merged(
    left: tuple[int, ...], right: tuple[int, ...]
) -> tuple[tuple[int, int, int], tuple[int, int, int]] | None:
    """``(B.., M, K)`` and ``(B.., K, N)`` as ``(B, M, K)`` and ``(B, K, N)``, for two
    batch dimensions or more of the same sizes on both sides (None: otherwise).

    >>> _batch_merged((2, 3, 5, 4), (2, 3, 4, 6))
    ((6, 5, 4), (6, 4, 6))
    >>> _batch_merged((2, 3, 1, 5, 4), (2, 1, 3, 4, 6)) is None     # broadcast loops
    True
    """
    if len(left) < 4 or left[:-2] != right[:-2]:
        return None
    batch = math.prod(left[:-2])
    return (batch, left[-2], left[-1]), (batch, right[-2], right[-1])


def _fused_fn(op: FusedOp) -> OpFn:
    dtype = torch_dtype(op.dtype, "the compute dtype")
    operands, views, summed, out_perm = op.operands, op.views, op.summed, op.out_perm
    kernel = _sum_kernel(summed, dtype) if summed else None

    def compute(regs: list[Any], into: torch.Tensor) -> None:
        product: torch.Tensor | None = None
        for reg, (shape, strides) in zip(operands, views):
            x = regs[reg]
            x = _cast(torch.as_strided(x, shape, strides, x.storage_offset()), dtype)
            product = x if product is None else product * x
        assert product is not None
        value = product if kernel is None else kernel(product, None)
        assign(into, value.permute(out_perm))

    return _deliver(op.to, op.shape, dtype, compute)


# -- the matrix product -------------------------------------------------------------------------


def matmul_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """``out[...] = a @ b`` for ``(B.., M, K) @ (B.., K, N)`` (batch dims broadcast to
    ``out``'s), without copying ``a``, ``b`` or ``out``: batch dimensions that fold in all
    three become one ``bmm`` batch, the others are looped over."""
    if out.dtype == torch.bool:
        _bool_matmul_into(a, b, out)
        return
    if out.stride(-1) != 1 and out.stride(-2) == 1:
        # torch's mm/bmm into a column-major ``out`` go through a temporary and a copy
        # (twice the time for a 64x128x128 bmm); out^T = b^T a^T writes it in place
        a, b, out = b.mT, a.mT, out.mT
    batch = out.shape[:-2]
    if not batch:
        mm(a, b, out)
        return
    if a.shape[:-2] == batch == b.shape[:-2]:
        try:  # view never copies: it raises where the batch axes do not fold (looped below)
            a3, b3 = a.view(-1, *a.shape[-2:]), b.view(-1, *b.shape[-2:])
            o3 = out.view(-1, *out.shape[-2:])
        except RuntimeError:
            pass
        else:
            torch.bmm(a3, b3, out=o3)
            return
    a = a.expand(*batch, *a.shape[-2:])
    b = b.expand(*batch, *b.shape[-2:])
    a3, b3, o3, loops = _fold_batch(a, b, out)
    if not loops:
        torch.bmm(a3, b3, out=o3)
        return
    for index in itertools.product(*(range(n) for n in loops)):
        torch.bmm(a3[index], b3[index], out=o3[index])


def _fold_batch(
    a: torch.Tensor, b: torch.Tensor, out: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[int, ...]]:
    """(a, b, out) viewed as ``(loops..., B, rows, cols)``: size-1 batch dims dropped, runs
    of batch dims that fold in all three merged, the innermost run the ``bmm`` batch."""
    axes = [ax for ax in range(out.dim() - 2) if out.shape[ax] != 1]
    runs: list[list[int]] = []
    for ax in axes:
        if runs and all(t.stride(runs[-1][-1]) == t.stride(ax) * t.shape[ax] for t in (a, b, out)):
            runs[-1].append(ax)
        else:
            runs.append([ax])
    if not runs:
        runs = [[]]
    sizes = [math.prod(out.shape[ax] for ax in run) for run in runs]

    def viewed(t: torch.Tensor) -> torch.Tensor:
        # strides: each run's innermost axis; a run folds, so this is a view
        strides = [t.stride(run[-1]) if run else 0 for run in runs]
        return torch.as_strided(
            t, (*sizes, *t.shape[-2:]), (*strides, *t.stride()[-2:]), t.storage_offset()
        )

    return viewed(a), viewed(b), viewed(out), tuple(sizes[:-1])


def _bool_matmul_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """OR of ANDs (torch has no bool matrix product): counted in int64, then ``!= 0``."""
    counts = torch.matmul(a.to(torch.int64), b.to(torch.int64))
    out.copy_(counts != 0)


# -- the destination and the result -------------------------------------------------------------


ZEROS_FROM_CALLOC_BYTES = 1 << 20
"""A zeroed CPU result this large is NumPy's (``calloc``: the system's zero pages, faulted
in only where written) rather than ``torch.zeros`` (which writes every byte).  A diagonal
expansion writes a sliver of it: the trace's gradient of 2048 x 2048 float64 takes 4 ms
so against 14 ms, 6 against 20 ms when it is then read in full."""


def _destination(
    output: Destination,
) -> Callable[[torch.Tensor | None, torch.device], tuple[Any, Any]]:
    """Creates (or takes ``out=``) the result tensor and its write view: when output labels
    repeat, the strided view whose stride per distinct label is the sum of its axes'."""
    create, shape, groups = output.create, output.shape, output.expand
    dtype = torch_dtype(output.dtype, "the result dtype")
    ushape = tuple(shape[axes[0]] for axes in groups) if groups is not None else ()
    # the plan's NumPy dtype, where torch.from_numpy takes it (not ml_dtypes' bfloat16)
    calloc = output.dtype.kind in "biufc" and (
        math.prod(shape) * output.dtype.itemsize >= ZEROS_FROM_CALLOC_BYTES
    )

    def write_view(full: torch.Tensor) -> torch.Tensor:
        if groups is None:
            return full
        strides = tuple(sum(full.stride(ax) for ax in axes) for axes in groups)
        return torch.as_strided(full, ushape, strides, full.storage_offset())

    def make(out: torch.Tensor | None, device: torch.device) -> tuple[Any, Any]:
        match create:
            case "none":
                return None, None
            case "out":
                assert out is not None
                if groups is not None:
                    out.zero_()
                full = out
            case "zeros":
                if calloc and device == CPU:
                    full = torch.from_numpy(np.zeros(shape, output.dtype))
                else:
                    full = torch.zeros(shape, dtype=dtype, device=device)
            case "empty":
                full = torch.empty(shape, dtype=dtype, device=device)
            case _:
                assert_never(create)
        return full, write_view(full)

    return make


def _finisher(output: Destination, n_inputs: int) -> Callable[[Any, list[Any]], torch.Tensor]:
    result, final_perm = output.result, output.final_perm
    identity = final_perm == tuple(range(len(final_perm)))

    def finish(full: Any, regs: list[Any]) -> torch.Tensor:
        if full is not None:
            found: torch.Tensor = full
            return found
        value: torch.Tensor = regs[result]
        if not identity:
            return value.permute(final_perm)
        # a pure view of an operand: a new view object, as NumPy returns
        return value.view(value.shape) if result < n_inputs else value

    return finish
