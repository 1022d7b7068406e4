"""The error types of einstride; every one is a ``ValueError`` subclass.

* :class:`EinsumError` -- a malformed equation, operands that do not fit it, a bad path.
* :class:`LayoutError` -- an invalid shape, stride, offset, axis, size or view, or a data
  movement the overlap rules forbid.
* :class:`MemoryLimitError` -- one allocation (a result or a temporary) would exceed the memory
  limit (``einstride.memory``); raised before anything is allocated.
* :class:`OutOfRangeError` -- a value does not fit the dtype it must be stored in (a Python
  int beyond ``int8``, a datetime too long for a string).  It is also an ``OverflowError``, so
  code written for NumPy's own error keeps working.

>>> all(issubclass(e, ValueError) for e in (EinsumError, LayoutError, MemoryLimitError))
True
>>> issubclass(OutOfRangeError, ValueError) and issubclass(OutOfRangeError, OverflowError)
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "EinsumError",
    "EinsumPathError",
    "EinsumTypeError",
    "LayoutError",
    "MemoryLimitError",
    "OutOfRangeError",
    "cast_errors",
    "named_errors",
    "ragged_errors",
    "value_errors",
]


class LayoutError(ValueError):
    """A shape/strides/offset/axis/size that is invalid, or a data movement the overlap rules
    forbid."""


class EinsumError(ValueError):
    """A malformed einsum equation, or operands that do not fit it."""


class EinsumTypeError(EinsumError, TypeError):
    """An einsum argument of the wrong kind where NumPy raises ``TypeError`` (a sublist that
    is not a list, a label that is not an int): both ``except EinsumError`` and
    ``except TypeError`` catch it.

    >>> import numpy as np, einstride as es
    >>> try:
    ...     es.einsum(np.ones(2), ["a"], [0])
    ... except TypeError as exc:
    ...     isinstance(exc, es.EinsumError)
    True
    """


class EinsumPathError(EinsumError, RuntimeError):
    """An explicit contraction path that does not contract every operand to one, where NumPy
    raises ``RuntimeError``; it is an :class:`EinsumError` too."""


class MemoryLimitError(ValueError):
    """An allocation larger than the memory limit, refused before anything is allocated."""


class OutOfRangeError(ValueError, OverflowError):
    """A value that does not fit the dtype it must be stored in (NumPy raises
    ``OverflowError`` there; this is one too)."""


@contextmanager
def value_errors(what: str) -> Iterator[None]:
    """Turn NumPy's errors for a value its dtype cannot hold (``OverflowError``; the bare
    ``RuntimeError`` of a datetime too long for a string) into :class:`OutOfRangeError`
    naming ``what``.

    >>> import numpy as np
    >>> with value_errors("full"):
    ...     np.full(2, 1000, np.int8)
    Traceback (most recent call last):
    einstride.errors.OutOfRangeError: full: Python integer 1000 out of bounds for int8
    """
    try:
        yield
    except OverflowError as error:
        if isinstance(error, OutOfRangeError):
            raise
        raise OutOfRangeError(f"{what}: {error}") from None
    except RuntimeError as error:
        # NumPy's own, alone (not RecursionError, NotImplementedError, nor a library's)
        if type(error) is not RuntimeError or "datetime" not in str(error):
            raise
        raise OutOfRangeError(f"{what}: {error}") from None


@contextmanager
def ragged_errors(what: str) -> Iterator[None]:
    """Turn NumPy's error for nested sequences of unequal lengths (a bare ``ValueError``
    naming no function) into :class:`LayoutError` naming ``what``.

    >>> import numpy as np
    >>> with ragged_errors("tensor"):
    ...     np.asarray([[1, 2], [3]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    einstride.errors.LayoutError: tensor: nested sequences of unequal lengths: ...
    >>> deep: list[object] = []
    >>> deep.append(deep)
    >>> with ragged_errors("tensor"):
    ...     np.asarray(deep)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    einstride.errors.LayoutError: tensor: sequences nested too deep: ...
    """
    try:
        yield
    except ValueError as error:
        if type(error) is not ValueError:
            raise
        if "inhomogeneous" in str(error):
            raise LayoutError(f"{what}: nested sequences of unequal lengths: {error}") from None
        if "maximum number of dimension" in str(error):  # (a list holding itself: a review)
            raise LayoutError(f"{what}: sequences nested too deep: {error}") from None
        raise


@contextmanager
def cast_errors(what: str, into: str = "") -> Iterator[None]:
    """:func:`value_errors`, and NumPy's bare ``ValueError`` of a cast (a string that is no
    number, which names no function) as an :class:`OutOfRangeError` naming ``what``, the
    message ending in ``into``.

    >>> import numpy as np
    >>> with cast_errors("copy_to", " (into float64)"):
    ...     np.array(["1", "a"]).astype(np.float64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    einstride.errors.OutOfRangeError: copy_to: could not convert string to float: ... (into float64)
    """
    with value_errors(what):
        try:
            yield
        except ValueError as error:
            if type(error) is not ValueError:  # (ours, UnicodeError and the like: as they are)
                raise
            raise OutOfRangeError(f"{what}: {error}{into}") from None


_NAMED = (LayoutError, OutOfRangeError, MemoryLimitError, EinsumError, TypeError, ValueError)


def named_errors(op: Callable[_P, _R]) -> Callable[_P, _R]:
    """``op`` whose errors (einstride's family, a plain ``TypeError`` or ``ValueError``:
    never another library's subclass) start with its name: the shared checks it calls say
    "shape (2, -1) has a negative length" or "axis 5 is out of range for rank 2", naming no
    function (a review).  A message that starts with the name already is left as it is, and
    so is an error whose arguments are not one message (a user's ``ValueError("bad", 7)``);
    the error itself is raised again, its notes and cause kept.

    >>> @named_errors
    ... def ones(n: int) -> None:
    ...     raise LayoutError(f"shape ({n},) has a negative length")
    >>> ones(-1)
    Traceback (most recent call last):
    einstride.errors.LayoutError: ones: shape (-1,) has a negative length
    """
    name = op.__name__

    @functools.wraps(op)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return op(*args, **kwargs)
        except _NAMED as error:
            words = error.args[0] if len(error.args) == 1 else None
            if type(error) in _NAMED and isinstance(words, str) and not words.startswith(name):
                error.args = (f"{name}: {words}",)
            raise

    return call
