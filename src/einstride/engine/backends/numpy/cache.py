"""The plan cache: plans and their compiled programs, keyed by every fact a plan depends on
(the equation, the operands' shapes, strides and dtypes, ``out=``'s, ``dtype=``, the path
option and the :class:`~.options.PlannerOptions`), in thread-safe bounded LRUs
(``functools.lru_cache``, implemented in C).  A call that names no options is planned with
the default ones (``DEFAULT.options``), read when the call is made.

>>> import numpy as np
>>> a = np.ones((2, 3))
>>> entry = entry_for("ij->j", [a], None, None, "auto")
>>> entry is entry_for("ij->j", [a], None, None, "auto")
True
>>> entry.run((a,), None)
array([2., 2., 2.])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from ....errors import EinsumError
from ...call import dtype_of, equation_of
from ...forksafe import rlock
from ...spec.dtypes import check_numeric
from ...spec.equation import Equation, bind, parse_subscripts, quoted
from ...spec.paths import optimize_key, optimize_of_key
from ...spec.search import forget_longer
from .direct import direct_entry, first_call_entry
from .execute import compile_plan, spread_program
from .fold import contiguous_strides
from .generic import Entry, clear_generic, generic_entry
from .lanes import clear_lanes, lane_answers
from .options import DEFAULT, PlannerOptions
from .peak import plan_peak
from .plan import InnerCall, build_plan, class_decisions, inner_call, spread_plan
from .skeleton import NETWORK_OPERANDS, broadcasts
from .steps import Plan

__all__ = [
    "CLEAR_HOOKS",
    "CacheInfo",
    "Entry",
    "array_facts",
    "cached_entry",
    "clear_plan_cache",
    "entry_for",
    "facts_of",
    "general_cache",
    "hot_cache",
    "hot_entry",
    "make_entry",
    "plan_cache_info",
    "plan_from_shapes",
]

Array = np.ndarray[Any, Any]
CACHE_SIZE = 512


# -- facts -----------------------------------------------------------------------------------


def facts_of(arrays: Sequence[Array]) -> tuple[Any, ...]:
    """``(shape, strides, dtype)`` of every array, flattened: the layout part of a key."""
    facts: list[Any] = []
    for a in arrays:
        facts += (a.shape, a.strides, a.dtype)
    return tuple(facts)


_ndarray = np.ndarray


def array_facts(operands: Sequence[Any]) -> tuple[Any, ...] | None:
    """:func:`facts_of` for plain ndarray operands, or None (then the general path runs)."""
    if len(operands) == 2:
        a, b = operands
        if type(a) is _ndarray and type(b) is _ndarray:
            return (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype)
        return None
    facts: list[Any] = []
    for op in operands:
        if type(op) is not _ndarray:
            return None
        facts += (op.shape, op.strides, op.dtype)
    return tuple(facts)


# -- entries ---------------------------------------------------------------------------------


def make_entry(
    eq_key: Any,
    facts: tuple[Any, ...],
    out_facts: Any,
    dtype: Any,
    optimize: Any,
    options: PlannerOptions | None = None,
    *,
    counted: bool = False,
) -> Entry:
    """Parse, bind, plan (with ``options``, default: the default options) and compile (no
    cache); ``counted``: a miss of the general cache, whose answer by a shape class's
    program or a direct run :func:`plan_cache_info` counts (a report's plans are none:
    only a call's miss may run directly as a class's first call)."""
    chosen = DEFAULT.options if options is None else options
    decided_now = False
    spread = False
    if broadcasts(facts):  # broadcast axes read once (plan.inner_call)
        spec = bind(equation_of(eq_key), facts[0::3])
        out = None
        if out_facts is not None:
            out = _check_out_facts(spec.text, spec.output_shape, out_facts)
        call = inner_call(spec, facts[2::3], facts[1::3], out=out, dtype=dtype)
        if call is not None and len(spec.inputs) > 1:
            return _read_once_entry(call, facts[2::3], out_facts, dtype, optimize, chosen)
        spread = call is not None  # (one operand: planned per shape, its result maybe a view)
    if out_facts is None and not spread:
        unplanned, decided_now = _unplanned(eq_key, facts, dtype, optimize, chosen, counted)
        if unplanned is not None:
            return unplanned
    shapes, strides, dtypes = facts[0::3], facts[1::3], facts[2::3]
    spec = bind(equation_of(eq_key), shapes)
    out = None
    if out_facts is not None:
        out = _check_out_facts(spec.text, spec.output_shape, out_facts)
    plan = build_plan(
        spec,
        dtypes,
        strides,
        out=out,
        dtype=dtype,
        optimize=optimize,
        options=chosen,
        spread=spread,
    )
    if decided_now:
        plan = replace(plan, reused=False)  # made for this call, by the generic level's look
    return Entry(plan, compile_plan(plan), plan.largest_bytes, plan_peak(plan))


def _unplanned(
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: Any,
    optimize: Any,
    options: PlannerOptions,
    counted: bool,
) -> tuple[Entry | None, bool]:
    """A miss answered without planning these shapes (a network's or a shape class's first
    call run directly, :mod:`.direct`; a known class's size-free program, :mod:`.generic`)
    or None, and whether this look planned the class."""
    # a network's first call: its path at once (not an inner call, plan.inner_call: the entry
    # that broadcasts its result reads its bounds once, where the race and a call under
    # np.errstate(raise) move this entry's to its plan's; a review: past a memory limit)
    if len(facts) >= 3 * NETWORK_OPERANDS and not isinstance(eq_key, Equation):
        direct = direct_entry(eq_key, facts, dtype, optimize, options)
        if direct is not None:
            _count(_DIRECT_ANSWERS, counted)
            return direct, False
    first_call = None
    # a call's miss (reports plan), not an inner call (plan.inner_call: the entry that
    # broadcasts its result reads its bounds once, and a direct run's are not the plan's)
    if counted and len(facts) >= 6 and not isinstance(eq_key, Equation):
        ran = functools.partial(_count, _DIRECT_ANSWERS, True)  # (when it runs directly)
        first_call = functools.partial(
            first_call_entry, eq_key, facts, dtype, optimize, options, ran
        )
    generic, level = generic_entry(eq_key, facts, dtype, optimize, options, first_call)
    if generic is not None and level == "known":  # (not the look that planned the class)
        _count(_GENERIC_ANSWERS, counted)
    return generic, level == "decided"


def _count(answers: list[int], counted: bool) -> None:
    if counted:
        with _COUNT_LOCK:
            answers[0] += 1


def _read_once_entry(
    call: InnerCall,
    dtypes: Sequence[np.dtype[Any]],
    out_facts: Any,
    dtype: Any,
    optimize: Any,
    options: PlannerOptions,
) -> Entry:
    """The entry of a call that reads broadcast axes once: its :class:`~.plan.InnerCall`'s
    entry (through the caches: a new shape of a known class needs no planning, 445 -> ~120
    us a first call of ``ik,jk->ij`` with a matrix of identical columns, 64 x 32), run over
    the operands it reads and its result broadcast where it spreads."""
    spread, facts, inner_out = call.spread, call.facts(dtypes), call.out_facts(out_facts)
    opt_key = optimize_key(optimize)
    inner = (
        make_entry(call.equation, facts, inner_out, dtype, optimize, options)
        if opt_key is None
        else general_cache(call.equation, facts, inner_out, dtype, opt_key, options)
    )

    def steps(operands: Sequence[Array], out: Array | None) -> Any:
        return inner.run(operands, out)  # (read at each call: the entry may be promoted)

    extra = 0 if spread.alloc is None else spread.alloc.nbytes
    return Entry(
        None,
        spread_program(steps, spread),
        max(inner.largest, extra),
        inner.peak + extra,
        lambda: spread_plan(inner.plan, spread),
    )


def _check_out_facts(
    text: str, shape: tuple[int, ...], out_facts: Any
) -> tuple[tuple[int, ...], np.dtype[Any]]:
    out_shape, out_strides, out_dtype = out_facts
    check_numeric(out_dtype, "out= has dtype")  # not object, str, datetime, ...
    if out_shape != shape:
        raise EinsumError(
            f"einsum {quoted(text)}: out= has shape {out_shape}, but the result has shape {shape}"
        )
    return out_strides, out_dtype


@functools.lru_cache(maxsize=CACHE_SIZE)
def general_cache(
    eq_key: Any,
    facts: tuple[Any, ...],
    out_facts: Any,
    dtype: Any,
    opt_key: Any,
    options: PlannerOptions,
) -> Entry:
    """The general LRU: :func:`make_entry` (``opt_key`` from ``optimize_key``)."""
    optimize = optimize_of_key(opt_key)
    return make_entry(eq_key, facts, out_facts, dtype, optimize, options, counted=True)


@functools.lru_cache(maxsize=CACHE_SIZE)
def hot_cache(
    subscripts: str, facts: tuple[Any, ...], optimize: Any, options: PlannerOptions
) -> Entry:
    """The hot path's own LRU (fewer key parts than :func:`general_cache`, same plans): call
    it with ``DEFAULT.options`` unless the call names its own."""
    return general_cache(subscripts, facts, None, None, optimize, options)


_GENERIC_ANSWERS = [0]
_DIRECT_ANSWERS = [0]
_COUNT_LOCK = rlock()  # reentrant: a signal handler or finalizer may call einsum


def cached_entry(
    eq_key: Any,
    facts: tuple[Any, ...],
    out_facts: Any,
    dtype: Any,
    opt_key: Any,
    options: PlannerOptions | None = None,
) -> Entry:
    """:func:`make_entry` through the general LRU, with ``options`` (default: the default
    options, read now)."""
    return general_cache(
        eq_key, facts, out_facts, dtype, opt_key, DEFAULT.options if options is None else options
    )


def hot_entry(
    subscripts: str, facts: tuple[Any, ...], optimize: Any, options: PlannerOptions | None = None
) -> Entry:
    """:func:`hot_cache` with ``options`` (default: the default options, read now)."""
    return hot_cache(subscripts, facts, optimize, DEFAULT.options if options is None else options)


def entry_for(
    eq_key: Any,
    arrays: Sequence[Array],
    out: Array | None,
    dtype: Any,
    optimize: Any,
    options: PlannerOptions | None = None,
) -> Entry:
    """The cached entry for these operands, planned with ``options`` (default: the default
    options); optimizer objects are planned afresh: they may keep state between calls."""
    facts = facts_of(arrays)
    out_facts = None if out is None else (out.shape, out.strides, out.dtype)
    dtype_key = None if dtype is None else dtype_of(dtype)
    opt_key = optimize_key(optimize)
    chosen = DEFAULT.options if options is None else options
    try:
        hash((eq_key, facts, out_facts, dtype_key, opt_key))
    except TypeError:
        opt_key = None
    if opt_key is None:
        return make_entry(eq_key, facts, out_facts, dtype_key, optimize, chosen)
    return general_cache(eq_key, facts, out_facts, dtype_key, opt_key, chosen)


def plan_from_shapes(
    eq_key: Any,
    shapes_dtypes: Sequence[tuple[tuple[int, ...], np.dtype[Any]]],
    dtype: Any,
    optimize: Any,
    options: PlannerOptions | None = None,
    *,
    out_facts: tuple[Any, ...] | None = None,
) -> Plan:
    """The plan for C-contiguous operands of these shapes and dtypes (for reports), writing
    an ``out=`` of ``out_facts`` (shape, byte strides, dtype) when given."""
    facts: list[Any] = []
    for shape, dt in shapes_dtypes:
        facts += (shape, contiguous_strides(shape, dt.itemsize), dt)
    dtype_key = None if dtype is None else dtype_of(dtype)
    return make_entry(eq_key, tuple(facts), out_facts, dtype_key, optimize, options).plan


# -- housekeeping ----------------------------------------------------------------------------


CLEAR_HOOKS: list[Callable[[], None]] = []
"""More caches of plans (made by modules that build on this one, such as the limited plans):
:func:`clear_plan_cache` clears them too."""


def clear_plan_cache() -> None:
    """Forget every cached plan (and parsed equation, and the paths that longer searches
    found while shapes repeated)."""
    hot_cache.cache_clear()
    general_cache.cache_clear()
    class_decisions.cache_clear()
    clear_generic()
    clear_lanes()
    with _COUNT_LOCK:
        _GENERIC_ANSWERS[0] = _DIRECT_ANSWERS[0] = 0
    parse_subscripts.cache_clear()
    forget_longer()
    for clear in CLEAR_HOOKS:
        clear()


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    maxsize: int
    currsize: int
    generic: int = 0
    """Misses answered by a shape class's size-free program (no plan built)."""
    direct: int = 0
    """Misses answered by running the path directly (:mod:`.direct`): a network's, a shape
    class's first two calls, or a tiny problem's new shape of a class not planned yet."""
    lanes: int = 0
    """Calls answered by their equation's lane (one operand, or a small matmul-form pair),
    without a cache look (:mod:`.lanes`): neither hits nor misses."""


def plan_cache_info() -> CacheInfo:
    """Statistics of the plan caches (the hot path's and the general one's, added up); each
    holds at most ``maxsize`` plans.  A hot-path miss that the general cache answers counts
    as a hit; ``generic`` counts the misses that a shape class's size-free program answered
    (:mod:`.generic`: no plan was built), ``direct`` those whose path ran directly (a
    network's, a shape class's first two calls, a tiny problem's new shape of a class not
    planned yet: :mod:`.direct`), ``lanes`` the calls that no
    cache saw (:mod:`.lanes`).
    ``explain`` and ``einsum_path`` of operands look their plan up as einsum does (a hit or
    a miss); the plans of reports of shapes are made aside and counted nowhere.  A call that
    reads broadcast axes once looks up its steps' call too (``plan.inner_call``): a first
    call of it counts two misses, and both entries are held.

    >>> info = plan_cache_info()
    >>> info.maxsize, info.currsize <= 2 * info.maxsize
    (512, True)
    """
    hot, general = hot_cache.cache_info(), general_cache.cache_info()
    return CacheInfo(
        hot.hits + general.hits,
        general.misses,
        CACHE_SIZE,
        hot.currsize + general.currsize,
        _GENERIC_ANSWERS[0],
        _DIRECT_ANSWERS[0],
        lane_answers(),
    )
