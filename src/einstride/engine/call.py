"""The front end: one einsum call, normalized once, for every public function and backend.

``einsum``, ``contract_expression``, ``einsum_path``, ``explain`` and ``einsum_vjp`` accept
the string form (``"ij,jk->ik", a, b``) and the sublist form (``a, [0, 1], b, [1, 2]``), and
the keywords ``out=``, ``dtype=``, ``optimize=`` and ``memory_limit=``.  :func:`make_call`
checks all of them once and returns an immutable :class:`EinsumCall`; a backend receives
that and nothing else.

>>> import numpy as np
>>> call = make_call(np.ones((2, 3)), [0, 1], [1], memory_limit="1KiB")
>>> call.key, call.memory_limit, len(call.operands)
(('sublists', ((0, 1),), (1,)), 1024, 1)
>>> call.equation().text
'[0,1]->[1]'
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

from ..errors import EinsumError, EinsumTypeError, MemoryLimitError
from ..memory import check_allocation, check_array_like
from ..narrow import as_dtype
from .spec.equation import Equation, int_tuple, parse_sublists, parse_subscripts

__all__ = [
    "CASTINGS",
    "ORDERS",
    "Casting",
    "EinsumCall",
    "EquationKey",
    "Order",
    "check_conversion",
    "check_known_shape",
    "checked_memory_limit",
    "checked_shape",
    "converted_operand",
    "decoded",
    "dtype_of",
    "equation_and_operands",
    "equation_of",
    "is_shape",
    "make_call",
    "result_order",
    "shape_and_dtype",
    "split_sublists",
]

EquationKey = Any
"""Hashable and enough to re-parse: the equation string, or ``("sublists", terms, output)``
(or an :class:`Equation`: the calls a plan makes of its own)."""

Order = Literal["C", "F", "A", "K"]
"""``order=``: the result's memory layout, as NumPy's (``K``: as the plan makes it)."""

Casting = Literal["no", "equiv", "safe", "same_kind", "unsafe"]
"""``casting=``: NumPy's rule for the ``dtype=`` and ``out=`` casts."""

ORDERS = ("C", "F", "A", "K")
CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def result_order(order: str, fortran: Sequence[bool]) -> str:
    """``"C"`` or ``"F"``: NumPy's layout for ``order=`` other than ``"K"``, given whether
    each operand is Fortran contiguous, for every backend (``"A"``: Fortran when every one
    is; an operand C contiguous as well counts, as in NumPy 2's einsum: ``i,j->ij`` of two
    vectors is Fortran ordered).

    >>> result_order("A", [True, True]), result_order("A", []), result_order("F", [False])
    ('F', 'C', 'F')
    """
    if order == "A":
        return "F" if fortran and all(fortran) else "C"
    return order


@dataclass(frozen=True, slots=True, kw_only=True)
class EinsumCall:
    """One einsum call after the front end: the equation key, the operands as given (each
    backend converts its own kind), and the checked keywords.  ``memory_limit`` is bytes, or
    None for the backend's default."""

    key: EquationKey
    operands: tuple[Any, ...]
    out: Any = None
    dtype: np.dtype[Any] | None = None
    optimize: Any = "auto"
    memory_limit: int | None = None
    order: Order = "K"
    casting: Casting | None = None

    def equation(self) -> Equation:
        """The parsed equation (string equations come from a cache)."""
        return equation_of(self.key)


def decoded(subscripts: Any) -> Any:
    """``subscripts`` as a string where they are bytes (NumPy takes ASCII bytes too), else as
    given (a string, or the first operand of the interleaved form).

    >>> decoded(b"ij->ji"), decoded("ij->ji")
    ('ij->ji', 'ij->ji')
    """
    if not isinstance(subscripts, bytes):
        return subscripts
    try:
        return subscripts.decode("ascii")
    except UnicodeDecodeError:
        raise EinsumError(
            f"einsum: the subscripts {subscripts!r} are bytes that are not ASCII"
        ) from None


def equation_and_operands(
    subscripts: Any, operands: Sequence[Any]
) -> tuple[EquationKey, Sequence[Any]]:
    """Either form of einsum's arguments as (equation key, operands): the string form (ASCII
    bytes decoded) as is, the interleaved form split (:func:`split_sublists`); every entry
    point reads them so.

    >>> equation_and_operands(b"ij->ji", ["a"]), equation_and_operands(2.0, [[0], [0]])[1]
    (('ij->ji', ['a']), [2.0])
    """
    subscripts = decoded(subscripts)
    if isinstance(subscripts, str):
        return subscripts, operands
    return split_sublists((subscripts, *operands))


def make_call(
    subscripts: Any,
    *operands: Any,
    out: Any = None,
    dtype: Any = None,
    optimize: Any = "auto",
    memory_limit: Any = None,
    order: Any = "K",
    casting: Any = None,
) -> EinsumCall:
    """Normalize ``einsum``'s arguments (either form) into an :class:`EinsumCall`."""
    if isinstance(order, str):
        order = order.upper()  # NumPy takes 'c', 'f', 'a', 'k' too
    elif order is None:
        order = "K"  # NumPy takes None for its default too
    _check_choice("order", order, ORDERS)
    if casting is not None:
        _check_choice("casting", casting, CASTINGS)
    key, raw = equation_and_operands(subscripts, operands)
    return EinsumCall(
        key=key,
        operands=tuple(raw),
        out=out,
        dtype=None if dtype is None else dtype_of(dtype),
        optimize=optimize,
        memory_limit=checked_memory_limit(memory_limit),
        order=cast(Order, order),
        casting=cast("Casting | None", casting),
    )


def _check_choice(name: str, value: Any, choices: Sequence[str]) -> None:
    """``value`` is one of ``choices`` (the string test first: ``in`` would compare an
    array with each choice, NumPy's bare ``ValueError``, a review); else NumPy's classes, an
    :class:`EinsumError` for another string, an :class:`EinsumTypeError` for no string.

    >>> _check_choice("order", 1, ("C", "F"))
    Traceback (most recent call last):
    einstride.errors.EinsumTypeError: einsum: order must be one of 'C', 'F', not 1
    """
    if isinstance(value, str) and value in choices:
        return
    kind = EinsumError if isinstance(value, str) else EinsumTypeError
    raise kind(f"einsum: {name} must be one of {', '.join(map(repr, choices))}, not {value!r}")


def equation_of(key: EquationKey) -> Equation:
    """Parse an equation key (see :data:`EquationKey`); an :class:`Equation` is its own."""
    if isinstance(key, str):
        return parse_subscripts(key)
    if isinstance(key, Equation):  # (an inner call's: the NumPy plan's sub_equation)
        return key
    _, terms, output = key
    return parse_sublists(terms, output)


def split_sublists(args: Sequence[Any]) -> tuple[EquationKey, list[Any]]:
    """``op0, sub0, op1, sub1, ..., [out_sub]`` -> (hashable equation key, operands).

    >>> split_sublists([None])
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum: the sublist form needs an operand and its sublist, ...
    """
    if len(args) < 2:
        raise EinsumError(
            f"einsum: the sublist form needs an operand and its sublist, got {len(args)} "
            "argument(s) (the string form takes the equation first)"
        )
    operands = list(args[0::2])
    subs = args[1::2]
    out = None
    if len(args) % 2 == 1:
        out = args[-1]
        operands = operands[:-1]
        if out is None:  # (None means "implicit" to the parser: NumPy refuses it, a review)
            raise EinsumTypeError(
                "einsum: the output sublist must be a list of ints and '...', got None (leave "
                "it out for the implicit output)"
            )
    eq = parse_sublists(subs, out)  # validates now: the key below must be hashable
    terms = tuple(
        tuple(Ellipsis if lab == -1 else int(eq.names[lab]) for lab in t) for t in eq.terms
    )
    out_key = None
    if out is not None:
        out_key = tuple(Ellipsis if lab == -1 else int(eq.names[lab]) for lab in eq.output)
    return ("sublists", terms, out_key), operands


def dtype_of(dtype: Any) -> np.dtype[Any]:
    """``np.dtype(dtype)`` (a torch dtype too), a ``TypeError`` naming ``dtype=`` when it is
    none."""
    try:
        found: np.dtype[Any] = _numpy_dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise EinsumTypeError(f"einsum: dtype={dtype!r} is not a dtype ({exc})") from None
    return found


def _numpy_dtype(dtype: Any) -> np.dtype[Any]:
    """``np.dtype(dtype)``; a torch dtype (``torch.float32``, ``torch.bfloat16``) by the name
    of its NumPy twin (ml_dtypes names bfloat16), so the front end imports no backend."""
    if type(dtype).__module__ == "torch":
        dtype = str(dtype).removeprefix("torch.")
    return as_dtype(dtype)


def checked_shape(shape: Any, what: str) -> tuple[int, ...]:
    """A shape given instead of an operand: ints (not bools) in ``[0, 2**63)``.

    >>> checked_shape((2, -1), "shape 0")
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum: shape 0 (2, -1) has a length outside [0, 2**63)
    """
    if (  # the common case, checked cheaply
        int_tuple(shape) and (not shape or (min(shape) >= 0 and max(shape) < 2**63))
    ):
        return shape
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise EinsumTypeError(f"einsum: {what} must be a sequence of ints, not {shape!r}")
    if getattr(shape, "ndim", 1) != 1:  # an array of rank 0 or 2+ (iterating it gives rows)
        raise EinsumTypeError(
            f"einsum: {what} must be a shape (a tuple of ints), not an array "
            f"({type(shape).__name__} of shape {shape.shape}); pass its .shape"
        )
    dims = tuple(shape)
    checked = tuple(_length(n, what, dims) for n in dims)
    if any(not 0 <= n < 2**63 for n in checked):
        raise EinsumError(f"einsum: {what} {checked} has a length outside [0, 2**63)")
    return checked


def _length(n: Any, what: str, dims: tuple[Any, ...]) -> int:
    """One length of a shape, as an int (a 1-element array's ``__index__`` raises)."""
    if not isinstance(n, (bool, np.bool_)):
        try:
            return operator.index(n)
        except TypeError:
            pass
    raise EinsumTypeError(f"einsum: {what} {dims!r} has a length that is not an int: {n!r}")


def is_shape(x: Any) -> bool:
    """Whether ``x`` stands for a shape where ``explain`` and ``einsum_path`` take shapes or
    operands: a tuple of ints (a list is an operand, or a sublist of the interleaved form,
    as for einsum; a review).

    >>> is_shape((2, 3)), is_shape(()), is_shape([2, 3]), is_shape((2, True))
    (True, True, False, False)
    """
    return isinstance(x, tuple) and all(
        hasattr(d, "__index__") and not isinstance(d, (bool, np.bool_)) for d in x
    )


def shape_and_dtype(x: Any, what: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """``einsum_path``'s operands: a tuple of ints is a shape (float64); an array of any
    kind gives its shape and dtype without being converted or computed."""
    if is_shape(x):
        return checked_shape(x, what), np.dtype(np.float64)
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        check_known_shape(shape, what)  # (Dask's len() raised its own ValueError: a review)
        try:
            return checked_shape(shape, what), _numpy_dtype(dtype)
        except (TypeError, EinsumError):
            pass  # e.g. a foreign dtype object
    if isinstance(x, range):
        return (len(x),), np.dtype(np.int_)
    arr = converted_operand(x, f"einsum: {what}")
    return arr.shape, arr.dtype


def converted_operand(x: Any, what: str) -> np.ndarray[Any, Any]:
    """``np.asarray(x)`` of an operand that is no array, sized first
    (:func:`check_conversion`); one NumPy cannot convert (ragged, or a list holding itself)
    is an :class:`EinsumTypeError` naming ``what``.

    >>> converted_operand(((1, 2), (3,)), "contract_path: operand 1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumTypeError: contract_path: operand 1 (tuple) is not an array: ...
    """
    check_conversion(x, what)
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise EinsumTypeError(f"{what} ({type(x).__name__}) is not an array: {exc}") from None


def check_known_shape(shape: Sequence[Any], what: str) -> None:
    """An ``EinsumError`` for a lazy array's shape of unknown (NaN) sizes.

    >>> check_known_shape((float("nan"), 3), "operand 0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum: operand 0 has an unknown shape (nan, 3) (a lazy ...
    """
    if any(isinstance(n, float) and n != n for n in shape):
        raise EinsumError(
            f"einsum: {what} has an unknown shape {tuple(shape)} (a lazy array's chunk sizes "
            "not known yet: compute_chunk_sizes() in Dask)"
        )


def check_conversion(x: Any, what: str) -> None:
    """Before ``np.asarray(x)`` of a sequence: its length alone (8 bytes an item at least)
    must fit the memory limit, so ``range(10**12)`` fails at once instead of in the allocator.

    >>> check_conversion(range(10**15), "einsum: operand 0")
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum: operand 0 (range of 1,000,000,000,000,000 items) would ...
    """
    try:
        n = len(x)
    except (TypeError, OverflowError):
        return
    check_allocation(8 * n, f"{what} ({type(x).__name__} of {n:,} items)", EinsumError)
    try:  # what it nests too: [range(10**15)] was NumPy's MemoryError, [[x, x]] * 100 hung
        check_array_like(x, None, what)
    except MemoryLimitError as exc:  # (a review)
        raise EinsumError(str(exc)) from None


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([kmgtp]?)(i?)b?\s*", re.IGNORECASE)


def _size_in_bytes(value: str, number: str, prefix: str, binary: str) -> int:
    """A size string's bytes, exactly (rounded down): through a float, ``"9007199254740993"``
    lost its last unit and a number of 400 digits raised OverflowError (a review).

    >>> _size_in_bytes("9007199254740993", "9007199254740993", "", ""), _size_in_bytes(
    ...     "0.5 KiB", "0.5", "K", "i")
    (9007199254740993, 512)
    """
    whole, _, fraction = number.partition(".")
    power = "kmgtp".index(prefix.lower()) + 1 if prefix else 0
    scale: int = (1024 if binary else 1000) ** power
    denominator: int = 10 ** len(fraction)
    try:
        return int(whole + fraction) * scale // denominator
    except ValueError:  # past Python's limit on the digits of an int (4,300)
        raise EinsumError(
            f"einsum: memory_limit={value[:40]!r}... has too many digits ({len(number):,})"
        ) from None


def checked_memory_limit(value: Any) -> int | None:
    """``memory_limit=``: None (the default limit), bytes as an int ``>= 0``, or a size string
    such as ``"64MiB"``, ``"2 GB"`` or ``"1000"``.

    >>> checked_memory_limit("1.5KiB"), checked_memory_limit("2kB"), checked_memory_limit(7)
    (1536, 2000, 7)
    >>> checked_memory_limit(-1)
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumError: einsum: memory_limit=-1 must be >= 0 bytes
    """
    if value is None:
        return None
    if isinstance(value, str):
        match = _SIZE.fullmatch(value)
        if match is None:
            raise EinsumError(
                f"einsum: memory_limit={value!r} is not a size in bytes (an int or a string "
                "like '64MiB')"
            )
        return _size_in_bytes(value, *match.groups())
    if isinstance(value, (bool, np.bool_)):
        raise EinsumTypeError(f"einsum: memory_limit must be an int (bytes), not {value!r}")
    try:
        limit = operator.index(value)
    except TypeError:  # (an array of several: NumPy's bare message named nothing, a review)
        raise EinsumTypeError(
            f"einsum: memory_limit must be an int (bytes), not {value!r}"
        ) from None
    if limit < 0:
        raise EinsumError(f"einsum: memory_limit={limit} must be >= 0 bytes")
    return limit
