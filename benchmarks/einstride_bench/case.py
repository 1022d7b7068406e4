"""What one benchmark case is: an equation, how to make its operands, and its targets.

>>> case = Case("tiny matmul", "ij,jk->ik", dense(np.float64, [(4, 4), (4, 4)]))
>>> [op.shape for op in case.operands(quick=True)]
[(4, 4), (4, 4)]
>>> case.targets[0].describe()
'<= 1.1x the fastest peer'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import DTypeLike, NDArray

__all__ = [
    "FASTEST_PEER",
    "Array",
    "Case",
    "Maker",
    "Operands",
    "Prepare",
    "Skip",
    "Target",
    "Thunk",
    "dense",
    "viewed",
]

Array = NDArray[Any]
Operands = tuple[Array, ...]
Thunk = Callable[[], object]
Maker = Callable[[np.random.Generator, bool], Operands]
Shape = tuple[int, ...]


class Skip(Exception):
    """Raised by a contender's ``prepare`` when it does not apply to a case; says why."""


@dataclass(frozen=True)
class Target:
    """A goal for the subject on one case.

    ``kind`` is ``"fastest"`` (subject time / fastest peer's time <= ``limit``),
    ``"peer"`` (subject time / the named ``peer``'s time <= ``limit``) or ``"matmul"``
    (numpy.matmul's time on the same data / subject time >= ``limit``).

    >>> Target("peer", 2.0, "numpy.einsum").describe()
    '<= 2x numpy.einsum'
    >>> Target("matmul", 0.9).describe()
    '>= 90% of numpy.matmul'
    """

    kind: Literal["fastest", "peer", "matmul"]
    limit: float
    peer: str = ""

    def describe(self) -> str:
        """The target as a short phrase for the report."""
        if self.kind == "matmul":
            return f">= {self.limit:.0%} of numpy.matmul"
        against = "the fastest peer" if self.kind == "fastest" else self.peer
        return f"<= {self.limit:g}x {against}"


FASTEST_PEER = Target("fastest", 1.1)

# A contender's setup: given a case and its operands, return the call to time.
Prepare = Callable[["Case", Operands], Thunk]


@dataclass(frozen=True)
class Case:
    """One benchmark case.

    ``kind`` says how the subject runs it: ``"einsum"`` (``einsum(equation, *ops)``),
    ``"expression"`` (a prebuilt ``contract_expression`` called on the operands) or
    ``"handwritten"`` (the subject runs ``einsum``, its peers are the case's own
    ``handwritten`` NumPy functions, used when no library peer can do the equation).
    ``matmul`` builds numpy.matmul on the same data, for GEMM-shaped cases;
    ``reference`` overrides the float64 ``numpy.einsum`` oracle.
    """

    name: str
    equation: str
    make: Maker
    group: str = "contraction"
    kind: Literal["einsum", "expression", "handwritten"] = "einsum"
    matmul: Callable[[Operands], Thunk] | None = None
    handwritten: Mapping[str, Prepare] = field(default_factory=dict)
    reference: Callable[[Operands], Array] | None = None
    targets: tuple[Target, ...] = (FASTEST_PEER,)

    def operands(self, quick: bool, seed: int = 0) -> Operands:
        """The operands at full or quick size, the same for every contender."""
        return self.make(np.random.default_rng(seed), quick)


def _random(rng: np.random.Generator, shape: Shape, dtype: DTypeLike) -> Array:
    values = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def dense(dtype: DTypeLike, full: Sequence[Shape], quick: Sequence[Shape] | None = None) -> Maker:
    """A maker of C-contiguous random operands with the given shapes (quick ones if given).

    >>> ops = dense(np.float32, [(8, 2)], [(2, 2)])(np.random.default_rng(0), True)
    >>> ops[0].shape, ops[0].dtype
    ((2, 2), dtype('float32'))
    """

    def make(rng: np.random.Generator, quick_mode: bool) -> Operands:
        shapes = quick if quick_mode and quick is not None else full
        return tuple(_random(rng, tuple(shape), dtype) for shape in shapes)

    return make


def viewed(base: Maker, view: Callable[[Operands], Operands]) -> Maker:
    """A maker that hands out views (transposed, strided, ...) of ``base``'s operands.

    >>> make = viewed(dense(np.float64, [(4, 6)]), lambda ops: (ops[0][::2, ::3].T,))
    >>> op = make(np.random.default_rng(0), False)[0]
    >>> op.shape, op.strides, op.base is not None
    ((2, 2), (24, 96), True)
    """

    def make(rng: np.random.Generator, quick_mode: bool) -> Operands:
        return view(base(rng, quick_mode))

    return make
