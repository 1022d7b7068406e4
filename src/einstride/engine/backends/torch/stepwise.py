"""An n-ary einsum under autograd, one path step at a time.

Run as one ``autograd.Function``, an einsum of n operands needs n backward einsums of n
operands each (every gradient contracts the cotangent with all the other operands): for a
chain of four matrices, twelve matrix products where the forward did three.  Run as its
path's steps, each a two-operand einsum with its own backward, autograd reuses the
intermediates: two products per step, as ``torch.einsum`` (which is a chain of ``bmm``) does.
The intermediates are kept for the backward, as torch keeps them.

Only plans whose operands all have the dtype they compute in go step by step (a float16
contraction accumulates in float32 across the whole plan, and mixed dtypes are promoted at
once; steps would round in between), and only when no ``...`` axis broadcasts (a pairwise
equation binds its label sizes strictly).

>>> import torch
>>> from ...call import make_call
>>> from .backend import einsum
>>> a, b, c = (torch.ones(2, 2, requires_grad=True) for _ in range(3))
>>> out = einsum(make_call("ij,jk,kl->il", a, b, c))
>>> out.grad_fn.name()                      # the last step's function
'EinsumFunctionBackward'
>>> out.sum().backward(); a.grad.tolist()
[[4.0, 4.0], [4.0, 4.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ...call import EinsumCall
from ..numpy.steps import Plan

__all__ = ["by_steps", "runs_by_steps"]


def runs_by_steps(plan: Plan, call: EinsumCall) -> bool:
    """Whether the call's graph is built step by step (see the module's docstring): every
    operand already in the dtype the plan computes in (a step of lower-precision operands
    would round where the whole plan does not)."""
    return (
        len(plan.path) > 1
        and call.dtype is None
        and call.out is None
        and plan.compute_dtype == plan.result_dtype
        and all(d == plan.result_dtype for d in plan.dtypes)
        and not any(plan.spec.stretched)
    )


def by_steps(
    plan: Plan,
    call: EinsumCall,
    tensors: Sequence[torch.Tensor],
    einsum: Callable[[EinsumCall], torch.Tensor],
) -> torch.Tensor:
    """The result, each path step one ``einsum`` call of its own (which builds its graph
    where an operand requires grad)."""
    spec = plan.spec
    terms, operands = list(spec.inputs), list(tensors)
    optimize = "auto" if isinstance(call.optimize, (list, tuple)) else call.optimize
    for n, contraction in enumerate(plan.path):
        picked = sorted(contraction, reverse=True)
        step_terms = [terms.pop(i) for i in picked]
        step_operands = [operands.pop(i) for i in picked]
        if n == len(plan.path) - 1:
            output = spec.output
        else:
            kept = set(spec.output).union(*terms)
            output = tuple(dict.fromkeys(x for term in step_terms for x in term if x in kept))
        step = EinsumCall(
            key=("sublists", tuple(step_terms), output),
            operands=tuple(step_operands),
            optimize=optimize,
            memory_limit=call.memory_limit,
        )
        terms.append(output)
        operands.append(einsum(step))
    (result,) = operands
    return result
