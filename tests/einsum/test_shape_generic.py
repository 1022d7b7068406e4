"""The shape-generic level of the plan cache (issue 14): a plan built from a shape class's
cached decisions equals a plan built from scratch, its program (size-free or compiled) gives
NumPy's result, and its bytes are the plan's."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy import plan as planner
from einstride.engine.backends.numpy.cache import clear_plan_cache, facts_of, make_entry
from einstride.engine.backends.numpy.generic import PROMOTE_AT, generic_entry
from einstride.engine.backends.numpy.options import DEFAULT
from einstride.engine.backends.numpy.peak import plan_peak
from einstride.engine.backends.numpy.report import format_plan
from einstride.engine.backends.numpy.skeleton import rep_size, shape_class

LABELS = "abcdef"
# sizes of one half-octave class each (1 and 2 and 3 are their own classes)
BUCKETS = [(1,), (2,), (3,), (4, 5), (6, 7), (8, 9, 10, 11), (12, 13, 14, 15)]
DTYPES = ["float64", "float32", "complex128", "int64"]


@st.composite
def twins(draw: Any) -> tuple[str, list[np.ndarray], list[np.ndarray]]:
    """An equation and two operand lists of one shape class: the same regular layouts (C
    order, a permuted view, a broadcast axis, steps), each label's sizes drawn from one
    half-octave."""
    n = draw(st.integers(1, 4))
    terms = ["".join(draw(st.lists(st.sampled_from(LABELS), min_size=0, max_size=4)))
             for _ in range(n)]  # fmt: skip
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    if draw(st.integers(0, 5)) == 0 and output:
        output += output[0]  # a diagonal expansion now and then
    buckets = {x: draw(st.sampled_from(BUCKETS)) for x in used}
    first = {x: draw(st.sampled_from(b)) for x, b in buckets.items()}
    second = {x: draw(st.sampled_from(b)) for x, b in buckets.items()}
    dtype = draw(st.sampled_from(DTYPES))
    layouts = [draw(_layout(len(term))) for term in terms]
    return (
        ",".join(terms) + "->" + output,
        [_operand(term, first, dtype, how) for term, how in zip(terms, layouts)],
        [_operand(term, second, dtype, how) for term, how in zip(terms, layouts)],
    )


Layout = tuple[tuple[int, ...], int | None, tuple[int, ...]]


@st.composite
def _layout(draw: Any, rank: int) -> Layout:
    """A permutation of the axes, an axis that broadcasts (stride 0) or None, and a step
    along each axis of the array it is sliced from (1: dense)."""
    perm = tuple(draw(st.permutations(range(rank))))
    broadcast = draw(st.sampled_from([None, None, *range(rank)]))
    steps = tuple(draw(st.sampled_from([1, 1, 1, 2, 3])) for _ in range(rank))
    return perm, broadcast, steps


def _operand(term: str, sizes: dict[str, int], dtype: str, how: Layout) -> np.ndarray:
    perm, broadcast, steps = how
    shape = tuple(sizes[x] for x in term)
    base_shape = tuple(shape[p] * step for p, step in zip(perm, steps))
    inverse = tuple(int(k) for k in np.argsort(perm))
    values = (np.arange(1, 1 + int(np.prod(base_shape))) % 7).astype(dtype).reshape(base_shape)
    values = values[tuple(slice(None, None, step) for step in steps)]
    view = values.transpose(inverse)
    if broadcast is not None:
        one = view[(slice(None),) * broadcast + (slice(0, 1),)]
        view = np.broadcast_to(one, shape)
    return view


def _entry_plan(equation: str, operands: list[np.ndarray]) -> Any:
    return make_entry(equation, facts_of(operands), None, None, "auto").plan


def _structure(plan: Any) -> str:
    """The plan's report without its numbers, the cache level and the path search (and
    which step's allocation is the largest: that depends on the sizes)."""
    lines = format_plan(plan).splitlines()
    skipped = ("decisions:", "finder", "largest intermediate:")
    text = "\n".join(line for line in lines if not any(s in line for s in skipped))
    return re.sub(r"\d[\d,.]*\d|\d", "#", text)


@settings(max_examples=150, deadline=None)
@given(twins())
def test_a_plan_through_the_shape_generic_level_equals_a_plan_from_scratch(
    case: tuple[str, list[np.ndarray], list[np.ndarray]],
) -> None:
    equation, first, second = case
    mismatches = len(planner.REPLAY_MISMATCHES)
    clear_plan_cache()
    _entry_plan(equation, first)  # the class's decisions are made (and cached) here
    through_cache = _entry_plan(equation, second)
    clear_plan_cache()
    from_scratch = _entry_plan(equation, second)
    assert through_cache == from_scratch
    assert through_cache.decided_for == from_scratch.decided_for
    classes = [shape_class([op.shape for op in ops], [op.strides for op in ops],
                           [op.dtype for op in ops]) for ops in (first, second)]  # fmt: skip
    # (a spread plan, one with labels every operand broadcasts, is planned per shape)
    if classes[1] is not None and classes[0] == classes[1] and through_cache.spread is None:
        # (a step that spans a size, as a slice of one index leaves, is another class)
        assert through_cache.reused and not from_scratch.reused
        assert through_cache.decided_for == classes[1].rep_shapes
        # the same decisions as the first operands' plan: only the numbers differ
        assert _structure(through_cache) == _structure(_entry_plan(equation, first))
    assert len(planner.REPLAY_MISMATCHES) == mismatches


@settings(max_examples=150, deadline=None)
@given(twins())
def test_the_size_free_program_gives_numpys_result_and_the_plans_bytes(
    case: tuple[str, list[np.ndarray], list[np.ndarray]],
) -> None:
    equation, first, second = case
    clear_plan_cache()
    es.einsum(equation, *first)
    if len(set(equation.split("->")[1])) != len(equation.split("->")[1]):
        expected = es.einsum(equation, *second, optimize=False)  # NumPy has no expansion
    else:
        expected = np.einsum(equation, *second)
    entry, _ = generic_entry(equation, facts_of(second), None, "auto", DEFAULT.options)
    if entry is None:  # the class's program holds sizes: the compiled plan runs
        entry = make_entry(equation, facts_of(second), None, None, "auto")
    got = entry.run(second, None)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert np.asarray(got).shape == np.asarray(expected).shape
    assert entry.peak == plan_peak(entry.plan)
    assert entry.largest == entry.plan.largest_bytes


def test_rounding_keeps_every_size_of_a_half_octave_together() -> None:
    for bucket in BUCKETS:
        assert len({rep_size(s) for s in bucket}) == 1
    assert [rep_size(s) for s in (16, 23, 24, 31, 32, 1000, 1024, 1535, 1536)] == [
        16, 16, 24, 24, 32, 768, 1024, 1024, 1536]  # fmt: skip


def test_explain_says_which_level_decided() -> None:
    clear_plan_cache()
    first = es.explain("bij,bjk->bik", np.ones((4, 40, 16)), np.ones((4, 16, 16)))
    again = es.explain("bij,bjk->bik", np.ones((4, 45, 16)), np.ones((4, 16, 16)))
    assert "decisions: of the shape class of (4, 32, 16), (4, 16, 16)" in first
    assert "decided when these shapes, the first of their class, were planned, and cached" in first
    assert "reused from the shape-generic cache" in again
    # the report describes the plan, whenever it is asked for: not "made now" on a hit
    assert es.explain("bij,bjk->bik", np.ones((4, 40, 16)), np.ones((4, 16, 16))) == first
    strided = es.explain("ij,jk->ik", np.ones((40, 32))[:, :10], np.ones((10, 8)))
    assert "decisions: made for these shapes (no shape class: an irregular layout" in strided
    # asked as shapes after the call itself ran, the class is reused from an earlier call of
    # these very shapes: the line said "decided for an earlier shape" (a review)
    by_shapes = es.explain("bij,bjk->bik", (4, 40, 16), (4, 16, 16))
    assert "decided when an earlier call, maybe of these very shapes, first planned" in by_shapes


@pytest.mark.parametrize(
    ("equation", "make"),
    [
        ("ij,jk->ik", lambda k: (np.ones((k, 8)), np.ones((8, 8)))),
        ("bhqd,bhkd->bhqk", lambda k: (np.ones((2, 3, k, 8)), np.ones((2, 3, k, 8)))),
        ("bsi,oi->bso", lambda k: (np.ones((2, k, 6)), np.ones((5, 6)))),
        ("ab,bc,cd->ad", lambda k: (np.ones((k, 8)), np.ones((8, 9)), np.ones((9, 3)))),
        ("ijk->i", lambda k: (np.ones((k, 4, 5)),)),
        ("ii->", lambda k: (np.ones((k, k)),)),
    ],
)
def test_new_shapes_of_a_class_run_without_planning(equation: str, make: Any) -> None:
    """The issue's cold cases: after the first shape of a half-octave, no shape is planned
    (no plan is built until one is asked for)."""
    clear_plan_cache()
    make_entry(equation, facts_of(make(40)), None, None, "auto")  # (einsum: unary lanes)
    misses = planner.class_decisions.cache_info().misses
    for k in range(41, 48):
        operands = make(k)
        entry = make_entry(equation, facts_of(operands), None, None, "auto")
        assert entry._plan is None  # the size-free program, no plan built
        for _ in range(PROMOTE_AT - 1):  # a shape that comes back a few times: still none
            np.testing.assert_allclose(entry.run(operands, None), np.einsum(equation, *operands))
            assert entry._plan is None
        # the shape keeps coming back (a warm cache): the plan is built and compiled
        np.testing.assert_allclose(entry.run(operands, None), np.einsum(equation, *operands))
        assert entry._plan is not None and getattr(entry.run, "__self__", None) is not entry
    assert planner.class_decisions.cache_info().misses == misses


@pytest.mark.parametrize(
    ("equation", "make"),
    [
        ("ij,jk->ik", lambda k: (np.ones((8, k)).T, np.ones((8, 8)).T)),  # transposed views
        ("ij,jk->ik", lambda k: (np.ones((2 * k, 16))[::2, ::2], np.ones((16, 16))[::2, ::2])),
        ("bij,bjk->bik", lambda k: (np.ones((k, 4, 6)).transpose(1, 0, 2), np.ones((4, 6, 5)))),
        ("ij,j->i", lambda k: (np.ones((k, 7)), np.broadcast_to(np.ones(1), (7,)))),
    ],
)
def test_new_shapes_of_a_non_c_ordered_class_skip_binding_and_the_class(
    equation: str, make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Operands of a regular layout other than C order (transposed, strided, broadcast):
    after the first shape of a class, a new shape's entry is found by the operands'
    patterns alone, without binding the equation or building the shape class."""
    from einstride.engine.backends.numpy import generic

    clear_plan_cache()
    found = generic._class_found
    looks: list[str] = []

    def counted(*args: Any) -> Any:
        looks.append(equation)
        return found(*args)

    monkeypatch.setattr(generic, "_class_found", counted)
    for k in range(40, 48):  # one half-octave class
        operands = make(k)
        entry = make_entry(equation, facts_of(operands), None, None, "auto")
        assert entry._plan is None  # the size-free program
        np.testing.assert_allclose(entry.run(operands, None), np.einsum(equation, *operands))
    assert looks == [equation]


def test_the_generic_count_leaves_out_the_call_that_planned_the_class() -> None:
    """``plan_cache_info().generic`` counts misses that a known class's program answered;
    the look that plans the class (its third: its first two run directly, counted as
    ``direct`` when they run) is not one (found by a review: it counted too)."""
    clear_plan_cache()
    start = es.plan_cache_info()
    chain = [np.ones((37, 20)), np.ones((20, 30)), np.ones((30, 5))]
    counts = []
    for rows in (36, 37, 38, 39):  # new shapes of one class (cache misses: counted)
        chain[0] = np.ones((rows, 20))
        make_entry("ij,jk,kl->il", facts_of(chain), None, None, "auto", counted=True)
        info = es.plan_cache_info()
        counts.append((info.direct - start.direct, info.generic - start.generic))
    assert counts == [(0, 0), (0, 0), (0, 0), (0, 1)]  # (entries made, none run)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_named_finder_or_a_cap_is_asked_at_the_real_sizes(backend: str) -> None:
    """A shape class rounds sizes (23 -> 16); a path einstride's own search chose for the
    class stands for them, but ``optimize="optimal"`` or NumPy's ``(name, memory_limit)``
    promise something of the real sizes (a review: the cap kept only at the rounded ones,
    an intermediate of 15 elements under a cap of 12; "optimal" 1.44x the optimum)."""
    import opt_einsum as oe

    if backend == "torch":
        torch = pytest.importorskip("torch")
        convert: Any = lambda a: torch.from_numpy(a)  # noqa: E731
    else:
        convert = lambda a: a  # noqa: E731
    clear_plan_cache()
    for shapes in ([(16, 16), (16, 16), (16, 16)], [(23, 16), (16, 23), (23, 16)]):
        ops = [np.ones(s) for s in shapes]  # the first shapes plan the class
        path = es.einsum_path("ab,bc,cd->ad", *ops, optimize="optimal")[0][1:]
        assert path == list(oe.contract_path("ab,bc,cd->ad", *ops, optimize="optimal")[0])
        got = es.einsum("ab,bc,cd->ad", *map(convert, ops), optimize="optimal")
        np.testing.assert_allclose(np.asarray(got), np.einsum("ab,bc,cd->ad", *ops))
    clear_plan_cache()
    ring = [(3, 4), (4, 4), (4, 6), (6, 3)], [(3, 4), (4, 5), (5, 6), (6, 3)]
    for shapes in ring:  # 5 rounds to 4: one class
        ops = [np.ones(s) for s in shapes]
        path = es.einsum_path("ij,jk,kl,li->", *ops, optimize=("greedy", 12))[0]
        assert path == np.einsum_path("ij,jk,kl,li->", *ops, optimize=("greedy", 12))[0]
        got = es.einsum("ij,jk,kl,li->", *map(convert, ops), optimize=("greedy", 12))
        np.testing.assert_allclose(np.asarray(got), np.einsum("ij,jk,kl,li->", *ops))
    assert path == ["einsum_path", (0, 1, 2, 3)]  # every pair's product exceeds 12 elements
