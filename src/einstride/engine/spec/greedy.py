"""opt_einsum's greedy path finder over label bit masks: the same path, a third of the time.

opt_einsum's ``ssa_greedy_optimize`` works on frozensets of labels; the search runs it once
per trial, and on a network of 100 tensors each run took 5-10 ms of a first call.  This is
the same algorithm step for step over the :class:`.costmodel.Problem`'s bit masks (a set
union is one ``|``, a size a memoized lookup): Hadamard products of operands with equal
labels first, then, from a heap, the candidate pair with the lowest score (by default the
size of the result minus the sizes of the pair, ties broken by the operands' ids), and
last the outer products of what is left, smallest first.  It returns the path opt_einsum
returns (the tests check that on random networks).

>>> from .costmodel import Problem
>>> chain = Problem([(0, 1), (1, 2), (2, 3)], (0, 3), (1000, 10, 1000, 10))
>>> greedy_ssa(chain)
[(1, 2), (0, 3)]
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable

from .costmodel import Problem

__all__ = ["Score", "greedy_ssa", "memory_removed"]

Score = Callable[[int, int, int], float]
"""``score(size12, size1, size2)``: lower is contracted first."""


def memory_removed(size12: int, size1: int, size2: int) -> float:
    """opt_einsum's default score: the elements a contraction adds minus those it frees."""
    return size12 - size1 - size2


def _bits(mask: int) -> list[int]:
    found = []
    while mask:
        low = mask & -mask
        found.append(low)
        mask ^= low
    return found


class _State:
    """The live operands (label mask -> SSA id), which operands hold each contractible
    label, and the labels held by two and by three or more of them.  (Loops are written
    out: a network's first call runs this once, and each helper call or list costs.)"""

    def __init__(self, problem: Problem, score: Score) -> None:
        self.known, self.fill = problem.known_size, problem.fill_size
        self.score = None if score is memory_removed else score  # None: computed inline
        inputs = problem.inputs
        common = -1
        for mask in inputs:
            common &= mask
        # a label every operand holds cannot go before the last step: treat it as output
        self.output = problem.output | (common if inputs else 0)
        self.remaining: dict[int, int] = {}
        self.ssa: list[tuple[int, int]] = []
        self.ids = itertools.count(len(inputs))
        for ssa_id, key in enumerate(inputs):  # Hadamard products of equal label sets first
            if key in self.remaining:
                self.ssa.append((self.remaining[key], ssa_id))
                self.remaining[key] = next(self.ids)
            else:
                self.remaining[key] = ssa_id
        self.holders: dict[int, set[int]] = {}
        for key in self.remaining:
            for bit in _bits(key & ~self.output):
                self.holders.setdefault(bit, set()).add(key)
        self.two = self.three = 0
        for bit, keys in self.holders.items():
            if len(keys) >= 2:
                self.two |= bit
            if len(keys) >= 3:
                self.three |= bit
        self.queue: list[tuple[tuple[float, int, int], int, int, int]] = []

    def push_best(self, k1: int, partners: Iterable[int]) -> None:
        """The best candidate pairing ``k1`` with one of ``partners`` onto the heap."""
        remaining, known, fill, score = self.remaining, self.known, self.fill, self.score
        output, two, three = self.output, self.two, self.three
        size1, id_k1 = known(k1) or fill(k1), remaining[k1]
        best: tuple[tuple[float, int, int], int, int, int] | None = None
        for k2 in partners:
            both, shared = k1 | k2, k1 & k2
            k12 = (both & output) | (shared & three) | ((both ^ shared) & two)
            size12, size2 = known(k12) or fill(k12), known(k2) or fill(k2)
            cost = size12 - size1 - size2 if score is None else score(size12, size1, size2)
            id_k2 = remaining[k2]
            found = (
                ((cost, id_k2, id_k1), k1, k2, k12)
                if id_k1 <= id_k2
                else ((cost, id_k1, id_k2), k2, k1, k12)
            )
            if best is None or found < best:
                best = found
        if best is not None:
            heapq.heappush(self.queue, best)

    def contract(self, k1: int, k2: int, k12: int) -> None:
        remaining, holders, free = self.remaining, self.holders, ~self.output
        self.ssa.append((remaining.pop(k1), remaining.pop(k2)))
        for key in (k1, k2):
            rest = key & free
            while rest:
                bit = rest & -rest
                holders[bit].discard(key)
                rest ^= bit
        if k12 in remaining:
            self.ssa.append((remaining[k12], next(self.ids)))
        else:
            rest = k12 & free
            while rest:
                bit = rest & -rest
                holders[bit].add(k12)
                rest ^= bit
        remaining[k12] = next(self.ids)
        two, three, rest = self.two, self.three, (k1 | k2) & free
        while rest:
            bit = rest & -rest
            count = len(holders[bit])
            two = two | bit if count >= 2 else two & ~bit
            three = three | bit if count >= 3 else three & ~bit
            rest ^= bit
        self.two, self.three = two, three

    def partners(self, key: int) -> set[int]:
        """The live operands sharing a contractible label with ``key`` (not itself)."""
        found: set[int] = set()
        holders, rest = self.holders, key & ~self.output
        while rest:
            bit = rest & -rest
            found |= holders[bit]
            rest ^= bit
        found.discard(key)
        return found


def greedy_ssa(problem: Problem, score: Score = memory_removed) -> list[tuple[int, int]]:
    """opt_einsum's ``ssa_greedy_optimize(inputs, output, sizes, cost_fn=score)`` (SSA
    ids: the inputs ``0..n-1``, each product the next id)."""
    if len(problem.inputs) == 1:
        return [(0,)]  # type: ignore[list-item]  # opt_einsum's single-operand path
    state = _State(problem, score)
    remaining = state.remaining
    for keys in state.holders.values():
        ordered = sorted(keys, key=remaining.__getitem__)
        for i, k1 in enumerate(ordered[:-1]):
            state.push_best(k1, ordered[i + 1 :])
    queue = state.queue
    while queue:
        _, k1, k2, k12 = heapq.heappop(queue)
        if k1 not in remaining or k2 not in remaining:
            continue  # an operand of it was contracted since
        state.contract(k1, k2, k12)
        partners = state.partners(k12)
        if partners:
            state.push_best(k12, partners)
    return _outer_products(state)


def _outer_products(state: _State) -> list[tuple[int, int]]:
    """What is left (no label in common) as outer products, the smallest results first."""
    output = state.output

    def size(mask: int) -> int:
        return state.known(mask) or state.fill(mask)

    final = [(size(key & output), ssa_id, key) for key, ssa_id in state.remaining.items()]
    heapq.heapify(final)
    _, id1, k1 = heapq.heappop(final)
    while final:
        _, id2, k2 = heapq.heappop(final)
        state.ssa.append((min(id1, id2), max(id1, id2)))
        k12 = (k1 | k2) & output
        _, id1, k1 = heapq.heappushpop(final, (size(k12), next(state.ids), k12))
    return state.ssa
