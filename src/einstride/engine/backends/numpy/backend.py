"""The NumPy backend, the default: operands converted to ndarrays (Tensors viewed), a cached
plan run over views, and the result in the caller's kind (NumPy in, NumPy out; any Tensor
in, Tensor out).

>>> import numpy as np
>>> from ...call import make_call
>>> einsum(make_call("ij->j", np.ones((2, 3))))
array([2., 2., 2.])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np

from .... import memory as _memory
from ...._compat import promoted_scalars
from ....errors import EinsumError, EinsumTypeError
from ....narrow import is_small_float
from ....tensors import Tensor, wrap_like
from ....transfer import check_out, out_type_error
from ...call import EinsumCall, check_conversion, result_order
from ...spec.dtypes import check_casting, rounds_into
from .cache import Entry, entry_for, facts_of, make_entry, plan_from_shapes
from .execute import errors_raise
from .limited import check_result, explain_within, run_limited, run_over_limit
from .report import format_plan
from .steps import Plan

__all__ = [
    "arrays_within",
    "as_arrays",
    "cast_like",
    "check_einsum_out",
    "einsum",
    "explain",
    "explain_into_out",
    "out_array",
    "rounded_to",
    "rounding_dtypes",
    "run_entry",
    "within_rounding",
]

Array = np.ndarray[Any, Any]


def as_arrays(raw: Sequence[Any]) -> tuple[list[Array], bool]:
    """Every operand as an ndarray (Tensors viewed, others through ``np.asarray``; NumPy 1's
    value-based promotion of 0-d operands applied), and whether any was a Tensor."""
    arrays, tensor_in = _converted(raw)
    return promoted_scalars(arrays), tensor_in


def rounded_to(
    arrays: Sequence[Any], dtype: np.dtype[Any] | None, casting: str | None = None
) -> list[Any]:
    """The operands (ndarrays or Dask arrays) cast to a small-float ``dtype=`` where that
    cast rounds, as NumPy casts them: the products run in float32
    (:func:`~einstride.engine.spec.dtypes.compute_dtype`), and a float64 operand cast
    straight to float32 would keep digits (or a range) that the ``dtype=`` cast drops.
    ``casting=`` is checked on the operands as given, before they are cast; other dtypes:
    the operands as they are (cast to the compute dtype itself), as are non-numeric ones
    (refused by the dtype checks after).

    >>> [a.dtype.name for a in rounded_to([np.ones(2), np.ones(2, np.uint8)], np.dtype("f2"))]
    ['float16', 'uint8']
    """
    casts = rounding_dtypes(arrays, dtype, casting)
    return [a if to is None else _round(a, to) for a, to in zip(arrays, casts)]


def rounding_dtypes(
    arrays: Sequence[Any], dtype: np.dtype[Any] | None, casting: str | None = None
) -> list[np.dtype[Any] | None]:
    """Per operand, the small-float ``dtype=`` that :func:`rounded_to` casts it to, or None
    (it stays as it is); ``casting=`` checked on the operands as given.  The Dask backend
    casts block by block by it (a memmap is never read whole).

    >>> rounding_dtypes([np.ones(2), np.ones(2, np.uint8)], np.dtype("f2"))
    [dtype('float16'), None]
    """
    if dtype is None or not is_small_float(dtype):
        return [None] * len(arrays)
    if casting is not None:
        check_casting([np.dtype(a.dtype) for a in arrays], dtype, casting)
    return [dtype if rounds_into(np.dtype(a.dtype), dtype) else None for a in arrays]


def _round(a: Any, dtype: np.dtype[Any]) -> Any:
    """``a`` cast to ``dtype``; an ndarray's broadcast (zero-stride) axes stay broadcast,
    only its distinct elements cast (a review: a broadcast 8-byte operand became 200 MB)."""
    if not isinstance(a, np.ndarray) or 0 not in a.strides:
        return a.astype(dtype)
    distinct = a[tuple(slice(0, 1) if step == 0 else slice(None) for step in a.strides)]
    return np.broadcast_to(distinct.astype(dtype), a.shape)


def arrays_within(call: EinsumCall) -> tuple[list[Array], bool, EinsumCall]:
    """The operands as ndarrays (:func:`as_arrays`: rounded to a small-float ``dtype=``
    where that rounds), whether any was a Tensor, and ``call`` within the memory left
    beside the rounded copies (:func:`within_rounding`), checked before they are made (a
    review: 2 MB copied, then refused under a limit of 1,000 bytes); a call that is
    malformed besides (its equation, sizes or ``out=``) raises that error first, as when
    the check came after the plan (a review)."""
    arrays, tensor_in = as_arrays(call.operands)
    if call.casting is not None and call.dtype is not None and is_small_float(call.dtype):
        check_casting([np.dtype(a.dtype) for a in arrays], call.dtype, call.casting)
    try:
        within = within_rounding(call, arrays)
    except EinsumError:
        stand_ins = [_stand_in(a.shape, _rounded_dtype(a, call.dtype)) for a in arrays]
        out_arr = None if call.out is None else out_array(call.out)
        entry_for(call.key, stand_ins, out_arr, call.dtype, call.optimize)  # (its errors)
        raise
    return rounded_to(arrays, call.dtype), tensor_in, within


def _stand_in(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    """A one-element array seen with ``shape`` (zero strides): a plan's facts, no memory."""
    zeros = (0,) * len(shape)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape, zeros, writeable=False)


def within_rounding(call: EinsumCall, arrays: Sequence[Array]) -> EinsumCall:
    """``call`` with its memory limit lowered by the bytes :func:`rounded_to` makes of
    ``arrays`` (the operands before they are rounded) for a small-float ``dtype=`` (new
    arrays, alive through the call), so that the plan's peak and they stay within it; an
    :class:`EinsumError` when they alone pass it."""
    made = _rounding_bytes(call, arrays)
    if not made:
        return call
    limit = _limit_of(call)
    if made > limit:
        raise _rounding_error(call, made, limit)
    return replace(call, memory_limit=limit - made)


def _rounding_bytes(call: EinsumCall, arrays: Sequence[Array]) -> int:
    if call.dtype is None or not is_small_float(call.dtype):
        return 0
    return call.dtype.itemsize * sum(
        _distinct_elements(a) for a in arrays if rounds_into(np.dtype(a.dtype), call.dtype)
    )


def _rounding_error(call: EinsumCall, made: int, limit: int) -> EinsumError:
    return EinsumError(
        f"einsum {call.key!r}: the operands rounded to dtype={call.dtype} take "
        f"{made:,} bytes, more than the memory limit of {limit:,} bytes"
    )


def _limit_of(call: EinsumCall) -> int:
    """The call's memory limit in bytes: its own, else the process's (read now)."""
    return _memory.LIMIT if call.memory_limit is None else call.memory_limit


def _rounded_dtype(a: Array, dtype: np.dtype[Any] | None) -> np.dtype[Any]:
    return dtype if dtype is not None and rounds_into(np.dtype(a.dtype), dtype) else a.dtype


def _distinct_elements(a: Array) -> int:
    """The elements :func:`_round` makes of ``a`` (its broadcast axes stay broadcast)."""
    if a.size == 0:
        return 0
    return int(math.prod(n for n, step in zip(a.shape, a.strides) if step != 0))


def _converted(raw: Sequence[Any]) -> tuple[list[Array], bool]:
    arrays: list[Array] = []
    tensor_in = False
    for i, x in enumerate(raw):
        if type(x) is np.ndarray:
            arrays.append(x)
            continue
        if isinstance(x, Tensor):
            tensor_in = True
            arrays.append(x.numpy())
            continue
        try:
            check_conversion(x, f"einsum: operand {i}")
            arrays.append(np.asarray(x))
        except (TypeError, ValueError, OverflowError, RuntimeError) as exc:
            # RuntimeError: torch's, for a tensor that requires grad (with a Dask operand,
            # the Dask backend converts it: a review)
            if isinstance(exc, EinsumError):
                raise
            raise EinsumTypeError(
                f"einsum: operand {i} ({type(x).__name__}) cannot be converted to an array: {exc}"
            ) from None
    return arrays, tensor_in


def out_array(out: Any) -> Array:
    """The ndarray of ``out=``: a Tensor's, or the ndarray itself, nothing converted; a
    subclass is written through a plain ndarray view of it, as numpy.einsum writes it: its
    ufunc hooks never run (a masked array's ``__array_wrap__`` would refuse a product's
    shapes).

    >>> type(out_array(np.ma.zeros(2))).__name__
    'ndarray'
    """
    if isinstance(out, Tensor):
        return out.numpy()
    if isinstance(out, np.ndarray):
        return out if type(out) is np.ndarray else out.view(np.ndarray)
    raise EinsumTypeError(str(out_type_error(out, "einsum out=")))  # (einsum's family)


def run_entry(
    entry: Entry, arrays: Sequence[Array], call: EinsumCall, out_arr: Array | None, tensor_in: bool
) -> Any:
    """Check ``out=``, run within the memory limit (sliced when the plan's peak is over
    it), and return ``out``, a Tensor or NumPy's result."""
    _check_keywords(call, arrays, entry)
    limit = _limit_of(call)
    if out_arr is None and _order_copy_over(entry, call.order, limit):
        return _run_in_order(entry, arrays, call, limit, tensor_in)
    entry.settle_if_raising()
    if out_arr is not None and errors_raise():
        _run_then_copy(call, arrays, out_arr, limit, entry.plan.result_dtype)
        return call.out
    if entry.peak > limit:
        value = run_over_limit(entry, call.key, arrays, out_arr, call.dtype, call.optimize, limit)
    else:
        value = entry.run(arrays, out_arr)
    if call.out is not None:
        return call.out
    if call.order != "K":
        value = _in_order(value, call.order, arrays)
    if tensor_in:
        return wrap_like(np.asarray(value), True)
    return value


def _run_then_copy(
    call: EinsumCall, arrays: Sequence[Array], out: Array, limit: int, dtype: np.dtype[Any]
) -> None:
    """Compute into new arrays of ``dtype`` (the plan's with ``out``: the common dtype of
    the operands and ``out``), cast to ``out``'s dtype, and only then write ``out``: every
    floating-point error is raised before ``out`` is touched."""
    entry = entry_for(call.key, arrays, None, dtype, call.optimize)
    entry.settle()  # (a class's first call run directly raises no floating-point error)
    cast = _cast_bytes(out.shape, out.dtype, dtype)  # value.astype below
    if entry.peak + cast > limit:  # both buffers count (a review: the cast was not)
        try:
            found = run_limited(call.key, arrays, None, dtype, call.optimize, limit - cast)
        except EinsumError as exc:
            raise EinsumError(
                f"{exc} (under np.errstate(...='raise') einsum computes into new arrays "
                "first, so that an error leaves out= untouched: they count)"
            ) from None
    else:
        found = entry.run(arrays, None)
    value = np.asarray(found)
    if value.dtype != out.dtype:
        value = value.astype(out.dtype, casting="unsafe")
    np.copyto(out, value, casting="no")


def _order_copy_over(entry: Entry, order: str, limit: int) -> bool:
    """Whether laying the result out in ``order`` could copy it past ``limit``: the plan's
    peak and a second result together (a review: order='F' doubled the peak past it)."""
    if order == "K":  # (before the plan: a lazy one is not built for nothing)
        return False
    shape = entry.plan.call_spec.output_shape
    if len(shape) < 2:
        return False
    result = math.prod(shape) * entry.plan.result_dtype.itemsize
    return entry.peak + result > limit


def _run_in_order(
    entry: Entry, arrays: Sequence[Array], call: EinsumCall, limit: int, tensor_in: bool
) -> Any:
    """The result written straight into a new array in ``call.order``'s layout, which
    counts against ``limit`` (the plan runs within the rest), instead of copied into it."""
    plan = entry.plan
    check_result(plan, True, limit)
    shape = plan.call_spec.output_shape
    own = np.empty(shape, plan.result_dtype, order=_layout(call.order, arrays))
    run_limited(call.key, arrays, own, call.dtype, call.optimize, limit - own.nbytes)
    return wrap_like(own, True) if tensor_in else own


def _in_order(value: Any, order: str, arrays: Sequence[Array]) -> Any:
    """The result in NumPy's ``order=`` layout (``A``: Fortran when every operand is Fortran
    contiguous, :func:`.call.result_order`)."""
    if not isinstance(value, np.ndarray) or value.ndim < 2:
        return value
    if _layout(order, arrays) == "C":
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)
    return value if value.flags.f_contiguous else np.asfortranarray(value)


def _entry(call: EinsumCall) -> tuple[Entry, list[Array], Array | None, bool, EinsumCall]:
    arrays, tensor_in, within = arrays_within(call)
    out_arr = None
    if call.out is not None:
        out_arr = out_array(call.out)
        tensor_in = tensor_in or isinstance(call.out, Tensor)
    entry = entry_for(call.key, arrays, out_arr, call.dtype, call.optimize)
    return entry, arrays, out_arr, tensor_in, within


def einsum(call: EinsumCall) -> Any:
    """Run ``call`` on NumPy."""
    entry, arrays, out_arr, tensor_in, within = _entry(call)
    return run_entry(entry, arrays, within, out_arr, tensor_in)


def explain(call: EinsumCall) -> str:
    """The plan report of ``call`` for its operands' actual layouts, within its memory
    limit (operands rounded to a small-float ``dtype=`` are rounded first, as einsum
    rounds them, where they fit the limit)."""
    unrounded = as_arrays(call.operands)[0]
    made, limit = _rounding_bytes(call, unrounded), _limit_of(call)
    if made > limit:  # einsum refuses before rounding: the plan of its rounded operands' shapes
        shaped = [(a.shape, _rounded_dtype(a, call.dtype)) for a in unrounded]
        plan = plan_from_shapes(call.key, shaped, call.dtype, call.optimize)
        error = _rounding_error(call, made, limit)
        refused = f"memory limit: {limit:,} B; einsum would raise EinsumError: {error}"
        return f"{format_plan(plan)}\n  {refused}"
    entry, arrays, out_arr, _, call = _entry(call)  # within the rounding (a review)
    _check_keywords(call, arrays, entry)  # what einsum raises, before it runs anything
    within = _limit_of(call)
    facts = facts_of(arrays)
    if out_arr is None:
        report = explain_within(
            entry.plan, call.key, facts, None, call.dtype, call.optimize, within
        )
    else:
        out_facts = (out_arr.shape, out_arr.strides, out_arr.dtype)
        report = explain_into_out(
            entry.plan, call.key, facts, out_facts, call.dtype, call.optimize, within
        )
    if not made:
        return report
    # (the report's limit and peak are the plan's: say what the rounded copies add, a
    # review found the limit shown lowered by them and the call's peak past the one shown)
    return (
        f"{report}\n  rounded: the operands rounded to dtype={call.dtype} first take {made:,} B,"
        f" alive through the call, beside the plan's peak above (the plan keeps within the "
        f"memory limit of {limit:,} B less them: {within:,} B)"
    )


def explain_into_out(
    plan: Plan,
    key: Any,
    facts: tuple[Any, ...],
    out_facts: tuple[Any, ...],
    dtype: Any,
    optimize: Any,
    limit: int,
) -> str:
    """The report of a call into ``out=`` (of ``out_facts``) whose plan with it is
    ``plan``: that plan, within ``limit``; under ``np.errstate(...="raise")`` what
    :func:`_run_then_copy` runs instead, the plan without ``out=`` in the result's dtype
    within the limit less the cast's buffer, and a line saying so (a review: the plan with
    ``out=`` was shown, which einsum does not run there, and past a limit einsum raised
    where the report showed nothing over it).  For operands and for shapes alike."""
    if not errors_raise():
        return explain_within(plan, key, facts, out_facts, dtype, optimize, limit)
    result, (shape, _, out_dtype) = plan.result_dtype, out_facts
    cast = _cast_bytes(shape, out_dtype, result)
    apart = make_entry(key, facts, None, result, optimize).plan
    report = explain_within(apart, key, facts, None, result, optimize, limit - cast)
    line = (
        "out= under np.errstate(...='raise'): einsum runs the plan below (without out=) into "
        "new arrays, then copies the result into out, so that every floating-point error is "
        "raised before out is written"
        + (
            f"; the cast into out's {out_dtype} takes {cast:,} B of the memory limit"
            if cast
            else ""
        )
    )
    head, _, rest = report.partition("\n")
    return f"{head}\n  {line}\n{rest}"


def _cast_bytes(shape: tuple[int, ...], out_dtype: np.dtype[Any], dtype: Any) -> int:
    """The buffer a result of ``dtype`` cast into an ``out=`` of ``shape`` and ``out_dtype``
    takes under ``np.errstate(raise)`` (none when the dtypes are one): it counts against the
    memory limit (a review: it was not)."""
    return math.prod(shape) * out_dtype.itemsize if np.dtype(dtype) != out_dtype else 0


def _check_keywords(call: EinsumCall, arrays: Sequence[Array], entry: Entry) -> None:
    """``casting=`` and ``out=`` checked as einsum checks them, for its call and for
    ``explain``'s (which took no ``casting=``, and refused an ``out=`` that a call with
    ``casting="unsafe"`` writes: a review)."""
    if call.casting is not None:  # NumPy's rule: every operand into the computation dtype
        check_casting([a.dtype for a in arrays], entry.plan.result_dtype, call.casting)
    if call.out is not None:  # a Tensor or ndarray that can take the result's dtype by
        # the call's casting, writeable, sharing no memory with an operand
        check_einsum_out(call.out, arrays, entry.plan.result_dtype, call.casting or "same_kind")


def check_einsum_out(out: Any, arrays: Sequence[Array], dtype: Any, casting: str) -> None:
    """:func:`~einstride.transfer.check_out` for einsum's ``out=`` (and explain's), its
    type errors in einsum's family (a review: torch's were, NumPy's plain)."""
    try:
        check_out(out, arrays, dtype, "einsum out=", casting=casting)
    except TypeError as exc:
        if type(exc) is not TypeError:
            raise
        raise EinsumTypeError(str(exc)) from None


def cast_like(grad: Any, like: Any) -> Any:
    """A gradient in its operand's dtype, a real operand's the real part (as JAX's); for
    every NumPy-API array (Dask's too: lazy, nothing computed).

    >>> cast_like(np.array([1 + 2j]), np.zeros(1, np.float32))
    array([1.], dtype=float32)
    """
    found = getattr(like, "dtype", None)
    dtype = found if isinstance(found, np.dtype) else np.asarray(like).dtype
    if np.iscomplexobj(grad) and dtype.kind != "c":
        # a copy: the real part's view kept the whole complex buffer alive (a review: twice
        # the gradient's bytes past the call)
        return grad.real.astype(dtype, copy=True)
    return grad.astype(dtype, copy=False)


def _layout(order: str, arrays: Sequence[Array]) -> Literal["C", "F"]:
    """NumPy's layout for ``order=`` (not ``"K"``) of a result of ``arrays``."""
    fortran = [a.flags.f_contiguous for a in arrays]
    return "F" if result_order(order, fortran) == "F" else "C"
