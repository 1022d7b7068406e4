"""Checking every contender's result against NumPy before it is timed.

The oracle is ``numpy.einsum`` in float64 (complex128 for complex inputs), or a case's
own brute-force ``reference``. A result must have the oracle's shape, the NumPy result
dtype, and values within a tolerance that depends on the dtype, scaled by the largest
magnitude in the oracle (so that long sums of mixed signs are judged fairly).

>>> ops = (np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
>>> expected = oracle("ij,jk->ik", ops)
>>> mismatch(ops[0] @ ops[1], expected, np.dtype(np.float32)) is None
True
>>> mismatch(ops[0] @ ops[1] + 1, expected, np.dtype(np.float32))
'max abs error 1 over tolerance 0.0003 (largest |value| 3)'
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .case import Operands

__all__ = ["as_ndarray", "forget_numpy_parses", "mismatch", "oracle", "tolerance"]

# relative tolerance by the itemsize of one real component
_FLOAT_TOLERANCE = {2: 1e-2, 4: 1e-4, 8: 1e-10}


def tolerance(dtype: np.dtype[Any]) -> float:
    """The relative tolerance for results of ``dtype`` (0 for exact integer results).

    >>> tolerance(np.dtype(np.float32)), tolerance(np.dtype(np.complex128))
    (0.0001, 1e-10)
    >>> tolerance(np.dtype(np.int64))
    0.0
    """
    if dtype.kind == "c":
        return _FLOAT_TOLERANCE.get(dtype.itemsize // 2, 1e-2)
    if dtype.kind == "f" or dtype.kind == "V":  # "V": ml_dtypes' bfloat16 and friends
        return _FLOAT_TOLERANCE.get(dtype.itemsize, 1e-2)
    return 0.0


def oracle(equation: str, ops: Operands) -> NDArray[Any]:
    """``numpy.einsum`` on widened copies: float64, or complex128 for complex operands;
    NumPy's cache of parses left as it was (:func:`_parses_uncached`)."""
    complex_input = any(op.dtype.kind == "c" for op in ops)
    widest = np.complex128 if complex_input else np.float64
    wide = [op.astype(widest) if op.dtype.kind in "fcV" else op for op in ops]
    with _parses_uncached():
        return np.asarray(np.einsum(equation, *wide, optimize=True))


def _einsumfunc() -> Any:
    """NumPy's einsum module (``numpy._core`` from 2.0, ``numpy.core`` before)."""
    return sys.modules.get("numpy._core.einsumfunc") or sys.modules.get("numpy.core.einsumfunc")


def forget_numpy_parses() -> None:
    """Forget numpy.einsum's parses of pairwise steps: since 2.3 it keeps each one by its
    equation and shapes (``_parse_eq_to_batch_matmul``, an LRU cache), which a network's
    first call meets none of; its fresh calls forget them, as einstride's plans are
    (measured: random-10 of degree 3 contracts in 0.37 ms on the parses of a previous
    call, 0.68 ms without).

    >>> _ = np.einsum("ij,jk,kl->il", *[np.ones((2, 2))] * 3, optimize=True)
    >>> forget_numpy_parses()
    >>> parse = getattr(_einsumfunc(), "_parse_eq_to_batch_matmul", None)
    >>> parse is None or parse.cache_info().currsize == 0
    True
    """
    parse = getattr(_einsumfunc(), "_parse_eq_to_batch_matmul", None)
    if parse is not None and hasattr(parse, "cache_clear"):
        parse.cache_clear()


@contextlib.contextmanager
def _parses_uncached() -> Iterator[None]:
    """numpy.einsum without its cache of parses (the function behind it, swapped in): the
    oracle's computation of shapes about to be timed leaves the numpy.einsum(optimize)
    contender no parse of them, and keeps the ones its own earlier calls made (a step of
    a chain whose shapes do not grow: those a user's next call would reuse too)."""
    module = _einsumfunc()
    cached = getattr(module, "_parse_eq_to_batch_matmul", None)
    plain = getattr(cached, "__wrapped__", None)
    if plain is None:
        yield
        return
    module._parse_eq_to_batch_matmul = plain
    try:
        yield
    finally:
        module._parse_eq_to_batch_matmul = cached


def as_ndarray(result: object) -> NDArray[Any]:
    """A NumPy view of a result: ndarray, einstride Tensor or torch tensor (``.numpy()``,
    copied to the host first when it lives on a device).

    >>> as_ndarray([1, 2]).tolist()
    [1, 2]
    """
    if not isinstance(result, np.ndarray) and hasattr(result, "numpy"):
        result = result.cpu().numpy() if hasattr(result, "cpu") else result.numpy()
    return np.asarray(result)


def mismatch(result: object, expected: NDArray[Any], dtype: np.dtype[Any]) -> str | None:
    """Why ``result`` is wrong, or ``None`` when it matches ``expected`` in ``dtype``."""
    actual = as_ndarray(result)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if actual.dtype != dtype:
        return f"dtype {actual.dtype}, expected {dtype}"
    wide = actual.astype(expected.dtype)
    largest = float(np.max(np.abs(expected))) if expected.size else 0.0
    tol = tolerance(dtype)
    if np.allclose(wide, expected, rtol=tol, atol=tol * max(largest, 1.0), equal_nan=True):
        return None
    error = float(np.max(np.abs(wide - expected)))
    limit = tol * max(largest, 1.0)
    return f"max abs error {error:.3g} over tolerance {limit:.3g} (largest |value| {largest:.3g})"
