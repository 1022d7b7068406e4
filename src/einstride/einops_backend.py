"""einops on einstride Tensors: ``einops.rearrange``, ``reduce``, ``repeat`` and ``einsum``.

einops picks a backend by the array's type among the subclasses of its ``AbstractBackend``
whose ``framework_name`` is an imported module.  Importing this module defines that subclass
for ``einstride`` (``import einstride`` does it by itself when einops was imported first).
Every operation runs on einstride: views through the Layout algebra where the strides allow
(reshape, transpose, new axes), reductions by the Tensor methods, and ``einops.einsum`` by
``es.einsum``.  Needs the ``einops`` package (``pip install einstride[compat]``).

>>> import numpy as np, einops, einstride as es
>>> import einstride.einops_backend
>>> x = es.as_tensor(np.arange(24.0).reshape(2, 3, 4))
>>> y = einops.rearrange(x, "b h w -> b (h w)")
>>> type(y).__name__, y.shape, np.shares_memory(y.numpy(), x.numpy())
('Tensor', (2, 12), True)
>>> einops.reduce(x, "b h w -> b", "max").tolist()
[11.0, 23.0]
>>> einops.einsum(x, x, "b h w, b h w -> b").tolist()
[506.0, 3818.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from einops._backends import AbstractBackend

from .engine import einsum
from .ops import arange, concat, expand_dims, stack, tile
from .tensors import Tensor, as_tensor

__all__ = ["EinstrideBackend"]

_REDUCTIONS = frozenset({"sum", "mean", "prod", "max", "min", "any", "all"})


class EinstrideBackend(AbstractBackend):
    """The einops backend of :class:`~einstride.Tensor` (imperative: NumPy arrays convert in
    and out with ``from_numpy``/``to_numpy``)."""

    framework_name = "einstride"

    def is_appropriate_type(self, tensor: Any) -> bool:
        return isinstance(tensor, Tensor)

    def from_numpy(self, x: Any) -> Tensor:
        return as_tensor(x)

    def to_numpy(self, x: Tensor) -> np.ndarray[Any, Any]:
        return x.numpy()

    def arange(self, start: int, stop: int) -> Tensor:
        return as_tensor(arange(start, stop))

    def reshape(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        return x.reshape(tuple(shape))

    def transpose(self, x: Tensor, axes: Sequence[int]) -> Tensor:
        return x.transpose(tuple(axes))

    def reduce(self, x: Tensor, operation: str, axes: Sequence[int]) -> Tensor:
        if operation not in _REDUCTIONS:
            raise NotImplementedError(f"einstride: no reduction {operation!r} for einops")
        result: Tensor = getattr(x, operation)(axis=tuple(axes))
        return result

    def stack_on_zeroth_dimension(self, tensors: list[Tensor]) -> Tensor:
        return as_tensor(stack(tensors))

    def add_axis(self, x: Tensor, new_position: int) -> Tensor:
        return as_tensor(expand_dims(x, new_position))

    def tile(self, x: Tensor, repeats: Sequence[int]) -> Tensor:
        return as_tensor(tile(x, tuple(repeats)))

    def concat(self, tensors: list[Tensor], axis: int) -> Tensor:
        return as_tensor(concat(tensors, axis=axis))

    def is_float_type(self, x: Tensor) -> bool:
        return x.dtype.kind == "f" or x.dtype.name.startswith(("bfloat", "float"))

    def einsum(self, pattern: str, *x: Tensor) -> Tensor:
        return as_tensor(einsum(pattern, *x))
