"""The budgeted path search (optimize="auto"): deterministic, valid, never worse than greedy,
exact for few operands under its cost model, and every optimize= form still works."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import opt_einsum
import pytest
from einsum_strategies import label_ids
from hypothesis import given, settings
from hypothesis import strategies as st
from opt_einsum.testing import rand_equation

import einstride as es
from einstride.engine.spec import costmodel, search
from einstride.engine.spec.costmodel import pair_cost, path_cost
from einstride.engine.spec.greedy import greedy_ssa
from einstride.engine.spec.paths import choose_path, find_path
from einstride.engine.spec.search import search_path

RNG = np.random.default_rng(11)

Network = tuple[list[tuple[int, ...]], tuple[int, ...], list[int]]


@st.composite
def networks(draw: Any, max_operands: int = 9) -> Network:
    """Random equations over integer labels: each operand takes distinct labels, labels may
    be shared by any number of operands, some are kept in the output."""
    n = draw(st.integers(1, max_operands))
    n_labels = draw(st.integers(1, 10))
    sizes = draw(st.lists(st.integers(1, 7), min_size=n_labels, max_size=n_labels))
    inputs = [
        tuple(draw(st.lists(st.integers(0, n_labels - 1), max_size=4, unique=True)))
        for _ in range(n)
    ]
    used = sorted({x for t in inputs for x in t})
    output = tuple(draw(st.lists(st.sampled_from(used), unique=True)) if used else [])
    return inputs, output, sizes


def contracts_to_one(path: tuple[tuple[int, ...], ...], n: int) -> bool:
    live = n
    for entry in path:
        if not entry or len(set(entry)) != len(entry) or not all(0 <= i < live for i in entry):
            return False
        live -= len(entry) - 1
    return live == 1 or n == 0


@given(networks(), st.integers(0, 3), st.sampled_from([None, 0.0, 0.002, 0.02]))
@settings(max_examples=150)
def test_the_search_is_deterministic_valid_and_never_worse_than_greedy(
    problem: Network, seed: int, budget: float | None
) -> None:
    inputs, output, sizes = problem
    search.DEADLINE_FACTOR, saved = 1e9, search.DEADLINE_FACTOR  # a busy machine must not cut
    try:
        check_the_search(inputs, output, sizes, seed, budget)
    finally:
        search.DEADLINE_FACTOR = saved


def check_the_search(
    inputs: list[tuple[int, ...]],
    output: tuple[int, ...],
    sizes: list[int],
    seed: int,
    budget: float | None,
) -> None:
    state = random.getstate()
    random.seed(1234)  # the global generator must neither matter nor be touched
    first = search_path(inputs, output, sizes, seed=seed, budget_s=budget)
    random.seed(99)
    again = search_path(inputs, output, sizes, seed=seed, budget_s=budget)
    assert random.random() == random.Random(99).random()
    random.setstate(state)
    assert first == again
    assert contracts_to_one(first.path, len(inputs))
    if not first.rated:  # greedy's path, taken where a bound of its cost fits no finder
        assert first.finder == "greedy" and budget is None and first.bound_ns > 0
        assert first.budget_s < search.cheapest_finder_s(len(inputs))
        first = search.rated_choice(first, inputs, output, sizes)
        assert first.cost_ns <= first.bound_ns
    ns, flops, _ = path_cost(inputs, output, sizes, first.path)
    assert (ns, flops) == (pytest.approx(first.cost_ns, rel=1e-12), first.flops)
    if len(inputs) > search.OPTIMAL_ALWAYS:
        greedy = search._rate(
            costmodel.Problem(inputs, output, sizes),
            "greedy",
            search._greedy(costmodel.Problem(inputs, output, sizes)),
        )
        assert first.cost_ns <= greedy.ns
        assert first.baseline_ns == greedy.ns


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.data())
def test_linear_of_is_opt_einsums_ssa_to_linear(n: int, data: Any) -> None:
    """SSA paths of pairs and triples, as NumPy-format paths: opt_einsum's conversion."""
    live, ssa, made = list(range(n)), [], n
    while len(live) > 1:
        k = data.draw(st.integers(2, min(3, len(live))))
        picked = data.draw(st.permutations(live))[:k]
        live = [x for x in live if x not in picked] + [made]
        ssa.append(tuple(picked))
        made += 1
    ssa = ssa or [(0,)]
    expected = tuple(tuple(int(i) for i in e) for e in opt_einsum.paths.ssa_to_linear(ssa))
    assert costmodel.linear_of(ssa) == expected


@given(networks(max_operands=14), st.sampled_from([None, (1.0, 0.0), (3.0, 0.3)]))
@settings(max_examples=150)
def test_the_bound_of_a_greedy_path_bounds_its_rating(
    problem: Network, weights: tuple[float, float] | None
) -> None:
    """Where greedy's path is taken unrated, its bound decided: it must never undercut the
    cost model (any greedy scoring; labels of size 1 and 0 included)."""
    inputs, output, sizes = problem
    sizes = [0 if size == 7 else size for size in sizes]  # some empty labels
    prepared = costmodel.Problem(inputs, output, sizes)
    if len(prepared.inputs) < 2:
        return
    if weights is None:
        ssa = greedy_ssa(prepared)
    else:
        weight, spread = weights
        rng = random.Random(5)
        ssa = greedy_ssa(
            prepared, lambda s12, s1, s2: (s12 - weight * (s1 + s2)) * rng.gauss(1.0, spread)
        )
    cost = prepared.cost(costmodel.linear_of(ssa))[0]
    assert cost <= prepared.cost_bound(ssa)
    for past in (0.0, cost / 2, cost, 2 * cost):  # some of its terms priced exactly
        bound = prepared.cost_bound(ssa, past)
        assert bound >= cost
        if past == 0.0:
            assert bound == cost  # every term priced: the rating's own sum


@given(
    st.lists(st.sampled_from([0, 1, 2, 3, 16, 64, 10_000]), min_size=1, max_size=6),
    st.data(),
)
@settings(max_examples=300)
def test_a_products_worst_case_bounds_its_pair_cost(sizes: list[int], data: Any) -> None:
    """The worst-case term of :meth:`Problem.cost_bound` is at least the pair cost for
    any operands and kept labels (a thin matmul of a large batch: its largest share)."""
    labels = range(len(sizes))
    a = data.draw(st.lists(st.sampled_from(labels), unique=True))
    b = data.draw(st.lists(st.sampled_from(labels), unique=True))
    keep = data.draw(st.lists(st.sampled_from(sorted(set(a) | set(b)) or [0]), unique=True))
    problem = costmodel.Problem([a, b], sorted(set(keep) & (set(a) | set(b))), sizes)
    masks = [sum(1 << problem.labels.index(x) for x in t if x in problem.labels) for t in (a, b)]
    kept = problem.output
    assert problem._worst_pairs([(masks[0], masks[1], kept)])[0] >= problem.pair(*masks, kept)[0]


def test_an_unrated_greedy_paths_bound_is_not_rounded_below_its_rating() -> None:
    # found by a review: a running difference of exact terms rounded 6e-9 ns below the sum
    inputs = [(5, 1, 3), (0, 8, 4, 2), (5, 6, 3, 7), (4,), (6, 8, 7, 2)]
    sizes = [15, 14, 14, 12, 9, 16, 9, 11, 3]
    choice = search_path(inputs, (1, 0), sizes)
    assert not choice.rated
    assert search.rated_choice(choice, inputs, (1, 0), sizes).cost_ns <= choice.bound_ns


def test_a_thin_batched_products_worst_case_bounds_it() -> None:
    problem = costmodel.Problem([(0, 1, 2), (0, 2, 3)], (0, 1, 3), [10_000, 2, 2, 2])
    assert (
        problem._worst_pairs([(0b0111, 0b1101, 0b1011)])[0]
        >= problem.pair(0b0111, 0b1101, 0b1011)[0]
    )


def every_path(n: int) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Every sequence of pairwise contractions of ``n`` operands (NumPy's format)."""
    if n <= 1:
        yield ()
        return
    for pair in itertools.combinations(range(n), 2):
        for rest in every_path(n - 1):
            yield (pair, *rest)


@given(networks(max_operands=5))
@settings(max_examples=80)
def test_the_exact_optimum_beats_every_order_under_the_cost_model(problem: Network) -> None:
    inputs, output, sizes = problem
    n = len(inputs)
    prepared = costmodel.Problem(inputs, output, sizes)
    if n < 3:
        return
    found = search._optimal(prepared)
    cheapest = min(path_cost(inputs, output, sizes, p)[0] for p in every_path(n))
    assert found.ns == pytest.approx(cheapest, rel=1e-12)
    assert path_cost(inputs, output, sizes, found.path)[0] == pytest.approx(found.ns, rel=1e-12)
    if n == 3:
        assert search._three(prepared).ns == pytest.approx(found.ns, rel=1e-12)


def test_the_budget_follows_the_estimated_contraction_cost() -> None:
    ring = [(k, (k + 1) % 8) for k in range(8)]
    cheap = search_path(ring, (), [3] * 8)
    assert cheap.tried == ("greedy",) and cheap.budget_s < 1e-4
    heavy = search_path(ring[:5] + [(5, 0)], (), [1000] * 6)
    assert heavy.budget_s > cheap.budget_s
    assert heavy.tried[1:3] == ("optimal", "dp")
    # the exact optimum and dp found nothing cheaper than greedy's path: no trials follow
    assert heavy.tried[3].startswith("no greedy trials (the search so far gained 0 ns for ")
    assert len(heavy.tried) == 4 and heavy.candidates == 3
    assert heavy.budget_s > search._optimal_seconds(6) + search._dp_seconds(6) + 6e-4


def test_the_greedy_trials_run_only_where_the_search_paid_so_far() -> None:
    # the benchmark's random 60-tensor network of bonds 2-6: reconfiguration gains 2x, more
    # than it costs, so the restarts run (and one wins, 3.5x); a random 20-tensor network
    # of degree 4 (the benchmark's): reconfiguration gains 2.6% for more than that, so none
    equation, shapes = rand_equation(60, 3, seed=4, d_min=2, d_max=6)
    paid = search_path(*label_ids(equation, shapes))
    assert paid.tried[1].startswith("subtree reconfiguration")
    assert paid.tried[2].startswith("greedy restarts x")
    gained = (paid.baseline_ns - paid.cost_ns) * 1e-9
    equation, shapes = rand_equation(20, 4, seed=2, d_min=2, d_max=8)
    unpaid = search_path(*label_ids(equation, shapes))
    assert unpaid.tried[1].startswith("subtree reconfiguration")
    assert unpaid.tried[2].startswith("no greedy trials (the search so far gained ")
    assert len(unpaid.tried) == 3 and unpaid.candidates == 2
    assert unpaid.finder == "greedy, reconfigured" and gained > 0
    assert 0 < unpaid.baseline_ns - unpaid.cost_ns < 0.05 * unpaid.baseline_ns
    # with the gate lifted, the same search runs the restarts: the gate is what stopped it
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search._Search, "_paid", lambda self: True)
        ungated = search_path(*label_ids(equation, shapes))
    assert ungated.tried[2].startswith("greedy restarts x")
    given = search_path(*label_ids(equation, shapes), budget_s=unpaid.budget_s)
    assert given.tried[2].startswith("greedy restarts x")  # a budget given is spent


@settings(max_examples=40, deadline=None)
@given(st.integers(8, 80), st.integers(3, 4), st.integers(0, 10**6))
def test_a_sparse_networks_greedy_trial_is_priced_per_operand(
    n: int, degree: int, seed: int
) -> None:
    """Random regular networks (the benchmark's kind) keep the per-operand estimate; a
    complete graph's trial is priced by its pairs (measured: 15 ms at 40 operands, where
    the per-operand estimate said 3.2 ms and a search of 4 s took 5.3)."""
    equation, shapes = rand_equation(n + n * degree % 2, degree, seed=seed, d_max=4)
    problem = costmodel.Problem(*label_ids(equation, shapes))
    assert search._greedy_trial_s(problem) == search.TRIAL_S_PER_TENSOR * len(problem.inputs)


def test_a_complete_graphs_greedy_trial_is_priced_by_its_pairs() -> None:
    pairs = [(a, b) for a in range(40) for b in range(a)]
    links = [[k for k, pair in enumerate(pairs) if a in pair] for a in range(40)]
    problem = costmodel.Problem(links, (), [16] * len(pairs))
    trial_s = search._greedy_trial_s(problem)
    assert trial_s > 4 * search.TRIAL_S_PER_TENSOR * 40
    # the search charges its trials that much: a budget of two buys two restarts (priced
    # per operand, it bought three and three random-greedy trials)
    choice = search_path(links, (), [16] * len(pairs), budget_s=2 * trial_s)
    trials = [int(t.split(" x")[1].split()[0]) for t in choice.tried if "greedy" in t and " x" in t]
    assert sum(trials) == 2


def test_a_machine_too_slow_for_the_budget_cuts_the_trials_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(search, "DEADLINE_FACTOR", 0.0)
    monkeypatch.setattr(search, "TRIAL_S_PER_TENSOR", 1e-9)
    monkeypatch.setattr(search, "RECONF_S_PER_PAIR", 1.0)  # no reconfiguration: every trial
    ring = [(k, (k + 1) % 9) for k in range(9)]
    choice = search_path(ring, (), [2] * 9, budget_s=0.05)
    assert choice.tried[-1].endswith("(cut at the safety deadline)")
    assert contracts_to_one(choice.path, 9)


def test_the_cost_model_is_not_flops_alone() -> None:
    n = 256
    gemm_ns, gemm_flops = pair_cost({0, 1}, {1, 2}, {0, 2}, [n] * 3)
    outer_ns, outer_flops = pair_cost({0, 1}, {2}, {0, 1, 2}, [n] * 3)
    # the same loop over n**3 elements: twice the FLOPs for the matmul, far less time
    assert gemm_flops == 2 * outer_flops
    assert outer_ns > 5 * gemm_ns
    # a label summed over one operand alone costs a pass over that operand first
    summed_ns, _ = pair_cost({0, 1, 3}, {1, 2}, {0, 2}, [n] * 4)
    assert summed_ns > gemm_ns


def test_the_cost_model_prices_copying_operands_of_many_small_axes() -> None:
    # the same matmul, 4096 x 64 by 64 x 64: as matrices, or with the rows spread over
    # twelve axes of 2: the executor copies such an operand into matmul's order first
    flat_ns, flat_flops = pair_cost({0, 1}, {1, 2}, {0, 2}, [4096, 64, 64])
    rows = set(range(3, 15))
    spread_ns, spread_flops = pair_cost(rows | {1}, {1, 2}, rows | {2}, [1, 64, 64] + [2] * 12)
    assert spread_flops == flat_flops
    elements = 4096 * 64  # of the operand of 13 axes; its mean axis length is the run
    run = elements ** (1 / 13)
    copy = elements * (costmodel.COPY_NS_PER_ELEMENT + costmodel.COPY_NS_PER_RUN / run)
    assert spread_ns == pytest.approx(flat_ns + copy, rel=1e-9)


def test_find_path_keeps_every_optimize_form() -> None:
    inputs, output, sizes = [(0, 1), (1, 2), (2, 3), (3, 4)], (0, 4), [5, 6, 7, 8, 3]
    assert find_path(inputs, output, sizes, False) == ((0, 1, 2, 3),)  # NumPy: one entry
    assert find_path(inputs, output, sizes, ["einsum_path", (0, 1), (0, 1), (0, 1)]) == (
        (0, 1),
        (0, 1),
        (0, 1),
    )
    for name in ("greedy", "optimal", "dp", "branch-2", "auto-hq", "random-greedy", True):
        assert contracts_to_one(find_path(inputs, output, sizes, name), 4)
    choice = choose_path(inputs, output, sizes, opt_einsum.RandomGreedy(max_repeats=4))
    assert choice.finder == "opt_einsum RandomGreedy" and contracts_to_one(choice.path, 4)
    with pytest.raises(es.EinsumError, match="unknown optimize='nope'"):
        find_path(inputs, output, sizes, "nope")


class _SearchOnly:
    """An optimizer with cotengra's ``search`` interface only."""

    def search(self, inputs: Any, output: Any, size_dict: Any) -> Any:
        class Tree:
            def get_path(self) -> list[tuple[int, int]]:
                return [(0, 1)] * (len(inputs) - 1)

        return Tree()


def test_einsum_takes_path_optimizers_and_search_objects() -> None:
    ops = [RNG.random((5, 6)), RNG.random((6, 7)), RNG.random((7, 8)), RNG.random((8, 3))]
    expected = np.linalg.multi_dot(ops)
    for optimize in ("auto", _SearchOnly(), opt_einsum.DynamicProgramming()):
        np.testing.assert_allclose(es.einsum("ab,bc,cd,de->ae", *ops, optimize=optimize), expected)


def test_cotengra_optimizers_are_accepted() -> None:
    ctg = pytest.importorskip("cotengra")
    ops = [RNG.random((4, 5)), RNG.random((5, 6, 3)), RNG.random((6, 3, 2)), RNG.random((2, 4))]
    expected = np.einsum("ab,bcd,cde,ea->", *ops)
    optimizers = [
        ctg.HyperOptimizer(max_repeats=4, progbar=False, methods=["greedy"]),
        ctg.GreedyOptimizer(),
        ctg.ReusableHyperOptimizer(max_repeats=4, methods=["greedy"], progbar=False),
    ]
    for optimizer in optimizers:
        got = es.einsum("ab,bcd,cde,ea->", *ops, optimize=optimizer)
        np.testing.assert_allclose(got, expected)
    report = es.explain("ab,bcd,cde,ea->", *ops, optimize=optimizers[0])
    assert "path finder: cotengra HyperOptimizer" in report


def test_explain_says_which_finder_won() -> None:
    report = es.explain("ab,bc,cd->ad", (30, 40), (40, 50), (50, 60))
    assert "path finder: optimal over the cost model (3 operands" in report
    chain = [(60, 60)] * 6
    report = es.explain("ab,bc,cd,de,ef,fg->ag", *chain, optimize="greedy")
    assert "path finder: opt_einsum 'greedy'" in report
    report = es.explain("ab,bc,cd,de,ef,fg->ag", *chain)
    assert "path finder: greedy (no other finder fits the search budget" in report
    assert "path finder" not in es.explain("ab,bc->ac", (3, 4), (4, 5))
    expression = es.contract_expression("ab,bc,cd,de,ef,fg->ag", *[(300, 300)] * 6)
    assert "path finder: " in expression.explain()
    assert "budget" in expression.explain()


def test_auto_contracts_random_networks_like_numpy() -> None:
    for seed in range(4):
        eq, shapes = rand_equation(8, 3, seed=seed, d_min=2, d_max=4)
        ops = [RNG.random(s) for s in shapes]
        np.testing.assert_allclose(es.einsum(eq, *ops), np.einsum(eq, *ops, optimize=True))


@given(networks(), st.integers(0, 2**32 - 1))
@settings(max_examples=150)
def test_a_pairwise_path_costs_the_same_as_a_tree_and_as_a_walk(
    problem: Network, seed: int
) -> None:
    inputs, output, sizes = problem
    n, rng = len(inputs), random.Random(seed)
    path, live = [], n
    while live > 1:
        path.append(tuple(rng.sample(range(live), 2)))
        live -= 1
    tree = costmodel.Problem(inputs, output, sizes)._tree_cost(path)
    walk = costmodel.Problem(inputs, output, sizes)._walk_cost(path)
    assert tree[1:] == walk[1:] and tree[0] == pytest.approx(walk[0], rel=1e-12)


@given(networks(max_operands=4))
@settings(max_examples=80)
def test_a_memoized_pair_cost_is_the_pair_cost_either_way_round(problem: Network) -> None:
    inputs, output, sizes = problem
    if len(inputs) < 2:
        return
    memo = costmodel.Problem(inputs, output, sizes)
    a, b, keep = memo.inputs[0], memo.inputs[1], memo.output | memo.inputs[-1]
    fresh = costmodel.Problem(inputs, output, sizes)._pair(a, b, keep)
    assert memo.pair(a, b, keep) == fresh
    assert memo.pair(b, a, keep) == fresh  # from the memo
    assert costmodel.Problem(inputs, output, sizes)._pair(b, a, keep) == pytest.approx(fresh)


@given(networks(max_operands=12))
@settings(max_examples=200)
def test_the_greedy_over_masks_finds_opt_einsums_greedy_path(problem: Network) -> None:
    inputs, output, sizes = problem
    prepared = costmodel.Problem(inputs, output, sizes)
    ours = [tuple(step) for step in greedy_ssa(prepared)]
    theirs = opt_einsum.paths.ssa_greedy_optimize(*prepared.oe_problem())
    assert ours == [tuple(step) for step in theirs]


@pytest.mark.parametrize("seed", range(6))
def test_the_greedy_over_masks_matches_on_random_regular_networks(seed: int) -> None:
    eq, shapes = rand_equation(30 + 10 * seed, 3 + seed % 2, seed=seed, d_min=2, d_max=6)
    lhs, rhs = eq.split("->")
    ids = {c: k for k, c in enumerate(dict.fromkeys(eq.replace(",", "").replace("->", "")))}
    sizes = [0] * len(ids)
    for term, shape in zip(lhs.split(","), shapes, strict=True):
        for c, d in zip(term, shape, strict=True):
            sizes[ids[c]] = d
    prepared = costmodel.Problem(
        [[ids[c] for c in term] for term in lhs.split(",")], [ids[c] for c in rhs], sizes
    )
    ours = [tuple(step) for step in greedy_ssa(prepared)]
    assert ours == [tuple(s) for s in opt_einsum.paths.ssa_greedy_optimize(*prepared.oe_problem())]


@given(networks(max_operands=6))
@settings(max_examples=100)
def test_a_label_sets_size_counted_by_size_class_is_the_product_of_its_sizes(
    problem: Network,
) -> None:
    inputs, output, sizes = problem
    prepared = costmodel.Problem(inputs, output, sizes)
    for mask in {
        *prepared.inputs,
        prepared.output,
        sum(1 << k for k in range(len(prepared.labels))),
    }:
        expected = 1
        for k, size in enumerate(prepared.label_sizes):
            if mask >> k & 1:
                expected *= size
        assert prepared.size(mask) == expected


def _finder_line(report: str) -> str | None:
    return next((line.strip() for line in report.splitlines() if "path finder" in line), None)


def test_the_finder_line_names_the_finder_of_this_plan_s_optimize() -> None:
    """A review: the memo of choices was keyed by the problem alone, so an "auto" report
    named the greedy search another call ran, or lost its line, and a given path was
    credited to the search."""
    eq = "ab,bc,cd,de->ae"
    for shapes in ([(4, 4), (4, 8), (8, 16), (16, 2)], [(32, 32), (32, 64), (64, 16), (16, 8)]):
        es.clear_plan_cache()
        first = _finder_line(es.explain(eq, *shapes))
        greedy = _finder_line(es.explain(eq, *shapes, optimize="greedy"))
        assert first is not None and "optimal over the cost model" in first
        assert greedy is not None and "'greedy'" in greedy
        assert _finder_line(es.explain(eq, *shapes)) == first
    path = [(2, 3), (1, 2), (0, 1)]
    shapes = [(30, 40), (40, 50), (50, 60), (60, 20)]
    es.explain(eq, *shapes)
    assert _finder_line(es.explain(eq, *shapes, optimize=path)) is None
    named = _finder_line(es.explain(eq, *shapes, optimize=opt_einsum.paths.greedy))
    assert named is not None and "opt_einsum greedy" in named


@pytest.mark.parametrize("finder", ["greedy", "optimal", "dp", "random-greedy"])
def test_a_cap_holds_as_numpy_s(finder: str) -> None:
    """A review: opt_einsum reads a cap of -1 as no limit (NumPy: nothing fits), and its
    random finders ignore a cap."""
    shapes = [(2, 3), (3, 4), (4, 5), (5, 2)]
    for cap in (-1, -5.0, float("-inf")):
        path, _ = es.einsum_path("ab,bc,cd,de->ae", *shapes, optimize=(finder, cap))
        assert path == ["einsum_path", (0, 1, 2, 3)]
        want, _ = np.einsum_path(
            "ab,bc,cd,de->ae", *[np.ones(s) for s in shapes], optimize=("greedy", -1)
        )
        assert path == want
    path, _ = es.einsum_path("ab,bc,cd,de->ae", *shapes, optimize=(finder, 3))
    assert path == ["einsum_path", (0, 1, 2, 3)]  # every pair makes more than 3 elements


def test_einsum_vjp_takes_the_optimize_forms_einsum_takes() -> None:
    """Reviews: BranchBound refused the second backward einsum; a list or tuple became
    "auto" unchecked (an incomplete path passed, a cap was dropped)."""
    a, b, c = np.ones((3, 4)), np.ones((4, 5)), np.ones((5, 2))
    cot = np.ones((3, 2))
    want = es.einsum_vjp("ab,bc,cd->ad", (a, b, c), cot)
    for optimize in (opt_einsum.BranchBound(), opt_einsum.RandomGreedy(), ("greedy", 100)):
        got = es.einsum_vjp("ab,bc,cd->ad", (a, b, c), cot, optimize=optimize)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w)
    for bad, error in (
        (("bogus", 10), es.EinsumError),
        (("greedy", "x"), es.EinsumError),
        ([(0, 1)], es.EinsumPathError),
        ([(0, 9), (0, 1)], es.EinsumError),
    ):
        with pytest.raises(error):
            es.einsum_vjp("ab,bc,cd->ad", (a, b, c), cot, optimize=bad)


def test_einsum_path_s_report_describes_the_path_it_returns() -> None:
    """A review: with a random optimizer einsum_path searched three times, and its report
    (explain's) described another path than the one returned."""
    equation, shapes = rand_equation(12, 3, seed=4, d_min=2, d_max=5)
    operands = [np.ones(s) for s in shapes]
    for _ in range(5):
        path, report = es.einsum_path(
            equation, *operands, optimize=opt_einsum.RandomGreedy(max_repeats=4)
        )
        assert f"path: {[tuple(e) for e in path[1:]]}" in report


def test_a_deterministic_finder_searches_a_problem_once(monkeypatch) -> None:
    """A review: einsum_path with optimize="dp" ran opt_einsum's search four times (the plan,
    the report's plans), 4x opt_einsum's own time on a 30-operand network."""
    import opt_einsum as oe

    from einstride.engine.spec import paths

    calls = []
    dp = oe.paths.get_path_fn("dp")

    def counted(*args, **kwargs):
        calls.append(1)
        return dp(*args, **kwargs)

    monkeypatch.setitem(oe.paths._PATH_OPTIONS, "dp", counted)
    paths._searched_once.cache_clear()
    eq = "ab,bc,cd,de,ef,fg,gh,hi,ij,ja->"
    ops = [np.full((3, 3), 0.5)] * 10
    path, _ = es.einsum_path(eq, *ops, optimize="dp")
    assert len(calls) == 1
    np.testing.assert_allclose(es.einsum(eq, *ops, optimize="dp"), np.einsum(eq, *ops))
    assert len(calls) == 1 and es.einsum_path(eq, *ops, optimize="dp")[0] == path


def test_weighted_greedy_trials_take_sizes_past_a_floats_range() -> None:
    # a complete graph of 40 operands, bonds of 16: intermediates of 2**1600 elements
    # (contract_expression takes such shapes); the weighted scores raised OverflowError
    n = 40
    pairs = list(itertools.combinations(range(n), 2))
    inputs = [tuple(k for k, pair in enumerate(pairs) if a in pair) for a in range(n)]
    problem = costmodel.Problem(inputs, (), [16] * len(pairs))
    for trial in (0, len(search.FIXED_WEIGHTS)):
        assert contracts_to_one(search._greedy(problem, trial), n)
