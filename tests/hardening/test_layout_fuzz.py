"""Layout fuzzing: adversarial storages, shapes, strides and offsets (values near 2**63,
negatives, non-integers, NumPy integer types, bools) give either ``LayoutError``/``TypeError``
or a Tensor whose every element lies inside its storage -- checked on the materialised
ndarray's byte bounds, and element by element against a brute-force oracle."""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np
import pytest
from fuzzing import memory_capped, scaled
from hypothesis import given
from hypothesis import strategies as st

import einstride as es
from einstride import LayoutError, Tensor

byte_bounds = np.lib.array_utils.byte_bounds if hasattr(np.lib, "array_utils") else np.byte_bounds


class Index:
    """Not an int, but has ``__index__``: accepted like one."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Index({self.value})"


EDGES = [0, 1, 2, 3, 7, 2**31 - 1, 2**32, 2**59 - 1, 2**59, 2**62, 2**63 - 1, 2**63, 2**64, 2**100]
numbers = st.one_of(
    st.integers(0, 12),
    st.integers(-3, -1),
    st.sampled_from(EDGES),
    st.sampled_from(EDGES).map(operator.neg),
    st.integers(-(2**70), 2**70),
)


@st.composite
def adversarial(draw: st.DrawFn) -> Any:
    """An int in some disguise, or something that is not an int at all."""
    n = draw(numbers)
    kinds: list[Any] = [int, Index]
    for t in (np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64):
        info = np.iinfo(t)
        if info.min <= n <= info.max:
            kinds.append(t)
    kind = draw(st.sampled_from(kinds))
    value = kind(n)
    return draw(
        st.one_of(
            st.just(value),
            st.just(value),
            st.sampled_from(
                [
                    True,
                    False,
                    np.True_,
                    1.0,
                    np.float64(2),
                    2.5,
                    "3",
                    None,
                    1j,
                    float("nan"),
                    [1],
                    (),
                    object(),
                ]
            ),
        )
    )


def seqs(rank: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    as_list = rank.flatmap(lambda r: st.lists(adversarial(), min_size=r, max_size=r))
    return st.one_of(
        as_list.map(tuple),
        as_list,
        as_list.map(lambda v: np.array(v, dtype=object)),
        adversarial(),  # a bare scalar
    )


DTYPES = [np.int8, np.float64, np.complex128, object, "datetime64[s]", "S3", ">i4", "V5", np.bool_]


@st.composite
def storages(draw: st.DrawFn) -> Any:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    n = draw(st.integers(0, 24))
    flat = np.zeros(n, dtype)
    if dtype.kind in "iufcb":
        flat[...] = np.arange(n) % 5
    return draw(
        st.one_of(
            st.just(flat),
            st.just(flat),
            st.just(flat.reshape(1, -1) if n else flat.reshape(0, 0)),
            st.just(np.zeros(2 * n, dtype)[::2]),
            st.just(flat.tolist()),
            st.just(np.array(3.0)),
        )
    )


shapes_or_none = st.one_of(st.none(), seqs(st.integers(0, 4)), seqs(st.sampled_from([63, 65])))


@st.composite
def constructor_args(draw: st.DrawFn) -> tuple[Any, Any, Any, Any]:
    storage = draw(storages())
    shape = draw(shapes_or_none)
    rank = len(shape) if isinstance(shape, (tuple, list)) else draw(st.integers(0, 3))
    strides = draw(st.one_of(st.none(), seqs(st.sampled_from([rank, rank, rank + 1]))))
    offset = draw(st.one_of(st.just(0), adversarial()))
    return storage, shape, strides, offset


def assert_inside(t: Tensor) -> None:
    """Every element of ``t`` lies in its storage, and holds the oracle's value."""
    try:
        arr = t.numpy()
    except LayoutError:  # only an empty shape NumPy cannot describe: constructible, not viewable
        assert t.size == 0, t.layout
        return
    assert arr.shape == t.shape
    storage = t.storage
    if arr.size:
        lo, hi = byte_bounds(arr)
        s_lo, s_hi = byte_bounds(storage)
        assert s_lo <= lo and hi <= s_hi, (t.layout, len(storage))
    if t.size == 0:  # nothing to read (and a length may be huge): product() would expand it
        return
    positions = (
        itertools.product(*(range(n) for n in t.shape))
        if t.size <= 64
        else [tuple(n - 1 for n in t.shape), (0,) * t.ndim]
    )
    for index in positions:
        element = t.offset + sum(i * s for i, s in zip(index, t.strides))
        assert 0 <= element < len(storage)
        got, want = arr[index], storage[element]
        assert got.tobytes() == want.tobytes() if isinstance(got, np.generic) else got is want


@scaled(100)
@given(constructor_args())
def test_constructor_validates_or_refuses(args):
    storage, shape, strides, offset = args
    try:
        t = Tensor(storage, shape, strides, offset)
    except (LayoutError, TypeError):
        return
    assert_inside(t)
    assert len(t.strides) == len(t.shape) and all(s >= 0 for s in t.strides)


@scaled(100)
@given(constructor_args())
def test_layout_create_validates_or_refuses(args):
    _, shape, strides, offset = args
    try:
        layout = es.Layout.create(shape, strides, offset)
    except (LayoutError, TypeError):
        return
    assert all(isinstance(n, int) and n >= 0 for n in layout.shape)
    assert all(isinstance(s, int) and s >= 0 for s in layout.strides)
    assert isinstance(layout.offset, int) and layout.offset >= 0


def valid_tensor() -> st.SearchStrategy[Tensor]:
    @st.composite
    def build(draw: st.DrawFn) -> Tensor:
        shape = tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
        strides = tuple(draw(st.integers(0, 6)) for _ in shape)
        offset = draw(st.integers(0, 5))
        empty = 0 in shape
        need = offset + (0 if empty else sum((n - 1) * s for n, s in zip(shape, strides)) + 1)
        dtype = draw(st.sampled_from([np.int64, object, "S2"]))
        storage = np.array(
            [str(k).encode() if dtype == "S2" else k for k in range(need + 3)], dtype=dtype
        )
        return Tensor(storage, shape, strides, offset)

    return build()


VIEW_OPS = [
    ("index", lambda t, a, b: t[a]),
    ("index2", lambda t, a, b: t[a, b]),
    ("slice", lambda t, a, b: t[a:b]),
    ("slice step", lambda t, a, b: t[::a]),
    ("slice 2", lambda t, a, b: t[:, a:b:a]),
    ("ellipsis", lambda t, a, b: t[..., a]),
    ("newaxis", lambda t, a, b: t[None, ..., a]),
    ("transpose", lambda t, a, b: t.transpose(a, b)),
    ("reshape", lambda t, a, b: t.reshape(a, b)),
    ("reshape -1", lambda t, a, b: t.reshape(a, -1)),
    ("squeeze", lambda t, a, b: t.squeeze(a)),
    ("expand", lambda t, a, b: t.expand_dims(a)),
    ("broadcast", lambda t, a, b: t.broadcast_to((a, b, *t.shape))),
    ("diagonal", lambda t, a, b: t.diagonal((a, b))),
    ("view", lambda t, a, b: t.view(es.Layout((a,), (b,), 0))),
    ("ops.split", lambda t, a, b: es.split(t, a, b)),
    ("ops.split sizes", lambda t, a, b: es.split(t, [a, b])),
    ("ops.unstack", lambda t, a, b: es.unstack(t, a)),
    ("ops.expand_dims", lambda t, a, b: es.expand_dims(t, (a, b))),
    ("ops.squeeze", lambda t, a, b: es.squeeze(t, a)),
    ("ops.transpose", lambda t, a, b: es.transpose(t, (a, b))),
    ("ops.broadcast_to", lambda t, a, b: es.broadcast_to(t, (a, b))),
    ("ops.reshape", lambda t, a, b: es.reshape(t, (a, b))),
    ("ops.diag_part", lambda t, a, b: es.diag_part(t)),
]


@scaled(100)
@given(valid_tensor(), st.sampled_from(VIEW_OPS), adversarial(), adversarial())
def test_views_validate_or_refuse(t, op, a, b):
    name, view = op
    try:
        with memory_capped():
            result = view(t, a, b)
    except (LayoutError, TypeError):
        return
    except ValueError:
        assert name.startswith("ops."), "Tensor methods raise LayoutError, not ValueError"
        return
    for part in result if isinstance(result, list) else [result]:
        assert isinstance(part, Tensor)
        assert "reshape" in name or part.storage is t.storage  # reshape may copy, nothing else
        assert_inside(part)


@pytest.mark.parametrize(
    ("shape", "strides", "offset"),
    [
        ((2**62,), (0,), 0),  # elements fine, bytes beyond int64
        ((0, 2**62), None, 0),  # no elements, but NumPy cannot describe the shape
        ((1,) * 65, None, 0),  # beyond NumPy's rank
        ((2,), (2**63,), 0),
        ((2**63,), (0,), 0),
        ((), (), 2**63),
    ],
)
def test_numpy_limits_are_layout_errors(shape, strides, offset):
    with pytest.raises(LayoutError):
        Tensor(np.zeros(4), shape, strides, offset).numpy()


def test_length_one_axes_may_carry_any_stride():
    storage = np.arange(3.0)
    t = Tensor(storage, (1, 3), (2**63 + 5, 1))
    assert t.numpy().tolist() == [[0.0, 1.0, 2.0]]
    derived = Tensor(storage, (3,))[None, :: 2**70]  # a huge step on a length-1 result
    assert derived.numpy().tolist() == [[0.0]]


def test_derived_views_past_numpy_limits_are_layout_errors():
    t = Tensor(np.zeros(4), (4,))
    with pytest.raises(LayoutError, match="at most 64"):
        t[(None,) * 64 + (Ellipsis,)].numpy()
    with pytest.raises(LayoutError):
        es.broadcast_to(np.zeros(1), (0, 2**62))
    with pytest.raises(LayoutError):
        es.expand_dims(t, tuple(range(70)))
