"""Batched QR and SVD: the factorization laws, shapes, dtypes, and v (not vh)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from ops_layouts import assert_kind, values, variants

import einstride as es

SETTINGS = settings(max_examples=30, deadline=None)
finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
batched_shapes = hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4)


def matrices_of(dtype):
    if np.dtype(dtype).kind == "c":
        return hnp.arrays(
            dtype,
            batched_shapes,
            elements=st.complex_numbers(max_magnitude=10, allow_nan=False, allow_infinity=False),
        )
    return hnp.arrays(dtype, batched_shapes, elements=finite)


def hermitian(x):
    return np.conj(np.swapaxes(x, -1, -2))


def check_qr(t, q, r, full):
    m, n = t.shape[-2:]
    k = m if full else min(m, n)
    assert q.shape == t.shape[:-2] + (m, k) and r.shape == t.shape[:-2] + (k, n)
    scale = max(1.0, float(np.abs(t).max(initial=0)))
    tol = 1e-4 * scale if t.dtype in (np.float32, np.complex64) else 1e-10 * scale
    np.testing.assert_allclose(q @ r, t, atol=tol)
    np.testing.assert_allclose(
        hermitian(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), atol=tol / scale
    )
    np.testing.assert_array_equal(np.tril(r, -1), 0)


def check_svd(t, s, u, v):
    scale = max(1.0, float(np.abs(t).max(initial=0)))
    tol = 1e-4 * scale if t.dtype in (np.float32, np.complex64) else 1e-10 * scale
    assert s.dtype.kind == "f"
    assert (np.diff(s, axis=-1) <= 0).all() and (s >= 0).all()
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ hermitian(v[..., :k]), t, atol=tol)


@SETTINGS
@given(
    t=st.one_of(matrices_of(np.float64), matrices_of(np.complex128), matrices_of(np.float32)),
    full=st.booleans(),
)
def test_qr_law(t, full):
    q, r = es.qr(t, full_matrices=full)
    check_qr(t, q, r, full)


@SETTINGS
@given(
    t=st.one_of(matrices_of(np.float64), matrices_of(np.complex128), matrices_of(np.complex64)),
    full=st.booleans(),
)
def test_svd_law(t, full):
    s, u, v = es.svd(t, full_matrices=full)
    m, n = t.shape[-2:]
    k = min(m, n)
    assert s.shape == t.shape[:-2] + (k,)
    assert u.shape == t.shape[:-2] + ((m, m) if full else (m, k))
    assert v.shape == t.shape[:-2] + ((n, n) if full else (n, k))
    check_svd(t, s, u, v)
    np.testing.assert_allclose(
        es.svd(t, compute_uv=False).s, s, atol=1e-4 * max(1.0, float(np.abs(t).max(initial=0)))
    )


@pytest.mark.parametrize("name,x", variants(np.arange(1.0, 25.0).reshape(2, 4, 3) ** 1.5))
def test_qr_and_svd_of_any_layout(name, x):
    base = values(x).copy()
    q, r = es.qr(x)
    assert_kind(q, x)
    assert_kind(r, x)
    check_qr(base, values(q), values(r), False)
    result = es.svd(x)
    assert isinstance(result, es.SVDResult)
    for part in result:
        assert_kind(part, x)
    check_svd(base, values(result.s), values(result.u), values(result.v))


def test_svd_returns_v_not_vh():
    t = np.array([[1.0, 2.0j], [3.0, -1.0 + 1.0j], [0.5j, 2.0]])
    s, _, v = es.svd(t)
    _, _, vh = np.linalg.svd(t, full_matrices=False)
    np.testing.assert_allclose(v, hermitian(vh))
    result = es.svd(t, compute_uv=False)
    assert result.u is None and result.v is None
    np.testing.assert_allclose(result.s, s)


def test_named_results_and_reduced_precision_inputs():
    t = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    result = es.qr(t)
    assert isinstance(result, es.QRResult) and result.q.dtype == np.float32
    np.testing.assert_allclose(result.q @ result.r, t, atol=1e-5)
    for dtype in [np.float16, ml_dtypes.bfloat16]:
        result = es.svd(t.astype(dtype))
        assert result.s.dtype == np.float32
        check_svd(t, result.s, result.u, result.v)
        assert es.qr(t.astype(dtype)).r.dtype == np.float32
    assert es.qr(np.eye(2, dtype=int)).q.dtype == np.float64


def test_errors():
    for op in (es.qr, es.svd):
        with pytest.raises(ValueError, match="rank >= 2"):
            op(np.ones(3))
        with pytest.raises(ValueError, match="rank >= 2"):
            op(np.float64(1))
    with pytest.raises(np.linalg.LinAlgError):
        es.svd(np.full((3, 3), np.nan))
    assert issubclass(np.linalg.LinAlgError, ValueError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: es.qr(np.ones((3, 2), np.longdouble)),
        lambda: es.svd(np.ones((3, 2), np.clongdouble)),
        lambda: es.svd(np.full((3, 2), "a", object)),
        lambda: es.qr(np.array([[10**400, 1], [2, 3]], object)),  # past float64 (OverflowError)
        lambda: es.trace(np.full((2, 2), "a")),
        lambda: es.trace(np.zeros((2, 2), "M8[s]")),
    ],
)
def test_a_dtype_the_op_does_not_take_is_a_value_error(call) -> None:
    """docs/ops.md: a dtype an operation does not take is a ValueError (a review: NumPy's
    TypeError escaped qr, svd and trace)."""
    with pytest.raises(ValueError, match=r"dtype|LAPACK|not numbers"):
        call()


def test_integer_and_object_matrices_keep_working() -> None:
    np.testing.assert_allclose(es.svd(np.eye(3, dtype=np.int64), compute_uv=False).s, np.ones(3))
    for order in "<>":  # a big-endian matrix is LAPACK's too (a review: refused)
        for kind in ("f2", "f4", "f8", "c8", "c16"):
            m = np.eye(3).astype(order + kind)
            np.testing.assert_allclose(np.abs(np.asarray(es.qr(m).r)), np.eye(3), atol=1e-3)
            np.testing.assert_allclose(es.svd(m, compute_uv=False).s, np.ones(3), atol=1e-3)
    objects = np.array([[1, 2], [3, 4]], object)  # numbers in an object array, as NumPy's qr
    np.testing.assert_allclose(np.asarray(es.qr(objects).r), np.linalg.qr(objects.astype(float)).R)
    np.testing.assert_allclose(
        es.svd(objects, compute_uv=False).s, np.linalg.svd(objects.astype(float), compute_uv=False)
    )
    assert es.trace(np.array([[1, 2], [3, 4]], object)) == 5
