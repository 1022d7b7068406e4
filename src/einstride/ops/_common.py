"""Shared plumbing of the ops: the result-kind rule, views through the Layout algebra, and
argument checks that turn a bad shape, axis, size or count into ``LayoutError`` (a
``ValueError``) and a value of the wrong type into ``TypeError``.

Result kind: NumPy in, NumPy out; any Tensor in, Tensor out (``tensor.any_tensor``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import LayoutError, OutOfRangeError, ragged_errors, value_errors
from ..layout import Layout, as_int
from ..narrow import as_dtype
from ..tensors import Tensor, as_array, as_tensor

__all__ = [
    "Array",
    "as_count",
    "as_int",
    "check_holds",
    "converted_fill",
    "dense",
    "finish",
    "map_view",
    "map_views",
    "require_rank",
]

Array = np.ndarray[Any, Any]


def as_count(value: Any, what: str) -> int:
    """A non-negative integer argument; negative is a ``LayoutError``."""
    n = as_int(value, what)
    if n < 0:
        raise LayoutError(f"{what} must be >= 0, got {n}")
    return n


def require_rank(arr: Any, minimum: int, op: str, what: str = "input") -> None:
    """Reject an ``arr`` (anything with ``ndim``) of rank below ``minimum``."""
    if arr.ndim < minimum:
        raise LayoutError(f"{op}: {what} must have rank >= {minimum}, got shape {arr.shape}")


def dense(arr: Any) -> Array:
    """``arr`` as a row-major contiguous ndarray (copied only if needed; rank 0 stays 0)."""
    result: Array = np.asarray(arr, order="C")
    return result


def finish(result: Array, as_tensor_result: bool) -> Any:
    """An ndarray result in the caller's kind (a Tensor view of it, or the ndarray itself)."""
    return as_tensor(result) if as_tensor_result else result


def map_view(x: Any, derive: Callable[[Layout], Layout]) -> Any:
    """A view of ``x`` under ``derive(layout)``, in ``x``'s kind; no data is copied.

    A NumPy input is wrapped with ``as_tensor`` first, so an input with negative strides
    (which no Layout can describe) is copied once there and the result views that copy.
    """
    t = as_tensor(x)
    view = Tensor._wrap(t.storage, derive(t.layout))
    return view if isinstance(x, Tensor) else view.numpy()


def map_views(x: Any, derive: Callable[[Layout], Sequence[Layout]]) -> list[Any]:
    """``map_view`` for an operation that yields several views (split, unstack)."""
    t = as_tensor(x)
    views = [Tensor._wrap(t.storage, layout) for layout in derive(t.layout)]
    return views if isinstance(x, Tensor) else [v.numpy() for v in views]


def check_holds(value: Any, dtype: Any, what: str) -> None:
    """A fill value (a number, or an array-like of them, its size checked by the caller)
    that an integer ``dtype`` cannot hold is an ``OutOfRangeError``: NumPy's casts wrap
    ``1000.0``, ``np.int64(1000)`` or ``np.array(1000)`` into int8 silently (-24), where a
    Python int raises (a review).  A float is truncated first, as the cast does; NaN never
    fits.

    >>> check_holds(np.array([3, 1000]), np.int8, "full")
    Traceback (most recent call last):
    einstride.errors.OutOfRangeError: full: a value of 1000 is out of bounds for int8
    >>> check_holds(127.9, np.int8, "full")
    """
    kind = as_dtype(dtype)
    if kind.kind not in "iu":
        return
    if isinstance(value, int):  # (bool, and a Python int past int64)
        extremes: list[Any] = [value]
    else:
        values = as_array(value)
        if values.dtype.kind == "c":  # its real part is what the cast keeps (a review)
            values = values.real
        if values.dtype.kind not in "iuf" or values.size == 0:
            return
        if values.dtype.kind == "f" and np.isnan(values).any():
            raise OutOfRangeError(f"{what}: NaN cannot be held by {kind}")
        extremes = [values.min(), values.max()]
    bounds = np.iinfo(kind)
    for extreme in extremes:
        if isinstance(extreme, (float, np.floating)):
            number = int(np.trunc(extreme)) if np.isfinite(extreme) else bounds.max + 1
        else:
            number = int(extreme)
        if not bounds.min <= number <= bounds.max:
            raise OutOfRangeError(f"{what}: a value of {extreme} is out of bounds for {kind}")


def converted_fill(value: Any, dtype: Any, what: str) -> Array:
    """A fill value (a number, or an array-like of them, its size checked by the caller)
    as an array of ``dtype``, cast as NumPy's assignment casts it (a float truncated into
    an integer dtype; a complex number's real part into a real one, with NumPy's
    ``ComplexWarning``); one the dtype cannot hold is an ``OutOfRangeError`` naming
    ``what``: an integer out of its bounds (:func:`check_holds`), a string that is no
    number (NumPy's bare ``ValueError`` named no function, and ``one_hot`` gave a bare
    ``TypeError`` for a complex number that ``full`` and ``pad`` cast: a review); a value
    of no kind the dtype takes (``None`` or an object into numbers, a string into
    bfloat16, which NumPy does not cast) a ``TypeError`` naming ``what``.

    >>> converted_fill(2.5, np.int8, "full"), converted_fill("3", np.float32, "full")
    (array(2, dtype=int8), array(3., dtype=float32))
    >>> converted_fill("a", np.float64, "pad")
    Traceback (most recent call last):
    einstride.errors.OutOfRangeError: pad: 'a' cannot be converted to float64
    """
    check_holds(value, dtype, what)
    kind = as_dtype(dtype)
    with value_errors(what), ragged_errors(what):
        try:
            return np.asarray(value).astype(kind, casting="unsafe")
        except (ValueError, TypeError) as error:
            if type(error) not in (ValueError, TypeError):  # (UnicodeError and the like)
                raise
            of = OutOfRangeError if isinstance(error, ValueError) else TypeError
            if np.ndim(value) == 0:
                raise of(f"{what}: {value!r} cannot be converted to {kind}") from None
            raise of(f"{what}: {error} (into {kind})") from None
