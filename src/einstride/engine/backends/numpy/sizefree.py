"""Size-free programs: a plan compiled to read every size from the arrays it is given.

:func:`.execute.compile_plan` specialises a program on the plan's shapes (a reshape to
``(64, 32)``, an output of ``(8, 64, 16)``). A plan of a shape class (:mod:`.skeleton`)
makes the same decisions for every shape of the class, so the same steps, with the sizes
read at run time (a reshape that merges the axes of a group, an output of the operands'
label sizes), run the plan of every shape of the class. :func:`compile_generic` builds such
a program from the class's plan, with the same kernels as the compiled plan; a step whose
kernel needs a planned size (a product of split chunks, a loop over looped labels) makes
the plan's program not size-free (None).

>>> import numpy as np
>>> from ...spec.equation import parse_equation
>>> from .plan import build_plan
>>> a, b = np.ones((4, 3, 5)), np.ones((5, 6))
>>> plan = build_plan(parse_equation("bij,jk->bik", a.shape, b.shape), (a.dtype,) * 2,
...                   (a.strides, b.strides))
>>> run = compile_generic(plan, ((0, 0), (0, 1), (0, 2), (1, 1)))
>>> run((np.ones((7, 2, 5)), b), None).shape          # another shape of the class
(7, 2, 6)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from ...._compat import assert_never
from .delivery import Delivery, OutputCreation
from .execute import (
    Array,
    KernelFn,
    Program,
    ShapeOf,
    StepFn,
    chunked,
    compile_simple,
    copy_kernel,
    delivered,
    destination,
    fused_call,
    loop_kernel,
    matmul_only,
    operands_reader,
    pair_reader,
    program_of,
    reduce_kernel,
    reshape_view,
    view_step,
)
from .steps import (
    BatchStep,
    ContractStep,
    CopyStep,
    FusedStep,
    Kernel,
    Plan,
    ReduceStep,
    Step,
    ViewStep,
)

__all__ = ["Where", "compile_generic"]

Where = tuple[tuple[int, int], ...]
"""Per label id: an operand and an axis of it that has the label's size."""


def compile_generic(plan: Plan, where: Where) -> Program | None:
    """The plan's program reading every size from the operands (``where``), or None when a
    step needs a planned size."""
    steps, output = plan.steps, plan.output
    if output.create is OutputCreation.OUT:
        return None
    if not steps or (
        len(steps) == 1 and output.create is OutputCreation.NONE and _simple(steps[0])
    ):
        return compile_simple(plan)
    fns: list[StepFn] = []
    for step in steps:
        fn = _generic_step(step)
        if fn is None:
            return None
        fns.append(fn)
    return program_of(plan, fns, destination(output, _shape_reader(output.labels, where)))


def _simple(step: Step) -> bool:
    """The one-step closures of :func:`.execute.compile_simple` that read no planned size:
    axis indices, NumPy's loop over label lists, a split reading its shapes at run time,
    matmul of the operands as they are."""
    return isinstance(step, (ViewStep, FusedStep, ReduceStep)) or (
        isinstance(step, ContractStep) and matmul_only(step)
    )


def _shape_reader(labels: Sequence[int], where: Where) -> ShapeOf:
    """``shape_of(operands)``: the sizes of ``labels``."""
    found = [where[label] for label in labels]
    return lambda ops: tuple([ops[op].shape[ax] for op, ax in found])


def _input_reader(labels: Sequence[int], inputs: Sequence[Sequence[int]]) -> ShapeOf:
    """``shape_of(arrays)``: the sizes of ``labels``, read from arrays whose axes carry
    ``inputs`` (each label from the first array that has it)."""
    found = []
    for label in labels:
        k = next(k for k, held in enumerate(inputs) if label in held)
        found.append((k, list(inputs[k]).index(label)))
    return lambda arrays: tuple([arrays[k].shape[ax] for k, ax in found])


def _generic_step(step: Step) -> StepFn | None:
    """A step's closure with every size read at run time, or None."""
    match step:
        case ViewStep():
            return view_step(step)
        case CopyStep():
            return delivered(
                copy_kernel(step), operator.itemgetter(step.src), step.dst, step.delivery
            )
        case FusedStep():
            return delivered(
                fused_call(step), operands_reader(step.operands), step.dst, step.delivery
            )
        case ReduceStep():
            source = [0] * (len(step.axes) + len(step.kept))
            kept_axes = [ax for ax in range(len(source)) if ax not in step.axes]
            for ax, label in zip(step.axes, step.summed):
                source[ax] = label
            for ax, label in zip(kept_axes, step.kept):
                source[ax] = label
            found = [source.index(label) for label in step.labels]
            buffer: ShapeOf = lambda x: tuple([x.shape[ax] for ax in found])  # noqa: E731
            return delivered(
                reduce_kernel(step), operator.itemgetter(step.src), step.dst, step.delivery,
                read_buffer=(buffer, step.dtype),
            )  # fmt: skip
        case ContractStep():
            return delivered(_generic_contract(step), pair_reader(step), step.dst, step.delivery)
        case BatchStep() if step.delivery.mode is not Delivery.TEMP:
            if step.delivery.mode is Delivery.RETURN:
                return None  # its kernel allocates the planned shape
            pair = _input_reader(step.labels, [step.left.labels, step.right.labels])
            return delivered(
                _generic_batch(step), pair_reader(step), step.dst, step.delivery,
                read_buffer=(pair, step.dtype),
            )  # fmt: skip
        case BatchStep():
            return None
        case _:
            assert_never(step)


def _generic_contract(step: ContractStep) -> KernelFn:
    """``contract((a, b), out=None)``: the compiled plan's contract kernel with every shape
    read from ``a`` and ``b``.  ``a`` viewed as ``(batch, loop M, 1.., loop K, M, K)`` and
    ``b`` as ``(batch, 1.., loop N, loop K, K, N)`` (each group folded by a reshape that the
    plan's class guarantees is a view, a size-1 axis for the other's looped free labels),
    their product unfolded to the register's labels (batch + looped + M + N) or written
    into ``out`` through such a view."""
    g, geo, looped = step.groups, step.geometry, set(step.looped)
    nb = len(g.batch)
    lm = sum(1 for x in g.left_free if x in looped)
    ln = sum(1 for x in g.right_free if x in looped)
    lk = sum(1 for x in g.contracted if x in looped)
    nm, nk = len(g.left_free) - lm, len(g.contracted) - lk
    perm_a, perm_b = geo.left.perm, geo.right.perm
    keep_a = perm_a == tuple(range(len(perm_a)))
    keep_b = perm_b == tuple(range(len(perm_b)))
    plain = (lm, ln, lk) == (0, 0, 0)
    fold_a = not plain or (nm, nk) != (1, 1)
    fold_b = not plain or (nk, len(g.right_free) - ln) != (1, 1)
    am, ak = nb + lm + lk, nb + lm + lk + nm  # where a's M and K axes start
    bk = nb + ln + lk  # where b's K axes start
    prod = math.prod

    def contract(pair: Sequence[Array], out: Array | None = None) -> Array:
        a, b = pair
        if not keep_a:
            a = a.transpose(perm_a)
        if not keep_b:
            b = b.transpose(perm_b)
        sa, sb = a.shape, b.shape
        if fold_a:
            a = a.reshape(
                sa[: nb + lm] + (1,) * ln + sa[nb + lm : am] + (prod(sa[am:ak]), prod(sa[ak:]))
            )
        if fold_b:
            b = b.reshape(
                sb[:nb] + (1,) * lm + sb[nb:bk] + (prod(sb[bk : bk + nk]), prod(sb[bk + nk :]))
            )
        loops = sa[: nb + lm] + sb[nb : nb + ln] + sa[nb + lm : am]
        if out is not None:
            np.matmul(a, b, out=reshape_view(out, loops + (a.shape[-2], b.shape[-1])))
            return out
        c: Array = np.matmul(a, b)
        if fold_a or fold_b:
            c = c.reshape(loops + sa[am:ak] + sb[bk + nk :])
        return c

    return contract


def _generic_batch(step: BatchStep) -> KernelFn:
    """The batch kernel (into ``out``, always given here): NumPy's loop over the registers'
    own labels, or ``numpy.multiply`` of views that line up with the output (size 1 where
    an operand lacks a label), the views made from the operands' own shapes."""
    split = step.split
    if step.kernel is Kernel.LOOP:
        kernel = loop_kernel(step)
        if split is None:
            return kernel
        in_axes = [labels.index(split.label) if split.label in labels else -1
                   for labels in (step.left.labels, step.right.labels)]  # fmt: skip
        loop_chunks = chunked(lambda a, b, out: kernel((a, b), out), in_axes,
                              step.labels.index(split.label), split.threads,
                              pieces=True)  # fmt: skip

        def loop_split(pair: Sequence[Array], out: Array | None = None) -> Array:
            assert out is not None
            loop_chunks(pair[0], pair[1], out)
            return out

        return loop_split
    g, dtype = step.groups, step.dtype
    nb, nl, nr, nc = len(g.batch), len(g.left_free), len(g.right_free), len(g.contracted)
    perm_a, perm_b = step.geometry.left.perm, step.geometry.right.perm

    def product(a: Array, b: Array, out: Array) -> None:
        np.multiply(a, b, out=out, dtype=dtype, casting="unsafe")

    # the views line up with the output's axes (size 1 where they broadcast)
    run = product
    if split is not None:
        axis = step.labels.index(split.label)
        run = chunked(product, [axis, axis], axis, split.threads, pieces=True)

    def multiply(pair: Sequence[Array], out: Array | None = None) -> Array:
        assert out is not None
        a, b = pair
        a = a.transpose(perm_a)  # batch + left-free + contracted (of size 1)
        b = b.transpose(perm_b)  # batch + contracted + right-free
        a = a.reshape(a.shape[: nb + nl] + (1,) * nr)
        b = b.reshape(b.shape[:nb] + (1,) * nl + b.shape[nb + nc :])
        run(a, b, out)
        return out

    return multiply
