"""``Tensor``: construction against the spec's element formula, NumPy interop, views, operators."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import einstride as es
from einstride import Layout, LayoutError, Tensor
from layout_oracles import MAX_RANK

EXAMPLES = settings(max_examples=150, deadline=None)


def spec_valid(size, shape, strides, offset):
    if any(n < 0 for n in shape) or any(s < 0 for s in strides) or offset < 0:
        return False
    if 0 in shape:
        return offset <= size
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) < size


@EXAMPLES
@given(
    size=st.integers(0, 24),
    dims=st.lists(st.tuples(st.integers(-1, 4), st.integers(-1, 6)), max_size=MAX_RANK),
    offset=st.integers(-1, 8),
)
def test_every_element_is_storage_at_offset_plus_index_dot_strides(size, dims, offset):
    storage = np.arange(1000, 1000 + size)
    shape, strides = tuple(n for n, _ in dims), tuple(s for _, s in dims)
    try:
        t = Tensor(storage, shape, strides, offset)
    except LayoutError:
        assert not spec_valid(size, shape, strides, offset)
        return
    assert spec_valid(size, shape, strides, offset)
    arr = t.numpy()
    assert arr.shape == shape and t.size == arr.size and t.ndim == len(shape)
    for index in itertools.product(*(range(n) for n in shape)):
        assert arr[index] == storage[offset + sum(i * s for i, s in zip(index, strides))]
    if t.size:
        assert np.shares_memory(arr, storage)


def test_spec_model_example():
    storage = np.arange(1, 7)
    t = es.Tensor(storage, shape=(2, 2), strides=(3, 1))
    assert t.numpy().tolist() == [[1, 2], [4, 5]]
    assert (t.shape, t.strides, t.offset) == ((2, 2), (3, 1), 0)
    assert np.asarray(t) is t.numpy() and np.shares_memory(np.asarray(t), storage)
    assert es.Tensor(storage).shape == (6,)
    scalar = es.Tensor(storage, shape=(), offset=4)
    assert scalar.shape == () and scalar.size == 1 and scalar.numpy() == 5


def test_omitted_strides_are_row_major_and_zero_lengths_need_no_storage():
    assert Tensor(np.arange(24), (2, 3, 4)).strides == (12, 4, 1)
    empty = Tensor(np.arange(0), (5, 0, 7))
    assert empty.strides == (0, 0, 0) and empty.numpy().shape == (5, 0, 7)
    assert Tensor(np.arange(3), (0,), offset=3).size == 0


@pytest.mark.parametrize(
    ("storage", "error"),
    [
        ([1, 2, 3], TypeError),
        (np.zeros((2, 2)), LayoutError),
        (np.arange(10)[::2], LayoutError),
    ],
)
def test_storage_must_be_a_flat_contiguous_ndarray(storage, error):
    with pytest.raises(error):
        Tensor(storage)


def test_strides_without_shape_is_an_error():
    with pytest.raises(LayoutError, match="without a shape"):
        Tensor(np.arange(4), strides=(1,))


def test_read_only_storage_gives_read_only_views():
    storage = np.arange(4)
    storage.flags.writeable = False
    assert not Tensor(storage, (2, 2)).numpy().flags.writeable


@pytest.mark.parametrize("dtype", ["float32", "complex128", "bool", "U3", "datetime64[D]", "O"])
def test_any_dtype_views_without_copies(dtype):
    storage = np.array([1, 0, 1, 1, 0, 1]).astype(dtype)
    t = Tensor(storage, (2, 2), (3, 1), 1)
    expected = [[storage[1], storage[2]], [storage[4], storage[5]]]
    assert t.numpy().tolist() == expected and t.dtype == storage.dtype


def test_tensor_copies_and_as_tensor_wraps():
    data = np.arange(6).reshape(2, 3)
    copied = es.tensor(data)
    assert copied.is_dense and not np.shares_memory(copied.numpy(), data)
    assert es.tensor([[1, 2]], dtype="float32").dtype == np.float32
    wrapped = es.as_tensor(data.T)
    assert wrapped.layout.strides == (1, 3) and np.shares_memory(wrapped.numpy(), data)
    assert es.as_tensor(wrapped) is wrapped


@EXAMPLES
@given(
    hnp.arrays(np.int32, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)),
    st.lists(st.tuples(st.integers(-3, 3).filter(bool), st.booleans()), max_size=3),
)
def test_as_tensor_wraps_representable_views_and_copies_reversed_ones(base, steps):
    key = tuple(slice(None, None, step) for step, _ in steps[: base.ndim])
    arr = base[key] if key else base
    if arr.ndim >= 2 and steps and steps[0][1]:
        arr = arr.T
    t = es.as_tensor(arr)
    assert np.array_equal(t.numpy(), arr) and t.shape == arr.shape
    representable = all(s >= 0 or n <= 1 for n, s in zip(arr.shape, arr.strides))
    if arr.size:
        assert np.shares_memory(t.numpy(), arr) == representable


def test_negative_step_indexing_points_to_reverse():
    with pytest.raises(LayoutError, match=r"einstride\.reverse"):
        Tensor(np.arange(6), (2, 3))[:, ::-1]


def test_views_share_storage():
    storage = np.arange(24)
    t = Tensor(storage, (2, 3, 4))
    views = [
        t.T,
        t.transpose(1, 0, 2),
        t.transpose((2, 0, 1)),
        t[1, :, ::2],
        t[None, ..., 1],
        t.reshape(6, 4),
        t.squeeze(),
        t.expand_dims((0, -1)),
        t[:, :1].squeeze(1),
        t[:, 0].broadcast_to((5, 2, 4)),
        t[0, :, :3].diagonal(),
    ]
    numpy_views = [
        t.numpy().T,
        t.numpy().transpose(1, 0, 2),
        t.numpy().transpose(2, 0, 1),
        t.numpy()[1, :, ::2],
        t.numpy()[None, ..., 1],
        t.numpy().reshape(6, 4),
        t.numpy().squeeze(),
        t.numpy()[None, ..., None],
        t.numpy()[:, :1].squeeze(1),
        np.broadcast_to(t.numpy()[:, 0], (5, 2, 4)),
        np.diagonal(t.numpy()[0, :, :3]),
    ]
    for got, want in zip(views, numpy_views, strict=True):
        assert got.storage is storage
        assert np.array_equal(got.numpy(), want)


def test_reshape_copies_only_when_it_must():
    storage = np.arange(12)
    t = Tensor(storage, (3, 4))
    assert t.reshape(2, 6).storage is storage
    flattened_transpose = t.T.reshape(-1)
    assert flattened_transpose.storage is not storage
    assert flattened_transpose.numpy().tolist() == t.numpy().T.ravel().tolist()


def test_squeezing_ones_gives_rank_zero_like_numpy():
    t = Tensor(np.arange(1), (1, 1))
    assert t.squeeze().shape == () and t.squeeze().numpy() == 0
    with pytest.raises(TypeError):
        len(t.squeeze())


def test_view_revalidates_against_the_storage():
    t = Tensor(np.arange(4), (4,))
    with pytest.raises(LayoutError):
        t.view(es.Layout((3,), (2,), 0))


def test_repr_shows_values_and_layout():
    text = repr(Tensor(np.arange(1, 7), (2, 2), (3, 1)))
    assert "[[1, 2]" in text and "(2,2):(3,1)+0" in text and "int64" in text


def test_predicates_mirror_the_layout():
    t = Tensor(np.arange(3), (2, 3), (0, 1))
    assert t.has_repeated_locations and not t.is_dense
    assert Tensor(np.arange(6), (2, 3)).is_dense


# -- operators -----------------------------------------------------------------------------------


def test_arithmetic_operators_match_numpy_and_return_tensors():
    a = Tensor(np.arange(1.0, 7.0), (2, 3))
    b = np.array([1.0, 2.0, 4.0])
    an = a.numpy()
    cases = [
        (a + b, an + b),
        (b + a, b + an),
        (a - 1, an - 1),
        (1 - a, 1 - an),
        (a * a, an * an),
        (2 * a, 2 * an),
        (a / b, an / b),
        (b / a, b / an),
        (a**2, an**2),
        (2**a, 2**an),
        (-a, -an),
        (abs(-a), an),
        (a < 3, an < 3),
        (a <= 3, an <= 3),
        (a > b, an > b),
        (a >= b, an >= b),
    ]
    for got, want in cases:
        assert isinstance(got, Tensor)
        assert np.array_equal(got.numpy(), want)


def test_equality_keeps_identity_semantics():
    a = Tensor(np.arange(3))
    assert a == a and a != Tensor(np.arange(3)) and len({a, a}) == 1


def test_iteration_membership_and_truth_follow_numpy() -> None:
    t = es.tensor([[1, 2], [3, 4]])
    rows = list(t)
    assert [r.numpy().tolist() for r in rows] == [[1, 2], [3, 4]]
    assert all(np.shares_memory(r.numpy(), t.numpy()) for r in rows)
    assert bool(es.tensor([0.0])) is False and bool(es.tensor(2.0)) is True
    with pytest.raises(ValueError):
        bool(es.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        next(iter(es.tensor(1.0)))
    assert es.split(np.arange(8).reshape(2, 4), es.tensor([1, 3]), axis=1)[1].shape == (2, 3)
    assert 3 in es.tensor([1, 3]) and 2 not in es.tensor([1, 3])
    assert es.tile(np.ones((2, 2)), es.tensor([1, 2])).shape == (2, 4)


def test_empty_tensor_beyond_numpy_shapes_is_a_layout_error() -> None:
    t = es.Tensor(np.arange(6), (2**32, 2**32, 0))
    assert t.size == 0
    with pytest.raises(es.LayoutError, match="cannot be viewed"):
        t.numpy()


@pytest.mark.parametrize("dtype", [np.float64, object, "datetime64[s]"])
@pytest.mark.parametrize("length", [2**62, 2**63])
def test_empty_views_beyond_numpy_are_layout_errors_for_every_dtype(dtype, length) -> None:
    t = es.Tensor(np.zeros(1, dtype=dtype), shape=())
    view = t.broadcast_to((0, length))
    assert view.size == 0
    with pytest.raises(es.LayoutError, match="cannot be viewed"):
        view.numpy()


def test_numpy_view_with_repeated_locations_is_read_only():
    # a review: a broadcast Tensor's ndarray was writeable, so one write landed in many
    # positions (NumPy's broadcast_to is read-only; einstride refuses such destinations)
    storage = np.arange(3.0)
    broadcast = Tensor(storage, (2, 3), (0, 1))
    windows = Tensor(np.arange(4.0), (2, 3), (1, 1))
    for t in (broadcast, windows, es.broadcast_to(Tensor(storage), (4, 3))):
        arr = t.numpy()
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0, 0] = 7.0
    assert Tensor(storage, (3,), (1,)).numpy().flags.writeable  # distinct positions: writeable
    assert es.broadcast_to(np.arange(3.0), (2, 3)).flags.writeable is False  # as NumPy's
    with pytest.raises(LayoutError, match="repeated locations"):
        es.copy_to(np.ones((2, 3)), broadcast)
    assert storage.tolist() == [0.0, 1.0, 2.0]


def test_view_and_permute_name_bad_arguments():
    # a review: view(5) was an AttributeError; permute(0) on rank 2 a TypeError from
    # formatting its own message, and a generator was reported empty
    t = Tensor(np.arange(6.0), (2, 3))
    for bad in (5, None, ((3,), (1,), 0), "(3,):(1,)+0"):
        with pytest.raises(TypeError, match=r"must be an einstride\.Layout"):
            t.view(bad)
    layout = Layout.create((2, 3))
    for perm in (0, np.int64(1), (a for a in [0])):
        with pytest.raises(LayoutError, match=r"permutation \(\d,\) does not name all 2"):
            layout.permute(perm)
    assert Layout.create((3,)).permute(0) == Layout.create((3,))


def test_an_empty_tensor_numpy_cannot_view_still_prints() -> None:
    # a review: repr and str raised LayoutError (NumPy refuses the shape); the tensor is
    # valid (no elements) and its numpy() is the documented LayoutError
    t = es.Tensor(np.zeros(1), shape=(2**60, 0))
    assert repr(t) == str(t) == "Tensor([], layout=(1152921504606846976,0):(0,0)+0, dtype=float64)"
    with pytest.raises(es.LayoutError):
        t.numpy()


def test_slice_stride_and_resize_errors_name_the_axis_and_shape() -> None:
    # a review: "a negative slice step would need a negative stride" named no axis, a
    # negative stride no axis, and resize(x, 2**62) spoke of strides and an offset
    t = es.Tensor(np.arange(6), (2, 3))
    with pytest.raises(es.LayoutError, match=r"slice step -1 on axis 1 of shape \(2, 3\)"):
        _ = t[:, ::-1]
    with pytest.raises(es.LayoutError, match=r"cannot be zero \(axis 0 of shape \(2, 3\)\)"):
        _ = t[::0]
    with pytest.raises(es.LayoutError, match=r"negative stride \(axis 1\)"):
        es.Tensor(np.arange(6), (2, 3), (3, -1))
    with pytest.raises(es.LayoutError, match=r"^resize: new shape \(4611686018427387904,\)"):
        es.resize(np.ones(3), 2**62)
