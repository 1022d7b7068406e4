"""Matrix-structure operations: diag_part, diag, set_diag, band_part, eye, trace."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ops_layouts import assert_kind, shares, values, variants

import einstride as es

SETTINGS = settings(max_examples=40, deadline=None)
SHAPES = [(3, 3), (2, 3, 4), (2, 4, 3), (1, 2, 5, 1), (2, 0, 3), (0, 2, 2)]
small_ints = hnp.arrays(
    np.int64,
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
    elements=st.integers(-50, 50),
)
matrices = hnp.arrays(
    np.int64,
    hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4),
    elements=st.integers(-50, 50),
)


def numbered(shape):
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape)


# -- diag_part ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_diag_part_is_a_view_with_numpys_values(shape):
    base = numbered(shape)
    for name, x in variants(base):
        result = es.diag_part(x)
        assert_kind(result, x)
        np.testing.assert_array_equal(values(result), np.diagonal(base, axis1=-2, axis2=-1))
        if base.size:
            assert shares(result, x), name


def test_diag_part_writes_through_a_tensor_view():
    storage = np.zeros(9)
    t = es.Tensor(storage, shape=(3, 3))
    es.diag_part(t).numpy()[...] = 1
    assert storage.tolist() == np.eye(3).reshape(-1).tolist()


def test_diag_part_rank_errors():
    for bad in [np.float64(1), np.ones(3)]:
        with pytest.raises(ValueError, match="rank >= 2"):
            es.diag_part(bad)


# -- diag / set_diag ------------------------------------------------------------------------------


def diag_oracle(d):
    n = d.shape[-1]
    result = np.zeros(d.shape + (n,), d.dtype)
    for pos in itertools.product(*map(range, d.shape)):
        result[pos + (pos[-1],)] = d[pos]
    return result


@pytest.mark.parametrize("shape", [(3,), (2, 3), (0,), (2, 0), (0, 3)])
def test_diag_values(shape):
    base = numbered(shape)
    for _, x in variants(base):
        result = es.diag(x)
        assert_kind(result, x)
        np.testing.assert_array_equal(values(result), diag_oracle(base))
    with pytest.raises(ValueError, match="rank >= 1"):
        es.diag(np.float64(2))


@SETTINGS
@given(d=small_ints)
def test_diag_part_of_diag_is_identity(d):
    np.testing.assert_array_equal(es.diag_part(es.diag(d)), d)
    np.testing.assert_array_equal(es.diag_part(es.diag(es.tensor(d))).numpy(), d)


@pytest.mark.parametrize("shape", SHAPES)
def test_set_diag(shape):
    base = numbered(shape)
    k = min(shape[-2:])
    d = -numbered(shape[:-2] + (k,))
    expected = base.copy()
    for pos in itertools.product(*map(range, shape[:-2])):
        for i in range(k):
            expected[pos + (i, i)] = d[pos + (i,)]
    for _, x in variants(base):
        result = es.set_diag(x, d)
        assert_kind(result, x)
        np.testing.assert_array_equal(values(result), expected)
        np.testing.assert_array_equal(values(x), base)  # the input is untouched
        assert not shares(result, x)


def test_set_diag_errors_and_dtype():
    t = np.zeros((2, 3, 4), np.int32)
    for bad in [np.zeros((2, 4)), np.zeros((3,)), np.zeros((1, 3)), np.zeros((2, 3, 1))]:
        with pytest.raises(ValueError, match=r"needs \(2, 3\)"):
            es.set_diag(t, bad)
    with pytest.raises(ValueError, match="rank >= 2"):
        es.set_diag(np.zeros(3), np.zeros(3))
    assert es.set_diag(t, np.full((2, 3), 0.5)).dtype == np.float64
    assert isinstance(es.set_diag(t, es.tensor(np.ones((2, 3), np.int32))), es.Tensor)


# -- band_part ------------------------------------------------------------------------------------


def band_oracle(t, lower, upper):
    result = t.copy()
    m, n = t.shape[-2:]
    for i, j in itertools.product(range(m), range(n)):
        keep = (lower < 0 or i - j <= lower) and (upper < 0 or j - i <= upper)
        if not keep:
            result[..., i, j] = 0
    return result


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lower,upper", [(0, 0), (-1, 0), (0, -1), (1, 2), (2, -1), (5, 5)])
def test_band_part_values(shape, lower, upper):
    base = numbered(shape)
    for _, x in variants(base):
        result = es.band_part(x, lower, upper)
        assert_kind(result, x)
        np.testing.assert_array_equal(values(result), band_oracle(base, lower, upper))


@SETTINGS
@given(t=matrices, lower=st.integers(-2, 4), upper=st.integers(-2, 4))
def test_band_part_laws(t, lower, upper):
    np.testing.assert_array_equal(es.band_part(t, -1, -1), t)
    np.testing.assert_array_equal(es.band_part(t, lower, upper), band_oracle(t, lower, upper))


def test_band_part_errors():
    with pytest.raises(ValueError, match="rank >= 2"):
        es.band_part(np.ones(3), 0, 0)
    with pytest.raises(TypeError):
        es.band_part(np.ones((2, 2)), 0.5, 0)


# -- eye / trace ------------------------------------------------------------------------------------


def test_eye():
    result = es.eye(3)
    assert isinstance(result, es.Tensor)
    np.testing.assert_array_equal(result.numpy(), np.eye(3))
    batched = es.eye(2, 4, batch_shape=(3, 1), dtype=np.int8)
    assert batched.shape == (3, 1, 2, 4) and batched.dtype == np.int8
    np.testing.assert_array_equal(batched.numpy(), np.broadcast_to(np.eye(2, 4), (3, 1, 2, 4)))
    np.testing.assert_array_equal(es.eye(3, 2).numpy(), np.eye(3, 2))
    assert es.eye(0, 3).shape == (0, 3)
    assert es.eye(2, batch_shape=[0]).shape == (0, 2, 2)
    assert es.eye(2).numpy().flags.writeable
    for kwargs in [{"rows": -1}, {"rows": 2, "cols": -1}, {"rows": 2, "batch_shape": (-1,)}]:
        with pytest.raises(ValueError):
            es.eye(**kwargs)


@pytest.mark.parametrize("shape", SHAPES)
def test_trace(shape):
    base = numbered(shape)
    for _, x in variants(base):
        result = es.trace(x)
        assert_kind(result, x)
        got = values(result)
        assert got.shape == shape[:-2]
        np.testing.assert_allclose(got, np.trace(base, axis1=-2, axis2=-1))
    with pytest.raises(ValueError, match=r"^trace: input must have rank >= 2"):
        es.trace(np.ones(4))  # (a review: the message named diag_part)


def test_trace_of_objects_and_bools_sums_as_numpy() -> None:
    # a review: an object array's empty sum is a Python int, which has no dtype
    objects = np.arange(9).reshape(3, 3).astype(object)
    got = es.trace(objects)
    assert got.dtype == object and got == np.trace(objects) == 12
    flags = np.ones((2, 3, 3), bool)
    assert es.trace(flags).tolist() == np.trace(flags, axis1=-2, axis2=-1).tolist() == [3, 3]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_trace_of_small_floats_accumulates_in_float32(dtype: str) -> None:
    """A review: bfloat16's own sum stalls at 256 (256 + 1 rounds back to 256); trace now
    sums in float32 and rounds once, as einsum's 'ii->' does."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kind = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    x = np.eye(300, dtype=kind)
    got = es.trace(x)
    assert got.dtype == kind and float(got) == 300.0 == float(es.einsum("ii->", x))
    batch = es.trace(es.tensor(np.stack([x, 2 * x])))
    assert values(batch).tolist() == [300.0, 600.0]
