"""The first call of a tensor network runs its path directly (engine/backends/numpy/direct.py):
the same result as NumPy and as the plan built when the shapes repeat, peak bytes that bound
what the direct run allocates, and the calls it leaves to the planner."""

from __future__ import annotations

import functools
import tracemalloc
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from opt_einsum.testing import rand_equation

import einstride as es
from einstride.engine.backends.numpy import direct, generic
from einstride.engine.backends.numpy.cache import facts_of, hot_entry
from einstride.engine.backends.numpy.direct import (
    COPY_CHOICE,
    LOOP_ELEMENTS,
    LOOPED_MIN_ELEMENTS,
    LOOPED_MIN_RUN,
    LoopProduct,
    Product,
    direct_program,
    products,
)
from einstride.engine.backends.numpy.generic import RACE_RUNS, Entry
from einstride.engine.backends.numpy.peak import plan_peak
from einstride.engine.call import equation_of
from einstride.engine.spec.equation import bind
from einstride.engine.spec.walk import plan_path


def _facts(ops: list[Any]) -> tuple[Any, ...]:
    return tuple(x for a in ops for x in (a.shape, a.strides, a.dtype))


def _network(seed: int, n: int, reg: int, dtype: str) -> tuple[str, list[Any]]:
    eq, shapes, _ = rand_equation(n, reg, n_out=seed % 3, d_min=1, d_max=4, seed=seed,
                                  return_size_dict=True)  # fmt: skip
    rng = np.random.default_rng(seed)
    ops = [rng.random(s).astype(dtype) for s in shapes]
    if dtype.startswith("complex"):
        ops = [a + 1j * rng.random(a.shape).astype(dtype) for a in ops]
    return eq, ops


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(8, 14),
    reg=st.integers(2, 4),
    dtype=st.sampled_from(["float64", "float32", "complex128"]),
    loop_elements=st.sampled_from([0, 64, LOOP_ELEMENTS]),
    copy_choice=st.sampled_from([0, COPY_CHOICE]),
    looped=st.booleans(),
)
def test_a_first_call_runs_the_path_directly_and_agrees(
    seed: int, n: int, reg: int, dtype: str, loop_elements: int, copy_choice: int, looped: bool
) -> None:
    eq, ops = _network(seed, n, reg, dtype)
    with (
        mock.patch.object(direct, "LOOP_ELEMENTS", loop_elements),  # 0: no loop products
        mock.patch.object(direct, "COPY_CHOICE", copy_choice),  # 0: every copy's order chosen
        # True: every operand of that layout is a looped view, however small
        mock.patch.object(direct, "LOOPED_MIN_ELEMENTS", 0 if looped else LOOPED_MIN_ELEMENTS),
        mock.patch.object(direct, "LOOPED_MIN_RUN", 0 if looped else LOOPED_MIN_RUN),
    ):
        found = direct_program(eq, _facts(ops), None, "auto")
    assert found is not None
    run, _, _, path = found
    # the reference in double precision: NumPy's float32 loop can lose 17% on such a sum
    wide = [op.astype(np.complex128 if op.dtype.kind == "c" else np.float64) for op in ops]
    expected = np.einsum(eq, *wide, optimize="greedy").astype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    answer = run(ops, None)
    np.testing.assert_allclose(answer, expected, rtol=tol, atol=tol)
    assert np.shape(answer) == np.shape(expected) and np.result_type(answer) == np.dtype(dtype)
    if np.ndim(answer):
        assert answer.flags.c_contiguous
    planned = es.einsum(eq, *ops, optimize=path, memory_limit=2**40)  # the planner's run
    np.testing.assert_allclose(answer, planned, rtol=tol, atol=tol)


def test_when_both_operands_are_copied_their_orders_are_the_cheaper_copies() -> None:
    # the last large product of random-20 (degree 4): both operands copied; written with the
    # shared labels last, the larger one's copy got 3-element inner loops (7.3 ms), with its
    # free labels last the coalesced run of 'Fup' (3.4 ms; 1.04M elements)
    eq = "javGIFupM,wEajpGuFy->vIMwEy"
    sizes = dict(zip("javGIFupMwEy", (3, 2, 5, 8, 5, 6, 4, 6, 6, 5, 2, 4)))
    terms = eq.split("->")[0].split(",")
    rng = np.random.default_rng(0)
    ops = [rng.random(tuple(sizes[c] for c in t)) for t in terms]
    spec = bind(equation_of(eq), [a.shape for a in ops])
    steps, *_ = products(spec, [(0, 1)], 8)
    step = steps[0]
    assert isinstance(step, Product) and ops[0].size >= COPY_CHOICE
    assert (step.a, step.b) == (1, 0)  # the step's left operand is the later one
    assert "".join(terms[0][i] for i in step.perm_b) == "vIMjaGFup" and step.swap_b
    with mock.patch.object(direct, "COPY_CHOICE", 1 << 62):  # the innermost-axis rule alone
        (old,), *_ = products(spec, [(0, 1)], 8)
    assert isinstance(old, Product)
    assert "".join(terms[0][i] for i in old.perm_b) == "jaGFupvIM"

    def cost(labels: str, perm: tuple[int, ...]) -> float:
        ids = {c: k for k, c in enumerate(sizes)}
        return direct._copy_cost(tuple(ids[c] for c in labels),
                                 [ids[labels[i]] for i in perm], list(sizes.values()))  # fmt: skip

    new_cost = cost(terms[1], step.perm_a) + cost(terms[0], step.perm_b)
    assert new_cost < cost(terms[1], old.perm_a) + cost(terms[0], old.perm_b)
    _, output, *_ = products(spec, [(0, 1)], 8)
    run = direct._runner([step], output)  # a network's runner, on this one product
    np.testing.assert_allclose(run(ops, None), np.einsum(eq, *ops), rtol=1e-12)


def test_an_operand_with_free_labels_around_the_shared_ones_is_looped_over_not_copied() -> None:
    # the random 10-tensor network of degree 4's first product: the larger operand 'jpsglof'
    # (61,740 elements) shares 'psg' with 'gspek'; 'j' and 'lof' lie on both sides of them,
    # so it is a (j, psg, lof) view whose matrices matmul loops over, times 'gspek' copied
    # to (psg, ek) and broadcast over j: the labels j, lof, ek, in that order
    eq = "jpsglof,gspek,jlofek->"
    sizes = dict(zip("jpsglofek", (3, 4, 7, 7, 7, 3, 5, 3, 6)))
    terms = eq.split("->")[0].split(",")
    rng = np.random.default_rng(1)
    ops = [rng.random(tuple(sizes[c] for c in t)) for t in terms]
    spec = bind(equation_of(eq), [a.shape for a in ops])
    count = {x: int(x in spec.inputs[2]) for x in range(len(sizes))}  # the third holds them
    taken = [(spec.inputs[0], 0), (spec.inputs[1], 1)]
    step, labels, _ = direct._product(taken, count, spec.sizes, {})
    assert isinstance(step, Product) and step.swap_a and step.shape_a == (1, 3, 196, 105)
    assert step.shape_b == (1, 1, 196, 18) and (step.a, step.b) == (0, 1)
    assert "".join(spec.names[x] for x in labels) == "jlofek"
    a = ops[0].transpose(step.perm_a).reshape(step.shape_a)
    assert np.shares_memory(a, ops[0])  # a view, not a copy
    run = direct._runner([step], tuple(range(len(labels))))
    expected = np.einsum("jpsglof,gspek->jlofek", ops[0], ops[1])
    np.testing.assert_allclose(run(ops, None), expected, rtol=1e-12)
    with mock.patch.object(direct, "LOOPED_MIN_RUN", 10**6):  # a loop of matrices too small
        copied, _, _ = direct._product(taken, count, spec.sizes, {})
    assert isinstance(copied, Product) and len(copied.shape_a) == 2


def test_small_products_are_one_einsum_call_and_large_ones_a_matmul() -> None:
    eq = "ab,bc,cd,de,ef,fg,gh,hi->ai"
    shapes = {"ab": (64, 64), "bc": (64, 2)}
    ops = [np.full(shapes.get(t, (2, 2)), 0.5) for t in eq[:-4].split(",")]
    spec = bind(equation_of(eq), [a.shape for a in ops])
    path = [(0, 1)] * 7  # a x b x c (8,192 elements) first, then products of a few
    steps, *_ = products(spec, plan_path(spec, path), 8)
    assert isinstance(steps[0], Product)
    # the second step takes de and cd (local letters, the result's in order of appearance)
    assert isinstance(steps[1], LoopProduct) and steps[1].subscripts == "ab,ca->bc"
    assert all(isinstance(s, LoopProduct) for s in steps[1:])
    found = direct_program(eq, _facts(ops), None, path)
    assert found is not None
    np.testing.assert_allclose(found[0](ops, None), np.einsum(eq, *ops), rtol=1e-12)


@pytest.mark.parametrize("planning_s", [0.0, 1e9])
def test_einsum_counts_the_direct_answer_and_plans_once_the_runs_took_as_long(
    planning_s: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(direct, "PLANNING_S_PER_STEP", planning_s)  # free, or never paid
    eq, ops = _network(7, 10, 3, "float64")
    es.clear_plan_cache()
    first = es.einsum(eq, *ops)
    assert es.plan_cache_info().direct == 1
    entry = hot_entry(eq, _facts(ops), "auto")
    direct_bounds = (entry.largest, entry.peak)
    assert entry.run.__name__ == ("race" if planning_s == 0.0 else "direct")
    for _ in range(RACE_RUNS):  # the race between the plan and the direct program
        np.testing.assert_allclose(es.einsum(eq, *ops), first, rtol=1e-12)
    if planning_s == 0.0:
        assert entry.planned and entry.run.__name__ != "race"  # settled: the winner's bounds
        plan_bounds = (entry.plan.largest_bytes, plan_peak(entry.plan))
        assert (entry.largest, entry.peak) in (plan_bounds, direct_bounds)
    else:
        assert entry.run.__name__ == "direct" and not entry.planned
    assert es.plan_cache_info().direct == 1
    assert "step 1" in es.explain(eq, *ops)


@pytest.mark.parametrize("plan_faster", [True, False])
def test_once_planned_the_faster_of_the_plan_and_the_direct_program_runs(
    plan_faster: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the two programs race for RACE_RUNS calls, alternating (the direct one first, as the
    # memory bound was checked for it), under the larger of their bounds; the faster stays
    eq, ops = _network(3, 9, 3, "float64")
    plan = es.contract_expression(eq, *[a.shape for a in ops]).plan()
    ran: list[str] = []
    clock = [0.0]

    def program(name: str, seconds: float) -> Any:
        def run(operands: Any, out: Any) -> str:
            ran.append(name)
            clock[0] += seconds
            return name

        return run

    slow, fast = 2e-3, 1e-3
    monkeypatch.setattr(generic.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(
        generic, "compile_plan", lambda p: program("plan", fast if plan_faster else slow)
    )
    direct_s = slow if plan_faster else fast
    entry = Entry.tiered(program("direct", direct_s), 10, 20, lambda: plan, 2.5 * direct_s)
    for _ in range(3):
        entry.run((), None)
    assert ran[-1] == "direct" and entry.run.__name__ == "race"
    assert entry.peak == 20  # not yet raced
    entry.run((), None)
    assert ran[-1] == "direct" and entry.peak == max(20, plan_peak(plan))
    for _ in range(RACE_RUNS - 1):
        assert entry.run.__name__ == "race"
        entry.run((), None)
    assert ran[3:] == ["direct", "plan"] * (RACE_RUNS // 2)
    assert entry.run((), None) == ("plan" if plan_faster else "direct")
    if plan_faster:
        assert (entry.largest, entry.peak) == (plan.largest_bytes, plan_peak(plan))
    else:
        assert (entry.largest, entry.peak) == (10, 20)


def test_the_race_bounds_the_plan_it_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A longer search in another thread may replace the entry's plan while its race
    compiles one: the bounds recorded must be those of the plan compiled (a review: they
    read the plan apart from the compile, so a swap between the reads mixed two paths)."""
    networks = [_network(seed, n, 3, "float64") for seed, n in ((3, 9), (5, 12))]
    plans = [es.contract_expression(eq, *[a.shape for a in ops]).plan() for eq, ops in networks]
    bounds = [(plan.largest_bytes, plan_peak(plan)) for plan in plans]
    assert bounds[0] != bounds[1]

    class Swapped(Entry):
        """Each read of the plan gets the other one (a search replacing it in between)."""

        reads = 0

        @property
        def plan(self) -> Any:
            Swapped.reads += 1
            return plans[Swapped.reads % 2]

    compiled: list[Any] = []

    def compile_plan(plan: Any) -> Any:
        compiled.append(plan)
        return lambda operands, out: "plan"

    monkeypatch.setattr(generic, "compile_plan", compile_plan)
    entry = Swapped.tiered(lambda operands, out: "direct", 0, 0, list, 0.0)
    entry.run((), None)  # the direct program: its time reaches the (zero) planning time
    assert entry.run.__name__ == "race"
    entry.run((), None)  # the race's first call compiles the plan
    (plan,) = compiled
    assert (entry.largest, entry.peak) == bounds[plans.index(plan)]


@pytest.mark.parametrize("before", [0, 1, RACE_RUNS + 2])
def test_under_raising_errors_a_network_raises_at_every_call(
    before: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A network's direct program runs small products as NumPy's loop, which raises no
    floating-point error where its plan's ufuncs and BLAS do: under
    ``np.errstate(over="raise")`` a repeated call returned inf until the race began, then
    raised at the plan's turns only (a review).  Every call raises now, whether the entry
    was made under ``raise`` (planned at once), by an ordinary call, or has raced."""
    monkeypatch.setattr(direct, "PLANNING_S_PER_STEP", 0.0)  # the race from the second call
    eq = "ab,bc,cd,de,ef,fg,gh,hi->ai"
    ops = [np.full((12, 12), 1e40) for _ in range(8)]
    es.clear_plan_cache()
    for _ in range(before):
        with np.errstate(over="ignore", invalid="ignore"):
            assert np.isinf(es.einsum(eq, *ops)).all()
    for _ in range(2 * RACE_RUNS + 2):
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            es.einsum(eq, *ops)
    entry = hot_entry(eq, _facts(ops), "auto")
    assert entry.planned and not entry.unsettled  # the plan from then on
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isinf(es.einsum(eq, *ops)).all()
    with np.errstate(over="raise"):
        assert "network:" not in es.explain(eq, *ops)  # such a call is planned
    assert "network:" in es.explain(eq, *ops)


@pytest.mark.parametrize("fits", [False, True])
def test_under_raising_errors_a_network_s_plan_keeps_the_global_memory_limit(
    fits: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call under ``raise`` runs the plan where the caller checked the direct program's
    bounds (the hot path, against the global limit): past them and the limit, the limited
    way, as a class's first call does (:meth:`Entry.direct_first`); the plan from then on."""
    eq, ops = _network(3, 9, 3, "float64")
    plan = es.contract_expression(eq, *[a.shape for a in ops]).plan()
    monkeypatch.setattr(generic, "compile_plan", lambda p: lambda operands, out: "plan")
    limits: list[int] = []

    def limited(operands: Any, out: Any, limit: int) -> str:
        limits.append(limit)
        return "limited"

    previous = es.memory.memory_limit()
    try:
        es.memory.set_memory_limit(plan_peak(plan) - (0 if fits else 1))
        entry = Entry.tiered(lambda ops, out: "direct", 0, 0, lambda: plan, 1e9, None, limited)
        assert entry.run((), None) == "direct" and entry.unsettled
        with np.errstate(over="raise"):
            assert entry.run((), None) == ("plan" if fits else "limited")
        assert limits == ([] if fits else [plan_peak(plan) - 1])
        assert entry.run((), None) == "plan" and not entry.unsettled
        assert (entry.largest, entry.peak) == (plan.largest_bytes, plan_peak(plan))
    finally:
        es.memory.set_memory_limit(previous)


def test_a_call_over_a_memory_limit_leaves_a_network_s_entry_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A network's call over its ``memory_limit=`` runs the limited way and leaves the
    entry's direct program (its race and longer searches) to later calls: a review found
    one such call settling the entry on its plan for good (later calls 8.5x slower)."""
    monkeypatch.setattr(direct, "PLANNING_S_PER_STEP", 1e9)  # the direct program throughout
    eq, ops = _network(3, 12, 3, "float64")
    es.clear_plan_cache()
    expected = es.einsum(eq, *ops)
    entry = hot_entry(eq, _facts(ops), "auto")
    assert entry.run.__name__ == "direct" and entry.unsettled
    limited = es.einsum(eq, *ops, memory_limit=entry.peak - 1)
    np.testing.assert_allclose(limited, expected, rtol=1e-12)
    assert hot_entry(eq, _facts(ops), "auto") is entry
    assert entry.run.__name__ == "direct" and entry.unsettled and not entry.planned
    with np.errstate(over="raise"):  # under raise it settles (then checks the plan's bytes)
        es.einsum(eq, *ops, memory_limit=entry.peak - 1)
    assert not entry.unsettled and entry.planned


def test_a_network_with_a_broadcast_operand_is_planned() -> None:
    """Its broadcast axes are read once: the entry that spreads the result reads the bounds
    of the call within once, where a network's race or a call under ``raise`` moved them
    to its plan's (a review: past a global memory limit of 12,000 bytes, 25,000 traced)."""
    eq, ops = _network(6, 8, 3, "float64")
    ins, out = eq.split("->")
    first, *rest = ins.split(",")
    ops[0] = np.broadcast_to(ops[0][..., None], ops[0].shape + (50,))
    eq = ",".join([first + "z", *rest]) + "->" + out + "z"
    es.clear_plan_cache()
    result = es.einsum(eq, *ops)
    np.testing.assert_allclose(result, np.einsum(eq, *ops, optimize=True), rtol=1e-12)
    assert es.plan_cache_info().direct == 0
    assert "network:" not in es.explain(eq, *ops)


@pytest.mark.parametrize("kind", ["direct_first", "tiered", "shape_generic"])
@pytest.mark.parametrize("below", [True, False])  # the first program's bounds vs the plan's
def test_an_entry_switching_to_its_plan_has_bounds_covering_what_it_runs(
    kind: str, below: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call in another thread reads an entry's bounds (the memory guard), then its
    program: every state an entry passes through while it switches to its plan must have
    bounds that cover the program in place (a review: the plan's lower bounds were written
    before its program, so such a call could run the old program past what it checked),
    and the call that switches runs only what its caller's check covered."""
    eq, ops = _network(3, 9, 3, "float64")
    plan = es.contract_expression(eq, *[a.shape for a in ops]).plan()
    plan_bounds = (plan.largest_bytes, plan_peak(plan))
    first_bytes = 1 if below else 10 * plan_bounds[1]

    def plan_program(operands: Any, out: Any) -> str:
        return "plan"

    def first_program(operands: Any, out: Any) -> str:
        return "first"

    monkeypatch.setattr(generic, "compile_plan", lambda p: plan_program)
    states: list[tuple[int, int, Any]] = []

    class Recorded(Entry):
        __slots__ = ()

        def __setattr__(self, name: str, value: Any) -> None:
            object.__setattr__(self, name, value)
            if name in ("largest", "peak", "run") and hasattr(self, "peak"):
                states.append((self.largest, self.peak, getattr(self, "run", None)))

    make = {
        "direct_first": Recorded.direct_first,
        "tiered": functools.partial(Recorded.tiered, planning_s=1e9),
        "shape_generic": Recorded.shape_generic,
    }[kind]
    entry = make(first_program, first_bytes, first_bytes, lambda: plan)
    outcomes = []
    if kind == "shape_generic":
        outcomes = [entry.run((), None) for _ in range(generic.PROMOTE_AT)]
        assert outcomes[-1] == ("plan" if below is False else "first")
    else:
        entry.settle()
    assert entry.run is plan_program and (entry.largest, entry.peak) == plan_bounds
    assert len(states) > 2
    for largest, peak, run in states:
        needs = plan_bounds if run is plan_program else (first_bytes, first_bytes)
        assert largest >= needs[0] and peak >= needs[1], (largest, peak, run)


def test_an_expression_s_own_limit_holds_a_network_s_plan_under_raising_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An expression's fast path checked its own ``memory_limit`` against a network entry's
    direct program; under ``np.errstate(raise)`` the entry then ran its plan, whose peak is
    over that limit (a review); the entry settles first, and the limited way runs."""
    from einstride.engine import expression

    eq, shapes, _ = rand_equation(9, 3, n_out=0, d_min=2, d_max=6, seed=0,
                                  return_size_dict=True)  # fmt: skip
    ops = [np.random.default_rng(0).random(s) for s in shapes]
    found = direct_program(eq, _facts(ops), None, "auto")
    assert found is not None
    plan = es.contract_expression(eq, *shapes).plan()
    assert plan_peak(plan) > found[2]  # the plan's peak over the direct program's
    limited: list[int] = []
    run_limited = expression.run_limited

    def spy(*args: Any) -> Any:
        limited.append(args[-1])
        return run_limited(*args)

    monkeypatch.setattr(expression, "run_limited", spy)
    es.clear_plan_cache()
    compiled = es.contract_expression(eq, *shapes, memory_limit=found[2])
    expected = compiled(*ops)
    assert limited == []  # the direct program, within the limit
    with np.errstate(over="raise"):
        np.testing.assert_allclose(compiled(*ops), expected, rtol=1e-12)
    assert limited == [found[2]]


def _traced_direct_run(eq: str, ops: list[np.ndarray]) -> tuple[np.ndarray, int, int, int]:
    """The direct program's result, its largest and peak estimates, and the most bytes
    tracemalloc saw during the run."""
    found = direct_program(eq, _facts(ops), None, "auto")
    assert found is not None
    run, largest, peak, _ = found
    tracemalloc.start()
    try:
        result = run(ops, None)
        _, measured = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, largest, peak, measured


def test_the_peak_counts_the_copy_into_the_outputs_order() -> None:
    ops = [np.random.default_rng(k).random((90, 90)) for k in range(8)]
    eq = "ab,bc,cd,de,ef,fg,gh,hi->ai"  # the last product (a matmul) gives "ia": copied
    spec = bind(equation_of(eq), [a.shape for a in ops])
    steps, output, *_ = products(spec, plan_path(spec, "greedy"), 8)
    assert isinstance(steps[-1], Product) and output == (1, 0)
    result, _, peak, measured = _traced_direct_run(eq, ops)
    np.testing.assert_allclose(result, np.einsum(eq, *ops, optimize=True), rtol=1e-10)
    assert measured <= peak + 64 * 1024
    assert peak >= 2 * result.nbytes


def test_products_that_sum_nothing_are_loops_that_write_the_outputs_order() -> None:
    """An outer product of 20 vectors (2**20 elements): each product one NumPy loop (a
    matmul over a contracted axis of size 1 took 3.5x as long), its labels in the output's
    order, the last one writing the output as it is (no copy: 4.2 -> 0.7 ms measured)."""
    ops = [np.random.default_rng(k).random(2) for k in range(20)]
    eq = "abcdefghijklmnopqrst"
    eq = ",".join(eq) + "->" + eq
    spec = bind(equation_of(eq), [a.shape for a in ops])
    path = plan_path(spec, "greedy")
    steps, output, largest, peak, _ = products(spec, path, 8)
    assert all(isinstance(s, LoopProduct) for s in steps)
    assert output == tuple(range(20))  # no copy into the output's order
    assert largest == 8 * 2**20 and peak < 2 * largest
    result, _, peak, measured = _traced_direct_run(eq, ops)
    assert measured <= peak + 64 * 1024 and peak < 2 * result.nbytes
    np.testing.assert_allclose(result, np.einsum(eq, *ops), rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    n=st.integers(8, 11),
    loop_elements=st.sampled_from([0, 64, LOOP_ELEMENTS]),
    min_run=st.sampled_from([1, 4, 10**9]),
)
def test_networks_of_products_that_sum_nothing_agree_in_any_output_order(
    data: st.DataObject, n: int, loop_elements: int, min_run: int
) -> None:
    """Operands of one or two labels from a pool of a dozen (labels held by several:
    elementwise products), the output some of them in any order: loops of any size, in
    the output's order, against NumPy."""
    pool = "abcdefghijkl"
    terms = [
        "".join(data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True)))
        for _ in range(n)
    ]
    used = sorted(set("".join(terms)))
    out = data.draw(st.permutations(used))[: data.draw(st.integers(0, len(used)))]
    sizes = {x: data.draw(st.integers(1, 4)) for x in used}
    assume(np.prod([sizes[x] for x in out], dtype=np.int64) <= 2**16)
    eq = ",".join(terms) + "->" + "".join(out)
    rng = np.random.default_rng(n)
    ops = [rng.random(tuple(sizes[x] for x in t)) for t in terms]
    with (
        mock.patch.object(direct, "LOOP_ELEMENTS", loop_elements),
        mock.patch.object(direct, "LOOP_MIN_RUN", min_run),
    ):
        found = direct_program(eq, _facts(ops), None, "greedy")
    assert found is not None
    answer = found[0](ops, None)
    np.testing.assert_allclose(answer, np.einsum(eq, *ops, optimize=True), rtol=1e-12)
    if np.ndim(answer):
        assert answer.flags.c_contiguous


@pytest.mark.parametrize(("run", "loop"), [(2, False), (3, False), (4, True), (64, True)])
def test_a_large_product_that_sums_nothing_loops_unless_its_runs_are_short(
    run: int, loop: bool
) -> None:
    # the second operand's axis is the loop's innermost run: runs of 2 and 3 took 1.3-1.4x
    # a matmul's time (2**20 elements)
    step, labels, _ = direct._product([((0,), 0), ((1,), 1)], {0: 1, 1: 1}, [2**14, run], {})
    assert isinstance(step, LoopProduct) is loop
    assert labels == (0, 1)
    if loop:
        assert step.subscripts == "a,b->ab"


def test_the_last_products_copies_are_gone_before_the_final_copy() -> None:
    """A ring whose last product reshapes (copies) an operand and whose result is copied
    into the output's order: the copies died before that copy, as the peak counts (a
    review measured 6.77 MB against a peak of 6.25 MB: the runner's locals kept them)."""
    eq = "abc,cde,efg,ghi,ijk,klm,mno,opa->bdfhjlnp"
    ops = [np.random.default_rng(k).random((2, 5, 2)) for k in range(8)]
    result, _, peak, measured = _traced_direct_run(eq, ops)
    np.testing.assert_allclose(result, np.einsum(eq, *ops))
    assert measured <= peak + 16 * 1024


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_peak_bounds_what_the_direct_run_allocates(seed: int) -> None:
    eq, shapes, _ = rand_equation(10, 3, d_min=4, d_max=9, seed=seed, return_size_dict=True)
    ops = [np.random.default_rng(seed).random(s) for s in shapes]
    _, largest, peak, measured = _traced_direct_run(eq, ops)
    assert largest <= peak
    assert measured <= peak + 64 * 1024  # Python's own objects besides the arrays


@pytest.mark.parametrize(
    ("eq", "sizes"),
    [
        # a x b x c first: 2**27 multiply-adds, then small ones
        ("ab,bc,cd,de,ef,fg,gh,hi->ai", {"a": 512, "b": 512, "c": 512}),
        # operands of 18 axes of 2 sharing 9 (2**27 multiply-adds)
        ("ABCDEFGHIabcdefghi,abcdefghiJKLMNOPQR,A,B,C,D,E,F->GHIJKLMNOPQR", {}),
        # 10 and 9 axes sharing 5, the shared ones in different orders in each (the random
        # 20-tensor network of degree 4's largest product, 1e9 FLOPs: its plan was slower)
        (
            "abcdefghij,idkflmgne,ak,bl,cm,hn,j,o->o",
            dict(zip("abcdefghijklmn", (3, 2, 5, 2, 2, 5, 4, 8, 6, 5, 6, 4, 6, 6))),
        ),
    ],
)
def test_a_large_product_runs_tensordot_style(eq: str, sizes: dict[str, int]) -> None:
    # no product goes to a plan of its own: the plan copies as the direct step does, and its
    # result may be a transposed view that the next product copies again
    terms = eq.split("->")[0].split(",")
    rng = np.random.default_rng(5)
    ops = [rng.random(tuple(sizes.get(x, 2) for x in t)) for t in terms]
    path = [(0, 1)] * (len(terms) - 1)
    spec = bind(equation_of(eq), [a.shape for a in ops])
    steps, *_ = products(spec, plan_path(spec, path), 8)
    first = steps[0]
    assert isinstance(first, Product)
    la, lb = spec.inputs[0], spec.inputs[1]
    shared = set(la) & set(lb)
    multiply_adds = np.prod([spec.sizes[x] for x in set(la) | set(lb)], dtype=np.int64)
    assert multiply_adds >= 2**26 and len(shared) >= 1
    found = direct_program(eq, _facts(ops), None, path)
    assert found is not None
    result = found[0](ops, None)
    assert np.shape(result) == np.shape(np.einsum(eq, *ops, optimize=["einsum_path", *path]))
    np.testing.assert_allclose(
        result, np.einsum(eq, *ops, optimize=["einsum_path", *path]), rtol=1e-10
    )


@pytest.mark.parametrize(
    ("eq", "shapes", "why"),
    [
        ("ab,bc,cd,de,ef,fg,gh->ah", [(2, 2)] * 7, "fewer than 8 operands"),
        ("aab,bc,cd,de,ef,fg,gh,hi->ai", [(2, 2, 2)] + [(2, 2)] * 7, "a diagonal"),
        ("ab,bc,cd,de,ef,fg,gh,hi->aai", [(2, 2)] * 8, "an expansion"),
        ("...b,...b,bc,cd,de,ef,fg,gh->...h", [(1, 2), (3, 2)] + [(2, 2)] * 6, "a broadcast"),
    ],
)
def test_what_the_direct_way_leaves_to_the_planner(
    eq: str, shapes: list[tuple[int, ...]], why: str
) -> None:
    ops = [np.ones(s) for s in shapes]
    assert direct_program(eq, _facts(ops), None, "auto") is None, why
    if eq.endswith("aai"):  # NumPy does not expand: the diagonal holds the product
        base = np.einsum(eq.replace("aai", "ai"), *ops)
        expected = np.zeros((2, 2, 2))
        expected[[0, 1], [0, 1]] = base
    else:
        expected = np.einsum(eq, *ops)
    np.testing.assert_allclose(es.einsum(eq, *ops), expected)


def test_explain_says_when_a_first_call_runs_directly() -> None:
    eq = "ab,bc,cd,de,ef,fg,gh,hi->ai"
    ops = [np.ones((2, 3))] + [np.ones((3, 3))] * 7
    shapes = [a.shape for a in ops]
    for report in (
        es.explain(eq, *ops),
        es.explain(eq, *shapes),
        es.contract_expression(eq, *shapes).explain(),
    ):
        assert report.splitlines()[1] == f"  {direct.DIRECT_NOTE}:"
        # the direct way's own figures (a review: the first call's peak went unsaid)
        _, largest, peak, _ = direct.direct_program(eq, facts_of(ops), None, "auto")
        assert report.splitlines()[2] == (
            f"    the direct way: largest allocation {largest:,} B, peak {peak:,} B (the "
            "figures below are the plan's)"
        )
    ints = [a.astype(np.int64) for a in ops]  # planned: no BLAS dtype
    seven = "ab,bc,cd,de,ef,fg,gh->ah"  # planned: fewer than 8 operands
    assert direct.DIRECT_NOTE in es.explain(eq, *ops, memory_limit=2**30)  # within it
    for report in (
        es.explain(eq, *ints),
        es.explain(seven, *ops[:7]),
        es.explain(eq, *ops, memory_limit=200),  # the direct way's peak (336 B) is over it
    ):
        assert direct.DIRECT_NOTE not in report


def test_mixed_or_integer_dtypes_are_planned() -> None:
    eq = "ab,bc,cd,de,ef,fg,gh,hi->ai"
    ints = [np.ones((2, 2), dtype=np.int64)] * 8
    mixed = [np.ones((2, 2), dtype=np.float32)] + [np.ones((2, 2))] * 7
    for ops in (ints, mixed):
        assert direct_program(eq, _facts(ops), None, "auto") is None
        np.testing.assert_array_equal(es.einsum(eq, *ops), np.einsum(eq, *ops))
