"""The adapter (records.py): every NumPy plan step becomes one torch op, and any NumPy plan
runs on torch -- the fused plans the torch backend never asks for included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import einstride as es
from einstride.engine.backends.numpy.options import PlannerOptions
from einstride.engine.backends.numpy.plan import build_plan
from einstride.engine.backends.torch.dtypes import numpy_dtype
from einstride.engine.backends.torch.execute import compile_program
from einstride.engine.backends.torch.operands import byte_strides
from einstride.engine.backends.torch.plan import planner_options
from einstride.engine.backends.torch.records import (
    CopyOp,
    FusedOp,
    MatmulOp,
    MultiplyOp,
    ReduceOp,
    ViewOp,
    translate,
)

KINDS = {
    "diagonal": ViewOp,
    "broadcast": ViewOp,
    "reduce": ReduceOp,
    "copy": CopyOp,
    "contract": MatmulOp,
    "batch": MultiplyOp,
    "fused": FusedOp,
}

CASES: list[tuple[str, list[torch.Tensor]]] = [
    ("ii,ij->j", [torch.randn(3, 3), torch.randn(3, 4)]),
    ("i,ij->iij", [torch.randn(3), torch.randn(3, 4)]),
    ("ijk->i", [torch.randn(2, 3, 4).permute(2, 0, 1)]),
    ("ikj,jkl->il", [torch.randn(4, 5, 3), torch.randn(3, 5, 2)]),
    ("...i,...i->...", [torch.randn(2, 1, 3), torch.randn(4, 3)]),
    ("bij,bjk->kib", [torch.randn(2, 3, 4), torch.randn(2, 4, 5)]),
    ("ab,ab->ab", [torch.randn(3, 4), torch.randn(3, 4).T.contiguous().T]),
    (
        "iij,jk->ik",
        [torch.randn(3, 3, 2, dtype=torch.float16), torch.randn(2, 4, dtype=torch.float16)],
    ),
    ("ij,jk,kl->ilil", [torch.randn(2, 3), torch.randn(3, 4), torch.randn(4, 2)]),
]


def _plan(equation: str, tensors: list[torch.Tensor], fuse: bool, out: Any = None) -> Any:
    spec = es.parse_equation(equation, *[tuple(t.shape) for t in tensors])
    dtypes = [numpy_dtype(t.dtype, "operand") for t in tensors]
    strides = [byte_strides(t.stride(), t.dtype) for t in tensors]
    out_facts = (
        None
        if out is None
        else (byte_strides(out.stride(), out.dtype), numpy_dtype(out.dtype, "out"))
    )
    options = PlannerOptions(threads=1) if fuse else planner_options()
    return build_plan(spec, dtypes, strides, out=out_facts, options=options)


def _expected(equation: str, tensors: list[torch.Tensor]) -> np.ndarray:
    return np.asarray(es.einsum(equation, *[t.double().numpy() for t in tensors]))


@pytest.mark.parametrize(("equation", "tensors"), CASES, ids=[e for e, _ in CASES])
@pytest.mark.parametrize("fuse", [False, True])
def test_every_plan_runs_on_torch(equation: str, tensors: list[torch.Tensor], fuse: bool) -> None:
    plan = _plan(equation, tensors, fuse)
    program = translate(plan)
    assert [type(op) for op in program.steps] == [KINDS[step.kind] for step in plan.steps]
    result = compile_program(program)(tensors, None)
    assert result.dtype == tensors[0].dtype
    tol = 1e-2 if result.dtype == torch.float16 else 1e-5
    np.testing.assert_allclose(
        result.double().numpy(), _expected(equation, tensors), rtol=tol, atol=tol
    )


def test_the_planner_fuses_tiny_problems_and_the_fused_op_writes_into_out() -> None:
    tensors = [torch.randn(3, 3, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)]
    out = torch.zeros(4, 3, 3, dtype=torch.float64).permute(1, 2, 0)  # 'iij' output
    plan = _plan("ii,ij->iij", tensors, True, out)
    program = translate(plan)
    assert [type(op) for op in program.steps] == [FusedOp]
    assert compile_program(program)(tensors, out) is out
    np.testing.assert_allclose(out.numpy(), _expected("ii,ij->iij", tensors), rtol=1e-12)
