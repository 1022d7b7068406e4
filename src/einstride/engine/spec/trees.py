"""Contraction trees: the exact optimum over a few operands; subtree reconfiguration,
which improves a whole path by re-solving its subtrees exactly; and simulated annealing,
which moves a path out of the local optimum a reconfiguration stops in (:func:`anneal`).

A greedy path is good at large and poor in places: it merges the pair that shrinks most
now, and a few of its merges cost far more than another order of the same operands would.
Reconfiguration (cotengra's ``subtree_reconfigure`` is the model) takes the path's tree,
cuts out the subtree of up to ``k`` branches below each product (breadth first: balanced
subtrees), the most expensive product first, solves that subtree's order exactly under the
cost model (:func:`optimal_tree`, :func:`optimal_pairs` pair costs; from
:data:`ARRAYS_FROM` branches on computed over arrays, :mod:`.subsets`) and keeps it when it
is cheaper.  Each step can only lower the path's cost, and the work is counted in pair costs
of the Python loop (:func:`subtree_work`), never by a clock, so it is deterministic.

>>> from .costmodel import Problem, path_cost
>>> chain = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]          # a chain of five matrices
>>> sizes = (2, 1000, 2, 1000, 2, 1000)
>>> bad = ((0, 1), (0, 1), (0, 1), (0, 1))                    # strictly left to right
>>> better, pairs = reconfigure(Problem(chain, (0, 5), sizes), bad, subtree=5, max_pairs=10**4)
>>> path_cost(chain, (0, 5), sizes, better)[1] < path_cost(chain, (0, 5), sizes, bad)[1]
True
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Sequence
from typing import Any

from .costmodel import STEP_NS, Problem, linear_of, tree_of
from .subsets import optimal_tree_arrays

__all__ = [
    "ANNEAL_SHORT_SWEEPS",
    "ANNEAL_T_FINAL",
    "ANNEAL_T_SHORT",
    "ANNEAL_T_START",
    "OptimalTree",
    "anneal",
    "optimal_pairs",
    "optimal_tree",
    "optimal_tree_loop",
    "reconfigure",
    "rotatable_products",
    "solved_exactly",
    "subtree_work",
    "tree_to_path",
]

Path = tuple[tuple[int, ...], ...]
# (ns, FLOPs, largest intermediate, tree): the tree nests pairs of indices into the inputs
OptimalTree = tuple[float, int, int, Any]
SKIP_SHARE = 1e-3  # a subtree costing less than this share of the whole is not re-solved
PAYBACK_WINDOW = 250  # pair costs (ten subtrees of four) between payback checks
PAYBACK_START = 100  # pair costs (four subtrees of four) before the first whole-work check
ARRAYS_FROM = 6  # inputs from which the exact optimum's pair costs are computed over arrays
ARRAYS_BASE_WORK = 33  # ... their fixed work per subtree, in pair costs of the loop
ARRAYS_PAIRS_PER_WORK = 30  # ... and how many of their pair costs one of the loop's is worth
# annealing's temperatures, first and last sweep (geometric between): a move that multiplies
# its two products' FLOPs by ``2**d`` is taken with the probability ``exp(-d / t)``
ANNEAL_T_START = 2.0
ANNEAL_T_FINAL = 0.05
# ... a short anneal, of fewer sweeps than ANNEAL_SHORT_SWEEPS, starts cooler: at 2 it has no
# time to come back from where it wandered (measured, 8 random regular networks of 60-150
# tensors whose first-call budget bought 20-59 sweeps, three seeds: the searches' paths
# estimated 0.84x, their FLOPs 0.87x those of a start at 2; a start at 1, 0.86x and 0.97x)
ANNEAL_T_SHORT = 0.5
ANNEAL_SHORT_SWEEPS = 60


def optimal_pairs(k: int) -> int:
    """How many pair costs :func:`optimal_tree` evaluates for ``k`` inputs.

    >>> [optimal_pairs(k) for k in (2, 3, 4, 5, 6)]
    [1, 6, 25, 90, 301]
    """
    return int(3**k - 2 ** (k + 1) + 1) // 2


def optimal_tree(problem: Problem, inputs: Sequence[int], output: int) -> OptimalTree:
    """The cheapest contraction tree of ``inputs`` (label masks of ``problem``) into
    ``output`` under the cost model: dynamic programming over every subset of the inputs
    (:func:`optimal_pairs` pair costs), from :data:`ARRAYS_FROM` inputs on with the pair
    costs computed over arrays (:mod:`.subsets`), below in a Python loop.

    >>> chain = Problem([(0, 1), (1, 2), (2, 3)], (0, 3), (1000, 10, 1000, 10))
    >>> optimal_tree(chain, chain.inputs, chain.output)[1:]
    (400000, 10000, (0, (1, 2)))
    """
    return solved_exactly(problem, inputs, output)[0]


def solved_exactly(problem: Problem, inputs: Sequence[int], output: int) -> tuple[OptimalTree, int]:
    """:func:`optimal_tree` and its work in pair costs of the loop: :func:`subtree_work`
    over arrays, :func:`optimal_pairs` in the loop (a subtree of more than 64 labels)."""
    if len(inputs) >= ARRAYS_FROM:
        found = optimal_tree_arrays(problem, inputs, output)
        if found is not None:
            return found, subtree_work(len(inputs))
    return optimal_tree_loop(problem, inputs, output), optimal_pairs(len(inputs))


def optimal_tree_loop(problem: Problem, inputs: Sequence[int], output: int) -> OptimalTree:
    """:func:`optimal_tree`'s dynamic programming in a Python loop, one pair cost at a
    time (memoized by the problem: reconfiguration's subtrees overlap)."""
    n = len(inputs)
    full = (1 << n) - 1
    labels = [0] * (full + 1)  # the labels of each subset of inputs
    for subset in range(1, full + 1):
        low = subset & -subset
        labels[subset] = labels[subset ^ low] | inputs[low.bit_length() - 1]
    # per subset: its cheapest tree's ns, result labels, tree, FLOPs, largest intermediate
    ns: list[float] = [0.0] * (full + 1)
    result: list[int] = [0] * (full + 1)
    tree: list[Any] = [None] * (full + 1)
    flops, largest = [0] * (full + 1), [0] * (full + 1)
    for i, term in enumerate(inputs):
        result[1 << i], tree[1 << i] = term, i
    pair = problem.pair
    for subset in _by_size(n):
        keep = result[subset] = labels[subset] & (output | labels[full ^ subset])
        low, found, best, found_flops = subset & -subset, 0, -1.0, 0
        part = (subset - 1) & subset
        while part:
            if part & low:
                other = subset ^ part
                step_ns, step_flops = pair(result[part], result[other], keep)
                total = ns[part] + ns[other] + step_ns
                if best < 0 or total < best:
                    best, found, found_flops = total, part, step_flops
            part = (part - 1) & subset
        other = subset ^ found
        ns[subset], tree[subset] = best, (tree[found], tree[other])
        flops[subset] = flops[found] + flops[other] + found_flops
        largest[subset] = max(largest[found], largest[other], problem.size(keep))
    return ns[full], flops[full], largest[full], tree[full]


def subtree_work(k: int) -> int:
    """The work of solving a subtree of ``k`` branches exactly, in pair costs of the Python
    loop (the unit reconfiguration is budgeted in): :func:`optimal_pairs` below
    :data:`ARRAYS_FROM`, from there the arrays' (measured, warm: 0.15-0.2 ms fixed, 0.51 ms
    for the 3,025 pair costs of eight branches, 1.8 ms for nine, where the loop takes
    2.5 µs a pair cost, when they priced each split's sides anew; since they look the
    sides up per subset, 0.5-0.6x that, alternated in one machine phase: 0.47-0.63
    against 1.0-1.2 ms for six branches, 1.1-1.5 against 2.2-2.4 ms for eight, 2.6-2.7
    against 5.2-6.0 ms for nine, 7.2-7.6 against 12.8-14.4 ms for ten; a subtree of
    more than 64 labels runs the loop, and :func:`solved_exactly` counts its pair costs).

    >>> [subtree_work(k) for k in (4, 5, 6, 7, 8, 9, 10)]
    [25, 90, 43, 65, 133, 344, 983]
    """
    pairs = optimal_pairs(k)
    return pairs if k < ARRAYS_FROM else ARRAYS_BASE_WORK + pairs // ARRAYS_PAIRS_PER_WORK


@functools.cache
def _by_size(n: int) -> tuple[int, ...]:
    """The subsets of ``n`` items with two or more, smaller ones first."""
    return tuple(s for s in sorted(range(1, 1 << n), key=int.bit_count) if s & (s - 1))


def tree_to_path(tree: Any, n: int) -> Path:
    """A nested pair tree of operand indices -> NumPy's path format.

    >>> tree_to_path(((0, 2), (1, 3)), 4)
    ((0, 2), (0, 1), (0, 1))
    """
    ssa: list[tuple[int, int]] = []

    def walk(node: Any) -> int:
        if isinstance(node, int):
            return node
        left, right = walk(node[0]), walk(node[1])
        ssa.append((left, right))
        return n + len(ssa) - 1

    walk(tree)
    return linear_of(ssa)


def reconfigure(
    problem: Problem, path: Path, *, subtree: int, max_pairs: int, pair_ns: float = 0.0
) -> tuple[Path, int]:
    """``path`` with its subtrees of up to ``subtree`` branches re-solved exactly under the
    cost model, the most expensive first, sweep after sweep while one improves and the work
    spent stays under ``max_pairs``; returns the path and the work spent, both in pair costs
    of the Python loop (:func:`subtree_work`: a larger subtree over arrays costs fewer than
    it prices).  A path that is not a sequence of pairwise contractions comes back as it is.

    With ``pair_ns`` (what one pair cost takes to compute) it stops as soon as the last
    :data:`PAYBACK_WINDOW` pair costs saved less time than they took (the products left are
    cheaper, or already re-solved, so the rest would pay back less still), or, from
    :data:`PAYBACK_START` pair costs on, all of them did: the most expensive products come
    first, so a reconfiguration that has not paid for itself by then rarely will (measured
    on the benchmark's random 20-tensor network of degree 4: 148 of its 268 pair costs'
    worth saved by the first 150, nothing after).  The gains come in steps (the random
    60-tensor network of bonds 2-6: none in the first 50 pair costs, 19x their price by
    75), hence the start."""
    n = len(problem.inputs)
    if n < 3 or len(path) != n - 1 or any(len(entry) != 2 for entry in path):
        return path, 0
    tree = _Tree(problem, path)
    total = sum(tree.cost[n:])
    start, spent, improved = total, 0, True
    window_used, window_saved = 0, 0.0  # since the last payback check
    while improved and spent < max_pairs:
        improved = False
        floor = total * SKIP_SHARE
        for node in sorted(range(n, 2 * n - 1), key=tree.cost.__getitem__, reverse=True):
            used, saved = tree.resolve(node, subtree, floor)
            spent, total, improved = spent + used, total - saved, improved or saved > 0
            window_used, window_saved = window_used + used, window_saved + saved
            if pair_ns and spent >= PAYBACK_START and start - total < spent * pair_ns:
                return tree.path(), spent
            if pair_ns and window_used >= PAYBACK_WINDOW:
                if window_saved < window_used * pair_ns:
                    return tree.path(), spent
                window_used, window_saved = 0, 0.0
            if spent >= max_pairs:
                break
    return tree.path(), spent


def anneal(
    problem: Problem, path: Path, *, sweeps: int, seed: int, deadline: float = math.inf
) -> tuple[Path, int]:
    """``path``'s tree after ``sweeps`` sweeps of simulated annealing over FLOPs
    (cotengra's ``simulated_anneal_tree``, after Kalachev et al., arXiv:2108.05665, is the
    model): each sweep visits every product that has a product below it and tries one
    rotation there (``((a b) c)`` into ``((a c) b)`` or ``((b c) a)``, chosen at random),
    taken when it does not raise the two products' FLOPs, else with a probability falling
    with the ratio and the temperature (:data:`ANNEAL_T_START`, or :data:`ANNEAL_T_SHORT`
    for fewer than :data:`ANNEAL_SHORT_SWEEPS` sweeps, down to :data:`ANNEAL_T_FINAL`,
    geometric per sweep).  A rotation changes only the lower
    product's labels, so each move prices two products.  Returns the tree of fewest FLOPs
    met at a sweep's end (the path's own tree where none beat it) and the moves tried: the
    work, deterministic for a seed; the sweeps stop early past ``deadline`` (a
    ``time.perf_counter()`` value: the search's safety deadline).

    FLOPs, not the cost model: scored by the cost model, whose fixed cost per step
    dominates a cheap product, the walk stays in greedy's basin (measured on a random
    100-tensor network: no path cheaper than greedy's in eight seeds), and a pair cost
    prices 3x slower than two sizes.  The walk's paths are FLOP-lean and memory-heavy
    (outer products, large intermediates), which a reconfiguration under the cost model
    then repairs (:func:`reconfigure`; measured, eight seeds of 80 sweeps each from
    greedy's path of 1.9e9 FLOPs: 3.9e8-1.1e9 FLOPs estimated at 1.1-5.7x greedy's time,
    reconfigured 5e8-1.3e9 at 0.37-0.84x; run, 0.33x: 18 against 56 ms).

    >>> chain = Problem([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], (0, 5), (2, 900, 2, 900, 2, 900))
    >>> bad = ((0, 1), (0, 1), (0, 1), (0, 1))                    # strictly left to right
    >>> found, moves = anneal(chain, bad, sweeps=20, seed=0)
    >>> chain.cost(found)[1] < chain.cost(bad)[1], found == anneal(chain, bad, sweeps=20, seed=0)[0]
    (True, True)
    """
    n = len(problem.inputs)
    if n < 3 or len(path) != n - 1 or any(len(entry) != 2 for entry in path):
        return path, 0
    tree = _Tree(problem, path, priced=False)
    left, right, result = tree.left, tree.right, tree.result
    known, fill = problem.known_size, problem.fill_size
    flops = [0] * len(left)
    for node in range(n, len(left)):
        union = result[left[node]] | result[right[node]]
        flops[node] = known(union) or fill(union)
    total = best = sum(flops)
    best_children = left[:], right[:]
    draw, exp, log2 = random.Random(f"einstride-anneal:{seed}").random, math.exp, math.log2
    start = ANNEAL_T_START if sweeps >= ANNEAL_SHORT_SWEEPS else ANNEAL_T_SHORT
    moves, ratio = 0, ANNEAL_T_FINAL / start
    for sweep in range(sweeps):
        if time.perf_counter() > deadline:
            break
        temperature = start * ratio ** (sweep / max(sweeps - 1, 1))
        stack = [len(left) - 1]
        while stack:
            top = stack.pop()
            a, b = left[top], right[top]
            # the rotation, drawn: the product below ``top`` that changes (``low``), its new
            # operands ``u`` and ``v``, and ``top``'s other operand ``w``
            if b < n or (a >= n and draw() < 0.5):
                if a < n:
                    continue  # two operands below: nothing to rotate
                low, other = a, b
            else:
                low, other = b, a
            u, w = (left[low], right[low]) if draw() < 0.5 else (right[low], left[low])
            moves += 1
            lower = result[u] | result[other]
            kept = lower & (result[w] | result[top])  # the labels the lower product keeps
            upper = kept | result[w]
            cost_low, cost_top = known(lower) or fill(lower), known(upper) or fill(upper)
            old, new = flops[top] + flops[low], cost_low + cost_top
            # (log2 of each: a ratio of sizes past a float's range is no float; a review)
            if new <= old or draw() < exp((log2(old) - log2(new)) / temperature):
                left[low], right[low], result[low], flops[low] = u, other, kept, cost_low
                left[top], right[top], flops[top] = low, w, cost_top
                total += new - old
                if w >= n:
                    stack.append(w)
                stack.append(low)
            else:
                if a >= n:
                    stack.append(a)
                if b >= n:
                    stack.append(b)
        if total < best:
            best, best_children = total, (left[:], right[:])
    tree.left, tree.right = best_children
    return tree.path(), moves


def rotatable_products(path: Path, n: int) -> int:
    """How many products of ``path`` over ``n`` operands have a product below them: the
    moves one sweep of :func:`anneal` tries on its tree (about two thirds of the products
    of a random network's greedy tree; all but the first of a chain's).  At least 1.

    >>> rotatable_products(((0, 1), (1, 2), (0, 1)), 4)  # a chain: ((a b) d) c
    2
    >>> rotatable_products(((0, 1), (0, 1), (0, 1)), 4)  # balanced: (a b) (c d)
    1
    """
    if len(path) != n - 1 or any(len(entry) != 2 for entry in path):
        return max(len(path), 1)
    return max(sum(1 for a, b in tree_of(path, n) if a >= n or b >= n), 1)


class _Tree:
    """A pairwise path as a mutable binary tree: nodes ``0..n-1`` are the operands,
    ``n..2n-2`` the products (the root last); per node its operands' labels, the labels of
    every operand outside it, its result's labels and the cost of the product making it
    (unless ``priced`` is False: then 0)."""

    def __init__(self, problem: Problem, path: Path, *, priced: bool = True) -> None:
        self.problem, n = problem, len(problem.inputs)
        size = 2 * n - 1
        self.left, self.right = [-1] * size, [-1] * size
        for step, (a, b) in enumerate(tree_of(path, n)):
            self.left[n + step], self.right[n + step] = a, b
        self.inside = list(problem.inputs) + [0] * (n - 1)
        self.outside = [0] * size
        self.result = list(problem.inputs) + [0] * (n - 1)
        self.cost = [0.0] * size
        # the subtrees re-solved without a gain, by their branches' and top's labels, with
        # their work: a later sweep meets most of them unchanged, and solving one again
        # would find the same tree (their work is still counted: the same budget buys the
        # same sweeps, only sooner)
        self.unimproved: dict[tuple[tuple[int, ...], int], int] = {}
        self._update(size - 1, (), priced=priced)

    def _update(self, top: int, kept: Sequence[int], *, priced: bool = True) -> None:
        """Recompute the products of ``top``'s subtree down to ``kept`` (nodes whose operand
        set is unchanged: their labels and costs depend on nothing else)."""
        n, order, stack = len(self.problem.inputs), [], [top]
        while stack:  # pre-order: parents before children
            node = stack.pop()
            if node >= n and node not in kept:
                order.append(node)
                stack += (self.left[node], self.right[node])
        left, right, inside, outside = self.left, self.right, self.inside, self.outside
        for node in reversed(order):
            inside[node] = inside[left[node]] | inside[right[node]]
        for node in order:
            outside[left[node]] = outside[node] | inside[right[node]]
            outside[right[node]] = outside[node] | inside[left[node]]
        for node in reversed(order):
            keep = self.result[node] = inside[node] & (self.problem.output | outside[node])
            if priced:
                a, b = self.result[left[node]], self.result[right[node]]
                self.cost[node] = self.problem.pair(a, b, keep)[0]

    def resolve(self, top: int, k: int, floor: float) -> tuple[int, float]:
        """Re-solve the subtree of up to ``k`` branches below ``top`` (taken breadth first,
        which gives balanced subtrees); returns the work spent (:func:`solved_exactly`)
        and the ns saved."""
        n = len(self.problem.inputs)
        queue, branches, products = [self.left[top], self.right[top]], list[int](), [top]
        while queue and len(queue) + len(branches) < k:
            node = queue.pop(0)
            if node < n:
                branches.append(node)
            else:
                products.append(node)
                queue += (self.left[node], self.right[node])
        branches += queue
        current = sum(self.cost[node] for node in products)
        if len(branches) < 3 or current <= max(floor, len(products) * STEP_NS * 1.0001):
            return 0, 0.0  # too cheap to gain anything, or every product a fixed cost
        key = (tuple([self.result[b] for b in branches]), self.result[top])
        work = self.unimproved.get(key)
        if work is not None:
            return work, 0.0
        (ns, _, _, tree), work = solved_exactly(self.problem, key[0], key[1])
        if ns >= current * (1 - 1e-9):
            self.unimproved[key] = work
            return work, 0.0
        free = [node for node in products if node != top]

        def place(sub: Any, node: int) -> int:
            if isinstance(sub, int):
                return branches[sub]
            self.left[node] = place(sub[0], -1 if isinstance(sub[0], int) else free.pop())
            self.right[node] = place(sub[1], -1 if isinstance(sub[1], int) else free.pop())
            return node

        place(tree, top)
        self._update(top, branches)
        return work, current - ns

    def path(self) -> Path:
        """The tree as NumPy's path format (each product after both of its operands)."""
        n = len(self.problem.inputs)
        ssa_id, ssa, stack = list(range(n)) + [-1] * (n - 1), [], [2 * n - 2]
        while stack:  # post-order without recursion: a network may have thousands of tensors
            node = stack[-1]
            a, b = self.left[node], self.right[node]
            if ssa_id[a] < 0:
                stack.append(a)
            elif ssa_id[b] < 0:
                stack.append(b)
            else:
                stack.pop()
                ssa.append((ssa_id[a], ssa_id[b]))
                ssa_id[node] = n + len(ssa) - 1
        return linear_of(ssa)
