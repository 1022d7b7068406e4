"""Ops on inputs with zero strides (broadcast views, NumPy and Tensor) agree with NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from ops_layouts import assert_kind, values

import einstride as es

ROW = np.arange(1.0, 5.0)
BROADCAST_NP = np.broadcast_to(ROW, (3, 4))  # strides (0, 8)
BROADCAST_T = es.Tensor(ROW.copy(), shape=(3, 4), strides=(0, 1))


@pytest.mark.parametrize("x", [BROADCAST_NP, BROADCAST_T], ids=["numpy", "tensor"])
@pytest.mark.parametrize(
    "op,oracle",
    [
        (lambda x: es.tile(x, (2, 1)), lambda a: np.tile(a, (2, 1))),
        (
            lambda x: es.pad(x, [(1, 1), (2, 2)], mode="reflect"),
            lambda a: np.pad(a, [(1, 1), (2, 2)], mode="reflect"),
        ),
        (es.diag_part, lambda a: np.diagonal(a, axis1=-2, axis2=-1)),
        (lambda x: es.band_part(x, 0, 1), lambda a: np.triu(np.tril(a, 1))),
        (lambda x: es.set_diag(x, np.zeros(3)), lambda a: np.where(np.eye(3, 4, dtype=bool), 0, a)),
        (es.trace, lambda a: np.trace(a)),
        (lambda x: es.gather(x, [3, 1], axis=1), lambda a: a[:, [3, 1]]),
        (lambda x: es.boolean_mask(x, np.array([True, False, True])), lambda a: a[[0, 2]]),
        (es.nonzero_indices, np.argwhere),
        (lambda x: es.reshape(x, (4, 3)), lambda a: a.reshape(4, 3)),
        (lambda x: es.reshape(x, (3, 2, 2)), lambda a: a.reshape(3, 2, 2)),
        (es.flatten, lambda a: a.reshape(-1)),
        (lambda x: es.concat([x, x], axis=1), lambda a: np.concatenate([a, a], axis=1)),
        (lambda x: es.stack([x, x], axis=-1), lambda a: np.stack([a, a], axis=-1)),
        (lambda x: es.where(values(x) > 2, x, 0.0), lambda a: np.where(a > 2, a, 0.0)),
        (lambda x: es.squeeze(es.expand_dims(x, 1)), lambda a: a),
        (
            lambda x: es.to_full_precision(es.to_reduced_precision(x)),
            lambda a: a.astype(np.float32),
        ),
        (lambda x: es.qr(x).r, lambda a: np.linalg.qr(a)[1]),
        (lambda x: es.svd(x, compute_uv=False).s, lambda a: np.linalg.svd(a, compute_uv=False)),
        (es.zeros_like, np.zeros_like),
    ],
)
def test_zero_stride_inputs(x, op, oracle):
    result = op(x)
    assert_kind(result, x)
    np.testing.assert_allclose(values(result), oracle(BROADCAST_NP), atol=1e-12)


def test_split_views_keep_the_zero_stride():
    parts = es.split(BROADCAST_T, [1, 2], axis=0)
    assert [p.strides for p in parts] == [(0, 1), (0, 1)]
    assert all(np.shares_memory(p.numpy(), BROADCAST_T.numpy()) for p in parts)
