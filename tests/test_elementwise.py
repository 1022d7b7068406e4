"""Element-wise functions: values against NumPy, result kinds, and the ``out=`` overlap rule on
random views of one storage."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride import Layout, LayoutError, Tensor
from layout_oracles import (
    has_repeats,
    layouts,
    layouts_of,
    offsets,
    overlap,
    source_shapes,
    storage_for,
    values,
    view,
)

UNARY = {
    "negative": np.negative,
    "abs": np.abs,
    "sqrt": np.sqrt,
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "tanh": np.tanh,
}
BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
}


def test_the_spec_lists_exactly_these_functions():
    assert set(UNARY) | set(BINARY) <= set(es.__all__)
    assert len(UNARY) + len(BINARY) == 25


def strided(values_2d: np.ndarray) -> Tensor:
    """A transposed, gapped Tensor view holding ``values_2d``."""
    rows, cols = values_2d.shape
    storage = np.zeros(2 * rows * cols + 1, dtype=values_2d.dtype)
    t = Tensor(storage, (cols, rows), (2 * rows, 2), 1).T
    t.numpy()[...] = values_2d
    return t


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_match_numpy_for_each_input_kind(name):
    data = np.array([[0.1, 0.5, 0.9], [0.2, 0.3, 0.7]])
    expected = UNARY[name](data)
    function = getattr(es, name)
    from_tensor = function(strided(data))
    assert isinstance(from_tensor, Tensor)
    np.testing.assert_array_equal(from_tensor.numpy(), expected)
    from_array = function(data)
    assert isinstance(from_array, np.ndarray)
    np.testing.assert_array_equal(from_array, expected)
    np.testing.assert_array_equal(function(data.tolist()), expected)
    assert function(0.5) == UNARY[name](0.5)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_functions_broadcast_like_numpy(name):
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = np.array([3.0, 2.0, 1.0])
    expected = BINARY[name](x, y)
    function = getattr(es, name)
    for a, b in [(strided(x), y), (x, strided(y[None, :])), (strided(x), strided(y[None, :]))]:
        result = function(a, b)
        assert isinstance(result, Tensor) and result.shape == expected.shape
        np.testing.assert_array_equal(result.numpy(), expected)
    plain = function(x, 2.0)
    assert isinstance(plain, np.ndarray)
    np.testing.assert_array_equal(plain, BINARY[name](x, 2.0))


def test_rank_zero_tensors_give_rank_zero_tensors():
    result = es.add(Tensor(np.array([2.0]), ()), 1)
    assert isinstance(result, Tensor) and result.shape == () and result.numpy() == 3.0


@pytest.mark.parametrize("name", ["add", "less"])
def test_out_is_written_in_place_and_returned(name):
    storage = np.zeros(7)
    out = Tensor(storage, (2, 3), (4, 1))
    x = np.arange(6.0).reshape(2, 3)
    assert getattr(es, name)(x, 2.5, out=out) is out
    np.testing.assert_array_equal(out.numpy(), BINARY[name](x, 2.5))
    assert storage[3] == 0.0  # the gap is untouched
    numpy_out = np.zeros((2, 3))
    assert es.negative(x, out=numpy_out) is numpy_out and numpy_out[1, 2] == -5.0


@st.composite
def out_cases(draw):
    out = draw(layouts())
    inputs = []
    for _ in range(draw(st.integers(1, 2))):
        same = Layout.create(out.shape, out.strides, out.offset)
        shifted = Layout.create(out.shape, out.strides, out.offset + draw(st.integers(1, 2)))
        other = layouts_of(draw(source_shapes(out.shape)))
        inputs.append(draw(st.sampled_from([same, shifted]) | other))
    return out, inputs


def fits(shape, target):
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


@settings(max_examples=200, deadline=None)
@given(out_cases())
def test_out_rule_between_views_of_one_storage(case):
    out, inputs = case
    storage = storage_for(out, *inputs, slack=1)
    original = storage.copy()
    function, ufunc = (es.add, np.add) if len(inputs) == 2 else (es.negative, np.negative)
    before = storage.copy()
    try:
        result = function(*(view(storage, x) for x in inputs), out=view(storage, out))
    except LayoutError:
        assert storage.tobytes() == before.tobytes()
        result = "error"
    allowed = all(fits(x.shape, out.shape) for x in inputs) and not has_repeats(out)
    for x in inputs:
        if allowed and overlap(x, out):
            seen = np.broadcast_to(offsets(x), out.shape)
            allowed = np.array_equal(seen, offsets(out))
    if not allowed:
        assert result == "error"
        return
    assert result != "error"
    expected = original.copy()
    expected[offsets(out)] = ufunc(*(values(original, x) for x in inputs))
    assert storage.tolist() == expected.tolist()


def test_out_rule_errors():
    storage = np.arange(6.0)
    with pytest.raises(LayoutError, match="input 1"):
        es.add(np.ones(3), storage[1:4], out=storage[:3])
    with pytest.raises(LayoutError, match="broadcast"):
        es.add(np.ones(3), 1, out=np.zeros(2))
    with pytest.raises(LayoutError, match="repeated"):
        es.sqrt(np.ones(3), out=Tensor(storage, (2, 3), (0, 1)))
    with pytest.raises(LayoutError, match="input 0"):  # broadcast read of a row being written
        es.add(storage[:3], 1, out=storage.reshape(2, 3))
    with pytest.raises(TypeError, match="destination"):
        es.add(1, 2, out=[0])
    frozen = np.zeros(2)
    frozen.flags.writeable = False
    with pytest.raises(LayoutError, match="read-only"):
        es.add(1, 2, out=frozen)
    assert storage.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_a_casting_error_writes_nothing():
    storage = np.arange(4)
    with pytest.raises(TypeError):
        es.divide(storage, 3, out=storage)
    assert storage.tolist() == [0, 1, 2, 3]


def test_out_is_untouched_whenever_an_error_can_come_after_the_loop() -> None:
    # a review: errstate "log" to a writer that raises, warnings turned into errors, and
    # ml_dtypes' int4 under a negative power all wrote out= before the error
    import warnings

    class Failing:
        def write(self, message: str) -> None:
            raise RuntimeError(message)

    out = np.array([1.0, 2.0, 3.0])
    with np.errstate(all="log", call=Failing()), pytest.raises(RuntimeError):
        es.divide([1.0, 0.0, 1.0], [0.0, 0.0, 1.0], out=out)
    assert out.tolist() == [1.0, 2.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):
            es.divide([1.0, 0.0, 1.0], [0.0, 0.0, 1.0], out=out)
    assert out.tolist() == [1.0, 2.0, 3.0]
    int4 = np.dtype(ml_dtypes.int4)
    target = np.array([5, 5, 5], int4)
    with pytest.raises(ValueError, match="negative integer powers"):
        es.power(np.array([2, 3, 1], int4), np.array([1, -1, 2], int4), out=target)
    assert target.astype(int).tolist() == [5, 5, 5]


def test_a_read_only_out_is_refused_before_its_casting() -> None:
    # a review: NumPy checks read-only first (ValueError); einstride raised the cast's TypeError
    frozen = np.zeros(3, np.int64)
    frozen.flags.writeable = False
    with pytest.raises(es.LayoutError, match="read-only"):
        es.add(np.ones(3), 1.5, out=frozen)


@pytest.mark.parametrize("exponent", [2, -1, 0.5, 2.0, 3])
@pytest.mark.parametrize(
    "dtype", [np.complex128, np.complex64, np.float16, np.longdouble, np.float64, np.bool_]
)
def test_tensor_power_by_a_python_number_is_numpy_s_operator(exponent: Any, dtype: Any) -> None:
    # a review: NumPy's ** squares, inverts or takes the root for 2, -1 and 0.5 (signs of
    # zero, infinities); np.power did not
    values = np.array([-4.0, -0.0, -np.inf, 3.0, np.inf, 0.5]).astype(dtype)
    with np.errstate(all="ignore"):
        try:
            want = values**exponent
        except ValueError:  # integers to a negative power: NumPy's own error, as NumPy
            with pytest.raises(ValueError, match="negative integer powers"):
                es.as_tensor(values) ** exponent
            return
        got = (es.as_tensor(values) ** exponent).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))
    np.testing.assert_array_equal(got, want)


def test_tensor_power_of_ml_dtypes_integers_is_np_power_s() -> None:
    # a review: ml_dtypes' ** squares uint4 into int8 (15 ** 2 -> -31); np.power gives 225
    for kind in (ml_dtypes.uint4, ml_dtypes.uint2, ml_dtypes.int4):
        values = np.array([1, 2], kind)
        got = (es.as_tensor(values) ** 2).numpy()
        want = np.power(values, 2)
        assert got.dtype == want.dtype and got.astype(int).tolist() == want.astype(int).tolist()
    assert (es.as_tensor(np.array([15], ml_dtypes.uint4)) ** 2).numpy().astype(int).tolist() == [
        225
    ]


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint32"])
def test_unary_functions_into_strided_outs_equal_their_dense_results(name: str, dtype: str) -> None:
    # a review: NumPy 2.4's negative wrote [-0, -1] for float32 [0, 4] read at a stride of
    # 4 items into an out of stride 2 (its SIMD loop); every unary function is swept
    fn = getattr(es, name)
    if dtype in ("int32", "uint32") and name not in ("abs", "negative"):
        return  # (the others compute floats: out= of an integer dtype is refused)
    for step in range(1, 6):
        for out_step in range(1, 4):
            for count in (1, 3, 8, 17):
                values = np.arange(count * step) % 7 + 1  # (in (0, 1] for the floats)
                x = (values if dtype[0] in "iu" else values / 8).astype(dtype)[::step]
                out = np.zeros(count * out_step, dtype)[::out_step]
                fn(x, out=out)
                np.testing.assert_array_equal(out, fn(x.copy()), err_msg=f"{step} {out_step}")
                strided = es.Tensor(np.zeros(count * out_step, dtype), (count,), (out_step,))
                fn(es.as_tensor(x), out=strided)
                np.testing.assert_array_equal(strided.numpy(), out)
    # 2-D: F-ordered and transposed outs (a review: the temporary kept out's F order, and
    # NumPy's negative miscomputed into it too)
    values = np.arange(32) % 7 + 1
    x2 = (values if dtype[0] in "iu" else values / 8).astype(dtype).reshape(4, 8)[::2, ::4]
    for out2 in (
        np.zeros((2, 2), dtype, order="F"),
        np.zeros((2, 2), dtype).T,
        es.Tensor(np.zeros(4, dtype), (2, 2), (1, 2)),
    ):
        fn(x2, out=out2)
        np.testing.assert_array_equal(np.asarray(out2), fn(x2.copy()))


def test_inputs_that_do_not_broadcast_are_a_layout_error_naming_the_function() -> None:
    # a review: NumPy's bare "operands could not be broadcast together" without out=, a
    # LayoutError with it; where likewise
    calls = {
        "add": lambda: es.add(np.ones(2), np.ones(3)),
        "add ": lambda: es.tensor([1, 2]) + es.tensor([1, 2, 3]),
        "less": lambda: es.less(np.ones((2, 3)), np.ones(2)),
        "where": lambda: es.where(np.ones(3, bool), np.ones(2), 0),
    }
    for name, call in calls.items():
        with pytest.raises(LayoutError, match=rf"^{name.strip()}: .*\(2,\).* do not broadcast"):
            call()
    with pytest.raises(ValueError, match="negative integer powers"):  # NumPy's own, as documented
        es.power(es.tensor([1, 2]), -1)


def test_matmul_of_a_rank_zero_operand_and_a_short_index_are_layout_errors() -> None:
    with pytest.raises(LayoutError, match="matmul: operand 1 has rank 0"):
        _ = es.tensor([1.0]) @ es.tensor(2.0)
    with pytest.raises(LayoutError, match=r"index \(1,\) has 1 entries, not 2"):
        Layout.create((2, 3)).offset_of((1,))


# -- NumPy's ufunc protocol (Tensor.__array_ufunc__) --------------------------------------


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**="])
def test_an_ndarray_updated_in_place_by_a_tensor_is_written(op: str) -> None:
    # a review: the in-place operator gave way to the Tensor's reflected one, a new Tensor
    # bound to the name and the caller's array unchanged
    def accumulate(buf: np.ndarray, t: object) -> None:
        exec(f"buf {op} t", {}, {"buf": buf, "t": t})

    values = np.array([1.0, 2.0, 3.0])
    ours, theirs = np.full(3, 2.0), np.full(3, 2.0)
    accumulate(ours, es.tensor(values))
    accumulate(theirs, values)
    np.testing.assert_array_equal(ours, theirs)
    a = np.full(3, 2.0)
    a += es.tensor(values)
    assert type(a) is np.ndarray


def test_an_in_place_update_overlapping_its_tensor_follows_numpy() -> None:
    x, y = np.arange(6.0), np.arange(6.0)
    x[1:] += es.as_tensor(x)[:5]  # (one buffer: NumPy's overlap rules for an ndarray out)
    y[1:] += y[:5]
    np.testing.assert_array_equal(x, y)


def test_numpy_ufuncs_on_tensors_answer_as_under_the_legacy_priority() -> None:
    # NumPy's operators with an ndarray on the left give einstride's function (a Tensor),
    # == and != identity, other ufuncs NumPy's result over the views (an ndarray)
    a = np.arange(1.0, 4.0)
    t = es.as_tensor(a.copy())
    for got, expected in [(a + t, a + a), (np.float64(2) * t, 2 * a), (a < t, a < a)]:
        assert isinstance(got, es.Tensor)
        np.testing.assert_array_equal(got.numpy(), expected)
    matmul = a @ es.tensor(np.ones((3, 2)))
    assert isinstance(matmul, es.Tensor) and matmul.tolist() == [6.0, 6.0]
    for got, expected in [
        (np.sin(t), np.sin(a)),
        (np.add.reduce(t), np.add.reduce(a)),
        (np.add.accumulate(t), np.add.accumulate(a)),
        (np.multiply.outer(t, a), np.multiply.outer(a, a)),
        (np.maximum(t, 2), np.maximum(a, 2)),
    ]:
        assert not isinstance(got, es.Tensor)
        np.testing.assert_array_equal(got, expected)
    assert np.add.reduce(t) == 6.0 and np.isfinite(t).all()
    assert (a == t) is False and (a != t) is True and (t == np.float64(1)) is False
    assert t in [a, t] and [a, t].index(t) == 1 and [a] != [t]  # (identity: no ValueError)
    assert (t == t) is True and np.equal(t, t) is True
    # (a direct call is its operator: NumPy hands both over alike; documented)
    assert isinstance(np.add(a, t), es.Tensor) and np.equal(a, t) is False
    assert es.equal(a, t).tolist() == [True, True, True]
    out = np.empty(3)
    assert np.add(t, 1, out=out) is out
    np.testing.assert_array_equal(out, a + 1)
    own = es.tensor(np.zeros(3))
    assert np.add(a, 1, out=own) is own
    np.testing.assert_array_equal(own.numpy(), a + 1)


def test_ufunc_keywords_and_outputs_of_tensors_work_as_numpys() -> None:
    # (a review of the protocol: where= a Tensor recursed forever, a partial out= tuple
    # of a two-output ufunc was refused, a bfloat16 ndarray @ Tensor ran NumPy's matmul)
    mask = es.tensor([True, False, True])
    np.testing.assert_array_equal(np.add(np.ones(3), 1, out=np.zeros(3), where=mask), [2, 0, 2])
    assert np.sum(np.ones(3), where=mask) == 2.0
    t = es.tensor([1.0, 2.0, 3.0])
    quotient, remainder = np.divmod(t, 2, out=(None, np.zeros(3)))
    np.testing.assert_array_equal(quotient, [0, 1, 1])
    np.testing.assert_array_equal(remainder, [1, 0, 1])
    bf = ml_dtypes.bfloat16
    product = np.ones((2, 30), bf) @ es.tensor(np.ones((30, 2), bf))
    assert product.dtype == bf  # (einstride's matmul, as Tensor @ Tensor)


def test_a_tensor_out_keeps_einstrides_overlap_rule() -> None:
    xt = es.as_tensor(np.arange(6.0))
    with pytest.raises(es.LayoutError, match=r"add: input 0 .* overlaps out="):
        np.add(xt[:5], 1, out=xt[1:])


def test_a_tensor_is_written_only_by_einstrides_functions() -> None:
    # a review: np.add.at wrote through a read-only Tensor (over bytes), np.negative with
    # a keyword wrote a strided Tensor out= by NumPy 2.4's miscomputing loop
    buffer = np.frombuffer(b"\0" * 24)
    with pytest.raises(TypeError, match=r"numpy\.add\.at does not write a Tensor"):
        np.add.at(Tensor(buffer), [0], 1)
    assert buffer.tolist() == [0.0, 0.0, 0.0]
    x = np.arange(8.0, dtype=np.float32)[::4]
    out = Tensor(np.zeros(4, np.float32))[::2]
    with pytest.raises(TypeError, match="a Tensor out= is written by einstride's"):
        np.negative(x, out=out, where=True)
    np.negative(x, out=out)  # (the plain call: es.negative, its workaround)
    assert out.tolist() == [-0.0, -4.0]
