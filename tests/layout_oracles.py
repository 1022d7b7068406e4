"""Brute-force oracles and hypothesis strategies shared by the core's tests.

The oracles enumerate every logical index and compute ``offset + sum(i * s)`` directly from a
layout's fields, so they depend on none of the algebra under test.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import strategies as st

from einstride import Layout, Tensor

MAX_RANK = 3
MAX_LEN = 4
MAX_STRIDE = 6
MAX_OFFSET = 6


def offsets(layout: Layout) -> np.ndarray:
    """The storage element of every logical index, as an int array of ``layout.shape``."""
    out = np.zeros(layout.shape, dtype=np.int64)
    for index in itertools.product(*(range(n) for n in layout.shape)):
        out[index] = layout.offset + sum(i * s for i, s in zip(index, layout.strides))
    return out


def is_dense(layout: Layout) -> bool:
    flat = offsets(layout).ravel()
    return flat.size == 0 or bool(np.array_equal(flat, flat[0] + np.arange(flat.size)))


def has_repeats(layout: Layout) -> bool:
    flat = offsets(layout).ravel()
    return len(set(flat.tolist())) < flat.size


def overlap(a: Layout, b: Layout) -> bool:
    return bool(set(offsets(a).ravel().tolist()) & set(offsets(b).ravel().tolist()))


def squeezed(arr: np.ndarray) -> np.ndarray:
    return arr.reshape(tuple(n for n in arr.shape if n != 1))


def same_view(a: Layout, b: Layout) -> bool:
    """Identical index -> element maps once length-1 axes are dropped."""
    x, y = squeezed(offsets(a)), squeezed(offsets(b))
    return x.shape == y.shape and bool(np.array_equal(x, y))


def needed(*layouts: Layout) -> int:
    """The smallest storage length holding every layout."""
    ends = [lay.offset + (lay.span + 1 if lay.size else 0) for lay in layouts]
    return max([0, *ends])


def storage_for(*layouts: Layout, slack: int = 0, dtype: Any = np.int64) -> np.ndarray:
    """Distinct values (100, 101, ...) so that every moved element is visible."""
    return np.arange(100, 100 + needed(*layouts) + slack).astype(dtype)


def view(storage: np.ndarray, layout: Layout) -> Tensor:
    return Tensor(storage, layout.shape, layout.strides, layout.offset)


def values(storage: np.ndarray, layout: Layout) -> np.ndarray:
    """The logical elements of ``layout`` read by brute force."""
    return storage[offsets(layout)] if layout.size else np.zeros(layout.shape, storage.dtype)


# -- strategies -------------------------------------------------------------------------------

shapes = st.lists(st.integers(0, MAX_LEN), min_size=0, max_size=MAX_RANK).map(tuple)
nonempty_shapes = st.lists(st.integers(1, MAX_LEN), min_size=0, max_size=MAX_RANK).map(tuple)


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


@st.composite
def layouts_of(draw: st.DrawFn, shape: tuple[int, ...]) -> Layout:
    """A layout of ``shape``: row-major (often, to reach the dense rules) or random strides."""
    random = st.tuples(*(st.integers(0, MAX_STRIDE) for _ in shape))
    strides = draw(st.one_of(st.just(row_major(shape)), random))
    offset = draw(st.integers(0, MAX_OFFSET))
    return Layout.create(shape, strides, offset)


@st.composite
def layouts(draw: st.DrawFn, shape_strategy: st.SearchStrategy[Any] = shapes) -> Layout:
    return draw(layouts_of(draw(shape_strategy)))


@st.composite
def broadcastable_to(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape NumPy assignment accepts for a destination of ``shape`` (possibly with extra
    leading length-1 axes)."""
    keep = draw(st.integers(0, len(shape)))
    tail = [draw(st.sampled_from((n, 1))) for n in shape[len(shape) - keep :]]
    lead = [1] * draw(st.integers(0, 1))
    return tuple(lead + tail)


@st.composite
def source_shapes(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Mostly shapes compatible with ``shape``, sometimes anything."""
    return draw(
        st.one_of(st.just(shape), broadcastable_to(shape), shapes),
    )
