"""Creation functions, as NumPy (default dtype float64), each returning a new dense tensor.

Without a tensor input the result is a ``Tensor``; the ``*_like`` functions follow their
input's kind (NumPy in, NumPy out) and always produce a dense row-major result.

>>> full((2, 2), 7).numpy().tolist()
[[7, 7], [7, 7]]
>>> arange(0.0, 1.0, 0.25).numpy().tolist()
[0.0, 0.25, 0.5, 0.75]
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import LayoutError, OutOfRangeError, named_errors, ragged_errors, value_errors
from ..layout import Layout
from ..memory import check_allocation, check_array, check_array_like
from ..narrow import as_dtype
from ..tensors import Tensor, any_tensor, as_array, as_tensor
from ._common import Array, as_count, converted_fill, finish

__all__ = [
    "arange",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]


def _shape(shape: Any, dtype: Any, op: str) -> tuple[int, ...]:
    """A validated shape: lengths ``>= 0``, an element count int64 can hold, and an array of
    ``dtype`` within the memory limit.

    >>> _shape((10**8, 10**8), float, "zeros")
    Traceback (most recent call last):
    einstride.errors.MemoryLimitError: zeros of shape (100000000, 100000000) (float64) would ...
    """
    dims = Layout.create(shape).shape
    check_array(dims, dtype, op)
    return dims


@named_errors
def zeros(shape: Any, dtype: Any = float) -> Tensor:
    """A new Tensor of zeros.

    >>> zeros((2, 0)).shape
    (2, 0)
    """
    return as_tensor(np.zeros(_shape(shape, dtype, "zeros"), dtype))


@named_errors
def ones(shape: Any, dtype: Any = float) -> Tensor:
    """A new Tensor of ones.

    >>> ones(3, dtype=int).numpy().tolist()
    [1, 1, 1]
    """
    return as_tensor(np.ones(_shape(shape, dtype, "ones"), dtype))


@named_errors
def full(shape: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """A new Tensor filled with ``fill_value`` (dtype inferred from it unless given); a value
    the dtype cannot hold is an ``OutOfRangeError``.

    >>> full(2, 1.5).numpy().tolist()
    [1.5, 1.5]
    """
    check_array_like(fill_value, dtype, "full fill_value")
    with ragged_errors("full fill_value"):
        kind = np.asarray(fill_value).dtype if dtype is None else dtype
    dims = _shape(shape, kind, "full")
    _check_fill_shape(fill_value, dims, "full")
    value = converted_fill(fill_value, kind, "full")
    return as_tensor(np.full(dims, value, kind))


def _check_fill_shape(fill_value: Any, dims: tuple[int, ...], what: str) -> None:
    """``fill_value`` broadcasts to ``dims``, checked before it is converted (a broadcast
    view of 10**14 elements was converted whole, a review), else a ``LayoutError`` naming
    ``what`` (NumPy's message named no argument: a review)."""
    with ragged_errors(f"{what} fill_value"):
        value_shape = np.shape(fill_value)
    extra = len(value_shape) - len(dims)
    if extra > 0 and all(n == 1 for n in value_shape[:extra]):
        value_shape = value_shape[extra:]  # (NumPy's copyto drops them: a review)
    try:
        fits = np.broadcast_shapes(value_shape, dims) == dims
    except ValueError:
        fits = False
    if not fits:
        raise LayoutError(f"{what}: fill_value of shape {value_shape} does not broadcast to {dims}")


@named_errors
def zeros_like(t: Any, dtype: Any = None) -> Any:
    """Zeros with ``t``'s shape and (unless given) dtype; new and dense, in ``t``'s kind.

    >>> zeros_like(np.ones((2, 3)).T).strides
    (16, 8)
    """
    arr = as_array(t)
    kind = arr.dtype if dtype is None else dtype
    check_array(arr.shape, kind, "zeros_like")  # ``t`` may be a broadcast view
    return finish(np.zeros(arr.shape, kind), any_tensor(t))


@named_errors
def ones_like(t: Any, dtype: Any = None) -> Any:
    """Ones with ``t``'s shape and (unless given) dtype; new and dense, in ``t``'s kind.

    >>> ones_like(np.zeros(2, np.int8)).tolist()
    [1, 1]
    """
    arr = as_array(t)
    kind = arr.dtype if dtype is None else dtype
    check_array(arr.shape, kind, "ones_like")
    return finish(np.ones(arr.shape, kind), any_tensor(t))


@named_errors
def full_like(t: Any, fill_value: Any, dtype: Any = None) -> Any:
    """``fill_value`` with ``t``'s shape and (unless given) dtype; new, dense, in ``t``'s kind.

    >>> full_like(np.zeros(2), 4).tolist()
    [4.0, 4.0]
    """
    arr = as_array(t)
    kind = arr.dtype if dtype is None else dtype
    check_array(arr.shape, kind, "full_like")
    check_array_like(fill_value, kind, "full_like fill_value")
    _check_fill_shape(fill_value, arr.shape, "full_like")
    value = converted_fill(fill_value, kind, "full_like")
    return finish(np.full(arr.shape, value, kind), any_tensor(t))


@named_errors
def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` as ``numpy.arange`` (numbers, ``Decimal``,
    ``Fraction``, datetimes and timedeltas); a zero step is a ``ValueError``, bounds that are
    not scalars a ``TypeError``.  The length is worked out, and sized, before NumPy runs.  A
    new Tensor.

    >>> arange(3).numpy().tolist()
    [0, 1, 2]
    >>> arange(np.datetime64("2020-01-01"), np.datetime64("2020-01-03")).numpy().tolist()
    [datetime.date(2020, 1, 1), datetime.date(2020, 1, 2)]
    """
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    first, last, stride = _bound(start, "start"), _bound(stop, "stop"), _bound(step, "step")
    if _is_zero(stride):  # (after _bound: an array step was compared element by element)
        raise ValueError("arange: step must not be zero")
    _check_arange_size(first, last, stride, dtype)
    with value_errors("arange"):  # (a bound the dtype cannot hold: NumPy's OverflowError)
        values = np.arange(first, last, stride, dtype=dtype)
    _check_integers_held(values, first, stride, "arange")
    return as_tensor(values)


def _check_integers_held(values: Array, first: Any, step: Any, op: str) -> None:
    """An integer result whose exact values its dtype cannot hold is an ``OutOfRangeError``
    (NumPy wraps them around: ``arange(0, 300, dtype=int8)`` ended ``41, 42, 43``, where
    ``full(1, 300, int8)`` raises; a review).  NumPy's integer ``arange`` starts at
    ``int(start)`` and steps by ``int(start + step) - int(start)`` (1 for ``arange(0.5, 100,
    0.5)``: a review), so the first and the last of those decide."""
    if values.dtype.kind not in "iu" or not values.size:
        return
    plain = [_plain(v, values.dtype) for v in (first, step)]
    if not all(isinstance(v, (int, float)) for v in plain):
        return  # (Decimal, Fraction: into an integer dtype only through NumPy's own rules)
    start = math.trunc(plain[0])
    delta = math.trunc(plain[0] + plain[1]) - start
    last = start + (values.size - 1) * delta
    _check_fits(min(start, last), max(start, last), values.dtype, op)


def _check_fits(low: Any, high: Any, dtype: np.dtype[Any], op: str) -> None:
    """Exact values from ``low`` to ``high`` fit ``dtype``'s integers once NumPy truncates
    them (``high`` below its largest plus one), else an ``OutOfRangeError``."""
    info = np.iinfo(dtype)
    if not (info.min <= low and high < info.max + 1):
        raise OutOfRangeError(
            f"{op}: values from {low} to {high} do not fit {dtype} ([{info.min}, {info.max}])"
        )


def _is_zero(step: Any) -> bool:
    try:
        return bool(step == 0) or (isinstance(step, dt.timedelta) and not step)
    except (TypeError, ValueError):
        return False  # not a scalar: _bound says so


def _bound(value: Any, name: str) -> Any:
    """A scalar bound of ``arange`` (a 0-d array or a Tensor is read as its value); a bound
    with elements of its own would make NumPy's length arithmetic allocate."""
    if isinstance(value, (np.ndarray, Tensor)):
        if value.ndim:
            raise TypeError(f"arange: {name} must be a scalar, got an array of shape {value.shape}")
        return as_array(value)[()]
    if isinstance(value, (list, tuple, range)):
        raise TypeError(f"arange: {name} must be a scalar, not a {type(value).__name__}")
    return value


# What one element of an object result (Decimal, Fraction) costs besides its pointer.
_BOXED_ITEM = 128


def _check_arange_size(start: Any, stop: Any, step: Any, dtype: Any) -> None:
    """Size ``arange``'s result (its length as NumPy computes it) before NumPy allocates it.

    >>> _check_arange_size(0, 1e18, 1, None)
    Traceback (most recent call last):
    einstride.errors.MemoryLimitError: arange of shape (1000000000000000000,) (float64) would ...
    """
    try:
        kind = as_dtype(dtype) if dtype is not None else np.result_type(start, stop, step)
    except (TypeError, ValueError):
        times = (dt.date, dt.timedelta, np.datetime64, np.timedelta64)
        dated = any(isinstance(v, times) for v in (start, stop, step))
        kind = np.dtype(np.int64 if dated else object)  # datetimes become datetime64 items
    count = _arange_length(*(_plain(v, kind) for v in (start, stop, step)))
    if count is None:  # (NumPy's "Maximum allowed size exceeded" named nothing: a review)
        raise ValueError(
            f"arange: the length from start {start!r} to stop {stop!r} by step {step!r} is "
            "not finite"
        )
    if kind.hasobject:
        check_allocation(count * (8 + _BOXED_ITEM), f"arange of {count} Python objects")
    else:
        check_array((count,), kind, "arange")


def _plain(value: Any, kind: np.dtype[Any]) -> Any:
    """A bound in Python's exact arithmetic (NumPy ints would wrap around); a string read as
    a datetime when the dtype is one."""
    if isinstance(value, (np.integer, np.bool_)) and not isinstance(value, np.timedelta64):
        return int(value)
    if isinstance(value, (np.floating, np.complexfloating)):
        return complex(value) if np.iscomplexobj(value) else float(value)
    if isinstance(value, str) and kind.kind in "mM":
        with value_errors("arange"):
            return np.asarray(value, kind)[()]
    return value


def _arange_length(start: Any, stop: Any, step: Any) -> int | None:
    """``ceil((stop - start) / step)`` (at least 0) in the bounds' own arithmetic: exact for
    ints, ``Decimal`` and ``Fraction``; datetime spans count in their unit (a Python datetime
    in microseconds, as NumPy converts it); complex bounds take the shorter of the real and
    imaginary lengths, as NumPy does.  ``None`` when not finite."""
    try:
        span = stop - start
        if isinstance(span, int) and isinstance(step, int):
            return max(0, -(-span // step))
        ratio = span / step
        if isinstance(ratio, (dt.timedelta, np.timedelta64)):  # a datetime span, a plain step
            ratio = (span / _unit_of(span)) / step
        if isinstance(ratio, complex):
            lengths = [float(ratio.real), float(ratio.imag)]
        else:
            lengths = [float(ratio)]
    except (TypeError, ValueError, ArithmeticError) as error:
        raise TypeError(
            f"arange: cannot work out the length from start {start!r}, stop {stop!r} and step "
            f"{step!r} ({error})"
        ) from None
    if not all(math.isfinite(x) for x in lengths):
        return None
    if isinstance(ratio, (Fraction, Decimal)):
        return max(0, math.ceil(ratio))
    return max(0, min(math.ceil(x) for x in lengths))


def _unit_of(span: Any) -> Any:
    """One unit of a timedelta: NumPy's own unit, or a microsecond for Python's."""
    if isinstance(span, np.timedelta64):
        unit, _ = np.datetime_data(span.dtype)
        one: Any = np.timedelta64(1, unit)  # type: ignore[call-overload]
        return one
    return dt.timedelta(microseconds=1)


@named_errors
def linspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` as ``numpy.linspace``; array
    endpoints give ``(num,) + broadcast shape``.  NumPy computes in float64 (complex128 for
    complex endpoints) before casting to ``dtype``: those temporaries are sized too.  A new
    Tensor.

    >>> linspace(0, 1, 5).numpy().tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    count = as_count(num, "linspace num")
    low, high = as_array(start), as_array(stop)
    try:
        shape = (count, *np.broadcast_shapes(low.shape, high.shape))
    except ValueError:
        raise LayoutError(
            f"linspace: start of shape {low.shape} and stop of shape {high.shape} do not broadcast"
        ) from None
    work = np.result_type(low, high, np.float64)
    check_array(shape, work, "linspace (its working values)")
    if dtype is not None:
        check_array(shape, dtype, "linspace")
    first: Any = start if isinstance(start, (int, float, complex)) else low  # Python scalars
    last: Any = stop if isinstance(stop, (int, float, complex)) else high  # stay weak
    with value_errors("linspace"):
        values = np.linspace(first, last, count, endpoint=endpoint, dtype=dtype)
    if values.dtype.kind in "iu" and values.size:  # NumPy casts its float values: wrapped
        exact = np.linspace(first, last, count, endpoint=endpoint)  # (sized as its work above)
        _check_fits(exact.min(), exact.max(), values.dtype, "linspace")
    return as_tensor(values)
