"""The one-operand lane (:mod:`einstride.engine.backends.numpy.lanes`) gives exactly what the
planned way gives, on every layout, and hands every call it does not fit to the planner;
and a shape class never answers shapes whose sizes disagree."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import pytest
from einsum_strategies import layouts
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.backends.numpy import lanes
from einstride.engine.backends.numpy.cache import clear_plan_cache, plan_cache_info
from einstride.engine.backends.numpy.generic import PROMOTE_AT
from einstride.engine.backends.numpy.lanes import NO_LANE, UnaryLane, lane_for
from einstride.engine.backends.numpy.options import PlannerOptions, set_default_options
from einstride.memory import set_memory_limit

LABELS = "abcD"  # an upper-case label too: NumPy's loop reads the caller's own string
PLANNED = {"memory_limit": 1 << 40}  # any explicit option takes the planned way


def warm_planned(equation: str, *operands: Any) -> None:
    """Call the planned way until the shape's own plan runs: a class's first calls run
    directly, a tiny problem's loop until the shape's PROMOTE_AT-th call (their sums may
    round otherwise, their result C-ordered)."""
    for _ in range(PROMOTE_AT - 1):
        es.einsum(equation, *operands, **PLANNED)


@st.composite
def unary_cases(draw: Any) -> tuple[str, np.ndarray]:
    """A one-operand equation (repeats, sums, transposes, implicit mode) and an operand of
    any layout and a lane dtype."""
    term = draw(st.lists(st.sampled_from(LABELS), min_size=0, max_size=4))
    sizes = {x: draw(st.integers(0, 4)) for x in LABELS}
    used = list(dict.fromkeys(term))
    if draw(st.booleans()):
        equation = "".join(term)  # implicit: the labels seen once, sorted
    else:
        out = draw(st.permutations(used))[: draw(st.integers(0, len(used)))]
        equation = "".join(term) + "->" + "".join(out)
    if draw(st.booleans()):
        equation = " ".join(equation)  # spaces: the lane's own letters, not the string
    dtype = draw(st.sampled_from(["float64", "float32", "complex128", "complex64"]))
    shape = tuple(sizes[x] for x in term)
    return equation, np.asarray(draw(layouts(shape, dtype)))  # rank 0: a 0-d array


@settings(max_examples=300, deadline=None)
@given(unary_cases())
def test_the_lane_gives_what_the_plan_gives(case: tuple[str, np.ndarray]) -> None:
    equation, a = case
    lane = lane_for(equation)
    assert isinstance(lane, UnaryLane)
    assert lane.native == ("->" in equation and " " not in equation)
    # an empty reduction is planned (its result), and an empty diagonal (its sizes)
    takes = a.size > 0 or not (lane.distinct or lane.same)
    before = plan_cache_info().lanes
    got = es.einsum(equation, a)
    again = es.einsum(equation, a)  # the last call's test (the same subscripts and dtype)
    assert plan_cache_info().lanes == before + 2 * takes  # the lane answered both
    planned = es.einsum(equation, a, **PLANNED)
    np.testing.assert_array_equal(again, got)
    assert type(got) is type(planned)
    assert got.dtype == planned.dtype and np.shape(got) == np.shape(planned)
    np.testing.assert_allclose(got, planned, rtol=1e-5, atol=1e-5)
    if isinstance(got, np.ndarray):
        assert np.shares_memory(got, a) == np.shares_memory(planned, a)  # a view iff planned
        assert got.flags.writeable == planned.flags.writeable


@st.composite
def expansion_cases(draw: Any) -> tuple[str, np.ndarray]:
    """A one-operand expansion that sums nothing (each label once in the operand, at least
    one repeated in the output, in any order) and an operand of any layout and lane dtype."""
    term = "".join(draw(st.permutations("abD"))[: draw(st.integers(1, 3))])
    repeats = draw(st.lists(st.sampled_from(term), min_size=1, max_size=3))
    out = "".join(draw(st.permutations(term + "".join(repeats))))
    sizes = {x: draw(st.integers(1, 4)) for x in term}
    dtypes = ["float64", "float32", "complex128", "complex64", "longdouble", "clongdouble"]
    shape = tuple(sizes[x] for x in term)
    equation = f"{term}->{out}"
    if draw(st.booleans()):
        equation = " ".join(equation)
    return equation, np.asarray(draw(layouts(shape, draw(st.sampled_from(dtypes)))))


@settings(max_examples=200, deadline=None)
@given(expansion_cases())
def test_the_expansion_lane_gives_exactly_what_the_plan_gives(
    case: tuple[str, np.ndarray],
) -> None:
    equation, a = case
    before = plan_cache_info().lanes
    got = es.einsum(equation, a)
    assert plan_cache_info().lanes == before + 1
    planned = es.einsum(equation, a, **PLANNED)
    assert type(got) is np.ndarray and got.dtype == planned.dtype
    np.testing.assert_array_equal(got, planned)
    assert got.strides == planned.strides and got.flags.writeable
    assert not np.shares_memory(got, a)
    term, out = equation.replace(" ", "").split("->")
    for index in np.ndindex(got.shape):  # the brute-force oracle: NumPy cannot expand
        at = {}
        agree = all(at.setdefault(label, i) == i for label, i in zip(out, index, strict=True))
        assert got[index] == (a[tuple(at[label] for label in term)] if agree else 0)


@pytest.mark.parametrize(
    ("equation", "operand"),
    [
        ("ij->iij", np.ones((0, 3))),  # an empty result: the plan's
        ("ij->iij", np.ones((3, 2), np.int64)),  # another dtype
        ("ij->iij", np.ones((2, 3, 4))),  # another rank: the planned error
        ("i->ii", np.ones(3, np.float16)),  # computed in float32 by the plan
        ("i->ii", np.ones(3, ">f8")),  # non-native byte order: the plan's result is native
    ],
)
def test_expansions_the_lane_does_not_fit_are_planned(equation: str, operand: np.ndarray) -> None:
    lanes = plan_cache_info().lanes
    if operand.ndim == len(equation.split("->")[0]):
        assert es.einsum(equation, operand).dtype == operand.dtype.newbyteorder("=")
    else:
        with pytest.raises(es.EinsumError, match=r"rank|dimension"):
            es.einsum(equation, operand)
    assert plan_cache_info().lanes == lanes
    assert lane_for(equation)((operand,), dry=True) is None


def test_an_expansion_within_the_memory_limit_takes_the_lane_and_one_past_it_is_planned() -> None:
    a = np.ones((10, 4))  # 'ij->iij': a result of 3,200 bytes
    before = set_memory_limit(3200)
    try:
        lanes = plan_cache_info().lanes
        assert es.einsum("ij->iij", a).shape == (10, 10, 4)
        assert plan_cache_info().lanes == lanes + 1
        set_memory_limit(3199)
        with pytest.raises(es.EinsumError, match="memory limit"):
            es.einsum("ij->iij", a)
        assert plan_cache_info().lanes == lanes + 1
        assert lane_for("ij->iij")((a,), dry=True) is None
    finally:
        set_memory_limit(before)
    assert "diagonal view" in es.explain("ij->iij", a).splitlines()[1]


def test_a_diagonal_is_a_writeable_view_as_numpy_gives_it() -> None:
    a = np.arange(9.0).reshape(3, 3)
    for got in (es.einsum("ii->i", a), es.einsum("ii->i", a, **PLANNED)):
        assert np.shares_memory(got, a) and got.flags.writeable
    frozen = a.copy()
    frozen.flags.writeable = False
    for got in (es.einsum("ii->i", frozen), es.einsum("ii->i", frozen, **PLANNED)):
        assert not got.flags.writeable


@pytest.mark.parametrize(
    ("equation", "operand"),
    [
        ("ij->i", np.ones((3, 4), np.int64)),  # integers: the plan's own dtype rules
        ("ij->i", np.ones((3, 4), np.float16)),  # float16 accumulates in float32
        ("ij->i", np.ones((3, 4)).astype(">f8")),  # not native
        ("ij->i", np.ones((3, 4, 5))),  # another rank: the planned way's error
    ],
)
def test_calls_the_lane_does_not_fit_are_planned(equation: str, operand: np.ndarray) -> None:
    before = plan_cache_info().lanes
    try:
        got = es.einsum(equation, operand)
    except es.EinsumError:
        pass
    else:
        np.testing.assert_allclose(got, np.einsum(equation, operand.astype(np.float64)))
    assert plan_cache_info().lanes == before


def test_sizes_that_disagree_raise_the_planned_error() -> None:
    with pytest.raises(es.EinsumError, match="label 'i'"):
        es.einsum("ii->i", np.ones((3, 4)))


class _Subclass(np.ndarray):
    """A subclass of ndarray: the lanes take ndarray itself only."""


def test_a_record_made_while_the_limit_changed_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread may change the memory limit (forgetting every lane and record) between the
    lane's answer and the record it leaves: that record, made from the old bounds, must
    not answer the next call."""
    real = lanes._hot
    summed = "ijk->ij"

    def then_the_limit_changes(*args: Any) -> Any:
        record = real(*args)
        set_memory_limit(1 << 12)
        return record

    monkeypatch.setattr(lanes, "_hot", then_the_limit_changes)
    try:
        es.einsum(summed, np.ones((4, 4, 2)))
        monkeypatch.setattr(lanes, "_hot", real)
        with pytest.raises(es.EinsumError, match="memory limit"):
            es.einsum(summed, np.ones((64, 64, 2)))  # a result of 32 KiB
    finally:
        set_memory_limit(None)


def test_the_last_call_test_hands_what_it_does_not_fit_to_the_lane_and_the_planner() -> None:
    """After a call the lane answered, the next with the same subscripts object is tested
    by the last call's record: an empty diagonal, another rank, sizes that disagree, a
    subclass, another dtype or another operand count still get the planned way's answer
    or error, and a new memory limit is obeyed."""
    equation = "ii->i"
    es.einsum(equation, np.eye(3))
    assert es.einsum(equation, np.ones((0, 0))).shape == (0,)
    for bad in (np.ones((0, 3)), np.ones((3, 4)), np.ones((2, 2, 2))):
        with pytest.raises(es.EinsumError):
            es.einsum(equation, bad)
    for other in (np.eye(3).view(_Subclass), np.eye(3, dtype=np.int64), np.eye(3, dtype="f2")):
        es.einsum(equation, np.eye(3))
        before = plan_cache_info().lanes
        np.testing.assert_array_equal(es.einsum(equation, other), np.ones(3))  # planned
        assert plan_cache_info().lanes == before
    assert es.einsum(equation, np.eye(3, dtype=np.float32)).dtype == np.float32
    with pytest.raises((es.EinsumError, TypeError, ValueError)):
        es.einsum(equation, np.eye(3), np.eye(3))
    summed = "ijk->ij"
    es.einsum(summed, np.ones((4, 4, 2)))
    try:
        set_memory_limit(1 << 12)  # the lane's bound shrinks: the last call's too
        with pytest.raises(es.EinsumError, match="memory limit"):
            es.einsum(summed, np.ones((64, 64, 2)))  # a result of 32 KiB
    finally:
        set_memory_limit(None)
    assert es.einsum(summed, np.ones((64, 64, 2))).sum() == 2 * 4096.0


@pytest.mark.parametrize(
    ("equation", "has_lane"),
    [
        ("i->", True),
        ("ij,jk->ik", True),
        ("bhqd,bhkd->bhqk", True),
        ("i,j->ij", True),  # nothing contracted: an outer product
        ("ij,ji->ij", True),  # nothing contracted, no free label: a Hadamard product
        ("i,i->ii", False),  # a repeated output label: an expansion
        ("i,i->", True),
        ("i->ii", True),  # an expansion: zeros and a copy into their diagonal
        ("ij->iji", True),
        ("ii->iii", False),  # an expansion of a diagonal
        ("ij->ii", False),  # an expansion that sums j
        ("...ii->...i", False),  # '...'
        ("bsi,oi->bso", True),  # two left-free labels, merged by a reshape (a view)
        ("abc,cbd->ad", False),  # contracted labels in two orders: merging would copy
        ("ij,jk->i", False),  # k is summed inside the right operand
        ("iij,jk->ik", False),  # a diagonal
        ("ij,jk,kl->il", False),  # three operands: a path
    ],
)
def test_which_equations_have_a_lane(equation: str, has_lane: bool) -> None:
    assert (lane_for(equation) is not NO_LANE) == has_lane


@st.composite
def matmul_cases(draw: Any) -> tuple[str, np.ndarray, np.ndarray]:
    """An equation of the matmul form (batch labels, one or two contracted labels, up to
    two free labels on each side, in any order) and operands of any layout."""
    batch = "bc"[: draw(st.integers(0, 2))]
    rows = "il"[: draw(st.integers(0, 2))]
    inner = "jm"[: draw(st.integers(1, 2))]
    cols = "kn"[: draw(st.integers(0, 2))]
    left = "".join(draw(st.permutations(batch + rows + inner)))
    right = "".join(draw(st.permutations(batch + inner + cols)))
    out = "".join(draw(st.permutations(batch + rows + cols)))
    sizes = {x: draw(st.integers(0, 3)) for x in "bcijklmn"}
    dtype = draw(st.sampled_from(["float64", "float32", "complex128"]))
    a = np.asarray(draw(layouts(tuple(sizes[x] for x in left), dtype)))
    b = np.asarray(draw(layouts(tuple(sizes[x] for x in right), dtype)))
    return f"{left},{right}->{out}", a, b


@settings(max_examples=400, deadline=None)
@given(matmul_cases())
def test_the_matmul_lane_gives_what_the_plan_gives(
    case: tuple[str, np.ndarray, np.ndarray],
) -> None:
    equation, a, b = case
    takes = lane_for(equation)((a, b), dry=True) is not None
    before = plan_cache_info().lanes
    got = es.einsum(equation, a, b)
    assert plan_cache_info().lanes == before + takes
    planned = es.einsum(equation, a, b, **PLANNED)
    assert type(got) is type(planned)
    assert got.dtype == planned.dtype and np.shape(got) == np.shape(planned)
    np.testing.assert_allclose(got, planned, rtol=1e-5, atol=1e-5)


@st.composite
def broadcast_cases(draw: Any) -> tuple[str, np.ndarray, np.ndarray]:
    """A product that contracts nothing (shared labels, free labels on either side or none,
    in any order) and operands of any layout."""
    shared = "bc"[: draw(st.integers(0, 2))]
    left = "".join(draw(st.permutations(shared + "il"[: draw(st.integers(0, 2))])))
    right = "".join(draw(st.permutations(shared + "kn"[: draw(st.integers(0, 2))])))
    out = "".join(draw(st.permutations(sorted(set(left + right)))))
    sizes = {x: draw(st.integers(0, 3)) for x in "bcikln"}
    dtype = draw(st.sampled_from(["float64", "float32", "complex128"]))
    a = np.asarray(draw(layouts(tuple(sizes[x] for x in left), dtype)))
    b = np.asarray(draw(layouts(tuple(sizes[x] for x in right), dtype)))
    return f"{left},{right}->{out}", a, b


@settings(max_examples=300, deadline=None)
@given(broadcast_cases())
def test_the_broadcast_lane_gives_exactly_what_the_plan_gives(
    case: tuple[str, np.ndarray, np.ndarray],
) -> None:
    equation, a, b = case
    warm_planned(equation, a, b)
    before = plan_cache_info().lanes
    got = es.einsum(equation, a, b)
    assert plan_cache_info().lanes == before + (got.size > 0)  # every small product
    planned = es.einsum(equation, a, b, **PLANNED)
    assert type(got) is type(planned) and got.dtype == planned.dtype
    assert got.shape == planned.shape and got.strides == planned.strides  # (fold.write_order)
    np.testing.assert_array_equal(got, planned)  # the same kernels: bit for bit


def test_the_broadcast_lane_leaves_disagreeing_sizes_and_large_results_to_the_plan() -> None:
    before = plan_cache_info().lanes
    with pytest.raises(es.EinsumError, match="label 'j'"):
        es.einsum("ij,ij->ij", np.ones((3, 1)), np.ones((3, 4)))  # NumPy would broadcast
    with pytest.raises(es.EinsumError, match="label 'i'"):
        es.einsum("i,ij->ij", np.ones(2), np.ones((3, 4)))
    options = set_default_options(PlannerOptions(threads=2, split_min_bytes=1 << 10))
    try:
        x = np.ones(32)
        assert es.einsum("i,j->ij", x, x).sum() == 1024.0  # 8 KiB written > 1 KiB: split
        assert "split" in es.explain("i,j->ij", x, x)
    finally:
        set_default_options(options)
    limit = set_memory_limit(1000)  # the result needs 1600 B: the planned way raises
    try:
        with pytest.raises(es.EinsumError, match=r"memory|limit"):
            es.einsum("i,j->ij", np.ones(20), np.ones(10))
    finally:
        set_memory_limit(limit)
    assert plan_cache_info().lanes == before


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("equation", ["ij,ij->ij", "ij,ji->ij", "i,i->i", ",->", "ij,kl->ijkl"])
def test_the_broadcast_lane_rounds_complex_products_as_the_plan_does(
    equation: str, dtype: str
) -> None:
    # numpy.multiply allocating its own (1, 1) result takes another complex loop than
    # multiply(..., out=), and rounds differently on about half of random pairs
    rng = np.random.default_rng(7)
    shapes = [tuple([1] * len(term)) for term in equation.split("->")[0].split(",")]
    for _ in range(200):
        a, b = (
            np.asarray(rng.standard_normal(s) + 1j * rng.standard_normal(s), dtype) for s in shapes
        )
        before = plan_cache_info().lanes
        got = es.einsum(equation, a, b)
        assert plan_cache_info().lanes == before + 1
        warm_planned(equation, a, b)
        planned = es.einsum(equation, a, b, **PLANNED)
        assert type(got) is type(planned)
        np.testing.assert_array_equal(got, planned)


def test_the_broadcast_lane_leaves_strided_products_the_planner_splits_to_it() -> None:
    # a strided float64 element costs the planner a cache line to read: 262,144 products
    # of every 8th element move 2 x 16 MiB + 2 MiB, past the 32 MiB split; dense ones 6 MiB
    options = set_default_options(PlannerOptions(threads=2, split_min_bytes=32 << 20))
    try:
        base = np.arange(8 * 262_144, dtype=float)
        a, b = base[::8], base[1::8]
        assert lane_for("i,i->i")((a, b), dry=True) is None
        assert "split over 2 threads" in es.explain("i,i->i", a, b)
        before = plan_cache_info().lanes
        np.testing.assert_array_equal(es.einsum("i,i->i", a, b), a * b)
        assert plan_cache_info().lanes == before
        dense_a, dense_b = a.copy(), b.copy()
        assert lane_for("i,i->i")((dense_a, dense_b), dry=True) is not None
        assert "split" not in es.explain("i,i->i", dense_a, dense_b)
    finally:
        set_default_options(options)


@pytest.mark.parametrize("equation", ["i,j->ij", "i,jk->ijk", "ij,k->kji"])
def test_an_empty_outer_product_of_complex_long_doubles_does_not_abort(equation: str) -> None:
    # numpy.einsum itself aborts the process here (NumPy 2.4): the plan skips its loop
    left, right = equation.split("->")[0].split(",")
    for a, b in (
        (np.ones((3,) * len(left), np.clongdouble), np.ones((0,) * len(right), np.clongdouble)),
        (np.ones((0,) * len(left), np.clongdouble), np.ones((3,) * len(right), np.clongdouble)),
    ):
        for options in ({}, PLANNED):
            got = es.einsum(equation, a, b, **options)
            assert got.size == 0 and got.dtype == np.clongdouble


@pytest.mark.parametrize("layout", ["dense", "strided"])
def test_the_broadcast_lane_declines_exactly_where_the_planner_sum_reaches_the_split(
    layout: str,
) -> None:
    # the planner's sum for i,j->ij: both operands read once (a strided float64 element
    # costs 16 B: every other one) plus the 8 B items of the result
    a, b = np.ones(2 * 1024)[:: 2 if layout == "strided" else 1][:1024], np.ones(1500)
    moved = 1024 * (16 if layout == "strided" else 8) + 1500 * 8 + 1024 * 1500 * 8
    for split, takes in ((moved, False), (moved + 1, True)):
        options = set_default_options(PlannerOptions(threads=2, split_min_bytes=split))
        try:
            assert (lane_for("i,j->ij")((a, b), dry=True) is not None) is takes
            # the plan decides for its shape class's smaller stand-in: never a split here
            assert not takes or "split" not in es.explain("i,j->ij", a, b)
        finally:
            set_default_options(options)


def test_lane_max_combos_zero_turns_the_broadcast_lane_off() -> None:
    options = set_default_options(PlannerOptions(lane_max_combos=0))
    try:
        assert lane_for("i,j->ij") is NO_LANE and lane_for("ij,ij->ij") is NO_LANE
    finally:
        set_default_options(options)
    assert lane_for("i,j->ij") is not NO_LANE


def test_one_label_of_each_kind_takes_the_lane_where_matmul_takes_the_views() -> None:
    """Any layout whose matrices matmul takes as they are (transposed, gapped rows); one it
    would copy (a reversed axis) is planned, where a small plan is one fused loop."""
    a, b = np.ones((6, 4, 5)), np.ones((6, 5, 3))
    transposed = a.transpose(0, 2, 1).copy().transpose(0, 2, 1)
    for left, right, taken in ((a, b, 1), (transposed, b[:, :, :2], 1), (a, b[:, ::-1], 0)):
        before = plan_cache_info().lanes
        es.einsum("bij,bjk->bik", left, right)
        assert plan_cache_info().lanes == before + taken


def test_merged_labels_take_the_lane_only_as_views() -> None:
    x, w = np.ones((2, 17, 32)), np.ones((8, 32))
    before = plan_cache_info().lanes
    np.testing.assert_allclose(es.einsum("bsi,oi->bso", x, w), np.full((2, 17, 8), 32.0))
    assert plan_cache_info().lanes == before + 1
    es.einsum("bsi,oi->bso", np.ones((17, 2, 32)).transpose(1, 0, 2), w)  # b, s: no view
    assert plan_cache_info().lanes == before + 1


def test_the_matmul_lane_is_for_tiny_products_only() -> None:
    a, b = np.ones((256, 32)), np.ones((32, 33))  # 270,336 combinations
    lanes = plan_cache_info().lanes
    es.einsum("ij,jk->ik", a[:, :31], b[:31])  # 261,888: the lane
    assert plan_cache_info().lanes == lanes + 1
    es.einsum("ij,jk->ik", a, b)
    assert plan_cache_info().lanes == lanes + 1
    before = set_default_options(PlannerOptions(lane_max_combos=0))
    try:
        es.einsum("ij,jk->ik", a[:2, :2], b[:2, :2])
        assert plan_cache_info().lanes == lanes + 1  # 0: never
    finally:
        set_default_options(before)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (np.ones((3, 4), np.int64), np.ones((4, 5), np.int64)),  # integers
        (np.ones((3, 4), np.float32), np.ones((4, 5))),  # mixed dtypes: promoted
        (np.ones((3, 4)), np.ones((5, 5))),  # sizes disagree: the planned error
    ],
)
def test_pairs_the_lane_does_not_fit_are_planned(left: np.ndarray, right: np.ndarray) -> None:
    before = plan_cache_info().lanes
    try:
        got = es.einsum("ij,jk->ik", left, right)
    except es.EinsumError:
        pass
    else:
        np.testing.assert_allclose(got, left.astype(float) @ right.astype(float))
        assert got.dtype == np.result_type(left, right)
    assert plan_cache_info().lanes == before


def test_a_reduction_large_enough_to_split_is_planned() -> None:
    a = np.ones((16, 16, 16))
    before = set_default_options(PlannerOptions(threads=2, split_min_bytes=1 << 10))
    try:
        lanes = plan_cache_info().lanes
        assert es.einsum("ijk->ik", a)[0, 0] == 16.0  # 4096 combinations x 96 B > 1 KiB
        assert plan_cache_info().lanes == lanes
        assert "split" in es.explain("ijk->ik", a)
        assert es.einsum("ij->i", a[0])[0] == 16.0  # a row sum: a matrix-vector product
        assert plan_cache_info().lanes == lanes
        assert "matrix-vector product" in es.explain("ij->i", a[0])
    finally:
        set_default_options(before)


def test_a_reduction_past_the_bound_takes_the_lane_below_the_planners_split() -> None:
    # a split at 64 KiB: the bound lets through 682 combinations (64 KiB / 96 B); past it
    # the planner's own test of the bytes moved decides
    before = set_default_options(PlannerOptions(threads=2, split_min_bytes=1 << 16))
    try:
        dense = np.arange(4000.0).reshape(40, 100)  # 32,000 + 320 B: one loop
        strided = np.arange(64_000.0).reshape(40, 1600)[:, ::16]  # 64 B per element read
        diagonal = np.arange(8000.0).reshape(20, 20, 20)  # 'iij->j': 20 x 20 combinations
        for equation, a, lane in (
            ("ij->i", dense, True),
            ("ij->j", dense, True),
            ("ij->i", strided, False),  # 256,000 + 320 B: split (or BLAS) by the planner
            ("iij->j", diagonal, True),
        ):
            lanes = plan_cache_info().lanes
            np.testing.assert_allclose(es.einsum(equation, a), np.einsum(equation, a))
            assert plan_cache_info().lanes == lanes + lane, equation
            assert (lane_for(equation)((a,), dry=True) is not None) == lane
            report = es.explain(equation, a)
            assert lane == ("split" not in report and "matrix-vector" not in report)
    finally:
        set_default_options(before)


def test_the_lane_declines_a_reduction_at_the_split_and_sums_a_diagonals_strides() -> None:
    before = set_default_options(PlannerOptions(threads=2, split_min_bytes=800))
    try:
        # 12 rows of one complex element read (64 B each: a line) + 12 results of 16 B =
        # 960 B >= 800: split by the planner, though 12 x 8 x 16 B reads less
        strided = np.ones((12, 64), complex)[:, ::8]
        assert lane_for("ij->i")((strided,), dry=True) is None
        assert "split" in es.explain("ij->i", strided)
    finally:
        set_default_options(before)
    # moved bytes exactly at the split: the planner splits (>=), the lane declines
    dense = np.ones((64, 16))  # 8,192 B read + 512 B written
    for split, lane in ((8_704, False), (8_705, True)):
        before = set_default_options(PlannerOptions(threads=2, split_min_bytes=split))
        try:
            assert (lane_for("ij->i")((dense,), dry=True) is not None) == lane
            report = es.explain("ij->i", dense)  # at the split: a BLAS row sum
            assert ("split" not in report and "matrix-vector" not in report) == lane
        finally:
            set_default_options(before)
    # 'iij->j' of a Fortran-ordered 30 x 30 x 30: the diagonal's stride is 8 + 240 B, a
    # line per element (57,600 B + 240 B), where its first axis's alone is 8 B (7,440 B)
    diagonal = np.asfortranarray(np.ones((30, 30, 30)))
    for split, lane in ((1 << 15, False), (1 << 16, True)):
        before = set_default_options(PlannerOptions(threads=2, split_min_bytes=split))
        try:
            assert (lane_for("iij->j")((diagonal,), dry=True) is not None) == lane
        finally:
            set_default_options(before)


@st.composite
def reduction_cases(draw: Any) -> tuple[str, np.ndarray, int]:
    """A reduction (a label summed, repeats allowed), an operand of any layout, and a
    split threshold of a few kilobytes, so that the lane's bound is passed often."""
    term = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=4))
    used = list(dict.fromkeys(term))
    out = draw(st.permutations(used))[: draw(st.integers(0, len(used) - 1))]
    sizes = {x: draw(st.integers(1, 24)) for x in "abc"}
    dtype = draw(st.sampled_from(["float64", "float32", "complex128"]))
    a = np.asarray(draw(layouts(tuple(sizes[x] for x in term), dtype)))
    split = draw(st.sampled_from([256, 1024, 4096, 16384]))
    return "".join(term) + "->" + "".join(out), a, split


@settings(max_examples=300, deadline=None)
@given(reduction_cases())
def test_the_lane_takes_a_reduction_only_where_the_planner_neither_splits_nor_uses_blas(
    case: tuple[str, np.ndarray, int],
) -> None:
    equation, a, split = case
    before = set_default_options(PlannerOptions(threads=2, split_min_bytes=split))
    try:
        takes = lane_for(equation)((a,), dry=True) is not None
        lanes = plan_cache_info().lanes
        got = es.einsum(equation, a)
        assert plan_cache_info().lanes == lanes + takes
        np.testing.assert_allclose(got, es.einsum(equation, a, **PLANNED), rtol=1e-5, atol=1e-5)
        if takes:  # (the converse need not hold: a step may be too short to split)
            report = es.explain(equation, a)
            assert "split" not in report and "matrix-vector" not in report
    finally:
        set_default_options(before)


def test_a_result_over_the_memory_limit_is_planned() -> None:
    before = set_memory_limit(1000)  # the result needs 1600 B: the planned way raises
    try:
        lanes = plan_cache_info().lanes
        with pytest.raises(es.EinsumError, match=r"memory|limit"):
            es.einsum("ij->i", np.ones((200, 3)))
        assert plan_cache_info().lanes == lanes
        assert es.einsum("ii->i", np.ones((200, 200))).shape == (200,)  # a view: no bytes
        assert plan_cache_info().lanes == lanes + 1
    finally:
        set_memory_limit(before)


@pytest.mark.parametrize("equation", ["ii->i", "iij->ji", "aca->ca"])
def test_the_diagonal_of_an_empty_operand_is_planned(equation: str) -> None:
    # NumPy's loop gives 'ii->i' on 0 x 1000 a view of 1000 uninitialised elements
    shape = (0, 1000, 3)[: len(equation.split("->")[0])]
    a = np.empty(shape, np.clongdouble)
    lanes = plan_cache_info().lanes
    with pytest.raises(es.EinsumError, match="size"):
        es.einsum(equation, a)
    assert plan_cache_info().lanes == lanes
    assert lane_for(equation)((a,), dry=True) is None
    assert es.einsum(equation, np.empty((0,) * a.ndim)).shape == (0,) * (a.ndim - 1)


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij->j", [(0, 100_000)]),
        ("ij,jk->ik", [(400, 0), (0, 400)]),
        ("bij,bjk->bik", [(2, 300, 0), (2, 0, 300)]),
    ],
)
def test_an_empty_operand_with_a_result_over_the_memory_limit_is_planned(
    equation: str, shapes: list[tuple[int, ...]]
) -> None:
    before = set_memory_limit(1000)  # the result needs 800,000 B or more, the operands none
    try:
        lanes = plan_cache_info().lanes
        operands = tuple(np.empty(shape) for shape in shapes)
        with pytest.raises(es.EinsumError, match="memory limit"):
            es.einsum(equation, *operands)
        assert plan_cache_info().lanes == lanes
        assert lane_for(equation)(operands, dry=True) is None  # explain's answer
    finally:
        set_memory_limit(before)


def test_a_reduction_over_the_bound_in_elements_takes_the_lane_by_its_combinations() -> None:
    # 'ii->' on 600 x 600: 360,000 elements pass the bound of 10,922 combinations (1 MiB /
    # 96 B), the 600 combinations of the trace do not
    before = set_default_options(PlannerOptions(threads=2, split_min_bytes=1 << 20))
    try:
        lanes = plan_cache_info().lanes
        a = np.arange(360_000.0).reshape(600, 600)
        assert es.einsum("ii->", a) == np.trace(a)
        assert plan_cache_info().lanes == lanes + 1
        # 360,000 combinations moving 2.9 MB: the lane declines (its test is a sufficient
        # one: the planner runs one loop, a full reduction never being split)
        assert es.einsum("ij->", a) == a.sum()
        assert plan_cache_info().lanes == lanes + 1
    finally:
        set_default_options(before)


def test_clearing_the_caches_restarts_the_count() -> None:
    es.einsum("ii->", np.eye(2))
    assert plan_cache_info().lanes >= 1
    clear_plan_cache()
    assert plan_cache_info().lanes == 0


@pytest.mark.parametrize(
    ("equation", "good", "bad"),
    [
        ("ij,jk->ik", [(4, 4), (4, 4)], [(4, 5), (4, 4)]),  # (4, 5) rounds to (4, 4)
        ("bij,bjk->bik", [(2, 6, 4), (2, 4, 6)], [(2, 6, 4), (2, 5, 6)]),
        ("...i,...i->...", [(4, 5), (4, 5)], [(5, 5), (4, 5)]),
    ],
)
def test_a_shape_class_never_answers_sizes_that_disagree(
    equation: str, good: list[tuple[int, ...]], bad: list[tuple[int, ...]]
) -> None:
    """Shapes of one class (half-octave sizes) may not fit the equation: the planned way
    binds them and raises, never NumPy's error or a wrong result."""
    clear_plan_cache()
    es.einsum(equation, *(np.ones(s) for s in good))
    with pytest.raises(es.EinsumError, match="size"):
        es.einsum(equation, *(np.ones(s) for s in bad))


def test_a_lane_forgets_the_limit_and_options_it_was_compiled_with() -> None:
    a = np.ones((200, 3))
    es.einsum("ij->i", a)  # compiled under the default limit
    before = set_memory_limit(1000)
    try:
        with pytest.raises(es.EinsumError, match=r"memory|limit"):
            es.einsum("ij->i", a)  # 1600 B of result: planned, and refused
    finally:
        set_memory_limit(before)
    es.einsum("ij,jk->ik", np.ones((4, 4)), np.ones((4, 4)))
    options = set_default_options(PlannerOptions(lane_max_combos=0))
    try:
        lanes = plan_cache_info().lanes
        es.einsum("ij,jk->ik", np.ones((4, 4)), np.ones((4, 4)))
        assert plan_cache_info().lanes == lanes
    finally:
        set_default_options(options)


@pytest.mark.parametrize("equation", ["ii->i", "ii->", "ij->i", "bii->b", "ijk->kji", "iji->j"])
@pytest.mark.parametrize(
    "shape_dtype",
    [
        ((4, 4), np.float64),
        ((3, 3, 3), np.float32),
        ((4, 5), np.float64),  # sizes of one label disagree (for a repeated label)
        ((2, 3, 3), np.complex128),
        ((5,), np.float64),  # a rank too low
        ((3, 3), np.int64),  # not a lane dtype
        ((1024, 1024), np.float64),  # large: a reduction the planner may split
    ],
)
def test_the_public_einsum_runs_a_one_operand_lane_as_the_lane_itself_does(
    equation: str, shape_dtype: tuple[tuple[int, ...], Any]
) -> None:
    # public_einsum writes UnaryLane.__call__ out inline: both must answer the same calls
    shape, dtype = shape_dtype
    a = np.arange(math.prod(shape), dtype=dtype).reshape(shape)
    lane = lane_for(equation)
    before = plan_cache_info().lanes
    direct = lane((a,))
    answered = plan_cache_info().lanes - before
    assert answered == (direct is not None)
    before = plan_cache_info().lanes
    try:
        public = es.einsum(equation, a)
    except es.EinsumError:
        public = None
    assert plan_cache_info().lanes - before == answered
    if direct is not None:
        np.testing.assert_array_equal(public, direct)


def test_every_call_a_hot_record_answers_is_counted_across_replacements() -> None:
    """Each public einsum counts its one-operand answers in its hot record: alternating
    equations replace the record on two of every three calls here, and the replaced
    records' counts are kept (folded once no call holds them) so the count is exact and
    the retired list stays small."""
    clear_plan_cache()
    diagonal, trace, a = "ii->i", "ii->", np.eye(3)
    for _ in range(50):
        es.einsum(diagonal, a)
        es.einsum(diagonal, a)  # the record's own answer
        es.einsum(trace, a)
    assert plan_cache_info().lanes == 150
    assert len(lanes._RETIRED) <= 2


def test_a_replaced_record_a_call_still_holds_keeps_the_answer_it_counts_after() -> None:
    """A call that read the hot record before another thread replaced it counts its answer
    in the old record: that record's count is folded only once no call holds it."""
    clear_plan_cache()
    es.einsum("ii->", np.eye(2))
    held = lanes._HOT_RECORDS[0]()  # what a call mid-way holds (as `last`)
    es.einsum("ii->i", np.eye(2))  # replaces the record: `held` is retired, still held
    assert any(record is held for record in lanes._RETIRED)
    held[8] += 1  # the held call's answer, counted after the replacement
    assert plan_cache_info().lanes == 3
    del held
    es.einsum("ij->j", np.eye(2))  # another replacement folds the unheld records
    assert plan_cache_info().lanes == 4 and len(lanes._RETIRED) <= 1


def test_einsum_called_while_the_lanes_lock_is_held_does_not_hang() -> None:
    """The GC's finalizers and signal handlers run inside the lock's regions, in the thread
    that holds it, and may call einsum, which replaces hot records and counts under the
    same lock: it must be reentrant."""
    results: list[int] = []

    def inside_the_lock() -> None:
        with lanes._HOT_LOCK:
            for equation in ("ii->", "ii->i", "ii->", "ij->j"):
                es.einsum(equation, np.eye(3))
            set_memory_limit(None)  # forgets every lane and record, under the lock too
            results.append(plan_cache_info().lanes)

    clear_plan_cache()
    thread = threading.Thread(target=inside_the_lock, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "einsum hung on the lanes' lock"
    assert results == [4]


def test_errors_kept_with_their_tracebacks_do_not_keep_replaced_records() -> None:
    """A call the hot record does not answer drops the record before going on: an error's
    traceback keeps the frame, and a record it held would stay retired, walked by every
    replacement."""
    clear_plan_cache()
    kept = []
    for _ in range(50):
        es.einsum("ii->", np.eye(2))
        with pytest.raises(es.EinsumError) as error:
            es.einsum("ii->", np.ones((2, 3)))  # sizes that disagree: the planned error
        kept.append(error.value)
        es.einsum("ii->i", np.eye(2))
    assert len(lanes._RETIRED) <= 2


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("bij,bjk->bik", [(3, 10, 40), (3, 40, 5)]),
        ("bij,bkj->bik", [(3, 10, 40), (3, 5, 40)]),
        ("bhqd,bhkd->bhqk", [(1, 2, 6, 8), (1, 2, 5, 8)]),
        ("ij,kj->ik", [(10, 40), (5, 40)]),
    ],
)
@pytest.mark.parametrize("layout", ["F", "reversed", "every other"])
def test_the_matmul_lane_gives_the_plan_s_bits_for_any_layout(
    equation: str, shapes: list[tuple[int, ...]], layout: str
) -> None:
    """Where matmul would copy an operand the small plan is one fused loop: the lane leaves
    such calls to it (a review: F-ordered operands gave other bits and another layout with
    and without a keyword that bypasses the lane)."""
    rng = np.random.default_rng(3)
    ops = []
    for shape in shapes:
        x = rng.standard_normal(shape)
        if layout == "F":
            x = np.asfortranarray(x)
        elif layout == "reversed":
            x = np.ascontiguousarray(x.T).T
        else:
            x = rng.standard_normal((*shape[:-1], 2 * shape[-1]))[..., ::2]
        ops.append(x)
    warm_planned(equation, *ops)
    lane = es.einsum(equation, *ops)
    planned = es.einsum(equation, *ops, memory_limit=10**12)
    assert np.array_equal(lane, planned)
    report = es.explain(equation, *ops)
    if "lane:" not in report:
        assert lane.strides == planned.strides
