"""The first call of a shape class runs its path directly, without planning the class
(direct.first_call_entry, generic.Entry.direct_first): NumPy's result, the class planned
at its next look, the plan from the shape's second call on, under the bounds the memory
guard checked; and the calls it leaves to the planner."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_shape_generic import _layout, _operand

import einstride as es
from einstride.engine.backends.numpy import direct, generic
from einstride.engine.backends.numpy.cache import clear_plan_cache, facts_of, hot_entry
from einstride.engine.backends.numpy.direct import LOOP_ELEMENTS
from einstride.engine.backends.numpy.generic import PROMOTE_AT, Entry
from einstride.engine.backends.numpy.peak import plan_peak
from einstride.engine.backends.numpy.plan import build_plan, class_decisions
from einstride.engine.spec.equation import parse_equation


@st.composite
def first_calls(draw: Any) -> tuple[str, list[np.ndarray]]:
    """Two to seven operands of distinct labels (sizes 0-6) in one float dtype, in the
    layouts the shape-class test draws (permuted, stepped; broadcast now and then)."""
    n = draw(st.integers(2, 7))
    terms = ["".join(draw(st.lists(st.sampled_from("abcdefg"), min_size=0, max_size=4,
                                   unique=True))) for _ in range(n)]  # fmt: skip
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    sizes = {x: draw(st.integers(0, 6)) for x in used}
    dtype = draw(st.sampled_from(["float64", "float32", "complex128"]))
    layouts = [draw(_layout(len(term))) for term in terms]
    ops = [_operand(t, sizes, dtype, how) for t, how in zip(terms, layouts)]
    return ",".join(terms) + "->" + output, ops


def _counts() -> tuple[int, int]:
    info = es.plan_cache_info()
    return info.direct, info.generic


@settings(max_examples=200, deadline=None)
@given(first_calls())
def test_a_first_call_gives_numpys_result_and_then_the_plan_made_from_scratch(
    case: tuple[str, list[np.ndarray]],
) -> None:
    equation, ops = case
    clear_plan_cache()
    expected = np.einsum(equation, *ops)
    tolerance = 1e-4 if ops[0].dtype == np.float32 else 1e-12
    before = _counts()
    first = es.einsum(equation, *ops)
    ran_directly = _counts()[0] == before[0] + 1
    event(f"ran directly: {ran_directly}")
    if ran_directly:  # (else a lane, a broadcast operand, or too much work: planned)
        assert direct.first_call_program(equation, facts_of(ops), None, "auto") is not None
    np.testing.assert_allclose(first, expected, rtol=tolerance, atol=tolerance)
    tiny = math.prod(parse_equation(equation, *[op.shape for op in ops]).sizes) <= LOOP_ELEMENTS
    for _ in range(PROMOTE_AT - 1 if ran_directly and tiny else 1):  # (a tiny loop: late)
        second = es.einsum(equation, *ops)  # the plan's, as the plan from scratch makes it
        np.testing.assert_allclose(second, expected, rtol=tolerance, atol=tolerance)
    if not ran_directly:
        return
    entry = hot_entry(equation, facts_of(ops), "auto")
    assert entry.planned  # by the second call (a tiny problem's: the PROMOTE_AT-th)
    spec = parse_equation(equation, *[op.shape for op in ops])
    fresh = build_plan(spec, [op.dtype for op in ops], [op.strides for op in ops])
    assert entry.plan == fresh
    assert (entry.largest, entry.peak) == (fresh.largest_bytes, plan_peak(fresh))
    assert np.array_equal(second, es.einsum(equation, *ops, memory_limit=10**12))


def test_a_class_runs_directly_twice_then_is_planned_then_reused() -> None:
    """The class's first DIRECT_LOOKS calls run directly; its next look (another shape)
    plans it; later shapes run its size-free program; a shape's second call runs its plan."""
    clear_plan_cache()
    chain = [np.ones((37, 20)), np.ones((20, 30)), np.ones((30, 5))]
    counts = []
    for rows in (36, 37, 38, 39):  # one half-octave class
        chain[0] = np.full((rows, 20), 0.5)
        start = _counts()
        np.testing.assert_allclose(es.einsum("ij,jk,kl->il", *chain), 0.5 * 20 * 30)
        counts.append(tuple(b - a for a, b in zip(start, _counts())))
    assert generic.DIRECT_LOOKS == 2
    assert counts == [(1, 0), (1, 0), (0, 0), (0, 1)]
    chain[0] = np.full((37, 20), 0.5)
    assert not hot_entry("ij,jk,kl->il", facts_of(chain), "auto").planned
    np.testing.assert_allclose(es.einsum("ij,jk,kl->il", *chain), 0.5 * 20 * 30)
    assert hot_entry("ij,jk,kl->il", facts_of(chain), "auto").planned  # its second call


def test_more_work_than_the_bound_is_planned_at_once() -> None:
    """Past FIRST_CALL_WORK index combinations a plan may save more than planning costs."""
    clear_plan_cache()
    n = 128  # 3 x 128**3 combinations: over 2**20
    ops = [np.ones((n, n))] * 3
    facts = facts_of(ops)
    assert direct.first_call_program("ij,jk,kl->il", facts, None, "auto") is None
    start = _counts()
    np.testing.assert_allclose(es.einsum("ij,jk,kl->il", *ops), n * n)
    assert _counts()[0] == start[0]
    small = [np.ones((32, 32))] * 3
    assert direct.first_call_program("ij,jk,kl->il", facts_of(small), None, "auto") is not None


def test_a_finder_asked_at_the_real_sizes_runs_each_new_shape_directly() -> None:
    """optimize="greedy" (or True) plans every shape (its path is the real sizes'): each
    new shape's first call runs directly; optimize=False (NumPy's one loop) never does."""
    clear_plan_cache()
    for rows in (37, 38):
        chain = [np.full((rows, 20), 0.5), np.ones((20, 30)), np.ones((30, 5))]
        start = _counts()
        np.testing.assert_allclose(es.einsum("ij,jk,kl->il", *chain, optimize="greedy"), 300)
        assert _counts()[0] == start[0] + 1
        start = _counts()
        np.testing.assert_allclose(es.einsum("ij,jk,kl->il", *chain, optimize=False), 300)
        assert _counts()[0] == start[0]
        assert direct.first_call_program("ij,jk,kl->il", facts_of(chain), None, False) is None


def test_the_call_that_plans_runs_directly_if_the_plans_bytes_are_over_the_checked() -> None:
    """The memory guard checked the entry's bounds before the call: where the plan's are
    larger, the call that builds the plan still runs the direct program (the next call
    checks the plan's)."""
    ran: list[str] = []
    entry = Entry.direct_first(lambda ops, out: ran.append("direct"), 8, 8, list)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Entry, "_bounds", lambda self: (64, 64))
        patch.setattr("einstride.engine.backends.numpy.generic.compile_plan",
                      lambda plan: lambda ops, out: ran.append("plan"))  # fmt: skip
        for _ in range(3):
            entry.run((), None)
    assert ran == ["direct", "direct", "plan"]
    assert (entry.largest, entry.peak) == (64, 64)


def test_under_a_memory_limit_below_the_direct_peak_the_plan_runs() -> None:
    """The direct way's bytes are over the limit, the plan's within it: the entry settles
    on its plan at once (a review: every call went the limited way)."""
    clear_plan_cache()
    ops = [np.ones((40, 30)), np.ones((30, 50)), np.ones((50, 6))]
    found = direct.first_call_program("ab,bc,cd->ad", facts_of(ops), None, "auto")
    assert found is not None
    limit = found[2] - 8  # under the direct way's peak
    for _ in range(2):
        start = _counts()
        got = es.einsum("ab,bc,cd->ad", *ops, memory_limit=limit)
        np.testing.assert_allclose(got, np.einsum("ab,bc,cd->ad", *ops))
        assert _counts()[0] == start[0]  # the direct way did not run
    entry = hot_entry("ab,bc,cd->ad", facts_of(ops), "auto")
    assert entry.planned and entry.peak <= limit


@pytest.mark.parametrize("n", [8, 12])  # a tiny problem (its loop, six calls) and not
def test_under_raising_errors_every_call_raises_whatever_came_before(n: int) -> None:
    """An entry made by a call under the default errstate ran its direct way (NumPy's
    loop, which raises no floating-point error) for later calls under
    ``np.errstate(over="raise")`` too: they returned inf (a review); every one raises."""
    big = np.full((n, n), 1e200)
    ops = [big, big.copy(), np.ones((n, n))]
    clear_plan_cache()
    with np.errstate(over="ignore", invalid="ignore"):
        es.einsum("ab,bc,cd->ad", *ops)  # the entry, made where nothing raises
    for _ in range(PROMOTE_AT + 1):
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            es.einsum("ab,bc,cd->ad", *ops)
    out = np.zeros((n, n))
    clear_plan_cache()
    with np.errstate(over="ignore", invalid="ignore"):
        es.einsum("ab,bc,cd->ad", *ops)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        es.einsum("ab,bc,cd->ad", *ops, out=out)
    assert not out.any()  # untouched


def test_under_raising_errors_the_plan_keeps_the_global_memory_limit() -> None:
    """Under ``np.errstate(over="raise")`` the call that settles an entry made by an
    ordinary call runs the plan, not the direct way: the hot path had checked the global
    limit against the direct way's bytes, and the plan ran past it once, then the calls
    raised (a review); every call now goes the limited way, as from a fresh cache."""
    ops = [np.ones((3, 4, 32)), np.ones((32, 48))]
    previous = es.memory.memory_limit()
    outcomes = []
    try:
        for made_first in (False, True):
            clear_plan_cache()
            es.memory.set_memory_limit(96)  # the result's bytes
            if made_first:
                es.einsum("abc,cd->ab", *ops)
            for _ in range(3):
                with np.errstate(over="raise"), pytest.raises(es.EinsumError) as caught:
                    es.einsum("abc,cd->ab", *ops)
                outcomes.append(str(caught.value).split(":")[0])
    finally:
        es.memory.set_memory_limit(previous)
    assert len(set(outcomes)) == 1, outcomes


@pytest.mark.parametrize("global_limit", [False, True])
def test_a_call_that_fits_its_memory_limit_directly_fits_at_every_call(
    global_limit: bool,
) -> None:
    """Under a limit of the result's bytes the first calls ran directly (the direct way's
    peak: the result), then the plan (its accumulators too) was over it and the same call
    raised EinsumError (a review); the direct way keeps running where it fits."""
    ops = [np.ones(52, np.float32), np.ones((34, 53), np.float32)]
    limit = 4 * 52  # the result's bytes
    want = np.einsum("b,ac->b", *ops)
    clear_plan_cache()
    previous = es.memory.memory_limit()
    if global_limit:
        es.memory.set_memory_limit(limit)
    try:
        for _ in range(PROMOTE_AT + 2):
            keywords = {} if global_limit else {"memory_limit": limit}
            np.testing.assert_array_equal(es.einsum("b,ac->b", *ops, **keywords), want)
    finally:
        es.memory.set_memory_limit(previous)
    entry = hot_entry("b,ac->b", facts_of(ops), "auto")
    assert entry.planned and entry.peak > limit  # (what made the calls fail)


def test_the_direct_count_counts_runs_not_entries() -> None:
    """order= lays the result out through the plan: no direct run to count (a review)."""
    clear_plan_cache()
    ops = [np.ones((40, 30)), np.ones((30, 50)), np.ones((50, 6))]
    counts = []
    for rows, order in ((40, "F"), (41, "K"), (42, "K")):  # one class's three looks
        start = _counts()
        es.einsum("ab,bc,cd->ad", *[np.ones((rows, 30)), *ops[1:]], order=order)
        counts.append(_counts()[0] - start[0])
    assert counts == [0, 1, 0]  # order= makes the entry and plans it: a look, no direct run
    clear_plan_cache()
    start = _counts()
    es.einsum("ab,bc,cd->ad", *ops)
    assert _counts()[0] == start[0] + 1


def test_explain_says_a_class_s_first_call_runs_directly() -> None:
    ops = [np.ones((40, 30)), np.ones((30, 50)), np.ones((50, 6))]
    note = f"  {direct.FIRST_CALL_NOTE}:"
    for report in (es.explain("ab,bc,cd->ad", *ops),
                   es.explain("ab,bc,cd->ad", *[a.shape for a in ops])):  # fmt: skip
        assert report.splitlines()[1] == note
        assert report.splitlines()[2].startswith("    the direct way: largest allocation")
    ints = [a.astype(np.int64) for a in ops]
    for report in (
        es.explain("ab,bc,cd->ad", *ops, optimize=False),
        es.explain("ab,bc,cd->ad", *ints),
        es.explain("ab,bc,cd->ad", *ops, memory_limit=1000),  # over the direct way's peak
        es.explain("ab,bc,cd->ad", *[np.ones((128, 128))] * 3),  # too much work
    ):
        assert direct.FIRST_CALL_NOTE not in report


def test_a_tiny_problem_s_first_call_is_one_loop_without_a_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At most LOOP_ELEMENTS index combinations in all: one numpy.einsum loop over every
    operand, no path searched (a rank-0 result a NumPy scalar, as the plan's)."""
    searched: list[int] = []
    real = direct.plan_path
    monkeypatch.setattr(direct, "plan_path", lambda *a: searched.append(1) or real(*a))
    rng = np.random.default_rng(1)
    ops = [rng.standard_normal(s) for s in [(4, 5), (5, 6), (6, 4)]]  # 480 combinations
    found = direct.first_call_program("ab,bc,ca->", facts_of(ops), None, "auto")
    assert found is not None and not searched
    value = found[0](ops, None)
    assert type(value) is np.float64
    np.testing.assert_allclose(value, np.einsum("ab,bc,ca->", *ops))
    assert found[1] == found[2] == 8  # the result's bytes
    big = [rng.standard_normal(s) for s in [(16, 16), (16, 16), (16, 17)]]  # 69,632
    assert direct.first_call_program("ab,bc,cd->ad", facts_of(big), None, "auto") is not None
    assert searched


def test_a_tiny_problem_s_class_is_not_planned_by_its_new_shapes() -> None:
    """At most LOOP_ELEMENTS combinations: each new shape of a class not planned yet runs
    as one loop (planning the class costs 0.4-1 ms, the loop a few µs); a repeated shape
    builds its plan at its PROMOTE_AT-th call (the loop is what that plan fuses to)."""
    clear_plan_cache()
    rng = np.random.default_rng(2)
    equation = "fab,baf->b"
    shapes = [(12, 4, 5), (13, 4, 5), (14, 5, 4), (15, 5, 5)]  # one class: 960-1,500 combos
    misses = class_decisions.cache_info().misses
    for f, a, b in shapes:
        ops = [rng.standard_normal((f, a, b)), rng.standard_normal((b, a, f))]
        start = _counts()
        np.testing.assert_allclose(es.einsum(equation, *ops), np.einsum(equation, *ops))
        assert tuple(y - x for x, y in zip(start, _counts())) == (1, 0)
    assert class_decisions.cache_info().misses == misses  # the class never planned
    for _ in range(PROMOTE_AT - 2):  # a repeated shape runs its loop while it costs less
        np.testing.assert_allclose(es.einsum(equation, *ops), np.einsum(equation, *ops))
    assert not hot_entry(equation, facts_of(ops), "auto").planned
    np.testing.assert_allclose(es.einsum(equation, *ops), np.einsum(equation, *ops))
    assert hot_entry(equation, facts_of(ops), "auto").planned  # its PROMOTE_AT-th call


@pytest.mark.parametrize(
    ("dtype", "rows", "one_loop"),
    [("float64", 28, True), ("float64", 29, False), ("float32", 56, True),
     ("float32", 57, False), ("complex128", 14, True), ("complex128", 15, False)],
)  # fmt: skip
def test_a_small_first_call_is_one_loop_by_its_bytes(
    dtype: str, rows: int, one_loop: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class's first call loops once where combinations x operands**2 x item size <=
    FIRST_LOOP_BYTES (three float64 operands: 29,127 combinations; here rows x 1,024); its
    next look plans the class, its work being over LOOP_ELEMENTS."""
    searched: list[int] = []
    real = direct.plan_path
    monkeypatch.setattr(direct, "plan_path", lambda *a: searched.append(1) or real(*a))
    clear_plan_cache()
    rng = np.random.default_rng(3)
    ops = [rng.standard_normal(s).astype(dtype) for s in [(rows, 8), (8, 16), (16, 8)]]
    assert (rows * 1024 * 3**2 * ops[0].itemsize <= direct.FIRST_LOOP_BYTES) == one_loop
    start = _counts()
    tolerance = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(es.einsum("ab,bc,cd->ad", *ops),
                               np.einsum("ab,bc,cd->ad", *ops), rtol=tolerance)  # fmt: skip
    assert _counts()[0] == start[0] + 1
    assert bool(searched) != one_loop
    second = [rng.standard_normal((rows - 1, 8)).astype(dtype), *ops[1:]]  # the same class
    es.einsum("ab,bc,cd->ad", *second)  # its second look: directly again
    other = [rng.standard_normal((rows - 2, 8)).astype(dtype), *ops[1:]]
    start, misses = _counts(), class_decisions.cache_info().misses
    es.einsum("ab,bc,cd->ad", *other)
    assert _counts() == start  # the look that planned the class (neither count)
    assert class_decisions.cache_info().misses == misses + 1


def test_the_first_call_loop_bound_is_never_under_loop_elements() -> None:
    """Six complex128 operands: 2**21 / (16 x 36) = 3,640 combinations, under the 4,096 a
    tiny problem always loops at (LOOP_ELEMENTS)."""
    shapes = [(4, 4)] * 6
    spec = parse_equation("ab,bc,cd,de,ef,fa->", *shapes)  # 4,096 combinations
    assert direct.FIRST_LOOP_BYTES // (16 * 6**2) < 4096 == direct.LOOP_ELEMENTS
    assert direct._whole_loop(spec, 16) is not None
    assert direct._whole_loop(parse_equation("ab,bc,cd,de,ef,fa->", *[(5, 5)] * 6), 16) is None


def test_the_first_direct_run_is_counted_whatever_threads_do() -> None:
    """A tiny problem's entry runs directly PROMOTE_AT - 1 times; its first run calls
    ``ran`` (the direct count) though other threads run it meanwhile (a review: a count
    read after the run missed 51 of 300 entries)."""
    import threading
    import time

    missed = 0
    for _ in range(50):  # (each run sleeps: the threads interleave)
        counted: list[int] = []
        entry = Entry.direct_first(
            lambda ops, out: time.sleep(1e-4), 0, 0, list,  # type: ignore[arg-type]
            lambda counted=counted: counted.append(1),
            PROMOTE_AT - 1,
        )  # fmt: skip
        barrier = threading.Barrier(PROMOTE_AT - 1)

        def call(entry: Entry = entry, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            entry.run((), None)  # (every call one of the direct runs)

        threads = [threading.Thread(target=call) for _ in range(PROMOTE_AT - 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        missed += not counted
    assert missed == 0


# -- explain's word on the first calls, and einsum_path's path (a review) ----------------


def _direct_runs(equation: str, calls: list[list[np.ndarray]]) -> list[int]:
    runs = []
    for ops in calls:
        before = es.plan_cache_info().direct
        es.einsum(equation, *ops)
        runs.append(es.plan_cache_info().direct - before)
    return runs


def test_the_first_call_note_says_what_a_call_after_explain_runs() -> None:
    # the note said "explain's own look counts" and the explained shapes' next call ran
    # the plan: it says so now (another shape of the class, the class's second call, runs
    # directly)
    equation = "ab,ef,bef->f"
    first = [np.ones((5, 40)), np.ones((40, 16)), np.ones((40, 40, 16))]
    other = [np.ones((5, 41)), np.ones((41, 16)), np.ones((41, 41, 16))]
    clear_plan_cache()
    report = es.explain(equation, *first)
    assert "An explain counts as one of those calls" in report
    assert "a call of these shapes after it runs the plan below" in report
    assert _direct_runs(equation, [first, other, first]) == [0, 1, 0]
    clear_plan_cache()
    assert _direct_runs(equation, [first, other, first]) == [1, 1, 0]  # (no explain)


@pytest.mark.parametrize(
    ("equation", "operands"),
    [
        ("ij,->ij", [np.ones((3, 4)), np.float64(2.0)]),
        ("i,i->", [np.ones(3), [1.0, 2.0, 3.0]]),
        ("ij,->ij", [es.tensor(np.ones((3, 4))), np.float64(2.0)]),
    ],
)
def test_operands_einsum_converts_get_the_first_call_note(equation: str, operands: Any) -> None:
    # (only plain ndarrays got it, where einsum ran the others' first call directly too)
    clear_plan_cache()
    report = es.explain(equation, *operands)
    clear_plan_cache()
    runs = _direct_runs(equation, [operands])
    assert ("first call:" in report) == (runs == [1]), (report, runs)
    assert runs == [1]


class _CountedConversions:
    """An array-like that counts how often it is converted."""

    calls = 0

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        _CountedConversions.calls += 1
        return np.arange(3.0)


@pytest.mark.parametrize("others", [[], [[1.0, 2.0, 3.0]], [np.ones(3)]])
def test_explain_converts_an_operand_once_as_einsum_does(others: list[Any]) -> None:
    # (its report, its lane and its first-call note each converted it: a list of 10**6
    # floats took 0.17 s to explain, 0.05 s to contract)
    equation = ",".join("i" * (1 + len(others))) + "->"
    for call in (es.einsum, es.explain):
        _CountedConversions.calls = 0
        call(equation, _CountedConversions(), *others)
        assert _CountedConversions.calls == 1, call


def test_einsum_paths_list_is_the_path_of_its_report_for_a_broadcast_operand() -> None:
    # a broadcast operand's plan spreads its result, on another path: the list was the
    # one of C-contiguous operands, the report (explain's) of the operands' own layouts
    a, b, d = np.ones((2, 16, 24)), np.ones(16), np.array(3.0)
    c = np.broadcast_to(np.arange(2.0), (16, 64, 2))
    for equation, ops in [
        ("fea,e,cdf,->ca", [a, b, c, d]),
        ("dd,e,b,a->bae", [np.ones((3, 3)), np.broadcast_to(1.0, (5,)), np.ones(4), np.ones(6)]),
    ]:
        path, report = es.einsum_path(equation, *ops)
        line = next(x for x in report.splitlines() if x.startswith("  path: "))
        assert line == f"  path: {path[1:]}", (line, path)
        assert es.contract_path(equation, *ops)[0] == path[1:]
        np.testing.assert_allclose(
            es.einsum(equation, *ops, optimize=path), np.einsum(equation, *ops)
        )


def test_einsum_paths_list_is_the_path_of_its_report_within_the_memory_limit() -> None:
    # (a review: under a limit the report showed the limited plan, the list the unlimited)
    from einstride import memory

    ops = [np.ones((5, 5, 4)), np.ones((4, 5)), np.ones((5, 4)), np.ones(())]
    previous = memory.set_memory_limit(300)
    try:
        path, report = es.einsum_path("gab,cf,fb,->bg", *ops, optimize="optimal")
    finally:
        memory.set_memory_limit(previous)
    line = next(x for x in report.splitlines() if x.startswith("  path: "))
    assert line == f"  path: {path[1:]}", (line, path)
