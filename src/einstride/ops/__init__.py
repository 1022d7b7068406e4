"""Tensor operations with TensorFlow semantics over the strided core (see docs/ops.md).

Every function accepts Tensors or NumPy arrays of any layout and returns the caller's kind:
NumPy in, NumPy out; any Tensor in, Tensor out; no tensor input, a Tensor.  Views are
returned wherever the layout allows (each docstring says so).
"""

from .create import (
    arange,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .index import (
    boolean_mask,
    gather,
    nonzero_indices,
    one_hot,
    pad,
    where,
)
from .init import (
    fans,
    glorot_normal,
    glorot_uniform,
    he_normal,
    he_uniform,
    lecun_normal,
    lecun_uniform,
    orthogonal,
)
from .linalg import (
    QRResult,
    SVDResult,
    qr,
    svd,
)
from .matrix import (
    band_part,
    diag,
    diag_part,
    eye,
    set_diag,
    trace,
)
from .precision import (
    is_reduced_precision,
    to_full_precision,
    to_reduced_precision,
)
from .random import (
    categorical,
    random_normal,
    random_uniform,
    truncated_normal,
)
from .shape import (
    broadcast_to,
    concat,
    expand_dims,
    flatten,
    reshape,
    split,
    squeeze,
    stack,
    tile,
    transpose,
    unstack,
)

__all__ = [
    "QRResult",
    "SVDResult",
    "arange",
    "band_part",
    "boolean_mask",
    "broadcast_to",
    "categorical",
    "concat",
    "diag",
    "diag_part",
    "expand_dims",
    "eye",
    "fans",
    "flatten",
    "full",
    "full_like",
    "gather",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "is_reduced_precision",
    "lecun_normal",
    "lecun_uniform",
    "linspace",
    "nonzero_indices",
    "one_hot",
    "ones",
    "ones_like",
    "orthogonal",
    "pad",
    "qr",
    "random_normal",
    "random_uniform",
    "reshape",
    "set_diag",
    "split",
    "squeeze",
    "stack",
    "svd",
    "tile",
    "to_full_precision",
    "to_reduced_precision",
    "trace",
    "transpose",
    "truncated_normal",
    "unstack",
    "where",
    "zeros",
    "zeros_like",
]
