"""The tensor networks of the network section: random regular ones and structured ones.

Every network is closed or nearly so (a scalar or a small output), written with
``opt_einsum.get_symbol`` labels (so any number of labels), with fixed seeds. Operand
entries are positive and scaled so that the contracted value is of order one: each tensor's
entries are uniform in ``[0, 2 / sqrt(size))``, which keeps sums of thousands of products
within float64 and lets every peer's result be compared with a relative tolerance.

>>> net = mps_norm(sites=4, bond=3)
>>> net.equation
'ae,ebf,fcg,gd,ah,hbi,icj,jd->'
>>> net.tensors, net.labels, net.shapes[1]
(8, 10, (3, 2, 3))
>>> bool(0.1 < float(np.einsum(net.equation, *net.operands())) < 10)
True
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .case import Array, Operands
from .contenders import opt_einsum

__all__ = [
    "Network",
    "circuit",
    "default_networks",
    "grid",
    "mps_expectation",
    "mps_norm",
    "peps_norm",
    "random_regular",
    "tensor_train",
]

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Network:
    """A tensor network: an equation over any number of labels and its operand shapes."""

    name: str
    family: str
    equation: str
    shapes: tuple[Shape, ...]
    seed: int = 0

    @property
    def tensors(self) -> int:
        return len(self.shapes)

    @property
    def labels(self) -> int:
        return len(set(self.equation.replace(",", "").replace("->", "")))

    def operands(self) -> Operands:
        """Positive float64 operands, each scaled by ``1 / sqrt(its size)``."""
        rng = np.random.default_rng(self.seed)
        ops: list[Array] = []
        for shape in self.shapes:
            scale = 2.0 / math.sqrt(max(1, math.prod(shape)))
            ops.append(rng.random(shape) * scale)
        return tuple(ops)

    def ascii_equation(self) -> str | None:
        """The equation in the letters numpy.einsum and torch.einsum take (None past 52).

        >>> Network("x", "test", "αβ,βγ->αγ", ((2, 3), (3, 4))).ascii_equation()
        'ab,bc->ac'
        """
        labels = list(dict.fromkeys(self.equation.replace(",", "").replace("->", "")))
        if len(labels) > 52:
            return None
        letters = dict(zip(labels, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        return "".join(letters.get(ch, ch) for ch in self.equation)


class _Labels:
    """Fresh labels, in order: ``opt_einsum.get_symbol(0)``, ``(1)``, ..."""

    def __init__(self) -> None:
        self._count = itertools.count()

    def new(self) -> str:
        return str(opt_einsum.get_symbol(next(self._count)))

    def many(self, n: int) -> list[str]:
        return [self.new() for _ in range(n)]


def _equation(terms: Sequence[str], output: str = "") -> str:
    return ",".join(terms) + "->" + output


def random_regular(tensors: int, regularity: int, d_min: int, d_max: int, seed: int) -> Network:
    """``opt_einsum.testing.rand_equation``: a random regular graph, closed, bond
    dimensions drawn in ``[d_min, d_max]``."""
    testing = importlib_testing()
    equation, shapes = testing.rand_equation(
        tensors, regularity, seed=seed, d_min=d_min, d_max=d_max
    )
    name = f"random {tensors} tensors, degree {regularity}, bonds {d_min}-{d_max}"
    return Network(name, "random regular", equation, tuple(map(tuple, shapes)), seed)


def importlib_testing() -> Any:
    """``opt_einsum.testing`` (a submodule that ``import opt_einsum`` does not load)."""
    import importlib

    return importlib.import_module("opt_einsum.testing")


def _mps_row(labels: _Labels, physical: Sequence[str], bond: int, phys: int
             ) -> tuple[list[str], list[Shape]]:  # fmt: skip
    """An open-boundary MPS over the given physical labels."""
    bonds = labels.many(len(physical) - 1)
    terms, shapes = [], []
    for i, p in enumerate(physical):
        left = bonds[i - 1] if i > 0 else ""
        right = bonds[i] if i < len(bonds) else ""
        terms.append(left + p + right)
        shapes.append((bond,) * bool(left) + (phys,) + (bond,) * bool(right))
    return terms, shapes


def mps_norm(sites: int, bond: int, phys: int = 2) -> Network:
    """``<psi|psi>`` of an open-boundary MPS (ket and bra rows of ``sites`` tensors)."""
    labels = _Labels()
    physical = labels.many(sites)
    ket, ket_shapes = _mps_row(labels, physical, bond, phys)
    bra, bra_shapes = _mps_row(labels, physical, bond, phys)
    terms, shapes = ket + bra, ket_shapes + bra_shapes
    return Network(f"MPS norm, {sites} sites, bond {bond}", "MPS", _equation(terms),
                   tuple(shapes))  # fmt: skip


def mps_expectation(sites: int, bond: int, mpo_bond: int, phys: int = 2) -> Network:
    """``<psi|W|psi>``: an MPS, a matrix product operator (bond ``mpo_bond``) and the MPS."""
    labels = _Labels()
    up, down = labels.many(sites), labels.many(sites)
    ket, ket_shapes = _mps_row(labels, up, bond, phys)
    bra, bra_shapes = _mps_row(labels, down, bond, phys)
    links = labels.many(sites - 1)
    mpo, mpo_shapes = [], []
    for i in range(sites):
        left = links[i - 1] if i > 0 else ""
        right = links[i] if i < len(links) else ""
        mpo.append(left + up[i] + down[i] + right)
        mpo_shapes.append((mpo_bond,) * bool(left) + (phys, phys) + (mpo_bond,) * bool(right))
    terms, shapes = ket + mpo + bra, ket_shapes + mpo_shapes + bra_shapes
    name = f"MPS <psi|W|psi>, {sites} sites, bond {bond}, MPO bond {mpo_bond}"
    return Network(name, "MPS", _equation(terms), tuple(shapes))


def tensor_train(sites: int, size: int, rank: int, op_rank: int) -> Network:
    """``<x|A|x>`` of a tensor-train vector (mode ``size``, rank ``rank``) and a TT matrix
    (rank ``op_rank``): an MPS expectation value with a large physical dimension."""
    net = mps_expectation(sites, rank, op_rank, phys=size)
    name = f"tensor train <x|A|x>, {sites} cores, mode {size}, ranks {rank}/{op_rank}"
    return Network(name, "tensor train", net.equation, net.shapes)


def grid(rows: int, cols: int, bond: int) -> Network:
    """A closed 2-D lattice: one tensor per site, a bond to each neighbour, no open leg."""
    labels = _Labels()
    right = {(r, c): labels.new() for r in range(rows) for c in range(cols - 1)}
    down = {(r, c): labels.new() for r in range(rows - 1) for c in range(cols)}
    terms = []
    for r, c in itertools.product(range(rows), range(cols)):
        legs = [right.get((r, c - 1)), right.get((r, c)), down.get((r - 1, c)), down.get((r, c))]
        terms.append("".join(leg for leg in legs if leg))
    shapes = tuple((bond,) * len(term) for term in terms)
    return Network(f"closed {rows}x{cols} grid, bond {bond}", "grid", _equation(terms), shapes)


def peps_norm(rows: int, cols: int, bond: int, phys: int = 2) -> Network:
    """``<psi|psi>`` of a PEPS: a ket lattice and a bra lattice of ``rows x cols`` sites
    (bonds to the neighbours of each), joined site by site by a physical label.

    >>> net = peps_norm(2, 2, 3)
    >>> net.tensors, net.labels, net.shapes[0]
    (8, 12, (3, 3, 2))
    """
    labels = _Labels()
    physical = labels.many(rows * cols)
    terms: list[str] = []
    shapes: list[Shape] = []
    for _layer in ("ket", "bra"):
        right = {(r, c): labels.new() for r in range(rows) for c in range(cols - 1)}
        down = {(r, c): labels.new() for r in range(rows - 1) for c in range(cols)}
        for r, c in itertools.product(range(rows), range(cols)):
            legs = [right.get((r, c - 1)), right.get((r, c)), down.get((r - 1, c)),
                    down.get((r, c))]  # fmt: skip
            bonds = "".join(leg for leg in legs if leg)
            terms.append(bonds + physical[r * cols + c])
            shapes.append((bond,) * len(bonds) + (phys,))
    name = f"PEPS norm, {rows}x{cols}, bond {bond}"
    return Network(name, "PEPS", _equation(terms), tuple(shapes))


def circuit(qubits: int, depth: int, seed: int) -> Network:
    """``<0...0|U|0...0>`` of a brickwork circuit: ``depth`` layers of two-qubit gates
    (random pairs of neighbours, shape (2, 2, 2, 2)), product states at both ends."""
    labels = _Labels()
    rng = random.Random(seed)
    wires = labels.many(qubits)
    terms: list[str] = list(wires)  # the initial |0> of each qubit
    for layer in range(depth):
        start = layer % 2
        for q in range(start, qubits - 1, 2):
            if rng.random() < 0.2:
                continue  # an idle pair: the brickwork is not perfectly regular
            a, b = labels.new(), labels.new()
            terms.append(wires[q] + wires[q + 1] + a + b)
            wires[q], wires[q + 1] = a, b
    terms += wires  # the final <0| of each qubit
    shapes = tuple((2,) * len(term) for term in terms)
    name = f"circuit, {qubits} qubits, depth {depth}"
    return Network(name, "circuit", _equation(terms), shapes, seed)


def _quick_networks() -> list[Network]:
    return [
        random_regular(10, 3, 2, 8, seed=1),
        random_regular(20, 3, 2, 8, seed=2),
        random_regular(40, 3, 2, 4, seed=3),
        random_regular(60, 3, 2, 3, seed=4),
        mps_norm(30, 32),
        grid(6, 6, 3),
        tensor_train(12, 4, 8, 4),
        circuit(10, 8, seed=5),
    ]


def _full_networks() -> list[Network]:
    return [
        random_regular(10, 3, 2, 8, seed=1),
        random_regular(10, 4, 2, 8, seed=1),
        random_regular(20, 3, 2, 8, seed=2),
        random_regular(20, 4, 2, 8, seed=2),
        random_regular(40, 3, 2, 8, seed=3),
        random_regular(60, 3, 2, 6, seed=4),
        random_regular(60, 3, 2, 8, seed=8),  # a contraction of seconds: the path decides
        random_regular(100, 3, 2, 4, seed=5),
        mps_norm(60, 64),
        mps_expectation(40, 32, 4),
        grid(6, 6, 4),
        grid(8, 8, 3),
        peps_norm(8, 8, 2),  # the search's spectral bisection: greedy's path is 9.4x the FLOPs
        tensor_train(24, 8, 16, 8),
        circuit(16, 12, seed=5),
        circuit(24, 16, seed=6),
    ]


def default_networks(quick: bool) -> tuple[Network, ...]:
    """The section's networks: a small set for ``--quick`` (the section in under two
    minutes), else the full set, some of whose contractions take seconds."""
    return tuple(_quick_networks() if quick else _full_networks())
