"""Element-wise arithmetic, functions and comparisons over Tensors, arrays and scalars.

Each function broadcasts NumPy-style and follows its inputs: NumPy in, NumPy out; any Tensor
in, Tensor out.  Results are NumPy's, dtype included: a Python scalar stays *weak* (NumPy 2's
promotion), and a Python int the dtype cannot hold is an ``OutOfRangeError`` (NumPy's
``OverflowError``).  ``out=`` (a Tensor or an ndarray) is written in place and returned, under the
layout spec's rule: an input may overlap ``out`` only by being exactly the same view of it, and
``out`` may not have repeated locations (``transfer.check_elementwise_out``).

>>> import numpy as np, einstride as es
>>> t = es.tensor([1.0, 4.0, 9.0])
>>> es.sqrt(t).numpy().tolist()
[1.0, 2.0, 3.0]
>>> es.add(np.arange(3), 10).tolist()
[10, 11, 12]
>>> es.multiply(np.uint8([200]), 2)          # uint8 times a Python int stays uint8
array([144], dtype=uint8)
>>> es.add(np.int8([1]), 1000)
Traceback (most recent call last):
einstride.errors.OutOfRangeError: add: Python integer 1000 out of bounds for int8
>>> es.less(t, 5).numpy().tolist()
[True, True, False]
>>> es.multiply(t, 2, out=t) is t          # the input is the same view as out: fine
True
>>> t.numpy().tolist()
[2.0, 8.0, 18.0]
>>> s = np.arange(6.0)
>>> es.negative(s[:5], out=s[1:])          # shifted dense views: rejected before writing
Traceback (most recent call last):
einstride.errors.LayoutError: negative: input 0 (...) overlaps out= (...) without being ...
>>> s.tolist()
[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import LayoutError, OutOfRangeError
from .memory import check_array, memory_limit
from .tensors import Array, Tensor, any_tensor, as_array, wrap_like
from .transfer import check_destination, check_elementwise_out, errors_may_raise

__all__ = [
    "abs",
    "add",
    "arccos",
    "arcsin",
    "arctan",
    "cos",
    "divide",
    "equal",
    "exp",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "not_equal",
    "power",
    "sin",
    "sqrt",
    "subtract",
    "tan",
    "tanh",
]

ElementWise = Callable[..., Any]
_BY_UFUNC: dict[np.ufunc, ElementWise] = {}  # each function of this module, by its ufunc


def _apply(ufunc: np.ufunc, name: str, inputs: Sequence[Any], out: Any) -> Any:
    try:
        operands = [_operand(x) for x in inputs]
    except LayoutError:  # (nested sequences of unequal lengths: named by a second pass)
        operands = [_operand(x, f"{name}: operand {k}") for k, x in enumerate(inputs)]
    arrays = [np.asarray(x) for x in operands]  # for the checks: Python scalars as 0-d
    try:
        if out is None:
            _check_result_size(ufunc, name, operands, arrays)
            try:
                result = ufunc(*operands)
            except ValueError:
                _check_broadcast(name, arrays)
                raise
            return wrap_like(result, any_tensor(*inputs))
        if isinstance(out, (Tensor, np.ndarray)):  # NumPy's type errors first, as NumPy
            if not as_array(out).flags.writeable:  # but a read-only out before them (a review)
                check_destination(out, name)
            _dry_run(ufunc, operands, arrays, as_array(out).dtype)
        target = check_elementwise_out(out, arrays, name)
        _write(ufunc, name, operands, arrays, target)
    except OverflowError as error:  # a Python int that the dtype cannot hold (as NumPy)
        raise OutOfRangeError(f"{name}: {error}") from None
    return out


def _operand(x: Any, what: str | None = None) -> Any:
    """What the ufunc gets: a Tensor's ndarray view, a Python scalar as it is (NumPy keeps it
    *weak*: ``uint8 * 2`` stays uint8, ``float32 + 1.5`` float32), anything else converted
    (after its size was checked; nested sequences of unequal lengths name ``what``)."""
    if isinstance(x, (int, float, complex)):  # np.float64 and np.bool_ stay strong anyway
        return x
    return as_array(x, what)


def _dry_run(ufunc: np.ufunc, operands: Sequence[Any], arrays: Sequence[Array], out: Any) -> None:
    """The ufunc on no data into an ``out`` of ``out``'s dtype: NumPy's own error for a
    result it cannot cast to ``out`` (checked before shapes, in NumPy's order)."""
    ufunc(*_empty_like(operands, arrays), out=np.empty(0, out))


def _empty_like(operands: Sequence[Any], arrays: Sequence[Array]) -> list[Any]:
    """No data of each operand's dtype (Python scalars stay themselves: weak)."""
    return [
        x if isinstance(x, (int, float, complex)) else np.empty(0, a.dtype)
        for x, a in zip(operands, arrays)
    ]


def _write(
    ufunc: np.ufunc, name: str, operands: Sequence[Any], arrays: Sequence[Array], target: Array
) -> None:
    """``ufunc`` into ``target``; where an error can come half-way (``np.errstate`` set to
    raise, call or log, or to warn under a warnings filter that makes RuntimeWarning an
    error; Python objects; an integer ``power`` meeting a negative exponent, ml_dtypes'
    integers included), into a temporary first, so ``out=`` is untouched on any error (a
    review found the log and error-filter cases, and int4, written).  ``negative`` into a
    strided ``out=`` goes through a temporary too: NumPy 2's SIMD loop of it writes wrong
    values there (4-byte items read at a stride of 4 items: ``negative(arange(8.0,
    dtype=float32)[::4], out=zeros(4, float32)[::2])`` gives ``[-0, -1]``, found by a
    review on NumPy 2.4; no other element-wise function did so)."""
    risky = (
        errors_may_raise()
        or any(a.dtype.hasobject for a in (*arrays, target))
        or (ufunc is np.power and any(_integer(a.dtype) for a in arrays))
        or (ufunc is np.negative and not target.flags.c_contiguous)
    )
    if not risky:
        ufunc(*operands, out=target)
        return
    check_array(target.shape, target.dtype, f"{name} (a temporary for out=)")
    scratch = np.empty(target.shape, target.dtype)  # C order: NumPy's negative miscomputes
    ufunc(*operands, out=scratch)  # into an F-ordered one too (empty_like's, a review)
    np.copyto(target, scratch, casting="no")


def _integer(dtype: np.dtype[Any]) -> bool:
    """NumPy's integers and ml_dtypes' (int4, uint4, ...: kind "V")."""
    kind = dtype.type
    return dtype.kind in "iu" or (
        dtype.kind == "V"
        and kind.__module__.startswith("ml_dtypes")
        and kind.__name__.lstrip("u").startswith("int")
    )


# No ufunc result has items wider than this: below it, the exact result dtype is not needed.
_WIDEST_ITEM = 64


def _check_broadcast(name: str, arrays: Sequence[Array]) -> None:
    """A ``LayoutError`` naming the function and the shapes where the inputs do not
    broadcast (asked after NumPy refused them: no cost on a call that runs; a review found
    NumPy's bare message, where the same mismatch with ``out=`` is a ``LayoutError``)."""
    shapes = [a.shape for a in arrays]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        listed = ", ".join(str(s) for s in shapes)
        raise LayoutError(f"{name}: inputs of shapes {listed} do not broadcast") from None


def _check_result_size(
    ufunc: np.ufunc, name: str, operands: Sequence[Any], arrays: Sequence[Array]
) -> None:
    """Refuse a broadcast result larger than the memory limit before the ufunc allocates it."""
    # The product of the input sizes bounds the broadcast size (0 when any input is empty),
    # so the exact shape is only worked out for large inputs.
    if math.prod(a.size for a in arrays) * _WIDEST_ITEM <= memory_limit():
        return
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        return  # the ufunc raises NumPy's own message
    probe = ufunc(*_empty_like(operands, arrays))  # the result dtype, on no data
    check_array(shape, probe.dtype, name)


def _unary(name: str, ufunc: np.ufunc) -> ElementWise:
    def function(x: Any, /, out: Any = None) -> Any:
        return _apply(ufunc, name, (x,), out)

    _BY_UFUNC[ufunc] = function
    return _named(function, name, f"``numpy.{ufunc.__name__}`` of ``x``")


def _binary(name: str, ufunc: np.ufunc) -> ElementWise:
    def function(x1: Any, x2: Any, /, out: Any = None) -> Any:
        return _apply(ufunc, name, (x1, x2), out)

    _BY_UFUNC[ufunc] = function
    return _named(function, name, f"``numpy.{ufunc.__name__}`` of ``x1`` and ``x2``")


# The ufuncs of NumPy's operators on a Tensor: the legacy ``__array_priority__`` gave
# ``ndarray <op> Tensor`` to the Tensor's reflected operator, as ``array_ufunc`` still does
_OPERATORS = frozenset(
    {np.add, np.subtract, np.multiply, np.divide, np.power}
    | {np.less, np.less_equal, np.greater, np.greater_equal}
)
_IDENTITY = {np.equal: True, np.not_equal: False}  # the answer for one object


def array_ufunc(ufunc: np.ufunc, method: str, inputs: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """A NumPy ufunc called with Tensors (``Tensor.__array_ufunc__``, NumPy's protocol),
    answered as NumPy's *operators* answered under the legacy ``__array_priority__``, but
    for an ndarray ``out=``, which is written: ``ndarray += Tensor`` writes the array (the
    legacy deferral rebound the name to a new Tensor and left the caller's array
    unchanged: a review).  NumPy hands an operator and a direct call of its ufunc over
    alike, so ``np.add(a, t)`` is ``a + t`` (a Tensor; it was NumPy's ndarray) and
    ``np.equal(a, t)`` is ``a == t`` (identity; it was element-wise): ``es.add`` and
    ``es.equal`` (or ``t.numpy()``) say which is meant.

    * ``ndarray <op> Tensor`` for ``+ - * / ** < <= > >=`` is einstride's function (a
      Tensor), ``ndarray @ Tensor`` einstride's matmul; ``==`` and ``!=`` are identity (a
      Tensor equals only itself: it stays hashable, ``t in [a, t]`` works; use
      ``es.equal`` for values);
    * any other ufunc runs over the Tensors' views and gives NumPy's result (an ndarray or
      a NumPy scalar: ``np.sin(t)``, ``np.add.reduce(t)``);
    * a Tensor ``out=`` is written only by einstride's function (a plain call: its overlap
      and repeated-location checks, its workarounds), and ``ufunc.at`` never writes a
      Tensor: else a ``TypeError``, as before.

    >>> a = np.zeros(3)
    >>> a += Tensor(np.arange(3.0))
    >>> type(a).__name__, a.tolist()
    ('ndarray', [0.0, 1.0, 2.0])
    >>> type(a + Tensor(np.ones(3))).__name__, np.sin(Tensor(np.zeros(2)))
    ('Tensor', array([0., 0.]))
    """
    out = kwargs.get("out")
    plain = method == "__call__" and set(kwargs) <= {"out"}
    if plain and out is None:
        if ufunc in _IDENTITY:
            return _IDENTITY[ufunc] if inputs[0] is inputs[1] else not _IDENTITY[ufunc]
        if ufunc is np.matmul:  # (Tensor's own operators: the reflected one for an ndarray)
            left, right = inputs
            return right.__rmatmul__(left) if isinstance(right, Tensor) else left @ right
        if ufunc in _OPERATORS:
            return _BY_UFUNC[ufunc](*inputs)
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    function = _BY_UFUNC.get(ufunc)
    if out is not None and any(isinstance(o, Tensor) for o in out):
        if plain and function is not None and len(out) == 1:
            return function(*inputs, out=out[0])
        raise TypeError(
            f"numpy.{name}: a Tensor out= is written by einstride's element-wise functions, "
            "with no other keyword (es.add(x, y, out=t))"
        )
    if method == "at" and isinstance(inputs[0], Tensor):
        raise TypeError(
            f"numpy.{name} does not write a Tensor: write its view, "
            f"np.{name}(t.numpy(), ...), where the layout allows it"
        )
    views = [x.numpy() if isinstance(x, Tensor) else x for x in inputs]
    given = {k: v.numpy() if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    return getattr(ufunc, method)(*views, **given)


def _named(function: ElementWise, name: str, what: str) -> ElementWise:
    function.__name__ = function.__qualname__ = name
    function.__module__ = __name__
    function.__doc__ = (
        f"Element-wise {what}, broadcast NumPy-style; Tensors in give a Tensor out.  A new "
        "result (never a view), laid out as NumPy's (its inputs' order: a transposed input "
        "gives a transposed result), or ``out=`` written in place and returned (see the "
        "module docstring for its rule)."
    )
    return function


negative = _unary("negative", np.negative)
abs = _unary("abs", np.absolute)  # the spec's name (as numpy.abs), shadowing the builtin
sqrt = _unary("sqrt", np.sqrt)
exp = _unary("exp", np.exp)
log = _unary("log", np.log)
sin = _unary("sin", np.sin)
cos = _unary("cos", np.cos)
tan = _unary("tan", np.tan)
arcsin = _unary("arcsin", np.arcsin)
arccos = _unary("arccos", np.arccos)
arctan = _unary("arctan", np.arctan)
tanh = _unary("tanh", np.tanh)

add = _binary("add", np.add)
subtract = _binary("subtract", np.subtract)
multiply = _binary("multiply", np.multiply)
divide = _binary("divide", np.divide)
maximum = _binary("maximum", np.maximum)
minimum = _binary("minimum", np.minimum)
power = _binary("power", np.power)

less = _binary("less", np.less)
less_equal = _binary("less_equal", np.less_equal)
greater = _binary("greater", np.greater)
greater_equal = _binary("greater_equal", np.greater_equal)
equal = _binary("equal", np.equal)
not_equal = _binary("not_equal", np.not_equal)
