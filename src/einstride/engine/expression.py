"""``contract_expression``: a reusable einsum for fixed shapes.

Parsing and the path search happen once, when the expression is made; each call looks up
(or makes, once per operand layout) a compiled plan in the expression's own thread-safe LRU.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import memory as _memory
from ..errors import EinsumError
from ..tensors import Tensor, as_array
from .api import as_arrays, check_out, run_entry
from .backends.numpy.cache import (
    Entry,
    array_facts,
    checked_shape,
    dtype_of,
    facts_of,
    make_entry,
    plan_from_shapes,
)
from .dask_dispatch import has_dask_operand
from .spec.equation import bind, parse_subscripts
from .spec.paths import find_path
from .backends.numpy.plan import check_memory
from .backends.numpy.report import format_plan
from .backends.numpy.steps import Plan

__all__ = ["Expression", "contract_expression"]

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
        self.shapes = tuple(checked_shape(s, f"shape {i}") for i, s in enumerate(shapes))
        self.dtype = None if dtype is None else dtype_of(dtype)
        self.spec = bind(parse_subscripts(subscripts), self.shapes)
        sizes = self.spec.sizes
        terms = [tuple(dict.fromkeys(t)) for t in self.spec.inputs]
        self.path = list(find_path(terms, tuple(dict.fromkeys(self.spec.output)), sizes, optimize))
        # per-layout plans: a thread-safe bounded LRU (functools' C implementation)
        self._entry = functools.lru_cache(maxsize=64)(self._build)

    def _build(self, facts: tuple[Any, ...], out_facts: Any) -> Entry:
        self._check_operands(facts[0::3], len(facts) // 3)
        return make_entry(self.subscripts, facts, out_facts, self.dtype, self.path)

    def _check_operands(self, shapes: Sequence[tuple[int, ...]], count: int) -> None:
        if count != len(self.shapes):
            raise EinsumError(f"einsum {self.subscripts!r}: the expression takes "
                              f"{len(self.shapes)} operand(s), got {count}")
        for i, (shape, declared) in enumerate(zip(shapes, self.shapes)):
            if shape != declared:
                raise EinsumError(f"einsum {self.subscripts!r}: operand {i} has shape "
                                  f"{shape}, but the expression was made for {declared}")

    def __call__(self, *operands: Any, out: Any = None, memory_limit: Any = None) -> Any:
        if out is None and memory_limit is None:
            facts = array_facts(operands)
            if facts is not None:
                entry = self._entry(facts, None)
                if entry.largest > _memory.LIMIT:
                    check_memory(entry.plan, _memory.LIMIT)
                return entry.run(operands, None)
        if len(operands) != len(self.shapes):
            raise EinsumError(f"einsum {self.subscripts!r}: the expression takes "
                              f"{len(self.shapes)} operand(s), got {len(operands)}")
        if has_dask_operand(operands):
            from .backends.dask.backend import expression_call
            return expression_call(self, operands, out, memory_limit)
        arrays, tensor_in = as_arrays(operands)
        for i, (arr, shape) in enumerate(zip(arrays, self.shapes)):
            if arr.shape != shape:
                raise EinsumError(f"einsum {self.subscripts!r}: operand {i} has shape "
                                  f"{arr.shape}, but the expression was made for {shape}")
        out_arr = None
        if out is not None:
            tensor_in = tensor_in or isinstance(out, Tensor)
            out_arr = as_array(out)
        out_facts = None if out_arr is None else (out_arr.shape, out_arr.strides, out_arr.dtype)
        entry = self._entry(facts_of(arrays), out_facts)
        if out is not None:
            check_out(out, arrays, entry.plan.result_dtype)
        return run_entry(entry, arrays, out, out_arr, memory_limit, tensor_in)

    def plan(self) -> Plan:
        """The plan for C-contiguous operands (of ``dtype``, default float64)."""
        dt = self.dtype if self.dtype is not None else np.dtype(np.float64)
        return plan_from_shapes(self.subscripts, [(s, dt) for s in self.shapes], self.dtype,
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
    """A reusable :class:`Expression` for operands of the given shapes.

    ``dtype`` is the result dtype, as ``einsum``'s ``dtype=`` (``None``: ``np.result_type`` of
    the operands of each call); ``explain()`` reports the plan for C-contiguous operands of
    that dtype (float64 when ``None``).
    """
    if not isinstance(subscripts, str):
        raise TypeError("contract_expression takes the string form of the equation")
    return Expression(subscripts, shapes, dtype, optimize)
