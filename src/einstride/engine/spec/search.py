"""The default path search (``optimize="auto"``): time spent where it pays.

The search first takes the greedy path (the exact optimum for up to four operands; spectral
bisection's, :mod:`.bisection`, on a network of more than 16 operands laid out like a
lattice whose cut is wide enough to matter: :func:`_first_tree`) and estimates, with a
cost model of einstride's own executor, how long the contraction will take.  A share of
that estimate is the search *budget*: nothing more for a contraction of microseconds, up to
a few seconds for one of minutes.  Within the budget it tries more finders -- greedy after
a bisection, the exact optimum over the cost model for a few operands, opt_einsum's dynamic
programming for a moderate number, subtree reconfiguration of the best path so far
(:mod:`.trees`: subtrees of four branches re-solved exactly, while that pays back its
time), simulated annealing of that path on a network of 24 operands or more where the
budget lasts for enough sweeps (:func:`.trees.anneal`, over FLOPs, its tree then
reconfigured), then greedy trials
(three fixed weightings of the operands' sizes, then seeded random
ones; after a reconfiguration, each random trial that comes near the best is reconfigured
in turn, where the budget lasts for several, taking turns with partition trials where the
first path is greedy's, :mod:`.partition`; the trials only where the finders before
them gained what they cost); with a budget given (a longer search, paid for by repeated
calls), half of what the trials would take goes to reconfiguring the best path (and the
best of the other kind, greedy's or a partition's) with larger subtrees, of five to eight
branches -- and keeps the candidate the cost model rates cheapest.  The
budget follows the cheapest path found so far: a finder that finds a much
cheaper path leaves less to gain, and the search stops sooner; only the fixed weightings
keep the budget of the best path before reconfiguration (they are restarts that find other
paths, not refinements of the best one).

The cost model (:mod:`.costmodel`) prices what the executor does, not FLOPs alone.  The
budget is converted into work (how many trials and pair costs) by a fixed estimate of
their cost, never by a clock, so the search is deterministic for a seed; only a safety
deadline (three budgets) stops the trials and the larger subtrees on a machine far slower
than that estimate, and the choice then says so (and on a lattice symmetric in three or
more directions, the bisection's halves depend on which eigenvectors LAPACK returns, as a
partition trial's halves do on a graph whose Laplacian has equal eigenvalues).

>>> inputs = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]           # a ring of five matrices
>>> choice = search_path(inputs, (), (30, 40, 50, 60, 70))
>>> choice.finder, choice.path == search_path(inputs, (), (30, 40, 50, 60, 70)).path
('greedy', True)
>>> search_path([(0, 1), (1, 2), (2, 3)], (0, 3), (1000, 10, 1000, 10)).path   # optimal
((1, 2), (0, 1))
"""

from __future__ import annotations

import math
import random
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from opt_einsum import paths as oe_paths  # type: ignore[import-untyped]

from ..forksafe import rlock
from .bisection import CUT_FACTOR, LEAF, bisection_ssa, lattice_bits
from .costmodel import Problem, linear_of
from .greedy import greedy_ssa
from .partition import PartitionGraph, partition_graph, partition_pairs, partition_ssa
from .trees import (
    anneal,
    optimal_tree,
    reconfigure,
    rotatable_products,
    subtree_work,
    tree_to_path,
)

__all__ = [
    "MAX_BUDGET_S",
    "PathChoice",
    "adopt_longer",
    "cheapest_finder_s",
    "forget_longer",
    "longer_generation",
    "rated_choice",
    "recall_choice",
    "remember_choice",
    "search_budget",
    "search_path",
]

Path = tuple[tuple[int, ...], ...]

# -- the budget ------------------------------------------------------------------------------
BUDGET_SHARE = 0.25  # of the estimated contraction time, spent on the search
MAX_BUDGET_S = 4.0
TRIAL_S_PER_TENSOR = 80e-6  # one greedy trial (and its scoring), per operand (measured: 63-85 µs)
TRIAL_S_PER_PAIR = 6e-6  # ... or, where more, per pair of operands sharing a label (a dense
TRIAL_LABELS = 300.0  # network's), times 1 + labels / this (masks of more labels: slower ops)
MAX_TRIALS = 256
FIXED_WEIGHTS = (3.0, 0.0, 2.0)  # the first trials' weights of the operands' sizes (restarts)
DEADLINE_FACTOR = 3.0  # the trials stop past this many budgets (a machine far too slow)
RECONF_S_PER_PAIR = 10e-6  # subtree reconfiguration, per pair cost (measured: 6-16 µs)
RECONF_SUBTREE = 4  # branches per subtree (measured: 5 rarely finds more once 4 converged)
RECONF_MIN_SUBTREES = 4  # it runs when the budget lasts for this many subtrees or more
DEEPEST_SUBTREE = 8  # larger subtrees, where the budget lasts (8: 3,025 pair costs each)
DEEPEN_SHARE = 0.5  # of the budget left after the restarts, kept for the larger subtrees
REFINE_WITHIN = 4.0  # a random-greedy trial this many times the best path's cost or less
#   is reconfigured (measured: the trials that became the best were within 1.0-3.9x)
REFINE_MIN_TRIALS = 4  # the refined trials start when the budget lasts for this many: one
#   pays off rarely (measured: 5 of 49 beat the best on the benchmark's random 60-tensor
#   network of bonds 2-8, the largest gain from the 37th)
OPTIMAL_ALWAYS = 4  # up to this many operands the exact optimum is cheaper than greedy
OPTIMAL_MAX = 7  # the exact optimum takes ~3**n/2 pair costs
DP_MAX = 12  # opt_einsum's dynamic programming: exponential past this
BISECTION_FROM = max(LEAF, DP_MAX)  # operands past which a lattice's first path is bisected
BISECTION_MIN_ELEMENTS = 2**19  # ... where its operands times its cut's elements reach this
BISECTION_UP_TO = 2048  # ... and up to this many (past it the eigenvectors take seconds: 5.7 s
#   at 3,025 operands, one thread; a lattice that large contracts on no machine anyway)
PARTITION_FROM = 20  # operands from which partition trials run (where the first path is greedy's)
PARTITION_UP_TO = 1024  # ... and up to this many (a tree grows as n**3: 0.2-0.3 s at 800)
PARTITION_S_PER_TENSOR = 40e-6  # one partition tree: per operand, per pair of operands its
PARTITION_S_PER_PAIR = 40e-6  # graph links (FM's passes), per operand cubed (eigenvectors)
PARTITION_S_CUBED = 0.45e-9  # (measured per tree, random networks of degree 3: 100 operands
#   9 ms, 200 23 ms, 400 63 ms, 800 195 ms; the first tree of a search 1.5x, its eigenvectors)
ANNEAL_FROM = 24  # operands from which annealing runs (fewer: a reconfiguration's subtrees
# cover much of the tree, and the anneal rarely pays its time; measured on random networks
# of 16 and 20 tensors of degree 4, the search's time plus half its path's estimate 1.18x
# and 1.02x with it, where the estimates alone were 0.96x and 0.80x)
ANNEAL_S_PER_MOVE = 1.8e-6  # one annealing move, the tree's building and its path included
# (measured in the search, four random 100-tensor networks of 150 labels: 1.4-1.8 µs a move
# over 1,650-26,600 moves; an earlier 3.0 µs over 1,850 moves was a slower phase).  With it
# and a sweep's moves counted on the start tree (:func:`.trees.rotatable_products`; n - 1
# before) the same budget buys 2.4x the sweeps: 27 networks' annealing searches, three seeds,
# paths estimated 0.93x, FLOPs 0.95x, the searches 1.18x longer (closer to their budget);
# run alternated, 9 random networks of 60-100 tensors 0.92x and 0.95x in two rounds (single
# ones 0.51x-1.25x; the benchmark's random-100 0.59x and 0.66x, 5.1e8 FLOPs, was 8.4e8)
ANNEAL_LABELS = 2000.0  # times 1 + labels / this (masks of more labels: slower ops; measured,
# a review: 2.5, 4.4 and 8.1 µs a move at 150, 1,500 and 4,500 labels)
ANNEAL_MIN_SWEEPS = 20  # it runs when the budget lasts for this many sweeps (measured, 8
# random regular networks of 60-150 tensors whose first-call budget bought 20-59 sweeps, three
# seeds: their paths estimated 0.74x those of a gate at 30 sweeps, a short anneal starting
# cooler, :data:`.trees.ANNEAL_T_SHORT`; 0.89x where it starts at 2 as long ones do)
ANNEAL_MAX_SWEEPS = 400  # ... and stops at this many (measured: 240 sweeps in one anneal did
# no better than in four of 60, the best of them reconfigured)
ANNEAL_SHARE = 0.6  # of the budget left at most (a sweep's moves counted on the start tree;
# the reconfiguration of the annealed tree then has what is left, usually more than 40%)
SCORE_CAP = 10**300  # sizes in a weighted greedy trial's score are capped here (a float)
INFEASIBLE_ELEMENTS = 2**34  # an intermediate past this (128 GiB of float64) fits no machine


@dataclass(frozen=True, slots=True, kw_only=True)
class PathChoice:
    """A contraction path and how it was found.

    ``finder`` names the finder whose path won (``"optimal"``, ``"greedy"``, ``"dp"``,
    ``"bisection"``, ``"greedy, weight 3"`` (a restart: greedy with the operands' sizes weighed so),
    ``"random-greedy"``, ``"partition"`` (:mod:`.partition`), ``"annealing"``
    (:func:`.trees.anneal`), or one of these with
    ``", reconfigured"`` (``", reconfigured
    (subtrees of 7)"``: the larger subtrees of a longer search); or for other
    ``optimize`` forms ``"given"``, ``"left to right"``, an opt_einsum finder's name or an
    optimizer's class).  ``cost_ns`` and ``flops`` rate the path with :func:`path_cost`;
    ``first`` names the first finder (``"greedy"``, or ``"bisection"`` on a lattice) and
    ``baseline_ns`` is its path's cost (what the budget was derived from); ``budget_s`` the
    search budget, ``tried`` the finders run (greedy restarts, random-greedy and partition
    trials with their counts, reconfiguration with its pair costs, annealing with its
    sweeps and moves) and ``candidates`` the paths
    scored.  When a bound of the first path's cost (``bound_ns``, from its products'
    sizes, the largest priced exactly: :meth:`.costmodel.Problem.cost_bound`) already
    leaves a budget that fits no other finder, that path is taken unrated (``rated``
    False: the cost fields are 0 until :func:`rated_choice` fills them in, as the plan
    report asks).
    """

    path: Path
    finder: str
    cost_ns: float
    flops: int
    largest: int
    baseline_ns: float = 0.0
    budget_s: float = 0.0
    tried: tuple[str, ...] = ()
    candidates: int = 1
    seed: int = 0
    bound_ns: float = 0.0
    rated: bool = True
    first: str = "greedy"

    def describe(self) -> str:
        """One line for the plan report: which finder won and why.

        >>> print(search_path([(0, 1), (1, 2), (2, 3)], (0, 3), (9, 8, 7, 6)).describe())
        optimal over the cost model (3 operands: every order scored); est. 21.4 µs, 1,536 FLOPs
        """
        rated = f"est. {_fmt_ns(self.cost_ns)}, {self.flops:,} FLOPs"
        if not self.tried:
            return f"{self.finder}; {rated}"
        if self.tried == ("optimal",):
            return (
                f"optimal over the cost model ({self.candidates} operands: every order "
                f"scored); {rated}"
            )
        first = self.first
        budget = f"budget {_fmt_s(self.budget_s)}" + (
            f" = {BUDGET_SHARE:.0%} of {first}'s est. {_fmt_ns(self.baseline_ns)}"
            if self.budget_s == search_budget(self.baseline_ns)
            else " (given)"
        )
        if self.bound_ns:
            budget = (
                f"budget {_fmt_s(self.budget_s)} = {BUDGET_SHARE:.0%} of at most "
                f"{_fmt_ns(self.bound_ns)}, a bound of {first}'s est. from its products' sizes"
            )
        if self.candidates == 1:
            stopped = "".join(f"; {tried}" for tried in self.tried if tried != first)
            return f"{first} (no other finder fits the search {budget}{stopped}); {rated}"
        gain = self.baseline_ns / self.cost_ns if self.cost_ns > 0 else 1.0
        why = (
            f"no candidate beat {first}'s own path"
            if self.finder == first
            else f"{gain:.3g}x cheaper than {first}'s path"
            if gain >= 1.1
            else f"{1 - 1 / gain:.1%} cheaper than {first}'s path"
        )
        return (
            f"{self.finder} won among {self.candidates} candidates from "
            f"{', '.join(self.tried)} ({why}; {budget}); {rated}"
        )


def _fmt_ns(ns: float) -> str:
    return _fmt_s(ns * 1e-9)


def _fmt_s(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


@dataclass(frozen=True, slots=True)
class _Candidate:
    finder: str
    path: Path
    ns: float
    flops: int
    largest: int


# -- finders ---------------------------------------------------------------------------------


def _greedy(problem: Problem, trial: int = -1, seed: int = 0) -> Path:
    """opt_einsum's greedy (trial -1; :mod:`.greedy`, its algorithm over masks); a trial
    ``>= 0`` weighs the operands' sizes by a factor (the first trials: the fixed ones, 3
    finds paths of a third of the FLOPs of greedy's on random regular networks, 0 on MPS
    sandwiches) and the later ones also jitter every candidate's score with a generator of
    their own (opt_einsum's random-greedy uses the global one)."""
    if trial < 0:
        return linear_of(greedy_ssa(problem))
    rng: random.Random | None = None
    if trial < len(FIXED_WEIGHTS):
        weight, spread = FIXED_WEIGHTS[trial], 0.0
    else:
        rng = random.Random(f"einstride-search:{seed}:{trial}")
        weight, spread = rng.uniform(0.5, 2.0), 10 ** rng.uniform(-2.0, -0.5)

    def score(size12: int, size1: int, size2: int) -> float:
        # sizes past a float's range (a dense network's intermediates: 2**1600 seen) are
        # capped, as the cost model caps them; such a path fits no machine anyway
        removed = min(size12, SCORE_CAP) - weight * (min(size1, SCORE_CAP) + min(size2, SCORE_CAP))
        return removed if rng is None else removed * rng.gauss(1.0, spread)

    return linear_of(greedy_ssa(problem, score))


def _trial_name(trial: int) -> str:
    """The finder name of greedy trial ``trial`` (a fixed weighting, or a seeded one).

    >>> _trial_name(0), _trial_name(len(FIXED_WEIGHTS))
    ('greedy, weight 3', 'random-greedy')
    """
    if trial < len(FIXED_WEIGHTS):
        return f"greedy, weight {FIXED_WEIGHTS[trial]:g}"
    return "random-greedy"


def _dp(problem: Problem) -> Path:
    optimizer = oe_paths.DynamicProgramming(minimize="flops", search_outer=False)
    found = optimizer(*problem.oe_problem())
    return tuple(tuple(e) for e in found)


def _optimal(problem: Problem) -> _Candidate:
    """The cheapest contraction tree under the cost model, by dynamic programming over
    every subset of operands (``3**n / 2`` pair costs)."""
    ns, flops, largest, tree = optimal_tree(problem, problem.inputs, problem.output)
    return _Candidate("optimal", tree_to_path(tree, len(problem.inputs)), ns, flops, largest)


def _three(problem: Problem) -> _Candidate:
    """:func:`_optimal` for three operands: the three orders, written out."""
    out, pair, size = problem.output, problem.pair, problem.size
    found: _Candidate | None = None
    for first, last in (((0, 1), 2), ((0, 2), 1), ((1, 2), 0)):
        x, y, z = problem.inputs[first[0]], problem.inputs[first[1]], problem.inputs[last]
        keep = (x | y) & (out | z)
        ns1, flops1 = pair(x, y, keep)
        ns2, flops2 = pair(keep, z, out)
        if found is None or ns1 + ns2 < found.ns:
            largest = max(size(keep), size((keep | z) & out))
            found = _Candidate("optimal", (first, (0, 1)), ns1 + ns2, flops1 + flops2, largest)
    assert found is not None
    return found


# -- the search ------------------------------------------------------------------------------


def _rate(problem: Problem, finder: str, path: Path) -> _Candidate:
    ns, flops, largest = problem.cost(path)
    return _Candidate(finder, path, ns, flops, largest)


def search_budget(estimate_ns: float) -> float:
    """Seconds of search for a contraction estimated at ``estimate_ns``.

    >>> search_budget(50_000), search_budget(2e9), search_budget(1e13)
    (1.25e-05, 0.5, 4.0)
    """
    return min(MAX_BUDGET_S, BUDGET_SHARE * estimate_ns * 1e-9)


def cheapest_finder_s(n: int) -> float:
    """The least budget in which :class:`_Search` runs any finder after the first path on
    ``n`` operands (its checks, in the order it runs them)."""
    found = TRIAL_S_PER_TENSOR * n
    if n <= OPTIMAL_MAX:
        found = min(found, _optimal_seconds(n))
    if n <= DP_MAX:
        found = min(found, _dp_seconds(n))
    return min(found, _cheapest_reconfiguration_s(n))


def _greedy_trial_s(problem: Problem) -> float:
    """The estimated seconds of one greedy trial on ``problem`` and its scoring: per operand
    on a sparse network, per pair of operands sharing a label where these are more (a dense
    network: each contraction weighs the product with every partner, over masks of many
    labels; measured, the trial and its rating: complete graphs of 20, 40 and 60 operands
    2.2, 15 and 76 ms, 12-43 µs a pair, estimated now 1.9, 17 and 73 ms, where the estimate
    per operand said 1.6, 3.2 and 4.8 ms, and searches of a 4 s budget took 5.3 s at 40
    (bond 16) and 12.2 s at 60 (bond 2, cut at the safety deadline), now 2.3 and 2.4 s;
    random networks of 100 and 200 operands with three labels of 30 and 60 operands each,
    9 and 33 ms, estimated 13 and 68 (per operand: 8 and 16); random regular networks of
    degree 3-8, 38-109 µs an operand).  The networks of the benchmark link at most 2.25
    pairs per operand: their estimate is the one per operand (their paths unchanged).

    >>> ring = Problem([(k, (k + 1) % 30) for k in range(30)], (), [2] * 30)
    >>> _greedy_trial_s(ring) == TRIAL_S_PER_TENSOR * 30
    True
    >>> pairs = [(a, b) for a in range(20) for b in range(a)]    # a complete graph
    >>> links = [[k for k, pair in enumerate(pairs) if a in pair] for a in range(20)]
    >>> _greedy_trial_s(Problem(links, (), [2] * len(pairs))) / (TRIAL_S_PER_TENSOR * 20)
    1.16
    """
    n, output = len(problem.inputs), problem.output
    # (greedy pairs nothing by an output label, nor by one of every operand: it waits for
    # the last step)
    pairs = sum(
        k * (k - 1) // 2
        for label, k in enumerate(problem.holder_counts())
        if 2 <= k < n and not output >> label & 1
    )
    per_pair = TRIAL_S_PER_PAIR * pairs * (1.0 + len(problem.labels) / TRIAL_LABELS)
    return max(TRIAL_S_PER_TENSOR * n, per_pair)


def _cheapest_reconfiguration_s(n: int, subtree: int = RECONF_SUBTREE) -> float:
    """The least budget in which a reconfiguration runs on ``n`` operands (the pair costs
    of :data:`RECONF_MIN_SUBTREES` subtrees, plus building the tree and rating its path)."""
    return (RECONF_MIN_SUBTREES * subtree_work(subtree) + 3 * n) * RECONF_S_PER_PAIR


def _partition_tree_s(n: int, pairs: int) -> float:
    """The estimated seconds of one partition tree on ``n`` operands whose graph links
    ``pairs`` pairs of them (:func:`.partition.partition_pairs`)."""
    return PARTITION_S_PER_TENSOR * n + PARTITION_S_PER_PAIR * pairs + PARTITION_S_CUBED * n**3


def _optimal_seconds(n: int) -> float:
    return 1e-6 * 3.0**n


def _dp_seconds(n: int) -> float:
    return 1e-3 * 2 ** ((n - 4) / 1.5)


def search_path(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    *,
    seed: int = 0,
    budget_s: float | None = None,
) -> PathChoice:
    """The budgeted search over ``inputs`` (distinct label ids per operand) -> ``output``;
    ``sizes[label]`` is each label's size.  ``budget_s`` overrides the budget derived from
    the first path's estimated cost.  The same arguments give the same path (unless the
    machine is so slow that the safety deadline, :data:`DEADLINE_FACTOR` times the
    budget, cuts the trials short: the choice then says so; or on a lattice symmetric in
    three or more directions, where the bisection's halves depend on which eigenvectors
    LAPACK returns, as a partition trial's do on a graph whose Laplacian has equal
    eigenvalues), except that the default
    search (no budget, seed 0) of a problem for which a longer search adopted a path
    (:func:`adopt_longer`, while its shapes repeated) returns that path."""
    if budget_s is None and seed == 0 and (longer := _longer(inputs, output, sizes)):
        return longer
    problem = Problem(inputs, output, sizes)
    n = len(problem.inputs)
    if n <= 2:
        path: Path = ((0,),) if n == 1 else (((0, 1),) if n == 2 else ())
        return _chosen(_rate(problem, "optimal", path), (), 0.0, 0.0, 1, seed, "optimal")
    if n <= OPTIMAL_ALWAYS:
        best = _three(problem) if n == 3 else _optimal(problem)
        return _chosen(best, ("optimal",), best.ns, 0.0, n, seed, "optimal")
    finder, tree, stopped = _first_tree(problem)
    path = linear_of(tree)
    if budget_s is None:
        cheapest = cheapest_finder_s(n)  # (past an estimate that buys it, the sum can stop)
        bound = problem.cost_bound(tree, past=cheapest / BUDGET_SHARE * 1e9)
        if search_budget(bound) < cheapest:  # the rating could change nothing
            return PathChoice(
                path=path, finder=finder, cost_ns=0.0, flops=0, largest=0,
                budget_s=search_budget(bound), tried=(*stopped, finder), seed=seed,
                bound_ns=bound, rated=False, first=finder,
            )  # fmt: skip
    first = _rate(problem, finder, path)
    search = _Search(problem, first, budget_s, seed, stopped)
    search.run()
    best = search.best()
    tried = tuple(search.tried)
    return _chosen(best, tried, first.ns, search.budget, len(search.candidates), seed, first.finder)


def _first_tree(problem: Problem) -> tuple[str, list[tuple[int, int]], tuple[str, ...]]:
    """The first finder's tree, from which the search's budget is derived: spectral
    bisection's (:mod:`.bisection`) on a network of more than :data:`BISECTION_FROM`
    operands laid out like a lattice, else greedy's; with what stopped on the way.  On a
    lattice greedy's path is rarely good (measured, the cost model's estimates of the
    bisection's path against greedy's: the closed 6 x 6 grid of bond 4 0.29x, 8 x 8 of bond
    3 0.72x (7.3e6 against 2.0e7 FLOPs; cotengra's in 5 s 4.8e6), the 8 x 8 PEPS norm of
    bond 2 0.22x; a 10 x 10 grid of bond 2 1.26x, a contraction of a millisecond) and,
    taken first, the bisection costs about two greedy paths' time (2.0 against 1.1 ms on
    the 8 x 8 grid) instead of adding to it where the budget would not buy it.  A lattice
    whose operands times the elements of its cut (``2**cut`` for a cut of ``cut`` bits, a
    lower bound of its intermediates) stay below :data:`BISECTION_MIN_ELEMENTS` is a
    contraction of a millisecond or less, where greedy's path costs little whatever its
    quality and the bisection would nearly double the call (measured, first calls: a
    10 x 10 grid of bond 2, 2.2e5, 4.1 against 7.3 ms, its bisection's path the dearer;
    5 x 5 and 6 x 6 of bond 2, 1.1 against 2.0 ms; the 8 x 8 grid of bond 3 is at 1.5e6,
    6 x 6 of bond 4 at 7.7e5, the 8 x 8 PEPS norm of bond 2 at 1.8e7)."""
    n = len(problem.inputs)
    if BISECTION_FROM < n <= BISECTION_UP_TO and (max_bits := lattice_bits(problem)) is not None:
        # n * 2**(max_bits / CUT_FACTOR) < BISECTION_MIN_ELEMENTS, in logarithms: a cut of
        # thousands of bits is past a float's range (a review)
        small = n < BISECTION_MIN_ELEMENTS
        if small and max_bits / CUT_FACTOR < math.log2(BISECTION_MIN_ELEMENTS / n):
            return "greedy", greedy_ssa(problem), ()
        tree = bisection_ssa(problem, max_bits)
        if tree is not None:
            return "bisection", tree, ()
        stop = f"spectral bisection (stopped: a block past {max_bits:.3g} bits)"
        return "greedy", greedy_ssa(problem), (stop,)
    return "greedy", greedy_ssa(problem), ()


class _Search:
    """The finders after the first, each while the budget left allows it: the exact
    optimum, dynamic programming, greedy (after a lattice's bisection), subtree
    reconfiguration of the best path, its annealing (then reconfigured), then greedy trials
    (after a reconfiguration, random ones reconfigured in turn, taking turns with partition
    trials; with a budget given, then the best path reconfigured with larger subtrees).
    The budget is a share of the cheapest path found so far (a finder that finds a much
    cheaper path shrinks it: there is less left to gain); every finder's time is estimated,
    never measured, so the choice is the same on any machine, except past the safety
    deadline."""

    def __init__(
        self,
        problem: Problem,
        first: _Candidate,
        budget_s: float | None,
        seed: int,
        stopped: tuple[str, ...] = (),
    ) -> None:
        self.problem, self.seed, self.fixed = problem, seed, budget_s
        self.candidates, self.tried = [first], [*stopped, first.finder]
        self.best_ns, self.spent = first.ns, 0.0
        self.budget = self.restarts = self._allowed()
        self.deadline = time.perf_counter() + DEADLINE_FACTOR * self.budget + 0.01
        self.partition_graph: PartitionGraph | None = None  # built at the first partition trial
        self.trial_s = _greedy_trial_s(problem)  # one greedy trial's estimated seconds
        self.partitions = 0  # partition trials run

    def best(self) -> _Candidate:
        """The cheapest candidate so far (the first of equals: the first finder's)."""
        return min(self.candidates, key=lambda c: c.ns)

    def _allowed(self) -> float:
        return search_budget(self.best_ns) if self.fixed is None else max(0.0, self.fixed)

    def _fits(self, seconds: float) -> bool:
        return self.spent + seconds <= self._allowed()

    def _add(self, candidate: _Candidate, seconds: float) -> None:
        self.candidates.append(candidate)
        self.best_ns = min(self.best_ns, candidate.ns)
        self.spent += seconds

    def run(self) -> None:
        n = len(self.problem.inputs)
        if n <= OPTIMAL_MAX and self._fits(_optimal_seconds(n)):
            self._add(_optimal(self.problem), _optimal_seconds(n))
            self.tried.append("optimal")
        if n <= DP_MAX and self._fits(_dp_seconds(n)):
            self._add(_rate(self.problem, "dp", _dp(self.problem)), _dp_seconds(n))
            self.tried.append("dp")
        trial = 0
        if self.candidates[0].finder != "greedy" and self._fits(self.trial_s):
            self._add(_rate(self.problem, "greedy", _greedy(self.problem)), self.trial_s)
            self.tried.append("greedy")  # after the bisection (a lattice's first path)
        if self._infeasible():
            # no machine holds this path's intermediates: improving it step by step is slow
            # where a single greedy trial of another weighting finds a sane one
            trial = self._trials(0, len(FIXED_WEIGHTS), until_feasible=True)
        self.restarts = self._allowed()  # the fixed weightings' budget: it does not shrink
        reconfigured = "optimal" not in self.tried and self._reconfigure()
        if reconfigured:
            self._anneal()
        if not self._paid():
            return
        # after a reconfiguration a jittered trial is worth its time only reconfigured in
        # turn: plain, none beat a reconfigured path on the benchmark's networks
        trial = self._trials(trial, len(FIXED_WEIGHTS) if reconfigured else MAX_TRIALS)
        if reconfigured:
            # a budget given was paid for by the calls that a longer search serves: part
            # of it goes to depth (larger subtrees), which a first call's share never buys
            keep_s = DEEPEN_SHARE * (self._allowed() - self.spent) if self.fixed else 0.0
            if not self._deepening_fits(keep_s):
                keep_s = 0.0
            trial = self._reconfigured_trials(trial, keep_s=keep_s)
            if keep_s and self._deepen():
                self._reconfigured_trials(trial)  # what the larger subtrees left

    def _paid(self) -> bool:
        """Whether the finders run so far gained (the first path's estimate less the best one's) at
        least the seconds they cost, or none ran; else the search stops before the greedy
        trials, and says so (greedy's own path after a lattice's bisection counts as a
        finder: where it cannot beat the bisection, its trials rarely do).  Where the first
        finders find little, the trials rarely find more (measured on the benchmark's
        networks: the random 20-tensor one of degree 4, reconfiguration 2.7% cheaper for 3.3
        ms, then three restarts 1.6 ms each for a path rated 12% cheaper, 6% faster than the
        reconfigured one in einstride's executor (31.0 against 33.0 ms, greedy's 34.4),
        about what the restarts took; the random 100-tensor one, reconfiguration 4.9%
        cheaper, then restarts rated 120x and 1,400x its cost), while they cost their whole
        share of the budget: a search that finds nothing costs the contraction a quarter
        more.  Estimates, not clocks: the same on any machine.  A budget given
        (``search_path(budget_s=...)``) is spent as given."""
        if self.fixed is not None:
            return True
        gained = (self.candidates[0].ns - self.best_ns) * 1e-9
        trial_s = self.trial_s
        if self.spent + trial_s > max(self._allowed(), self.restarts):
            return True  # no trial fits the budget left: nothing to stop
        if self.spent == 0.0 or gained >= self.spent:
            return True
        self.tried.append(
            f"no greedy trials (the search so far gained {_fmt_s(gained)} "
            f"for {_fmt_s(self.spent)} spent)"
        )
        return False

    def _infeasible(self) -> bool:
        return min(c.largest for c in self.candidates) > INFEASIBLE_ELEMENTS

    def _trials(self, first: int, stop: int, *, until_feasible: bool = False) -> int:
        """Greedy trials ``first..stop-1`` while the budget lasts (for the fixed weightings,
        the budget of the best path before reconfiguration: they are restarts, which find
        other paths, not refinements of the best); returns the next one."""
        trial, cost = first, self.trial_s
        while trial < stop and (
            self._fits(cost) or (trial < len(FIXED_WEIGHTS) and self.spent + cost <= self.restarts)
        ):
            if until_feasible and not self._infeasible():
                break
            if trial and time.perf_counter() > self.deadline:
                self._cut_at_deadline(trial)
                return MAX_TRIALS
            path = _greedy(self.problem, trial, self.seed)
            self._add(_rate(self.problem, _trial_name(trial), path), cost)
            trial += 1
        fixed = max(0, min(trial, len(FIXED_WEIGHTS)) - first)
        if fixed:
            self.tried.append(f"greedy restarts x{fixed}")
        if trial - first > fixed:
            self.tried.append(f"random-greedy x{trial - first - fixed}")
        return trial

    def _cut_at_deadline(self, trials: int, partitions: int = 0) -> None:
        if trials or not partitions:
            self.tried.append(f"random-greedy x{trials} (cut at the safety deadline)")
        if partitions:
            self.tried.append(f"partition x{partitions} (cut at the safety deadline)")

    def _reconfigure(self) -> bool:
        """Subtree reconfiguration of the best path so far, while the budget lasts and it
        pays back its time (:func:`.trees.reconfigure`); whether it ran."""
        best = self.best()
        found = self._reconfigured(best, self._allowed() - self.spent)
        if found is None:
            return False
        candidate, pairs, seconds = found
        self._add(candidate, seconds)
        self.tried.append(f"subtree reconfiguration ({pairs:,} pair costs)")
        return True

    def _anneal(self) -> None:
        """The best path so far (greedy's or the bisection's, reconfigured) annealed
        (:func:`.trees.anneal`, over FLOPs), then reconfigured under the cost model with
        what the budget has left, on a network of :data:`ANNEAL_FROM` operands or more,
        where the budget lasts for :data:`ANNEAL_MIN_SWEEPS` sweeps (in
        :data:`ANNEAL_SHARE` of it; the reconfiguration its FLOP-lean tree needs has the
        rest).  Greedy's tree and its
        reconfiguration sit in a local optimum that annealing leaves (measured on the
        benchmark's random 100-tensor network: greedy's path reconfigured 0.95x greedy's
        estimate, annealed and reconfigured 0.37-0.84x, eight seeds of 80 sweeps).  It
        comes before the restarts and the trials, and before the check whether the search
        has paid (:meth:`_paid`): a reconfiguration that gains little says nothing of what
        annealing gains.  Measured over the benchmark's networks and 28 random regular
        ones of 30-120 tensors, three seeds each, first calls: the paths' estimates 0.81x
        those without it as a geometric mean, the search's time plus half its path's
        estimate (about the contraction's time) 0.92x, none dearer than 1.1x (from 13
        operands, 0.78x and 0.88x, but the benchmark's 20-tensor network of degree 4
        1.1x; then, with a gate at 30 sweeps, one at 20 the same, at 120 0.91x -- the
        gate at 20 since, short anneals starting cooler: :data:`ANNEAL_MIN_SWEEPS`;
        annealing instead of the first reconfiguration, 0.85x with more networks dearer);
        a search of 0.1 s, 0.89x,
        of 0.5 s 0.98x (the trials that budget buys find much of the same).  A lottery
        per network: single ones 0.29x to 1.23x (one whose budget the trials then
        lacked), most 1.00x."""
        n = len(self.problem.inputs)
        if n < ANNEAL_FROM:
            return
        start = self.best().path
        move_s = ANNEAL_S_PER_MOVE * (1.0 + len(self.problem.labels) / ANNEAL_LABELS)
        left = self._allowed() - self.spent - _cheapest_reconfiguration_s(n)
        sweep_s = move_s * rotatable_products(start, n)
        sweeps = min(ANNEAL_MAX_SWEEPS, int(ANNEAL_SHARE * left / sweep_s))
        if sweeps < ANNEAL_MIN_SWEEPS:
            return
        path, moves = anneal(self.problem, start, sweeps=sweeps, seed=self.seed,
                             deadline=self.deadline)  # fmt: skip
        cut = " (cut at the safety deadline)" if time.perf_counter() > self.deadline else ""
        seconds = moves * move_s
        found = _rate(self.problem, "annealing", path)
        better = self._reconfigured(found, self._allowed() - self.spent - seconds)
        if better is not None:
            found, seconds = better[0], seconds + better[2]
        self._add(found, seconds)
        self.tried.append(f"annealing ({sweeps} sweeps, {moves:,} moves"
                          f"{', reconfigured' if better else ''}){cut}")  # fmt: skip

    def _reconfigured(
        self,
        start: _Candidate,
        budget_s: float,
        subtree: int = RECONF_SUBTREE,
        pair_ns: float = RECONF_S_PER_PAIR * 1e9,
    ) -> tuple[_Candidate, int, float] | None:
        """``start`` reconfigured (subtrees of ``subtree`` branches) within ``budget_s``,
        a pair cost priced at ``pair_ns`` (:func:`.trees.reconfigure`): the candidate, its
        pair costs and their estimated seconds; None when the budget lasts for too few
        subtrees."""
        n = len(self.problem.inputs)
        if budget_s < _cheapest_reconfiguration_s(n, subtree):
            return None
        overhead = 3 * n  # building the tree and rating its path
        pairs = int(budget_s / RECONF_S_PER_PAIR) - overhead
        path, used = reconfigure(
            self.problem,
            start.path,
            subtree=subtree,
            max_pairs=pairs,
            pair_ns=pair_ns,
        )
        base = start.finder.split(", reconfigured")[0]
        deeper = f" (subtrees of {subtree})" if subtree != RECONF_SUBTREE else ""
        found = _rate(self.problem, f"{base}, reconfigured{deeper}", path)
        return found, used, (used + overhead) * RECONF_S_PER_PAIR

    def _deepening_fits(self, budget_s: float) -> bool:
        """Whether ``budget_s`` lasts for a reconfiguration of the next larger subtrees."""
        n = len(self.problem.inputs)
        return budget_s >= _cheapest_reconfiguration_s(n, RECONF_SUBTREE + 1)

    def _deepen(self) -> bool:
        """The best path reconfigured again with larger subtrees, five branches up to
        :data:`DEEPEST_SUBTREE`, in turn, while the budget given lasts: a subtree of four
        re-solves three products at a time, and a path it cannot improve may still hide
        a cheaper order of seven or eight operands (a subtree of seven costs 65 pair
        costs' work over arrays, :func:`.trees.subtree_work`, 2.6x one of four).  Measured
        on the benchmark's networks, searches of 2 s with and without (half the budget
        left after the restarts kept for this), before the arrays: the estimates 0.84x
        (the closed 8 x 8 grid of bond 3, 6.3e6 -> 4.5e6 FLOPs, 0.89 ->
        0.74 ms a call), 0.78x (the 8 x 8 PEPS norm, 5.4 -> 5.1 ms), 0.85x (random
        100-tensor, 51 -> 37 ms), 0.82x (an MPS sandwich), 0.84x (random 60-tensor of
        bonds 2-8); on 48 random regular networks of 60 and 100 tensors, budgets of 0.25-2
        s, 0.87x as a geometric mean, a median of 0.96x, 10 of them dearer (up to 2.6x:
        the trials left out would have found a better start), which a longer search then
        leaves alone.  A first call's search never buys it (its share of one contraction).
        Where partition trials ran, the best path of the other kind (greedy's or a
        partition's, within :data:`REFINE_WITHIN` of the best) is deepened too, each with
        half of the budget left: the larger subtrees improve the two kinds by different
        amounts, and the best before them is not always the best after (measured on
        random 100-tensor networks, eight seeds, 1 s: the estimates with the partition
        trials 0.72x those without as a geometric mean, against 0.73x deepening the best
        alone, where one network came out 1.16x instead of 0.95x).
        Whether the search goes on (False: cut at the safety deadline)."""
        starts = self._deepening_starts()
        for k, current in enumerate(starts):
            whose = "" if len(starts) == 1 else f"; {current.finder.split(',')[0]}'s path"
            end = self.spent + (self._allowed() - self.spent) / (len(starts) - k)
            for subtree in range(RECONF_SUBTREE + 1, DEEPEST_SUBTREE + 1):
                if time.perf_counter() > self.deadline:
                    self.tried.append(f"subtrees of {subtree} and more cut at the safety deadline")
                    return False
                # priced at nothing: the budget is spent as given, where it still improves
                found = self._reconfigured(current, end - self.spent, subtree, 0.0)
                if found is None:
                    break
                current, pairs, seconds = found
                self._add(current, seconds)
                self.tried.append(
                    f"subtree reconfiguration of {subtree} ({pairs:,} pair costs{whose})"
                )
        return True

    def _deepening_starts(self) -> list[_Candidate]:
        """The paths :meth:`_deepen` reconfigures: the best, and the best of the other kind
        (partition or greedy) where it is within :data:`REFINE_WITHIN` of it."""
        best = self.best()
        kind = best.finder.startswith("partition")
        others = [c for c in self.candidates if c.finder.startswith("partition") != kind]
        other = min(others, key=lambda c: c.ns, default=None)
        if other is None or other.ns > REFINE_WITHIN * best.ns:
            return [best]
        return [best, other]

    def _reconfigured_trials(self, first: int, keep_s: float = 0.0) -> int:
        """Seeded random-greedy trials from ``first`` on (:meth:`_greedy_trial`), while the
        budget lasts for a trial and a reconfiguration; where :meth:`_partitions` says so,
        partition trials (:meth:`_partition_trial`) take turns with them, whichever kind
        has spent less of the budget going next.  They start only when the budget lasts
        for :data:`REFINE_MIN_TRIALS` of them: a hit is a matter of trying many.
        ``keep_s`` of the budget is left for what follows; returns the next trial (the
        partition trials go on from where they stopped, in a later call)."""
        n = len(self.problem.inputs)
        refined_trial_s = self.trial_s + _cheapest_reconfiguration_s(n)
        if not self._fits(REFINE_MIN_TRIALS * refined_trial_s + keep_s):
            return first
        partition_s = self._partition_s()
        trial, refined, partitions, refined_partitions = first, 0, 0, 0
        spent = {True: 0.0, False: 0.0}  # by kind: partition trials, greedy ones
        while trial < MAX_TRIALS and self._fits(refined_trial_s + keep_s):
            if time.perf_counter() > self.deadline:
                self._cut_at_deadline(trial - first, partitions)
                return MAX_TRIALS
            partition = spent[True] <= spent[False] and self._fits(partition_s + keep_s)
            if partition:
                found, seconds, done = self._partition_trial(keep_s)
                partitions, refined_partitions = partitions + 1, refined_partitions + done
            else:
                found, seconds, done = self._greedy_trial(trial, keep_s)
                trial, refined = trial + 1, refined + done
            spent[partition] += seconds
            self._add(found, seconds)
        if trial > first:
            self.tried.append(f"random-greedy x{trial - first} ({refined} reconfigured)")
        if partitions:
            self.tried.append(f"partition x{partitions} ({refined_partitions} reconfigured)")
        return trial

    def _greedy_trial(self, trial: int, keep_s: float) -> tuple[_Candidate, float, bool]:
        """Random-greedy trial ``trial``, reconfigured in turn where it comes within
        :data:`REFINE_WITHIN` of the best path (cotengra's hyper-optimizer does the same
        with its ``reconf_opts``): greedy's path and its restarts sit in local optima that a
        reconfiguration of four branches cannot leave, and a jittered start can (measured:
        the benchmark's random 60-tensor network of bonds 2-8, whose reconfigured greedy
        path is estimated at 2.4 s, gets one of 0.77x that from the 37th of 49 trials).
        The candidate, its estimated seconds, whether it was reconfigured."""
        trial_s = self.trial_s
        found = _rate(self.problem, "random-greedy", _greedy(self.problem, trial, self.seed))
        if found.ns > REFINE_WITHIN * self.best_ns:
            return found, trial_s, False
        better = self._reconfigured(found, self._allowed() - self.spent - trial_s - keep_s)
        if better is None:
            return found, trial_s, False
        return better[0], trial_s + better[2], True

    def _partitions(self) -> bool:
        """Whether partition trials take turns with the random-greedy ones: on a network
        of :data:`PARTITION_FROM` to :data:`PARTITION_UP_TO` operands whose first path is
        greedy's (a lattice's is the bisection's, unless its cut is too small to matter).
        Their trees vary a lot, and a hit is a matter of trying several (measured on
        random regular networks of 100 tensors, bonds 2-4, eight seeds, 16 trials each:
        the estimates of their reconfigured paths, as a geometric mean over the networks,
        0.48x those of a search of 20 ms without them at the median, 0.30x at the lower
        quartile; on the benchmark's 60-tensor network of bonds 2-8, 0.99x at the lower
        quartile)."""
        n = len(self.problem.inputs)
        return PARTITION_FROM <= n <= PARTITION_UP_TO and self.candidates[0].finder == "greedy"

    def _partition_s(self) -> float:
        """The least a partition trial costs (a tree, the least reconfiguration); infinite
        where :meth:`_partitions` says no."""
        if not self._partitions():
            return math.inf
        n = len(self.problem.inputs)
        return _partition_tree_s(n, partition_pairs(self.problem)) + _cheapest_reconfiguration_s(n)

    def _partition_trial(self, keep_s: float) -> tuple[_Candidate, float, bool]:
        """The next partition trial (:mod:`.partition`; the problem's graph built at the
        first), reconfigured within the budget left (its tree is rarely good before:
        greedy's leaf blocks are joined as the halves fall); the candidate, its estimated
        seconds, whether it was reconfigured."""
        if self.partition_graph is None:
            self.partition_graph = partition_graph(self.problem)
        tree_s = _partition_tree_s(len(self.problem.inputs), partition_pairs(self.problem))
        path = partition_ssa(self.problem, self.seed, self.partitions, self.partition_graph)
        self.partitions += 1
        found = _rate(self.problem, "partition", linear_of(path))
        better = self._reconfigured(found, self._allowed() - self.spent - tree_s - keep_s)
        if better is None:
            return found, tree_s, False
        return better[0], tree_s + better[2], True


def _chosen(
    best: _Candidate,
    tried: tuple[str, ...],
    baseline: float,
    budget: float,
    candidates: int,
    seed: int,
    first: str = "greedy",
) -> PathChoice:
    return PathChoice(
        path=best.path,
        finder=best.finder,
        cost_ns=best.ns,
        flops=best.flops,
        largest=best.largest,
        baseline_ns=baseline,
        budget_s=budget,
        tried=tried,
        candidates=candidates,
        seed=seed,
        first=first,
    )


# -- what the plan report says about a path --------------------------------------------------

_RECENT: OrderedDict[Any, PathChoice] = OrderedDict()
_RECENT_SIZE = 256
_RECENT_LOCK = rlock()  # reentrant: a signal handler or finalizer may call einsum


def _recent_key(
    inputs: Sequence[Sequence[int]], output: Sequence[int], sizes: Sequence[int], form: Any
) -> Any:
    used = sorted({x for t in inputs for x in t} | set(output))
    return (tuple(tuple(t) for t in inputs), tuple(output), tuple(sizes[x] for x in used), form)


def remember_choice(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    choice: PathChoice,
    form: Any = "auto",
) -> None:
    """Keep ``choice`` (bounded, thread-safe) for :func:`recall_choice`, under the form of
    ``optimize=`` that made it (``paths.finder_form``)."""
    key = _recent_key(inputs, output, sizes, form)
    with _RECENT_LOCK:
        _RECENT[key] = choice
        _RECENT.move_to_end(key)
        while len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)


def recall_choice(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    path: Sequence[Sequence[int]],
    form: Any = "auto",
) -> PathChoice | None:
    """The choice that found ``path`` for this problem recently under the ``optimize=``
    form ``form``, if it is remembered.

    >>> choice = search_path([(0, 1), (1, 2), (2, 3)], (0, 3), (9, 8, 7, 6))
    >>> remember_choice([(0, 1), (1, 2), (2, 3)], (0, 3), (9, 8, 7, 6), choice)
    >>> recall_choice([(0, 1), (1, 2), (2, 3)], (0, 3), (9, 8, 7, 6), choice.path) is choice
    True
    """
    key = _recent_key(inputs, output, sizes, form)
    with _RECENT_LOCK:
        found = _RECENT.get(key)
    if found is None or found.path != tuple(tuple(e) for e in path):
        return None
    if not found.rated:
        found = rated_choice(found, inputs, output, sizes)
        with _RECENT_LOCK:
            _RECENT[key] = found
    return found


_LONGER: OrderedDict[Any, PathChoice] = OrderedDict()  # problems whose shapes repeated
_GENERATION = [0]  # how many times :func:`forget_longer` ran


def longer_generation() -> int:
    """A number that :func:`forget_longer` changes (a search begun before it adopts
    nothing)."""
    return _GENERATION[0]


def adopt_longer(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    choice: PathChoice,
    since: int | None = None,
) -> None:
    """Keep ``choice``, found by a longer search while the problem's shapes repeated, as
    the default search's answer for the problem from now on (bounded, thread-safe; until
    :func:`forget_longer`), and for the plan report; unless one rated cheaper is kept
    already, or the paths were forgotten since :func:`longer_generation` was ``since``.

    >>> ring = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
    >>> longer = replace(search_path(ring, (), (3, 4, 5, 6, 7)), finder="longer")
    >>> adopt_longer(ring, (), (3, 4, 5, 6, 7), longer)
    >>> search_path(ring, (), (3, 4, 5, 6, 7)).finder
    'longer'
    >>> forget_longer(); search_path(ring, (), (3, 4, 5, 6, 7)).finder
    'greedy'
    """
    key = _recent_key(inputs, output, sizes, "auto")
    with _RECENT_LOCK:
        kept = _LONGER.get(key)
        if (since is not None and since != _GENERATION[0]) or (
            kept is not None and kept.cost_ns <= choice.cost_ns
        ):
            return
        _LONGER[key] = choice
        _LONGER.move_to_end(key)
        while len(_LONGER) > _RECENT_SIZE:
            _LONGER.popitem(last=False)
    remember_choice(inputs, output, sizes, choice)


def forget_longer() -> None:
    """Forget every path :func:`adopt_longer` kept (``einstride.clear_plan_cache()``)."""
    with _RECENT_LOCK:
        _LONGER.clear()
        _GENERATION[0] += 1


def _longer(
    inputs: Sequence[Sequence[int]], output: Sequence[int], sizes: Sequence[int]
) -> PathChoice | None:
    if not _LONGER:  # the common case: no lock, no key
        return None
    key = _recent_key(inputs, output, sizes, "auto")
    with _RECENT_LOCK:
        return _LONGER.get(key)


def rated_choice(
    choice: PathChoice,
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
) -> PathChoice:
    """``choice`` with its cost fields filled in (an unrated first path: its own cost is
    also the baseline).

    >>> ring = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
    >>> choice = search_path(ring, (), (3, 4, 5, 6, 7))
    >>> choice.rated, rated_choice(choice, ring, (), (3, 4, 5, 6, 7)).flops
    (False, 576)
    """
    if choice.rated:
        return choice
    ns, flops, largest = Problem(inputs, output, sizes).cost(choice.path)
    return replace(choice, cost_ns=ns, flops=flops, largest=largest, baseline_ns=ns, rated=True)
