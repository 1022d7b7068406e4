"""The NumPy-like methods of ``Tensor`` (reductions, astype, matmul, transpose, reshape,
copy, item/tolist) on strided layouts, against NumPy over the same values."""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import einstride as es
from einstride import Tensor
from layout_oracles import layouts, nonempty_shapes, storage_for, values, view

REDUCTIONS = ["sum", "mean", "prod", "max", "min", "any", "all"]


@st.composite
def reductions(draw: st.DrawFn):
    layout = draw(layouts(nonempty_shapes))
    dtype = draw(st.sampled_from([np.int64, np.float64, np.bool_]))
    storage = (storage_for(layout) % 7 % (2 if dtype is np.bool_ else 7)).astype(dtype)
    name = draw(st.sampled_from(REDUCTIONS))
    axis = None
    if layout.ndim and draw(st.booleans()):
        picked = draw(st.permutations(range(layout.ndim)))[: draw(st.integers(1, layout.ndim))]
        axis = tuple(a - layout.ndim if draw(st.booleans()) else a for a in picked)
        if len(axis) == 1 and draw(st.booleans()):
            axis = axis[0]
    return view(storage, layout), values(storage, layout), name, axis, draw(st.booleans())


@given(reductions())
def test_reductions_match_numpy_on_any_layout(case):
    t, expected_values, name, axis, keepdims = case
    got = getattr(t, name)(axis=axis, keepdims=keepdims)
    expected = np.asarray(getattr(np, name)(expected_values, axis=axis, keepdims=keepdims))
    assert isinstance(got, Tensor)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got.numpy(), expected)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_small_floats_accumulate_in_float32(dtype, name):
    t = es.as_tensor(np.ones(5000, dtype))
    got = getattr(t, name)()
    assert got.dtype == np.dtype(dtype)
    exact = np.asarray(5000.0 if name == "sum" else 1.0, dtype)  # rounded once
    assert got.item() == exact.item()
    assert t.sum(dtype=np.float64).dtype == np.float64


def test_reduction_errors():
    t = es.as_tensor(np.arange(6).reshape(2, 3))
    with pytest.raises(es.LayoutError, match="out of range"):
        t.sum(axis=2)
    with pytest.raises(es.LayoutError, match="repeated"):
        t.max(axis=(0, -2))
    with pytest.raises(ValueError):
        es.as_tensor(np.zeros((0, 3))).max(axis=0)  # no identity, as NumPy


def test_astype():
    t = Tensor(np.array([1.5, -2.5, 3.0, 9.0]), shape=(2, 2), strides=(1, 2))  # transposed
    cast = t.astype(np.int8)
    assert cast.dtype == np.int8 and cast.is_dense
    np.testing.assert_array_equal(cast.numpy(), t.numpy().astype(np.int8))
    assert t.astype(np.float64, copy=False) is t
    same = t.astype(np.float64)
    assert same is not t and not np.shares_memory(same.numpy(), t.numpy())
    assert t.astype("bfloat16").dtype == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(TypeError):
        t.astype("no such dtype")


@pytest.mark.parametrize(
    ("shape_a", "shape_b"),
    [
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((1, 2, 3), (4, 3, 2)),
        ((3,), (3, 4)),
        ((2, 3), (3,)),
        ((3,), (3,)),
        ((2, 1, 2, 3), (5, 3, 1)),
    ],
)
def test_matmul_matches_numpy(shape_a, shape_b):
    a = np.arange(np.prod(shape_a), dtype=np.float64).reshape(shape_a) % 5
    b = np.arange(np.prod(shape_b), dtype=np.float64).reshape(shape_b) % 3
    expected = a @ b
    for got in (
        es.as_tensor(a) @ es.as_tensor(b),
        es.as_tensor(a) @ b,
        a @ es.as_tensor(b),
        a.tolist() @ es.as_tensor(b),
    ):
        assert isinstance(got, Tensor)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got.numpy(), expected)


def test_matmul_on_strided_views_and_ints():
    a = es.as_tensor(np.arange(24).reshape(4, 6))[:, ::2]  # gapped columns
    b = es.as_tensor(np.arange(12).reshape(3, 4)).T.T
    np.testing.assert_array_equal((a @ b).numpy(), a.numpy() @ b.numpy())
    assert (a @ b).dtype == np.int64


def test_matmul_errors():
    a = es.as_tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match="rank 0"):
        a @ es.as_tensor(np.float64(2.0))
    with pytest.raises(ValueError):
        a @ np.ones((4, 2))  # inner sizes differ (an EinsumError, a ValueError as NumPy's)


def test_views_where_the_layout_allows():
    base = np.arange(24.0).reshape(2, 3, 4)
    t = es.as_tensor(base)
    for moved in (
        t.T,
        t.transpose(),
        t.transpose(None),
        t.transpose(2, 0, 1),
        t.transpose((2, 0, 1)),
        t.reshape(6, 4),
        t.reshape((4, -1)),
    ):
        assert np.shares_memory(moved.numpy(), base)
    np.testing.assert_array_equal(t.transpose(2, 0, 1).numpy(), base.transpose(2, 0, 1))
    strided = t[:, :, ::2]
    flat = strided.reshape(-1)  # no view describes it: a dense copy, as NumPy
    np.testing.assert_array_equal(flat.numpy(), base[:, :, ::2].reshape(-1))
    copied = t.copy()
    assert copied.is_dense and not np.shares_memory(copied.numpy(), base)


def test_scalar_access_and_array_protocol():
    t = Tensor(np.arange(6), shape=(2, 3))
    assert t.item(4) == 4 and t.item(1, 0) == 3 and t[1, 2].item() == 5
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert t.ndim == 2 and t.size == 6 and t.dtype == np.int64
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError):
        t.item()  # more than one element, as NumPy


def test_pickle_and_deepcopy_keep_one_storage_for_every_view() -> None:
    """The cached NumPy view was pickled as state: the copy's view and storage were two
    arrays (writes through one missed the other), and a broadcast view pickled every
    element (a review)."""
    import copy
    import pickle

    t = es.Tensor(np.arange(4.0), shape=(2, 2))
    t.numpy()  # the cached view exists
    for twin in (copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        es.add(twin, 10.0, out=twin)
        assert twin.tolist() == [[10.0, 11.0], [12.0, 13.0]] == twin.T.T.tolist()
        assert twin.storage.tolist() == [10.0, 11.0, 12.0, 13.0]
    assert t.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    wide = es.Tensor(np.zeros(1), shape=(1000, 1000), strides=(0, 0))
    wide.numpy()
    assert len(pickle.dumps(wide)) < 1000


def test_numpy_s_reduction_functions_take_tensors() -> None:
    """np.sum(t) passes out=None to Tensor.sum, which refused it (a review)."""
    t = es.Tensor(np.arange(6.0), shape=(2, 3))
    for name in ("sum", "mean", "prod", "max", "min", "any", "all"):
        want = getattr(np, name)(t.numpy(), axis=1)
        np.testing.assert_array_equal(np.asarray(getattr(np, name)(t, axis=1)), want)
    out = np.empty(3)
    assert np.sum(t, axis=0, out=out) is out and out.tolist() == [3.0, 5.0, 7.0]


def test_a_reduction_s_out_must_have_the_result_s_shape() -> None:
    """A review: copyto broadcast a sum into every element of a larger out=."""
    t = es.Tensor(np.arange(6.0), shape=(2, 3))
    for call, wrong in ((lambda o: t.sum(out=o), (5,)), (lambda o: t.max(axis=1, out=o), (4, 2))):
        out = np.zeros(wrong)
        with pytest.raises(es.LayoutError, match="out= has shape"):
            call(out)
        assert not out.any()
    with pytest.raises(TypeError, match="out= must be"):
        t.sum(out=[0.0])  # a list would have been a temporary copy, written and lost
    target = es.Tensor(np.zeros(2))
    assert t.sum(axis=1, out=target) is target and target.tolist() == [3.0, 12.0]


@pytest.mark.parametrize("small", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, np.float16])
def test_dtype_of_a_small_float_accumulates_in_float32(small: type) -> None:
    """A review: sum(dtype=bfloat16) of 10,000 float32 ones stalled at 256 (each addition
    rounded to bfloat16); the sum now runs in float32 and is rounded once, as einsum's."""
    ones = es.Tensor(np.ones(100, np.float32))
    for name in ("sum", "mean"):
        got = getattr(ones, name)(dtype=small)
        assert got.dtype == np.dtype(small)
        want = es.einsum("i->", ones, dtype=small) if name == "sum" else 1.0
        assert float(got.item()) == float(np.asarray(want))
    counts = es.Tensor(np.ones(10000, np.float32))
    wide = float(np.float32(10000).astype(small))  # 10000 rounded once (float8: NaN)
    np.testing.assert_equal(float(counts.sum(dtype=small).item()), wide)


@pytest.mark.parametrize("small", [np.float16, ml_dtypes.bfloat16])
def test_a_small_float_dtype_rounds_the_input_first_as_numpy(small: type) -> None:
    """A review: sum/mean/prod(dtype=float16) accumulated the float64 input unrounded
    (sum of [1 + 2**-12, -1] gave 2**-12; NumPy, as einsum, casts the input to dtype=
    first: 0), also into out= and on integers past the small float's exact range."""
    pairs = [
        (np.array([1 + 2**-12, -1.0]), "sum"),
        (np.array([1 + 2**-12, -1.0]), "mean"),
        (np.full(4096, 1 + 2**-12), "prod"),
        (np.array([2049, -2048]), "sum"),
        (np.broadcast_to(np.array([1 + 2**-12, -1.0]), (3, 2)), "sum"),  # broadcast input
    ]
    for data, name in pairs:
        t = es.as_tensor(data)
        want = getattr(np, name)(data.astype(small), dtype=np.float32).astype(small)
        got = getattr(t, name)(dtype=small, axis=-1 if data.ndim > 1 else None)
        np.testing.assert_array_equal(
            np.asarray(got.numpy(), np.float32),
            np.broadcast_to(np.asarray(want, np.float32), got.shape),
        )
    out = np.zeros((), np.float32)
    es.as_tensor(np.array([1 + 2**-12, -1.0])).sum(dtype=small, out=out)
    assert float(out) == 0.0


def test_contains_transpose_item_and_tolist_follow_numpy_and_the_guard() -> None:
    """A review: `tensor in t` was always False; transpose(()) reversed the axes; item's
    IndexError leaked; tolist and a reduction's result of a broadcast view passed the
    memory guard."""
    m = es.Tensor(np.arange(6), shape=(2, 3))
    assert es.tensor(3) in m and m[0] in m and es.tensor(9) not in m
    with pytest.raises(es.LayoutError, match="do not permute"):
        m.transpose(())
    assert m.transpose().shape == m.transpose(None).shape == (3, 2)
    with pytest.raises(es.LayoutError, match="out of bounds"):
        m.item(5, 5)
    broadcast = es.Tensor(np.zeros(1), shape=(50, 100, 2), strides=(0, 0, 0))
    previous = es.memory.set_memory_limit(10_000)
    try:
        with pytest.raises(es.MemoryLimitError):
            broadcast.tolist()
        with pytest.raises(es.MemoryLimitError):
            broadcast.sum(axis=2)
        assert broadcast.sum().item() == 0.0  # a scalar result is fine
    finally:
        es.memory.set_memory_limit(previous)


def test_a_reduction_into_a_wider_out_is_numpy_s_unrounded() -> None:
    """A review: a float16 sum was rounded to float16 before its copy into a float32 out=
    (2048 against NumPy's 2049)."""
    halves = es.Tensor(np.ones(2049, np.float16))
    for kind in (np.float32, np.float64):
        out = np.zeros((), kind)
        assert halves.sum(out=out) is out and float(out) == 2049.0 == np.sum(
            halves.numpy(), out=np.zeros((), kind)
        )
    small = es.Tensor(np.array([1, 2**-9, 2**-9, 0], ml_dtypes.bfloat16))
    out = np.zeros((), np.float32)
    small.sum(out=out)
    assert float(out) == 1.00390625
    means = es.Tensor(np.arange(4096, dtype=np.float16) % 3277)
    out = np.zeros((), np.float32)
    means.mean(out=out)
    assert float(out) == float(np.mean(means.numpy(), out=np.zeros((), np.float32)))


@pytest.mark.parametrize(
    ("values", "name", "kind"),
    [
        (np.array([1.5, 2.5, 2.0]), "sum", np.int64),
        (np.array([1, 2]), "mean", np.int64),
        (np.array([1.5, 3.7]), "max", np.int64),
        (np.array([1 + 1j, 2 - 1j]), "sum", np.float64),
        (np.array([0.5, 1.5]), "sum", np.int32),
    ],
)
def test_a_reduction_casts_into_out_unsafely_as_numpy(values: Any, name: str, kind: Any) -> None:
    """A review: same_kind refused the casts NumPy's reductions make into out=."""
    out, want = np.zeros((), kind), np.zeros((), kind)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex -> real discards the imaginary part
        getattr(es.Tensor(values), name)(out=out)
        getattr(np, name)(values, out=want)
    assert out == want


def test_numpy_s_initial_and_where_reach_the_tensor_methods() -> None:
    """A review: np.max(t, initial=10), np.sum(t, where=mask) raised TypeError."""
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    t, mask = es.Tensor(x.ravel(), (2, 2)), np.array([[True, False], [False, True]])
    assert float(np.max(t, initial=10)) == 10.0
    for name in ("sum", "mean", "prod", "max", "min", "any", "all"):
        got = getattr(np, name)(
            t, axis=1, where=mask, **({"initial": 0.5} if name in ("max", "min") else {})
        )
        want = getattr(np, name)(
            x, axis=1, where=mask, **({"initial": 0.5} if name in ("max", "min") else {})
        )
        np.testing.assert_array_equal(np.asarray(got), want)
    assert t.sum(where=es.Tensor(mask.ravel(), (2, 2)), initial=1.0).item() == 1.0 + 1.0 - 1.0


def test_bools_squared_are_int8_as_numpy_s_operator() -> None:
    """A review: np.power gives int64 where NumPy's ``**`` squares (int8)."""
    b = np.array([True, False])
    for exponent in (2, 2.0, 3, np.int64(2)):
        got = es.Tensor(b) ** exponent
        assert got.dtype == (b**exponent).dtype and got.tolist() == (b**exponent).tolist()


def test_len_and_item_past_an_index_s_range_are_layout_errors() -> None:
    """A review: a bare OverflowError (an empty layout's other lengths are free)."""
    with pytest.raises(es.LayoutError, match="past len"):
        len(es.Tensor(np.zeros(0), (2**64, 0)))
    t = es.Tensor(np.arange(6.0), (2, 3))
    for index in ((2**70,), (0, 2**70)):
        with pytest.raises(es.LayoutError, match="item"):
            t.item(*index)


def test_a_reduction_into_a_small_float_out_runs_as_numpy_s_or_in_float32() -> None:
    """A review: into a float16/bfloat16 out=, initial= was cast to the input's dtype first
    (bool max(initial=5) gave 1; int8 max(initial=1000) overflowed), and a float16 sum into
    bfloat16 was rounded twice."""
    for source, initial in ((np.array([True, False]), 5), (np.array([1, 2], np.int8), 1000)):
        got, want = np.zeros((), np.float16), np.zeros((), np.float16)
        es.as_tensor(source).max(initial=initial, out=got)
        np.max(source, initial=initial, out=want)
        assert float(got) == float(want) == float(initial)
    halves = es.as_tensor(np.full(5000, 1.0, np.float16))
    out = np.zeros((), ml_dtypes.bfloat16)
    halves.sum(out=out)
    assert float(out) == float(np.float32(5000).astype(ml_dtypes.bfloat16))  # rounded once
    out = np.zeros((), ml_dtypes.bfloat16)
    es.as_tensor(np.full(100, 2.0, np.float16)).prod(out=out)
    assert float(out) == 2.0**100  # bfloat16 holds it; a float16 product overflowed


def test_a_complex_product_into_a_small_float_out_multiplies_complex_numbers() -> None:
    """NumPy's value (the real part of the product); the float32 accumulation of a small
    float out= multiplied the real parts (a review: 3 for (1+2j)(3+4j))."""
    c = np.array([1 + 2j, 3 + 4j], np.complex64)
    out = np.zeros((), np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        es.as_tensor(c).prod(out=out)
    assert float(out) == -5.0


@pytest.mark.parametrize("small", ["float16", "bfloat16"])
def test_an_integer_mean_into_a_small_float_out_divides_as_numpy(small: str) -> None:
    """mean(dtype=int32, out=float16) sums in int32 and divides in the float (NumPy's 1.5;
    a review: einstride's integer mean truncated it to 1)."""
    x = es.as_tensor(np.array([1, 2], np.int32))
    out = np.zeros((), small)
    x.mean(dtype=np.int32, out=out)
    assert float(out) == 1.5


def test_diagonal_refuses_one_axis_which_numpy_reads_as_an_offset() -> None:
    # a review: t.diagonal(1) (NumPy: the diagonal above the main one) merged axis 1 alone,
    # the identity, and returned the whole tensor
    m = es.Tensor(np.arange(9), shape=(3, 3))
    for axes in (0, 1, -1, (1,), [0]):
        with pytest.raises(es.LayoutError, match=r"one axis .*diagonal\(offset\)"):
            m.diagonal(axes)
    assert m.diagonal().tolist() == [0, 4, 8] == m.diagonal((0, 1)).tolist()
    assert (
        m[:-1, 1:].diagonal((1, 0)).tolist() == np.diagonal(np.arange(9).reshape(3, 3), 1).tolist()
    )
    cube = es.Tensor(np.arange(8), shape=(2, 2, 2))
    assert cube.diagonal((0, 1, 2)).tolist() == [0, 7]


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "any", "all"])
def test_a_reduction_into_an_out_that_cannot_be_written_is_a_layout_error(name: str) -> None:
    # a review: NumPy's "output array is read-only", naming no method
    t = es.Tensor(np.arange(1.0, 7.0), shape=(2, 3))
    read_only = np.zeros(3, bool if name in ("any", "all") else float)
    read_only.flags.writeable = False
    repeated = es.Tensor(np.zeros(1, read_only.dtype), (3,), (0,))
    for out, words in ((read_only, "read-only"), (repeated, "repeated locations")):
        with pytest.raises(es.LayoutError, match=rf"Tensor\.{name} out=: .*{words}"):
            getattr(t, name)(axis=0, out=out)


# -- a review of the Tensor methods (each failed on the code before it) -------------------


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda t: t.max(initial=1000), "Tensor.max: initial=1000"),
        (lambda t: t.sum(initial=2**70), "Tensor.sum: initial=1180591620717411303424"),
        (lambda t: t.sum(initial=float("nan")), "Tensor.sum: initial=nan"),
        (lambda t: t.astype(np.uint8).sum(initial=-1), "Tensor.sum: initial=-1"),
        (lambda t: t.min(initial=-1000, out=np.empty((), np.int8)), "Tensor.min: initial=-1000"),
    ],
)
def test_an_initial_the_dtype_cannot_hold_is_out_of_range_naming_the_method(
    call: Any, words: str
) -> None:
    t = es.tensor(np.arange(3, dtype=np.int8))
    with pytest.raises(es.OutOfRangeError) as caught:
        call(t)
    assert str(caught.value).startswith(words)


def test_a_full_reduction_of_objects_stays_objects() -> None:
    big = es.tensor(np.array([2**62, 2**62], dtype=object))
    assert big.sum().dtype == object and big.sum().item() == 2**63
    mixed = es.tensor(np.array([1, 2.5, 3], dtype=object))
    assert mixed.sum().dtype == object == mixed.reshape(1, 3).sum(axis=1).dtype
    assert es.tensor(np.arange(3)).sum().dtype == np.arange(3).sum().dtype  # (numbers: NumPy's)
    for got, numpys in [  # (dtype= keeps NumPy's: a review found it ignored)
        (big.sum(dtype=float), np.array([2**62, 2**62], object).sum(dtype=float)),
        (big.sum(axis=0, dtype=float), np.array([2**62, 2**62], object).sum(axis=0, dtype=float)),
        (big.mean(), np.array([2**62, 2**62], object).mean()),
    ]:
        assert got.dtype == np.asarray(numpys).dtype == np.float64


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (
            lambda t: t.transpose(0.0),
            TypeError,
            "transpose axes must be an int or a sequence of ints",
        ),
        (lambda t: t.item("a"), TypeError, "Tensor.item('a',): the index must be ints"),
        (
            lambda t: es.tensor(np.array([2**70], dtype=object)).astype(np.int64),
            es.OutOfRangeError,
            "Tensor.astype: ",
        ),
        (
            lambda t: es.tensor(np.array(["1.5", "x"])).astype(float),
            es.OutOfRangeError,
            "Tensor.astype: could not convert string to float",
        ),
        (lambda t: t.astype("foo"), TypeError, "Tensor.astype: data type 'foo' not understood"),
    ],
)
def test_method_errors_name_the_method(call: Any, error: Any, words: str) -> None:
    with pytest.raises(error) as caught:
        call(es.tensor(np.eye(2)))
    assert str(caught.value).startswith(words)


def test_transpose_takes_a_0d_integer_array_as_an_axis() -> None:
    t = es.tensor(np.arange(6.0).reshape(2, 3))
    assert t.transpose(np.array(1), 0).shape == (3, 2)


@pytest.mark.parametrize(
    "where", [1, 0, [1, 0, 1], 0.5, [0.5, 0, 2], np.array([True, False, True])]
)
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "any", "all", "max"])
def test_a_reductions_where_is_taken_as_numpy_takes_it(name: str, where: Any) -> None:
    # (a number or a list of numbers is converted to bool, as NumPy converts it: an int
    # list was refused, a cast "according to the rule 'safe'")
    if name == "mean" and np.asarray(where).dtype.kind == "f":
        pytest.skip("NumPy's mean counts a float where= by its values cast to int (0.5: none)")
    a = np.arange(1.0, 7.0).reshape(2, 3)
    extra = {"initial": 0.0} if name == "max" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a mean over nothing: NaN, as NumPy
        expected = getattr(np, name)(a, where=where, **extra)
        got = getattr(es.tensor(a), name)(where=where, **extra)
    np.testing.assert_array_equal(got.numpy(), expected)


def test_any_and_all_into_an_object_out_do_not_corrupt_memory() -> None:
    # NumPy 2.4's own any/all into an object out corrupt reference counts: a segfault at a
    # later collection (a review); run apart, so that a crash fails this test alone
    import subprocess
    import sys

    code = (
        "import gc, numpy as np, einstride as es\n"
        "t = es.tensor(np.arange(6.0).reshape(2, 3))\n"
        "o, row = np.empty((), object), np.empty(3, object)\n"
        "for _ in range(200):\n"
        "    t.any(out=o); t.all(out=o); t.any(axis=0, out=row); gc.collect()\n"
        "assert o[()] is False and list(row) == [True, True, True], (o, row)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
