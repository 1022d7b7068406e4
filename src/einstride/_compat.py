"""What the supported Pythons and NumPys differ in, in one place.

``assert_never`` is ``typing``'s from Python 3.11 (the ``match`` dispatches' exhaustiveness
check); on 3.10 the same function, written here.  NumPy 1 promotes a 0-d operand among
arrays by its value (``float32 array x 2.5`` is float32; NumPy 2, NEP 50, makes it float64,
as einstride's dtype rules do): :func:`promoted_scalars` gives such operands the dtype NumPy
1's ``numpy.einsum`` computes in, and :func:`holds_scalar` tells the hot paths, which plan
by dtypes alone, to leave such calls to the front end.

>>> assert_never.__name__
'assert_never'
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import numpy as np

__all__ = ["VALUE_BASED", "assert_never", "holds_scalar", "promoted_scalars"]

VALUE_BASED = np.lib.NumpyVersion(np.__version__) < "2.0.0"
"""Whether NumPy promotes 0-d operands by value (NumPy 1)."""


def holds_scalar(facts: tuple[Any, ...]) -> bool:
    """Whether the ``(shape, strides, dtype)`` facts of several operands include a 0-d one
    among others (only asked under :data:`VALUE_BASED`).

    >>> holds_scalar(((3,), (8,), np.dtype("f4"), (), (), np.dtype("f8")))
    True
    """
    shapes = facts[0::3]
    return len(shapes) > 1 and () in shapes and any(shapes)


def promoted_scalars(arrays: list[Any]) -> list[Any]:
    """The operands with each 0-d one cast to ``np.result_type`` of them all where NumPy
    promotes by value (NumPy 1: ``numpy.einsum`` computes a float32 array times 2.5 in
    float32); as they are on NumPy 2.

    >>> ops = promoted_scalars([np.ones(3, np.float32), np.asarray(2.5)])
    >>> ops[1].dtype == (np.float32 if VALUE_BASED else np.float64)
    True
    """
    if not VALUE_BASED or len(arrays) < 2:
        return arrays
    if all(a.ndim for a in arrays) or not any(a.ndim for a in arrays):
        return arrays
    common = np.result_type(*arrays)
    return [a.astype(common) if a.ndim == 0 and a.dtype != common else a for a in arrays]


if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # pragma: no cover (the CI runs 3.11)

    def assert_never(value: NoReturn, /) -> NoReturn:
        """Fail for a case a ``match`` left unhandled (mypy: the value's type is then not
        ``NoReturn``)."""
        raise AssertionError(f"Expected code to be unreachable, but got: {value!r}")
