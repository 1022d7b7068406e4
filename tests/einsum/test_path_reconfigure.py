"""Subtree reconfiguration (spec/trees.py): valid paths, never costlier, deterministic, the
exact optimum when a subtree spans the whole network, and the search uses it where it pays."""

from __future__ import annotations

import math
import random
import re
import time
from typing import Any

import numpy as np
import opt_einsum
import pytest
from einsum_strategies import label_ids
from hypothesis import given, settings
from hypothesis import strategies as st
from opt_einsum.testing import rand_equation
from test_path_search import Network, contracts_to_one, networks

import einstride as es
from einstride.engine.spec import costmodel, search, trees
from einstride.engine.spec.costmodel import path_cost


def random_pairwise_path(n: int, rng: random.Random) -> tuple[tuple[int, ...], ...]:
    path, live = [], n
    while live > 1:
        a, b = rng.sample(range(live), 2)
        path.append((a, b))
        live -= 1
    return tuple(path)


@given(networks(max_operands=9), st.integers(3, 6), st.integers(0, 2**32 - 1))
@settings(max_examples=120, deadline=None)
def test_reconfiguring_any_path_gives_a_valid_path_never_costlier(
    problem: Network, subtree: int, seed: int
) -> None:
    inputs, output, sizes = problem
    path = random_pairwise_path(len(inputs), random.Random(seed))
    before = path_cost(inputs, output, sizes, path)[0]
    found, spent = trees.reconfigure(
        costmodel.Problem(inputs, output, sizes), path, subtree=subtree, max_pairs=10**6
    )
    assert contracts_to_one(found, len(inputs))
    assert path_cost(inputs, output, sizes, found)[0] <= before * (1 + 1e-12)
    again = trees.reconfigure(
        costmodel.Problem(inputs, output, sizes), path, subtree=subtree, max_pairs=10**6
    )
    assert again == (found, spent)


@given(networks(max_operands=6), st.integers(0, 2**32 - 1))
@settings(max_examples=80, deadline=None)
def test_a_subtree_spanning_every_operand_gives_the_exact_optimum(
    problem: Network, seed: int
) -> None:
    inputs, output, sizes = problem
    n = len(inputs)
    if n < 3:
        return
    path = random_pairwise_path(n, random.Random(seed))
    found, _ = trees.reconfigure(
        costmodel.Problem(inputs, output, sizes), path, subtree=n, max_pairs=10**6
    )
    optimum = search._optimal(costmodel.Problem(inputs, output, sizes)).ns
    assert path_cost(inputs, output, sizes, found)[0] == pytest.approx(optimum, rel=1e-12)


def test_the_work_stops_at_the_pair_budget() -> None:
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    problem = costmodel.Problem(inputs, output, sizes)
    greedy = search._greedy(problem)
    _, spent = trees.reconfigure(problem, greedy, subtree=4, max_pairs=200)
    assert 200 <= spent < 200 + trees.optimal_pairs(4)
    assert trees.reconfigure(problem, ((0, 1, 2),) * 29, subtree=4, max_pairs=10**6)[1] == 0


@pytest.mark.parametrize("subtree", [4, 7])
def test_a_subtree_met_again_unchanged_is_not_solved_again(
    subtree: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the sweeps after the first meet most subtrees unchanged: skipping their solves must
    # change neither the path nor the work counted, only the solves made
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    greedy = search._greedy(costmodel.Problem(inputs, output, sizes))
    solved: list[int] = []
    solve = trees.solved_exactly

    def counted(problem: costmodel.Problem, branches: Any, top: int) -> Any:
        solved.append(1)
        return solve(problem, branches, top)

    monkeypatch.setattr(trees, "solved_exactly", counted)
    remembered = trees.reconfigure(
        costmodel.Problem(inputs, output, sizes), greedy, subtree=subtree, max_pairs=10**6
    )
    with_memo = len(solved)

    class Forgetful(dict[Any, int]):
        def get(self, key: Any, default: Any = None) -> Any:
            return default

    original_init = trees._Tree.__init__

    def forgetful_init(self: Any, *args: Any) -> None:
        original_init(self, *args)
        self.unimproved = Forgetful()

    monkeypatch.setattr(trees._Tree, "__init__", forgetful_init)
    solved.clear()
    forgotten = trees.reconfigure(
        costmodel.Problem(inputs, output, sizes), greedy, subtree=subtree, max_pairs=10**6
    )
    assert remembered == forgotten  # the same path, the same work counted
    assert with_memo < len(solved)  # fewer solves


def test_reconfiguration_stops_when_its_work_no_longer_pays_back() -> None:
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    greedy = search._greedy(costmodel.Problem(inputs, output, sizes))
    before = path_cost(inputs, output, sizes, greedy)[0]

    def run(pair_ns: float) -> tuple[float, int]:
        problem = costmodel.Problem(inputs, output, sizes)
        found, spent = trees.reconfigure(
            problem, greedy, subtree=4, max_pairs=10**6, pair_ns=pair_ns
        )
        return path_cost(inputs, output, sizes, found)[0], spent

    free_ns, free_spent = run(0.0)  # no price on the work: sweeps until nothing improves
    # a pair cost worth the whole contraction: the work so far has not paid at the first
    # whole-work check, long before the first window's end
    dear_ns, dear_spent = run(before)
    fair_ns, fair_spent = run(10e3)  # the search's price (10 µs)
    assert free_ns <= fair_ns <= dear_ns <= before
    assert trees.PAYBACK_START <= dear_spent < trees.PAYBACK_START + trees.optimal_pairs(4)
    assert dear_spent < trees.PAYBACK_WINDOW < fair_spent < free_spent


def test_reconfiguration_that_pays_for_itself_only_later_runs_on() -> None:
    """Gains come in steps: the whole-work check waits for :data:`trees.PAYBACK_START`
    pair costs, and one that has paid by then goes on to its windows."""
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    problem = costmodel.Problem(inputs, output, sizes)
    greedy = search._greedy(problem)
    before = path_cost(inputs, output, sizes, greedy)[0]
    found, _ = trees.reconfigure(problem, greedy, subtree=4, max_pairs=50, pair_ns=0.0)
    early_gain = before - path_cost(inputs, output, sizes, found)[0]
    assert early_gain == 0.0  # this network's first subtrees gain nothing ...
    found, spent = trees.reconfigure(problem, greedy, subtree=4, max_pairs=10**6, pair_ns=10e3)
    assert spent > trees.PAYBACK_WINDOW  # ... and the work runs on past them
    assert path_cost(inputs, output, sizes, found)[0] < before - spent * 10e3


def test_random_trials_after_a_reconfiguration_are_reconfigured_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    monkeypatch.setattr(search, "PARTITION_FROM", 10**6)  # the random trials alone
    monkeypatch.setattr(search, "ANNEAL_FROM", 10**6)  # (annealing: test_path_anneal.py)
    choice = search.search_path(inputs, output, sizes, budget_s=1.0)
    tried = choice.tried
    assert tried[1].startswith("subtree reconfiguration")
    assert tried[2] == f"greedy restarts x{len(search.FIXED_WEIGHTS)}"
    found = re.fullmatch(r"random-greedy x(\d+) \((\d+) reconfigured\)", tried[3])
    assert found is not None and 0 < int(found[2]) <= int(found[1])
    deeper = tried[4:]  # a budget given: then the larger subtrees, then trials with the rest
    left = re.fullmatch(r"random-greedy x(\d+) \((\d+) reconfigured\)", deeper[-1])
    if left is not None:
        deeper = deeper[:-1]
    assert deeper and all(re.fullmatch(r"subtree reconfiguration of \d \([\d,]+ pair costs\)", t)
                          for t in deeper)  # fmt: skip
    more = 0 if left is None else int(left[1])
    assert choice.candidates == 2 + len(search.FIXED_WEIGHTS) + int(found[1]) + len(deeper) + more
    assert contracts_to_one(choice.path, len(inputs))
    # a trial far costlier than the best path is not reconfigured
    monkeypatch.setattr(search, "REFINE_WITHIN", 0.0)
    tried = search.search_path(inputs, output, sizes, budget_s=0.2).tried
    assert re.fullmatch(r"random-greedy x\d+ \(0 reconfigured\)", tried[3])
    # a budget that lasts for fewer than REFINE_MIN_TRIALS of them: no random trials, the
    # fixed restarts and then (a budget given) the larger subtrees
    monkeypatch.setattr(search, "REFINE_MIN_TRIALS", 10**6)
    tried = search.search_path(inputs, output, sizes, budget_s=1.0).tried
    assert tried[2] == f"greedy restarts x{len(search.FIXED_WEIGHTS)}"
    assert tried[3:] and all(t.startswith("subtree reconfiguration of ") for t in tried[3:])


def _reconfigured_search(budget_s: float) -> tuple[search._Search, float]:
    """A search of the 60-tensor network after its reconfiguration, with ``budget_s`` given;
    and the least a refined trial costs there."""
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    problem = costmodel.Problem(inputs, output, sizes)
    greedy = search._rate(problem, "greedy", search._greedy(problem))
    found = search._Search(problem, greedy, budget_s, 0)
    found.deadline = float("inf")
    assert found._reconfigure()
    trial_s = search.TRIAL_S_PER_TENSOR * len(inputs)
    return found, trial_s + search._cheapest_reconfiguration_s(len(inputs))


def test_the_refined_trials_start_when_the_budget_lasts_for_refine_min_trials() -> None:
    # the gate counts a trial and its least reconfiguration: just short of REFINE_MIN_TRIALS
    # of them, no trial runs; with exactly that much left, they do
    for spare, runs in ((-1e-9, False), (1e-9, True)):
        found, least = _reconfigured_search(1.0)
        found.spent = 1.0 - search.REFINE_MIN_TRIALS * least - spare
        before = len(found.candidates)
        found._reconfigured_trials(len(search.FIXED_WEIGHTS))
        assert (len(found.candidates) > before) is runs
        assert any(t.startswith("random-greedy x") for t in found.tried) is runs


def test_a_refined_trial_is_charged_its_reconfiguration(monkeypatch: pytest.MonkeyPatch) -> None:
    found, _ = _reconfigured_search(0.3)
    n = len(found.problem.inputs)
    trial_s = search.TRIAL_S_PER_TENSOR * n
    charged: list[tuple[str, float]] = []
    add = found._add

    def record(candidate: Any, seconds: float) -> None:
        charged.append((candidate.finder, seconds))
        add(candidate, seconds)

    monkeypatch.setattr(found, "_add", record)
    found._reconfigured_trials(len(search.FIXED_WEIGHTS))
    refined = [s for finder, s in charged if finder.endswith(", reconfigured")]
    plain = [s for finder, s in charged if finder == "random-greedy"]
    assert refined, "no trial was reconfigured"
    # a reconfiguration costs at least building the tree and rating its path (3 per operand)
    assert all(s >= trial_s + 3 * n * search.RECONF_S_PER_PAIR for s in refined)
    assert all(s == trial_s for s in plain)
    # the budget holds, but for the final subtree of the last reconfiguration
    subtree_s = trees.optimal_pairs(search.RECONF_SUBTREE) * search.RECONF_S_PER_PAIR
    assert found.spent <= 0.3 + subtree_s


def test_a_contraction_of_seconds_gets_the_refined_trials_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a random 60-tensor network of bonds 2-8, estimated at seconds: greedy's reconfigured
    # path sits in a local optimum that a reconfigured random trial leaves (the benchmark's
    # "random 60 tensors, degree 3, bonds 2-8" network; the partition trials, which find a
    # cheaper path still there, left out: test_partition.py)
    inputs, output, sizes = _network(60, seed=8, d_max=8)
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    monkeypatch.setattr(search, "PARTITION_FROM", 10**6)
    monkeypatch.setattr(search, "ANNEAL_FROM", 10**6)  # (it wins there: test_path_anneal.py)
    choice = search.search_path(inputs, output, sizes)
    assert search.search_path(inputs, output, sizes) == choice  # deterministic
    assert choice.finder == "random-greedy, reconfigured" and choice.baseline_ns > 1e9
    monkeypatch.setattr(search, "REFINE_MIN_TRIALS", 10**6)
    before = search.search_path(inputs, output, sizes)
    assert not any(t.startswith("random-greedy") for t in before.tried)
    assert choice.cost_ns < 0.8 * before.cost_ns
    assert contracts_to_one(choice.path, len(inputs))


def _network(tensors: int, *, seed: int, d_max: int) -> tuple[Any, Any, list[int]]:
    return label_ids(*rand_equation(tensors, 3, seed=seed, d_min=2, d_max=d_max))


def test_the_search_reconfigures_greedy_where_the_budget_allows() -> None:
    # a random 60-tensor network whose contraction is estimated at tens of milliseconds:
    # the search reconfigures greedy's path and finds a much cheaper one
    inputs, output, sizes = _network(60, seed=1, d_max=6)
    search.DEADLINE_FACTOR, saved = 1e9, search.DEADLINE_FACTOR
    try:
        choice = search.search_path(inputs, output, sizes)
        assert search.search_path(inputs, output, sizes) == choice  # deterministic
    finally:
        search.DEADLINE_FACTOR = saved
    problem = costmodel.Problem(inputs, output, sizes)
    greedy_ns, greedy_flops, _ = problem.cost(search._greedy(problem))
    assert choice.finder == "greedy, reconfigured"
    assert any(t.startswith("subtree reconfiguration (") for t in choice.tried)
    assert choice.cost_ns < 0.8 * greedy_ns and choice.flops < greedy_flops
    assert "reconfigured won among" in choice.describe()
    # a network whose contraction takes microseconds gets no reconfiguration
    small = search.search_path(*_network(10, seed=1, d_max=3))
    assert not any("reconfiguration" in t for t in small.tried)


def test_a_path_no_machine_can_hold_gets_greedy_trials_before_reconfiguration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs, output, sizes = _network(60, seed=1, d_max=6)
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    usual = search.search_path(inputs, output, sizes).tried
    assert usual[1].startswith("subtree reconfiguration")
    monkeypatch.setattr(search, "INFEASIBLE_ELEMENTS", 0)  # every path: no machine holds it
    tried = search.search_path(inputs, output, sizes, budget_s=1.0).tried
    assert tried[1] == f"greedy restarts x{len(search.FIXED_WEIGHTS)}"
    assert tried[2].startswith("subtree reconfiguration")


def test_einsum_runs_the_reconfigured_path() -> None:
    inputs, output, sizes = _network(60, seed=1, d_max=6)
    rng = np.random.default_rng(0)
    ops = [rng.random(tuple(sizes[x] for x in term)) / 2 for term in inputs]
    sublists = [x for op, term in zip(ops, inputs, strict=True) for x in (op, list(term))]
    equation = ",".join("".join(chr(0x4E00 + x) for x in term) for term in inputs) + "->"
    assert "path finder: greedy, reconfigured won" in es.explain(equation, *ops)
    expected = opt_einsum.contract(*sublists, list(output), optimize="greedy")
    np.testing.assert_allclose(es.einsum(*sublists, list(output)), expected, rtol=1e-9)
    np.testing.assert_allclose(es.einsum(equation, *ops), expected, rtol=1e-9)


def test_a_restart_of_another_weighting_can_win_and_says_so() -> None:
    # greedy's own path on this random 60-tensor network (the benchmark's) costs 3.5x the
    # path of greedy with the operands' sizes weighed 3x: the restart wins after the
    # reconfiguration, with its own budget
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    choice = search.search_path(inputs, output, sizes)
    problem = costmodel.Problem(inputs, output, sizes)
    greedy_ns, greedy_flops, _ = problem.cost(search._greedy(problem))
    assert choice.finder == "greedy, weight 3"
    assert choice.flops < 0.5 * greedy_flops and choice.cost_ns < 0.5 * greedy_ns
    assert "greedy, weight 3 won among" in choice.describe()


def test_a_budget_given_buys_larger_subtrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """A longer search's budget (given, paid for by repeated calls) keeps half of what the
    restarts leave for reconfigurations of five to eight branches: a cheaper path than
    spending it all on trials, the same for the same seed; a first call's never does."""
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    deep = search.search_path(inputs, output, sizes, budget_s=0.5)
    assert [t for t in deep.tried if t.startswith("subtree reconfiguration of ")]
    assert re.search(r"reconfigured \(subtrees of [5-8]\)$", deep.finder)
    assert search.search_path(inputs, output, sizes, budget_s=0.5).path == deep.path
    assert contracts_to_one(deep.path, len(inputs))
    first_call = search.search_path(inputs, output, sizes)
    assert not [t for t in first_call.tried if "reconfiguration of " in t]
    monkeypatch.setattr(search, "DEEPEN_SHARE", 0.0)
    monkeypatch.setattr(search._Search, "_deepen", lambda self: None)
    broad = search.search_path(inputs, output, sizes, budget_s=0.5)
    assert deep.cost_ns < 0.95 * broad.cost_ns  # measured: 22.2 against 24.8 ms


@pytest.mark.parametrize("tensors, d_max", [(60, 6), (100, 4)])
def test_larger_subtrees_find_cheaper_paths_across_networks(
    monkeypatch: pytest.MonkeyPatch, tensors: int, d_max: int
) -> None:
    """Not one network's luck: over four seeds the paths of searches with the larger
    subtrees cost less than those of trials alone (geometric mean; measured 0.81x and
    0.64x, while single networks go either way, 0.19-1.23x; the greedy trials alone: with
    the partition trials, whose paths the larger subtrees improve less, 0.93x on 100
    tensors)."""
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 1e9)
    monkeypatch.setattr(search, "PARTITION_FROM", 10**6)
    monkeypatch.setattr(search, "ANNEAL_FROM", 10**6)
    problems = [_network(tensors, seed=seed, d_max=d_max) for seed in range(4)]
    deep = [search.search_path(*p, seed=1, budget_s=1.0).cost_ns for p in problems]
    monkeypatch.setattr(search, "DEEPEN_SHARE", 0.0)
    monkeypatch.setattr(search._Search, "_deepen", lambda self: True)
    broad = [search.search_path(*p, seed=1, budget_s=1.0).cost_ns for p in problems]
    ratios = [d / b for d, b in zip(deep, broad, strict=True)]
    assert math.prod(ratios) ** (1 / len(ratios)) < 0.9


def test_the_larger_subtrees_stop_at_the_safety_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Like the trials, the larger subtrees stop at the safety deadline, and say so."""
    inputs, output, sizes = _network(60, seed=4, d_max=6)
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 0.0)  # 10 ms past the start

    def slow_trials(self: Any, first: int, keep_s: float = 0.0) -> None:
        time.sleep(0.02)

    monkeypatch.setattr(search._Search, "_reconfigured_trials", slow_trials)
    tried = search.search_path(inputs, output, sizes, budget_s=1.0).tried
    assert not [t for t in tried if t.startswith("subtree reconfiguration of ")]
    assert tried[-1] == "subtrees of 5 and more cut at the safety deadline"
