"""``Footprint``: the byte-level facts behind the overlap rules, for any NumPy view (including
reversed and misaligned ones no Tensor can express), against brute-force byte enumeration."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from einstride.footprint import Footprint


def byte_sets(arr: np.ndarray) -> list[set[int]]:
    """The bytes each logical element occupies."""
    base = arr.__array_interface__["data"][0]
    cells = []
    for index in itertools.product(*(range(n) for n in arr.shape)):
        start = base + sum(i * s for i, s in zip(index, arr.strides))
        cells.append(set(range(start, start + arr.itemsize)))
    return cells


views = st.tuples(
    st.lists(st.tuples(st.integers(1, 4), st.integers(-3, 3)), max_size=3),
    st.integers(0, 6),
    st.sampled_from([np.int8, np.int16, np.int64]),
)


def build(spec):
    """An ndarray over a byte buffer with even byte strides (maybe negative, maybe off the
    element grid)."""
    dims, start, dtype = spec
    buffer = np.zeros(200, dtype=np.uint8)
    shape = tuple(n for n, _ in dims)
    strides = tuple(k * 2 for _, k in dims)
    return np.ndarray(shape, dtype, buffer, 100 + start, strides)


@settings(max_examples=200, deadline=None)
@given(views)
def test_repeated_locations_are_exact_at_byte_level(spec):
    arr = build(spec)
    cells = byte_sets(arr)
    shared = any(a & b for a, b in itertools.combinations(cells, 2))
    assert Footprint.of(arr).has_repeated_locations == shared


@settings(max_examples=200, deadline=None)
@given(views)
def test_density_is_row_major_contiguity_in_bytes(spec):
    arr = build(spec)
    fp = Footprint.of(arr)
    flat = [min(c) for c in byte_sets(arr)]
    expected = not flat or flat == [flat[0] + k * arr.itemsize for k in range(len(flat))]
    assert fp.is_dense == expected


def test_same_view_needs_the_same_address_mapping_and_item_size():
    a = np.arange(12)
    assert Footprint.of(a.reshape(3, 4)[:, :1].T).same_view(Footprint.of(a[None, ::4]))
    assert not Footprint.of(a[::-1]).same_view(Footprint.of(a))
    assert not Footprint.of(a.view(np.int32)[::2]).same_view(Footprint.of(a))
    assert Footprint.of(a[:0]).same_view(Footprint.of(a[5:5]))
