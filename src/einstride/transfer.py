"""Data movement between tensors, and every overlap rule of the layout spec, in one place.

All checks run **before anything is written**: on an error the destination is unchanged.

>>> import numpy as np
>>> from einstride import Tensor
>>> storage = np.arange(1, 7)
>>> a, b = Tensor(storage, (3,), (2,)), Tensor(storage, (3,), (2,), 1)
>>> tensors_overlap(a, b)          # the even and the odd elements of one buffer
False
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import numpy as np

from .errors import LayoutError
from .tensor import as_array, as_tensor

__all__ = ["check_destination", "check_no_overlap", "tensors_overlap"]

_EXACT: Final = -1  # np.shares_memory: solve exactly (NumPy's MAY_SHARE_EXACT)


def tensors_overlap(a: Any, b: Any) -> bool:
    """Whether two Tensors/arrays share at least one byte of memory (exact).

    Judged on memory, so a NumPy array and a Tensor viewing one buffer are compared too.
    """
    x, y = as_array(a), as_array(b)
    if x.size == 0 or y.size == 0:
        return False
    return bool(np.shares_memory(x, y, max_work=_EXACT))


def check_destination(dst: Any, op: str) -> None:
    """A destination must be writeable and hold distinct values (no repeated locations)."""
    arr = as_array(dst)
    if not arr.flags.writeable:
        raise LayoutError(f"{op}: the destination is read-only")
    if arr.size > 1 and as_tensor(arr).has_repeated_locations:
        raise LayoutError(
            f"{op}: the destination (layout {as_tensor(arr).layout}) has repeated locations "
            "and cannot hold distinct values"
        )


def check_no_overlap(dst: Any, sources: Iterable[Any], op: str) -> None:
    """Reject any source that shares memory with ``dst`` (the rule for einsum ``out=``,
    ``concat``/``stack`` ``out=``)."""
    for index, src in enumerate(sources):
        if tensors_overlap(dst, src):
            raise LayoutError(f"{op}: the destination overlaps input {index}")
