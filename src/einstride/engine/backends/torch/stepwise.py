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
from typing import Any

import torch

from ..numpy.peak import TEMPORARY
from ..numpy.steps import BatchStep, ContractStep, FusedStep, Plan

__all__ = ["by_steps", "kept_peak", "runs_by_steps"]

Step = Callable[[Any, tuple[torch.Tensor, ...]], torch.Tensor]
"""Runs one step: ``step(equation key, operands)``."""


def runs_by_steps(plan: Plan) -> bool:
    """Whether a call on ``plan`` (with no ``dtype=`` or ``out=``) builds its graph step by
    step (see the module's docstring): every operand already in the dtype the plan
    computes in (a step of lower-precision operands would round where the whole plan does
    not), and no spread result (its steps read operands at index 0 of broadcast axes)."""
    return (
        plan.spread is None
        and len(plan.path) > 1
        and plan.compute_dtype == plan.result_dtype
        and all(d == plan.result_dtype for d in plan.dtypes)
        and not any(plan.spec.stretched)
    )


def kept_peak(plan: Plan) -> int:
    """The bytes a call run by steps under autograd holds at its end: every step's result
    (each intermediate is kept for the backward, as torch keeps them) and the output, plus
    the largest temporary of one step -- where :func:`.peak.plan_peak` frees an
    intermediate after its last reader (a review: a limit exceeded silently, 720,000 bytes
    under 640,000)."""
    kept = sum(alloc.nbytes for alloc in plan.output.allocs)
    temporary = 0
    for step in plan.steps:
        for alloc in step.allocs:
            if alloc.what == TEMPORARY:
                temporary = max(temporary, alloc.nbytes)
            else:
                kept += alloc.nbytes
    return kept + temporary


def by_steps(
    plan: Plan, memo: dict[Any, Any], tensors: Sequence[torch.Tensor], step: Step
) -> torch.Tensor:
    """The result, each path step one ``step`` call of its own (which builds its graph
    where an operand requires grad); the steps' equations are made once per plan and kept
    in ``memo``."""
    keys = memo.get("steps")
    if keys is None:
        keys = memo["steps"] = _step_keys(plan)
    operands = list(tensors)
    for key, entry in keys:
        step_operands = tuple([operands[i] for i in entry])
        for i in sorted(entry, reverse=True):
            del operands[i]
        operands.append(step(key, step_operands))
    (result,) = operands
    return result


def _step_keys(plan: Plan) -> tuple[tuple[Any, tuple[int, ...]], ...]:
    """Each path step's equation key (a sublist key: the labels are ids) and the positions
    of its operands in the list of those still to contract, in the path entry's order: the
    plan's (:func:`...spec.walk.walk_path`), so that each step is the product the plan
    runs and the value does not depend on ``requires_grad`` (a review: popped in reverse,
    the steps ran the transposed products, float32 results differed by rounding)."""
    spec = plan.spec
    terms = list(spec.inputs)
    found = []
    orders = _product_labels(plan)
    for n, contraction in enumerate(plan.path):
        entry = tuple(contraction)
        step_terms = [terms[i] for i in entry]
        for i in sorted(entry, reverse=True):
            del terms[i]
        kept = set(spec.output).union(*terms)
        if n == len(plan.path) - 1:
            output = spec.output
        elif orders is not None:  # the plan's own product, laid out as the plan lays it
            output = tuple(x for x in orders[n] if x in kept)  # partial products: summed
        else:
            output = tuple(dict.fromkeys(x for term in step_terms for x in term if x in kept))
        found.append((("sublists", tuple(step_terms), output), entry))
        terms.append(output)
    return tuple(found)


def _product_labels(plan: Plan) -> list[tuple[int, ...]] | None:
    """The labels of each path step's product as the plan lays it out (its matmul's or
    loop's result register), where every path step is one product of two operands; None
    otherwise (a fused loop, a step of three or more).  Each step's einsum then asks for
    that order, and its plan runs the product the whole plan runs: the value is the same
    with and without a graph (a review found float32 results differing by rounding)."""
    if any(len(entry) != 2 for entry in plan.path):
        return None
    products = [step for step in plan.steps if isinstance(step, (ContractStep, BatchStep))]
    if len(products) != len(plan.path) or any(isinstance(s, FusedStep) for s in plan.steps):
        return None
    return [tuple(step.geometry.labels) for step in products]
