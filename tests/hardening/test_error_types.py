"""The documented error type of each failure class (docs/reliability.md), one row per case:
a shape, axis, size or count an op rejects is a ``LayoutError`` wherever it is rejected (the
same bad split from ``es.split`` and ``Layout.split``); the memory guard is a
``MemoryLimitError``; a value its dtype cannot hold is an ``OutOfRangeError`` (also NumPy's
``OverflowError``); a value of the wrong type is a ``TypeError`` whose message names the
argument; messages about long equations stay short.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import einstride as es
from einstride import memory

M = np.arange(6.0).reshape(2, 3)

LAYOUT_ERRORS: list[tuple[str, Callable[[], Any]]] = [
    ("split count", lambda: es.split(np.ones(5), 2)),
    ("split sizes", lambda: es.split(np.ones(5), [2, 2])),
    ("split negative", lambda: es.split(np.ones(5), [6, -1])),
    ("split count 0", lambda: es.split(np.ones(5), 0)),
    ("split rank 0", lambda: es.split(np.float64(1), 1)),
    ("unstack rank 0", lambda: es.unstack(np.float64(1))),
    ("stack shapes", lambda: es.stack([np.ones(2), np.ones(3)])),
    ("stack empty", lambda: es.stack([])),
    ("concat shapes", lambda: es.concat([np.ones((2, 2)), np.ones((2, 3))])),
    ("concat rank 0", lambda: es.concat([np.float64(1)])),
    ("tile count", lambda: es.tile(M, [2])),
    ("tile negative", lambda: es.tile(M, [2, -1])),
    ("reshape count", lambda: es.reshape(M, (4, 2))),
    ("axis out of range", lambda: es.transpose(M, (0, 2))),
    ("squeeze length", lambda: es.squeeze(M, 0)),
    ("gather index", lambda: es.gather(M, [3], axis=1)),
    ("gather negative index", lambda: es.gather(M, [-1])),
    ("gather batch", lambda: es.gather(M, [[0]], axis=1, batch_dims=1)),
    ("gather batch_dims", lambda: es.gather(M, [0], axis=0, batch_dims=1)),
    ("boolean_mask shape", lambda: es.boolean_mask(M, [True])),
    ("pad paddings shape", lambda: es.pad(M, [(1, 1)])),
    ("pad negative", lambda: es.pad(M, [(1, 1), (-1, 0)])),
    ("pad reflect", lambda: es.pad(M, [(0, 0), (3, 0)], mode="reflect")),
    ("one_hot depth", lambda: es.one_hot([0], -1)),
    ("one_hot on_value shape", lambda: es.one_hot([0], 2, on_value=[1, 2])),
    ("diag rank", lambda: es.diag(np.float64(1))),
    ("set_diag shape", lambda: es.set_diag(M, [1.0])),
    ("eye negative", lambda: es.eye(-1)),
    ("eye batch", lambda: es.eye(2, batch_shape=(-1,))),
    ("qr rank", lambda: es.qr(np.ones(3))),
    ("fans rank", lambda: es.fans((3,))),
    ("orthogonal rank", lambda: es.orthogonal((3,))),
    ("categorical shape", lambda: es.categorical(np.zeros(3), 1)),
    ("linspace num", lambda: es.linspace(0, 1, -1)),
    ("linspace ends", lambda: es.linspace(np.zeros(2), np.zeros(3), 4)),
    ("zeros negative", lambda: es.zeros((2, -1))),
    ("int_tuple 2-D", lambda: es.expand_dims(M, np.zeros((2, 2), int))),
    ("copy_to shapes", lambda: es.copy_to(np.ones(3), np.zeros(2))),
    ("reverse out shape", lambda: es.reverse(M, 0, out=np.zeros(3))),
]


@pytest.mark.parametrize("call", [c for _, c in LAYOUT_ERRORS], ids=[n for n, _ in LAYOUT_ERRORS])
def test_shape_axis_and_size_errors_are_layout_errors(call):
    with pytest.raises(es.LayoutError):
        call()


def test_the_same_bad_split_is_the_same_type_everywhere():
    layout = es.Layout.create((5,))
    for sizes in ([2, 2], [6, -1]):
        with pytest.raises(es.LayoutError):
            layout.split(0, sizes)
        with pytest.raises(es.LayoutError):
            es.split(np.ones(5), sizes)
        with pytest.raises(es.LayoutError):
            es.split(es.tensor(np.ones(5)), sizes)


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.zeros(2**20),
        lambda: es.tile(np.ones(1), [2**20]),
        lambda: es.tensor(range(2**20)),
        lambda: es.add(np.ones((2**10, 1)), np.ones(2**10)),
        lambda: es.split(np.zeros((0, 1)), 2**20),
        lambda: es.arange(2**20),
        lambda: es.nonzero_indices(np.broadcast_to(1.0, (2**20,))),
        lambda: es.gather(np.broadcast_to(1.0, (2**20, 2)), np.zeros(2**20, int)),
        lambda: es.Layout.create(range(2**20)),
    ],
    ids=["zeros", "tile", "tensor", "add", "split", "arange", "nonzero", "gather", "layout"],
)
def test_the_memory_guard_is_a_memory_limit_error(call):
    previous = memory.set_memory_limit(2**20)
    try:
        with pytest.raises(es.MemoryLimitError, match=r"would allocate .* memory limit"):
            call()
    finally:
        memory.set_memory_limit(previous)
    assert issubclass(es.MemoryLimitError, ValueError) and "MemoryLimitError" in es.__all__


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.pad(np.zeros(2, np.int8), [(1, 1)], value=1000),
        lambda: es.full(2, 1000, dtype=np.int8),
        lambda: es.full_like(np.zeros(2, np.int8), 1000),
        lambda: es.full(2, 1000.0, dtype=np.int8),  # (these three wrapped to -24: a review)
        lambda: es.full(2, np.int64(1000), dtype=np.int8),
        lambda: es.full_like(np.zeros(2, np.uint8), -1.0),
        lambda: es.full(2, np.array(1000), dtype=np.int8),  # (these wrapped too: a review)
        lambda: es.full(2, [1000.0], dtype=np.int8),
        lambda: es.one_hot([0, 1], 2, on_value=np.int64(1000), dtype=np.int8),
        lambda: es.one_hot([0], 2, off_value=np.array(-1), dtype=np.uint8),
        lambda: es.pad(np.zeros(2, np.uint8), [(1, 1)], value=-1),
        lambda: es.pad(np.zeros(2, np.uint16), [(0, 0)], value=70000.0),
        lambda: es.full(2, float("nan"), dtype=np.int32),
        lambda: es.full(2, 1000 + 0j, dtype=np.int8),
        lambda: es.tensor([1000], dtype=np.int8),
        lambda: es.one_hot([0], 2, on_value=300, dtype=np.int8),
        lambda: es.copy_to(2**70, np.zeros(2, np.int64)),
        lambda: es.copy_to([2**70], np.zeros(1, np.int64)),
        lambda: es.try_copy_to(2**70, np.zeros(2, np.int64)),
        lambda: es.try_flatten_to([2**70], np.zeros(2, np.int64)),
        lambda: es.resize_to([2**70], np.zeros(2, np.int64)),
        lambda: es.random_uniform(3, -1e308, 1e308, seed=0),
        lambda: es.copy_to(np.array(["2020-01-01"], "M8[D]"), np.zeros(1, "U3")),
        lambda: es.copy_to(np.array(["2020-01-01"], "M8[D]"), np.zeros(1, "S3")),
        lambda: es.add(np.int8([1]), 1000),
        lambda: es.multiply(np.uint8([1]), -1),
    ],
    ids=[
        "pad",
        "full",
        "full_like",
        "full float",
        "full numpy int",
        "full_like float",
        "full 0-d array",
        "full list",
        "one_hot numpy on",
        "one_hot 0-d off",
        "pad uint8",
        "pad nothing padded",
        "full NaN",
        "full complex",
        "tensor",
        "one_hot",
        "copy_to",
        "copy_to list",
        "try_copy_to",
        "try_flatten_to",
        "resize_to",
        "random_uniform",
        "datetime->U",
        "datetime->S",
        "add",
        "multiply",
    ],
)
def test_a_value_the_dtype_cannot_hold_is_out_of_range(call):
    with pytest.raises(es.OutOfRangeError):
        call()


def test_out_of_range_leaves_the_destination_untouched():
    dst = np.arange(3, dtype=np.int64)
    with pytest.raises(es.OutOfRangeError):
        es.copy_to([1, 2, 2**70], dst)
    assert dst.tolist() == [0, 1, 2]
    text = np.array(["abc"], "U3")
    with pytest.raises(es.OutOfRangeError):
        es.copy_to(np.array(["2020-01-01"], "M8[D]"), text)
    assert text.tolist() == ["abc"]


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: es.tensor([1.0]).reshape(None), "reshape shape"),
        (lambda: es.reshape(np.ones(2), None), "reshape shape"),
        (lambda: es.tensor(np.eye(2)).diagonal(None), "diagonal axes"),
        (lambda: es.tensor([[1.0]]).squeeze(1.0), "squeeze axis"),
        (lambda: es.squeeze(np.ones((1, 1)), 1.0), "squeeze axis"),
        (lambda: es.reverse(np.ones(2), 1.0), "reverse axis"),
        (lambda: es.reverse(np.ones(2), None), "reverse axis"),
        (lambda: es.transpose(np.ones(2), 1.5), "transpose axis"),
        (lambda: es.expand_dims(np.ones(2), None), "expand_dims axis"),
        (lambda: es.Layout.create((2,)).overlaps(5), "Layout.overlaps"),
        (lambda: es.Layout.create((2,)).same_view("x"), "Layout.same_view"),
        (lambda: es.parse_equation("ij", (2.5, "x")), "shape 0"),
        (lambda: es.parse_equation("i", 3), "shape 0"),
        (lambda: es.arange(np.ones(2)), "arange: stop"),
        (lambda: es.arange(dt.date(2020, 1, 1), 5), "arange"),
    ],
    ids=[
        "Tensor.reshape",
        "reshape",
        "diagonal",
        "Tensor.squeeze",
        "squeeze",
        "reverse",
        "reverse None",
        "transpose",
        "expand_dims",
        "overlaps",
        "same_view",
        "parse_equation",
        "parse_equation int",
        "arange array",
        "arange mixed",
    ],
)
def test_a_wrong_type_is_a_type_error_naming_the_argument(call, words):
    with pytest.raises(TypeError, match=words):
        call()


def test_parse_equation_validates_its_shapes():
    with pytest.raises(es.EinsumError, match="negative length"):
        es.parse_equation("ij", (-2, 3))
    with pytest.raises(TypeError):
        es.parse_equation("ij", (True, 3))
    assert es.parse_equation("ij", (np.int64(2), 3)).sizes == (2, 3)


def test_asarray_copy_false_with_a_dtype_change_is_refused():
    t = es.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(t, dtype=np.float32, copy=False)
    assert np.asarray(t, copy=False) is t.numpy()  # no change needed: the view itself
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    copied = np.array(t, copy=True)
    assert copied.tolist() == [1.0, 2.0] and not np.shares_memory(copied, t.numpy())


def test_huge_sublist_labels_are_einsum_errors():
    for call in (
        lambda: es.einsum(np.ones(2), [10**5000]),
        lambda: es.einsum(np.ones(2), [0], [10**5000]),
        lambda: es.einsum(np.ones(2), [2**63]),
    ):
        with pytest.raises(es.EinsumError, match="labels are ints") as info:
            call()
        assert len(str(info.value)) < 300
    assert es.einsum(np.ones(2), [2**63 - 1]).tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "equation", ["ab" * 50000 + "->zz", "a" * 100000 + ">", "a" * 100000 + ",b"]
)
def test_messages_about_long_equations_are_short(equation):
    with pytest.raises(es.EinsumError) as info:
        es.parse_equation(equation, (2,) * 100000, (2, 3))
    message = str(info.value)
    assert len(message) < 400 and "…" in message, message[:500]


def test_shorten_equation_keeps_the_position_in_view():
    from einstride.engine.spec.equation import shorten_equation

    text = "a" * 1000 + "!" + "b" * 1000
    short = shorten_equation(text, 1000)
    assert "!" in short and len(short) <= 82 and short.startswith("…") and short.endswith("…")
    assert shorten_equation(text).startswith("aaa") and shorten_equation("ij") == "ij"
    assert shorten_equation(text, 10**9).endswith("bbb")


RAGGED = [[1, 2], [3]]


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda: es.tensor(RAGGED), "tensor: "),
        (lambda: es.as_tensor(RAGGED), "a list taken as an array: "),
        (lambda: es.add(RAGGED, 1), "add: operand 0: "),
        (lambda: es.tensor(np.ones((2, 2))) * RAGGED, "multiply: operand 1: "),
        (lambda: es.tensor(np.ones((2, 2))) @ RAGGED, "matmul: operand 1: "),
        (lambda: RAGGED @ es.tensor(np.ones((2, 2))), "matmul: operand 0: "),
        (lambda: es.reshape(RAGGED, 3), "reshape: a list taken as an array: "),
        (lambda: es.where([True, False], RAGGED, 0), "where: a list taken as an array: "),
        (lambda: es.full((2, 2), RAGGED), "full fill_value: "),
        (lambda: es.full((2, 2), RAGGED, dtype=float), "full fill_value: "),
        (lambda: es.pad(np.ones(2), [(1, 1)], value=RAGGED), "pad value: "),
        (lambda: es.one_hot([0], 2, on_value=RAGGED), "one_hot on_value: "),
        (lambda: es.copy_to(RAGGED, np.zeros((2, 2))), "a list taken as an array: "),
    ],
)
def test_ragged_nested_sequences_are_a_layout_error_naming_the_input(
    call: Callable[[], Any], names: str
) -> None:
    # (NumPy's bare ValueError named no function nor argument)
    with pytest.raises(es.LayoutError) as caught:
        call()
    assert str(caught.value).startswith(names + "nested sequences of unequal lengths"), str(
        caught.value
    )


def _holding_itself() -> list[Any]:
    cycle: list[Any] = [1, 1]
    cycle.append(cycle)
    return cycle


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda: es.pad(np.ones(3), _holding_itself()), "pad: a list taken as an array: "),
        (lambda: es.pad(np.ones(3), [[_holding_itself()]]), "pad: a list taken as an array: "),
        (lambda: es.tensor([_holding_itself()]), "tensor: "),
        (lambda: es.add([_holding_itself()], 1), "add: operand 0: "),
        (lambda: _holding_itself() in es.tensor([[1.0, 2.0]]), "Tensor.__contains__: "),
    ],
)
def test_a_list_holding_itself_is_a_layout_error_not_a_recursion(
    call: Callable[[], Any], names: str
) -> None:
    # (pad recursed without end; NumPy's "maximum number of dimension" named nothing)
    with pytest.raises(es.LayoutError) as caught:
        call()
    message = str(caught.value)
    assert message.startswith(names) and ("too deep" in message or "unequal" in message), message


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.einsum("i,i->", RAGGED, [1, 2]),
        lambda: es.contract_expression("i,i->", (2,), (2,))(RAGGED, [1, 2]),
        lambda: es.numpy_compat.tensordot(RAGGED, [1, 2], 1),
    ],
)
def test_an_operand_einsum_cannot_convert_is_an_einsum_type_error(call: Callable[[], Any]) -> None:
    # (a bare TypeError before: outside the error family; NumPy's ValueError is caught too)
    with pytest.raises(es.EinsumTypeError, match=r"\(list\) cannot be converted to an array"):
        call()
    with pytest.raises(ValueError):
        call()


def _torch_sparse() -> Any:
    torch = pytest.importorskip("torch")
    return torch.eye(3).to_sparse()


def _dask_ones() -> Any:
    return pytest.importorskip("dask.array").ones((3, 3), chunks=2)


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.einsum(3, np.ones(3)),  # subscripts of no kind
        lambda: es.einsum("i->", np.array(["a", "b"])),  # a dtype that is no number
        lambda: es.einsum("i->", np.ones(3), dtype="no such dtype"),
        lambda: es.explain("i,i->", (3,), np.ones(3)),  # shapes and operands mixed
        lambda: es.einsum_vjp(3, [np.ones(3)], np.ones(())),
        lambda: es.einsum("ij->", _torch_sparse()),
        lambda: es.einsum("ij->i", pytest.importorskip("torch").ones(3, 3), out=np.empty(3)),
        lambda: es.einsum("ij->", _dask_ones(), memory_limit=1.5),
        lambda: es.einsum("ij->i", _dask_ones(), out=np.empty(3)),
    ],
)
def test_einsums_type_errors_are_einsum_errors(call: Callable[[], Any]) -> None:
    # (bare TypeErrors before: ``except EinsumError`` missed a wrong kind of argument)
    with pytest.raises(es.EinsumTypeError):
        call()


A23 = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.transpose(A23, {1, 0}),
        lambda: es.tensor(A23).transpose({1, 0}),
        lambda: es.reshape(A23, {3, 2}),
        lambda: es.zeros({3, 1, 2}),
        lambda: es.zeros({3: 1}),
        lambda: es.tensor(A23).sum(axis={0}),
        lambda: es.squeeze(np.ones((1, 1)), {0}),
        lambda: es.eye(2, batch_shape={3, 1}),
    ],
)
def test_an_unordered_set_is_no_shape_nor_axes(call: Callable[[], Any]) -> None:
    # (as NumPy: a set's order is no axis order; transpose(a, {1, 0}) was the identity,
    # zeros({3, 1, 2}) of shape (1, 2, 3))
    with pytest.raises(TypeError, match="must be an int or a sequence of ints"):
        call()


class _Index:
    """An object NumPy takes as an integer (``__index__``, no length)."""

    def __index__(self) -> int:
        return 2


def test_an_object_with_index_is_one_integer_as_numpy_takes_it() -> None:
    # (refused: only Python and NumPy integers and 0-d arrays counted; NumPy takes it)
    assert es.zeros(_Index()).shape == np.zeros(_Index()).shape == (2,)
    assert es.expand_dims(A23, _Index()).shape == np.expand_dims(A23, _Index()).shape
    t = es.tensor(np.ones((2, 3, 4)))
    np.testing.assert_array_equal(t.sum(axis=_Index()).numpy(), np.ones((2, 3)) * 4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.zeros((1,) * 65),
        lambda: es.ones((1,) * 65),
        lambda: es.resize(np.ones(2), (1,) * 65),
        lambda: es.eye(2, batch_shape=(1,) * 63),
        lambda: es.zeros((0, 2**63)),
        lambda: es.zeros((0, 2**62, 4)),
        lambda: es.random_uniform((0, 2**62, 4), seed=0),
        lambda: es.diag(es.Tensor(np.zeros(0), shape=(0, 10**12))),
    ],
)
def test_an_array_numpy_cannot_make_is_a_layout_error_naming_the_op(
    call: Callable[[], Any],
) -> None:
    # (NumPy's bare ValueErrors, "maximum supported dimension", "array is too big", named
    # nothing; an empty array's other lengths still count for NumPy)
    with pytest.raises(es.LayoutError, match=r"^(zeros|ones|resize|eye|random_uniform|diag) of"):
        call()
    assert es.zeros((0, 2**60 - 1)).shape == np.zeros((0, 2**60 - 1)).shape


_ENDLESS = range(10**12)


@pytest.mark.parametrize(
    "call",
    [
        lambda: _ENDLESS in es.tensor(A23),
        lambda: es.tensor(A23) @ _ENDLESS,
        lambda: es.einsum_vjp("ij,jk->ik", _ENDLESS, np.ones((2, 2))),
        lambda: es.numpy_compat.tensordot(A23, A23.T, axes=_ENDLESS),
        lambda: es.numpy_compat.tensordot(A23, A23.T, axes=(_ENDLESS, [0])),
        lambda: es.numpy_compat.tensordot_equation(_ENDLESS, (3,)),
        lambda: es.Layout.create((2, 3)).offset_of(_ENDLESS),
        lambda: pytest.importorskip("einstride.dask").plan_dask("ij,jk->ik", _ENDLESS),
    ],
)
def test_a_listing_past_the_memory_limit_is_refused_before_it_is_made(
    call: Callable[[], Any],
) -> None:
    # (each listed or converted 10**12 items: NumPy's or Python's bare MemoryError)
    with pytest.raises(es.MemoryLimitError):
        call()


def test_a_layouts_index_is_integers() -> None:
    # (offset_of((0.5, 0.5)) was 2.0)
    with pytest.raises(TypeError, match="index must be an integer"):
        es.Layout.create((2, 3)).offset_of((0.5, 0.5))
    assert es.Layout.create((2, 3)).offset_of(np.array([1, 2])) == 5


@pytest.mark.parametrize(
    ("call", "start"),
    [
        (lambda: es.zeros(3, dtype=object()), "zeros: "),
        (lambda: es.ones((2, -1)), "ones: "),
        (lambda: es.random_uniform(2, seed="a"), "random_uniform: "),
        (lambda: es.he_normal((2, 2), seed=-1), "he_normal: "),
        (lambda: es.band_part(A23, 1.5, 0), "band_part: "),
        (lambda: es.categorical(np.zeros((1, 2)), 2.5), "categorical: "),
        (lambda: es.broadcast_to(A23, (3, 3)), "broadcast_to: "),
        (lambda: es.transpose(A23, (0, 0)), "transpose: "),
        (lambda: es.reshape(A23, (4, -1)), "reshape: "),
        (lambda: es.squeeze(A23, 0), "squeeze: "),
        (lambda: es.tensor(A23).sum(axis=5), "Tensor.sum axis "),
        (lambda: es.memory.set_memory_limit(-1), "set_memory_limit: "),
        (lambda: es.memory.set_memory_limit(int), "set_memory_limit: "),
    ],
)
def test_an_ops_error_names_the_op(call: Callable[[], Any], start: str) -> None:
    # a review: the shared checks' messages named no function ("shape (2, -1) has a
    # negative length"); each op's errors now start with its name (errors.named_errors)
    with pytest.raises((ValueError, TypeError)) as caught:
        call()
    assert str(caught.value).startswith(start), caught.value


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: es.check_no_overlap(np.ones(2), None, "op"), "op: sources must be a sequence"),
        (lambda: es.check_no_overlap(None, [np.ones(2)], "op"), "op: out must be an einstride"),
        (lambda: es.set_num_threads(int), "set_num_threads: expected an int or None"),
    ],
)
def test_odd_arguments_of_the_checks_are_named_type_errors(
    call: Callable[[], Any], words: str
) -> None:
    # (Python's "not iterable" and "cannot be interpreted as an integer" named nothing; a
    # None destination passed silently)
    with pytest.raises(TypeError, match=words):
        call()


def test_contract_paths_shapes_and_parse_equations_subscripts_are_named_type_errors() -> None:
    # (NumPy's "truth value ... ambiguous" and Python's "unhashable type: 'list'")
    with pytest.raises(es.EinsumTypeError, match="contract_path: shapes must be a bool"):
        es.contract_path("ij,jk", (2, 2), (2, 2), shapes=np.array([1, 0]))
    with pytest.raises(es.EinsumTypeError, match="parse_equation: subscripts must be a str"):
        es.parse_equation(["ij"], (2, 3))  # type: ignore[arg-type]


def test_named_errors_leave_a_users_own_error_as_it_is() -> None:
    # (a review: a user's ValueError("bad", 7) from a generator given to stack was rebuilt
    # as ValueError("stack: ('bad', 7)"), its notes lost)
    def parts() -> Any:
        yield np.ones(2)
        error = ValueError("bad", 7)
        error.add_note("NOTE")
        raise error

    with pytest.raises(ValueError) as caught:
        es.stack(parts())
    assert caught.value.args == ("bad", 7) and caught.value.__notes__ == ["NOTE"]


@pytest.mark.parametrize("out", [[0.0], np.zeros((2, 4), int)])
def test_an_out_einsum_cannot_write_is_an_einsum_type_error(out: Any) -> None:
    # (a review: the NumPy path raised a plain TypeError where torch's raised EinsumTypeError)
    with pytest.raises(es.EinsumTypeError, match="einsum out="):
        es.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)), out=out)


def test_a_zero_d_tensor_is_one_integer_as_a_zero_d_array_is() -> None:
    # (a review: refused as a shape or an axis, where NumPy takes both)
    assert es.zeros(es.tensor(np.array(3))).shape == np.zeros(np.array(3)).shape == (3,)
    got = es.tensor(np.ones((2, 3))).sum(axis=es.tensor(np.array(1)))
    np.testing.assert_array_equal(got.numpy(), np.ones((2, 3)).sum(axis=1))
    torch = pytest.importorskip("torch")
    assert es.zeros(torch.tensor(3)).shape == np.zeros(torch.tensor(3)).shape
    with pytest.raises(TypeError, match="must be an integer"):
        es.zeros(es.tensor(np.array(3.0)))
