"""The dtype rules every backend shares: which dtypes einsum accepts, the result dtype, and
the dtype products and sums run in.

>>> result_dtype([np.dtype("int32"), np.dtype("float32")])
dtype('float64')
>>> compute_dtype(np.dtype("float16")), compute_dtype(np.dtype("int8"))
(dtype('float32'), dtype('int8'))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import EinsumError, EinsumTypeError
from ...narrow import as_dtype, is_small_float

__all__ = ["check_casting", "check_numeric", "compute_dtype", "result_dtype", "rounds_into"]


def check_numeric(dtype: np.dtype[Any], what: str) -> None:
    """Raise ``TypeError`` unless ``dtype`` is bool, int, float (ml_dtypes' too) or complex.

    >>> check_numeric(np.dtype("U3"), "operand 0 has dtype")
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumTypeError: einsum: operand 0 has dtype <U3, which is not numeric ...
    """
    if dtype.kind not in "biufc" and not is_small_float(dtype):
        raise EinsumTypeError(
            f"einsum: {what} {dtype}, which is not numeric (bool, int, float, complex)"
        )


def check_casting(dtypes: Sequence[np.dtype[Any]], dtype: np.dtype[Any], casting: Any) -> None:
    """NumPy's ``casting=`` rule for the operands' cast to the ``dtype`` they are computed
    in (``dtype=``, else their common dtype, ``out=``'s included), every backend's.

    >>> check_casting([np.dtype("f8")], np.dtype("i4"), "same_kind")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumTypeError: einsum: operand 0 has dtype float64, which cannot be ...
    """
    for i, d in enumerate(dtypes):
        if not np.can_cast(d, dtype, casting):
            raise EinsumTypeError(
                f"einsum: operand {i} has dtype {d}, which cannot be cast to {dtype} (the "
                f"dtype it is computed in) by the rule casting={casting!r}"
            )


def result_dtype(
    dtypes: Sequence[np.dtype[Any]], dtype: Any = None, out: np.dtype[Any] | None = None
) -> np.dtype[Any]:
    """``dtype`` if given, else ``np.result_type`` of the operands' dtypes and ``out=``'s
    (checked numeric, the operands' first: an error names the operand).  NumPy's einsum
    computes in the common dtype of its operands *and* ``out``: an ``int8`` sum into an
    ``int64`` ``out=`` does not wrap, a ``float32`` one into ``float64`` is not rounded.
    A ``dtype=`` of the other byte order means its native twin, as NumPy's promotion gives
    (its einsum computes in it as given: garbage from its C loops, a review).

    >>> result_dtype([np.dtype("uint8")], out=np.dtype("int64"))
    dtype('int64')
    >>> result_dtype([np.dtype("float64")], out=np.dtype("float32"))   # cast when written
    dtype('float64')
    >>> result_dtype([np.dtype("float32")], dtype=">f8")
    dtype('float64')
    """
    for i, d in enumerate(dtypes):
        check_numeric(d, f"operand {i} has dtype")
    try:
        found = as_dtype(dtype).newbyteorder("=") if dtype is not None else np.result_type(*dtypes)
    except TypeError as exc:
        raise EinsumTypeError(
            f"einsum: no common dtype for {[str(d) for d in dtypes]}: {exc}"
        ) from None
    except ValueError:  # np.result_type() of nothing
        raise EinsumError("einsum: at least one operand is required") from None
    check_numeric(found, "the result has dtype")
    if dtype is None and out is not None and out != found:
        found = _widened(found, dtypes, out)
    return found


def _widened(
    found: np.dtype[Any], dtypes: Sequence[np.dtype[Any]], out: np.dtype[Any]
) -> np.dtype[Any]:
    """The common dtype of the operands' and a numeric ``out=``'s, promoted all at once as
    NumPy's ``result_type(*operands, out)`` (in two steps, uint8 and int8 gave int16, then
    float32 with a float16 ``out``, where NumPy computes in float16: ``casting="safe"``
    refused the ``out``, a review); ``found`` (the operands' common dtype) where ``out`` is
    not numeric (``out=``'s own check refuses it) or has no common dtype with them
    (ml_dtypes' small floats with some NumPy types: the result is cast into ``out``).

    >>> _widened(np.dtype("i2"), [np.dtype("u1"), np.dtype("i1")], np.dtype("f2"))
    dtype('float16')
    """
    if out.kind not in "biufc" and not is_small_float(out):
        return found
    try:
        common = np.result_type(*dtypes, out)
    except TypeError:
        try:
            common = np.result_type(found, out)
        except TypeError:
            return found
    return common if common.kind in "biufc" or is_small_float(common) else found


def compute_dtype(result: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype products and sums run in: float32 for 16-bit and smaller floats."""
    return np.dtype(np.float32) if is_small_float(result) else result


def rounds_into(given: np.dtype[Any], dtype: np.dtype[Any] | None) -> bool:
    """Whether an operand of dtype ``given`` is rounded to ``dtype=`` before the products:
    a small float (computed in float32, :func:`compute_dtype`) that not every value of
    ``given`` fits, as NumPy casts the operands to ``dtype=``; a non-numeric operand is
    left to :func:`check_numeric`.

    >>> rounds_into(np.dtype("f8"), np.dtype("f2")), rounds_into(np.dtype("u1"), np.dtype("f2"))
    (True, False)
    """
    if dtype is None or not is_small_float(dtype):
        return False
    numeric = given.kind in "biufc" or is_small_float(given)
    return numeric and not np.can_cast(given, dtype, "safe")
