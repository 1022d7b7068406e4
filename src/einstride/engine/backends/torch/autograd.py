"""Autograd for torch einsums: a ``torch.autograd.Function`` whose backward is einstride.

einsum is linear in each operand, so the gradient of operand ``k`` is itself an einsum of
the cotangent with every other operand (:mod:`einstride.engine.spec.backward` derives the
backward equations, as for ``einsum_vjp``: repeated input labels become a diagonal
expansion, repeated output labels a diagonal extraction, broadcast ``...`` axes are summed
back).  The backward einsums run through the torch backend again (``Backward.einsum``), so
under ``create_graph=True`` they build a graph of their own: the backward is
differentiable, to any order.  Complex operands follow PyTorch's
convention (the conjugate Wirtinger derivative, as ``torch.einsum``): the other operands
enter conjugated.  Only the operands that need a gradient get one.

>>> import torch
>>> from ...call import make_call
>>> from .backend import einsum
>>> a = torch.arange(6.0).reshape(2, 3).requires_grad_()
>>> einsum(make_call("ij->j", a)).sum().backward()
>>> a.grad.tolist()
[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ...call import EinsumCall, EquationKey
from ...spec.backward import backward_equations

__all__ = ["Backward", "EinsumFunction", "vjp"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Backward:
    """What the backward einsums need of the forward call (not its operands: the Function
    saves those with ``save_for_backward``), and the torch backend's ``einsum`` that runs
    them (passed in: the backend imports this module)."""

    key: EquationKey
    optimize: Any
    memory_limit: int | None
    einsum: Callable[[EinsumCall], torch.Tensor]


class EinsumFunction(torch.autograd.Function):
    """``apply(backward, run, *tensors)``: ``run(tensors, None)`` forward, :func:`vjp`
    backward."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        backward, run, *tensors = args
        ctx.einsum_backward = backward
        ctx.save_for_backward(*tensors)
        return run(tensors, None)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        (cotangent,) = grad_outputs
        grads = vjp(ctx.einsum_backward, ctx.saved_tensors, cotangent, ctx.needs_input_grad[2:])
        return (None, None, *grads)


def _vjp_key(key: EquationKey) -> Any:
    """The equation key in :func:`~einstride.engine.spec.backward.backward_equations`'
    form."""
    if isinstance(key, str):
        return key
    _, terms, output = key
    return terms if output is None else (*terms, output)


@dataclass(frozen=True, slots=True)
class _Recipe:
    """The backward einsum of one operand: its equation key, the other operands in it (by
    position, after the cotangent), the sizes of the labels a vector of ones carries, and
    the index that inserts the broadcast labels (None: there are none)."""

    key: Any
    others: tuple[int, ...]
    ones: tuple[int, ...]
    expand: tuple[slice | None, ...] | None


@functools.lru_cache(maxsize=1024)
def _recipes(key: Any, shapes: tuple[tuple[int, ...], ...]) -> tuple[_Recipe, ...]:
    """Every operand's backward einsum (see the module docstring), cached per equation and
    shapes: the backward of a repeated call only gathers its operands."""
    spec, inputs, fills = backward_equations(key, shapes)
    found = []
    for k, term in enumerate(inputs):
        others = tuple(j for j in range(len(inputs)) if j != k)
        terms = [spec.output, *(inputs[j] for j in others)]
        broadcast = {label for label in fills[k][0] if term.count(label) == 1}
        ones = []
        for label, size in zip(*fills[k]):
            if label not in broadcast:  # a zero-stride vector of ones carries the label
                terms.append((label,))
                ones.append(size)
        computed = tuple(label for label in term if label not in broadcast)
        expand = tuple(None if x in broadcast else slice(None) for x in term)
        eq_key = ("sublists", tuple(terms), computed)
        found.append(_Recipe(eq_key, others, tuple(ones), expand if broadcast else None))
    return tuple(found)


def vjp(
    backward: Backward,
    tensors: Sequence[torch.Tensor],
    cotangent: torch.Tensor,
    needs: Sequence[bool],
) -> list[torch.Tensor | None]:
    """The gradient of every operand that ``needs`` one (None for the others)."""
    recipes = _recipes(_vjp_key(backward.key), tuple(tuple(t.shape) for t in tensors))
    optimize = "auto" if isinstance(backward.optimize, (list, tuple)) else backward.optimize
    plain = [t.conj() if t.is_complex() else t for t in tensors]
    grads: list[torch.Tensor | None] = []
    for k, x in enumerate(tensors):
        if not needs[k]:
            grads.append(None)
            continue
        recipe = recipes[k]
        operands = [cotangent, *(plain[j] for j in recipe.others)]
        if recipe.ones:
            ones = torch.ones(1, dtype=cotangent.dtype, device=cotangent.device)
            operands += [ones.expand(size) for size in recipe.ones]
        call = EinsumCall(
            key=recipe.key,
            operands=tuple(operands),
            optimize=optimize,
            memory_limit=backward.memory_limit,
        )
        grad = backward.einsum(call)
        if recipe.expand is not None:
            # constant along a label summed in the forward pass: a zero-stride view, not
            # written out (torch.sum's backward does the same)
            grad = grad[recipe.expand].expand(x.shape)
        grads.append(_like(grad, x))
    return grads


def _like(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The gradient in the operand's dtype (a real operand keeps the real part)."""
    if grad.is_complex() and not x.is_complex():
        grad = grad.real
    return grad if grad.dtype == x.dtype else grad.to(x.dtype)
