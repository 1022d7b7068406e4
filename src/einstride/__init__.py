"""einstride: an einsum contraction engine over layout-aware (strided) tensors.

>>> import numpy as np, einstride as es
>>> t = es.Tensor(np.arange(1, 7), shape=(2, 2), strides=(3, 1))
>>> t.layout
(2,2):(3,1)+0
"""

from . import einsum as _einsum_pkg
from . import elementwise as _elementwise
from . import ops as _ops
from . import transfer as _transfer
from .einsum import *  # noqa: F403
from .einsum.grad import einsum_vjp
from .elementwise import *  # noqa: F403
from .errors import EinsumError, LayoutError
from .layout import Layout
from .ops import *  # noqa: F403
from .tensor import Tensor, as_tensor, tensor
from .transfer import *  # noqa: F403

__version__ = "0.1.0"

__all__ = [
    "EinsumError",
    "Layout",
    "LayoutError",
    "Tensor",
    "__version__",
    "einsum_vjp",
    "as_tensor",
    "tensor",
    *_transfer.__all__,
    *_elementwise.__all__,
    *_ops.__all__,
    *_einsum_pkg.__all__,
]
