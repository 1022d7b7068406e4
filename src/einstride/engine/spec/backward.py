"""The backward equations of einsum: what every backend's gradient needs (see
docs/gradients.md for the rules).

einsum is linear in each operand, so the gradient of operand ``k`` is the einsum of the
cotangent (with the output's labels) and every other operand, producing operand ``k``'s own
labels.  Two adjustments make that equation well formed:

* a size-1 ``...`` axis that broadcast against a larger one gets a fresh label of its own,
  so the backward pass sums over the broadcast dimension and keeps the size-1 axis;
* a label of operand ``k`` that appears nowhere else (summed in the forward pass) is a
  *fill*: the backward einsum takes it from a zero-stride vector of ones of its size.

>>> spec, inputs, fills = backward_equations("ij,jk->ik", ((2, 3), (3, 4)))
>>> inputs, fills
(((0, 1), (1, 2)), (((), ()), ((), ())))
>>> backward_equations("...i,...i->...i", ((1, 3), (4, 3)))[1:]       # a fresh label 2
(((2, 0), (1, 0)), (((2,), (1,)), ((), ())))
>>> backward_equations("ij->i", ((2, 5),))[2]                           # j is a fill
(((1,), (5,)),)
"""

from __future__ import annotations

import functools
from typing import Any

from .equation import EinsumSpec, bind, parse_sublists, parse_subscripts

__all__ = ["BackwardEquations", "EquationKey", "Labels", "backward_equations"]

Labels = tuple[int, ...]
EquationKey = str | tuple[tuple[Any, ...], ...]
"""An equation string, or sublists: one per operand, then optionally the output's."""
BackwardEquations = tuple[EinsumSpec, tuple[Labels, ...], tuple[tuple[Labels, Labels], ...]]


def _bind(key: EquationKey, shapes: tuple[tuple[int, ...], ...]) -> EinsumSpec:
    if isinstance(key, str):
        return bind(parse_subscripts(key), shapes)
    output = key[len(shapes)] if len(key) > len(shapes) else None
    return bind(parse_sublists(key[: len(shapes)], output), shapes)


@functools.lru_cache(maxsize=1024)
def backward_equations(key: EquationKey, shapes: tuple[tuple[int, ...], ...]) -> BackwardEquations:
    """(the bound spec, per-operand labels with broadcast axes renamed, per-operand
    (fill labels, their sizes)) -- everything the backward einsums need, cached."""
    spec = _bind(key, shapes)
    fresh = len(spec.sizes)
    inputs: list[Labels] = []
    for term, stretched in zip(spec.inputs, spec.stretched):
        renamed = list(term)
        for axis in stretched:
            renamed[axis] = fresh
            fresh += 1
        inputs.append(tuple(renamed))
    fills = []
    for k, term in enumerate(inputs):
        present = set(spec.output).union(*(set(t) for j, t in enumerate(inputs) if j != k))
        missing = tuple(label for label in dict.fromkeys(term) if label not in present)
        sizes = tuple(shapes[k][term.index(label)] for label in missing)
        fills.append((missing, sizes))
    return spec, tuple(inputs), tuple(fills)
