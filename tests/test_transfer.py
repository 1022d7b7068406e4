"""Data movement and the overlap rules: random views of ONE storage against brute-force oracles
that apply the spec's table and NumPy's assignment-from-a-snapshot semantics."""

from __future__ import annotations

import contextlib
import decimal
import tracemalloc
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride import Layout, LayoutError, Tensor
from einstride.transfer import ordered_chunks
from layout_oracles import (
    MAX_LEN,
    has_repeats,
    is_dense,
    layouts,
    layouts_of,
    offsets,
    overlap,
    same_view,
    source_shapes,
    storage_for,
    values,
    view,
)

EXAMPLES = settings(max_examples=200, deadline=None)


def outcome(action, storage):
    """Run ``action``; on a LayoutError the storage must be byte-for-byte unchanged."""
    before = storage.copy()
    try:
        result = action()
    except LayoutError:
        assert storage.tobytes() == before.tobytes()
        return "error"
    return result


def fit_shape(src: tuple[int, ...], dst: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy assignment's shape rule: drop extra leading ones, then broadcast."""
    while len(src) > len(dst) and src[0] == 1:
        src = src[1:]
    if len(src) > len(dst):
        return None
    try:
        return src if np.broadcast_shapes(src, dst) == dst else None
    except ValueError:
        return None


# -- the spec's worked example ----------------------------------------------------------------


def test_spec_snapshot_example():
    storage = np.array([1, 2, 3, 4, 5, 6])
    src = es.Tensor(storage, shape=(2, 2), strides=(3, 1))
    dst = es.Tensor(storage, shape=(2, 2))
    with pytest.raises(LayoutError):
        es.copy_to(src, dst)
    assert storage.tolist() == [1, 2, 3, 4, 5, 6]
    snap = np.empty(4, dtype=storage.dtype)
    es.flatten_to(src, snap)
    assert snap.tolist() == [1, 2, 4, 5]
    es.copy_to(es.Tensor(snap, shape=(2, 2)), dst)
    assert storage.tolist() == [1, 2, 4, 5, 5, 6]


# -- copy_to ----------------------------------------------------------------------------------


@st.composite
def copy_cases(draw):
    dst = draw(layouts())
    shifted = Layout.create(dst.shape, dst.strides, dst.offset + draw(st.integers(0, 3)))
    src = draw(st.sampled_from([dst, shifted]) | layouts_of(draw(source_shapes(dst.shape))))
    if src.shape == dst.shape and draw(st.booleans()):
        src, dst = dst, src  # shifted up as well as down
    return src, dst


def expected_copy(storage, src, dst):
    """The spec's verdict for copy_to, and the storage it leaves (None for 'False/raise')."""
    kept = fit_shape(src.shape, dst.shape)
    if kept is None or dst.size < src.size:
        return "shape", None
    if has_repeats(dst):
        return "error", None
    source = np.broadcast_to(offsets(src).reshape(kept), dst.shape)
    target = offsets(dst)
    if overlap(src, dst):
        dense_pair = is_dense(src) and is_dense(dst) and src.size == dst.size
        exact = np.array_equal(source, target)
        if not (dense_pair or exact):
            return "error", None
    result = storage.copy()
    result[target] = storage[source]  # NumPy assignment from a snapshot
    return "ok", result


@EXAMPLES
@given(copy_cases(), st.booleans())
def test_copy_to_between_views_of_one_storage(case, use_try):
    src, dst = case
    storage = storage_for(src, dst, slack=2)
    verdict, result = expected_copy(storage, src, dst)
    s, d = view(storage, src), view(storage, dst)
    got = outcome(
        (lambda: es.try_copy_to(s, d)) if use_try else (lambda: es.copy_to(s, d)), storage
    )
    if verdict == "shape":
        assert got is False if use_try else got == "error"
        assert storage.tolist() == storage_for(src, dst, slack=2).tolist()
    elif verdict == "error":
        assert got == "error"
    else:
        assert got is (True if use_try else None)
        assert storage.tolist() == result.tolist()


@EXAMPLES
@given(copy_cases())
def test_copy_to_numpy_views_behave_like_tensor_views(case):
    src, dst = case
    storage = storage_for(src, dst)
    verdict, result = expected_copy(storage, src, dst)
    s, d = view(storage, src).numpy(), view(storage, dst).numpy()  # plain ndarrays
    got = outcome(lambda: es.copy_to(s, d), storage)
    if verdict == "ok":
        assert got is None and storage.tolist() == result.tolist()
    else:
        assert got == "error"


def test_copy_to_dense_shift_is_a_memmove_both_ways():
    up, down = np.arange(10), np.arange(10)
    es.copy_to(Tensor(up, (2, 3)), Tensor(up, (2, 3), offset=3))
    es.copy_to(down[3:9].reshape(2, 3), Tensor(down, (2, 3)))
    assert up.tolist() == [0, 1, 2, 0, 1, 2, 3, 4, 5, 9]
    assert down.tolist() == [3, 4, 5, 6, 7, 8, 6, 7, 8, 9]


def test_copy_to_overlapping_with_a_cast_of_the_same_bytes():
    storage = np.arange(8, dtype=np.int64)
    as_float = storage.view(np.float64)
    es.copy_to(storage[:6], as_float[2:])  # dense and dense: memmove, converting
    assert as_float[2:].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    same = np.arange(4, dtype=np.int64)
    es.copy_to(same, same.view(np.float64))  # the same view, converted in place
    assert same.view(np.float64).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_copy_to_accepts_scalars_lists_and_extra_leading_ones():
    dst = np.zeros((2, 3))
    es.copy_to(7, dst)
    assert dst.tolist() == [[7.0] * 3] * 2
    es.copy_to([[[1, 2, 3]]], dst)
    assert dst.tolist() == [[1.0, 2.0, 3.0]] * 2
    es.copy_to(np.array([1.9, -2.7, 3.5]), ints := np.zeros(3, dtype=np.int8))
    assert ints.tolist() == [1, -2, 3]  # assignment's unsafe cast


@pytest.mark.parametrize(
    ("make_dst", "message"),
    [
        (lambda s: Tensor(s, (2, 3), (0, 1)), "repeated locations"),
        (lambda s: np.broadcast_to(s[:3], (2, 3)), "repeated locations"),  # read-only too
        (lambda s: np.lib.stride_tricks.as_strided(s, (2, 3), writeable=False), "read-only"),
    ],
)
def test_copy_to_rejects_bad_destinations_even_in_try(make_dst, message):
    storage = np.arange(6)
    for op in (es.copy_to, es.try_copy_to):
        with pytest.raises(LayoutError, match=message):
            op(np.ones((2, 3), dtype=int), make_dst(storage))
    assert storage.tolist() == list(range(6))


def test_try_copy_to_still_raises_on_unsupported_overlap():
    storage = np.arange(6)
    with pytest.raises(LayoutError, match="overlaps"):
        es.try_copy_to(Tensor(storage, (3,), (2,)), Tensor(storage, (3,), offset=1))
    assert storage.tolist() == list(range(6))


def test_copy_to_shape_errors_name_both_shapes():
    with pytest.raises(LayoutError, match=r"\(3,\).*\(2,\)"):
        es.copy_to(np.ones(3), np.zeros(2))
    with pytest.raises(LayoutError, match="fewer"):
        es.copy_to(np.ones(1), np.zeros(0))
    with pytest.raises(TypeError, match="destination"):
        es.copy_to(np.ones(2), [0, 0])


def test_a_numpy_array_and_a_tensor_on_one_buffer_count_as_overlapping():
    storage = np.arange(6)
    with pytest.raises(LayoutError):
        es.copy_to(storage[::2], Tensor(storage, (3,), offset=1))
    assert es.tensors_overlap(storage[3:5], Tensor(storage, (2,), (3,), 1))
    assert not es.tensors_overlap(storage[::2], Tensor(storage, (3,), (2,), 1))


# -- flatten_to -------------------------------------------------------------------------------


@st.composite
def flatten_cases(draw):
    src = draw(layouts())
    length = draw(st.integers(max(0, src.size - 1), src.size + 2))
    dst = draw(
        layouts_of((length,))
        | st.builds(
            Layout.create, st.just((length,)), st.tuples(st.integers(0, 3)), st.integers(0, 8)
        )
    )
    return src, dst


@EXAMPLES
@given(flatten_cases(), st.booleans(), st.booleans())
def test_flatten_to_between_views_of_one_storage(case, use_try, as_numpy):
    src, dst = case
    storage = storage_for(src, dst, slack=1)
    original = storage.copy()
    s, d = view(storage, src), view(storage, dst)
    if as_numpy:
        s, d = s.numpy(), d.numpy()
    op = es.try_flatten_to if use_try else es.flatten_to
    got = outcome(lambda: op(s, d), storage)
    if dst.size < src.size:
        assert got is False if use_try else got == "error"
        assert storage.tolist() == original.tolist()
        return
    head = Layout.create((src.size,), dst.strides, dst.offset)
    read_only = as_numpy and has_repeats(dst)  # numpy() of such a view, as broadcast_to's
    if read_only or has_repeats(head) or (overlap(src, head) and not is_dense(src)):
        assert got == "error"
        return
    assert got is (True if use_try else None)
    expected = original.copy()
    expected[offsets(head)] = values(original, src).ravel()
    assert storage.tolist() == expected.tolist()


def test_flatten_to_a_strided_destination_overlapping_a_dense_source():
    # NumPy's own overlapping copy gets this one wrong; the chunked copy must not.
    storage = np.arange(40)
    es.flatten_to(Tensor(storage, (12,), offset=3), Tensor(storage, (12,), (3,), 2))
    expected = np.arange(40)
    expected[2:38:3] = np.arange(3, 15)
    assert storage.tolist() == expected.tolist()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.integers(-60, 60), st.integers(2, 6))
def test_ordered_chunks_never_overwrite_what_is_still_to_be_read(count, start, step):
    memory = {k: ("src", k) for k in range(count)}
    chunks = ordered_chunks(count, start, step)
    covered = sorted(k for a, b in chunks for k in range(a, b))
    assert covered == list(range(count))
    assert len(chunks) <= 4 * (count.bit_length() + 2)
    for low, high in chunks:
        reads = set(range(low, high))
        writes = {start + k * step for k in range(low, high)}
        assert high - low == 1 or not reads & writes  # one element may land on itself
        read = [memory.get(k) for k in range(low, high)]
        for k, value in zip(range(low, high), read):
            memory[start + k * step] = value
    for k in range(count):
        assert memory[start + k * step] == ("src", k)


def test_flatten_to_needs_a_one_dimensional_destination():
    with pytest.raises(LayoutError, match="1-D"):
        es.flatten_to(np.ones(2), np.zeros((1, 2)))
    with pytest.raises(LayoutError, match="fewer"):
        es.flatten_to(np.ones((2, 2)), np.zeros(3))


# -- resize, resize_to ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "shape", "expected"),
    [
        ([1, 2], 5, [1, 2, 0, 0, 0]),
        ([[1, 2], [3, 4]], (3,), [1, 2, 3]),
        ([True], (2, 2), [[True, False], [False, False]]),
        (["ab"], (2,), ["ab", ""]),
        ([1.5, 2.5], (), 1.5),
        ([1, 2], (0, 3), []),
    ],
)
def test_resize_pads_with_the_dtypes_zero(data, shape, expected):
    array_result = es.resize(np.array(data), shape)
    tensor_result = es.resize(es.tensor(data), shape)
    assert isinstance(array_result, np.ndarray) and isinstance(tensor_result, Tensor)
    assert array_result.tolist() == expected
    assert tensor_result.is_dense and tensor_result.numpy().tolist() == expected


def test_resize_reads_strided_views_in_row_major_order_and_validates_the_shape():
    t = Tensor(np.arange(6), (2, 2), (1, 3))  # [[0, 3], [1, 4]]
    assert es.resize(t, 6).numpy().tolist() == [0, 3, 1, 4, 0, 0]
    with pytest.raises(LayoutError, match="negative"):
        es.resize(t, (2, -1))


@st.composite
def resize_cases(draw):
    return draw(layouts()), draw(layouts())


@EXAMPLES
@given(resize_cases())
def test_resize_to_between_views_of_one_storage(case):
    src, dst = case
    storage = storage_for(src, dst, slack=1)
    original = storage.copy()
    got = outcome(lambda: es.resize_to(view(storage, src), view(storage, dst)), storage)
    if has_repeats(dst) or (overlap(src, dst) and not (is_dense(src) and is_dense(dst))):
        assert got == "error"
        return
    assert got is None
    padded = np.concatenate([values(original, src).ravel(), np.zeros(dst.size, storage.dtype)])
    expected = original.copy()
    expected[offsets(dst).ravel()] = padded[: dst.size]  # gaps stay as they were
    assert storage.tolist() == expected.tolist()


# -- reverse ------------------------------------------------------------------------------------


@EXAMPLES
@given(layouts(), st.data())
def test_reverse_allocates_a_dense_result(layout, data):
    storage = storage_for(layout)
    axes = (
        data.draw(st.lists(st.sampled_from(range(layout.ndim)), unique=True)) if layout.ndim else []
    )
    axes = [a - layout.ndim if data.draw(st.booleans()) else a for a in axes]  # negatives too
    axis = axes[0] if len(axes) == 1 and data.draw(st.booleans()) else tuple(axes)
    expected = np.flip(values(storage, layout), axis)
    result = es.reverse(view(storage, layout), axis)
    assert isinstance(result, Tensor) and result.is_dense and result.storage is not storage
    assert result.numpy().tolist() == expected.tolist()
    plain = es.reverse(values(storage, layout), axis)
    assert isinstance(plain, np.ndarray) and plain.tolist() == expected.tolist()


def test_reverse_rejects_repeated_axes_and_bad_axes():
    with pytest.raises(LayoutError, match="repeated"):
        es.reverse(np.zeros((2, 2)), (0, -2))
    with pytest.raises(LayoutError, match="out of range"):
        es.reverse(np.zeros((2, 2)), 2)


@st.composite
def reverse_cases(draw):
    src = draw(layouts())
    out = draw(st.one_of(st.just(src), layouts_of(src.shape)))
    axes = tuple(
        draw(st.lists(st.integers(0, max(src.ndim - 1, 0)), unique=True, max_size=src.ndim))
    )
    return src, out, axes


@EXAMPLES
@given(reverse_cases())
def test_reverse_into_out_between_views_of_one_storage(case):
    src, out, axes = case
    storage = storage_for(src, out, slack=1)
    original = storage.copy()
    s, o = view(storage, src), view(storage, out)
    got = outcome(lambda: es.reverse(s, axes, out=o), storage)
    flipped = np.flip(values(original, src), axes)
    if overlap(src, out):
        if not same_view(src, out):
            assert got == "error"
            return
        if np.array_equal(np.flip(offsets(src), axes), offsets(src)):  # changes nothing
            assert got is o and storage.tolist() == original.tolist()
            return
        if not is_dense(out):
            assert got == "error"
            return
    elif has_repeats(out):
        assert got == "error"
        return
    assert got is o
    expected = original.copy()
    expected[offsets(out)] = flipped
    assert storage.tolist() == expected.tolist()


def test_reverse_in_place_of_a_broadcast_that_changes_nothing():
    storage = np.arange(3)
    t = Tensor(storage, (4, 3), (0, 1))
    assert es.reverse(t, 0, out=t) is t and storage.tolist() == [0, 1, 2]
    with pytest.raises(LayoutError, match="dense"):
        es.reverse(t, 1, out=t)  # the same view, but it moves values and is not dense
    with pytest.raises(LayoutError, match="shape"):
        es.reverse(t, 0, out=np.zeros((3, 4)))


def test_reverse_into_a_reversed_numpy_view_of_itself_is_rejected():
    storage = np.arange(6)
    with pytest.raises(LayoutError, match="same view"):
        es.reverse(storage, 0, out=storage[::-1])
    assert storage.tolist() == list(range(6))


# -- the shared helpers -------------------------------------------------------------------------


def test_check_destination_and_check_no_overlap():
    storage = np.arange(6)
    es.check_destination(Tensor(storage, (2, 2), (3, 1)), "op")
    with pytest.raises(LayoutError, match=r"op: the destination .* repeated"):
        es.check_destination(Tensor(storage, (3, 2), (1, 1)), "op")
    frozen = np.arange(3)
    frozen.flags.writeable = False
    with pytest.raises(LayoutError, match="read-only"):
        es.check_destination(frozen, "op")
    es.check_no_overlap(storage[::2], [storage[1::2], np.ones(3)], "op")
    with pytest.raises(LayoutError, match="input 1"):
        es.check_no_overlap(storage[::2], [storage[1::2], storage[4:]], "op")


def test_every_destination_kind_is_written_in_place():
    storage = np.zeros(MAX_LEN)
    es.copy_to(np.ones(2), storage[1:3])
    es.resize_to([5], Tensor(storage, (1,), offset=3))
    assert storage.tolist() == [0.0, 1.0, 1.0, 5.0]


def test_in_place_reverse_that_changes_nothing_accepts_read_only_views() -> None:
    b = np.broadcast_to(np.arange(3.0), (4, 3))  # read-only, a zero stride on axis 0
    assert es.reverse(b, 0, out=b) is b
    with pytest.raises(es.LayoutError, match="dense view"):  # (read-only too: not the point)
        es.reverse(b, 1, out=b)
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    with pytest.raises(es.LayoutError, match="read-only"):
        es.reverse(frozen, 0, out=frozen)


def test_a_conversion_that_fails_half_way_leaves_the_destination_untouched() -> None:
    # a review: a string source into numbers went straight to np.copyto, which wrote
    # element by element until the bad value ([1, 2, 0])
    source = np.array(["1", "2", "x"])
    calls = (
        lambda d: es.copy_to(source, d),
        lambda d: es.try_copy_to(source, d),
        lambda d: es.flatten_to(source, d),
        lambda d: es.reverse(source, 0, out=d),
        lambda d: es.copy_to(source, Tensor(d)),
    )
    for call in calls:
        dst = np.zeros(3, np.int64)
        with pytest.raises(ValueError, match="invalid literal"):
            call(dst)
        assert dst.tolist() == [0, 0, 0]
    buffer = np.array([49, 50, 120, 7], np.int32)  # '1', '2', 'x' as U1 code points
    text = buffer[:3].view("U1")
    with pytest.raises(ValueError, match="invalid literal"):
        es.reverse(text, 0, out=buffer[:3])  # the same bytes read as another type
    assert buffer.tolist() == [49, 50, 120, 7]
    ok = np.zeros(3, np.int64)
    es.copy_to(np.array(["1", "2", "3"]), ok)
    assert ok.tolist() == [1, 2, 3]
    raw = np.array([b"7", b"7", b"7"])
    with pytest.raises(UnicodeEncodeError):  # (a ValueError)
        es.copy_to(np.array(["5", "6", "\u0663"]), raw)
    assert raw.tolist() == [b"7", b"7", b"7"]


OVERFLOWING = np.array([1.0, 1e300])  # its second value overflows float32


@pytest.mark.parametrize("mode", ["raise", "call", "log", "warn-as-error"])
def test_a_cast_an_errstate_stops_half_way_leaves_the_destination_untouched(mode: str) -> None:
    # a review: NumPy raises a floating-point error of a cast after writing what it cast,
    # so copy_to & co. left [1, inf] in a float32 destination under over="raise"
    strided = Tensor(np.zeros(4, np.float32), (2,), (2,))
    calls = {
        "copy_to": lambda d: es.copy_to(OVERFLOWING, d),
        "try_copy_to": lambda d: es.try_copy_to(OVERFLOWING, d),
        "flatten_to": lambda d: es.flatten_to(OVERFLOWING, d),
        "try_flatten_to": lambda d: es.try_flatten_to(OVERFLOWING, d),
        "resize_to": lambda d: es.resize_to(OVERFLOWING, d),
        "reverse": lambda d: es.reverse(OVERFLOWING, 0, out=d),
    }
    for name, call in calls.items():
        for dst in (np.zeros(2, np.float32), strided):
            storage = dst.storage if isinstance(dst, Tensor) else dst
            before = storage.copy()
            with _stopping(mode), pytest.raises((FloatingPointError, RuntimeWarning, _Called)):
                call(dst)
            assert storage.tolist() == before.tolist(), name


class _Called(Exception):
    pass


def _raise_called(kind: str, flag: int) -> None:
    raise _Called(kind)


class _Log:
    def write(self, text: str) -> None:
        raise _Called(text)


@contextlib.contextmanager
def _stopping(mode: str) -> Iterator[None]:
    """A floating-point error that stops NumPy: np.errstate's raise, call and log, or a
    warning turned into an error."""
    if mode == "warn-as-error":
        with np.errstate(all="warn"), warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            yield
    elif mode == "call":
        with np.errstate(all="call", call=_raise_called):
            yield
    elif mode == "log":
        with np.errstate(all="log", call=_Log()):
            yield
    else:
        with np.errstate(all="raise"):
            yield


def test_overlapping_copies_cast_before_they_write() -> None:
    # a review: two dtype views of one buffer, the dense overlapping branch (a memmove)
    # cast as it copied and stopped at "x" with the last element already written
    text = np.array(["1", "2", "x", "4", "5"], dtype="U2")  # 8-byte items, as int64's
    ints = text.view(np.int64)
    before = ints.copy()
    with pytest.raises(ValueError, match="invalid literal"):
        es.copy_to(text[0:4], ints[1:5])
    assert ints.tolist() == before.tolist()
    stamps = np.arange(5).astype("M8[s]") + np.timedelta64(10**9, "s")
    saved = stamps.copy()
    for call in (es.copy_to, es.resize_to):
        with pytest.raises(es.OutOfRangeError, match="too short"):
            call(stamps[0:4], stamps.view("S8")[1:5])
        assert stamps.tolist() == saved.tolist(), call
    # flatten_to into a strided destination over its dense source (copied in chunks)
    floats = np.array([1.0, 2.0, np.nan, 4.0, 5.0, 6.0])
    saved = floats.copy()
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        es.flatten_to(floats[0:3], floats.view(np.int64)[1::2])  # NaN into an int64
    np.testing.assert_array_equal(floats, saved)


def test_check_destination_refuses_what_is_no_array() -> None:
    # a review: a list passed (read as a new array, writeable), as the docs say it may not
    for dst in ([1.0, 2.0], (1.0,), 3.0):
        with pytest.raises(TypeError, match=r"demo: the destination must be an einstride\.Tensor"):
            es.check_destination(dst, "demo")
    es.check_destination(np.zeros(2), "demo")
    es.check_destination(Tensor(np.zeros(2)), "demo")


def test_a_string_that_is_no_number_is_out_of_range_naming_the_function() -> None:
    # a review: NumPy's bare "invalid literal for int()" named no function
    source = np.array(["1", "x"])
    calls = {
        "copy_to": lambda d: es.copy_to(source, d),
        "try_copy_to": lambda d: es.try_copy_to(source, d),
        "flatten_to": lambda d: es.flatten_to(source, d),
        "reverse": lambda d: es.reverse(source, 0, out=d),
    }
    for name, call in calls.items():
        dst = np.zeros(2, np.int64)
        with pytest.raises(es.OutOfRangeError, match=rf"^{name}: invalid literal"):
            call(dst)
        assert dst.tolist() == [0, 0]


def test_under_raise_a_safe_or_broadcast_cast_makes_no_large_temporary() -> None:
    # a review of the temporaries above: a safe cast (int32 into float64) made one under
    # np.errstate(raise) and failed a memory limit the copy itself met; a scalar broadcast
    # into a large destination was converted whole
    from einstride.memory import set_memory_limit

    target = np.empty(1000)
    before = set_memory_limit(4000)
    try:
        with np.errstate(all="raise"):
            es.copy_to(np.arange(1000, dtype=np.int32), target)
    finally:
        set_memory_limit(before)
    assert target[-1] == 999.0
    big = np.empty(2_000_000, np.float32)
    tracemalloc.start()
    try:
        with np.errstate(all="raise"):
            es.copy_to(np.broadcast_to(np.float64(1.5), big.shape), big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000 and big[-1] == 1.5


@pytest.mark.parametrize("value", [decimal.Decimal(2), 2**100, 3])
@pytest.mark.parametrize("write", [es.flatten_to, es.try_flatten_to, es.copy_to])
def test_a_zero_d_object_source_is_written_as_numpy_casts_it(value: Any, write: Any) -> None:
    # (the compact copy of a 0-d object array indexed it with (): its element, no array;
    # "'int' object has no attribute 'shape'", a review)
    dst = np.zeros(1)
    write(value, dst)
    assert dst[0] == float(value)
