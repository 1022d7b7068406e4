"""A reduction whose innermost summed axes sit inside kept ones runs in two passes (the
planner's :func:`~einstride.engine.backends.numpy.plan.deferred_sums`), and the one-operand
lane hands exactly those calls to the planner."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy.cache import clear_plan_cache
from einstride.engine.backends.numpy.fold import Term
from einstride.engine.backends.numpy.lanes import lane_answers
from einstride.engine.backends.numpy.options import PlannerOptions, default_options
from einstride.engine.backends.numpy.plan import (
    DEFER_MAX_BYTES,
    DEFER_MIN_COMBOS,
    deferred_sums,
)

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _reduce_steps(equation: str, operand: np.ndarray) -> int:
    report = es.explain(equation, operand)
    return sum(" reduce " in line for line in report.splitlines() if "step" in line)


def test_the_marginal_of_two_qubits_sums_in_two_passes() -> None:
    # qubits 0 and 16 of 18: one pass makes 131,072 calls of NumPy's kernel (2.5 ms
    # measured), two make runs of 4 (0.24 ms) and a second pass over 8 elements
    state = np.random.default_rng(0).random((2,) * 18)
    equation = "abcdefghijklmnopqr->aq"
    assert _reduce_steps(equation, state) == 2
    before = lane_answers()
    np.testing.assert_allclose(es.einsum(equation, state), np.einsum(equation, state))
    assert lane_answers() == before  # the lane left it to the plan


def test_long_inner_runs_and_large_first_results_stay_one_pass() -> None:
    rng = np.random.default_rng(1)
    assert _reduce_steps("abcdefghijklmnopqr->ai", rng.random((2,) * 18)) == 1  # runs of 512
    # a first pass would keep 32,768 elements (256 KiB): measured 1.4x slower than one pass
    wide = rng.random((1, 2, 1, 32, 8, 1, 2, 16, 2, 1, 2, 1, 32, 1, 1))
    assert _reduce_steps("abcdefghijklmno->nemcl", wide) == 1


def test_a_backend_without_numpys_loop_never_defers() -> None:
    term = Term.row_major(range(18), (2,) * 18, np.dtype(float))
    assert deferred_sums(term, frozenset({0, 16}), default_options()) == {17}
    assert not deferred_sums(term, frozenset({0, 16}), PlannerOptions(loop_ns=math.inf))


@st.composite
def _reductions(draw: Any) -> tuple[str, np.ndarray]:
    """One operand of small axes (2-4), 2^16 to 2^17 elements, in any axis order, gapped
    along up to two axes, reversed or broadcast along some, summed over a random subset of
    its labels."""
    sizes = draw(st.lists(st.sampled_from([2, 2, 2, 3, 4]), min_size=8, max_size=17))
    while math.prod(sizes) > 1 << 17:
        sizes.pop()
    while math.prod(sizes) < DEFER_MIN_COMBOS:
        sizes.append(2)
    n = len(sizes)
    gaps = [1] * n
    for axis in draw(st.lists(st.integers(0, n - 1), max_size=2)):
        gaps[axis] = 2
    perm = draw(st.permutations(range(n)))
    stored = [sizes[a] * gaps[a] for a in perm]
    base = np.random.default_rng(draw(st.integers(0, 99))).random(stored)
    array = base.transpose(np.argsort(perm))[tuple(slice(None, None, g) for g in gaps)]
    for axis in draw(st.lists(st.integers(0, n - 1), max_size=2)):
        array = np.flip(array, axis)
    if draw(st.integers(0, 5)) == 0:  # a broadcast axis
        axis = draw(st.integers(0, n - 1))
        array = np.broadcast_to(array.take([0], axis), array.shape)
    term = LETTERS[:n]
    kept = draw(st.lists(st.sampled_from(term), unique=True, min_size=1, max_size=4))
    return term + "->" + "".join(kept), array


@settings(max_examples=120, deadline=None)
@given(_reductions())
def test_two_passes_agree_with_numpy_and_the_lane_with_the_planner(
    case: tuple[str, np.ndarray],
) -> None:
    equation, operand = case
    clear_plan_cache()  # the shape class is planned for these operands themselves
    term_text, out = equation.split("->")
    term = Term.of(range(len(term_text)), operand.shape, operand.strides, operand.dtype)
    later = deferred_sums(term, frozenset(term_text.index(c) for c in out), default_options())
    assert all(term_text[lab] not in out for lab in later)
    first = math.prod(operand.shape[lab] for lab in later) * math.prod(
        operand.shape[term_text.index(c)] for c in out
    )
    assert not later or first * operand.itemsize <= DEFER_MAX_BYTES
    summed = len(term_text) - len(out)
    assert len(later) < summed  # the first pass sums something
    steps = _reduce_steps(equation, operand)
    event(f"reduce steps: {steps}")
    assert (steps >= 2) == bool(later) or 0 in operand.strides  # (a broadcast axis: dropped)
    before = lane_answers()
    np.testing.assert_allclose(es.einsum(equation, operand), np.einsum(equation, operand))
    if later:
        assert lane_answers() == before
