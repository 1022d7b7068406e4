"""The public einsum functions ``einsum`` and ``einsum_path`` (``contract_expression`` is
in :mod:`.expression`).

NumPy arrays in -> NumPy arrays out; any :class:`~einstride.Tensor` in -> Tensor out.

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

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import memory as _memory
from ..tensors import Tensor, as_array, wrap_like
from ..transfer import check_out as transfer_check_out
from .backends.numpy.cache import (
    Entry,
    array_facts,
    checked_shape,
    dtype_of,
    entry_for,
    hot_entry,
    plan_from_shapes,
    split_sublists,
)
from .dask_dispatch import has_dask_operand
from .backends.numpy.plan import check_memory
from .backends.numpy.report import format_plan

__all__ = ["as_arrays", "check_out", "einsum", "einsum_path", "explain", "run_entry"]

Array = np.ndarray[Any, Any]


# -- operands --------------------------------------------------------------------------------


def as_arrays(raw: Sequence[Any]) -> tuple[list[Array], bool]:
    """Every operand as an ndarray (Tensors viewed, others through ``np.asarray``)."""
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
            arrays.append(np.asarray(x))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"einsum: operand {i} ({type(x).__name__}) cannot be converted to "
                            f"an array: {exc}") from None
    return arrays, tensor_in


# -- running ---------------------------------------------------------------------------------


def _limit(memory_limit: Any) -> int:
    if memory_limit is None:
        return _memory.LIMIT
    if isinstance(memory_limit, bool) or not hasattr(memory_limit, "__index__"):
        raise TypeError(f"einsum: memory_limit must be an int (bytes), not {memory_limit!r}")
    return int(memory_limit)


def check_out(out: Any, arrays: Sequence[Array], result: np.dtype[Any]) -> Array:
    """``out=`` must be an array that can take the result and shares no memory with any
    operand (checked before anything is written)."""
    return transfer_check_out(out, arrays, result, "einsum out=")


def run_entry(entry: Entry, arrays: Sequence[Array], out: Any, out_arr: Array | None,
              memory_limit: Any, tensor_in: bool) -> Any:
    """Check the memory limit, run, and return ``out``, a Tensor or NumPy's result."""
    limit = _limit(memory_limit)
    if entry.largest > limit:
        check_memory(entry.plan, limit)
    value = entry.run(arrays, out_arr)
    if out is not None:
        return out
    if tensor_in:
        return wrap_like(np.asarray(value), True)
    return value


_PLAIN_OPTIMIZE = frozenset({str, bool})
_ndarray = np.ndarray


def einsum(subscripts: Any, *operands: Any, out: Any = None, dtype: Any = None,
           optimize: Any = "auto", memory_limit: Any = None) -> Any:
    """Evaluate an Einstein-summation equation (see docs/einsum.md).

    ``einsum("ij,jk->ik", a, b)`` or the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.
    ``out=``: an array of the result's shape (any strides) that shares no memory with the
    operands.  ``dtype=``: the result dtype (operands are cast).  ``optimize``: the path
    finder for three and more operands.  ``memory_limit``: bytes one allocation may take
    (default: the machine's memory); a plan that needs more raises :class:`EinsumError`.

    >>> import numpy as np
    >>> einsum("i->", np.ones(3000, np.float16))    # float16 accumulates in float32
    np.float16(3000.0)
    >>> einsum("i->iii", np.ones(10**5))
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum 'i->iii': output would allocate ...
    """
    if out is dtype is memory_limit is None and type(subscripts) is str and (
            type(optimize) in _PLAIN_OPTIMIZE):
        # the hot path: plain arrays, a cached plan; no parsing, no path search, no checks
        # beyond the memory guard (the cache key holds every fact the plan depends on)
        facts: tuple[Any, ...] | None
        if len(operands) == 2:  # inlined _array_facts: the 2-operand case is the hot one
            a, b = operands
            facts = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype) if (
                type(a) is _ndarray and type(b) is _ndarray) else None
        elif len(operands) == 1:
            a = operands[0]
            facts = (a.shape, a.strides, a.dtype) if type(a) is _ndarray else None
        else:
            facts = array_facts(operands)
        if facts is not None:
            entry = hot_entry(subscripts, facts, optimize)
            if entry.largest > _memory.LIMIT:
                check_memory(entry.plan, _memory.LIMIT)
            return entry.run(operands, None)
    if has_dask_operand((subscripts, *operands)):
        from .backends.dask.backend import einsum_dask
        return einsum_dask(subscripts, *operands, out=out, dtype=dtype, optimize=optimize,
                           memory_limit=memory_limit)
    if isinstance(subscripts, str):
        eq_key: Any = subscripts
        raw: Sequence[Any] = operands
    else:
        eq_key, raw = split_sublists((subscripts, *operands))
    arrays, tensor_in = as_arrays(raw)
    out_arr = None
    if out is not None:
        tensor_in = tensor_in or isinstance(out, Tensor)
        out_arr = as_array(out)
    entry = entry_for(eq_key, arrays, out_arr, dtype, optimize)
    if out is not None:
        check_out(out, arrays, entry.plan.result_dtype)
    return run_entry(entry, arrays, out, out_arr, memory_limit, tensor_in)


# -- einsum_path -----------------------------------------------------------------------------


def _shape_or_array(x: Any) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """A tuple of ints is a shape (float64); anything else is an operand."""
    if isinstance(x, tuple) and all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                                    for d in x):
        return checked_shape(x, "shape"), np.dtype(np.float64)
    if has_dask_operand([x]):
        return tuple(int(d) for d in x.shape), np.dtype(x.dtype)
    arr = as_array(x) if isinstance(x, (Tensor, np.ndarray)) else as_arrays([x])[0][0]
    return arr.shape, arr.dtype


def einsum_path(subscripts: Any, *operands: Any, optimize: Any = "auto") -> tuple[list[Any], str]:
    """NumPy-compatible: ``(["einsum_path", (i, j), ...], report)`` for operands or shapes
    (a tuple of ints is taken as a shape); the report is the plan report.

    >>> path, report = einsum_path("ij,jk,kl->il", (2, 3), (3, 4), (4, 5), optimize="greedy")
    >>> path
    ['einsum_path', (1, 2), (0, 1)]
    """
    if isinstance(subscripts, str):
        eq_key: Any = subscripts
        raw: Sequence[Any] = operands
    else:
        eq_key, raw = split_sublists((subscripts, *operands))
    plan = plan_from_shapes(eq_key, [_shape_or_array(x) for x in raw], None, optimize)
    return ["einsum_path", *plan.path], format_plan(plan)


def explain(subscripts: Any, *shapes: Sequence[int], dtype: Any = None,
            optimize: Any = "auto") -> str:
    """The plan report for C-contiguous operands of the given shapes and ``dtype``
    (default float64): what ``einstride explain`` prints."""
    dt = np.dtype(np.float64) if dtype is None else dtype_of(dtype)
    shaped = [(checked_shape(s, f"shape {i}"), dt) for i, s in enumerate(shapes)]
    eq_key: Any = subscripts
    if not isinstance(subscripts, str):
        raise TypeError("explain takes the string form of the equation")
    return format_plan(plan_from_shapes(eq_key, shaped, None, optimize))


