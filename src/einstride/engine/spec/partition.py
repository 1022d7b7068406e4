"""Recursive partitioning: contraction trees for networks that are no lattice (random ones).

Greedy grows its intermediates where they are smallest *now*; on a random regular network
that is a good start and a poor whole (the benchmark's random network of 100 tensors:
greedy's path, reconfigured, 1.9e9 FLOPs; cotengra's hyper-optimizer finds 3-5e8 in 5 s).
Good trees there come from cutting the network into halves that share few bonds, and
each half again (cotengra's ``kahypar`` trees are the model; :mod:`.bisection` does it for
lattices by coordinates, which a random graph has not).

Each halving starts from the median along the block's Fiedler vector (the Laplacian's
lowest non-trivial eigenvector; a bond weighs ``log2`` of its size: :func:`partition_graph`),
jittered by the next
eigenvector and by noise drawn from the trial's generator, and is refined by
Fiduccia-Mattheyses passes (operands move one at a time, the one that cuts the most bits
first, within :data:`IMBALANCE` of an even split; the best prefix of the moves is kept).
Blocks of up to :data:`LEAF` operands are contracted by greedy toward their boundary.
Where a half falls into pieces (FM does not keep halves connected), each piece is a
cluster of its own, and the clusters of two halves are merged pair by pair -- the pair
sharing a label with the smallest product first -- so that no step is an outer product of
two pieces that the rest of the network joins (those pieces are left to the level above).

The trees vary a lot from trial to trial (on the benchmark's random 100-tensor network,
16 trials after the search's subtree reconfiguration: the cost model's estimates 41 ms at
the least, 83 at the lower quartile, 132 at the median, greedy's reconfigured path 94;
on other random networks of 100 tensors they beat greedy's by far more, :mod:`.search`),
so the search runs several, each reconfigured, taking turns with its random-greedy
trials where its budget lasts for them.  A trial is deterministic for its seed and trial
(up to the eigenvectors LAPACK returns for equal eigenvalues).  A tree takes ~9 ms on
100 operands (the eigenvectors, FM passes over heaps of gains, greedy's leaf blocks); the
whole network's eigenvectors are computed once per search (:class:`PartitionGraph`).

>>> from .costmodel import Problem
>>> ring = [((k - 1) % 24, k) for k in range(24)]          # a ring of 24 matrices, bond 3
>>> tree = partition_ssa(Problem(ring, (), [3] * 24), seed=0, trial=1)
>>> len(tree), tree[-1][1] == 2 * 24 - 3, tree == partition_ssa(Problem(ring, (), [3] * 24), 0, 1)
(23, True, True)
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from .bisection import laplacian_eigh, mask_bits, signed
from .costmodel import Problem
from .greedy import greedy_ssa

__all__ = [
    "IMBALANCE",
    "LEAF",
    "MOST_HOLDERS",
    "PartitionGraph",
    "partition_graph",
    "partition_pairs",
    "partition_ssa",
]

SSA = list[tuple[int, int]]
_Entry = tuple[float, int, int]  # (-gain, position in the block, operand)
LEAF = 8
"""Blocks of at most this many operands are contracted by greedy (measured over seven random
networks of 60 and 100 tensors, 12-16 trials each, reconfigured, against a search of 20 ms
without them: the estimates' median 0.48x at 8, 0.55x at 5, 0.52x at 12, as geometric
means over the networks)."""
IMBALANCE = 0.1  # a half holds 40-60% of its operands (the same medians: 0.03, 0.74x; 0.2, 0.53x)
JITTER = 1.0  # the next eigenvector's share in a halving's start, times a draw (0.3: 0.58x)
NOISE = 0.1  # noise per operand on the start, times a normal draw (of the vector's scale)
PATIENCE = 12  # FM moves past a pass's best cut before it stops (25: as good, 1.3x the time)
MOST_HOLDERS = 8  # a label of more operands is left out of the graph (every halving cuts it)
SIZE_ONE_BITS = 0.05  # what a label of size 1 weighs in the graph (a link, nearly free to cut)
SEED_TAG = 0x9A27  # the trials' generators: apart from any other seeded by the same numbers
PASSES = 8  # FM passes per halving at most (each stops PATIENCE moves past its best cut)


@dataclass(frozen=True, slots=True)
class _Cluster:
    """A connected piece contracted so far: its SSA id, operands and boundary mask."""

    node: int
    members: frozenset[int]
    kept: int


def partition_ssa(
    problem: Problem, seed: int, trial: int = 0, graph: PartitionGraph | None = None
) -> SSA:
    """A contraction tree of ``problem`` (SSA pairs, as :func:`.greedy.greedy_ssa`; none
    for fewer than two operands) by recursive partitioning (the module's text), trial
    ``trial`` of the search's ``seed``; pieces that share no label are joined last,
    smallest first.  ``graph`` (the problem's :func:`partition_graph`) is shared by a
    search's trials."""
    if len(problem.inputs) < 2:
        return []
    rng = np.random.default_rng([trial % 2**32, seed % 2**63, SEED_TAG])
    builder = _Trial(graph or partition_graph(problem), rng)
    # pieces the graph does not link may still share a label it leaves out (of many operands)
    clusters = builder.merged(builder.clusters(list(range(len(problem.inputs)))))
    clusters.sort(key=lambda c: (problem.size(c.kept), min(c.members)))
    top = clusters[0]
    for other in clusters[1:]:
        top = builder.join(top, other)
    return builder.ssa


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionGraph:
    """What every trial on a problem reads: each label's operands, the bits between
    operands (:func:`partition_graph`), and the eigenvectors of the blocks halved so far,
    memoized (the whole network is every trial's first block)."""

    problem: Problem
    label_holders: dict[int, list[int]]  # every label's operands, by label index
    weights: np.ndarray  # the bits operands a and b share, as the cut counts them
    near: list[list[tuple[int, float]]]  # per operand: (neighbour, bits)
    memo: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict)

    def vectors(self, block: list[int]) -> np.ndarray:
        """The block's two lowest non-trivial Laplacian eigenvectors (columns), each signed
        so that its first entry off zero is negative; memoized."""
        key = tuple(block)
        if (found := self.memo.get(key)) is None:
            vectors = laplacian_eigh(self.weights[np.ix_(block, block)])[1]
            found = signed(vectors[:, 1:3].copy(), tolerance=1e-9)
            self.memo[key] = found
        return found


def partition_graph(problem: Problem) -> PartitionGraph:
    """The problem's :class:`PartitionGraph`: a label of ``k`` operands puts ``1 / (k -
    1)`` of its bits on each pair of them (a cut through it counts it about once), a label
    of size 1 :data:`SIZE_ONE_BITS` (operands joined by it alone stay one piece: apart,
    their intermediates would pile up its axes); a label of more than :data:`MOST_HOLDERS`
    operands is left out (every halving cuts it, and its pairs, ``k**2``, would make the
    passes cost more than the search estimates).

    >>> g = partition_graph(Problem([(0, 1), (1, 2), (2, 0)], (), (4, 1, 8)))
    >>> g.near[0], g.label_holders[1]
    ([(1, 0.05), (2, 2.0)], [0, 1])
    """
    n = len(problem.inputs)
    holders: dict[int, list[int]] = {}
    for i, mask in enumerate(problem.inputs):
        for k in mask_bits(mask):
            holders.setdefault(k, []).append(i)
    weights = np.zeros((n, n))
    for k, held in holders.items():
        if 2 <= len(held) <= MOST_HOLDERS:
            size = problem.label_sizes[k]
            bits = math.log2(size) if size > 1 else SIZE_ONE_BITS
            weights[np.ix_(held, held)] += bits / (len(held) - 1)
    np.fill_diagonal(weights, 0.0)
    near = [[(int(b), float(weights[a, b])) for b in np.flatnonzero(weights[a])] for a in range(n)]
    return PartitionGraph(problem=problem, label_holders=holders, weights=weights, near=near)


def partition_pairs(problem: Problem) -> int:
    """The operand pairs :func:`partition_graph` links, at most (what a tree's passes
    scale with, beside the eigenvectors).

    >>> partition_pairs(Problem([(0, 1), (1, 2), (2, 0, 3)], (), (4, 1, 8, 2)))
    3
    """
    return sum(k * (k - 1) // 2 for k in problem.holder_counts() if 2 <= k <= MOST_HOLDERS)


class _Trial:
    """One trial: the graph, the generator, the SSA pairs made so far."""

    def __init__(self, graph: PartitionGraph, rng: np.random.Generator) -> None:
        self.graph, self.problem, self.rng = graph, graph.problem, rng
        self.holders, self.near = graph.label_holders, graph.near
        self.ssa: SSA = []

    def clusters(self, block: list[int]) -> list[_Cluster]:
        """The block contracted into connected clusters (one, unless it falls apart)."""
        pieces = self._pieces(block)
        if len(pieces) > 1:
            return [c for piece in pieces for c in self.clusters(piece)]
        if len(block) == 1:
            return [_Cluster(block[0], frozenset(block), self.problem.boundary(block))]
        if len(block) <= LEAF:
            return [self._greedy(block)]
        left, right = self._halves(block)
        return self.merged(self.clusters(left) + self.clusters(right))

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
        kept = self.problem.boundary(block)
        nodes = list(block)
        for a, b in greedy_ssa(self.problem.part(block, kept)):
            self.ssa.append((min(nodes[a], nodes[b]), max(nodes[a], nodes[b])))
            nodes.append(len(self.problem.inputs) + len(self.ssa) - 1)
        return _Cluster(nodes[-1], frozenset(block), kept)

    def merged(self, clusters: list[_Cluster]) -> list[_Cluster]:
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
        """Each operand's side: below or above the median of the block's Fiedler vector,
        jittered by the next eigenvector and by noise."""
        vectors = self.graph.vectors(block)
        draws = self.rng.standard_normal(len(block) + 1)
        values = vectors[:, 0] + JITTER * draws[0] * vectors[:, -1]
        values = values + NOISE / math.sqrt(len(block)) * draws[1:]
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
    fm = _Pass(
        bonds={a: [(b, w) for b, w in near[a] if b in inside] for a in block},
        position={a: k for k, a in enumerate(block)},
        balance=balance,
    )
    for _ in range(PASSES):
        if not fm.run(side):
            return


@dataclass(frozen=True, slots=True, kw_only=True)
class _Pass:
    """FM passes over one block: each side's operands wait in a heap of their gains
    (stale entries skipped), so a move costs a few heap operations, not a scan of the
    block."""

    bonds: dict[int, list[tuple[int, float]]]
    position: dict[int, int]
    balance: tuple[int, int]

    def run(self, side: dict[int, bool]) -> list[int]:
        """One pass over ``side`` (in place); returns the moves kept (the best prefix)."""
        bonds, position = self.bonds, self.position
        gains = {
            a: sum(w if side[b] != side[a] else -w for b, w in near) for a, near in bonds.items()
        }
        heaps: tuple[list[_Entry], list[_Entry]] = ([], [])
        for a, gain in gains.items():
            heaps[side[a]].append((-gain, position[a], a))
        for heap in heaps:
            heapq.heapify(heap)
        count = sum(1 for a in gains if not side[a])
        free, cut, best, best_at = set(gains), 0.0, 0.0, 0
        moves: list[int] = []
        while len(moves) - best_at <= PATIENCE:
            chosen = self._chosen(heaps, gains, free, count)
            if chosen is None:
                break
            free.discard(chosen)
            count += 1 if side[chosen] else -1
            side[chosen] = not side[chosen]
            moves.append(chosen)
            cut -= gains[chosen]
            for b, w in bonds[chosen]:
                if b in free:
                    gains[b] += -2 * w if side[b] == side[chosen] else 2 * w
                    heapq.heappush(heaps[side[b]], (-gains[b], position[b], b))
            if cut < best - 1e-9:
                best, best_at = cut, len(moves)
        for a in moves[best_at:]:
            side[a] = not side[a]
        return moves[:best_at]

    def _chosen(
        self,
        heaps: tuple[list[_Entry], list[_Entry]],
        gains: dict[int, float],
        free: set[int],
        count: int,
    ) -> int | None:
        """The free operand whose move gains most (the first of equals) within the balance."""
        low, high = self.balance
        tops = []
        for moving_first, heap in zip((True, False), heaps, strict=True):
            if (count - 1 < low) if moving_first else (count + 1 > high):
                continue  # the first half may not shrink (or grow) past the balance
            while heap and (heap[0][2] not in free or -heap[0][0] != gains[heap[0][2]]):
                heapq.heappop(heap)  # moved already, or a stale gain
            if heap:
                tops.append(heap[0])
        return min(tops)[2] if tops else None
