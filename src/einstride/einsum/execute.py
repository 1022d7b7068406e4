"""Run a :class:`~einstride.einsum.steps.Plan`: it follows the plan's steps and nothing else.

:func:`compile_plan` turns a plan into one Python callable (a closure per step, made once
and cached with the plan), so a repeated einsum costs a few NumPy calls and no decisions.

>>> import numpy as np
>>> from .equation import parse_equation
>>> from .plan import build_plan
>>> a = np.arange(6.0).reshape(2, 3)
>>> run = compile_plan(build_plan(parse_equation("ij->j", a.shape), (a.dtype,), (a.strides,)))
>>> run((a,), None)
array([3., 5., 7.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .steps import (
    WRITE_INTO,
    WRITE_NEW,
    WRITE_TEMP,
    BatchStep,
    ContractStep,
    CopyStep,
    OutputPlan,
    Plan,
    ReduceStep,
    Step,
    ViewStep,
)

__all__ = ["Program", "compile_plan"]

Array = np.ndarray[Any, Any]
StepFn = Callable[[list[Any], Any], None]
Program = Callable[[Sequence[Array], "Array | None"], Any]


def compile_plan(plan: Plan) -> Program:
    """The plan as one callable ``run(operands, out) -> result`` (ndarray or NumPy scalar)."""
    fns = [_compile_step(step) for step in plan.steps]
    frees = plan.frees
    n_regs, n_in = plan.n_registers, len(plan.spec.inputs)
    make_dest = _destination(plan.output)
    result, final_perm = plan.output.result, plan.output.final_perm
    identity = final_perm == tuple(range(len(final_perm)))
    scalar = not plan.output.shape
    work = [(fn, free) for fn, free in zip(fns, frees)]

    def run(operands: Sequence[Array], out: Array | None) -> Any:
        regs: list[Any] = [*operands, *([None] * (n_regs - n_in))]
        full, dest = make_dest(out)
        for fn, free in work:
            fn(regs, dest)
            for reg in free:
                regs[reg] = None
        if full is not None:
            return full if out is not None or not scalar else full[()]
        value = regs[result]
        if not identity:
            value = value.transpose(final_perm)
        return value[()] if scalar else value

    return run


def _destination(output: OutputPlan) -> Callable[[Array | None], tuple[Any, Any]]:
    """Creates (or takes ``out=``) the result array and its write view."""
    create, shape, dtype = output.create, output.shape, output.dtype
    groups = output.expand if output.expands else None
    ushape = tuple(shape[axes[0]] for axes in output.expand)

    def write_view(full: Array) -> Array:
        if groups is None:
            return full
        strides = tuple(sum(full.strides[ax] for ax in axes) for axes in groups)
        return as_strided(full, ushape, strides, writeable=True)

    def make(out: Array | None) -> tuple[Any, Any]:
        if create == "none":
            return None, None
        if create == "out":
            assert out is not None
            if groups is not None:
                out.fill(0)
            full = out
        else:
            full = np.zeros(shape, dtype) if create == "zeros" else np.empty(shape, dtype)
        return full, write_view(full)

    return make


def _compile_step(step: Step) -> StepFn:
    if isinstance(step, ViewStep):
        return _view_fn(step)
    if isinstance(step, ReduceStep):
        return _reduce_fn(step)
    if isinstance(step, CopyStep):
        return _copy_fn(step)
    if isinstance(step, ContractStep):
        return _contract_fn(step)
    return _batch_fn(step)


def _view_fn(step: ViewStep) -> StepFn:
    src, dst, squeeze, diagonals = step.src, step.dst, step.squeeze, step.diagonals

    def run(regs: list[Any], dest: Any) -> None:
        x = regs[src]
        if squeeze:
            x = x.squeeze(axis=squeeze)
        for a, b in diagonals:
            x = x.diagonal(0, a, b)
        regs[dst] = x

    return run


def _reduce_fn(step: ReduceStep) -> StepFn:
    src, dst, axes, dtype, shape = step.src, step.dst, step.axes, step.dtype, step.shape
    reduce = (np.logical_or if dtype == np.bool_ else np.add).reduce
    write, dest_perm = step.write, step.dest_perm
    buf_perm = tuple(step.labels.index(lab) for lab in step.kept)

    def run(regs: list[Any], dest: Any) -> None:
        x = regs[src]
        if write == WRITE_NEW:
            buf = np.empty(shape, dtype)
            reduce(x, axis=axes, dtype=dtype, out=buf.transpose(buf_perm))
            regs[dst] = buf
        elif write == WRITE_INTO:
            reduce(x, axis=axes, dtype=dtype, out=dest.transpose(dest_perm))
        elif write == WRITE_TEMP:
            np.copyto(dest.transpose(dest_perm), reduce(x, axis=axes, dtype=dtype),
                      casting="unsafe")
        else:
            regs[dst] = reduce(x, axis=axes, dtype=dtype)

    return run


def _copy_fn(step: CopyStep) -> StepFn:
    src, dst, perm, dtype = step.src, step.dst, step.perm, step.dtype
    into, dest_perm = step.write == WRITE_INTO, step.dest_perm

    def run(regs: list[Any], dest: Any) -> None:
        x = regs[src].transpose(perm)
        if into:
            np.copyto(dest.transpose(dest_perm), x, casting="unsafe")
        else:
            regs[dst] = x.astype(dtype, order="C")

    return run


def _operand_view(perm: tuple[int, ...], shape: tuple[int, ...]) -> Callable[[Array], Array]:
    """transpose + reshape, each skipped when it would change nothing."""
    if perm == tuple(range(len(perm))):
        return lambda x: x if x.shape == shape else x.reshape(shape)
    return lambda x: x.transpose(perm).reshape(shape)


def _contract_fn(step: ContractStep) -> StepFn:
    left, right, dst = step.left, step.right, step.dst
    view_a = _operand_view(step.left_perm, step.left_shape)
    view_b = _operand_view(step.right_perm, step.right_shape)
    out_shape, shape, write, dest_perm = step.out_shape, step.shape, step.write, step.dest_perm
    batched = len(out_shape) > 2
    dtype = step.dtype
    matmul = np.matmul

    def product(a: Array, b: Array) -> Array:
        if not batched:
            product: Array = matmul(a, b)
            return product
        c = np.empty(out_shape, dtype)
        matmul(a, b, out=c)
        return c

    def run(regs: list[Any], dest: Any) -> None:
        a, b = view_a(regs[left]), view_b(regs[right])
        if write == WRITE_INTO:
            matmul(a, b, out=dest.transpose(dest_perm).reshape(out_shape))
            return
        c = product(a, b).reshape(shape)
        if write == WRITE_TEMP:
            np.copyto(dest.transpose(dest_perm), c, casting="unsafe")
        else:
            regs[dst] = c

    return run


def _batch_fn(step: BatchStep) -> StepFn:
    left, right, dst, dtype, shape = step.left, step.right, step.dst, step.dtype, step.shape
    view_a = _operand_view(step.left_perm, step.left_shape)
    view_b = _operand_view(step.right_perm, step.right_shape)
    write, dest_perm = step.write, step.dest_perm
    multiply = np.multiply

    def run(regs: list[Any], dest: Any) -> None:
        a, b = view_a(regs[left]), view_b(regs[right])
        if write == WRITE_INTO:
            multiply(a, b, out=dest.transpose(dest_perm), dtype=dtype, casting="unsafe")
            return
        c = np.empty(shape, dtype)
        multiply(a, b, out=c, dtype=dtype, casting="unsafe")
        if write == WRITE_TEMP:
            np.copyto(dest.transpose(dest_perm), c, casting="unsafe")
        else:
            regs[dst] = c

    return run
