"""Whether an einsum call goes to the Dask backend, without importing Dask.

>>> import numpy as np
>>> has_dask_operand([np.ones(2), 3.0])
False
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["has_dask_operand"]


def has_dask_operand(operands: Sequence[Any]) -> bool:
    """Whether any operand is a ``dask.array.Array`` (if none was ever made, Dask is not even
    imported, and this costs one dictionary lookup)."""
    dask_array = sys.modules.get("dask.array")
    return dask_array is not None and any(isinstance(x, dask_array.Array) for x in operands)
