"""Odd arrays through core, ops and einsum: read-only arrays (fine as inputs, a LayoutError as
destinations), non-native byte order, object/string/datetime dtypes, 0-d arrays, NumPy
scalars, Python scalars and nested lists.  Every answer is compared with NumPy's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import einstride as es
from einstride import LayoutError, Tensor


def read_only(values: Any) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)
    arr.flags.writeable = False
    return arr


def read_only_tensor(shape: tuple[int, ...]) -> Tensor:
    storage = np.zeros(int(np.prod(shape)) + 1)
    storage.flags.writeable = False
    return Tensor(storage, shape)


def plain(x: Any) -> np.ndarray:
    return np.asarray(x.numpy() if isinstance(x, Tensor) else x)


# -- read-only destinations: a clear LayoutError, nothing written -----------------------------------

DESTINATION_CALLS: dict[str, Callable[[Any], Any]] = {
    "copy_to": lambda d: es.copy_to(np.ones((2, 3)), d),
    "try_copy_to": lambda d: es.try_copy_to(np.ones((2, 3)), d),
    "flatten_to": lambda d: es.flatten_to(np.ones(3), d),
    "try_flatten_to": lambda d: es.try_flatten_to(np.ones(3), d),
    "resize_to": lambda d: es.resize_to(np.ones(3), d),
    "reverse": lambda d: es.reverse(np.ones((2, 3)), 0, out=d),
    "add": lambda d: es.add(np.ones((2, 3)), 1.0, out=d),
    "sqrt": lambda d: es.sqrt(np.ones((2, 3)), out=d),
    "less": lambda d: es.less(np.ones((2, 3)), 2.0, out=d),
    "stack": lambda d: es.stack([np.ones(3), np.ones(3)], out=d),
    "concat": lambda d: es.concat([np.ones((1, 3)), np.ones((1, 3))], out=d),
    "einsum": lambda d: es.einsum("ij->ij", np.ones((2, 3)), out=d),
    "expression": lambda d: es.contract_expression("i,j->ij", (2,), (3,))(
        np.ones(2), np.ones(3), out=d
    ),
}
READ_ONLY_DESTINATIONS: dict[str, Callable[[tuple[int, ...]], Any]] = {
    "read-only array": lambda shape: read_only(np.zeros(shape)),
    "Tensor over read-only storage": read_only_tensor,
    "broadcast view": lambda shape: np.broadcast_to(np.zeros(shape[-1]), shape),
}


@pytest.mark.parametrize("kind", sorted(READ_ONLY_DESTINATIONS))
@pytest.mark.parametrize("op", sorted(DESTINATION_CALLS))
def test_read_only_destinations_are_layout_errors(op, kind):
    dst = READ_ONLY_DESTINATIONS[kind]((6,) if "flatten" in op else (2, 3))
    base = plain(dst).base if plain(dst).base is not None else plain(dst)
    before = np.array(base, copy=True)
    with pytest.raises(LayoutError, match=r"read-only|repeated"):
        DESTINATION_CALLS[op](dst)
    np.testing.assert_array_equal(np.asarray(base), before)


# -- read-only inputs: the same answers, and views of them stay read-only ---------------------------

INPUT_CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("einsum", lambda x: es.einsum("ij,kj->ik", x, x)),
    ("einsum view", lambda x: es.einsum("ij->ji", x)),
    ("expression", lambda x: es.contract_expression("ij->j", (2, 3))(x)),
    ("einsum_vjp", lambda x: es.einsum_vjp("ij,ij->", (x, x), 1.0)[0]),
    ("add", lambda x: es.add(x, x)),
    ("exp", lambda x: es.exp(x)),
    ("tensor", lambda x: es.tensor(x)),
    ("copy_to", lambda x: (lambda d: (es.copy_to(x, d), d)[1])(np.zeros((2, 3)))),
    ("flatten_to", lambda x: (lambda d: (es.flatten_to(x, d), d)[1])(np.zeros(6))),
    ("resize", lambda x: es.resize(x, 4)),
    ("reverse", lambda x: es.reverse(x, 1)),
    ("transpose", lambda x: es.transpose(x)),
    ("reshape", lambda x: es.reshape(x, (3, 2))),
    ("tile", lambda x: es.tile(x, [2, 1])),
    ("pad", lambda x: es.pad(x, [(1, 0), (0, 1)], mode="reflect")),
    ("gather", lambda x: es.gather(x, [2, 0], axis=1)),
    ("boolean_mask", lambda x: es.boolean_mask(x, [True, False, True], axis=1)),
    ("stack", lambda x: es.stack([x, x], axis=2)),
    ("concat", lambda x: es.concat([x, x], axis=1)),
    ("diag_part", lambda x: es.diag_part(x)),
    ("set_diag", lambda x: es.set_diag(x, np.zeros(2))),
    ("band_part", lambda x: es.band_part(x, 0, 0)),
    ("where", lambda x: es.where(plain(x) > 2, x, -x)),
    ("qr", lambda x: es.qr(x).r),
    ("svd", lambda x: es.svd(x).s),
    ("to_reduced_precision", lambda x: es.to_reduced_precision(x)),
]
VIEW_CALLS = ["einsum view", "transpose", "reshape", "diag_part"]


@pytest.mark.parametrize(("name", "call"), INPUT_CALLS, ids=[n for n, _ in INPUT_CALLS])
@pytest.mark.parametrize(
    "make", [read_only, lambda v: es.as_tensor(read_only(v))], ids=["array", "tensor"]
)
def test_read_only_inputs_give_the_same_answers(name, call, make):
    values = np.arange(1.0, 7.0).reshape(2, 3)
    frozen = make(values)
    got, expected = call(frozen), call(values.copy())
    np.testing.assert_allclose(plain(got).astype(np.float64), plain(expected).astype(np.float64))
    if name in VIEW_CALLS:
        assert not plain(got).flags.writeable  # a view of read-only data stays read-only
    assert plain(frozen).tolist() == values.tolist()


# -- non-native byte order ----------------------------------------------------------------------------

SWAPPED_CALLS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("einsum matmul", lambda a, b: es.einsum("ij,kj->ik", a, b)),
    ("einsum reduce", lambda a, b: es.einsum("ij->j", a)),
    ("einsum diagonal out", lambda a, b: es.einsum("i->ii", a[0], out=np.zeros((3, 3), ">f8"))),
    ("einsum out", lambda a, b: es.einsum("ij,kj->ik", a, b, out=np.zeros((2, 2), ">f8"))),
    (
        "einsum out tensor",
        lambda a, b: es.einsum("ij,ij->ij", a, b, out=es.as_tensor(np.zeros((2, 3), ">f4"))),
    ),
    ("einsum_vjp", lambda a, b: es.einsum_vjp("ij,ij->", (a, b), 2.0)[0]),
    ("add", lambda a, b: es.add(a, b)),
    ("power out", lambda a, b: es.power(a, 2, out=np.zeros((2, 3), ">f8"))),
    ("copy_to", lambda a, b: (lambda d: (es.copy_to(a, d), d)[1])(np.zeros((2, 3), ">i8"))),
    ("Tensor view", lambda a, b: Tensor(np.ascontiguousarray(b).reshape(-1), (3, 2), (1, 3))),
    ("transpose", lambda a, b: es.transpose(a)),
    ("tile", lambda a, b: es.tile(a, [1, 2])),
    ("pad", lambda a, b: es.pad(b, [(1, 1), (0, 0)], mode="symmetric")),
    ("concat", lambda a, b: es.concat([a, b])),
    ("reverse", lambda a, b: es.reverse(b, (0, 1))),
    ("resize", lambda a, b: es.resize(a, 7)),
    ("gather", lambda a, b: es.gather(b, np.array([1, 0], ">i2"))),
    ("one_hot", lambda a, b: es.one_hot(np.array([2, 0], ">i4"), 3)),
]


@pytest.mark.parametrize(("name", "call"), SWAPPED_CALLS, ids=[n for n, _ in SWAPPED_CALLS])
def test_non_native_byte_order(name, call):
    native_a, native_b = np.arange(6.0).reshape(2, 3), np.arange(6, dtype=np.int32).reshape(2, 3)
    swapped_a, swapped_b = native_a.astype(">f8"), native_b.astype(">i4")
    np.testing.assert_array_equal(
        plain(call(swapped_a, swapped_b)), plain(call(native_a, native_b))
    )


# -- object, string and datetime dtypes ----------------------------------------------------------------

OBJ = np.array([1, "a", None, 2.5, (1,), "b"], dtype=object).reshape(2, 3)
STR = np.array(["a", "bb", "", "ccc", "d", "e"]).reshape(2, 3)
DATES = np.arange("2020-01-01", "2020-01-07", dtype="datetime64[D]").reshape(2, 3)
ODD = {"object": OBJ, "str": STR, "datetime": DATES}

# (name, einstride call, NumPy reference)
ODD_CALLS: list[tuple[str, Callable[[Any], Any], Callable[[np.ndarray], Any]]] = [
    ("Tensor strided view", lambda x: Tensor(x.reshape(-1), (3, 2), (1, 3)), lambda x: x.T),
    ("as_tensor of a transpose", lambda x: es.as_tensor(x.T), lambda x: x.T),
    ("tensor", lambda x: es.tensor(x), lambda x: x),
    (
        "copy_to",
        lambda x: (lambda d: (es.copy_to(x[0], d), d)[1])(np.empty((2, 3), x.dtype)),
        lambda x: np.stack([x[0], x[0]]),
    ),
    (
        "flatten_to",
        lambda x: (lambda d: (es.flatten_to(x.T, d), d)[1])(np.empty(6, x.dtype)),
        lambda x: x.T.reshape(-1),
    ),
    ("resize", lambda x: es.resize(x, 7)[:6], lambda x: x.reshape(-1)),
    ("reverse", lambda x: es.reverse(x, 1), lambda x: x[:, ::-1]),
    (
        "reverse in place",
        lambda x: (lambda c: es.reverse(c, 1, out=c))(x.copy()),
        lambda x: x[:, ::-1],
    ),
    ("transpose", lambda x: es.transpose(x), lambda x: x.T),
    ("reshape", lambda x: es.reshape(x.T, -1), lambda x: x.T.reshape(-1)),
    (
        "broadcast_to",
        lambda x: es.broadcast_to(x[:1], (3, 3)),
        lambda x: np.broadcast_to(x[:1], (3, 3)),
    ),
    ("split", lambda x: es.split(x, [1, 2], axis=1)[1], lambda x: x[:, 1:]),
    ("tile", lambda x: es.tile(x, [2, 1]), lambda x: np.tile(x, (2, 1))),
    (
        "pad reflect",
        lambda x: es.pad(x, [(1, 1), (2, 0)], mode="reflect"),
        lambda x: np.pad(x, [(1, 1), (2, 0)], mode="reflect"),
    ),
    ("stack", lambda x: es.stack([x, x], axis=1), lambda x: np.stack([x, x], axis=1)),
    ("concat", lambda x: es.concat([x, x[:1]]), lambda x: np.concatenate([x, x[:1]])),
    ("gather", lambda x: es.gather(x, [2, 0], axis=1), lambda x: x[:, [2, 0]]),
    (
        "boolean_mask",
        lambda x: es.boolean_mask(x, [[True, False, True], [False, True, False]]),
        lambda x: x[np.array([[True, False, True], [False, True, False]])],
    ),
    (
        "where",
        lambda x: es.where([True, False, True], x, x[::-1]),
        lambda x: np.where([True, False, True], x, x[::-1]),
    ),
    ("diag_part", lambda x: es.diag_part(x), lambda x: np.diagonal(x)),
    (
        "set_diag",
        lambda x: es.set_diag(x, x[1, :2]),
        lambda x: (lambda c: (np.fill_diagonal(c, x[1, :2]), c)[1])(x.copy()),
    ),
    ("equal", lambda x: es.equal(x, x[:1]), lambda x: x == x[:1]),
]


@pytest.mark.parametrize(("name", "call", "reference"), ODD_CALLS, ids=[c[0] for c in ODD_CALLS])
@pytest.mark.parametrize("kind", sorted(ODD))
def test_object_string_and_datetime_arrays_in_core_and_ops(kind, name, call, reference):
    x = ODD[kind]
    got, expected = plain(call(x)), reference(x)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tolist() == expected.tolist()


@pytest.mark.parametrize("kind", sorted(ODD))
def test_non_numeric_arrays_are_type_errors_in_einsum(kind):
    x = ODD[kind]
    for call in (
        lambda: es.einsum("ij->j", x),
        lambda: es.einsum("ij,ij->", np.ones((2, 3)), x),
        lambda: es.contract_expression("ij->i", (2, 3))(x),
        lambda: es.einsum("ij->i", np.ones((2, 3)), out=np.empty(2, x.dtype)),
        lambda: es.einsum_vjp("ij->", (x,), 1.0),
    ):
        with pytest.raises(TypeError, match="einsum"):
            call()


def test_element_wise_functions_on_odd_dtypes_follow_numpy():
    assert es.add(OBJ[:, :1], OBJ[:, :1]).tolist() == (OBJ[:, :1] + OBJ[:, :1]).tolist()
    assert es.less(STR, "b").tolist() == (STR < "b").tolist()
    days = np.array([1, 2, 3], "timedelta64[D]")
    assert es.add(DATES, days).tolist() == (DATES + days).tolist()
    assert es.subtract(DATES, DATES[0]).tolist() == (DATES - DATES[0]).tolist()
    for bad in (lambda: es.sqrt(STR), lambda: es.exp(DATES), lambda: es.add(STR, DATES)):
        with pytest.raises(TypeError):
            bad()


# -- 0-d arrays, NumPy scalars, Python scalars, nested lists -------------------------------------------

SCALARS = {
    "0-d array": np.array(2.5),
    "NumPy scalar": np.float32(2.5),
    "Python float": 2.5,
    "Python int": 3,
    "Python bool": True,
    "Python complex": 1 + 2j,
}


@pytest.mark.parametrize("kind", sorted(SCALARS))
def test_scalar_operands_everywhere(kind):
    s = SCALARS[kind]
    vector = [1.0, 2.0, 3.0]
    for equation, operands in [
        ("->", [s]),
        (",->", [s, s]),
        (",i->i", [s, vector]),
        ("i,->i", [vector, s]),
        ("...,...->...", [s, np.ones((2, 2))]),
    ]:
        got, expected = es.einsum(equation, *operands), np.einsum(equation, *operands)
        assert not isinstance(got, Tensor)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(np.asarray(got), expected)
    assert es.add(s, s) == np.add(s, s) and not isinstance(es.add(s, s), Tensor)
    assert es.as_tensor(s).shape == () and es.tensor(s).numpy() == np.asarray(s)
    assert es.flatten(s).tolist() == [np.asarray(s).item()]
    assert es.expand_dims(s, 0).tolist() == [np.asarray(s).item()]
    assert plain(es.stack([s, s])).tolist() == np.stack([s, s]).tolist()
    assert es.where(True, s, 0).tolist() == np.where(True, s, 0).tolist()
    dst = np.zeros(2, np.asarray(s).dtype)
    es.copy_to(s, dst)
    assert dst.tolist() == [s, s]
    with pytest.raises(ValueError):
        es.diag_part(s)  # rank 0 where rank >= 2 is needed: a clear ValueError
    with pytest.raises(LayoutError):
        Tensor(np.asarray(s))  # storage must be 1-D


NESTED: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
    (
        "einsum",
        lambda: es.einsum("ij,jk->ik", [[1, 2]], [[3], [4]]),
        lambda: np.einsum("ij,jk->ik", [[1, 2]], [[3], [4]]),
    ),
    (
        "einsum sublists",
        lambda: es.einsum([[1, 2], [3, 4]], [0, 0]),
        lambda: np.einsum([[1, 2], [3, 4]], [0, 0]),
    ),
    ("einsum tuple", lambda: es.einsum("i->", (1.5, 2.5)), lambda: np.einsum("i->", (1.5, 2.5))),
    (
        "einsum_path",
        lambda: es.einsum_path("ij,jk->ik", [[1.0, 2.0]], [[3.0], [4.0]])[0],
        lambda: ["einsum_path", (0, 1)],
    ),
    (
        "einsum_vjp",
        lambda: es.einsum_vjp("i,i->", ([1.0, 2.0], [3.0, 4.0]), 1.0)[0],
        lambda: np.array([3.0, 4.0]),
    ),
    ("tensor", lambda: es.tensor([[1, 2], [3, 4]]).numpy(), lambda: np.array([[1, 2], [3, 4]])),
    (
        "subtract",
        lambda: es.subtract([[1], [2]], [10, 20]),
        lambda: np.subtract([[1], [2]], [10, 20]),
    ),
    ("transpose", lambda: es.transpose([[1, 2, 3]]), lambda: np.transpose([[1, 2, 3]])),
    (
        "reshape",
        lambda: es.reshape([1, 2, 3, 4], (2, -1)),
        lambda: np.reshape([1, 2, 3, 4], (2, 2)),
    ),
    ("tile", lambda: es.tile([1, 2], [3]), lambda: np.tile([1, 2], 3)),
    ("pad", lambda: es.pad([[1, 2]], [(1, 0), (0, 1)]), lambda: np.pad([[1, 2]], [(1, 0), (0, 1)])),
    ("concat", lambda: es.concat([[1], [2, 3]]), lambda: np.concatenate([[1], [2, 3]])),
    ("stack", lambda: es.stack([[1, 2], [3, 4]], axis=1), lambda: np.stack([[1, 2], [3, 4]], 1)),
    ("gather", lambda: es.gather([10, 20, 30], [[2], [0]]), lambda: np.array([[30], [10]])),
    ("diag", lambda: es.diag([1, 2]), lambda: np.diag([1, 2])),
    ("trace", lambda: es.trace([[1, 2], [3, 4]]), lambda: np.trace([[1, 2], [3, 4]])),
    ("one_hot", lambda: es.one_hot([[1], [0]], 2), lambda: np.eye(2, dtype=np.float32)[[[1], [0]]]),
    ("reverse", lambda: es.reverse([[1, 2], [3, 4]], 0), lambda: np.array([[3, 4], [1, 2]])),
    ("resize", lambda: es.resize([[1, 2], [3, 4]], 5), lambda: np.array([1, 2, 3, 4, 0])),
    ("qr", lambda: es.qr([[3.0, 0.0], [4.0, 5.0]]).r[0, 0] ** 2, lambda: np.float64(25.0)),
]


@pytest.mark.parametrize(("name", "call", "reference"), NESTED, ids=[c[0] for c in NESTED])
def test_nested_lists_as_operands(name, call, reference):
    got, expected = call(), reference()
    assert not isinstance(got, Tensor), "no Tensor in, no Tensor out"
    if isinstance(expected, list):
        assert got == expected
        return
    assert plain(got).shape == np.shape(expected)
    np.testing.assert_allclose(plain(got), expected)
