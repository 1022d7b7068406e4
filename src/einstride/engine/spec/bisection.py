"""Spectral bisection: contraction trees for networks laid out like a lattice.

Greedy merges the pair that grows the intermediates least *now*.  On a 2-D lattice (a PEPS
norm, a closed grid) that grows a front of open bonds along a diagonal, far longer than the
lattice's side, and the intermediates grow with it: greedy's path for the closed 8 x 8 grid
of bond 3 costs 4.9x the FLOPs of the one cotengra's hyper-optimizer finds in seconds.  A
lattice's good trees cut it into halves across its short side, and each half again
(nested dissection); the front is then one side long.

This finder places the operands by the two lowest non-trivial eigenvectors of the graph's
Laplacian (an operand per vertex, a shared label an edge weighing ``log2`` of its size):
on a lattice they are its two coordinates.  It halves the operands by the median along the
coordinate that cuts fewer bits (recursive coordinate bisection), down to blocks of
:data:`LEAF` operands, which greedy contracts with the block's boundary as their output.
Where the two eigenvalues are (nearly) equal, as on a square lattice, any rotation of the
pair is an eigenvector too: the rotation whose median cuts fewest bits is taken.

It runs where nearly every operand lies on a cycle of four and the graph is not long and
thin (:func:`lattice_like`: a random network has few such cycles, an MPS is a chain).
Where a block's boundary would hold more than ``max_bits`` (a network that passed the test
but is no lattice) the finder gives up (None), having spent little more than the
eigenvectors.

>>> from .costmodel import Problem
>>> rows = cols = 6                                            # a closed 6 x 6 grid, bond 4
>>> def bond(a, b):
...     return min(a, b) * rows * cols + max(a, b)
>>> site = lambda r, c: r * cols + c
>>> inputs = [
...     [bond(site(r, c), site(r2, c2)) for r2, c2 in ((r - 1, c), (r + 1, c), (r, c - 1),
...      (r, c + 1)) if 0 <= r2 < rows and 0 <= c2 < cols]
...     for r in range(rows) for c in range(cols)
... ]
>>> grid = Problem(inputs, (), [4] * (rows * cols) ** 2)
>>> tree = bisection_ssa(grid, max_bits=20.0)
>>> len(tree), tree[-1][1] == 2 * len(inputs) - 3            # a tree over all 36 operands
(35, True)
>>> bisection_ssa(grid, max_bits=8.0) is None                  # a half's boundary: 12 bits
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .costmodel import Problem
from .greedy import greedy_ssa

__all__ = ["LEAF", "SQUARE_SHARE", "bisection_ssa", "lattice_like"]

LEAF = 16
"""Blocks of at most this many operands are contracted by greedy (measured on closed grids
of 6 x 6 to 10 x 10: bisecting down to single operands gives paths the cost model rates
1.6-5x those of blocks of 16, whose boundaries greedy contracts toward)."""
SQUARE_SHARE = 0.9
"""The share of the operands on a cycle of four below which the graph is no lattice
(measured: every operand of a closed grid, an MPS or a tensor train; 0.5-0.6 of a
circuit's brickwork; 0.1-0.6 of random regular networks of degree 3, 0.5-0.96 of degree 4
at 17-40 tensors; those of degree 4 that pass are small, and the bisection stops on
them)."""
ANGLES = 12  # rotations tried in a (nearly) degenerate pair of eigenvectors
DEGENERATE = 0.05  # eigenvalues closer than this share of the larger are a degenerate pair

SSA = list[tuple[int, int]]


def lattice_like(problem: Problem) -> bool:
    """Whether the operands' graph looks like a lattice of two or more dimensions: at
    least :data:`SQUARE_SHARE` of the operands lie on a cycle of four (a random network
    has few such cycles, a circuit's brickwork misses them at its ends), and no operand is
    farther than ``2 * sqrt(n)`` bonds from the first (a chain, an MPS or a tensor train is
    ``n / 2`` long).  The test for running :func:`bisection_ssa`: a pass over the graph.

    >>> from .costmodel import Problem
    >>> square = Problem([(0, 1), (1, 2), (2, 3), (3, 0)], (), (3, 3, 3, 3))
    >>> ring = Problem([(k, (k + 1) % 12) for k in range(12)], (), (3,) * 12)
    >>> lattice_like(square), lattice_like(ring)
    (True, False)
    """
    n = len(problem.inputs)
    if n < 3:
        return False
    neighbours = _neighbours(_holders(problem), n)
    return _on_squares(neighbours) >= SQUARE_SHARE and _eccentricity(neighbours) <= 2 * n**0.5


def bisection_ssa(problem: Problem, max_bits: float) -> SSA | None:
    """A contraction tree of ``problem`` (SSA pairs, as :func:`.greedy.greedy_ssa`) by
    recursive bisection, or None where a block's boundary would hold more than
    ``max_bits`` bits (its intermediate more than ``2**max_bits`` elements) or the graph
    is not connected.  (Whether to run it: :func:`lattice_like`.)"""
    if len(problem.inputs) < 3:
        return None
    graph = _Graph(problem, _holders(problem))
    coords = graph.coordinates()
    if coords is None:
        return None
    return _Bisection(problem, graph, coords, max_bits).tree()


def _holders(problem: Problem) -> dict[int, list[int]]:
    """The operands holding each label of more than one element (by label index)."""
    found: dict[int, list[int]] = {}
    sizes = problem.label_sizes
    for i, mask in enumerate(problem.inputs):
        for k in _bits(mask):
            if sizes[k] > 1:
                found.setdefault(k, []).append(i)
    return found


def _neighbours(holders: dict[int, list[int]], n: int) -> list[set[int]]:
    """Each operand's neighbours: the operands it shares a label with."""
    found: list[set[int]] = [set() for _ in range(n)]
    for held in holders.values():
        for a in held:
            found[a].update(held)
    for a, near in enumerate(found):
        near.discard(a)
    return found


def _on_squares(neighbours: list[set[int]]) -> float:
    """The share of the operands that lie on a cycle of four (two of their neighbours
    share another neighbour).

    >>> _on_squares([{1, 3}, {0, 2}, {1, 3}, {0, 2, 4}, {3}])     # a square and a tail
    0.8
    """
    on = 0
    for a, near in enumerate(neighbours):
        reached: set[int] = set()
        for b in near:
            further = neighbours[b] - {a}
            if not reached.isdisjoint(further):
                on += 1
                break
            reached |= further
    return on / len(neighbours)


def _eccentricity(neighbours: list[set[int]]) -> int:
    """How many bonds the farthest operand is from the first (breadth first)."""
    seen, front, depth = {0}, {0}, 0
    while True:
        front = {b for a in front for b in neighbours[a]} - seen
        if not front:
            return depth
        seen |= front
        depth += 1


class _Graph:
    """The operands' graph: ``weights[a, b]`` the bits of the labels operands ``a`` and
    ``b`` share (a label of three or more operands joins every pair), ``output_bits`` the
    bits of each operand's output labels."""

    def __init__(self, problem: Problem, holders: dict[int, list[int]]) -> None:
        n = len(problem.inputs)
        self.weights = np.zeros((n, n))
        self.output_bits = np.zeros(n)
        for k, held in holders.items():
            bits = math.log2(problem.label_sizes[k])
            if problem.output >> k & 1:
                self.output_bits[held] += bits
            for j, a in enumerate(held):
                for b in held[j + 1 :]:
                    self.weights[a, b] += bits
                    self.weights[b, a] += bits
        self.degree = self.weights.sum(axis=1)

    def cut(self, left: np.ndarray, right: np.ndarray) -> float:
        """The bits of the labels that join ``left`` to ``right``."""
        return float(self.weights[np.ix_(left, right)].sum())

    def boundary(self, block: np.ndarray) -> float:
        """The bits of the block's intermediate: the labels leaving it, and output labels."""
        inside = float(self.weights[np.ix_(block, block)].sum())
        return float(self.degree[block].sum()) - inside + float(self.output_bits[block].sum())

    def coordinates(self) -> np.ndarray | None:
        """Two coordinates per operand: the Laplacian's two lowest eigenvectors past its
        null space (rotated to cut fewest bits where their eigenvalues are close), or None
        for a graph of several components."""
        laplacian = np.diag(self.degree) - self.weights
        values, vectors = np.linalg.eigh(laplacian)
        scale = max(float(values[-1]), 1.0)
        if values[1] < 1e-9 * scale:
            return None  # several components: greedy joins them
        coords = vectors[:, 1:3].copy()
        if values[2] - values[1] < DEGENERATE * values[2]:
            coords = coords @ self._rotation(coords)
        for c in range(coords.shape[1]):  # a sign for each: the same tree on every machine
            if coords[np.argmax(np.abs(coords[:, c])), c] < 0:
                coords[:, c] *= -1
        return coords

    def _rotation(self, coords: np.ndarray) -> np.ndarray:
        """The rotation of a degenerate pair whose first coordinate's median cut is least
        (of :data:`ANGLES`, all cuts in one product: ``x^T W (1 - x)`` per half ``x``)."""
        angles = np.arange(ANGLES) * (math.pi / ANGLES)
        along = coords @ np.stack([np.cos(angles), np.sin(angles)])
        first = np.zeros_like(along)
        lower = np.argsort(along, axis=0, kind="stable")[: len(coords) // 2]
        np.put_along_axis(first, lower, 1.0, axis=0)
        cuts = (first * (self.weights @ (1.0 - first))).sum(axis=0)
        best = float(angles[int(np.argmin(cuts))])
        cos, sin = math.cos(best), math.sin(best)
        return np.array([[cos, -sin], [sin, cos]])


Blocks = Any  # a leaf block (an array of operand indices) or a pair of Blocks


class _Bisection:
    """The tree in two passes: the blocks top-down (each halved along the coordinate
    cutting fewer bits, down to :data:`LEAF` operands; every half's boundary checked, so a
    network that is no lattice stops before any greedy runs), then their contraction
    bottom-up, greedy within each leaf block."""

    def __init__(
        self, problem: Problem, graph: _Graph, coords: np.ndarray, max_bits: float
    ) -> None:
        self.problem, self.graph, self.coords, self.max_bits = problem, graph, coords, max_bits
        self.ssa: SSA = []
        self.next_id = len(problem.inputs)

    def tree(self) -> SSA | None:
        blocks = self._blocks(np.arange(len(self.problem.inputs)))
        if blocks is None:
            return None
        self._contract(blocks)
        return self.ssa

    def _blocks(self, block: np.ndarray) -> Blocks | None:
        """The block's halves, recursively (None: one holds more than ``max_bits``)."""
        if len(block) <= LEAF:
            return block
        halves = self._halves(block)
        if any(self.graph.boundary(half) > self.max_bits for half in halves):
            return None
        left, right = (self._blocks(half) for half in halves)
        return None if left is None or right is None else (left, right)

    def _halves(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        best: tuple[float, np.ndarray, np.ndarray] | None = None
        half = len(block) // 2
        for c in range(self.coords.shape[1]):
            order = block[np.argsort(self.coords[block, c], kind="stable")]
            left, right = order[:half], order[half:]
            cut = self.graph.cut(left, right)
            if best is None or cut < best[0] - 1e-9:
                best = (cut, left, right)
        assert best is not None
        return best[1], best[2]

    def _contract(self, blocks: Blocks) -> int:
        """The SSA id of the blocks' contraction."""
        if isinstance(blocks, tuple):
            return self._join(self._contract(blocks[0]), self._contract(blocks[1]))
        if len(blocks) == 1:
            return int(blocks[0])
        return self._greedy(blocks)

    def _join(self, a: int, b: int) -> int:
        self.ssa.append((min(a, b), max(a, b)))
        self.next_id += 1
        return self.next_id - 1

    def _greedy(self, block: np.ndarray) -> int:
        """Greedy over the block's operands, toward the labels its boundary keeps."""
        inputs, members = self.problem.inputs, {int(i) for i in block}
        outside = self.problem.output
        for i, mask in enumerate(inputs):
            if i not in members:
                outside |= mask
        ids = [int(i) for i in block]
        masks = [inputs[i] for i in ids]
        inner = 0
        for mask in masks:
            inner |= mask
        sub = Problem([_bits(m) for m in masks], _bits(inner & outside), self.problem.label_sizes)
        for a, b in greedy_ssa(sub):
            ids.append(self._join(ids[a], ids[b]))
        return ids[-1]


def _bits(mask: int) -> Sequence[int]:
    """The label indices of ``mask``."""
    found = []
    while mask:
        low = mask & -mask
        found.append(low.bit_length() - 1)
        mask ^= low
    return found
