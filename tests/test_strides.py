"""``einstride.strides``: the one byte-stride view (``ByteView``) and the one row-major rule,
shared by ``Layout``, ``Footprint`` and the einsum planner's ``Term``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from einstride import layout
from einstride.engine.backends.numpy import fold
from einstride.engine.backends.numpy.fold import Term
from einstride.footprint import Footprint
from einstride.layout import Layout
from einstride.strides import ByteView, is_row_major, row_major_strides

shapes = st.lists(st.integers(0, 4), max_size=4).map(tuple)


def test_one_row_major_rule_everywhere() -> None:
    assert layout.row_major_strides is row_major_strides
    assert fold.contiguous_strides is row_major_strides
    # a zero length counts as one: the same answer wherever it is asked
    assert row_major_strides((2, 0, 4), 8) == (32, 32, 8)
    assert Term.row_major((0, 1, 2), (2, 0, 4), np.dtype(float)).strides == (32, 32, 8)
    assert ByteView.row_major((2, 0, 4), 8).strides == (32, 32, 8)
    assert Layout.create((2, 0, 4)).strides == (0, 0, 0)  # Layout's canonical empty view


@settings(max_examples=100, deadline=None)
@given(shapes, st.sampled_from([1, 2, 8]))
def test_row_major_strides_are_numpys_for_arrays_with_elements(shape, itemsize) -> None:
    strides = row_major_strides(shape, itemsize)
    assert ByteView.row_major(shape, itemsize).is_dense
    if 0 not in shape:
        arr = np.empty(shape, np.dtype(f"V{itemsize}"))
        assert strides == arr.strides
        assert Layout.create(shape).strides == row_major_strides(shape)


@st.composite
def views(draw: st.DrawFn) -> np.ndarray:
    """Transposed, reversed, strided and broadcast views of a small array."""
    shape = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple))
    arr = np.zeros(shape, draw(st.sampled_from([np.int8, np.float64])))
    for _ in range(draw(st.integers(0, 3))):
        step = draw(st.sampled_from(["T", "rev", "skip", "new"]))
        if step == "T":
            arr = arr.T
        elif step == "rev":
            arr = arr[::-1]
        elif step == "skip":
            arr = arr[::2]
        else:
            arr = np.broadcast_to(arr[None], (2, *arr.shape))
    return arr


@settings(max_examples=200, deadline=None)
@given(views())
def test_is_dense_is_numpys_c_contiguity(arr: np.ndarray) -> None:
    view = ByteView(shape=arr.shape, strides=arr.strides, itemsize=arr.itemsize)
    assert view.is_dense == arr.flags.c_contiguous
    assert Footprint.of(arr).is_dense == view.is_dense
    assert view.size == arr.size and view.nbytes == arr.nbytes


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30)), max_size=4))
def test_layout_density_is_the_same_rule_in_elements(dims) -> None:
    shape, strides = tuple(n for n, _ in dims), tuple(s for _, s in dims)
    lay = Layout.create(shape, strides)
    assert lay.is_dense == is_row_major(lay.shape, lay.strides)
    byte_view = ByteView(shape=lay.shape, strides=tuple(8 * s for s in lay.strides), itemsize=8)
    assert lay.is_dense == byte_view.is_dense


def test_same_view_ignores_length_one_axes_and_compares_addresses() -> None:
    a = ByteView(shape=(1, 3), strides=(99, 8), itemsize=8, address=64)
    assert a.same_view(ByteView(shape=(3,), strides=(8,), itemsize=8, address=64))
    assert not a.same_view(ByteView(shape=(3,), strides=(8,), itemsize=8, address=72))
    assert not a.same_view(ByteView(shape=(3,), strides=(4,), itemsize=4, address=64))
    empty = ByteView(shape=(0, 2), strides=(0, 0), itemsize=8)
    assert empty.same_view(ByteView(shape=(1, 0, 2), strides=(5, 5, 5), itemsize=4))


def test_planner_terms_are_byte_views_with_labels() -> None:
    arr = np.zeros((3, 4))[:, ::-1]
    term = Term.of((5, 7), arr.shape, arr.strides, arr.dtype)
    assert term.view == ByteView(shape=(3, 4), strides=(32, -8), itemsize=8)
    assert (term.stride(7), term.size_of(5), term.size, term.nbytes) == (-8, 3, 12, 96)
    assert not term.view.is_dense
