"""The exact optimum over arrays (spec/subsets.py) is the Python loop's (spec/trees.py):
the same cost up to rounding, the same tree but for ties within it, a valid tree priced
exactly by the cost model; it hands what it cannot hold to the loop."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from einstride.engine.spec import trees
from einstride.engine.spec.costmodel import Problem
from einstride.engine.spec.subsets import MAX_INPUTS, MAX_LABELS, optimal_tree_arrays

Network = tuple[list[tuple[int, ...]], tuple[int, ...], list[int]]


@st.composite
def subproblems(draw: Any, min_inputs: int = 2, max_inputs: int = 9) -> Network:
    """Operands of distinct labels (shared by any number of operands, some kept), with
    label sizes from 1 (a label that costs nothing) to 1000 (a matmul's side)."""
    n = draw(st.integers(min_inputs, max_inputs))
    n_labels = draw(st.integers(1, 20))
    sizes = draw(st.lists(st.sampled_from([1, 2, 3, 4, 7, 16, 64, 1000]),
                          min_size=n_labels, max_size=n_labels))  # fmt: skip
    labels = st.lists(st.integers(0, n_labels - 1), max_size=5, unique=True)
    inputs = [tuple(draw(labels)) for _ in range(n)]
    used = sorted({x for t in inputs for x in t})
    output = tuple(draw(st.lists(st.sampled_from(used), unique=True, max_size=3)) if used else [])
    return inputs, output, sizes


def leaves(tree: Any) -> list[int]:
    return [tree] if isinstance(tree, int) else leaves(tree[0]) + leaves(tree[1])


@settings(max_examples=300, deadline=None)
@given(subproblems())
def test_the_arrays_find_the_loops_optimum(network: Network) -> None:
    problem = Problem(*network)
    found = optimal_tree_arrays(problem, problem.inputs, problem.output)
    assert found is not None
    loop = trees.optimal_tree_loop(Problem(*network), problem.inputs, problem.output)
    ns, flops, largest, tree = found
    assert sorted(leaves(tree)) == list(range(len(problem.inputs)))  # every input once
    assert ns == pytest.approx(loop[0], rel=1e-12)
    if tree == loop[3]:  # the cost model's own price (a pair's two orders may round apart)
        assert ns == pytest.approx(loop[0], rel=1e-15) and (flops, largest) == loop[1:3]
    # the tree's price is the cost model's: its path rated over the whole problem
    path = trees.tree_to_path(tree, len(problem.inputs))
    rated = problem.cost(path)
    assert rated[0] == pytest.approx(ns, rel=1e-12) and rated[1:] == (flops, largest)


@settings(max_examples=60, deadline=None)
@given(subproblems(min_inputs=trees.ARRAYS_FROM), st.integers(1, 3))
def test_a_subset_of_the_operands_into_the_labels_the_rest_needs(
    network: Network, left_out: int
) -> None:
    # as reconfiguration asks it: a few operands of a larger network, into their result
    problem = Problem(*network)
    inside, rest = problem.inputs[:-left_out], problem.inputs[-left_out:]
    union = 0
    for mask in inside:
        union |= mask
    needed = problem.output
    for mask in rest:
        needed |= mask
    output = union & needed
    found = optimal_tree_arrays(problem, inside, output)
    loop = trees.optimal_tree_loop(Problem(*network), inside, output)
    assert found is not None and found[0] == pytest.approx(loop[0], rel=1e-12)
    if len(inside) >= trees.ARRAYS_FROM:
        assert trees.optimal_tree(problem, inside, output) == found  # the arrays' answer


@pytest.mark.parametrize(
    "network",
    [
        ([(k, (k + 1) % 8) for k in range(8)], (), [2] * 8),  # many equal trees
        ([(k, (k + 1) % 8) for k in range(8)] + [(8, 0)], (), [2] * 9),  # label 8 summed first
        ([(), (), (), (), (0,), ()], (), [1]),  # found by the review: one operand's own label
    ],
)
def test_equal_costs_keep_the_loops_first_tree(network: Network) -> None:
    problem = Problem(*network)
    found = optimal_tree_arrays(problem, problem.inputs, problem.output)
    assert found == trees.optimal_tree_loop(Problem(*network), problem.inputs, problem.output)


def test_more_labels_than_a_word_holds_go_to_the_loop() -> None:
    n_labels = MAX_LABELS + 6  # six operands over 70 labels: each holds 13 or 14 of them
    inputs = [tuple(range(k, n_labels, 6)) for k in range(6)] + [(0, 1)]
    problem = Problem(inputs, (), [2] * n_labels)
    assert optimal_tree_arrays(problem, problem.inputs, problem.output) is None
    loop = trees.optimal_tree_loop(Problem(inputs, (), [2] * n_labels), problem.inputs, 0)
    assert trees.optimal_tree(problem, problem.inputs, problem.output) == loop


def test_too_many_inputs_go_to_the_loop() -> None:
    problem = Problem([(k, k + 1) for k in range(MAX_INPUTS + 1)], (), [2] * (MAX_INPUTS + 2))
    assert optimal_tree_arrays(problem, problem.inputs, problem.output) is None


def test_operands_without_labels() -> None:
    problem = Problem([()] * 6, (), [1])
    ns, flops, largest, tree = trees.optimal_tree(problem, problem.inputs, problem.output)
    assert (ns, flops, largest, tree) == trees.optimal_tree_loop(
        Problem([()] * 6, (), [1]), problem.inputs, problem.output
    )


@pytest.mark.parametrize(("n_labels", "over_arrays"), [(8, True), (MAX_LABELS + 6, False)])
def test_a_subtree_counts_the_work_of_the_way_it_was_solved(
    n_labels: int, over_arrays: bool
) -> None:
    # the budget's unit: the loop's pair costs, fewer for a subtree solved over arrays; one
    # of more labels than a word holds is solved in the loop and counts all of its own
    inputs = [tuple(range(k, n_labels, 6)) for k in range(6)] + [(0, 1)]
    problem = Problem(inputs, (), [2] * n_labels)
    found, work = trees.solved_exactly(problem, problem.inputs, problem.output)
    assert work == (trees.subtree_work(7) if over_arrays else trees.optimal_pairs(7))
    assert found[0] == pytest.approx(trees.optimal_tree_loop(problem, problem.inputs, 0)[0])
    assert trees.subtree_work(trees.ARRAYS_FROM - 1) == trees.optimal_pairs(trees.ARRAYS_FROM - 1)
    for k in range(trees.ARRAYS_FROM, 11):
        assert trees.subtree_work(k) < trees.optimal_pairs(k) // 3
