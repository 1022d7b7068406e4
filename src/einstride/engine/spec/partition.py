"""Recursive partitioning: contraction trees for networks that are no lattice.

Greedy grows its intermediates where they are smallest *now*; on a random regular network
that is a good start and a poor whole (the benchmark's random network of 100 tensors:
greedy's path, reconfigured, 1.9e9 FLOPs; cotengra's hyper-optimizer finds 3-5e8 in 5 s).
Good trees there come from cutting the network into halves that share few bonds, and
each half again (cotengra's ``kahypar`` trees are the model; :mod:`.bisection` does it for
lattices by coordinates, which a random graph has not).

Each halving starts from the median along the block's Fiedler vector (the Laplacian's
lowest non-trivial eigenvector; a bond weighs ``log2`` of its size), jittered by the next
eigenvector and by noise drawn from the trial's generator, and is refined by
Fiduccia-Mattheyses passes (operands move one at a time, the one that cuts the most bits
first, within :data:`IMBALANCE` of an even split; the best prefix of the moves is kept).
Blocks of up to :data:`LEAF` operands are contracted by greedy toward their boundary.
Where a half falls into pieces (FM does not keep halves connected), each piece is a
cluster of its own, and the clusters of two halves are merged pair by pair -- the pair
sharing a bond with the smallest product first -- so that no step is an outer product of
two pieces that the rest of the network joins (those pieces are left to the level above).

The trees vary a lot from trial to trial (on the random 100-tensor network, after the
search's subtree reconfiguration: the cost model's estimate 36-270 ms, greedy's 94 ms;
a quarter of the trials within 0.6x of greedy's), so the search runs several, each
reconfigured, where its budget lasts for them (:mod:`.search`).  A trial is deterministic
for its seed (up to the eigenvectors LAPACK returns for equal eigenvalues).

>>> from .costmodel import Problem
>>> ring = [((k - 1) % 24, k) for k in range(24)]          # a ring of 24 matrices, bond 3
>>> tree = partition_ssa(Problem(ring, (), [3] * 24), seed=0, trial=1)
>>> len(tree), tree[-1][1] == 2 * 24 - 3, tree == partition_ssa(Problem(ring, (), [3] * 24), 0, 1)
(23, True, True)
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .bisection import OperandGraph, bond_holders, mask_bits
from .costmodel import Problem
from .greedy import greedy_ssa

__all__ = ["IMBALANCE", "LEAF", "partition_ssa"]

SSA = list[tuple[int, int]]
LEAF = 8
"""Blocks of at most this many operands are contracted by greedy (measured on the random
100-tensor network, 16 trials each, reconfigured: the estimates' lower quartile 45 ms at
8, 77 at 4, 103 at 12)."""
IMBALANCE = 0.1  # a half holds 40-60% of its block's operands (0.05: quartile 96 ms; 0.2: 76)
JITTER = 0.3  # the next eigenvector's share in a halving's start, times a normal draw
NOISE = 0.1  # noise per operand on the start, times a normal draw (of the vector's scale)
PATIENCE = 25  # FM moves past the best cut before a pass stops
PASSES = 8  # FM passes per halving at most (each until no move improves the cut)


@dataclass(frozen=True, slots=True)
class _Cluster:
    """A connected piece contracted so far: its SSA id, operands and boundary mask."""

    node: int
    members: frozenset[int]
    kept: int


def partition_ssa(problem: Problem, seed: int, trial: int = 0) -> SSA:
    """A contraction tree of ``problem`` (SSA pairs, as :func:`.greedy.greedy_ssa`) by
    recursive partitioning (the module's text), trial ``trial`` of the search's ``seed``;
    pieces that share no bond are joined last, smallest first."""
    rng = random.Random(f"einstride-partition:{seed}:{trial}")
    builder = _Partition(problem, rng)
    clusters = builder.clusters(list(range(len(problem.inputs))))
    clusters.sort(key=lambda c: (problem.size(c.kept), min(c.members)))
    top = clusters[0]
    for other in clusters[1:]:
        top = builder.join(top, other)
    return builder.ssa


class _Partition:
    """One trial: the operands' bonds, the generator, the SSA pairs made so far."""

    def __init__(self, problem: Problem, rng: random.Random) -> None:
        self.problem, self.rng = problem, rng
        self.holders: dict[int, list[int]] = {}  # every label's operands, by label index
        for i, mask in enumerate(problem.inputs):
            for k in mask_bits(mask):
                self.holders.setdefault(k, []).append(i)
        weights = OperandGraph(problem, bond_holders(problem)).weights
        self.weights = weights
        self.near = [
            [(int(b), float(weights[a, b])) for b in np.flatnonzero(weights[a])]
            for a in range(len(problem.inputs))
        ]
        self.ssa: SSA = []

    def clusters(self, block: list[int]) -> list[_Cluster]:
        """The block contracted into connected clusters (one, unless it falls apart)."""
        pieces = self._pieces(block)
        if len(pieces) > 1:
            return [c for piece in pieces for c in self.clusters(piece)]
        if len(block) == 1:
            return [_Cluster(block[0], frozenset(block), self._kept(block))]
        if len(block) <= LEAF:
            return [self._greedy(block)]
        left, right = self._halves(block)
        return self._merged(self.clusters(left) + self.clusters(right))

    def join(self, a: _Cluster, b: _Cluster) -> _Cluster:
        """The product of two clusters (the next SSA id)."""
        self.ssa.append((min(a.node, b.node), max(a.node, b.node)))
        members = a.members | b.members
        node = len(self.problem.inputs) + len(self.ssa) - 1
        return _Cluster(node, members, self._kept_after(a, b, members))

    def _pieces(self, block: list[int]) -> list[list[int]]:
        """The block's connected pieces (by its bonds), each sorted."""
        inside, seen, pieces = set(block), set(), []
        for start in block:
            if start in seen:
                continue
            seen.add(start)
            stack, piece = [start], []
            while stack:
                a = stack.pop()
                piece.append(a)
                for b, _ in self.near[a]:
                    if b in inside and b not in seen:
                        seen.add(b)
                        stack.append(b)
            pieces.append(sorted(piece))
        return pieces

    def _kept(self, members: Sequence[int]) -> int:
        """The labels of ``members`` that the output or an operand outside holds."""
        inside, outside, chosen = 0, self.problem.output, set(members)
        for i, mask in enumerate(self.problem.inputs):
            if i in chosen:
                inside |= mask
            else:
                outside |= mask
        return inside & outside

    def _kept_after(self, a: _Cluster, b: _Cluster, members: frozenset[int]) -> int:
        """The boundary of ``a`` and ``b`` joined: a label both keep stays only where the
        output or an operand outside them holds it."""
        kept = a.kept | b.kept
        for k in mask_bits(a.kept & b.kept):
            if not self.problem.output >> k & 1 and members.issuperset(self.holders[k]):
                kept &= ~(1 << k)
        return kept

    def _greedy(self, block: list[int]) -> _Cluster:
        """Greedy over a leaf block's operands, toward its boundary."""
        kept = self._kept(block)
        nodes = list(block)
        for a, b in greedy_ssa(self.problem.part(block, kept)):
            self.ssa.append((min(nodes[a], nodes[b]), max(nodes[a], nodes[b])))
            nodes.append(len(self.problem.inputs) + len(self.ssa) - 1)
        return _Cluster(nodes[-1], frozenset(block), kept)

    def _merged(self, clusters: list[_Cluster]) -> list[_Cluster]:
        """The clusters joined pair by pair while two share a label: the pair whose
        labels together are fewest elements first (the product's cost, as a bound)."""
        size = self.problem.size
        while True:
            pairs = [
                (size(a.kept | b.kept), i, j)
                for i, a in enumerate(clusters)
                for j, b in enumerate(clusters[:i])
                if a.kept & b.kept
            ]
            if not pairs:
                return clusters
            _, i, j = min(pairs)
            joined = self.join(clusters[j], clusters[i])
            clusters = [c for k, c in enumerate(clusters) if k not in (i, j)] + [joined]

    def _halves(self, block: list[int]) -> tuple[list[int], list[int]]:
        """The block cut in two: the jittered spectral start, refined by FM passes."""
        side = self._start(block)
        _refine(block, self.near, side, _balance(len(block)))
        left = [a for a in block if not side[a]]
        right = [a for a in block if side[a]]
        return left, right

    def _start(self, block: list[int]) -> dict[int, bool]:
        """Each operand's side: below or above the median of the jittered Fiedler vector
        (its sign and the next one's fixed by their first entry off zero)."""
        weights = self.weights[np.ix_(block, block)]
        laplacian = np.diag(weights.sum(axis=1)) - weights
        vectors = np.linalg.eigh(laplacian)[1][:, 1:3]
        for c in range(vectors.shape[1]):
            off = np.flatnonzero(np.abs(vectors[:, c]) > 1e-9)
            if len(off) and vectors[off[0], c] > 0:
                vectors[:, c] = -vectors[:, c]
        gauss = self.rng.gauss
        values = vectors[:, 0] + JITTER * gauss(0.0, 1.0) * vectors[:, -1]
        scale = NOISE / math.sqrt(len(block))
        values = values + np.array([scale * gauss(0.0, 1.0) for _ in block])
        order = np.argsort(values, kind="stable")
        side = dict.fromkeys(block, True)
        for rank in order[: len(block) // 2]:
            side[block[int(rank)]] = False
        return side


def _balance(n: int) -> tuple[int, int]:
    """The fewest and most operands the first half may hold."""
    return math.floor(n * (0.5 - IMBALANCE)), math.ceil(n * (0.5 + IMBALANCE))


def _refine(
    block: list[int],
    near: list[list[tuple[int, float]]],
    side: dict[int, bool],
    balance: tuple[int, int],
) -> None:
    """Fiduccia-Mattheyses passes over ``side`` (in place): each pass moves every operand
    once at most, the one whose move cuts the most bits first (the first of equals, in the
    block's order), while the first half's count stays within ``balance``; it keeps the
    best prefix of its moves, and the passes stop when one improves nothing."""
    inside = set(block)
    bonds = {a: [(b, w) for b, w in near[a] if b in inside] for a in block}
    low, high = balance
    for _ in range(PASSES):
        gains = {a: sum(w if side[b] != side[a] else -w for b, w in bonds[a]) for a in block}
        count = sum(1 for a in block if not side[a])
        free, cut, best, best_at = set(block), 0.0, 0.0, 0
        moves: list[int] = []
        while free and len(moves) - best_at <= PATIENCE:
            chosen, gain = -1, -math.inf
            for a in block:
                if a in free and gains[a] > gain and low <= count + (1 if side[a] else -1) <= high:
                    chosen, gain = a, gains[a]
            if chosen < 0:
                break
            free.discard(chosen)
            count += 1 if side[chosen] else -1
            side[chosen] = not side[chosen]
            moves.append(chosen)
            cut -= gain
            for b, w in bonds[chosen]:
                if b in free:
                    gains[b] += -2 * w if side[b] == side[chosen] else 2 * w
            if cut < best - 1e-9:
                best, best_at = cut, len(moves)
        for a in moves[best_at:]:
            side[a] = not side[a]
        if best_at == 0:
            return
