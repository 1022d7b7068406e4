"""The public einsum functions ``einsum``, ``einsum_path`` and ``explain``
(``contract_expression`` is in :mod:`.expression`, ``einsum_vjp`` in :mod:`.grad`).

Each call is normalized once (:func:`.call.make_call`) and handed to the backend that claims
its operands (:mod:`.registry`): NumPy arrays in -> NumPy arrays out; any
:class:`~einstride.Tensor` in -> Tensor out; Dask arrays in -> a lazy Dask array out.

>>> import numpy as np
>>> a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
>>> np.array_equal(einsum("ij,jk->ik", a, b), a @ b)
True
>>> einsum(a, [0, 1], b, [1, 2], [0, 2]).shape      # the sublist form
(2, 4)
>>> einsum("ii->i", np.arange(9).reshape(3, 3))     # a view, as NumPy gives
array([0, 4, 8])
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .. import memory as _memory
from .._compat import VALUE_BASED, holds_scalar
from ..errors import EinsumError, EinsumTypeError
from ..memory import numpy_can_make
from ..strides import row_major_strides
from ..tensors import Tensor
from .backends.numpy.backend import as_arrays, check_einsum_out, explain_into_out, out_array
from .backends.numpy.cache import array_facts, entry_for, facts_of, hot_cache, plan_from_shapes
from .backends.numpy.direct import with_direct_note
from .backends.numpy.lanes import lane_for, public_einsum
from .backends.numpy.limited import explain_within, limited_plan, run_over_limit, shape_facts
from .backends.numpy.options import DEFAULT as _DEFAULT_OPTIONS
from .backends.numpy.peak import plan_peak
from .backends.numpy.report import format_plan
from .backends.numpy.steps import Plan
from .call import (
    EinsumCall,
    checked_shape,
    equation_and_operands,
    is_shape,
    make_call,
    shape_and_dtype,
)
from .registry import DEFAULT, HOT_PATHS, LANE_REPORTS, backend_for
from .spec.dtypes import check_casting, check_numeric
from .spec.paths import optimize_key

__all__ = ["einsum", "einsum_path", "explain", "path_einsum_runs"]

_PLAIN_OPTIMIZE = frozenset({str, bool})
_ndarray = np.ndarray


_NO_SUBSCRIPTS: Any = object()


_EINSUM_DOC = """Evaluate an Einstein-summation equation (see docs/einsum.md).

    ``einsum("ij,jk->ik", a, b)`` or the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.
    ``out=``: an array of the result's shape (any strides) that shares no memory with the
    operands.  ``dtype=``: the result dtype (operands are cast).  ``optimize``: the path
    finder for three and more operands.  ``memory_limit``: bytes (or a size string such as
    ``"64MiB"``) the call may hold at its peak, result included (default:
    ``einstride.memory.memory_limit()``); a plan that needs more runs in slices, and one that
    cannot fit raises :class:`EinsumError` before allocating.  On Dask operands it is the
    per-task budget.  ``order=`` (``'C'``, ``'F'``, ``'A'``, ``'K'``) and ``casting=`` are
    NumPy's: the result's layout, and the rule for the ``dtype=`` and ``out=`` casts (by
    default, einstride casts operands to ``dtype=`` unsafely and ``out=`` by ``same_kind``).

    >>> import numpy as np
    >>> einsum("i->", np.ones(3000, np.float16))    # float16 accumulates in float32
    np.float16(3000.0)
    >>> einsum("i->iii", np.ones(10**5))
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum 'i->iii': output would allocate ...
    """


def _einsum(
    subscripts: Any = _NO_SUBSCRIPTS,
    *operands: Any,
    out: Any = None,
    dtype: Any = None,
    order: Any = "K",
    casting: Any = None,
    optimize: Any = "auto",
    memory_limit: Any = None,
) -> Any:
    """:func:`einsum` with its keywords (and its name in their errors)."""
    if (
        out is dtype is memory_limit is casting is None
        and type(order) is str  # (an array compared with == is an array: a review)
        and order == "K"
        and type(subscripts) is str
        and type(optimize) in _PLAIN_OPTIMIZE
    ):
        # the hot path: plain arrays, a cached plan; no parsing, no path search, no checks
        # beyond the memory guard (the cache key holds every fact the plan depends on)
        facts: tuple[Any, ...] | None
        if len(operands) == 2:  # inlined array_facts: the 2-operand case is the hot one
            a, b = operands
            facts = (
                (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype)
                if type(a) is _ndarray and type(b) is _ndarray
                else None
            )
        elif len(operands) == 1:
            a = operands[0]
            facts = (a.shape, a.strides, a.dtype) if type(a) is _ndarray else None
        else:
            facts = array_facts(operands)
        if facts is not None and not (VALUE_BASED and holds_scalar(facts)):
            entry = hot_cache(subscripts, facts, optimize, _DEFAULT_OPTIONS.options)
            if entry.peak > _memory.LIMIT:
                return run_over_limit(entry, subscripts, operands, None, None, optimize,
                                      _memory.LIMIT)  # fmt: skip
            return entry.run(operands, None)
        hot = HOT_PATHS.get(type(operands[0])) if operands else None
        if hot is not None:
            result = hot(subscripts, operands, optimize)
            if result is not None:
                return result
    if subscripts is _NO_SUBSCRIPTS:
        raise EinsumError("einsum: needs the subscripts and at least one operand")
    call = make_call(
        subscripts,
        *operands,
        out=out,
        dtype=dtype,
        optimize=optimize,
        memory_limit=memory_limit,
        order=order,
        casting=casting,
    )
    return backend_for(call.operands).einsum(call)


_einsum.__name__ = _einsum.__qualname__ = "einsum"  # its TypeErrors name the public function

# The public einsum is the lanes' entry (one Python frame for a lane's call, see
# lanes.public_einsum; the keywords are checked behind it, in _einsum).
einsum = public_einsum(_einsum, _NO_SUBSCRIPTS)
einsum.__name__ = einsum.__qualname__ = "einsum"
einsum.__module__ = __name__
einsum.__doc__ = _EINSUM_DOC
einsum.__signature__ = inspect.signature(_einsum)  # type: ignore[attr-defined]
__test__ = {"einsum": _EINSUM_DOC}  # doctest: the function's globals are the lanes module's


def einsum_path(subscripts: Any, *operands: Any, optimize: Any = "auto") -> tuple[list[Any], str]:
    """NumPy-compatible: ``(["einsum_path", (i, j), ...], report)`` for operands or shapes
    (a tuple of ints is taken as a shape); the report is the plan report.  Operands of any
    array type give their shapes and dtypes; nothing is computed.  Operands of another
    backend (torch, Dask) get that backend's path and report (``explain``'s).

    >>> path, report = einsum_path("ij,jk,kl->il", (2, 3), (3, 4), (4, 5), optimize="greedy")
    >>> path
    ['einsum_path', (1, 2), (0, 1)]
    """
    key, raw = equation_and_operands(subscripts, operands)
    backend = backend_for(raw)
    if backend.__name__ != DEFAULT and not any(isinstance(x, tuple) for x in raw):
        # the path and report of what that backend runs (a review: Dask's path can differ
        # from the NumPy planner's, and torch's result dtype does)
        path, report = backend.einsum_path(make_call(subscripts, *operands, optimize=optimize))
        return ["einsum_path", *path], report
    shaped = [shape_and_dtype(x, f"operand {i}") for i, x in enumerate(raw)]
    plan = _plan_einsum_runs(key, raw, shaped, optimize)
    shapes, arrays = [isinstance(x, tuple) for x in raw], array_facts(raw) is not None
    searched_once = optimize_key(optimize) is not None  # an optimizer object may not be
    if (all(shapes) or arrays) and searched_once:
        # explain's report: what einsum runs, its lane or direct first call included (the
        # plan's own report said neither: a review), in either form (the sublist form's
        # left out a network's first call and the memory limit's verdict: a review); not
        # for other array-likes (a range of 10**12 items is a shape to einsum_path, and
        # explain would build it), nor for an optimizer object, whose next search may find
        # another path (a review); within the memory limit, as explain's report (a review)
        try:
            path = _path_within(plan, key, raw, shaped, optimize, _memory.LIMIT)
        except EinsumError:  # (einsum would raise: the report says so)
            path = list(plan.path)
        return ["einsum_path", *path], explain(subscripts, *operands, optimize=optimize)
    return ["einsum_path", *plan.path], format_plan(plan)


def path_einsum_runs(
    key: Any,
    raw: Sequence[Any],
    shaped: Sequence[tuple[tuple[int, ...], np.dtype[Any]]],
    optimize: Any,
    limit: int | None = None,
) -> list[tuple[int, ...]]:
    """The path einsum runs for operands ``raw`` (of ``shaped``'s shapes and dtypes), within
    ``limit`` bytes where given: that of their own layouts for ndarrays and Tensors (a
    broadcast operand's plan spreads its result, on another path: a review found
    ``einsum_path``'s list and its own report disagreeing), else of C-contiguous ones."""
    return _path_within(_plan_einsum_runs(key, raw, shaped, optimize), key, raw, shaped,
                        optimize, limit)  # fmt: skip


def _path_within(
    plan: Plan,
    key: Any,
    raw: Sequence[Any],
    shaped: Sequence[tuple[tuple[int, ...], np.dtype[Any]]],
    optimize: Any,
    limit: int | None,
) -> list[tuple[int, ...]]:
    """``plan``'s path where it fits ``limit``, else the limited plan's (as
    ``explain_within`` reports it)."""
    if limit is None or plan_peak(plan) <= limit:
        return list(plan.path)
    arrays = _views(raw)
    facts = shape_facts(shaped) if arrays is None else facts_of(arrays)
    return list(limited_plan(key, facts, None, None, optimize, limit).plan.path)


def _plan_einsum_runs(
    key: Any,
    raw: Sequence[Any],
    shaped: Sequence[tuple[tuple[int, ...], np.dtype[Any]]],
    optimize: Any,
) -> Plan:
    arrays = _views(raw)
    if arrays is None:
        return plan_from_shapes(key, shaped, None, optimize)
    return entry_for(key, arrays, None, None, optimize).plan


def _views(raw: Sequence[Any]) -> list[np.ndarray[Any, Any]] | None:
    """The ndarrays of operands that are all ndarrays or Tensors (a Tensor's view), else
    None (shapes, and array-likes that ``einsum_path`` sizes without converting)."""
    if not all(type(x) is _ndarray or isinstance(x, Tensor) for x in raw):
        return None
    return [x.numpy() if isinstance(x, Tensor) else x for x in raw]


def explain(
    subscripts: Any,
    *operands: Any,
    out: Any = None,
    dtype: Any = None,
    casting: Any = None,
    optimize: Any = "auto",
    memory_limit: Any = None,
) -> str:
    """The plan report of an einsum: what ``einstride explain`` prints.

    Give shapes (tuples of ints: C-contiguous operands of ``dtype``, default float64) or the
    operands themselves (their own layouts decide views and copies; Dask operands get the
    Dask report).  Nothing is computed (but operands rounded to a small-float ``dtype=``,
    which are cast first, as einsum casts them, where they fit the memory limit).  Over
    ``memory_limit`` (as for ``einsum``) the report shows what einsum would run instead:
    the sliced plan, or the error it would raise.  With ``out=`` (an array, as for
    ``einsum``; checked as einsum checks it) the report is that of the call writing it:
    how each step delivers into it, and where a temporary is needed; ``casting=`` is
    einsum's rule for the operands' and ``out=``'s casts, checked as einsum checks it.

    >>> print(explain("ij,jk->ik", (2, 3), (3, 4)).splitlines()[0])
    einsum 'ij,jk->ik'  (labels: ij,jk->ik)
    >>> import numpy as np
    >>> "copy" in explain("ij,jk->ik", np.ones((3, 2)).T, np.ones((3, 4)))   # a view: no copy
    False
    >>> explain((2, 3), [0, 1], (3, 4), [1, 2], [0, 2]).splitlines()[0]   # interleaved form
    "einsum '[0,1],[1,2]->[0,2]'  (labels: 01,12->02)"
    >>> print(explain("ij,jk->ik", (2, 3), (3, 4), out=np.empty((2, 4))).splitlines()[3])
      result:    (2, 4) float64 (written into out=); computed in float64
    """
    call = make_call(
        subscripts, *operands, out=out, dtype=dtype, optimize=optimize,
        memory_limit=memory_limit, casting=casting,
    )  # fmt: skip
    shapes = [is_shape(x) for x in call.operands]
    if all(shapes):
        return _explain_shapes(call.operands, call)
    if any(shapes):
        raise EinsumTypeError("explain takes either shapes (tuples of ints) or operands, not both")
    call = _converted_once(call)
    planned = report = backend_for(call.operands).explain(call)
    if out is None and dtype is memory_limit is casting is None and isinstance(subscripts, str):
        # (the raw operands: a lane takes ndarrays, not what einsum converts)
        report = _with_lane(report, subscripts, operands, optimize)
    plain = _plain_facts(call) if out is None else None  # (out=: always the plan)
    if plain is not None:
        limit = _memory.LIMIT if call.memory_limit is None else call.memory_limit
        laned = report is not planned
        report = with_direct_note(report, call.key, plain, call.dtype, optimize, limit, not laned)
    return report


def _converted_once(call: EinsumCall) -> EinsumCall:
    """``call`` with its operands that are no arrays (lists, scalars) converted as the
    NumPy backend converts them, once: explain's report, its lane and its first-call note
    each converted them anew (a list of 10**6 floats: 0.17 s, einsum 0.05 s)."""
    raw = call.operands
    if (
        all(isinstance(x, (np.ndarray, Tensor)) for x in raw)
        or backend_for(raw).__name__ != DEFAULT
    ):
        return call
    arrays = as_arrays(raw)[0]
    kept = tuple(x if isinstance(x, (np.ndarray, Tensor)) else a for x, a in zip(raw, arrays))
    return replace(call, operands=kept)


def _plain_facts(call: EinsumCall) -> tuple[Any, ...] | None:
    """The facts the NumPy backend's cache reads for ``call``'s operands (those of the
    arrays it converts them to: a list or a NumPy scalar goes the direct way too, where
    the report said nothing of it, a review); None on another backend."""
    facts = array_facts(call.operands)
    if facts is None and backend_for(call.operands).__name__ == DEFAULT:
        facts = facts_of(as_arrays(call.operands)[0])
    return facts


def _explain_shapes(shapes: Sequence[Any], call: EinsumCall) -> str:
    """:func:`explain` of C-contiguous operands of these shapes (of ``call.dtype``, default
    float64): the report of einsum on such operands, lane and first-call note included."""
    key, limit, optimize, out = call.key, call.memory_limit, call.optimize, call.out
    # with shapes, dtype= is the operands' (the result's follows): the report is that
    # of einsum on such operands, lane included (the CLI's always named a dtype, so it
    # never showed the lane its example takes: a review)
    dt = np.dtype(np.float64) if call.dtype is None else call.dtype
    check_numeric(dt, "dtype= is")  # (not "operand 0 has dtype": they are shapes)
    shaped = [(checked_shape(s, f"shape {i}"), dt) for i, s in enumerate(shapes)]
    out_facts = None
    if out is not None:
        dst = out_array(out)
        out_facts = (dst.shape, dst.strides, dst.dtype)
    plan = plan_from_shapes(key, shaped, None, optimize, out_facts=out_facts)
    facts = shape_facts(shaped)
    within = _memory.LIMIT if limit is None else limit
    if call.casting is not None:  # as einsum on such operands (out= may widen the dtype)
        check_casting([dt for _, dt in shaped], plan.result_dtype, call.casting)
    if out_facts is not None:  # a call with out= runs its plan: no lane, no direct first call
        casting = call.casting or "same_kind"  # (shapes: no overlap to check)
        check_einsum_out(out, (), plan.result_dtype, casting)
        return explain_into_out(plan, key, facts, out_facts, None, optimize, within)
    planned = report = explain_within(plan, key, facts, None, None, optimize, within)
    # (no lane answers a call NumPy cannot make: explain raised NumPy's own errors, a review)
    can_be = all(numpy_can_make(s, dt) for s, dt in shaped)
    no_keywords = limit is None and call.casting is None  # (a call naming one: no lane)
    if no_keywords and can_be and isinstance(key, str):  # (lanes take strings)
        stand_ins = tuple(_c_order_stand_in(s, dt) for s, dt in shaped)
        report = _with_lane(report, key, stand_ins, optimize)
    laned = report is not planned
    return with_direct_note(report, key, facts, None, optimize, within, not laned)


def _c_order_stand_in(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """A read-only probe with the shape and the strides of a C-contiguous array (what
    shapes stand for) on a one-element base, for the lanes' dry runs, which read its
    shape, strides and dtype and never an element (``lane(operands, dry=True)`` computes
    nothing); it never leaves :func:`explain`.  A zero-stride stand-in once made the
    report claim a lane the call never takes and miss one it takes (their tests count the
    bytes moved, and C order)."""
    strides = row_major_strides(shape, dtype.itemsize)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape, strides, writeable=False)


def _with_lane(report: str, subscripts: str, operands: Sequence[Any], optimize: Any) -> str:
    """The report with a line saying that einsum answers the call in the equation's lane
    (:mod:`.backends.numpy.lanes`), when it does."""
    if optimize != "auto":
        return report  # a call naming another optimize= takes the planned way
    runs = lane_for(subscripts)(tuple(operands), dry=True)
    if runs is None and operands:  # another backend's lane, if it has one
        other = LANE_REPORTS.get(type(operands[0]))
        runs = None if other is None else other(subscripts, tuple(operands))
    if runs is None:
        return report
    head, _, rest = report.partition("\n")
    line = f"  lane: einsum runs this call without a plan, as {runs}; the plan it replaces:"
    return f"{head}\n{line}\n{rest}"
