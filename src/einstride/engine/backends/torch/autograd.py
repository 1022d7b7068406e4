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
from typing import Any, Literal

import torch

from ...call import EinsumCall, EquationKey
from ...spec.backward import backward_equations
from ...spec.paths import derived_optimize
from .dtypes import numpy_dtype

__all__ = ["Backward", "EinsumFunction", "vjp"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Backward:
    """What the backward einsums need of the forward call (not its operands: the Function
    saves those with ``save_for_backward``), and the torch backend's functions that run
    them (passed in: the backend imports this module): ``einsum``; ``lookup``, the plan a
    backward einsum runs on without a graph (None: only ``einsum`` runs it);
    ``within_limit``, whether a plan still fits the memory limit; and ``memo``, the forward
    plan's (:class:`~.plan.Entry`), which keeps its compiled backward per cotangent
    layout."""

    key: EquationKey
    optimize: Any
    memory_limit: int | None
    einsum: Callable[[EinsumCall], torch.Tensor]
    memo: dict[Any, Any]
    lookup: Callable[[EinsumCall], Any]
    within_limit: Callable[[Any, torch.device, int | None], bool]


class EinsumFunction(torch.autograd.Function):
    """``apply(backward, run, *tensors)``: ``run(tensors, None)`` forward, :func:`vjp`
    backward."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        backward, run, *tensors = args
        ctx.einsum_backward = backward
        # an operand's values enter only the other operands' gradients: saved where one of
        # them needs its gradient (else an in-place change of it afterwards would fail the
        # backward, as torch.einsum's does not), its shape and dtype where none does
        needs = ctx.needs_input_grad[2:]
        read = [any(n for k, n in enumerate(needs) if k != j) for j in range(len(tensors))]
        ctx.save_for_backward(*(t for t, r in zip(tensors, read) if r))
        ctx.einsum_unread = [None if r else (t.shape, t.dtype) for t, r in zip(tensors, read)]
        return _owned(run(tensors, None), tensors)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        (cotangent,) = grad_outputs
        # read only where something was saved: torch refuses a second backward through
        # freed buffers even for a Function that saved nothing (torch.einsum's nodes do
        # not; a review: a diagonal's result could not be backpropagated twice)
        saved = iter(ctx.saved_tensors if any(u is None for u in ctx.einsum_unread) else ())
        tensors = [
            next(saved)
            if unread is None
            else torch.empty(unread[0], dtype=unread[1], device="meta")
            for unread in ctx.einsum_unread
        ]
        grads = vjp(ctx.einsum_backward, tensors, cotangent, ctx.needs_input_grad[2:])
        return (None, None, *grads)


def _owned(result: torch.Tensor, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``result``, or where it is a view of a buffer the forward made (a product's output
    reshaped or permuted), the same elements as a tensor of its own: autograd refuses an
    in-place change of a view made inside a ``Function`` (``loss += 1.0`` raised, as
    ``torch.einsum``'s result allows; found by a review).  Not a copy: the tensor takes
    the buffer's storage, which nothing else holds.  A view of an operand (a diagonal)
    stays a view: it must share the operand's version counter."""
    if result._base is None:
        return result
    storage = result.untyped_storage().data_ptr()
    if any(t.untyped_storage().data_ptr() == storage for t in tensors if t.numel()):
        return result
    own = torch.empty(0, dtype=result.dtype, device=result.device)
    offset, shape, strides = result.storage_offset(), result.shape, result.stride()
    return own.set_(result.untyped_storage(), offset, shape, strides)


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
    """The gradient of every operand that ``needs`` one (None for the others).

    Without a graph to build (no ``create_graph``), the plans of the gradients are looked
    up once per forward plan and cotangent layout (:func:`_compiled`): after a large
    product the caches are cold, and the Python of each look costs several times its warm
    time, more than torch's own backward spends between its kernels."""
    cached: _Grads | Literal[False] | None = None
    if not torch.is_grad_enabled():
        layout = ("gradients", cotangent.shape, cotangent.stride(), cotangent.dtype, *needs)
        cached = backward.memo.get(layout)
        if cached is None:
            cached = backward.memo[layout] = _compiled(backward, tensors, cotangent, needs)
    if cached:
        grads = cached(tensors, cotangent, backward.memory_limit)
        if grads is not None:
            return grads
    recipes = _recipes_of(backward, tensors)
    return [
        None if call is None else _finished(backward.einsum(call), recipe, x)
        for call, recipe, x in zip(
            _calls(backward, recipes, tensors, cotangent, needs), recipes, tensors
        )
    ]


def _recipes_of(backward: Backward, tensors: Sequence[torch.Tensor]) -> tuple[_Recipe, ...]:
    return _recipes(_vjp_key(backward.key), tuple(tuple(t.shape) for t in tensors))


def _calls(
    backward: Backward,
    recipes: Sequence[_Recipe],
    tensors: Sequence[torch.Tensor],
    cotangent: torch.Tensor,
    needs: Sequence[bool],
) -> list[EinsumCall | None]:
    """The backward einsum of every operand that needs a gradient (None for the others)."""
    optimize = derived_optimize(backward.optimize)
    plain = [t.conj() if t.is_complex() else t for t in tensors]
    # a 0-d cotangent (a scalar result) would not count in torch's promotion: the gradients
    # are computed in the result's dtype, as the forward was (not float16 of another operand)
    dtype = numpy_dtype(cotangent.dtype, "the cotangent has dtype") if not cotangent.dim() else None
    calls: list[EinsumCall | None] = []
    for k, recipe in enumerate(recipes):
        if not needs[k]:
            calls.append(None)
            continue
        operands = [cotangent, *(plain[j] for j in recipe.others)]
        if recipe.ones:
            ones = torch.ones(1, dtype=cotangent.dtype, device=cotangent.device)
            operands += [ones.expand(size) for size in recipe.ones]
        calls.append(
            EinsumCall(
                key=recipe.key,
                operands=tuple(operands),
                dtype=dtype,
                optimize=optimize,
                memory_limit=backward.memory_limit,
            )
        )
    return calls


_Grads = Callable[
    [Sequence[torch.Tensor], torch.Tensor, "int | None"], "list[torch.Tensor | None] | None"
]


def _compiled(
    backward: Backward,
    tensors: Sequence[torch.Tensor],
    cotangent: torch.Tensor,
    needs: Sequence[bool],
) -> _Grads | Literal[False]:
    """The gradients as one function of the operands, the cotangent and the call's memory
    limit, each running its looked-up plan directly; False where a gradient takes the full
    path (complex operands enter conjugated, a vector of ones is made per call).  It
    answers None when a plan does not fit the limit (then the full path runs, and says
    so)."""
    recipes = _recipes_of(backward, tensors)
    if any(t.is_complex() for t in tensors) or any(r.ones for r, n in zip(recipes, needs) if n):
        return False
    entries = [
        None if call is None else backward.lookup(call)
        for call in _calls(backward, recipes, tensors, cotangent, needs)
    ]
    if any(e is None for e, n in zip(entries, needs) if n):
        return False
    device, fits = cotangent.device, backward.within_limit
    work = [
        (e.run, recipe.others, recipe) if e is not None else None
        for e, recipe in zip(entries, recipes)
    ]
    planned = [e for e in entries if e is not None]

    def grads(
        tensors: Sequence[torch.Tensor], cot: torch.Tensor, limit: int | None
    ) -> list[torch.Tensor | None] | None:
        if not all(fits(e, device, limit) for e in planned):
            return None
        return [
            None
            if item is None
            else _finished(item[0]((cot, *[tensors[j] for j in item[1]]), None), item[2], x)
            for item, x in zip(work, tensors)
        ]

    return grads


def _finished(grad: torch.Tensor, recipe: _Recipe, x: torch.Tensor) -> torch.Tensor:
    if recipe.expand is not None:
        # constant along a label summed in the forward pass: a zero-stride view, not
        # written out (torch.sum's backward does the same)
        grad = grad[recipe.expand].expand(x.shape)
    return _like(grad, x)


def _like(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The gradient in the operand's dtype (a real operand keeps the real part)."""
    if grad.is_complex() and not x.is_complex():
        grad = grad.real
    return grad if grad.dtype == x.dtype else grad.to(x.dtype)
