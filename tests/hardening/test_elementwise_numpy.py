"""Element-wise functions against NumPy: for every function, dtype, Python or NumPy scalar and
``out=`` the result equals NumPy's in value **and dtype**, and where NumPy raises, einstride
raises the same kind of error (``OutOfRangeError`` is NumPy's ``OverflowError``; a bad
``out=`` is NumPy's ``ValueError``/``TypeError``).  A Python scalar stays *weak* as in NumPy
(``uint8 * 2`` is uint8, ``float32 + 1.5`` float32), so ``out=`` of the array's own dtype
works in place.  Under ``np.errstate(all="raise")`` an error leaves ``out=`` untouched.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from fuzzing import BINARY, UNARY, scaled
from hypothesis import given
from hypothesis import strategies as st

import einstride as es

UFUNC = {
    "abs": np.absolute,
    **{name: getattr(np, name) for name in UNARY + BINARY if name != "abs"},
}

DTYPES = [
    np.dtype(d)
    for d in (
        np.bool_,
        np.int8,
        np.uint8,
        np.int16,
        np.uint16,
        np.int32,
        np.uint32,
        np.int64,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
        ml_dtypes.bfloat16,
    )
]

PYTHON_SCALARS: list[Any] = [
    True,
    0,
    2,
    -1,
    200,
    1000,
    2**40,
    2**64,
    -(2**70),
    1.5,
    -0.0,
    1e300,
    float("nan"),
    1j,
    2 + 0j,
]
NUMPY_SCALARS: list[Any] = [
    np.bool_(True),
    np.int8(3),
    np.uint8(200),
    np.int64(-5),
    np.uint64(2**63),
    np.float16(1.5),
    np.float32(2.5),
    np.float64(3.0),
    np.complex64(1j),
    ml_dtypes.bfloat16(1.5),
]
SCALARS = PYTHON_SCALARS + NUMPY_SCALARS

# The error kinds NumPy raises here; einstride must raise one of the same kind.
KINDS = (FloatingPointError, OverflowError, ZeroDivisionError, TypeError, ValueError)


def values_of(dtype: np.dtype[Any]) -> np.ndarray:
    """A few values of ``dtype``, edge values included (0, 1, the largest)."""
    if dtype == np.bool_:
        return np.array([False, True, True, False])
    top = (
        np.finfo(dtype).max
        if dtype.kind in "fc" or dtype == ml_dtypes.bfloat16
        else (np.iinfo(dtype).max)
    )
    return np.array([0, 1, 2, top], dtype)


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result as an ndarray) or ("error", the exception)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call()
    except Exception as error:
        return "error", error
    return "ok", np.asarray(result.numpy() if isinstance(result, es.Tensor) else result)


def same(expected: tuple[str, Any], got: tuple[str, Any]) -> str | None:
    """Why ``got`` differs from NumPy's ``expected`` (None when it does not)."""
    if expected[0] == "error":
        if got[0] != "error":
            return f"NumPy raised {expected[1]!r}, einstride returned {got[1]!r}"
        kind = next((k for k in KINDS if isinstance(expected[1], k)), Exception)
        if not isinstance(got[1], kind):
            return f"NumPy raised {expected[1]!r}, einstride {got[1]!r}"
        return None
    if got[0] == "error":
        return f"NumPy gave {expected[1]!r}, einstride raised {got[1]!r}"
    if got[1].dtype != expected[1].dtype or got[1].shape != expected[1].shape:
        return f"NumPy gave {expected[1]!r}, einstride {got[1]!r} (dtype or shape)"
    if expected[1].tobytes() != got[1].tobytes() and not _equal_nan(expected[1], got[1]):
        return f"NumPy gave {expected[1]!r}, einstride {got[1]!r}"
    return None


def _equal_nan(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    except TypeError:
        return bool(np.array_equal(a, b))


def compare(
    name: str,
    args: list[Any],
    out_dtype: Any = None,
    in_place: int | None = None,
    errstate: str = "ignore",
) -> str | None:
    """Run ``name`` on copies of ``args`` through NumPy and einstride (``out=`` a fresh array
    of ``out_dtype``, or input ``in_place`` itself) and say how they differ."""
    results = []
    for side in ("numpy", "einstride"):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        out = None
        if in_place is not None:
            out = copies[in_place]
        elif out_dtype is not None:
            shape = np.broadcast_shapes(*(np.shape(a) for a in copies))
            out = np.full(shape, 7, out_dtype)
        before = None if out is None else out.copy()
        function = UFUNC[name] if side == "numpy" else getattr(es, name)
        kwargs = {} if out is None else {"out": out}
        with np.errstate(all=errstate):
            result = outcome(lambda f=function, c=copies, k=kwargs: f(*c, **k))
        if result[0] == "ok" and out is not None:
            result = ("ok", out)
        results.append((result, out, before))
    (expected, _, _), (got, out, before) = results
    why = same(expected, got)
    failed = why is None and got[0] == "error" and out is not None and before is not None
    if failed and out.tobytes() != before.tobytes():
        why = f"einstride raised {got[1]!r} but changed out="
    return None if why is None else f"{name}{tuple(map(repr, args))} out={out_dtype}: {why}"


def test_binary_functions_with_every_dtype_and_scalar():
    """Array (op) scalar and scalar (op) array, without and with ``out=`` in place."""
    failures = []
    for name in BINARY:
        for dtype in DTYPES:
            array = values_of(dtype)
            for scalar in SCALARS:
                for args, place in (([array, scalar], 0), ([scalar, array], 1)):
                    failures.append(compare(name, args))
                    failures.append(compare(name, args, in_place=place))
    failures = [f for f in failures if f]
    assert not failures, f"{len(failures)} differences, e.g.:\n" + "\n".join(failures[:15])


def test_unary_functions_with_every_dtype_and_scalar():
    failures = []
    for name in UNARY:
        for dtype in DTYPES:
            array = values_of(dtype)
            failures.append(compare(name, [array]))
            failures.append(compare(name, [array], in_place=0))
            failures.append(compare(name, [array], out_dtype=np.float64))
        for scalar in SCALARS:
            failures.append(compare(name, [scalar]))
    failures = [f for f in failures if f]
    assert not failures, f"{len(failures)} differences, e.g.:\n" + "\n".join(failures[:15])


def test_the_examples_of_the_issue():
    u8 = np.array([200], np.uint8)
    assert es.multiply(u8, 2).dtype == np.uint8 and es.multiply(u8, 2).tolist() == [144]
    assert es.add(np.float32([1]), 1.5).dtype == np.float32
    for dtype in (np.float16, ml_dtypes.bfloat16):
        t = es.tensor(np.ones(2, dtype))
        assert (t * 1.5).dtype == dtype and (2.5 + t).dtype == dtype and (t / 3).dtype == dtype
    assert es.multiply(u8, 2, out=u8) is u8 and u8.tolist() == [144]
    with pytest.raises(OverflowError):  # NumPy's type; einstride's OutOfRangeError is one
        es.add(np.int8([1]), 1000)
    with pytest.raises(es.OutOfRangeError, match="add: Python integer 1000 out of bounds"):
        es.add(np.int8([1]), 1000)
    with np.errstate(over="ignore"):
        assert es.power(np.float64([2.0]), 2**64).tolist() == [np.inf]


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, list[Any], Any, int | None, str]:
    name = draw(st.sampled_from(UNARY + BINARY))
    count = 1 if name in UNARY else 2
    args: list[Any] = []
    for _ in range(count):
        if draw(st.booleans()):
            args.append(draw(st.sampled_from(SCALARS)))
        else:
            dtype = draw(st.sampled_from(DTYPES))
            shape = draw(st.sampled_from([(), (3,), (2, 3), (1, 3), (2, 1)]))
            values = values_of(dtype)[draw(st.integers(0, 3))]
            args.append(np.full(shape, values, dtype))
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim]
    in_place = draw(st.sampled_from([None, *arrays]))
    out_dtype = None if in_place is not None else draw(st.sampled_from([None, *DTYPES]))
    errstate = draw(st.sampled_from(["ignore", "raise"]))
    return name, args, out_dtype, in_place, errstate


@scaled(300)
@given(calls())
def test_random_calls_match_numpy(call):
    """Arrays of any shape and dtype with scalars, any ``out=`` dtype (casting errors
    included), and ``np.errstate(all="raise")``: NumPy's result, or NumPy's kind of error with
    ``out=`` untouched."""
    name, args, out_dtype, in_place, errstate = call
    why = compare(name, args, out_dtype, in_place, errstate)
    assert why is None, why


@pytest.mark.parametrize("name", ["add", "multiply", "less"])
def test_tensor_results_match_numpy(name):
    """Tensors in, a Tensor out, with NumPy's dtype (a Python scalar stays weak)."""
    for dtype in DTYPES:
        array = values_of(dtype)
        for scalar in SCALARS:
            expected = outcome(lambda d=array, s=scalar: UFUNC[name](d, s))
            got = outcome(lambda d=array, s=scalar: getattr(es, name)(es.tensor(d), s))
            assert same(expected, got) is None, (dtype, scalar, same(expected, got))
