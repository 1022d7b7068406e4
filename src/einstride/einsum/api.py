"""The public einsum functions: ``einsum``, ``einsum_path`` and ``contract_expression``.

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

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import EinsumError
from ..tensor import Tensor, as_array, wrap_like
from ..transfer import check_destination, check_no_overlap
from .dask_dispatch import has_dask_operand
from .equation import Equation, bind, parse_sublists, parse_subscripts
from .execute import Program, compile_plan
from .paths import find_path, optimize_key
from .plan import build_plan, check_memory
from .report import format_plan
from .steps import Plan

__all__ = ["Expression", "contract_expression", "einsum", "einsum_path"]

Array = np.ndarray[Any, Any]

_CACHE_SIZE = 512


@functools.cache
def physical_memory() -> int:
    """The machine's physical memory in bytes: the default ``memory_limit``."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 2**63 - 1


@dataclass(frozen=True)
class _Entry:
    """A cached plan, its compiled program and its largest single allocation."""

    plan: Plan
    run: Program
    largest: int


# -- the equation key: hashable, and enough to re-parse -------------------------------------


def _equation(eq_key: Any) -> Equation:
    if isinstance(eq_key, str):
        return parse_subscripts(eq_key)
    _, terms, output = eq_key
    return parse_sublists(terms, output)


def _split_sublists(args: Sequence[Any]) -> tuple[Any, list[Any]]:
    """``op0, sub0, op1, sub1, ..., [out_sub]`` -> (hashable equation key, operands)."""
    operands = list(args[0::2])
    subs = args[1::2]
    out = None
    if len(args) % 2 == 1:
        out = args[-1]
        operands = operands[:-1]
    eq = parse_sublists(subs, out)   # validates now: the key below must be hashable
    terms = tuple(tuple(Ellipsis if lab == -1 else int(eq.names[lab]) for lab in t)
                  for t in eq.terms)
    out_key = None if out is None else tuple(
        Ellipsis if lab == -1 else int(eq.names[lab]) for lab in eq.output)
    return ("sublists", terms, out_key), operands


# -- operands --------------------------------------------------------------------------------


def _as_arrays(raw: Sequence[Any]) -> tuple[list[Array], bool]:
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


# -- the plan cache --------------------------------------------------------------------------


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _cached_entry(eq_key: Any, facts: tuple[Any, ...], out_facts: Any, dtype: Any,
                  opt_key: Any) -> _Entry:
    """Thread-safe bounded LRU (functools' C implementation) of plans and programs."""
    optimize = list(opt_key[1:]) if isinstance(opt_key, tuple) else opt_key
    return _make_entry(eq_key, facts, out_facts, dtype, optimize)


def _make_entry(eq_key: Any, facts: tuple[Any, ...], out_facts: Any, dtype: Any,
                optimize: Any) -> _Entry:
    shapes, strides, dtypes = facts[0::3], facts[1::3], facts[2::3]
    spec = bind(_equation(eq_key), shapes)
    out = None
    if out_facts is not None:
        out = _check_out_facts(spec.text, spec.output_shape, out_facts)
    plan = build_plan(spec, dtypes, strides, out=out, dtype=dtype, optimize=optimize)
    return _Entry(plan, compile_plan(plan), plan.largest_bytes)


def _check_out_facts(text: str, shape: tuple[int, ...], out_facts: Any
                     ) -> tuple[tuple[int, ...], np.dtype[Any]]:
    out_shape, out_strides, out_dtype = out_facts
    if out_shape != shape:
        raise EinsumError(f"einsum {text!r}: out= has shape {out_shape}, but the result has "
                          f"shape {shape}")
    return out_strides, out_dtype


def _facts(arrays: Sequence[Array]) -> tuple[Any, ...]:
    facts: list[Any] = []
    for a in arrays:
        facts += (a.shape, a.strides, a.dtype)
    return tuple(facts)


def clear_plan_cache() -> None:
    """Forget every cached plan (and parsed equation)."""
    _cached_entry.cache_clear()
    parse_subscripts.cache_clear()


def plan_cache_info() -> Any:
    """``functools`` cache statistics of the plan cache (hits, misses, maxsize, currsize)."""
    return _cached_entry.cache_info()


def _entry_for(eq_key: Any, arrays: Sequence[Array], out: Array | None, dtype: Any,
               optimize: Any) -> _Entry:
    facts = _facts(arrays)
    out_facts = None if out is None else (out.shape, out.strides, out.dtype)
    dtype_key = None if dtype is None else _dtype(dtype)
    opt_key = optimize_key(optimize)
    try:
        hash((eq_key, facts, out_facts, dtype_key, opt_key))
    except TypeError:
        opt_key = None
    if opt_key is None:
        return _make_entry(eq_key, facts, out_facts, dtype_key, optimize)
    return _cached_entry(eq_key, facts, out_facts, dtype_key, opt_key)


def _dtype(dtype: Any) -> np.dtype[Any]:
    try:
        found: np.dtype[Any] = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"einsum: dtype={dtype!r} is not a dtype ({exc})") from None
    return found


# -- running ---------------------------------------------------------------------------------


def _limit(memory_limit: Any) -> int:
    if memory_limit is None:
        return physical_memory()
    if isinstance(memory_limit, bool) or not hasattr(memory_limit, "__index__"):
        raise TypeError(f"einsum: memory_limit must be an int (bytes), not {memory_limit!r}")
    return int(memory_limit)


def _check_out(out: Any, arrays: Sequence[Array], result: np.dtype[Any]) -> Array:
    if not isinstance(out, (np.ndarray, Tensor)):
        raise TypeError(f"einsum: out= must be a numpy.ndarray or Tensor, not "
                        f"{type(out).__name__}")
    arr = as_array(out)
    check_destination(arr, "einsum out=")
    if not np.can_cast(result, arr.dtype, "same_kind"):
        raise TypeError(f"einsum: cannot write the {result} result into out= of dtype "
                        f"{arr.dtype}")
    check_no_overlap(arr, arrays, "einsum out=")
    return arr


def _run(entry: _Entry, arrays: Sequence[Array], out: Any, out_arr: Array | None,
         memory_limit: Any, tensor_in: bool) -> Any:
    limit = _limit(memory_limit)
    if entry.largest > limit:
        check_memory(entry.plan, limit)
    value = entry.run(arrays, out_arr)
    if out is not None:
        return out
    if tensor_in:
        return wrap_like(np.asarray(value), True)
    return value


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
    if has_dask_operand((subscripts, *operands)):
        from .dask_backend import einsum_dask
        return einsum_dask(subscripts, *operands, out=out, dtype=dtype, optimize=optimize,
                           memory_limit=memory_limit)
    if isinstance(subscripts, str):
        eq_key: Any = subscripts
        raw: Sequence[Any] = operands
    else:
        eq_key, raw = _split_sublists((subscripts, *operands))
    arrays, tensor_in = _as_arrays(raw)
    out_arr = None
    if out is not None:
        tensor_in = tensor_in or isinstance(out, Tensor)
        out_arr = as_array(out)
    entry = _entry_for(eq_key, arrays, out_arr, dtype, optimize)
    if out is not None:
        _check_out(out, arrays, entry.plan.result_dtype)
    return _run(entry, arrays, out, out_arr, memory_limit, tensor_in)


# -- einsum_path -----------------------------------------------------------------------------


def _shape_or_array(x: Any) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """A tuple of ints is a shape (float64); anything else is an operand."""
    if isinstance(x, tuple) and all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                                    for d in x):
        return tuple(int(d) for d in x), np.dtype(np.float64)
    if has_dask_operand([x]):
        return tuple(int(d) for d in x.shape), np.dtype(x.dtype)
    arr = as_array(x) if isinstance(x, (Tensor, np.ndarray)) else _as_arrays([x])[0][0]
    return arr.shape, arr.dtype


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _plan_from_shapes(eq_key: Any, shapes_dtypes: Sequence[tuple[tuple[int, ...], np.dtype[Any]]],
                      dtype: Any, optimize: Any) -> Plan:
    facts: list[Any] = []
    for shape, dt in shapes_dtypes:
        facts += (shape, _c_strides(shape, dt.itemsize), dt)
    return _make_entry(eq_key, tuple(facts), None, None if dtype is None else _dtype(dtype),
                       optimize).plan


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
        eq_key, raw = _split_sublists((subscripts, *operands))
    plan = _plan_from_shapes(eq_key, [_shape_or_array(x) for x in raw], None, optimize)
    return ["einsum_path", *plan.path], format_plan(plan)


def explain(subscripts: Any, *shapes: Sequence[int], dtype: Any = None,
            optimize: Any = "auto") -> str:
    """The plan report for C-contiguous operands of the given shapes and ``dtype``
    (default float64): what ``einstride explain`` prints."""
    dt = np.dtype(np.float64) if dtype is None else _dtype(dtype)
    shaped = [(tuple(int(d) for d in s), dt) for s in shapes]
    eq_key: Any = subscripts
    if not isinstance(subscripts, str):
        raise TypeError("explain takes the string form of the equation")
    return format_plan(_plan_from_shapes(eq_key, shaped, None, optimize))


# -- contract_expression ---------------------------------------------------------------------


class Expression:
    """A reusable contraction for fixed shapes: parsing and the path search happen once;
    each call reuses a compiled plan per operand layout (cached, thread-safe).

    >>> import numpy as np
    >>> expr = contract_expression("ij,jk->ik", (2, 3), (3, 4))
    >>> a, b = np.ones((2, 3)), np.ones((3, 4))
    >>> expr(a, b)
    array([[3., 3., 3., 3.],
           [3., 3., 3., 3.]])
    >>> print(expr.explain().splitlines()[0])
    einsum 'ij,jk->ik'  (labels: ij,jk->ik)
    """

    def __init__(self, subscripts: str, shapes: Sequence[Sequence[int]], dtype: Any = None,
                 optimize: Any = "auto") -> None:
        self.subscripts = subscripts
        self.shapes = tuple(tuple(int(d) for d in s) for s in shapes)
        self.dtype = None if dtype is None else _dtype(dtype)
        self.spec = bind(parse_subscripts(subscripts), self.shapes)
        sizes = self.spec.sizes
        terms = [tuple(dict.fromkeys(t)) for t in self.spec.inputs]
        self.path = list(find_path(terms, tuple(dict.fromkeys(self.spec.output)), sizes, optimize))
        self._plans: OrderedDict[Any, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _entry(self, arrays: Sequence[Array], out: Array | None) -> _Entry:
        key = (_facts(arrays), None if out is None else (out.shape, out.strides, out.dtype))
        with self._lock:
            entry = self._plans.get(key)
            if entry is not None:
                self._plans.move_to_end(key)
                return entry
        entry = _make_entry(self.subscripts, key[0], key[1], self.dtype, self.path)
        with self._lock:
            self._plans[key] = entry
            while len(self._plans) > 64:
                self._plans.popitem(last=False)
        return entry

    def __call__(self, *operands: Any, out: Any = None, memory_limit: Any = None) -> Any:
        if len(operands) != len(self.shapes):
            raise EinsumError(f"einsum {self.subscripts!r}: the expression takes "
                              f"{len(self.shapes)} operand(s), got {len(operands)}")
        if has_dask_operand(operands):
            from .dask_backend import expression_call
            return expression_call(self, operands, out, memory_limit)
        arrays, tensor_in = _as_arrays(operands)
        for i, (arr, shape) in enumerate(zip(arrays, self.shapes)):
            if arr.shape != shape:
                raise EinsumError(f"einsum {self.subscripts!r}: operand {i} has shape "
                                  f"{arr.shape}, but the expression was made for {shape}")
        out_arr = None
        if out is not None:
            tensor_in = tensor_in or isinstance(out, Tensor)
            out_arr = as_array(out)
        entry = self._entry(arrays, out_arr)
        if out is not None:
            _check_out(out, arrays, entry.plan.result_dtype)
        return _run(entry, arrays, out, out_arr, memory_limit, tensor_in)

    def plan(self) -> Plan:
        """The plan for C-contiguous operands (of ``dtype``, default float64)."""
        dt = self.dtype if self.dtype is not None else np.dtype(np.float64)
        return _plan_from_shapes(self.subscripts, [(s, dt) for s in self.shapes], self.dtype,
                                 self.path)

    def explain(self) -> str:
        """The plan report (for C-contiguous operands)."""
        return format_plan(self.plan())

    def __str__(self) -> str:
        return self.explain()

    def __repr__(self) -> str:
        shapes = ", ".join(str(s) for s in self.shapes)
        return f"<Expression {self.subscripts!r} for shapes {shapes}>"


def contract_expression(subscripts: str, *shapes: Sequence[int], dtype: Any = None,
                        optimize: Any = "auto") -> Expression:
    """A reusable :class:`Expression` for operands of the given shapes."""
    if not isinstance(subscripts, str):
        raise TypeError("contract_expression takes the string form of the equation")
    return Expression(subscripts, shapes, dtype, optimize)
