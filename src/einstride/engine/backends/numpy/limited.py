"""einsum within a memory limit: ``memory_limit`` bounds the peak of the whole call.

A call whose plan peaks within the limit runs its plan (the callers check that with one
comparison against the cached entry's peak; nothing here runs then).  Otherwise, in order:

1. a result (without ``out=``) larger than the limit raises :class:`EinsumError`;
2. the path is searched again within the limit (opt_einsum's ``memory_limit``, for path
   finder names; an explicit path or a path optimizer object is kept);
3. the plan along the original path is sliced (:mod:`.sliced`): the labels and chunk widths
   come from :func:`~...spec.slicing.find_slicing` over a model of the path, checked
   against the real plans' peaks (and searched again with a lower target if they are over);
4. the cheaper of 2 and 3 in FLOPs runs; when neither fits, :class:`EinsumError` names the
   bytes needed and allowed.

Everything is decided before anything is allocated, and cached per call signature.

>>> import numpy as np
>>> a, b, c = np.ones((64, 64)), np.ones((64, 64, 64)), np.ones((64, 64))
>>> limited = limited_plan("ab,cbe,ae->ac", facts_of([a, b, c]), None, None, "auto", 2**19)
>>> plan_peak(limited.base) > 2**19 >= limited.peak
True
>>> limited.sliced.slicing.describe(limited.base.spec.names)
'a: 5 chunks of 13 (the last 12)'
>>> np.array_equal(limited.run((a, b, c), None), np.einsum("ab,cbe,ae->ac", a, b, c))
True
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....errors import EinsumError
from ...call import equation_of
from ...spec.equation import bind, quoted
from ...spec.paths import FoundPath, find_path, finder_form, optimize_key, optimize_of_key
from ...spec.slicing import MAX_SLICES, PathModel, find_slicing, make_slicing, path_model
from ...spec.walk import search_problem
from .cache import CLEAR_HOOKS, facts_of
from .execute import Program, compile_plan, spread_program
from .fold import contiguous_strides
from .generic import LIMITED_RUNNERS, Entry
from .options import PlannerOptions, default_options
from .peak import TEMPORARY, plan_peak
from .plan import InnerCall, build_plan, inner_call, spread_plan
from .report import format_plan, spread_lines
from .sliced import SlicedPlan, build_sliced, compile_sliced, format_sliced
from .steps import CopyStep, Plan, ReduceStep, ViewStep

__all__ = [
    "Limited",
    "check_result",
    "explain_within",
    "limited_plan",
    "run_limited",
    "run_over_limit",
    "shape_facts",
]

Array = np.ndarray[Any, Any]
OutFacts = tuple[tuple[int, ...], np.dtype[Any]]
ATTEMPTS = 6  # slicing searches, each with a lower target when the real peak was over
CACHE_SIZE = 128


@dataclass(frozen=True, slots=True, kw_only=True)
class Limited:
    """What runs within ``limit``: the call's unsliced ``base`` plan, the ``plan`` that runs
    (``base``, or the plan of a path searched within the limit) or its ``sliced`` form;
    ``unlimited_peak`` is the peak of the plan the call runs without a limit (``base``'s,
    unless ``base`` is that plan with its BLAS sums run by NumPy's loop instead, which
    allocates no vector of ones)."""

    limit: int
    base: Plan
    plan: Plan
    sliced: SlicedPlan | None
    run: Program
    peak: int
    unlimited_peak: int


def limited_plan(
    eq_key: Any, facts: tuple[Any, ...], out_facts: Any, dtype: Any, optimize: Any, limit: int
) -> Limited:
    """The :class:`Limited` plan for these operand facts (``(shape, strides, dtype)`` per
    operand, as the plan cache keys them), cached unless ``optimize`` is an object."""
    opt_key, options = optimize_key(optimize), default_options()
    try:
        hash((eq_key, facts, out_facts, dtype, opt_key))
    except TypeError:
        opt_key = None
    if opt_key is None:
        return _decide(eq_key, facts, out_facts, dtype, optimize, limit, options)
    return _cached(eq_key, facts, out_facts, dtype, opt_key, limit, options)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _cached(
    eq_key: Any,
    facts: tuple[Any, ...],
    out_facts: Any,
    dtype: Any,
    opt_key: Any,
    limit: int,
    options: PlannerOptions,
) -> Limited:
    # the planner options are part of the key, as of every plan cache (a review: a plan
    # split over 4 threads ran on after set_num_threads(1))
    optimize = optimize_of_key(opt_key)
    return _decide(eq_key, facts, out_facts, dtype, optimize, limit, options)


def run_limited(
    eq_key: Any, arrays: Sequence[Array], out: Array | None, dtype: Any, optimize: Any, limit: int
) -> Any:
    """Run an einsum whose plan peaks over ``limit`` (see the module doc)."""
    out_facts = None if out is None else (out.shape, out.strides, out.dtype)
    return limited_plan(eq_key, facts_of(arrays), out_facts, dtype, optimize, limit).run(
        arrays, out
    )


def run_over_limit(
    entry: Entry,
    eq_key: Any,
    arrays: Sequence[Array],
    out: Array | None,
    dtype: Any,
    optimize: Any,
    limit: int,
) -> Any:
    """Run a call whose cached ``entry`` peaks over ``limit``: its plan where, built, it
    fits (a class's first call runs directly, :meth:`.generic.Entry.settle_over_limit`; a
    network's entry keeps its direct program), else the direct way where that fits
    (:meth:`.generic.Entry.fitting`: the same outcome at every call), else
    :func:`run_limited`."""
    entry.settle_over_limit()
    if entry.peak <= limit:
        return entry.run(arrays, out)
    fitting = entry.fitting(limit)
    if fitting is not None:
        return fitting(arrays, out)
    return run_limited(eq_key, arrays, out, dtype, optimize, limit)


LIMITED_RUNNERS.append(run_limited)


def shape_facts(shapes_dtypes: Sequence[tuple[tuple[int, ...], np.dtype[Any]]]) -> tuple[Any, ...]:
    """The facts of C-contiguous operands of these shapes and dtypes."""
    facts: list[Any] = []
    for shape, dt in shapes_dtypes:
        facts += (shape, contiguous_strides(shape, dt.itemsize), dt)
    return tuple(facts)


def _decide(
    eq_key: Any,
    facts: tuple[Any, ...],
    out_facts: Any,
    dtype: Any,
    optimize: Any,
    limit: int,
    options: PlannerOptions,
) -> Limited:
    """Plan with ``options``, then (over the limit) search a path, slice, or raise: see the
    module doc."""
    spec = bind(equation_of(eq_key), facts[0::3])
    out = None if out_facts is None else (tuple(out_facts[1]), np.dtype(out_facts[2]))
    call = inner_call(spec, facts[2::3], facts[1::3], out=out, dtype=dtype)
    if call is not None and len(spec.inputs) > 1:
        read = _read_once(call, facts[2::3], out_facts, dtype, optimize, limit)
        if read is not None:
            return read
    base = build_plan(
        spec, facts[2::3], facts[1::3], out=out, dtype=dtype, optimize=optimize, options=options
    )
    peak = unlimited = plan_peak(base)
    if peak > limit and _scratch(base):
        # without a BLAS reduction's vector of ones: the loop allocates nothing more, and
        # the slicer's model knows the loop's bytes only
        options = dataclasses.replace(options, ones_max=0)
        base = build_plan(
            spec, facts[2::3], facts[1::3], out=out, dtype=dtype, optimize=optimize,
            options=options,
        )  # fmt: skip
        peak = plan_peak(base)
    if peak <= limit:
        return Limited(
            limit=limit,
            base=base,
            plan=base,
            sliced=None,
            run=compile_plan(base),
            peak=peak,
            unlimited_peak=unlimited,
        )
    check_result(base, out is None, limit)
    repathed = _repath(base, out, optimize, limit, options)
    # the plan of a slice may copy operands that the unsliced plan copies, or not: try both
    models = dict.fromkeys(
        path_model(spec, base.path, copied=copied)
        for copied in (frozenset(), _copied_operands(base))
    )
    found = [
        sliced
        for model in models
        if (sliced := _slice(base, model, out, limit, options)) is not None
    ]
    sliced = min(found, key=lambda s: (s.slicing.cost, s.slicing.n_slices, s.peak), default=None)
    if repathed is not None and (sliced is None or _flops(repathed) <= sliced.slicing.cost):
        return Limited(
            limit=limit,
            base=base,
            plan=repathed,
            sliced=None,
            run=compile_plan(repathed),
            peak=plan_peak(repathed),
            unlimited_peak=unlimited,
        )
    if sliced is None:
        raise _cannot_fit(base, path_model(spec, base.path), out, limit, peak)
    return Limited(
        limit=limit,
        base=base,
        plan=base,
        sliced=sliced,
        run=compile_sliced(sliced),
        peak=sliced.peak,
        unlimited_peak=unlimited,
    )


def _read_once(
    call: InnerCall,
    dtypes: Sequence[np.dtype[Any]],
    out_facts: Any,
    dtype: Any,
    optimize: Any,
    limit: int,
) -> Limited | None:
    """The call's inner call (``plan.inner_call``: broadcast axes read once) within the
    limit less what its spread allocates, as the call's; None where that does not fit (the
    call is then limited as it is: its broadcast operands read as they are)."""
    spread = call.spread
    extra = 0 if spread.alloc is None else spread.alloc.nbytes
    if extra >= limit:
        return None
    inner_out = call.out_facts(out_facts)
    try:
        inner = limited_plan(
            call.equation, call.facts(dtypes), inner_out, dtype, optimize, limit - extra
        )
    except EinsumError:
        return None
    base = spread_plan(inner.base, spread)
    return Limited(
        limit=limit,
        base=base,
        plan=base if inner.plan is inner.base else spread_plan(inner.plan, spread),
        sliced=inner.sliced,
        run=spread_program(inner.run, spread),
        peak=inner.peak + extra,
        unlimited_peak=inner.unlimited_peak + extra,
    )


def _result_bytes(plan: Plan) -> int:
    return math.prod(plan.call_spec.output_shape) * plan.result_dtype.itemsize


def check_result(base: Plan, own: bool, limit: int) -> None:
    """The result alone (when einsum allocates it) must fit."""
    needed = _result_bytes(base) if own else 0
    if needed > limit:
        shape = base.call_spec.output_shape
        raise EinsumError(
            f"einsum {quoted(base.spec.text)}: output would allocate {needed:,} bytes for the "
            f"output of shape {shape} ({base.result_dtype}), more than the "
            f"memory limit of {limit:,} bytes"
        )


def _flops(plan: Plan) -> int:
    """FLOPs of ``plan``'s path in the slicer's convention (comparable with a slicing's)."""
    return path_model(plan.spec, plan.path).flops(plan.spec.sizes)


def _repath(
    base: Plan, out: OutFacts | None, optimize: Any, limit: int, options: PlannerOptions | None
) -> Plan | None:
    """A plan along a path searched within the limit that fits it, if the path was searched
    (a finder name) and one does."""
    spec = base.spec
    if len(spec.inputs) < 3 or not (optimize is None or isinstance(optimize, (bool, str))):
        return None
    if optimize is False:
        return None
    spare = limit - (_result_bytes(base) if out is None else 0)
    terms, output = search_problem(spec)
    for share in (1, 2, 4):  # the peak holds several intermediates at once
        elements = spare // (share * base.compute_dtype.itemsize)
        if elements < 1:
            return None
        try:
            path = find_path(terms, output, spec.sizes, optimize, memory_limit=elements)
        except RuntimeError:  # opt_einsum's dp: no contraction within the limit
            continue
        if path == base.path:
            continue
        found = FoundPath(path, finder_form(optimize))  # (its finder, for the report)
        plan = build_plan(
            spec, base.dtypes, base.strides, out=out, dtype=base.result_dtype, optimize=found,
            options=options,
        )  # fmt: skip
        if plan_peak(plan) <= limit:
            return plan
    return None


def _scratch(plan: Plan) -> bool:
    """Whether a step of ``plan`` allocates scratch space (a BLAS reduction's ones)."""
    return any(isinstance(step, ReduceStep) and step.scratch for step in plan.steps)


def _copied_operands(plan: Plan) -> frozenset[int]:
    """Operands the plan copies (their copies are buffers a slice can make smaller)."""
    origin = {i: i for i in range(len(plan.spec.inputs))}
    found = set()
    for step in plan.steps:
        if isinstance(step, ViewStep) and step.src in origin:
            origin[step.dst] = origin[step.src]
        elif isinstance(step, CopyStep) and step.src in origin and step.allocs:
            found.add(origin[step.src])
    return frozenset(found)


def _estimator(
    model: PathModel, base: Plan, out: OutFacts | None, temporaries: bool = True
) -> Callable[[tuple[int, ...], int], int]:
    """The slicer's peak model in bytes: the result, the accumulator and partial buffers
    when a summed label is sliced, the last step's temporary (the result computed where
    ``out=`` cannot take it, or in another dtype: a slice's is the slice's size; a review
    found ``out=`` of a transposed layout under a limit refused, the model counting
    nothing for it) and the path's buffers."""
    itemsize, output = base.compute_dtype.itemsize, base.spec.output
    result = _result_bytes(base) if out is None else 0
    buffers = 1 if (base.result_dtype if out is None else out[1]) == base.compute_dtype else 2
    summed = [x for x in range(len(model.sizes)) if x not in model.output]
    counted = [
        (alloc.dtype.itemsize, alloc.labels)
        for step in base.steps
        for alloc in step.allocs
        if temporaries and alloc.what == TEMPORARY
    ]

    def peak(widths: tuple[int, ...], elements: int) -> int:
        """The peak at ``widths``, the model's buffers holding ``elements`` there."""
        extra = 0
        if any(widths[x] < model.sizes[x] for x in summed):
            extra = buffers * itemsize * math.prod(widths[x] for x in output)
        temporary = max(
            (size * math.prod(widths[x] for x in labels) for size, labels in counted),
            default=0,
        )
        return result + extra + temporary + itemsize * elements

    return peak


def _slice(
    base: Plan, model: PathModel, out: OutFacts | None, limit: int, options: PlannerOptions | None
) -> SlicedPlan | None:
    """The cheapest slicing found whose real peak fits, or None: by the model with the last
    step's temporary, else without it (the path's buffers may hold it already: a review
    found limits of a few elements refused, the temporary counted twice)."""
    for temporaries in (True, False):
        found = _slice_by(
            base, model, out, limit, options, _estimator(model, base, out, temporaries)
        )
        if found is not None:
            return found
    return None


def _slice_by(
    base: Plan,
    model: PathModel,
    out: OutFacts | None,
    limit: int,
    options: PlannerOptions | None,
    estimate: Callable[[tuple[int, ...], int], int],
) -> SlicedPlan | None:
    out_dtype = None if out is None else out[1]
    least = tuple(min(size, 1) for size in model.sizes)
    fixed = estimate(least, model.buffer_elements(least))  # the least slice's
    target = limit
    for _ in range(ATTEMPTS):
        slicing = find_slicing(model, estimate, target)
        if slicing is None:
            return None
        sliced = build_sliced(base, slicing, out_dtype, options) if slicing.labels else None
        real = plan_peak(base) if sliced is None else sliced.peak
        if sliced is not None and real <= limit:
            return sliced
        # the model missed real - estimate bytes (copies, temporaries): ask for that less;
        # where that leaves nothing, shrink what the slices add to the fixed bytes (the
        # result's) by the share that the limit is of the real peak (a copy the slicing
        # itself makes shrinks with the slices: a review found a limit refused where a
        # tighter one fitted)
        missed = limit - (real - estimate(slicing.widths, model.buffer_elements(slicing.widths)))
        if missed <= fixed:
            missed = fixed + (target - fixed) * (limit - fixed) // max(real - fixed, 1)
        target = min(target - 1, missed)
        if target <= 0:
            return None
    return None


def _cannot_fit(
    base: Plan, model: PathModel, out: OutFacts | None, limit: int, peak: int
) -> EinsumError:
    """Why no plan fits: even the smallest slice is too large, or no slicing was found."""
    ones = tuple(min(size, 1) if size > 1 else size for size in model.sizes)
    smallest = build_sliced(base, make_slicing(model, ones), None if out is None else out[1])
    text = base.spec.text
    if smallest.peak > limit:
        return EinsumError(
            f"einsum {quoted(text)}: even sliced to one index of every label, a slice would "
            f"allocate {smallest.peak:,} bytes at its peak (the result {smallest.result_bytes:,}, "
            f"accumulators {smallest.accumulator_bytes + smallest.partial_bytes:,}, the slice "
            f"{smallest.slice_peak:,}), more than the memory limit of {limit:,} bytes"
        )
    return EinsumError(
        f"einsum {quoted(text)}: the plan would allocate {peak:,} bytes at its peak, more than the "
        f"memory limit of {limit:,} bytes, and no slicing into at most {MAX_SLICES:,} slices "
        "was found that fits it"
    )


# -- the report ------------------------------------------------------------------------------


def _with_lines(report: str, lines: Sequence[str]) -> str:
    """``lines`` inserted after the report's first line (the equation)."""
    head, *rest = report.splitlines()
    return "\n".join([head, *lines, *rest])


def format_limited(limited: Limited) -> str:
    """The report of a call over its limit: the memory decision, then the plan that runs."""
    base, limit = limited.base, limited.limit
    over = (
        f"  memory limit: {limit:,} B; the plan along path {list(base.path)} would peak at "
        f"{limited.unlimited_peak:,} B"
    )
    if limited.sliced is None and limited.plan is base and limited.unlimited_peak <= limit:
        # (fits as it is: the call's own plan was a spread one, over the limit)
        return _with_lines(
            format_plan(base),
            [
                f"  memory limit: {limit:,} B; the plan along path {list(base.path)} peaks "
                f"at {limited.peak:,} B, within it; its plan:"
            ],
        )
    if limited.sliced is None and limited.plan is base:  # (a review: "path searched")
        return _with_lines(
            format_plan(base),
            [
                over,
                "  so its sums run NumPy's loop instead of a BLAS product with a vector of "
                f"ones: the same path peaks at {limited.peak:,} B; its plan:",
            ],
        )
    if limited.sliced is None:
        extra = _flops(limited.plan) / max(_flops(base), 1) - 1.0
        return _with_lines(
            format_plan(limited.plan),
            [
                over,
                f"  so the path was searched within the limit: path {list(limited.plan.path)} "
                f"peaks at {limited.peak:,} B (FLOPs {100 * extra:+.1f}%); its plan:",
            ],
        )
    shapes = ", ".join(str(s) for s in base.call_spec.shapes())
    head = format_plan(base).splitlines()[0]
    return "\n".join(
        [
            head,
            f"  operands: {shapes}; result {base.call_spec.output_shape} {base.result_dtype}",
            *spread_lines(base),
            over,
            *format_sliced(limited.sliced),
            *_spread_peak(limited),
        ]
    )


def _spread_peak(limited: Limited) -> list[str]:
    """The call's peak where its sliced steps' result is then spread (a review: the report
    quoted the steps' peak alone)."""
    spread = limited.base.spread
    if spread is None or spread.alloc is None:
        return []
    into = "the output" if spread.alloc.what == "output" else "out=, its first slice copied"
    return [
        f"  spread: the sliced steps' result is then broadcast into {into} "
        f"({spread.alloc.nbytes:,} B): the call peaks at {limited.peak:,} B"
    ]


def explain_within(
    plan: Plan,
    eq_key: Any,
    facts: tuple[Any, ...],
    out_facts: Any,
    dtype: Any,
    optimize: Any,
    limit: int,
) -> str:
    """The plan report of a call whose unsliced plan is ``plan``, within ``limit``: the plan
    itself when it fits, else what einsum would run (or the error it would raise)."""
    peak = plan_peak(plan)
    if peak <= limit:
        return format_plan(plan)
    try:
        limited = limited_plan(eq_key, facts, out_facts, dtype, optimize, limit)
    except EinsumError as exc:
        return _with_lines(
            format_plan(plan),
            [f"  memory limit: {limit:,} B; einsum would raise EinsumError: {exc}"],
        )
    report = format_limited(limited)
    if plan.spread is None or limited.base.spread is not None:
        return report
    # its inner call did not fit: the limited plans are made without reading the broadcast
    # axes once (a review: the report quoted their peak as the call's)
    what, how = "spread", "the spread"
    if not plan.spread.axes:
        what, how = "dropped-axes", "dropping them"
    spread = (
        f"  memory limit: {limit:,} B; the {what} plan would peak at {peak:,} B: the call "
        f"runs without {how} (its broadcast operands read as they are), as follows"
    )
    return _with_lines(report, [spread])


def clear_limited_cache() -> None:
    """Forget every cached plan within a limit."""
    _cached.cache_clear()


CLEAR_HOOKS.append(clear_limited_cache)
