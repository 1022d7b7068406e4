"""A network whose shapes repeat pays, out of a share of its calls' seconds, for longer
searches of its path (engine/backends/numpy/direct.py, ``LongerSearch``): paid in advance,
doubling, ending at the search's largest budget; a better path found is run from then on
and is the default search's answer until the caches are cleared."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from typing import Any

import numpy as np
import opt_einsum
import pytest

import einstride as es
from einstride.engine.backends.numpy import direct, generic
from einstride.engine.backends.numpy.direct import RENEW_SHARE, LongerSearch, direct_entry
from einstride.engine.backends.numpy.execute import compile_plan
from einstride.engine.backends.numpy.generic import Entry
from einstride.engine.backends.numpy.options import DEFAULT
from einstride.engine.spec.equation import bind, parse_subscripts
from einstride.engine.spec.search import (
    MAX_BUDGET_S,
    adopt_longer,
    longer_generation,
    search_path,
)
from einstride.engine.spec.walk import search_problem


def _grid(rows: int, cols: int, bond: int) -> tuple[str, list[np.ndarray]]:
    """A closed rows x cols lattice, one operand per site (greedy's path is poor here)."""
    symbols = (opt_einsum.get_symbol(k) for k in itertools.count())
    labels: dict[tuple[int, int], list[str]] = {
        (r, c): [] for r in range(rows) for c in range(cols)
    }
    for r, c in labels:
        for near in ((r + 1, c), (r, c + 1)):
            if near in labels:
                label = next(symbols)
                labels[(r, c)].append(label)
                labels[near].append(label)
    rng = np.random.default_rng(0)
    ops = [rng.standard_normal((bond,) * len(site)) for site in labels.values()]
    return ",".join("".join(site) for site in labels.values()) + "->", ops


def _facts(ops: list[np.ndarray]) -> tuple[Any, ...]:
    return tuple(x for a in ops for x in (a.shape, a.strides, a.dtype))


def _longer(eq: str, ops: list[np.ndarray]) -> tuple[Entry, LongerSearch]:
    entry = direct_entry(eq, _facts(ops), None, "auto", DEFAULT.options)
    assert entry is not None and isinstance(entry._renewal, LongerSearch)
    return entry, entry._renewal


def test_the_entry_starts_over_on_the_program_a_renewal_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock, ran, asked = [0.0], [], []

    def program(name: str) -> Any:
        def run(operands: Any, out: Any) -> str:
            ran.append(name)
            clock[0] += 1e-3
            return name

        return run

    class Once:
        finished = False

        def due(self, contracted_s: float) -> bool:
            return contracted_s >= 3e-3 - 1e-12

        def renew(self, contracted_s: float, peak: int) -> Any:
            asked.append(contracted_s)
            self.finished = True
            return program("better"), 1, 2, list, 1e9

    monkeypatch.setattr(generic.time, "perf_counter", lambda: clock[0])
    entry = Entry.tiered(program("first"), 10, 20, list, 1e9, Once())
    for _ in range(5):
        entry.run((), None)
    assert ran == ["first"] * 3 + ["better"] * 2  # started over after the third call paid
    assert asked == pytest.approx([3e-3]) and (entry.largest, entry.peak) == (1, 2)
    assert entry._renewal is None  # finished: never asked again


def test_the_searches_are_paid_in_advance_and_double_up_to_the_largest_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eq, ops = _grid(3, 3, 2)
    _, longer = _longer(eq, ops)
    budgets: list[float] = []
    real = search_path

    def never_better(*args: Any, budget_s: float, seed: int) -> Any:
        budgets.append(budget_s)
        found = real(*args, budget_s=1e-6, seed=seed)
        return replace(found, cost_ns=10 * found.cost_ns)  # never taken

    monkeypatch.setattr(direct, "search_path", never_better)
    contracted = 0.0
    while not longer.finished:
        contracted += 1e-3
        if longer.due(contracted):
            before = longer.spent_s
            assert longer.renew(contracted, 1 << 40) is None
            if longer.spent_s > before:  # a search ran: paid for by the calls so far
                assert longer.spent_s <= RENEW_SHARE * contracted + 1e-12
        assert contracted < 1e3, "the searches never end"
    assert budgets[-1] == MAX_BUDGET_S and len(budgets) == longer.searches
    assert all(b == 2 * a for a, b in itertools.pairwise(budgets[:-1]))
    assert budgets[0] >= 2 * real(*longer_problem(eq, ops)).budget_s - 1e-12


def longer_problem(eq: str, ops: list[np.ndarray]) -> tuple[Any, Any, Any]:
    spec = bind(parse_subscripts(eq), [a.shape for a in ops])
    return (*search_problem(spec), spec.sizes)


def test_a_better_path_runs_from_then_on_and_is_the_default_searchs_answer() -> None:
    es.clear_plan_cache()
    eq, ops = _grid(8, 8, 3)
    entry, longer = _longer(eq, ops)
    first = longer.path
    found = None
    while found is None and not longer.finished:
        found = longer.renew(1e4, entry.peak)  # calls that paid for every search
    assert found is not None, "no longer search found a path 10% cheaper than greedy's"
    program, largest, peak, make, planning_s = found
    assert longer.path != first and largest <= peak <= entry.peak and planning_s > 0
    expected = opt_einsum.contract(eq, *ops)
    np.testing.assert_allclose(program(ops, None), expected, rtol=1e-9)
    np.testing.assert_allclose(compile_plan(make())(ops, None), expected, rtol=1e-9)  # its plan
    choice = search_path(*longer_problem(eq, ops))
    assert list(choice.path) == longer.path and "while the shapes repeated" in choice.finder
    assert "while the shapes repeated" in es.explain(eq, *ops)
    np.testing.assert_allclose(es.einsum(eq, *ops), expected, rtol=1e-9)
    es.clear_plan_cache()  # forgets it
    assert "while the shapes repeated" not in search_path(*longer_problem(eq, ops)).finder


def test_a_path_of_a_higher_peak_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    eq, ops = _grid(3, 3, 2)
    real = search_path

    def cheaper(*args: Any, budget_s: float, seed: int) -> Any:
        found = real(*args, budget_s=1e-6, seed=seed)
        return replace(found, cost_ns=0.5 * found.cost_ns, finder="cheaper")

    monkeypatch.setattr(direct, "search_path", cheaper)
    es.clear_plan_cache()
    for peak, taken in ((0, False), (None, True)):
        _, longer = _longer(eq, ops)
        longer.peak = longer.peak if peak is None else peak
        assert (longer.renew(1e4, 1 << 40) is not None) == taken
    es.clear_plan_cache()


def test_only_einstrides_own_search_is_renewed() -> None:
    eq, ops = _grid(3, 3, 2)
    path = es.contract_expression(eq, *[a.shape for a in ops]).path
    for optimize in ("greedy", path, ["einsum_path", *path]):
        entry = direct_entry(eq, _facts(ops), None, optimize, DEFAULT.options)
        assert entry is not None and entry._renewal is None
    assert isinstance(_longer(eq, ops)[1], LongerSearch)


def test_einsum_calls_that_repeat_switch_to_the_better_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(direct, "RENEW_SHARE", 1e9)  # every call pays for the next search
    es.clear_plan_cache()
    eq, ops = _grid(8, 8, 3)
    expected = opt_einsum.contract(eq, *ops)
    assert "while the shapes repeated" not in es.explain(eq, *ops)
    for _ in range(4):
        np.testing.assert_allclose(es.einsum(eq, *ops), expected, rtol=1e-9)
        if "while the shapes repeated" in es.explain(eq, *ops):
            break
    else:
        raise AssertionError("four searches of doubling budgets found no better path")
    np.testing.assert_allclose(es.einsum(eq, *ops), expected, rtol=1e-9)  # the new program
    es.clear_plan_cache()


def test_a_search_is_paid_once_its_time_counted_and_none_runs_once_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eq, ops = _grid(3, 3, 2)
    _, longer = _longer(eq, ops)
    real, searched = search_path, []

    def slow(*args: Any, budget_s: float, seed: int) -> Any:
        searched.append(budget_s)
        time.sleep(0.05)  # far past its budget, as dp on a dense network can be
        found = real(*args, budget_s=1e-6, seed=seed)
        return replace(found, cost_ns=10 * found.cost_ns)

    monkeypatch.setattr(direct, "search_path", slow)
    paid = 1e3
    assert longer.renew(paid, 1 << 40) is None and len(searched) == 1
    assert longer.spent_s >= 0.05  # its time, not its budget
    assert longer.renew(paid, 1 << 40) is None and len(searched) == 2  # paid for: runs
    calls = longer.spent_s / RENEW_SHARE  # exactly what has been paid so far
    assert longer.renew(calls, 1 << 40) is None and len(searched) == 2  # not paid: none
    longer.finished = True
    assert longer.renew(1e9, 1 << 40) is None and len(searched) == 2


def test_a_kept_path_gives_way_only_to_a_cheaper_one_and_not_after_a_clear() -> None:
    ring = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
    sizes = (3, 4, 5, 6, 7)
    base = search_path(ring, (), sizes, budget_s=1.0)
    es.clear_plan_cache()
    since = longer_generation()
    adopt_longer(ring, (), sizes, replace(base, finder="first", cost_ns=10.0), since)
    adopt_longer(ring, (), sizes, replace(base, finder="dearer", cost_ns=20.0), since)
    assert search_path(ring, (), sizes).finder == "first"
    adopt_longer(ring, (), sizes, replace(base, finder="cheaper", cost_ns=5.0), since)
    assert search_path(ring, (), sizes).finder == "cheaper"
    es.clear_plan_cache()  # a search begun before it adopts nothing
    adopt_longer(ring, (), sizes, replace(base, finder="stale", cost_ns=1.0), since)
    assert search_path(ring, (), sizes).finder != "stale"


def test_a_run_that_raises_starts_no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, asked = [0.0], []

    class Interrupted(Exception):
        pass

    def interrupted(operands: Any, out: Any) -> None:
        clock[0] += 1.0
        raise Interrupted

    class Always:
        finished = False

        def due(self, contracted_s: float) -> bool:
            return True

        def renew(self, contracted_s: float, peak: int) -> Any:
            asked.append(contracted_s)
            return None

    monkeypatch.setattr(generic.time, "perf_counter", lambda: clock[0])
    entry = Entry.tiered(interrupted, 10, 20, list, 1e9, Always())
    with pytest.raises(Interrupted):
        entry.run((), None)
    assert asked == []  # (a search after Ctrl-C would hold the user up for seconds)
