"""opt_einsum's own entry points on einstride, for code written for opt_einsum with the
import swapped (``import einstride as oe``): ``contract`` and ``contract_path``
(``contract_expression`` is the engine's, :mod:`.engine.expression`).

``contract`` is :func:`einstride.einsum` under opt_einsum's keywords; ``contract_path``
returns the path einsum runs for these operands, with opt_einsum's own ``PathInfo`` of it
(its FLOP count, largest intermediate and table: opt_einsum describes the path einstride
chose, so code reading ``info.opt_cost`` keeps working).  ``memory_limit`` is einstride's
everywhere (bytes of the call's peak, or a size string such as ``"64MiB"``), not
opt_einsum's bound on the largest intermediate in elements.

>>> import numpy as np
>>> a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
>>> contract("ij,jk,kl->il", a, b, c)[0, 0]
np.float64(12.0)
>>> path, info = contract_path("ij,jk,kl->il", (1000, 2), (2, 1000), (1000, 3), shapes=True)
>>> path, int(info.opt_cost)
([(1, 2), (0, 1)], 24000)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import opt_einsum  # type: ignore[import-untyped]

from .engine import einsum
from .engine.api import path_einsum_runs
from .engine.call import (
    EquationKey,
    checked_memory_limit,
    checked_shape,
    converted_operand,
    equation_and_operands,
    equation_of,
    shape_and_dtype,
)
from .engine.expression import check_backend
from .engine.spec.equation import ELLIPSIS, Equation
from .errors import EinsumError, EinsumTypeError

__all__ = ["contract", "contract_path"]

Path = list[tuple[int, ...]]


def contract(
    subscripts: Any,
    *operands: Any,
    out: Any = None,
    dtype: Any = None,
    order: Any = "K",
    casting: Any = None,
    use_blas: bool = True,
    optimize: Any = True,
    memory_limit: Any = None,
    backend: Any = "auto",
) -> Any:
    """``opt_einsum.contract``: :func:`einstride.einsum` with opt_einsum's keywords.

    ``optimize=True`` (opt_einsum's default) is ``"auto"``; every other form is einsum's
    (opt_einsum's finder names and ``PathOptimizer`` objects included).  ``use_blas`` is
    taken and ignored (einstride's plan runs a product by BLAS where its cost model says it
    pays).  ``backend=`` is ``"auto"``, ``"einstride"`` or the operands' own library
    (nothing is converted, as an expression's call); ``memory_limit`` is einstride's
    (:func:`_limit`); ``casting=`` by default follows einsum's rules (opt_einsum's default
    is ``"safe"``, which einstride's ``dtype=`` casts do not apply).

    >>> import numpy as np
    >>> contract(np.ones((2, 3)), [0, 1], np.ones(3), [1], [0], optimize="greedy")
    array([3., 3.])
    """
    if type(backend) is not str or backend != "auto":  # (no == on an array-like first)
        key, raw = equation_and_operands(subscripts, operands)
        check_backend(backend, raw, equation_of(key).text)
    return einsum(
        subscripts,
        *operands,
        out=out,
        dtype=dtype,
        order=order,
        casting=casting,
        optimize="auto" if optimize is True else optimize,
        memory_limit=_limit(memory_limit),
    )


def contract_path(
    subscripts: Any,
    *operands: Any,
    use_blas: bool = True,
    optimize: Any = True,
    memory_limit: Any = None,
    shapes: bool = False,
) -> tuple[Path, Any]:
    """``opt_einsum.contract_path``: ``(path, info)``, the path :func:`contract` runs for
    these operands (or, with ``shapes=True``, C-contiguous float64 operands of these
    shapes), within ``memory_limit`` where given, and opt_einsum's ``PathInfo`` of it.
    An equation opt_einsum does not take (an output label repeated, ``i->ii``) has no
    ``PathInfo``: an ``EinsumError`` pointing to ``einstride.einsum_path``.

    >>> import numpy as np
    >>> path, info = contract_path("ab,bc->ac", np.ones((2, 3)), np.ones((3, 4)))
    >>> path, int(info.largest_intermediate)
    ([(0, 1)], 8)
    """
    key, raw = equation_and_operands(subscripts, operands)
    try:
        shapes = bool(shapes)
    except ValueError:  # (an array: NumPy's "truth value ... ambiguous" named nothing)
        raise EinsumTypeError(f"contract_path: shapes must be a bool, not {shapes!r}") from None
    if shapes:
        shaped = [(checked_shape(x, f"shape {i}"), np.dtype(np.float64)) for i, x in enumerate(raw)]
    else:  # (a tuple is an operand's data here, as in opt_einsum, never a shape)
        shaped = [_shape_and_dtype(x, i) for i, x in enumerate(raw)]
    finder = "auto" if optimize is True else optimize
    path = path_einsum_runs(key, raw, shaped, finder, _limit(memory_limit))
    return path, _path_info(key, raw, path, shapes, use_blas)


def _shape_and_dtype(x: Any, i: int) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """An operand's shape and dtype; a tuple is its data, sized before it is converted (a
    review: ``(range(10**15),)`` was NumPy's ``MemoryError``)."""
    if isinstance(x, tuple):
        x = converted_operand(x, f"contract_path: operand {i}")
    return shape_and_dtype(x, f"operand {i}")


def _path_info(
    key: EquationKey, operands: Sequence[Any], path: Path, shapes: bool, use_blas: bool
) -> Any:
    """opt_einsum's ``PathInfo`` of ``path`` (its own count of FLOPs and sizes), for the
    equation as written, or the sublist form's as opt_einsum writes it (its own sublist
    form fails with ``shapes=True``: an ``AttributeError``, a review); whatever opt_einsum
    raises is an ``EinsumError`` (no ``IndexError`` or the like escapes)."""
    equation = key if isinstance(key, str) else _as_letters(equation_of(key))
    try:
        _, info = opt_einsum.contract_path(
            equation, *operands, optimize=path, shapes=shapes, use_blas=use_blas
        )
    except Exception as error:  # (a peer's errors, of any class)
        raise EinsumError(
            f"contract_path: opt_einsum cannot describe this equation's path {path} ({error}); "
            "einstride.einsum_path reports it"
        ) from None
    return info


def _as_letters(equation: Equation) -> str:
    """A sublist-form equation in opt_einsum's letters, as its own conversion writes it
    (``get_symbol`` of each int's rank among the labels), the output written out.

    >>> from .engine.call import equation_of, split_sublists
    >>> _as_letters(equation_of(split_sublists([(2, 3), [5, 1], (3,), [Ellipsis]])[0]))
    'ba,...->...ab'
    """
    ranks = {name: rank for rank, name in enumerate(sorted(equation.names, key=int))}

    def term(labels: Sequence[int]) -> str:
        return "".join(
            "..." if label == ELLIPSIS else opt_einsum.get_symbol(ranks[equation.names[label]])
            for label in labels
        )

    return ",".join(term(t) for t in equation.terms) + "->" + term(equation.output)


def _limit(memory_limit: Any) -> int | None:
    """einstride's ``memory_limit`` (bytes of the call's peak); opt_einsum's ``"max_input"``
    (its largest intermediate no larger than the largest input, in elements) is refused by
    name: its meaning is not einstride's."""
    if isinstance(memory_limit, str) and memory_limit == "max_input":
        raise EinsumError(
            "contract: memory_limit='max_input' is opt_einsum's bound on the largest "
            "intermediate; einstride's memory_limit bounds the call's peak in bytes (an int, "
            "or a size string such as '64MiB')"
        )
    return checked_memory_limit(memory_limit)
