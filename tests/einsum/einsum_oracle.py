"""A brute-force einsum written from the definition, independent of einstride's parser.

An equation is given structurally: per input a list of labels (any hashable) where the
string ``"..."`` stands for an ellipsis, and the output likewise.  The value is the sum,
over every combination of label values, of the product of the operands' elements, added
into the output element those values index (repeated output labels: the same value twice,
so everything off the diagonal stays zero).  Vectorised over the combinations with
``np.indices``; accumulation in int64 / float64 / complex128 / bool.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

ELL = "..."


def _expand(
    terms: Sequence[Sequence[Hashable]], shapes: Sequence[tuple[int, ...]]
) -> tuple[list[list[Hashable]], list[Hashable], dict[Hashable, int]]:
    """Replace each '...' by labels ('ell', j) right-aligned; sizes with broadcasting."""
    ell_shapes = []
    for term, shape in zip(terms, shapes):
        if ELL in term:
            k = term.index(ELL)
            named = len(term) - 1
            ell_shapes.append(shape[k : k + len(shape) - named])
    ell_shape = np.broadcast_shapes(*ell_shapes) if ell_shapes else ()
    n_ell = len(ell_shape)
    ell_labels = [("ell", j) for j in range(n_ell)]
    expanded = []
    sizes: dict[Hashable, int] = dict(zip(ell_labels, ell_shape))
    for term, shape in zip(terms, shapes):
        labels = list(term)
        if ELL in labels:
            k = labels.index(ELL)
            rank = len(shape) - (len(labels) - 1)
            labels[k : k + 1] = ell_labels[n_ell - rank :]
        for label, n in zip(labels, shape):
            if label not in sizes:
                sizes[label] = n
            assert sizes[label] == n or isinstance(label, tuple)
        expanded.append(labels)
    return expanded, ell_labels, sizes


def brute_force(
    terms: Sequence[Sequence[Hashable]],
    output: Sequence[Hashable],
    operands: Sequence[Any],
    dtype: Any = None,
) -> np.ndarray:
    arrays = [np.asarray(x) for x in operands]
    result_dtype = np.dtype(dtype) if dtype is not None else np.result_type(*arrays)
    expanded, ell_labels, sizes = _expand(terms, [a.shape for a in arrays])
    out = list(output)
    if ELL in out:
        k = out.index(ELL)
        out[k : k + 1] = ell_labels
    every = list(dict.fromkeys([lab for t in expanded for lab in t] + out))
    grid = np.indices([sizes[lab] for lab in every], sparse=False)
    coord = {lab: grid[i] for i, lab in enumerate(every)}
    acc_kind = result_dtype.kind
    if acc_kind == "b":
        product = np.ones(grid.shape[1:], bool)
    else:
        acc = {"i": np.int64, "u": np.int64, "c": np.complex128}.get(acc_kind, np.float64)
        product = np.ones(grid.shape[1:], acc)
    for labels, arr in zip(expanded, arrays):
        index = tuple(
            coord[lab] if arr.shape[ax] == sizes[lab] else np.zeros_like(coord[lab])
            for ax, lab in enumerate(labels)
        )
        values = arr[index] if arr.ndim else np.broadcast_to(arr, grid.shape[1:])
        if acc_kind == "b":
            product = product & values.astype(bool)
        else:
            product = product * values.astype(product.dtype)
    out_shape = tuple(sizes[lab] for lab in out)
    if not out_shape:
        total = product.any() if acc_kind == "b" else product.sum()
        return np.asarray(total).astype(result_dtype)
    result = np.zeros(out_shape, product.dtype)
    out_index = tuple(coord[lab].reshape(-1) for lab in out)
    flat = product.reshape(-1)
    if acc_kind == "b":
        np.logical_or.at(result, out_index, flat)
    else:
        np.add.at(result, out_index, flat)
    return result.astype(result_dtype)
