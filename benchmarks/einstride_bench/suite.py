"""The benchmark suite: the workloads einstride is measured on (issue 5).

Full sizes are chosen so that the whole run takes a few minutes on two cores and
numpy.einsum's unoptimized loop still finishes where it takes part; quick sizes keep
``make bench-quick`` well under two minutes.

>>> cases = default_cases()
>>> len({case.name for case in cases}) == len(cases)
True
>>> all(len(case.operands(quick=True)) >= 1 for case in cases[-3:])
True
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import replace
from typing import Literal

import numpy as np

from .case import (
    FASTEST_PEER,
    Array,
    Case,
    Maker,
    Operands,
    Prepare,
    Target,
    Thunk,
    dense,
    viewed,
)
from .contenders import NUMPY, TORCH

__all__ = ["default_cases", "expand_diagonal_reference", "handwritten_expansions", "torch_cases"]

GEMM_TARGETS = (FASTEST_PEER, Target("matmul", 0.9))
F32, F64 = np.float32, np.float64


def _matmul(ops: Operands) -> Thunk:
    return lambda: np.matmul(ops[0], ops[1])


def _matmul_transposed_right(ops: Operands) -> Thunk:
    right = ops[1].swapaxes(-1, -2)
    return lambda: np.matmul(ops[0], right)


def _gemm(name: str, equation: str, make: Maker, matmul: Callable[[Operands], Thunk]) -> Case:
    return Case(name, equation, make, "gemm", matmul=matmul, targets=GEMM_TARGETS)


def _gemm_cases() -> list[Case]:
    bmm_full, bmm_quick = [(64, 128, 128)] * 2, [(32, 64, 64)] * 2
    scores = dense(F32, [(4, 8, 256, 64)] * 2, [(2, 4, 128, 64)] * 2)
    values = dense(F32, [(4, 8, 256, 256), (4, 8, 256, 64)], [(2, 4, 128, 128), (2, 4, 128, 64)])
    mlp = dense(F32, [(256, 1024), (1024, 1024)], [(128, 512), (512, 512)])
    return [
        _gemm("batched matmul f32", "bij,bjk->bik", dense(F32, bmm_full, bmm_quick), _matmul),
        _gemm("batched matmul f64", "bij,bjk->bik", dense(F64, bmm_full, bmm_quick), _matmul),
        _gemm("attention scores", "bhqd,bhkd->bhqk", scores, _matmul_transposed_right),
        _gemm("attention values", "bhqk,bhkd->bhqd", values, _matmul),
        _gemm("MLP layer", "bi,oi->bo", mlp, _matmul_transposed_right),
    ]


def _transposed(ops: Operands) -> Operands:
    return ops[0].T, ops[1].T


def _every_other(ops: Operands) -> Operands:
    return ops[0][::2, ::2], ops[1][::2, ::2]


def _view_cases() -> list[Case]:
    square = dense(F64, [(768, 768)] * 2, [(256, 256)] * 2)
    doubled = dense(F64, [(1024, 1024)] * 2, [(384, 384)] * 2)
    return [
        Case(
            "matmul, transposed views",
            "ij,jk->ik",
            viewed(square, _transposed),
            "views",
            matmul=_matmul,
        ),
        Case(
            "matmul, strided views",
            "ij,jk->ik",
            viewed(doubled, _every_other),
            "views",
            matmul=_matmul,
        ),
        Case(
            "batched matmul, permuted output",
            "bij,bjk->kib",
            dense(F64, [(64, 128, 128)] * 2, [(32, 64, 64)] * 2),
            "views",
        ),
    ]


def _identical_rows(ops: Operands) -> Operands:
    return np.broadcast_to(ops[0][:1], ops[0].shape), ops[1]


def _identical_columns(ops: Operands) -> Operands:
    return np.broadcast_to(ops[0][:, :1], ops[0].shape), ops[1]


def _broadcast_cases() -> list[Case]:
    """Broadcast operands (``np.broadcast_to``'s zero strides): a matrix of identical rows
    (its result the same along them: spread), and of identical columns, as the gradient of
    a row sum is (the summed label it broadcasts dropped)."""
    square = dense(F64, [(1024, 1024)] * 2, [(256, 256)] * 2)
    rows, columns = viewed(square, _identical_rows), viewed(square, _identical_columns)
    return [
        Case("identical rows times a matrix", "ij,jk->ik", rows, "views"),
        Case("identical columns times a matrix", "ik,jk->ij", columns, "views"),
    ]


def _contraction_cases() -> list[Case]:
    chain = [(600, 40), (40, 600), (600, 40), (40, 600)]
    quick_chain = [(200, 12), (12, 200), (200, 12), (12, 200)]
    return [
        Case(
            "permuted contraction",
            "abcd,dcbe->ae",
            dense(F64, [(64, 24, 24, 24), (24, 24, 24, 64)], [(32, 16, 16, 16), (16, 16, 16, 32)]),
        ),
        Case(
            "bilinear form",
            "bi,ioj,bj->bo",
            dense(F64, [(128, 64), (64, 64, 64), (128, 64)], [(32, 32), (32, 32, 32), (32, 32)]),
        ),
        Case("matrix chain, 4 thin", "ij,jk,kl,lm->im", dense(F64, chain, quick_chain)),
        Case(
            "matrix chain, 3 square", "ij,jk,kl->il", dense(F64, [(384, 384)] * 3, [(128, 128)] * 3)
        ),
        Case(
            "5-tensor network",
            "ea,fb,abcd,gc,hd->efgh",
            dense(
                F64,
                [(24, 24), (24, 24), (24,) * 4, (24, 24), (24, 24)],
                [(12, 12), (12, 12), (12,) * 4, (12, 12), (12, 12)],
            ),
        ),
    ]


def _unary_cases() -> list[Case]:
    cube_full, cube_quick = [(256, 256, 128)], [(128, 128, 64)]
    square_full, square_quick = [(2048, 2048)], [(512, 512)]
    return [
        Case("reduction to first axis", "ijk->i", dense(F64, cube_full, cube_quick), "reduction"),
        Case("reduction to last axis", "ijk->k", dense(F64, cube_full, cube_quick), "reduction"),
        Case("diagonal", "ii->i", dense(F64, square_full, square_quick), "diagonal"),
        Case("trace", "ii->", dense(F64, square_full, square_quick), "diagonal"),
        Case("batched trace", "bii->b", dense(F64, [(256, 128, 128)], [(64, 64, 64)]), "diagonal"),
    ]


def _elementwise_cases() -> list[Case]:
    return [
        Case(
            "outer product",
            "i,j->ij",
            dense(F64, [(2048,), (2048,)], [(512,), (512,)]),
            "elementwise",
        ),
        Case(
            "Hadamard product",
            "ij,ij->ij",
            dense(F64, [(2048, 2048)] * 2, [(512, 512)] * 2),
            "elementwise",
        ),
        Case(
            "diagonal expansion",
            "ij->iij",
            dense(F64, [(256, 64)], [(128, 32)]),
            "expansion",
            kind="handwritten",
            handwritten=handwritten_expansions(),
            reference=expand_diagonal_reference,
        ),
    ]


def _tiny_cases() -> list[Case]:
    within_2x = (Target("peer", 2.0, NUMPY),)
    return [
        Case("tiny matmul 4x4", "ij,jk->ik", dense(F64, [(4, 4)] * 2), "tiny", targets=within_2x),
        Case(
            "tiny chain 3x 8x8", "ij,jk,kl->il", dense(F64, [(8, 8)] * 3), "tiny", targets=within_2x
        ),
        Case(
            "tiny contract_expression 4x4",
            "ij,jk->ik",
            dense(F64, [(4, 4)] * 2),
            "tiny",
            kind="expression",
            targets=(Target("peer", 1.3, NUMPY),),
        ),
    ]


def torch_cases() -> list[Case]:
    """The GEMM-shaped, view, permuted, n-ary, memory-bound and tiny cases again on torch CPU
    tensors (same memory and strides), einstride against torch.einsum, forward and forward
    plus backward.

    >>> names = [case.name for case in torch_cases()]
    >>> "torch: matmul, transposed views" in names, "torch fwd+bwd: trace" in names
    (True, True)
    """
    library = [
        case
        for case in (
            *_gemm_cases(),
            *_view_cases(),
            *_contraction_cases(),
            *_unary_cases(),
            *_elementwise_cases(),
            *_tiny_cases(),
        )
        if case.kind == "einsum"
    ]
    kinds: tuple[tuple[Literal["torch", "torch-backward"], str], ...] = (
        ("torch", "torch"),
        ("torch-backward", "torch fwd+bwd"),
    )
    found = []
    for kind, label in kinds:
        for case in library:
            targets = (Target("peer", 2.0, TORCH),) if case.group == "tiny" else (FASTEST_PEER,)
            found.append(
                replace(case, name=f"{label}: {case.name}", kind=kind, matmul=None, targets=targets)
            )
    return found


def default_cases() -> tuple[Case, ...]:
    """Every case of the suite, in report order (the torch cases where torch is installed)."""
    return (
        *_gemm_cases(),
        *_view_cases(),
        *_broadcast_cases(),
        *_contraction_cases(),
        *_unary_cases(),
        *_elementwise_cases(),
        *_tiny_cases(),
        *(torch_cases() if importlib.util.find_spec("torch") is not None else ()),
    )


def expand_diagonal_reference(ops: Operands) -> Array:
    """``ij->iij`` by a plain loop: ``out[i, i, :] = x[i, :]``, zero elsewhere.

    >>> expand_diagonal_reference((np.array([[1, 2], [3, 4]]),))[:, :, 1].tolist()
    [[2, 0], [0, 4]]
    """
    x = ops[0]
    out = np.zeros((x.shape[0], *x.shape), x.dtype)
    for i in range(x.shape[0]):
        out[i, i, :] = x[i, :]
    return out


def _into_diagonal_view(case: Case, ops: Operands) -> Thunk:
    x = ops[0]
    n, m = x.shape

    def run() -> Array:
        out = np.zeros((n, n, m), x.dtype)
        out.reshape(n * n, m)[:: n + 1] = x  # rows (i, i) of the flattened (i, i') axes
        return out

    return run


def _into_fancy_index(case: Case, ops: Operands) -> Thunk:
    x = ops[0]
    n, m = x.shape
    rows = np.arange(n)

    def run() -> Array:
        out = np.zeros((n, n, m), x.dtype)
        out[rows, rows] = x
        return out

    return run


def _identity_mask(case: Case, ops: Operands) -> Thunk:
    x = ops[0]
    eye = np.eye(x.shape[0], dtype=x.dtype)
    return lambda: eye[:, :, None] * x[:, None, :]


def handwritten_expansions() -> dict[str, Prepare]:
    """The best hand-written NumPy ways to compute ``ij->iij`` (numpy.einsum cannot).

    >>> x = np.arange(6.0).reshape(3, 2)
    >>> case = default_cases()[0]
    >>> all(np.array_equal(prepare(case, (x,))(), expand_diagonal_reference((x,)))
    ...     for prepare in handwritten_expansions().values())
    True
    """
    return {
        "zeros + diagonal view": _into_diagonal_view,
        "zeros + fancy index": _into_fancy_index,
        "identity mask product": _identity_mask,
    }
