"""The plan report on torch: the NumPy plan's report (the same plan runs), its kernels named
as the torch ops that run them, and one line per step saying which torch call it is.

>>> import torch
>>> from .operands import facts_of
>>> from .plan import entry_for
>>> a = torch.ones(4, 3).T
>>> text = format_torch_plan(entry_for("ij,jk->ik", facts_of([a, a.T]), None, None, "auto"),
...                          a.device)
>>> print(text.splitlines()[0])
einsum 'ij,jk->ik' on torch (cpu)  (labels: ij,jk->ik)
>>> print(text.splitlines()[-1])
    step 1 (contract): torch.mm over the views, into a new tensor: the result
"""

from __future__ import annotations

import torch

from ...._compat import assert_never
from ..numpy.report import format_plan
from .plan import Entry
from .records import CopyOp, FusedOp, MatmulOp, MultiplyOp, ReduceOp, TorchOp, ViewOp, Write

__all__ = ["format_torch_plan"]

# the NumPy report names NumPy's kernels; on torch these run instead
_KERNELS = (
    ("NumPy's sum-of-products loop (an outer product)", "a broadcast torch.mul (an outer product)"),
    ("NumPy's strided sum-of-products loop", "torch.sum"),
    ("numpy.add.reduce", "torch.sum"),
    ("one batched matmul (BLAS)", "one batched matrix product (torch.mm/bmm)"),
)

_WRITES = {
    Write.NEW: "into a new tensor",
    Write.RETURN: "into a new tensor: the result",
    Write.INTO: "straight into the output",
    Write.TEMP: "into a temporary, then copied (cast) into the output",
}


def format_torch_plan(entry: Entry, device: torch.device) -> str:
    """The report of ``entry`` run on ``device``."""
    lines = []
    for line in format_plan(entry.plan).splitlines():
        if line.lstrip().startswith("split over"):
            continue  # NumPy's own threading of memory-bound steps; torch threads itself
        for numpy_words, torch_words in _KERNELS:
            line = line.replace(numpy_words, torch_words)
        lines.append(line)
    head, sep, rest = lines[0].partition("  (labels")
    lines[0] = f"{head} on torch ({device}){sep}{rest}"
    lines.append(f"  on torch: result {entry.result} on {device}; each step runs as")
    program = entry.program
    for k, (kind, op) in enumerate(zip(program.kinds, program.steps)):
        lines.append(f"    step {k + 1} ({kind}): {_describe(op)}")
    if not entry.program.steps:
        lines.append("    (no steps: a view of operand 0)")
    return "\n".join(lines)


def _describe(op: TorchOp) -> str:
    match op:
        case ViewOp():
            return f"torch.as_strided (a view, element strides {op.strides})"
        case ReduceOp():
            kernel = "torch.any" if op.dtype.kind == "b" else f"torch.sum in {op.dtype}"
            return f"{kernel} over dims {op.axes}, {_WRITES[op.to.write]}"
        case CopyOp():
            return f"Tensor.copy_ ({op.dtype}), {_WRITES[op.to.write]}"
        case MatmulOp():
            kernel = (
                "torch.mm"
                if len(op.out_shape) == 2
                else ("torch.bmm (batch dims folded where their strides allow, else looped)")
            )
            return f"{kernel} over the views, {_WRITES[op.to.write]}"
        case MultiplyOp():
            return f"torch.mul of broadcast views, {_WRITES[op.to.write]}"
        case FusedOp():
            return f"one broadcast torch.mul and one sum, {_WRITES[op.to.write]}"
        case _:
            assert_never(op)
