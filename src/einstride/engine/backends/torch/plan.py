"""Plans for torch operands: the NumPy planner on the tensors' shapes, byte strides and
dtypes, translated to torch records and compiled, in a thread-safe LRU.

The cache key holds every fact a plan depends on: the equation key, every operand's shape,
element strides and torch dtype (the dtype gives the bytes), ``out=``'s, ``dtype=``, the
path option and the planner options, as the NumPy backend's cache does.  The options are
NumPy's defaults with fusing off (one pass of NumPy's sum-of-products loop is not a torch
kernel) and no thread splits (torch runs its kernels on its own threads).

>>> import torch
>>> a = torch.ones(3, 2).T                      # a transposed view
>>> entry = entry_for("ij,jk->ik", facts_of([a, a.T]), None, None, "auto")
>>> entry is entry_for("ij,jk->ik", facts_of([a, a.T]), None, None, "auto")
True
>>> entry.result, entry.output_shape, entry.run([a, a.T], None).tolist()
(torch.float32, (2, 2), [[3.0, 3.0], [3.0, 3.0]])
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ....errors import EinsumError
from ...call import equation_of
from ...spec.equation import bind
from ...spec.paths import optimize_key
from ..numpy.cache import CLEAR_HOOKS
from ..numpy.options import PlannerOptions, default_options
from ..numpy.plan import build_plan
from ..numpy.steps import Plan
from .dtypes import numpy_dtype, result_dtype, torch_dtype
from .execute import Run, compile_program
from .operands import Facts, byte_strides, facts_of
from .records import MatmulOp, TorchProgram, largest_bytes, peak_bytes, translate

__all__ = [
    "CACHE_SIZE",
    "Entry",
    "clear_cache",
    "entry_for",
    "facts_of",
    "make_entry",
    "planner_options",
]

CACHE_SIZE = 512


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """A cached plan: the NumPy plan (for reports), its torch program and compiled ``run``,
    the torch result dtype, the output shape, the largest single allocation, the peak (the
    most bytes its allocations hold at once), whether a matrix product runs in an integer
    (or bool) dtype, and ``memo``: what later calls on it reuse (the step-by-step equations
    of :mod:`.stepwise`, the gradients' plans per cotangent layout of :mod:`.autograd`)."""

    text: str
    plan: Plan
    program: TorchProgram
    run: Run
    result: torch.dtype
    output_shape: tuple[int, ...]
    largest: int
    peak: int
    integer_products: bool
    memo: dict[Any, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)


@functools.lru_cache(maxsize=8)
def _options_for(defaults: PlannerOptions) -> PlannerOptions:
    # MKL (torch's CPU matmul) runs a tall, narrow row-major result about 2x slower than
    # the same product the other way round, and two transposed operands 1.5-3x slower
    # unless the result is wide (measured): NumPy's BLAS preferences do not carry over
    return dataclasses.replace(
        defaults,
        threads=1,
        loop_ns=math.inf,
        transposed_cost=0.15,
        both_transposed_cost=1.0,
        wide_cost=0.0,
        tall_cost=1.0,
        into_ns=50000.0,
    )


def planner_options() -> PlannerOptions:
    """The planner options of torch plans: the defaults, never fused, never split.

    >>> planner_options().loop_ns, planner_options().threads
    (inf, 1)
    """
    return _options_for(default_options())


def make_entry(
    eq_key: Any,
    facts: Facts,
    out_facts: Facts | None,
    dtype: np.dtype[Any] | None,
    optimize: Any,
    options: PlannerOptions | None = None,
) -> Entry:
    """Parse, bind, plan (with ``options``, default :func:`planner_options`), translate and
    compile (no cache)."""
    shapes = [tuple(shape) for shape in facts[0::3]]
    dtypes: list[torch.dtype] = list(facts[2::3])
    np_dtypes = [numpy_dtype(d, f"operand {i} has dtype") for i, d in enumerate(dtypes)]
    spec = bind(equation_of(eq_key), shapes)
    result = (
        torch_dtype(dtype, "dtype=")
        if dtype is not None
        else result_dtype([(d, len(s)) for d, s in zip(dtypes, shapes)])
    )
    out = None
    if out_facts is not None:
        out_shape, out_strides, out_dtype = out_facts
        if tuple(out_shape) != spec.output_shape:
            raise EinsumError(
                f"einsum {spec.text!r}: out= has shape {tuple(out_shape)}, but "
                f"the result has shape {spec.output_shape}"
            )
        out = (byte_strides(out_strides, out_dtype), numpy_dtype(out_dtype, "out= has dtype"))
    strides = [byte_strides(s, d) for s, d in zip(facts[1::3], dtypes)]
    plan = build_plan(
        spec,
        np_dtypes,
        strides,
        out=out,
        dtype=numpy_dtype(result, "the result has dtype"),
        optimize=optimize,
        options=planner_options() if options is None else options,
    )
    program = translate(plan)
    integer = any(isinstance(op, MatmulOp) and op.dtype.kind in "biu" for op in program.steps)
    return Entry(
        text=spec.text,
        plan=plan,
        program=program,
        run=compile_program(program),
        result=result,
        output_shape=spec.output_shape,
        largest=largest_bytes(plan),
        peak=peak_bytes(plan),
        integer_products=integer,
    )


@functools.lru_cache(maxsize=CACHE_SIZE)
def _cached(
    eq_key: Any,
    facts: Facts,
    out_facts: Facts | None,
    dtype: np.dtype[Any] | None,
    opt_key: Any,
    options: PlannerOptions,
) -> Entry:
    optimize = list(opt_key[1:]) if isinstance(opt_key, tuple) else opt_key
    return make_entry(eq_key, facts, out_facts, dtype, optimize, options)


def entry_for(
    eq_key: Any, facts: Facts, out_facts: Facts | None, dtype: np.dtype[Any] | None, optimize: Any
) -> Entry:
    """The cached entry (optimizer objects are planned afresh: they may keep state)."""
    options = planner_options()
    opt_key = optimize_key(optimize)
    if opt_key is None:
        return make_entry(eq_key, facts, out_facts, dtype, optimize, options)
    return _cached(eq_key, facts, out_facts, dtype, opt_key, options)


def clear_cache() -> None:
    """Forget every cached torch plan (``einstride.clear_plan_cache()`` calls this too, once
    the torch backend is loaded)."""
    _cached.cache_clear()


CLEAR_HOOKS.append(clear_cache)
