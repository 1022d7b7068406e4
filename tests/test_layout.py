"""``Layout``: validation, and every view operation checked as a function over its whole index
domain against brute-force enumeration (see layout_oracles)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride import Layout, LayoutError
from layout_oracles import (
    MAX_RANK,
    has_repeats,
    is_dense,
    layouts,
    nonempty_shapes,
    offsets,
    overlap,
    same_view,
    storage_for,
)

EXAMPLES = settings(max_examples=150, deadline=None)

# -- validation -------------------------------------------------------------------------------

maybe_bad_ints = st.integers(-2, 5)


def valid_by_spec(shape, strides, offset, storage_size) -> bool:
    """The spec's validation rules, stated directly."""
    if any(n < 0 for n in shape) or offset < 0:
        return False
    if strides is not None and (len(strides) != len(shape) or any(s < 0 for s in strides)):
        return False
    if 0 in shape:
        return offset <= storage_size
    strides = strides if strides is not None else _row_major(shape)
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) < storage_size


def _row_major(shape):
    return tuple(int(np.prod(shape[d + 1 :])) for d in range(len(shape)))


@EXAMPLES
@given(
    shape=st.lists(maybe_bad_ints, max_size=MAX_RANK),
    strides=st.none() | st.lists(maybe_bad_ints, max_size=MAX_RANK),
    offset=maybe_bad_ints,
    storage_size=st.integers(0, 30),
)
def test_create_accepts_exactly_the_valid_layouts(shape, strides, offset, storage_size):
    expected = valid_by_spec(shape, strides, offset, storage_size)
    try:
        layout = Layout.create(shape, strides, offset, storage_size=storage_size)
    except LayoutError:
        assert not expected
        return
    assert expected
    assert layout.shape == tuple(shape)
    if 0 in shape:
        assert layout.strides == (0,) * len(shape)
    elif strides is not None:
        assert layout.strides == tuple(strides)
    else:
        assert layout.strides == _row_major(tuple(shape))


def test_zero_length_zeroes_every_stride_and_needs_no_storage():
    layout = Layout.create((3, 0, 2**40), (5, 7, 2**50), offset=4, storage_size=4)
    assert layout.strides == (0, 0, 0) and layout.size == 0 and layout.extent == (4, 4)
    with pytest.raises(LayoutError, match="past the end"):
        Layout.create((0,), offset=5, storage_size=4)


def test_element_count_overflow_is_a_layout_error_unless_a_length_is_zero():
    with pytest.raises(LayoutError, match="int64"):
        Layout.create((2**32, 2**32))
    assert Layout.create((2**32, 2**32, 0)).size == 0


def test_unaddressable_reach_is_a_layout_error():
    with pytest.raises(LayoutError, match="addressable"):
        Layout.create((2, 2), (2**61, 1))


@pytest.mark.parametrize(
    ("shape", "strides", "offset", "size", "words"),
    [
        ((-1, 2), None, 0, 10, ["negative length", "(-1, 2)"]),
        ((2, 2), (-1, 1), 0, 10, ["negative stride", "reverse"]),
        ((2, 2), (2, 1), -1, 10, ["offset -1"]),
        ((2, 2), (3, 1), 1, 5, ["(2, 2)", "(3, 1)", "offset 1", "length 5"]),
        ((2,), (1, 1), 0, 5, ["rank"]),
    ],
)
def test_messages_name_the_offending_values(shape, strides, offset, size, words):
    with pytest.raises(LayoutError) as info:
        Layout.create(shape, strides, offset, storage_size=size)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("bad", [1.5, "2", None, True])
def test_non_integer_lengths_are_type_errors(bad):
    with pytest.raises(TypeError):
        Layout.create((2, bad))


def test_layout_is_frozen_and_hashable():
    a, b = Layout.create((2, 3)), Layout.create((2, 3))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.offset = 1  # type: ignore[misc]


# -- predicates against brute force -------------------------------------------------------------


@EXAMPLES
@given(layouts())
def test_size_span_extent_density_and_repeats_match_enumeration(layout):
    flat = offsets(layout).ravel()
    assert layout.size == flat.size
    if flat.size:
        assert layout.extent == (flat.min(), flat.max() + 1)
        assert layout.span == flat.max() - flat.min()
    assert layout.is_dense == is_dense(layout)
    assert layout.has_repeated_locations == has_repeats(layout)


@settings(max_examples=150, deadline=None)
@given(
    st.tuples(st.integers(1, 5), st.integers(0, 9)).flatmap(
        lambda t: st.lists(st.tuples(st.integers(1, 5), st.integers(0, 9)), max_size=3).map(
            lambda rest: [t, *rest]
        )
    )
)
def test_has_repeated_locations_is_exact_for_wider_strides(dims):
    layout = Layout.create(tuple(n for n, _ in dims), tuple(s for _, s in dims))
    assert layout.has_repeated_locations == has_repeats(layout)


@EXAMPLES
@given(layouts(), layouts())
def test_overlaps_and_same_view_match_enumeration(a, b):
    assert a.overlaps(b) == overlap(a, b) == b.overlaps(a)
    assert a.same_view(b) == same_view(a, b) == b.same_view(a)


def test_even_and_odd_elements_do_not_overlap():
    evens, odds = Layout.create((4,), (2,)), Layout.create((4,), (2,), 1)
    assert not evens.overlaps(odds)
    assert evens.overlaps(Layout.create((2,), (3,), 3))  # element 6


def test_length_one_strides_are_free():
    a, b = Layout.create((1, 3), (0, 1)), Layout.create((1, 3), (99, 1))
    assert a.same_view(b) and a.is_dense and b.is_dense
    assert a.same_view(Layout.create((3,))) and a.squeeze() == Layout.create((3,))


def test_transposed_contiguous_view_is_not_dense_and_empty_views_are():
    assert not Layout.create((2, 3)).permute((1, 0)).is_dense
    assert Layout.create((0, 5), offset=3).is_dense


# -- every view operation as a function over the whole index domain ------------------------------


def same_map(new: Layout, expected: np.ndarray) -> None:
    """``new`` maps every index to the element ``expected`` (the old map, rearranged) holds."""
    got = offsets(new)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)


def contained(new: Layout, old: Layout) -> None:
    """A derived view is valid wherever its parent is."""
    Layout.create(new.shape, new.strides, new.offset, storage_size=len(storage_for(old)))


@EXAMPLES
@given(st.data())
def test_permute(data):
    old = data.draw(layouts())
    perm = data.draw(st.permutations(range(old.ndim)))
    same_map(old.permute(perm), offsets(old).transpose(perm))


@EXAMPLES
@given(st.data())
def test_broadcast_to(data):
    old = data.draw(layouts())
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(data.draw(st.integers(0, 3)) if n == 1 else n for n in old.shape)
    new = old.broadcast_to(target)
    same_map(new, np.broadcast_to(offsets(old), target))


@pytest.mark.parametrize(("shape", "target"), [((2,), (3,)), ((2, 1), (2,)), ((3,), (0,))])
def test_broadcast_to_incompatible_is_a_layout_error(shape, target):
    with pytest.raises(LayoutError, match="broadcast"):
        Layout.create(shape).broadcast_to(target)


def diagonal_oracle(old: Layout, axes: tuple[int, ...]) -> np.ndarray:
    picked = sorted(axes)
    kept = [a for a in range(old.ndim) if a not in picked or a == picked[0]]
    table = offsets(old)
    out = np.zeros(tuple(old.shape[a] for a in kept), dtype=np.int64)
    for index in itertools.product(*(range(n) for n in out.shape)):
        full = [0] * old.ndim
        for position, axis in enumerate(kept):
            for target in picked if axis == picked[0] else [axis]:
                full[target] = index[position]
        out[index] = table[tuple(full)]
    return out


@EXAMPLES
@given(st.data())
def test_diagonal(data):
    n = data.draw(st.integers(0, 3))
    shape = tuple(data.draw(st.lists(st.sampled_from((n, 2)), min_size=2, max_size=4)))
    old = data.draw(layouts(st.just(shape)))
    axes = data.draw(st.lists(st.sampled_from(range(old.ndim)), min_size=1, unique=True))
    assume(len({old.shape[a] for a in axes}) == 1)
    same_map(old.diagonal(axes), diagonal_oracle(old, tuple(axes)))


def test_diagonal_rejects_unequal_lengths_and_no_axes():
    with pytest.raises(LayoutError, match="different lengths"):
        Layout.create((2, 3)).diagonal((0, 1))
    with pytest.raises(LayoutError, match="at least one"):
        Layout.create((2, 2)).diagonal(())


slice_bounds = st.none() | st.integers(-6, 6)


@EXAMPLES
@given(st.data())
def test_slice(data):
    old = data.draw(layouts(nonempty_shapes.filter(len)))
    axis = data.draw(st.integers(-old.ndim, old.ndim - 1))
    start, stop = data.draw(slice_bounds), data.draw(slice_bounds)
    step = data.draw(st.none() | st.integers(1, 3))
    new = old.slice(axis, start, stop, step)
    key = [slice(None)] * old.ndim
    key[axis] = slice(start, stop, step)
    same_map(new, offsets(old)[tuple(key)])
    contained(new, old)


index_items = st.one_of(
    st.integers(-4, 3),
    st.builds(slice, slice_bounds, slice_bounds, st.none() | st.integers(1, 3)),
    st.none(),
    st.just(Ellipsis),
)


@EXAMPLES
@given(layouts(nonempty_shapes), st.lists(index_items, max_size=4))
def test_index_matches_numpy_basic_indexing(old, items):
    key = tuple(items)
    table = offsets(old)
    try:
        expected = table[key]
    except IndexError:
        with pytest.raises(LayoutError):
            old.index(key)
        return
    same_map(old.index(key), np.asarray(expected))


def test_negative_step_points_to_reverse():
    with pytest.raises(LayoutError, match="reverse"):
        Layout.create((4,)).index(slice(None, None, -1))
    with pytest.raises(LayoutError, match="zero"):
        Layout.create((4,)).slice(0, None, None, 0)


@EXAMPLES
@given(st.data())
def test_expand_and_squeeze(data):
    old = data.draw(layouts())
    axis = data.draw(st.integers(-old.ndim - 1, old.ndim))
    same_map(old.expand(axis), np.expand_dims(offsets(old), axis))
    ones = tuple(a for a, n in enumerate(old.shape) if n == 1)
    axes = data.draw(
        st.none() | st.lists(st.sampled_from(ones), unique=True) if ones else st.none()
    )
    expected = np.squeeze(offsets(old), None if axes is None else tuple(axes))
    same_map(old.squeeze(axes), expected)


def test_squeeze_of_all_ones_is_rank_zero_and_non_ones_are_errors():
    assert Layout.create((1, 1)).squeeze().shape == ()
    with pytest.raises(LayoutError, match="length 2"):
        Layout.create((1, 2)).squeeze(1)


@EXAMPLES
@given(st.data())
def test_split(data):
    old = data.draw(layouts(nonempty_shapes.filter(len)))
    axis = data.draw(st.integers(0, old.ndim - 1))
    cuts = sorted(data.draw(st.lists(st.integers(0, old.shape[axis]), max_size=3)))
    bounds = [0, *cuts, old.shape[axis]]
    sizes = [b - a for a, b in itertools.pairwise(bounds)]
    parts = old.split(axis, sizes)
    for part, expected in zip(parts, np.split(offsets(old), cuts, axis=axis), strict=True):
        same_map(part, expected)


def test_split_sizes_must_sum_exactly():
    with pytest.raises(LayoutError, match="sum to 5"):
        Layout.create((5,)).split(0, (2, 2))


def factorizations(size: int) -> st.SearchStrategy[tuple[int, ...]]:
    factors = [d for d in range(1, size + 1) if size % d == 0] or [0]

    @st.composite
    def build(draw):
        shape, left = [], size
        for _ in range(draw(st.integers(0, 3))):
            d = draw(st.sampled_from([f for f in factors if left % f == 0] if left else [0, 1]))
            shape.append(d)
            left = left // d if d else 0
        if left != 1 or not shape:
            shape.append(left)
        return tuple(draw(st.permutations(shape)))

    return build()


@EXAMPLES
@given(st.data())
def test_reshape_is_a_view_exactly_when_numpy_can_view(data):
    old = data.draw(layouts())
    target = data.draw(factorizations(old.size))
    assume(int(np.prod(target)) == old.size)
    new = old.reshape(target)
    expected = offsets(old).reshape(target)
    if new is not None:
        same_map(new, expected)
    if old.size > 0:
        storage = storage_for(old)
        strided = np.lib.stride_tricks.as_strided(
            storage[old.offset :], old.shape, tuple(s * storage.itemsize for s in old.strides)
        )
        assert (new is not None) == np.shares_memory(strided.reshape(target), strided)


def test_reshape_infers_one_minus_one_and_checks_counts():
    assert Layout.create((2, 6)).reshape((3, -1)).shape == (3, 4)
    with pytest.raises(LayoutError, match="cannot reshape"):
        Layout.create((2, 6)).reshape((5,))
    with pytest.raises(LayoutError, match="at most one -1"):
        Layout.create((2, 6)).reshape((-1, -1))


@EXAMPLES
@given(layouts())
def test_coalesce_keeps_the_row_major_enumeration_with_fewest_axes(old):
    new = old.coalesce()
    assert np.array_equal(offsets(new).ravel(), offsets(old).ravel())
    if old.size:
        assert 1 not in new.shape
        for (_, outer), (length, inner) in itertools.pairwise(zip(new.shape, new.strides)):
            assert outer != inner * length, "two mergeable axes were left apart"


def test_overlaps_ignores_the_free_stride_of_a_length_1_axis() -> None:
    """A length-1 axis may have any stride, 2**63 too; overlaps passed it to NumPy's probe
    and raised OverflowError (a review), reachable from a slice step past the axis."""
    one = Layout.create((1,), (2**63,))
    assert one.overlaps(Layout.create((1,))) and one.same_view(Layout.create((1,)))
    assert not one.overlaps(Layout.create((1,), (1,), 1))
    t = es.Tensor(np.arange(10.0))[3 : 4 : 10**30]
    assert t.layout.overlaps(es.Tensor(np.arange(10.0))[3:5].layout)
    assert not t.layout.overlaps(es.Tensor(np.arange(10.0))[4:6].layout)


def test_overlap_questions_past_numpy_s_limits_answer() -> None:
    # a review: the solver's probe doubled the elements and added an axis, so a broadcast
    # of 2**62, 64 axes of length 1, or a huge overlapping view raised NumPy's ValueError
    assert Layout.create((2**62,), (0,)).overlaps(Layout.create((1,)))
    ones = Layout.create((1,) * 64)
    assert ones.overlaps(ones) and not ones.has_repeated_locations
    huge = Layout.create((3, 2**20, 2**20, 2**21), (1, 1, 1, 1))
    assert huge.has_repeated_locations  # (beyond the solver: counted as repeated)
    t = es.Tensor(np.zeros(2**22, np.uint8), huge.shape, huge.strides)
    assert t.numpy().flags.writeable is False
    # exact where the solver reaches: a large broadcast against its own storage
    wide = Layout.create((2**40, 3), (0, 2), 1)
    assert wide.overlaps(Layout.create((1,), (1,), 5)) and not wide.overlaps(
        Layout.create((1,), (1,), 6)
    )


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (((3,), (-1,), 2), LayoutError, "negative stride"),
        (((2, 3), (1,)), LayoutError, "do not match the rank"),
        (((-2,), (1,)), LayoutError, "negative length"),
        (((2,), (1,), -1), LayoutError, "offset -1 is negative"),
        (((2**40, 2**40), (0, 0)), LayoutError, "more elements than int64"),
        (((2.0,), (1,)), TypeError, "Layout shape must be an integer"),
        (((2,), (True,)), TypeError, "Layout strides must be an integer"),
        (((2,), (1,), 0.5), TypeError, "Layout offset must be an integer"),
    ],
)
def test_the_plain_constructor_checks_its_arguments(args, error, match) -> None:
    # a review: Layout((3,), (-1,), 2).overlaps(...) answered False though it reaches
    # elements 2, 1, 0; Layout((2, 3), (1,)).permute((1, 0)) raised IndexError
    with pytest.raises(error, match=match):
        Layout(*args)


def test_the_plain_constructor_makes_numpy_ints_and_lists_plain() -> None:
    layout = Layout([np.int64(2), 3], (np.int32(3), 1), np.int16(1))
    assert layout == Layout((2, 3), (3, 1), 1) and hash(layout) == hash(Layout((2, 3), (3, 1), 1))
    assert all(type(v) is int for v in (*layout.shape, *layout.strides, layout.offset))
    # the spec: an empty layout's strides are all 0, from every constructor (a review)
    assert Layout((2, 0), (5, 7)) == Layout.create((2, 0), (5, 7))
    assert Layout((2, 0), (5, 7)).strides == (0, 0) == Layout([2, 0], [np.int64(5), 7]).strides


@EXAMPLES
@given(st.data())
def test_equality_and_hash_ignore_the_strides_of_length_one_axes(data) -> None:
    # the spec: those strides are free, nothing may depend on them (a review found
    # tensor([[1, 2]]).layout != as_tensor(np.array([[1, 2]])).layout)
    layout = data.draw(layouts())
    strides = tuple(
        data.draw(st.integers(0, 50)) if n == 1 else s for n, s in zip(layout.shape, layout.strides)
    )
    other = Layout(layout.shape, strides, layout.offset)
    assert other == layout and hash(other) == hash(layout)
    assert other.same_view(layout) or layout.size == 0
    moved = [k for k, n in enumerate(layout.shape) if n > 1]
    if moved and layout.size:  # (an empty layout's strides are all 0 whatever is given)
        changed = list(layout.strides)
        changed[moved[0]] += 1
        assert Layout(layout.shape, tuple(changed), layout.offset) != layout


@pytest.mark.parametrize("size", [float("nan"), 6.5, "x", np.float64(6.0), True])
def test_a_storage_size_of_no_integer_is_a_type_error(size: Any) -> None:
    # (NaN and 6.5 skipped the bounds check, a string gave Python's bare comparison error)
    with pytest.raises(TypeError, match="storage_size must be an integer"):
        Layout.create((2, 3), None, 0, size)


def test_a_negative_storage_size_is_a_layout_error() -> None:
    with pytest.raises(LayoutError, match="storage_size must be >= 0"):
        Layout.create((0,), None, 0, -1)
    assert Layout.create((2, 3), None, 0, np.int64(6)) == Layout.create((2, 3))
