"""The partition finder: valid trees on any network, no outer product of pieces the rest
joins, deterministic per seed and trial, and its trials' place in the budgeted search
(the paths they find on the benchmark's random networks)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
import opt_einsum
import pytest
from einsum_strategies import label_ids
from hypothesis import given, settings
from hypothesis import strategies as st
from opt_einsum.testing import rand_equation
from test_bisection import check_tree, lattice, linear
from test_path_search import Network, contracts_to_one, networks

import einstride as es
from einstride.engine.spec import partition, search
from einstride.engine.spec.costmodel import Problem
from einstride.engine.spec.partition import partition_ssa


def _random(tensors: int, *, seed: int, d_max: int, degree: int = 3) -> Network:
    inputs, output, sizes = label_ids(
        *rand_equation(tensors, degree, seed=seed, d_min=2, d_max=d_max)
    )
    return [tuple(t) for t in inputs], tuple(output), list(sizes)


def _shares_a_label(problem: Problem, tree: list[tuple[int, int]]) -> list[bool]:
    """Per product of the tree: whether its two sides hold a label in common."""
    masks = list(problem.inputs)
    shared = []
    for a, b in tree:
        shared.append(bool(masks[a] & masks[b]))
        masks.append(masks[a] | masks[b])
    return shared


@given(networks(max_operands=30), st.integers(0, 3), st.integers(0, 3))
@settings(max_examples=150, deadline=None)
def test_every_tree_is_valid_on_any_network(problem: Network, seed: int, trial: int) -> None:
    # any labels: shared by any number of operands, of size 1, kept in the output, none
    inputs, output, sizes = problem
    tree = partition_ssa(Problem(inputs, output, sizes), seed, trial)
    check_tree(tree, len(inputs))


@pytest.mark.parametrize(("tensors", "seed", "degree"), [(20, 0, 3), (40, 1, 3), (30, 2, 4)])
def test_on_a_connected_network_no_product_is_an_outer_product(
    tensors: int, seed: int, degree: int
) -> None:
    # FM's halves may fall into pieces; joined there, two pieces would make an outer
    # product (measured before the clusters: trees of 1e10-1e11 FLOPs on the random
    # 100-tensor network, 10-100x greedy's); each piece goes up to the level that joins it
    inputs, output, sizes = _random(tensors, seed=seed, d_max=4, degree=degree)
    problem = Problem(inputs, output, sizes)
    for trial in range(8):
        tree = partition_ssa(problem, 0, trial)
        check_tree(tree, tensors)
        assert all(_shares_a_label(problem, tree))


def test_pieces_that_share_no_bond_are_joined_last() -> None:
    # two random networks side by side and a scalar: two outer products, at the end
    first = _random(20, seed=0, d_max=4)
    second = _random(24, seed=1, d_max=4)
    shift = len(first[2])
    inputs = first[0] + [tuple(x + shift for x in t) for t in second[0]] + [()]
    problem = Problem(inputs, (), first[2] + second[2])
    tree = partition_ssa(problem, 0)
    check_tree(tree, len(inputs))
    assert _shares_a_label(problem, tree) == [True] * (len(inputs) - 3) + [False, False]


def test_the_same_seed_and_trial_give_the_same_tree_and_trials_differ() -> None:
    problem = Problem(*_random(100, seed=5, d_max=4))
    trees = [partition_ssa(problem, 0, trial) for trial in range(4)]
    assert [partition_ssa(problem, 0, trial) for trial in range(4)] == trees
    assert len({tuple(t) for t in trees}) == 4
    assert partition_ssa(problem, 1, 0) != trees[0]  # another search seed: other trials


def test_every_tree_contracts_like_numpy() -> None:
    rng = np.random.default_rng(0)
    for tensors, seed in ((20, 3), (26, 4)):
        equation, shapes = rand_equation(tensors, 3, seed=seed, d_min=2, d_max=3, n_out=2)
        ops = [rng.random(shape) / 2 for shape in shapes]
        inputs, output, sizes = label_ids(equation, shapes)
        tree = partition_ssa(Problem(inputs, output, sizes), seed)
        expected = opt_einsum.contract(equation, *ops, optimize="greedy")
        got = es.einsum(equation, *ops, optimize=[tuple(e) for e in linear(tree)])
        np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_the_balance_keeps_each_half_within_the_imbalance() -> None:
    low, high = partition._balance(100)
    assert (low, high) == (40, 60)
    problem = Problem(*_random(60, seed=2, d_max=4))
    builder = partition._Trial(partition.partition_graph(problem), np.random.default_rng(0))
    block = list(range(60))
    left, right = builder._halves(block)
    assert sorted(left + right) == block
    assert partition._balance(60)[0] <= len(left) <= partition._balance(60)[1]


# -- in the search --------------------------------------------------------------------------


def test_the_partition_trials_find_the_path_of_a_contraction_of_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the benchmark's "random 60 tensors, degree 3, bonds 2-8", estimated at seconds: a
    # first call's budget lasts for partition trials, and one of them wins (measured: the
    # estimate 1.54 against 1.85 s without them, 2.4e10 against 3.3e10 FLOPs; contracted,
    # 1.26 against 1.43 s)
    network = _random(60, seed=8, d_max=8)
    choice, without = _with_and_without(monkeypatch, network, None)
    with monkeypatch.context() as patch:
        patch.setattr(search, "ANNEAL_FROM", 10**6)
        patch.setattr(search, "DEADLINE_FACTOR", 1e9)
        assert search.search_path(*network) == choice  # deterministic
    assert choice.finder.startswith("partition, reconfigured")
    assert any(t.startswith("partition x") for t in choice.tried)
    assert contracts_to_one(choice.path, len(network[0]))
    assert choice.cost_ns < 0.9 * without.cost_ns


def _with_and_without(
    monkeypatch: pytest.MonkeyPatch, network: Network, budget_s: float | None
) -> tuple[search.PathChoice, search.PathChoice]:
    """The search's choice on ``network``, and the same search's without partition
    trials (no safety deadline: the same work on any machine; no annealing, which wins on
    some of these networks: test_path_anneal.py)."""
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    monkeypatch.setattr(search, "ANNEAL_FROM", 10**6)
    choice = search.search_path(*network, budget_s=budget_s)
    monkeypatch.setattr(search, "PARTITION_FROM", 10**6)
    without = search.search_path(*network, budget_s=budget_s)
    monkeypatch.undo()
    assert not any(t.startswith("partition") for t in without.tried)
    return choice, without


def test_a_longer_search_of_the_random_100_tensor_network_finds_a_partitions_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the benchmark's random 100-tensor network, a search of 1 s (a longer search's, paid
    # for by repeated calls): measured 0.55x the estimate without the partition trials
    # (5.1e8 against 1.2e9 FLOPs; contracted, 22 against 38 ms)
    choice, without = _with_and_without(monkeypatch, _random(100, seed=5, d_max=4), 1.0)
    assert choice.finder.startswith("partition, reconfigured")
    assert choice.cost_ns < 0.75 * without.cost_ns


@pytest.mark.parametrize(
    "network",
    [
        _random(100, seed=5, d_max=4),  # a first call: its budget lasts for too few trials
        _random(18, seed=0, d_max=8),  # fewer than PARTITION_FROM operands
        lattice((8, 8), 3),  # a lattice: the bisection's
    ],
)
def test_no_partition_trials_where_they_cannot_pay(network: Network) -> None:
    choice = search.search_path(*network, budget_s=None)
    assert not any(t.startswith("partition") for t in choice.tried)


def test_the_partition_trials_stop_at_the_safety_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # a machine far slower than the estimates: the first partition trial runs past the
    # deadline (a tenth of the budget), and the trials stop there and say so
    inputs, output, sizes = _random(60, seed=8, d_max=8)
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 0.1)
    real = partition_ssa

    def slow(*args: Any) -> Any:
        time.sleep(0.3)
        return real(*args)

    monkeypatch.setattr(search, "partition_ssa", slow)
    choice = search.search_path(inputs, output, sizes)
    assert choice.tried[-1] == "partition x1 (cut at the safety deadline)"
    assert contracts_to_one(choice.path, len(inputs))


def test_a_longer_search_deepens_the_best_path_of_each_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a random 100-tensor network (seed 1): a partition's path is the best before the
    # larger subtrees, a random-greedy one after them; deepening the best alone left the
    # search with the partition trials 1.16x dearer than the one without them (0.95x now)
    choice, without = _with_and_without(monkeypatch, _random(100, seed=1, d_max=4), 1.0)
    deepened = [t for t in choice.tried if t.startswith("subtree reconfiguration of 5 ")]
    assert len(deepened) == 2  # one per kind
    assert any(t.startswith("partition x") for t in choice.tried)
    assert choice.cost_ns <= without.cost_ns


def test_the_deepening_starts_are_the_best_of_each_kind_near_the_best() -> None:
    problem = Problem(*_random(20, seed=0, d_max=4))
    first = search._rate(problem, "greedy", search._greedy(problem))
    found = search._Search(problem, first, 1.0, 0)
    assert found._deepening_starts() == [first]
    dearer = replace(first, finder="partition, reconfigured", ns=2 * first.ns)
    found.candidates.append(dearer)
    assert found._deepening_starts() == [first, dearer]
    far = replace(first, finder="partition", ns=(search.REFINE_WITHIN + 1) * first.ns)
    found.candidates[-1] = far
    assert found._deepening_starts() == [first]


@given(
    st.integers(20, 36).filter(lambda n: n % 2 == 0),
    st.integers(3, 4),
    st.integers(0, 10**6),
    st.integers(0, 3),
)
@settings(max_examples=12, deadline=None)
def test_searches_with_partition_trials_are_deterministic_and_valid(
    tensors: int, degree: int, network_seed: int, seed: int
) -> None:
    inputs, output, sizes = _random(tensors, seed=network_seed, d_max=4, degree=degree)
    search.DEADLINE_FACTOR, saved = 1e9, search.DEADLINE_FACTOR
    try:
        choice = search.search_path(inputs, output, sizes, seed=seed, budget_s=0.2)
        again = search.search_path(inputs, output, sizes, seed=seed, budget_s=0.2)
    finally:
        search.DEADLINE_FACTOR = saved
    assert again == choice
    assert contracts_to_one(choice.path, tensors)
    # a small random network of degree 4 can pass the lattice test: the bisection's first
    partitioned = any(t.startswith("partition x") for t in choice.tried)
    assert partitioned == (choice.first == "greedy")


def test_no_partition_trials_past_partition_up_to_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    inputs, output, sizes = _random(60, seed=8, d_max=8)
    monkeypatch.setattr(search, "PARTITION_UP_TO", 59)
    choice = search.search_path(inputs, output, sizes)
    assert not any(t.startswith("partition") for t in choice.tried)


@st.composite
def sparse_networks(draw: Any) -> Network:
    """More operands than :func:`networks` draws, each label held by one to four of them
    (hyperedges), sizes 1-4, some kept in the output, some operands without labels."""
    n = draw(st.integers(10, 60))
    n_labels = draw(st.integers(1, 2 * n))
    sizes = draw(st.lists(st.integers(1, 4), min_size=n_labels, max_size=n_labels))
    terms: list[list[int]] = [[] for _ in range(n)]
    for label in range(n_labels):
        for i in draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4, unique=True)):
            terms[i].append(label)
    used = sorted({x for t in terms for x in t})
    output = tuple(draw(st.lists(st.sampled_from(used), max_size=3, unique=True)) if used else [])
    return [tuple(t) for t in terms], output, sizes


@given(sparse_networks(), st.integers(0, 3))
@settings(max_examples=100, deadline=None)
def test_every_tree_is_valid_on_sparse_networks_of_hyperedges(problem: Network, trial: int) -> None:
    inputs, output, sizes = problem
    check_tree(partition_ssa(Problem(inputs, output, sizes), 0, trial), len(inputs))


def test_fewer_than_two_operands_give_no_pairs() -> None:
    assert partition_ssa(Problem([], (), []), 0) == []
    assert partition_ssa(Problem([(0, 1)], (1,), [2, 3]), 0) == []


def test_labels_of_size_1_link_operands_and_labels_of_many_operands_do_not() -> None:
    # a ring joined by labels of size 1 alone is one piece: no outer product before the
    # end (apart, the operands' intermediates piled up size-1 axes: rank 74 seen); a label
    # of every operand (a batch label) adds no pair: every halving cuts it, and its n**2
    # pairs made the trees 2-9x the search's estimate
    ring = [((k - 1) % 30, k) for k in range(30)]
    problem = Problem(ring, (), [1] * 30)
    for trial in range(4):
        assert all(_shares_a_label(problem, partition_ssa(problem, 0, trial)))
    batched = [(*t, 30) for t in ring]
    graph = partition.partition_graph(Problem(batched, (), [2] * 31))
    assert all(len(near) == 2 for near in graph.near)
    assert partition.partition_pairs(Problem(batched, (), [2] * 31)) == 30
    assert partition.partition_pairs(Problem(ring[:8], (), [2] * 30)) == 7


def test_the_partition_trials_go_on_after_the_larger_subtrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a longer search runs trials again with what the larger subtrees left: the partition
    # trials continue their numbering (they replayed the same trees), on one graph
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    calls: list[tuple[int, int]] = []
    graphs: set[int] = set()
    real = search.partition_ssa

    def spy(problem: Problem, seed: int, trial: int, graph: Any) -> Any:
        calls.append((seed, trial))
        graphs.add(id(graph))
        return real(problem, seed, trial, graph)

    monkeypatch.setattr(search, "partition_ssa", spy)
    choice = search.search_path(*_random(20, seed=0, d_max=4), budget_s=1.0)
    assert len([t for t in choice.tried if t.startswith("partition x")]) == 2
    assert len(calls) == len(set(calls)) and len(graphs) == 1


def test_pieces_linked_only_by_a_label_of_many_operands_are_joined_by_it_first() -> None:
    # two rings of 12 joined only by a label of 24 operands (left out of the graph): each
    # ring a piece; they share that label, so they are merged as clusters, not joined
    # last as pieces that share nothing (a scalar operand is)
    ring = [((k - 1) % 12, k) for k in range(12)]
    inputs = [(*t, 24) for t in ring] + [(x + 12, y + 12, 24) for x, y in ring] + [()]
    problem = Problem(inputs, (24,), [3] * 24 + [2])
    tree = partition_ssa(problem, 0)
    check_tree(tree, len(inputs))
    assert _shares_a_label(problem, tree) == [True] * (len(inputs) - 2) + [False]
