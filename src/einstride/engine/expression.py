"""``contract_expression``: a reusable einsum for fixed shapes.

Parsing and the path search happen once, when the expression is made; each call looks up
(or makes, once per operand layout) a compiled plan in the expression's own thread-safe LRU.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import memory as _memory
from .._compat import VALUE_BASED, holds_scalar
from ..errors import EinsumError, EinsumTypeError
from ..narrow import is_small_float
from ..tensors import Tensor
from .backends.numpy.backend import arrays_within, out_array, run_entry
from .backends.numpy.cache import Entry, array_facts, facts_of, make_entry, plan_from_shapes
from .backends.numpy.direct import with_direct_note
from .backends.numpy.limited import explain_within, limited_plan, run_limited, shape_facts
from .backends.numpy.options import DEFAULT as _DEFAULT_OPTIONS
from .backends.numpy.options import PlannerOptions
from .backends.numpy.steps import Plan
from .call import (
    EinsumCall,
    EquationKey,
    check_conversion,
    checked_memory_limit,
    checked_shape,
    dtype_of,
    equation_and_operands,
    equation_of,
)
from .registry import DEFAULT, backend_for
from .spec.dtypes import check_numeric
from .spec.equation import bind, quoted
from .spec.paths import FoundPath, finder_form
from .spec.walk import plan_path

__all__ = ["Expression", "check_backend", "contract_expression"]


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

    With ``memory_limit`` (bytes or a string such as ``"64MiB"``), the path is searched
    within it when the expression is made, and every call keeps its peak within it (sliced
    if need be; a call's own ``memory_limit=`` overrides it).
    """

    def __init__(
        self,
        key: EquationKey,
        shapes: Sequence[Sequence[int]],
        dtype: Any = None,
        optimize: Any = "auto",
        memory_limit: Any = None,
    ) -> None:
        self.key = key
        self.shapes = tuple(checked_shape(s, f"shape {i}") for i, s in enumerate(shapes))
        self.dtype = None if dtype is None else dtype_of(dtype)
        if self.dtype is not None:  # (refused here, not at every call: a review)
            check_numeric(self.dtype, "dtype= is")
        # operands rounded to a small-float dtype= first (as_arrays): no fast path then
        self.rounds = self.dtype is not None and is_small_float(self.dtype)
        self.memory_limit = checked_memory_limit(memory_limit)
        self.spec = bind(equation_of(key), self.shapes)
        self.subscripts = self.spec.text
        # (found paths keep their finder: the plans' reports name it)
        self._path: list[tuple[int, ...]] = FoundPath(
            plan_path(self.spec, optimize), finder_form(optimize)
        )
        if self.memory_limit is not None:
            self._path = FoundPath(self._limited_path(optimize), finder_form(optimize))
        self._caches()

    @property
    def path(self) -> list[tuple[int, ...]]:
        """The contraction path, fixed when the expression is made: every plan follows it
        (read-only: a path set afterwards would reach the plans not cached yet only)."""
        return self._path

    def _caches(self) -> None:
        # per-layout plans: a thread-safe bounded LRU (functools' C implementation) of a
        # builder holding the expression's values, not the expression (a cache of its bound
        # method made every expression a reference cycle, freed only by the collector)
        build = _Builder(self.key, self.subscripts, self.shapes, self.dtype, self.path)
        self._entry = functools.lru_cache(maxsize=64)(build)
        self._plain = functools.lru_cache(maxsize=64)(build.plain)  # the hot path's

    def __getstate__(self) -> dict[str, Any]:
        """The expression without its plan caches, which are rebuilt when it is unpickled:
        a process pool or Dask's process workers take it, as opt_einsum's expressions.

        >>> import pickle
        >>> expr = contract_expression("ij,jk->ik", (2, 3), (3, 4))
        >>> pickle.loads(pickle.dumps(expr))(np.ones((2, 3)), np.ones((3, 4)))[0, 0]
        np.float64(3.0)
        """
        state = self.__dict__.copy()
        del state["_entry"], state["_plain"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "path" in state:  # (pickled before the path was read-only)
            state["_path"] = state.pop("path")
        self.__dict__.update(state)
        self._caches()

    def _facts(self, default: Any = np.float64) -> tuple[Any, ...]:
        """The plan-cache facts of C-contiguous operands (of ``dtype``, else ``default``)."""
        dt = self.dtype if self.dtype is not None else np.dtype(default)
        return shape_facts([(s, dt) for s in self.shapes])

    def _limited_path(self, optimize: Any) -> tuple[tuple[int, ...], ...]:
        """The path searched within the memory limit, for operands of ``dtype``, else of
        float64, else of one byte: without ``dtype=`` a limit that float64 operands cannot
        meet may suit smaller items, and each call keeps to it as einsum does (a review
        found float32 operands refused when the expression was made); one that no dtype
        meets is refused here."""
        assert self.memory_limit is not None
        limit, first = self.memory_limit, None
        for default in [np.float64] if self.dtype is not None else [np.float64, np.int8]:
            try:
                facts = self._facts(default)
                return limited_plan(self.key, facts, None, self.dtype, optimize, limit).plan.path
            except EinsumError as error:
                first = first or error
        assert first is not None
        raise first  # (float64's: the operands' usual dtype)

    def _limit(self, memory_limit: Any) -> int:
        """The limit of one call: its own, else the expression's, else the process's."""
        limit = self._given_limit(memory_limit)
        return _memory.LIMIT if limit is None else limit

    def _given_limit(self, memory_limit: Any) -> int | None:
        """The limit of one call as given: its own, else the expression's; None where neither
        is given, for each backend's own default (the process's limit for NumPy, the task
        memory budget for Dask: a review found Dask's tasks held to the process's)."""
        limit = checked_memory_limit(memory_limit)
        return self.memory_limit if limit is None else limit

    def __call__(
        self, *operands: Any, out: Any = None, memory_limit: Any = None, backend: Any = "auto"
    ) -> Any:
        if type(backend) is not str or backend != "auto":  # (no == on an array-like first)
            check_backend(backend, operands, self.subscripts)
        if out is None and memory_limit is None and not self.rounds:
            facts = array_facts(operands)
            if facts is not None and not (VALUE_BASED and holds_scalar(facts)):
                entry = self._plain(facts, _DEFAULT_OPTIONS.options)
                limit = self.memory_limit
                if limit is None:
                    limit = _memory.LIMIT
                entry.settle_if_raising()
                if entry.peak > limit:
                    return run_limited(self.key, operands, None, self.dtype, self.path, limit)
                return entry.run(operands, None)
        _check_operands(self.subscripts, self.shapes, [_shape(x, i) for i, x in
                                                       enumerate(operands)])  # fmt: skip
        call = EinsumCall(
            key=self.key,
            operands=operands,
            out=out,
            dtype=self.dtype,
            optimize=self.path,
            memory_limit=self._given_limit(memory_limit),
        )
        backend = backend_for(operands)
        if backend.__name__ != DEFAULT:
            return backend.einsum(call)
        arrays, tensor_in, within = arrays_within(call)
        out_arr = None
        if out is not None:
            out_arr = out_array(out)
            tensor_in = tensor_in or isinstance(out, Tensor)
        out_facts = None if out_arr is None else (out_arr.shape, out_arr.strides, out_arr.dtype)
        entry = self._entry(facts_of(arrays), out_facts, _DEFAULT_OPTIONS.options)
        return run_entry(entry, arrays, within, out_arr, tensor_in)

    def plan(self) -> Plan:
        """The plan for C-contiguous operands (of ``dtype``, default float64)."""
        dt = self.dtype if self.dtype is not None else np.dtype(np.float64)
        return plan_from_shapes(self.key, [(s, dt) for s in self.shapes], self.dtype, self.path)

    def explain(self) -> str:
        """The plan report (for C-contiguous operands), within the expression's memory limit
        (the sliced plan when the plan's peak is over it)."""
        facts, limit = self._facts(), self._limit(None)
        report = explain_within(self.plan(), self.key, facts, None, self.dtype, self.path, limit)
        # (an expression plans its first call: it is made to be called again)
        return with_direct_note(report, self.key, facts, self.dtype, self.path, limit, False)

    def __str__(self) -> str:
        return self.explain()

    def __repr__(self) -> str:
        shapes = ", ".join(str(s) for s in self.shapes)
        return f"<Expression {self.subscripts!r} for shapes {shapes}>"


def check_backend(backend: Any, operands: Sequence[Any], subscripts: str) -> None:
    """opt_einsum's ``backend=`` of an expression's call (or of ``contract``): ``"auto"``
    (or None, or ``"einstride"``) or the library the call runs on (its operands' own: numpy,
    torch or dask; a module's name such as ``"dask.array"`` too, in any case); another
    library is refused, not converted to.

    >>> check_backend("NumPy", [np.ones(2)], "i->")
    >>> check_backend("torch", [np.ones(2)], "i->")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum 'i->': backend='torch', but this call runs on numpy, ...
    """
    if backend is None:
        return
    if not isinstance(backend, str):
        raise EinsumTypeError(
            f"einsum {quoted(subscripts)}: backend= takes a library's name, got {backend!r}"
        )
    name = backend.lower().split(".")[0]
    if name in ("auto", "einstride"):
        return
    library = backend_for(operands).__name__.rsplit(".", 1)[-1]
    if name != library:
        raise EinsumError(
            f"einsum {quoted(subscripts)}: backend={backend!r}, but this call runs on "
            f"{library}, its operands' library: einstride converts nothing (convert them to "
            "run it elsewhere)"
        )


@dataclass(frozen=True, slots=True)
class _Builder:
    """An expression's entry for a layout (its operands' facts, its ``out=``'s, the
    planner options), from the expression's values."""

    key: EquationKey
    subscripts: str
    shapes: tuple[tuple[int, ...], ...]
    dtype: np.dtype[Any] | None
    path: Any

    def __call__(self, facts: tuple[Any, ...], out_facts: Any, options: PlannerOptions) -> Entry:
        _check_operands(self.subscripts, self.shapes, facts[0::3])
        return make_entry(self.key, facts, out_facts, self.dtype, self.path, options)

    def plain(self, facts: tuple[Any, ...], options: PlannerOptions) -> Entry:
        return self(facts, None, options)


def _check_operands(
    subscripts: str, declared: Sequence[tuple[int, ...]], shapes: Sequence[tuple[int, ...]]
) -> None:
    if len(shapes) != len(declared):
        raise EinsumError(
            f"einsum {quoted(subscripts)}: the expression takes "
            f"{len(declared)} operand(s), got {len(shapes)}"
        )
    for i, (shape, made_for) in enumerate(zip(shapes, declared)):
        if shape != made_for:
            raise EinsumError(
                f"einsum {quoted(subscripts)}: operand {i} has shape "
                f"{shape}, but the expression was made for {made_for}"
            )


def contract_expression(
    subscripts: Any,
    *shapes: Any,
    dtype: Any = None,
    optimize: Any = "auto",
    memory_limit: Any = None,
    out: Any = None,
) -> Expression:
    """A reusable :class:`Expression` for operands of the given shapes: the string form
    ``contract_expression("ij,jk->ik", (2, 3), (3, 4))`` or opt_einsum's interleaved form
    ``contract_expression((2, 3), [0, 1], (3, 4), [1, 2], [0, 2])``.

    ``dtype`` is the result dtype, as ``einsum``'s ``dtype=`` (``None``: ``np.result_type`` of
    the operands of each call); ``explain()`` reports the plan for C-contiguous operands of
    that dtype (float64 when ``None``).  ``memory_limit`` bounds the peak of every call, as
    ``einsum``'s does (the path is searched within it once, here).  ``out=`` belongs to each
    call, not here (:class:`EinsumError`, a ``ValueError``, as opt_einsum).

    >>> contract_expression((2, 3), [0, 1], (3, 4), [1, 2], [0, 2])
    <Expression '[0,1],[1,2]->[0,2]' for shapes (2, 3), (3, 4)>
    >>> expr = contract_expression("ab,cbe,ae->ac", (64, 64), (64, 64, 64), (64, 64),
    ...                            memory_limit="512KiB")
    >>> print(expr.explain().splitlines()[3])
      sliced over: a: 5 chunks of 13 (the last 12)
    """
    if out is not None:
        raise EinsumError(
            "contract_expression: out= is given to each call of the expression, not when it is made"
        )
    key, shaped = equation_and_operands(subscripts, shapes)
    return Expression(key, shaped, dtype, optimize, memory_limit)


def _shape(x: Any, i: int) -> tuple[Any, ...]:
    """Operand ``i``'s shape without converting it (``np.shape`` for lists and scalars)."""
    shape = getattr(x, "shape", None)
    if isinstance(shape, tuple):
        return shape
    if isinstance(x, range):
        return (len(x),)
    check_conversion(x, f"einsum: operand {i}")
    try:
        return tuple(np.shape(x))
    except (TypeError, ValueError) as exc:  # (an __array__ raising TypeError: a review)
        raise EinsumTypeError(
            f"einsum: operand {i} ({type(x).__name__}) cannot be converted to an array: {exc}"
        ) from None
