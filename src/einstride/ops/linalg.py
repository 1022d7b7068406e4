"""Batched QR and SVD over the last two axes, real or complex; results are new tensors.

Integer and bool inputs are computed in float64 and float16/bfloat16 in float32 (LAPACK
has no narrower types); float32/64 and complex64/128 keep their precision.  A failure to
converge (non-finite input) is ``numpy.linalg.LinAlgError``, a ``ValueError``.

>>> import numpy as np
>>> a = np.array([[3.0, 0.0], [4.0, 5.0]])
>>> q, r = qr(a)
>>> bool(np.allclose(q @ r, a))
True
>>> s, u, v = svd(a)
>>> bool(np.allclose(u @ np.diag(s) @ v.conj().T, a))      # v, not NumPy's vh
True
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..errors import named_errors
from ..memory import check_array
from ..narrow import is_bfloat16
from ..tensors import any_tensor, as_array
from ._common import Array, dense, finish, require_rank

__all__ = ["QRResult", "SVDResult", "qr", "svd"]

_FLOAT16 = np.dtype(np.float16)


class QRResult(NamedTuple):
    """``t == q @ r``: ``q`` with orthonormal columns, ``r`` upper triangular."""

    q: Any
    r: Any


class SVDResult(NamedTuple):
    """``t == u @ diag(s) @ v^H``; ``u`` and ``v`` are ``None`` when not computed."""

    s: Any
    u: Any
    v: Any


def _matrices(t: Any, op: str, full_matrices: bool) -> Array:
    """The input, after sizing every array LAPACK and the results need: the input's copy and,
    with ``full_matrices``, the square ``[..., M, M]`` and ``[..., N, N]`` factors (all at
    complex128 width, the widest they can have)."""
    arr = as_array(t)
    require_rank(arr, 2, op)
    check_array(arr.shape, np.complex128, op)  # LAPACK copies (a broadcast batch too)
    if full_matrices:
        *batch, m, n = arr.shape
        for side in (m, n):
            check_array((*batch, side, side), np.complex128, f"{op} (full_matrices)")
    if arr.dtype.kind == "O":
        return _numbers(arr, op)  # (NumPy's qr takes an object array of numbers)
    native = arr.dtype.newbyteorder("=")  # (a big-endian float64 is LAPACK's too)
    narrow = native == _FLOAT16 or is_bfloat16(arr.dtype)
    if not (narrow or arr.dtype.kind in "biu" or native in _LAPACK_TYPES):
        # (a ValueError, as docs/ops.md promises: NumPy's own is a TypeError, a review)
        raise ValueError(
            f"{op}: LAPACK takes float16 to float64, complex64, complex128, integers and "
            f"bools, not {arr.dtype}"
        )
    return arr.astype(np.float32) if narrow else arr


def _numbers(arr: Array, op: str) -> Array:
    """An object array of numbers as float64, or complex128 where one is complex."""
    for kind in (np.float64, np.complex128):
        try:
            return arr.astype(kind)
        except (TypeError, ValueError, OverflowError):
            continue
    raise ValueError(f"{op}: the object array holds values that are not numbers LAPACK takes")


_LAPACK_TYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


@named_errors
def qr(t: Any, full_matrices: bool = False) -> QRResult:
    """QR of each ``[M, N]`` matrix of ``t`` (``[..., M, N]``, rank ``>= 2``): ``q`` is
    ``[..., M, K]`` and ``r`` ``[..., K, N]`` with ``K = min(M, N)``, or ``K = M`` with
    ``full_matrices``.  New dense tensors (no views of ``t``).

    >>> q, r = qr(np.ones((4, 3, 2)), full_matrices=True)
    >>> q.shape, r.shape
    ((4, 3, 3), (4, 3, 2))
    """
    arr = _matrices(t, "qr", bool(full_matrices))
    kind = any_tensor(t)
    if arr.size == 0:  # LAPACK would still size its work by the (maybe huge) other length
        *batch, m, n = arr.shape
        k = m if full_matrices else min(m, n)
        real = np.linalg.qr(np.eye(1, dtype=arr.dtype)).Q.dtype
        q = np.zeros((*batch, m, k), real)
        q[...] = np.eye(m, k, dtype=real)  # orthonormal columns (k == m or no columns at all)
        return QRResult(finish(q, kind), finish(np.zeros((*batch, k, n), real), kind))
    q, r = np.linalg.qr(arr, mode="complete" if full_matrices else "reduced")
    return QRResult(finish(dense(q), kind), finish(dense(r), kind))


@named_errors
def svd(t: Any, compute_uv: bool = True, full_matrices: bool = False) -> SVDResult:
    """Singular values (descending, real) of each matrix of ``t`` (``[..., M, N]``) and, with
    ``compute_uv``, ``u`` (``[..., M, K]``) and ``v`` (``[..., N, K]``; ``K = min(M, N)``, or
    square with ``full_matrices``) such that ``t == u @ diag(s) @ v^H``.  New dense tensors
    (no views of ``t``).

    >>> svd(np.diag([1.0, 3.0]), compute_uv=False).s.tolist()
    [3.0, 1.0]
    """
    arr = _matrices(t, "svd", bool(full_matrices) and bool(compute_uv))
    kind = any_tensor(t)
    if arr.size == 0:
        return _empty_svd(arr, compute_uv, full_matrices, kind)
    if not compute_uv:
        s = np.linalg.svd(arr, compute_uv=False)
        return SVDResult(finish(dense(s), kind), None, None)
    u, s, vh = np.linalg.svd(arr, full_matrices=full_matrices)
    v = dense(np.swapaxes(vh, -1, -2).conj())
    return SVDResult(
        finish(dense(s), kind),
        finish(dense(u), kind),
        finish(v, kind),
    )


def _empty_svd(arr: Array, compute_uv: bool, full_matrices: bool, kind: bool) -> SVDResult:
    """The SVD of matrices with no elements, by shape alone (no LAPACK call: its workspace
    would follow a length that may be huge)."""
    *batch, m, n = arr.shape
    u_probe, s_probe, _ = np.linalg.svd(np.eye(1, dtype=arr.dtype))
    s = finish(np.zeros((*batch, min(m, n)), s_probe.dtype), kind)
    if not compute_uv:
        return SVDResult(s, None, None)
    ku, kv = (m, n) if full_matrices else (min(m, n), min(m, n))
    u = np.zeros((*batch, m, ku), u_probe.dtype)
    v = np.zeros((*batch, n, kv), u_probe.dtype)
    if full_matrices:  # the square factors are identities (any orthonormal basis would do)
        u[...] = np.eye(m, dtype=u.dtype)
        v[...] = np.eye(n, dtype=v.dtype)
    return SVDResult(s, finish(u, kind), finish(v, kind))
