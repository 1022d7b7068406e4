"""The spectral bisection finder: valid trees, the paths greedy misses on lattices, its
lattice test, where it stops, and its place in the budgeted search."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import numpy as np
import opt_einsum
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opt_einsum.testing import rand_equation

from einstride.engine.spec import bisection, search
from einstride.engine.spec.bisection import bisection_ssa, lattice_like
from einstride.engine.spec.costmodel import Problem, tree_of
from einstride.engine.spec.greedy import greedy_ssa
from einstride.engine.spec.search import search_path

Network = tuple[list[tuple[int, ...]], tuple[int, ...], list[int]]


def lattice(shape: tuple[int, ...], bond: int | list[int], open_legs: int = 0) -> Network:
    """A closed lattice of ``shape`` (one operand per site, a label per bond between
    neighbours; ``bond`` a size for all or one per bond), the first ``open_legs`` sites (at
    most every site) with an output label of size 2 each."""
    sites = list(itertools.product(*(range(n) for n in shape)))
    index = {site: k for k, site in enumerate(sites)}
    inputs: list[list[int]] = [[] for _ in sites]
    sizes: list[int] = []
    for site in sites:
        for axis in range(len(shape)):
            near = site[:axis] + (site[axis] + 1,) + site[axis + 1 :]
            if near in index:
                label = len(sizes)
                sizes.append(bond if isinstance(bond, int) else bond[label % len(bond)])
                inputs[index[site]].append(label)
                inputs[index[near]].append(label)
    output = []
    for k in range(min(open_legs, len(sites))):  # a lattice of fewer sites: one leg each
        output.append(len(sizes))
        inputs[k].append(len(sizes))
        sizes.append(2)
    return [tuple(t) for t in inputs], tuple(output), sizes


def permuted(network: Network, seed: int) -> Network:
    inputs, output, sizes = network
    order = list(range(len(inputs)))
    random.Random(seed).shuffle(order)
    return [inputs[k] for k in order], output, sizes


def regular(n: int, degree: int, seed: int) -> Network:
    eq, shapes = rand_equation(n, degree, seed=seed, d_min=2, d_max=4)
    return as_network(eq, shapes)


def as_network(eq: str, shapes: Any) -> Network:
    lhs, out = eq.split("->")
    ids: dict[str, int] = {}
    sizes: dict[int, int] = {}
    inputs = []
    for term, shape in zip(lhs.split(","), shapes, strict=True):
        inputs.append(tuple(ids.setdefault(c, len(ids)) for c in term))
        for c, n in zip(term, shape, strict=True):
            sizes[ids[c]] = n
    return inputs, tuple(ids[c] for c in out), [sizes[k] for k in range(len(ids))]


def linear(tree: list[tuple[int, int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(e) for e in opt_einsum.paths.ssa_to_linear(tree))


def check_tree(tree: list[tuple[int, int]], n: int) -> None:
    """SSA pairs: every operand and every product used exactly once, ``n - 1`` products."""
    assert len(tree) == n - 1
    used: list[int] = []
    for k, (a, b) in enumerate(tree):
        assert a < b < n + k
        used += [a, b]
    assert sorted(used) == list(range(2 * n - 2))


def rated(network: Network, tree: list[tuple[int, int]]) -> tuple[float, int, int]:
    problem = Problem(*network)
    return problem.cost(linear(tree))


# -- the trees -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "bond", "share"),
    [((6, 6), 4, 0.35), ((8, 8), 3, 0.8), ((8, 8), 4, 0.5), ((12, 12), 2, 0.65)],
)
def test_on_a_closed_grid_it_finds_a_path_far_cheaper_than_greedys(
    shape: tuple[int, int], bond: int, share: float
) -> None:
    network = lattice(shape, bond)
    tree = bisection_ssa(Problem(*network), max_bits=99.0)
    assert tree is not None
    check_tree(tree, len(network[0]))
    greedy = rated(network, greedy_ssa(Problem(*network)))
    found = rated(network, tree)
    assert found[0] < share * greedy[0]  # the cost model's estimate (measured 0.29-0.72x)
    assert found[1] < greedy[1]  # and fewer FLOPs


def test_on_the_benchmarks_8x8_grid_its_flops_are_within_2x_of_cotengras() -> None:
    # cotengra's HyperOptimizer at 5 s in the committed benchmark run: 4.11e6 FLOPs
    # (opt_einsum's count, as here); greedy's path: 2.03e7
    network = lattice((8, 8), 3)
    tree = bisection_ssa(Problem(*network), max_bits=99.0)
    assert tree is not None
    assert rated(network, tree)[1] <= 2 * 4.11e6


@pytest.mark.parametrize("seed", range(3))
def test_the_tree_does_not_depend_on_the_operands_order_by_much(seed: int) -> None:
    network = permuted(lattice((8, 8), 3), seed)
    tree = bisection_ssa(Problem(*network), max_bits=99.0)
    assert tree is not None
    check_tree(tree, 64)
    assert rated(network, tree)[1] <= 2 * 4.11e6


def test_the_same_problem_gives_the_same_tree() -> None:
    network = lattice((7, 9), 3)
    trees = [bisection_ssa(Problem(*network), max_bits=99.0) for _ in range(3)]
    assert trees[0] is not None
    assert trees[0] == trees[1] == trees[2]


def mixed_eigh(seed: int) -> Any:
    """``numpy.linalg.eigh`` whose eigenvectors come with random signs and, in each
    eigenspace of two or more, a random orthogonal basis (as another LAPACK may return)."""
    original = np.linalg.eigh
    rng = np.random.default_rng(seed)

    def eigh(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values, vectors = original(matrix)
        vectors = vectors * rng.choice([-1.0, 1.0], size=len(values))
        start = 0
        for end in range(1, len(values) + 1):
            if end == len(values) or values[end] - values[start] > 1e-9:
                if end - start > 1:
                    mix = np.linalg.qr(rng.standard_normal((end - start, end - start)))[0]
                    vectors[:, start:end] = vectors[:, start:end] @ mix
                start = end
        return values, vectors

    return eigh


@pytest.mark.parametrize(
    "network",
    [lattice((8, 8), 3), lattice((6, 10), 3), lattice((12, 12), 2), lattice((5, 7), 4)],
    ids=["8x8", "6x10", "12x12", "5x7"],
)
def test_the_tree_does_not_depend_on_the_eigenvectors_signs_or_basis(
    network: Network, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_the_same_tree_in_any_basis(network, monkeypatch)


def test_a_peps_trees_leaves_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # its leaf blocks are contracted in the coordinates' order, which must not move either
    check_the_same_tree_in_any_basis(peps_norm(6, 2), monkeypatch)


def check_the_same_tree_in_any_basis(network: Network, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = bisection_ssa(Problem(*network), max_bits=99.0)
    assert expected is not None
    for seed in range(6):
        monkeypatch.setattr(np.linalg, "eigh", mixed_eigh(seed))
        assert bisection_ssa(Problem(*network), max_bits=99.0) == expected


@given(
    st.one_of(
        st.tuples(st.integers(1, 6), st.integers(2, 6)),
        st.tuples(st.integers(2, 3), st.integers(2, 3), st.integers(2, 3)),
    ),
    st.lists(st.integers(2, 3), min_size=1, max_size=5),
    st.integers(0, 3),
    st.integers(0, 2**16),
    st.integers(2, 8),
)
@settings(max_examples=60, deadline=None)
def test_every_tree_it_returns_contracts_like_numpy(
    shape: tuple[int, ...], bonds: list[int], open_legs: int, seed: int, leaf: int
) -> None:
    network = permuted(lattice(shape, bonds, open_legs), seed)
    inputs, output, sizes = network
    bisection.LEAF, saved = leaf, bisection.LEAF  # small blocks: every level of halving
    try:
        tree = bisection_ssa(Problem(inputs, output, sizes), max_bits=99.0)
    finally:
        bisection.LEAF = saved
    if len(inputs) < 3:
        assert tree is None
        return
    assert tree is not None  # a connected lattice and no bound: always a tree
    check_tree(tree, len(inputs))
    path = [list(entry) for entry in linear(tree)]
    if rated(network, tree)[2] > 2**16:
        return  # (a 3-D lattice halved into blocks of two: too large to contract here)
    symbols = [opt_einsum.get_symbol(k) for k in range(len(sizes))]
    eq = ",".join("".join(symbols[x] for x in t) for t in inputs)
    eq += "->" + "".join(symbols[x] for x in output)
    rng = np.random.default_rng(seed)
    operands = [rng.random([sizes[x] for x in t]) for t in inputs]
    expected = opt_einsum.contract(eq, *operands, optimize="greedy")
    np.testing.assert_allclose(opt_einsum.contract(eq, *operands, optimize=path), expected)


# -- where it gives up -------------------------------------------------------------------


def test_it_stops_where_a_half_would_hold_more_than_allowed() -> None:
    network = lattice((6, 6), 4)  # the first halves cut 6 bonds of 2 bits
    assert bisection_ssa(Problem(*network), max_bits=11.9) is None
    assert bisection_ssa(Problem(*network), max_bits=16.0) is not None


def test_operands_outside_the_largest_component_are_joined_last() -> None:
    inputs, output, sizes = lattice((5, 5), 2)
    small = [(len(sizes),), (len(sizes),), ()]  # a piece of two, and a scalar
    network = (small[:2] + inputs + small[2:], output, sizes + [3])
    tree = bisection_ssa(Problem(*network), max_bits=99.0)
    assert tree is not None
    check_tree(tree, 28)
    alone = bisection_ssa(Problem(inputs, output, sizes), max_bits=99.0)
    assert alone is not None
    # the lattice's own tree, then the piece of two (6 FLOPs), the scalar (1), the join (1)
    assert rated(network, tree)[1] == rated((inputs, output, sizes), alone)[1] + 6 + 1 + 1


def test_a_scalar_or_a_batch_label_leaves_a_lattice_a_lattice() -> None:
    inputs, output, sizes = lattice((12, 12), 3)
    batch = len(sizes)
    for network in (
        (inputs + [()], output, sizes),
        ([()] + inputs, output, sizes),
        ([t + (batch,) for t in inputs], (batch,), sizes + [2]),
    ):
        assert lattice_like(Problem(*network))
        assert search_path(*network).first == "bisection"  # (annealing may win after it)


@given(st.integers(3, 30), st.integers(0, 2**16), st.integers(2, 17))
@settings(max_examples=150, deadline=None)
def test_every_tree_is_valid_on_any_connected_network(n: int, seed: int, leaf: int) -> None:
    """Hyperedges, labels of size 1, operands with equal labels, output labels, scalars."""
    rng = random.Random(seed)
    inputs = [[k, k + 1] for k in range(n - 1)] + [[]]  # a chain keeps it connected ...
    labels = n
    for _ in range(rng.randint(0, 2 * n)):  # ... and labels on any operands
        for i in rng.sample(range(n), rng.randint(1, min(n, 5))):
            inputs[i].append(labels)
        labels += 1
    sizes = [rng.choice([1, 2, 3]) for _ in range(labels)]
    output = tuple(rng.sample(range(labels), rng.randint(0, 3)))
    problem = Problem([tuple(t) for t in inputs], output, sizes)
    bisection.LEAF, saved = leaf, bisection.LEAF
    try:
        tree = bisection_ssa(problem, max_bits=99.0)
    finally:
        bisection.LEAF = saved
    if tree is not None:
        check_tree(tree, n)


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        (lattice((6, 6), 4), True),
        (lattice((8, 8), 3), True),
        (permuted(lattice((12, 12), 2), 1), True),
        (lattice((6, 10), 3), True),
        (lattice((4, 4, 4), 2), True),
        (lattice((3, 30), 2), False),  # long and thin: a sweep's, not a bisection's
        (permuted(lattice((3, 30), 2), 2), False),  # (whichever operand comes first)
        (lattice((2, 60), 2), False),  # an MPS norm's ladder
        (permuted(lattice((2, 20), 2), 3), False),
        (lattice((40,), 2), False),  # a chain
        (regular(40, 3, seed=3), False),
        (regular(60, 3, seed=4), False),
        (regular(100, 3, seed=5), False),
    ],
)
def test_the_lattice_test(network: Network, expected: bool) -> None:
    assert lattice_like(Problem(*network)) is expected


def squares(network: Network) -> float:
    problem = Problem(*network)
    n = len(problem.inputs)
    neighbours = bisection._neighbours(list(bisection.bond_holders(problem).values()), n)
    return bisection._on_squares(neighbours, list(range(n)))


def test_the_lattice_test_counts_cycles_of_four() -> None:
    assert squares(lattice((6, 6), 2)) == 1.0
    ring = [((k - 1) % 12, k) for k in range(12)]  # a cycle of twelve: no square
    assert squares((ring, (), [2] * 12)) == 0.0
    bow_tie = [(0, 2), (0, 1), (1, 2, 3, 5), (3, 4), (4, 5)]  # two triangles: no square
    assert squares((bow_tie, (), [2] * 6)) == 0.0
    assert squares(regular(60, 3, seed=4)) < bisection.SQUARE_SHARE


# -- in the search -----------------------------------------------------------------------


def test_the_search_starts_from_the_bisections_path_on_grids() -> None:
    for shape, bond in (((6, 6), 5), ((8, 8), 4), ((12, 12), 3)):
        inputs, output, sizes = lattice(shape, bond)
        choice = search_path(inputs, output, sizes)  # (6 x 6: the budget fits no other)
        assert choice.first == "bisection" and choice.tried[0] == "bisection"
        assert choice.finder.startswith("bisection")
        choice = search.rated_choice(choice, inputs, output, sizes)
        greedy = rated((inputs, output, sizes), greedy_ssa(Problem(inputs, output, sizes)))
        assert choice.cost_ns < 0.6 * greedy[0]
        if choice.candidates > 1:
            assert f"{choice.finder} won" in choice.describe()


def test_the_search_does_not_try_it_on_random_networks_or_chains() -> None:
    for network in (regular(40, 3, seed=3), regular(100, 3, seed=5), lattice((2, 60), 8)):
        choice = search_path(*network)
        assert not any("bisection" in tried for tried in choice.tried)


def test_its_path_comes_first_in_place_of_greedys() -> None:
    # the benchmark's closed 8 x 8 grid of bond 3, a contraction of ~3 ms: its budget fits no
    # finder after the first, which is the bisection; greedy's path would cost 2.8x the FLOPs
    # (cotengra's hyper-optimizer in 5 s: 4.8e6 FLOPs)
    inputs, output, sizes = lattice((8, 8), 3)
    n = len(inputs)
    greedy = rated((inputs, output, sizes), greedy_ssa(Problem(inputs, output, sizes)))
    unrated = search_path(inputs, output, sizes)  # the bound's early exit
    assert (unrated.finder, unrated.rated, unrated.tried) == ("bisection", False, ("bisection",))
    assert unrated.describe().startswith("bisection (no other finder fits the search budget")
    chosen = search.rated_choice(unrated, inputs, output, sizes)
    assert chosen.cost_ns < 0.8 * greedy[0] and chosen.flops < 0.4 * greedy[1]
    assert chosen.flops <= 2 * 4.8e6
    assert search_path(inputs, output, sizes, budget_s=0.0).tried == ("bisection",)
    # greedy's path joins the candidates where the budget lasts for it
    given = search_path(inputs, output, sizes, budget_s=search.TRIAL_S_PER_TENSOR * n)
    assert given.tried == ("bisection", "greedy") and given.finder == "bisection"
    assert given.baseline_ns == chosen.cost_ns


def test_a_stopped_bisection_says_so_and_greedy_comes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs, output, sizes = lattice((8, 8), 3)
    monkeypatch.setattr(search, "bisection_ssa", lambda problem, max_bits: None)  # stops
    unrated = search_path(inputs, output, sizes)
    assert unrated.tried[0].startswith("spectral bisection (stopped: a block past")
    assert unrated.tried[1:] == ("greedy",) and unrated.first == "greedy"
    assert "; spectral bisection (stopped: a block past" in unrated.describe()
    choice = search_path(inputs, output, sizes, budget_s=0.05)
    assert choice.first == "greedy" and choice.tried[1] == "greedy"
    assert choice.tried[0].startswith("spectral bisection (stopped: a block past")
    assert math.isfinite(choice.cost_ns)


def test_a_lattice_of_a_small_cut_starts_from_greedys_path() -> None:
    # 100 operands times 2**11.1 elements of its cut: a contraction of a millisecond, where
    # the bisection would nearly double the call
    network = lattice((10, 10), 2)
    n = len(network[0])
    bits = bisection.lattice_bits(Problem(*network))
    assert (
        bits is not None and n * 2 ** (bits / bisection.CUT_FACTOR) < search.BISECTION_MIN_ELEMENTS
    )
    for budget in (None, 0.0, 0.01):
        choice = search_path(*network, budget_s=budget)
        assert choice.first == "greedy" and not any("bisection" in t for t in choice.tried)


def test_the_cut_counts_a_bond_of_parallel_labels_whole_and_only_the_lattices() -> None:
    # two labels of size 2 on every edge are one bond of 4: the same cut, the same first path
    inputs, output, sizes = lattice((8, 8), 4)
    doubled = [tuple(x for label in t for x in (label, label + len(sizes))) for t in inputs]
    twin = (doubled, output, [2] * (2 * len(sizes)))
    single = bisection.lattice_bits(Problem(inputs, output, sizes))
    assert single is not None and bisection.lattice_bits(Problem(*twin)) == pytest.approx(single)
    assert search_path(*twin).first == search_path(inputs, output, sizes).first == "bisection"
    # a separate piece with a wide bond is not the lattice's: its bits do not count
    small = lattice((6, 6), 2)
    extra = len(small[2])
    piece = [(extra,), (extra, extra + 1), (extra + 1,)]
    apart = (small[0] + piece, small[1], small[2] + [1024, 1024])
    assert bisection.lattice_bits(Problem(*apart)) == bisection.lattice_bits(Problem(*small))


def test_no_lattice_past_bisection_up_to_operands_is_bisected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs, output, sizes = lattice((8, 8), 3)
    assert search_path(inputs, output, sizes).first == "bisection"
    monkeypatch.setattr(search, "BISECTION_UP_TO", 63)  # the eigenvectors' cost is cubic
    choice = search_path(inputs, output, sizes)
    assert choice.first == "greedy" and choice.tried == ("greedy",)


def test_greedys_path_wins_where_it_is_cheaper_than_the_bisections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the 10 x 10 grid of bond 2 bisected all the same: greedy's path is rated 0.8x the
    # bisection's; given a budget for it, the search keeps the cheaper
    monkeypatch.setattr(search, "BISECTION_MIN_ELEMENTS", 0)
    network = lattice((10, 10), 2)
    n = len(network[0])
    bisected = rated(network, bisection_ssa(Problem(*network), max_bits=99.0))
    greedy = rated(network, greedy_ssa(Problem(*network)))
    assert greedy[0] < bisected[0]
    choice = search_path(*network, budget_s=search.TRIAL_S_PER_TENSOR * n)
    assert (choice.first, choice.finder, choice.tried) == (
        "bisection",
        "greedy",
        ("bisection", "greedy"),
    )
    assert choice.cost_ns == greedy[0] and choice.baseline_ns == bisected[0]
    assert "cheaper than bisection's path" in choice.describe()


def peps_norm(side: int, bond: int) -> Network:
    """<psi|psi> of a ``side x side`` PEPS: two lattices joined site by site (size 2)."""
    ket, _, sizes = lattice((side, side), bond)
    bra = [tuple(x + len(sizes) for x in t) for t in ket]
    physical = 2 * len(sizes)
    inputs = [t + (physical + k,) for k, t in enumerate(ket)]
    inputs += [t + (physical + k,) for k, t in enumerate(bra)]
    return inputs, (), sizes * 2 + [2] * len(ket)


def test_on_a_peps_norm_the_search_finds_a_tenth_of_greedys_flops() -> None:
    network = peps_norm(8, 2)  # the benchmark's: cotengra at 5 s found 1.57e8-1.74e8 FLOPs
    assert lattice_like(Problem(*network))
    choice = search_path(*network)
    greedy = rated(network, greedy_ssa(Problem(*network)))
    assert choice.finder.startswith("bisection")
    assert choice.flops < 0.15 * greedy[1]
    assert choice.flops <= 2 * 1.57e8


@given(
    st.tuples(st.integers(3, 9), st.integers(3, 9)),
    st.lists(st.integers(2, 5), min_size=1, max_size=4),
    st.integers(0, 2**16),
    st.sampled_from([None, 0.01, 0.25]),
    st.booleans(),
)
@settings(max_examples=25, deadline=None)
def test_the_search_on_lattices_is_deterministic_valid_and_tries_the_bisection(
    shape: tuple[int, int], bonds: list[int], seed: int, budget: float | None, peps: bool
) -> None:
    network = permuted(peps_norm(shape[0], bonds[0]) if peps else lattice(shape, bonds), seed)
    search.DEADLINE_FACTOR, saved = 1e9, search.DEADLINE_FACTOR  # a busy machine must not cut
    try:
        first = search_path(*network, seed=seed % 4, budget_s=budget)
        again = search_path(*network, seed=seed % 4, budget_s=budget)
    finally:
        search.DEADLINE_FACTOR = saved
    assert first == again
    if not first.rated:
        first = search.rated_choice(first, *network)
    n = len(network[0])
    check_tree(tree_of(first.path, n), n)
    bits = bisection.lattice_bits(Problem(*network))
    wide = (
        bits is not None and n * 2 ** (bits / bisection.CUT_FACTOR) >= search.BISECTION_MIN_ELEMENTS
    )
    if search.BISECTION_FROM < n <= search.BISECTION_UP_TO and wide:
        assert first.first == "bisection" or first.tried[0].startswith("spectral bisection")
        if budget == 0.25:
            assert "greedy" in first.tried  # and greedy's path where the budget lasts


def test_leaf_blocks_go_to_greedy_in_the_coordinates_order() -> None:
    # greedy breaks its ties by operand order: in index order (all kets, then all bras) the
    # PEPS's blocks were contracted strip by strip, 0.54x greedy's whole path; swept by the
    # coordinates (a site's ket and bra side by side), 0.22x
    network = peps_norm(8, 2)
    tree = bisection_ssa(Problem(*network), max_bits=99.0)
    assert tree is not None
    greedy = rated(network, greedy_ssa(Problem(*network)))
    assert rated(network, tree)[0] < 0.3 * greedy[0]
