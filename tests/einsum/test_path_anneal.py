"""Simulated annealing of contraction trees (spec/trees.py ``anneal``): valid paths, never
more FLOPs than the start, deterministic for a seed; and the search's annealing stage
(spec/search.py): where it runs, what it wins, across networks, and the gate."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import opt_einsum
import pytest
from einsum_strategies import label_ids
from hypothesis import given, settings
from hypothesis import strategies as st
from opt_einsum.testing import rand_equation
from test_path_reconfigure import random_pairwise_path
from test_path_search import Network, check_the_search, contracts_to_one, networks

import einstride as es
from einstride.engine.spec import costmodel, search, trees


def loop_flops(problem: Network, path: tuple[tuple[int, ...], ...]) -> int:
    """What annealing minimizes, counted afresh over label sets: per product, the elements
    of the loop over both operands' labels (a product keeps the labels that the output or
    an operand outside it holds)."""
    inputs, output, sizes = problem
    ssa = costmodel.tree_of(path, len(inputs))
    leaves: list[set[int]] = [{k} for k in range(len(inputs))]
    result: list[set[int]] = [set(t) for t in inputs]
    total = 0
    for a, b in ssa:
        inside = leaves[a] | leaves[b]
        outside = {x for k, t in enumerate(inputs) if k not in inside for x in t} | set(output)
        union = result[a] | result[b]
        total += math.prod(sizes[x] for x in union)
        leaves.append(inside)
        result.append(union & outside)
    return total


@given(networks(max_operands=12), st.integers(0, 60), st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_annealing_any_path_gives_a_valid_path_of_no_more_flops(
    problem: Network, sweeps: int, seed: int
) -> None:
    inputs, output, sizes = problem
    n = len(inputs)
    start = random_pairwise_path(n, random.Random(seed))
    found, moves = trees.anneal(costmodel.Problem(inputs, output, sizes), start, sweeps=sweeps,
                                seed=seed)  # fmt: skip
    assert contracts_to_one(found, n) and len(found) == max(n - 1, 0)
    if n >= 3:
        assert loop_flops(problem, found) <= loop_flops(problem, start)
    again = trees.anneal(costmodel.Problem(inputs, output, sizes), start, sweeps=sweeps, seed=seed)
    assert again == (found, moves)  # deterministic for the seed
    if sweeps == 0 or n < 3:
        assert moves == 0 and tree_shape(found, n) == tree_shape(start, n)


def tree_shape(path: tuple[tuple[int, ...], ...], n: int) -> Any:
    """A path's contraction tree, whatever the order of its products and of their sides."""
    nodes: list[Any] = list(range(n))
    for a, b in costmodel.tree_of(path, n):
        nodes.append(frozenset((nodes[a], nodes[b])))
    return nodes[-1] if nodes else None


def test_annealing_finds_a_chains_order_from_the_worst_start() -> None:
    """Twelve matrices contracted strictly left to right, where every second label is
    large: the annealed path comes within 2x of the exact optimum's FLOPs (opt_einsum's
    dynamic programming), the start at over 100x (4,700x)."""
    chain = [(k, k + 1) for k in range(12)]
    sizes = [2, 2] + [300, 2] * 5 + [2]  # left to right, the 300s are never summed early
    letters = "abcdefghijklm"
    equation = ",".join(letters[a] + letters[b] for a, b in chain) + "->am"
    shapes = [(sizes[a], sizes[b]) for a, b in chain]

    def flops(path: Any) -> float:
        info = opt_einsum.contract_path(equation, *shapes, shapes=True, optimize=list(path))[1]
        return float(info.opt_cost)

    bad = ((0, 1),) * 11
    annealed, moves = trees.anneal(costmodel.Problem(chain, (0, 12), sizes), bad, sweeps=200,
                                   seed=0)  # fmt: skip
    exact = flops(opt_einsum.contract_path(equation, *shapes, shapes=True, optimize="dp")[0])
    assert moves > 200 and flops(bad) > 100 * exact
    assert flops(annealed) <= 2 * exact


def _network(tensors: int, *, seed: int, d_max: int) -> tuple[Any, Any, list[int]]:
    return label_ids(*rand_equation(tensors, 3, seed=seed, d_min=2, d_max=d_max))


def _without_annealing(problem: Any, **kwargs: Any) -> search.PathChoice:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search, "ANNEAL_FROM", 10**6)
        return search.search_path(*problem, **kwargs)


def test_the_search_anneals_where_its_budget_buys_the_sweeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a random 60-tensor network of bonds 2-8 (seed 4), a contraction estimated at half a
    # second: greedy's path, reconfigured, then annealed and reconfigured again, 3.5x
    # cheaper than the search finds without annealing (measured 0.29x)
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    problem = _network(60, seed=4, d_max=8)
    choice = search.search_path(*problem)
    assert search.search_path(*problem) == choice  # deterministic
    assert choice.finder == "annealing, reconfigured"
    assert choice.tried[1].startswith("subtree reconfiguration (")
    sweeps = int(choice.tried[2].split("(")[1].split()[0])
    assert choice.tried[2].endswith(" moves, reconfigured)")
    assert search.ANNEAL_MIN_SWEEPS <= sweeps <= search.ANNEAL_MAX_SWEEPS
    assert "annealing, reconfigured won among" in choice.describe()
    assert choice.cost_ns < 0.4 * _without_annealing(problem).cost_ns
    assert contracts_to_one(choice.path, len(problem[0]))
    rng = np.random.default_rng(5)
    inputs, _, sizes = problem
    operands = [rng.random([sizes[x] for x in term]) for term in inputs]
    interleaved = [x for op, term in zip(operands, inputs) for x in (op, list(term))]
    expected = opt_einsum.contract(*interleaved, [], optimize="greedy")
    found = es.einsum(*interleaved, [], optimize=[tuple(e) for e in choice.path])
    np.testing.assert_allclose(np.asarray(found), expected, rtol=1e-9)


def test_annealing_gains_across_networks_not_one_networks_luck(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eight random 60-tensor networks of bonds 2-8, the default search with and without
    annealing: cheaper paths as a geometric mean (measured 0.76x over the seven rated;
    single networks 0.29x to 1.23x -- a lottery per network: one whose budget the trials
    then lacked -- and 1.00x where the anneal found nothing, or its budget bought too few
    sweeps)."""
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    ratios = []
    for seed in range(8):
        problem = _network(60, seed=seed, d_max=8)
        with_it, without = search.search_path(*problem), _without_annealing(problem)
        if with_it.rated and without.rated:
            ratios.append(with_it.cost_ns / without.cost_ns)
    assert len(ratios) >= 4
    assert math.prod(ratios) ** (1 / len(ratios)) < 0.9
    assert max(ratios) < 1.3


def test_no_annealing_on_fewer_than_anneal_from_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    # the benchmark's random 20-tensor network of degree 4: annealed, a path estimated 1.5%
    # cheaper that contracted slower (53.8 against 47.3 ms), for 7 ms more search
    problem = label_ids(*rand_equation(20, 4, seed=2, d_min=2, d_max=8))
    assert not [t for t in search.search_path(*problem).tried if t.startswith("annealing")]
    monkeypatch.setattr(search, "ANNEAL_FROM", 20)
    assert [t for t in search.search_path(*problem).tried if t.startswith("annealing")]


def test_no_annealing_where_the_budget_buys_too_few_sweeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a random 100-tensor network of bonds 2-3: a contraction of about 20 ms, whose budget
    # after the reconfiguration lasts for 4 sweeps, under the gate's 20
    problem = _network(100, seed=5, d_max=3)
    choice = search.search_path(*problem)
    assert not [t for t in choice.tried if t.startswith("annealing")]
    monkeypatch.setattr(search, "ANNEAL_MIN_SWEEPS", 1)
    gated = search.search_path(*problem)  # the gate lifted: it anneals
    assert [t for t in gated.tried if t.startswith("annealing (")]
    assert gated.tried[1] == choice.tried[1]  # after the same reconfiguration


def test_the_benchmarks_random_100_anneals_to_under_half_greedys_flops() -> None:
    """The benchmark's random 100-tensor network of bonds 2-4 (a contraction of about 50 ms):
    its budget after the reconfiguration lasts for about 60 sweeps (a sweep's moves counted
    on the start tree: 64 of its 99 products have one below them); its path has under half
    the FLOPs of greedy's (1.9e9; cotengra's best in 5 s, 3.7e8-5.1e8 between runs) and a
    lower estimate than the search's without annealing."""
    problem = _network(100, seed=5, d_max=4)
    choice = search.search_path(*problem)
    annealed = [t for t in choice.tried if t.startswith("annealing (")]
    assert annealed and int(annealed[0].split()[1].strip("(")) >= search.ANNEAL_MIN_SWEEPS
    greedy = costmodel.Problem(*problem).cost(search._greedy(costmodel.Problem(*problem)))
    assert choice.flops < greedy[1] / 2
    assert choice.cost_ns < _without_annealing(problem).cost_ns


@given(st.integers(3, 40), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_rotatable_products_are_the_products_with_a_product_below(n: int, seed: int) -> None:
    """What a sweep's moves are estimated from, replayed from the path independently: each
    step's operands tracked as leaves or products, a step counted where one is a product."""
    path = random_pairwise_path(n, random.Random(seed))
    live, count = [False] * n, 0  # whether each live operand is a product
    for a, b in path:
        count += live[a] or live[b]
        live = [x for k, x in enumerate(live) if k not in (a, b)] + [True]
    assert trees.rotatable_products(path, n) == max(count, 1)


def test_the_start_temperature_of_short_and_long_anneals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer sweeps than ANNEAL_SHORT_SWEEPS start at ANNEAL_T_SHORT, more at
    ANNEAL_T_START: a scorching start changes only the anneals it applies to."""
    inputs, output, sizes = _network(40, seed=3, d_max=6)
    problem = costmodel.Problem(inputs, output, sizes)
    start = search._greedy(problem)
    short, long = trees.ANNEAL_SHORT_SWEEPS - 1, trees.ANNEAL_SHORT_SWEEPS
    before = [trees.anneal(problem, start, sweeps=k, seed=1) for k in (short, long)]
    monkeypatch.setattr(trees, "ANNEAL_T_START", 1e6)
    assert trees.anneal(problem, start, sweeps=short, seed=1) == before[0]
    assert trees.anneal(problem, start, sweeps=long, seed=1) != before[1]
    monkeypatch.setattr(trees, "ANNEAL_T_START", 2.0)
    monkeypatch.setattr(trees, "ANNEAL_T_SHORT", 1e6)
    assert trees.anneal(problem, start, sweeps=short, seed=1) != before[0]
    assert trees.anneal(problem, start, sweeps=long, seed=1) == before[1]


@given(st.integers(24, 40), st.integers(2, 8), st.integers(0, 10**6), st.integers(0, 3))
@settings(max_examples=25, deadline=None)
def test_the_search_with_annealing_is_deterministic_valid_and_never_worse_than_greedy(
    tensors: int, d_max: int, network_seed: int, seed: int
) -> None:
    inputs, output, sizes = _network(tensors, seed=network_seed, d_max=d_max)
    search.DEADLINE_FACTOR, saved = 1e9, search.DEADLINE_FACTOR
    try:
        check_the_search(inputs, output, sizes, seed, 0.02)  # 0.02 s: about 100 sweeps of 40
    finally:
        search.DEADLINE_FACTOR = saved


def test_products_past_a_floats_range_anneal() -> None:
    """Sizes of 2**1200: the acceptance compares the products' FLOPs as logarithms (their
    ratio, a float, underflowed to 0 and log2 raised; a review), in the search too."""
    k = 1200
    both, outer = tuple(range(k)), tuple(range(k, 2 * k))
    problem = costmodel.Problem([both, both, outer], outer, [2] * (2 * k))
    found, moves = trees.anneal(problem, ((0, 1), (0, 1)), sweeps=3, seed=0)
    assert moves == 3 and contracts_to_one(found, 3)
    chain = [(2 * k + j, 2 * k + j + 1) for j in range(22)]  # (the search anneals from 24)
    inputs = [both, both, outer, *chain]
    output = (*outer, 2 * k, 2 * k + 22)
    choice = search.search_path(inputs, output, [2] * (2 * k + 23))
    assert contracts_to_one(choice.path, len(inputs))


def test_the_sweeps_stop_at_a_deadline_passed() -> None:
    problem = costmodel.Problem(*_network(40, seed=1, d_max=4))
    start = random_pairwise_path(40, random.Random(0))
    found, moves = trees.anneal(problem, start, sweeps=50, seed=0, deadline=0.0)
    assert moves == 0 and tree_shape(found, 40) == tree_shape(start, 40)
    assert trees.anneal(problem, start, sweeps=50, seed=0)[1] > 0


def test_a_lattice_cut_past_a_floats_range_takes_the_bisection() -> None:
    """A random 500-tensor network of degree 12 reads as a lattice whose cut has ~3,000
    bits: the first finder's test of its elements overflowed a float (a review)."""
    problem = costmodel.Problem(*label_ids(*rand_equation(500, 12, seed=1)))
    finder, tree, _ = search._first_tree(problem)
    assert finder == "bisection" and len(tree) == 499
