"""Tensor operations with TensorFlow semantics over the strided core (see docs/ops.md).

Every function accepts Tensors or NumPy arrays of any layout and returns the caller's kind:
NumPy in, NumPy out; any Tensor in, Tensor out; no tensor input, a Tensor.  Views are
returned wherever the layout allows (each docstring says so).
"""

from . import create, index, init, linalg, matrix, precision, random, shape
from .create import *  # noqa: F403
from .index import *  # noqa: F403
from .init import *  # noqa: F403
from .linalg import *  # noqa: F403
from .matrix import *  # noqa: F403
from .precision import *  # noqa: F403
from .random import *  # noqa: F403
from .shape import *  # noqa: F403

__all__ = [
    *shape.__all__,
    *index.__all__,
    *matrix.__all__,
    *create.__all__,
    *random.__all__,
    *init.__all__,
    *linalg.__all__,
    *precision.__all__,
]
