"""Test helper: the same logical values in several layouts and kinds (NumPy and Tensor)."""

from __future__ import annotations

from typing import Any

import numpy as np

import einstride as es


def gapped(base: np.ndarray) -> np.ndarray:
    """``base``'s values in a strided view with gaps (every other element, offset 1)."""
    if base.ndim == 0:
        return base.copy()
    big = np.zeros(tuple(2 * n + 1 for n in base.shape), base.dtype)
    every_other = tuple(slice(1, None, 2) for _ in base.shape)
    big[every_other] = base
    return big[every_other]


def transposed(base: np.ndarray) -> np.ndarray:
    """``base``'s values in column-major order (a transposed view of dense storage)."""
    return np.asfortranarray(base)


def variants(base: Any) -> list[tuple[str, Any]]:
    """(name, value) pairs: NumPy arrays and Tensors, dense, transposed and gapped."""
    arr = np.asarray(base)
    return [
        ("numpy-dense", arr.copy()),
        ("numpy-transposed", transposed(arr)),
        ("numpy-gapped", gapped(arr)),
        ("tensor-dense", es.tensor(arr)),
        ("tensor-transposed", es.as_tensor(transposed(arr))),
        ("tensor-gapped", es.as_tensor(gapped(arr))),
    ]


def assert_kind(result: Any, source: Any) -> None:
    """NumPy in, NumPy out; Tensor in, Tensor out."""
    if isinstance(source, es.Tensor):
        assert isinstance(result, es.Tensor), type(result)
    else:
        assert isinstance(result, np.ndarray), type(result)


def values(x: Any) -> np.ndarray:
    return np.asarray(x.numpy() if isinstance(x, es.Tensor) else x)


def shares(a: Any, b: Any) -> bool:
    return bool(np.shares_memory(values(a), values(b)))
