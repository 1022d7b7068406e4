"""Shape-generic entries: a plan cache miss answered without planning.

When the operands' shape class (:mod:`.skeleton`) has been planned before and the class's
plan compiles to a program that reads its sizes from the operands
(:func:`.sizefree.compile_generic`), a new shape of the class runs that program at once;
its own plan (the class's decisions replayed with its sizes, equal to the plan a fresh
planner makes) is built only when asked for (``explain``, the memory-limited paths).

>>> import numpy as np
>>> a, b = np.ones((37, 8)), np.ones((8, 8))
>>> facts = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype)
>>> entry, level = generic_entry("ij,jk->ik", facts, None, "auto", DEFAULT.options)
>>> entry.peak, entry.plan.decided_for, float(entry.run((a, b), None)[0, 0])
(2368, ((32, 8), (8, 8)), 8.0)
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal, Protocol

import numpy as np

from .... import memory as _memory
from ...call import equation_of
from ...spec.equation import EinsumSpec, Equation, bind
from ...spec.paths import optimize_key, path_fits_any_size, unoptimized
from .execute import Program, compile_plan, errors_raise
from .options import DEFAULT, PlannerOptions  # noqa: F401  (DEFAULT: the doctest's)
from .peak import plan_peak
from .plan import build_plan, class_decisions
from .sizefree import Where, compile_generic
from .skeleton import ShapeClass, c_order_class, dense_class, shape_class
from .steps import Plan

__all__ = [
    "DIRECT_LOOKS",
    "LIMITED_RUNNERS",
    "PROMOTE_AT",
    "Entry",
    "LazyPlan",
    "Level",
    "Renewal",
    "class_program",
    "clear_generic",
    "generic_entry",
    "plan_of",
]

RACE_RUNS = 6  # calls that alternate a network's plan and its direct program (three each)
LIMITED_RUNNERS: list[Callable[..., Any]] = []
"""``limited.run_limited``, registered by :mod:`.limited` (which imports this module): what
a class's first-call entry runs past the global memory limit (:meth:`Entry.direct_first`)."""
PROMOTE_AT = 8  # the call of a shape of a known class that builds its own plan: building
#   it costs about a first call (a 3-operand chain of 8 x 8 matrices: ~200 µs), while the
#   class's program runs a repeated shape nearly as fast (6-8 against 5-6 µs a call; a
#   5-tensor network 145 against 120-150 µs), so a shape seen a few times keeps the program


class LazyPlan:
    """A plan given, or built by ``make`` when first read (a cache entry that runs without
    it: a shape of a known class)."""

    __slots__ = ("_make", "_plan")

    def __init__(self, plan: Plan | None, make: Callable[[], Plan] | None) -> None:
        self._plan, self._make = plan, make

    @property
    def plan(self) -> Plan:
        if self._plan is None:
            assert self._make is not None
            self._plan = self._make()
        return self._plan

    @property
    def planned(self) -> bool:
        """Whether the plan is built."""
        return self._plan is not None


class Renewal(Protocol):
    """A longer path search while a network's shapes repeat (:class:`.direct.LongerSearch`):
    ``due`` says, from the seconds its calls have contracted so far, whether the next
    search has been paid for; ``renew`` runs it, and returns the direct program of a better
    path (``(program, largest, peak, make, planning_s)``, as :meth:`Entry.tiered` takes
    them; its peak at most ``peak``, the entry's bound now) or None; ``finished`` ends the
    searches."""

    finished: bool

    def due(self, contracted_s: float) -> bool: ...

    def renew(
        self, contracted_s: float, peak: int
    ) -> tuple[Program, int, int, Callable[[], Plan], float] | None: ...


class Entry(LazyPlan):
    """A cached plan (built when first read, for shape-generic entries), its compiled
    program, its largest single allocation and its peak."""

    __slots__ = (
        "_contracted",
        "_direct_way",
        "_limited",
        "_renewal",
        "_settle",
        "largest",
        "peak",
        "run",
    )

    def __init__(
        self,
        plan: Plan | None,
        run: Program,
        largest: int,
        peak: int,
        make: Callable[[], Plan] | None = None,
    ) -> None:
        super().__init__(plan, make)
        self.run, self.largest, self.peak = run, largest, peak
        self._renewal: Renewal | None = None
        self._contracted = 0.0
        self._settle: Callable[[], object] | None = None
        self._direct_way: tuple[Program, int] | None = None  # (:meth:`fitting`)
        self._limited: Callable[[Sequence[Any], Any, int], Any] | None = None  # (:meth:`tiered`)

    @property
    def unsettled(self) -> bool:
        """Whether this entry may still run a class's first call directly
        (:meth:`direct_first`, its plan not run yet)."""
        return self._settle is not None

    def settle(self) -> None:
        """Run the plan from now on where this entry runs a class's first call directly
        (:meth:`direct_first`: its bounds may fit a memory limit the direct way's do not,
        and under ``np.errstate(...="raise")`` only the plan raises)."""
        if self._settle is not None:
            self._settle()

    def settle_if_raising(self) -> None:
        """:meth:`settle` under ``np.errstate(...="raise")``, before a memory guard checks
        this entry's bounds: the direct way raises no floating-point error, so the plan
        runs, and its bytes are the ones to check (a review: an expression's own limit was
        checked against the direct program's, and the plan ran past it once)."""
        if self._settle is not None and errors_raise():
            self.settle()

    def settle_over_limit(self) -> None:
        """:meth:`settle` before a call whose bounds are over a memory limit, for a class's
        first-call entry (:meth:`direct_first`: its plan may fit where its direct way does
        not) or under ``np.errstate(...="raise")``; a network's entry (:meth:`tiered`) keeps
        its race and longer searches for later calls, the limited way running this one (a
        review: one call over a limit settled it, and later calls took 8.5x as long)."""
        if self._direct_way is not None or errors_raise():
            self.settle()

    def fitting(self, limit: int) -> Program | None:
        """The direct way of a class's first call (:meth:`direct_first`) where its peak
        fits ``limit`` and no floating-point error raises (NumPy's loop raises none), for
        a call whose plan peaks over it: calls that ran so keep running so, instead of
        failing once the plan is built (a review: ``b,ac->b`` under ``memory_limit=`` of
        its result's bytes ran twice, then raised, the plan's accumulators over it)."""
        if self._direct_way is None or self._direct_way[1] > limit or errors_raise():
            return None
        return self._direct_way[0]

    @classmethod
    def shape_generic(
        cls, program: Program, largest: int, peak: int, make: Callable[[], Plan]
    ) -> Entry:
        """The entry of a new shape of a known class: its first calls run the class's
        size-free program; the :data:`PROMOTE_AT`-th (the shape keeps coming back: a warm
        cache) builds the plan and compiles it like any other, so that repeated shapes run
        the specialised program, while a shape that comes back only a few times never pays
        for building it.  That call still runs the class's program if the plan's bytes are
        over its bounds, which the memory guard checked (the next call checks the plan's)."""
        entry = cls(None, program, largest, peak, make)
        calls = 0

        def first(operands: Sequence[Any], out: Any) -> Any:
            nonlocal calls
            calls += 1  # (threads may lose an addition: a later promotion)
            if calls >= PROMOTE_AT - 1:
                entry.run = promoted
            return program(operands, out)

        def promoted(operands: Sequence[Any], out: Any) -> Any:
            bounds = entry._bounds()  # (builds the plan)
            plan_program = compile_plan(entry.plan)
            entry._switch(plan_program, bounds)
            if bounds[0] > largest or bounds[1] > peak:
                return program(operands, out)
            return plan_program(operands, out)

        entry.run = first
        return entry

    @classmethod
    def direct_first(
        cls,
        program: Program,
        largest: int,
        peak: int,
        make: Callable[[], Plan],
        ran: Callable[[], None] | None = None,
        runs: int = 1,
        limited: Callable[[Sequence[Any], Any, int], Any] | None = None,
    ) -> Entry:
        """The entry of a shape class's first call (:func:`.direct.first_call_entry`): it
        runs ``program`` (the path run directly; ``ran`` is called after its first run)
        for ``runs`` calls while its plan is not built; the next call builds it (planning
        the class) and runs it from then on.  That call still runs ``program`` if the
        plan's bytes are over the bounds it was checked against (``largest``, ``peak``),
        unless floating-point errors raise (NumPy's loop raises none): then the plan runs,
        within the global memory limit (the hot path's, which checked the direct way's
        bytes; other callers settle such an entry first) or by ``limited(operands, out,
        limit)`` past it (a review: the plan ran over the limit once, then the calls
        raised).

        >>> calls = []
        >>> entry = Entry.direct_first(lambda ops, out: calls.append(1), 0, 0, list)
        >>> _ = entry.run((), None)
        >>> len(calls), entry.planned, entry.run.__name__
        (1, False, 'second')
        """
        entry = cls(None, program, largest, peak, make)
        entry._direct_way = (program, peak)
        left = [runs]  # (threads may lose a count: one more direct run)

        def first(operands: Sequence[Any], out: Any) -> Any:
            # explain built the plan, or errors raise now (the entry may have been made by a
            # call that raised none: a review found such calls returning inf, not raising)
            if entry.planned or errors_raise():
                return second(operands, out)
            now = left[0] - 1  # (this call's own count: a thread that read the same one
            left[0] = now  # may count a run twice, none can skip the first)
            if now <= 0:
                entry.run = second
            result = program(operands, out)
            if ran is not None and now == runs - 1:
                ran()
            return result

        def settle() -> None:
            bounds = entry._bounds()  # (builds the plan)
            entry._switch(compile_plan(entry.plan), bounds)
            entry._settle = None

        def second(operands: Sequence[Any], out: Any) -> Any:
            settle()
            if entry.largest > largest or entry.peak > peak:
                if not errors_raise():
                    return program(operands, out)  # the next call checks the plan's bounds
                if limited is not None and entry.peak > _memory.LIMIT:
                    return limited(operands, out, _memory.LIMIT)
            return entry.run(operands, out)

        entry.run, entry._settle = first, settle
        return entry

    @classmethod
    def tiered(
        cls,
        program: Program,
        largest: int,
        peak: int,
        make: Callable[[], Plan],
        planning_s: float,
        renewal: Renewal | None = None,
        limited: Callable[[Sequence[Any], Any, int], Any] | None = None,
    ) -> Entry:
        """The entry of a network's shapes (:mod:`.direct`): it runs ``program`` until the
        time its runs took adds up to ``planning_s``, the estimated cost of planning, and
        then builds the plan and compiles it (so that repeating the shapes never costs
        more than twice what the best of the two ways would have); the next
        :data:`RACE_RUNS` calls alternate the two programs, and the faster (by its fastest
        run) runs from then on.  Neither wins everywhere (measured, warm, the plan against
        the direct program: a random 10-tensor network of degree 4 0.53x, an MPS
        expectation value 0.58x; a circuit of 16 qubits 1.9x, the closed 6 x 6 grid 1.3x).

        With a ``renewal``, every call's seconds count toward its longer path searches;
        when one finds a better path, the entry starts over on that path's direct program
        (and its plan, built and raced as before).

        A call under ``np.errstate(...="raise")`` runs the plan, and so does every call
        after it (:meth:`settle`; no race, no longer search): the direct program's small
        products are NumPy's loop, which raises no floating-point error where the plan's
        ufuncs and BLAS do, so a repeated call raised or returned ``inf`` by how many came
        before it (a review: the race's turns raised, the direct program's did not).  Past
        the bounds the caller checked (the direct program's) and the global memory limit,
        that call runs ``limited(operands, out, limit)``, as :meth:`direct_first` does.

        >>> calls = []
        >>> entry = Entry.tiered(lambda ops, out: calls.append(1), 0, 0, list, 0.0)
        >>> _ = entry.run((), None)                  # the program, once (no time spent yet)
        >>> entry.run.__name__, len(calls), entry.unsettled
        ('race', 1, True)
        """
        entry = cls(None, program, largest, peak, make)
        entry._renewal, entry._limited = renewal, limited
        entry._direct(program, largest, peak, planning_s)
        return entry

    def _on_plan(self) -> Program:
        """Run the plan from now on (built and compiled now; no race, no longer search):
        a network entry's :meth:`settle`.  Returns the plan's program."""
        plan = self.plan  # (read once: a longer search may replace it, :meth:`_race`)
        bounds = _bounds_of(plan)
        program = compile_plan(plan)
        self._renewal = None
        self._switch(program, bounds)
        self._settle = None
        return program

    def _guarded(self, program: Program, largest: int, peak: int) -> Program:
        """``program`` (a network's direct one, of bounds ``largest`` and ``peak``) but
        under ``np.errstate(...="raise")``: then the plan, from then on (:meth:`tiered`),
        or :attr:`_limited` past those bounds and the global memory limit."""

        def guarded(operands: Sequence[Any], out: Any) -> Any:
            if not errors_raise():
                return program(operands, out)
            plan_program = self._on_plan()
            over = self.largest > largest or self.peak > peak  # (what the caller checked)
            if over and self._limited is not None and self.peak > _memory.LIMIT:
                return self._limited(operands, out, _memory.LIMIT)
            return plan_program(operands, out)

        return guarded

    def _direct(self, program: Program, largest: int, peak: int, planning_s: float) -> None:
        """Run ``program`` from now on, until its runs took ``planning_s`` (then race);
        under ``np.errstate(...="raise")``, the plan (:meth:`tiered`)."""
        spent = [0.0]  # racing threads may lose an addition: that only delays the switch
        program = self._guarded(program, largest, peak)
        self._settle = self._on_plan  # (unsettled while the direct program may run)

        def direct(operands: Sequence[Any], out: Any) -> Any:
            start = time.perf_counter()
            try:
                result = program(operands, out)
            finally:
                seconds = time.perf_counter() - start
                spent[0] += seconds
                if spent[0] >= planning_s and self._settle is not None:
                    self.run = self._race(program, largest, peak)
            self._count(seconds)  # a run that raised (an interrupt) starts no search
            return result

        self.run = direct

    def _race(self, direct: Program, largest: int, peak: int) -> Program:
        """The program that alternates the plan's (built and compiled at its first call)
        and ``direct`` (whose bounds are ``largest`` and ``peak``; it runs the plan under
        ``np.errstate(...="raise")``) for :data:`RACE_RUNS` calls, under the larger bounds
        of the two, then leaves the faster in place (unless a call settled the entry)."""
        compiled: list[tuple[Program, tuple[int, int]]] = []  # the plan's program, bounds
        best = [float("inf"), float("inf")]  # each program's fastest run
        runs = [0]

        def race(operands: Sequence[Any], out: Any) -> Any:
            if errors_raise():
                return direct(operands, out)  # (the plan, settled: _guarded)
            if not compiled:
                # the plan read once: a longer search in another thread may replace it, and
                # the bounds must be those of the program compiled (a review)
                plan = self.plan
                bounds = _bounds_of(plan)
                compiled.append((compile_plan(plan), bounds))
                self.largest, self.peak = max(largest, bounds[0]), max(peak, bounds[1])
            k = (runs[0] + 1) % 2  # the direct program first: the bounds were checked for it
            runs[0] += 1
            start = time.perf_counter()
            try:
                result = (direct if k else compiled[0][0])(operands, out)
            finally:
                seconds = time.perf_counter() - start
                best[k] = min(best[k], seconds)
                if runs[0] >= RACE_RUNS and self._settle is not None:
                    program, (plan_largest, plan_peak_) = compiled[0]
                    plan_won = best[0] <= best[1]
                    winner = program if plan_won else direct
                    self.run = winner if self._renewal is None else self._timed(winner)
                    if plan_won:
                        self._settle = None
                    self.largest = plan_largest if plan_won else largest
                    self.peak = plan_peak_ if plan_won else peak
            self._count(seconds)
            return result

        return race

    def _timed(self, program: Program) -> Program:
        """``program``, its seconds counted toward the longer searches."""

        def timed(operands: Sequence[Any], out: Any) -> Any:
            start = time.perf_counter()
            result = program(operands, out)
            self._count(time.perf_counter() - start)
            return result

        return timed

    def _count(self, seconds: float) -> None:
        """Add a call's seconds; run the longer search they paid for, and start over on
        the better path it found."""
        renewal = self._renewal
        if renewal is None:
            return
        self._contracted += seconds  # (threads may lose an addition: a later search)
        if not renewal.due(self._contracted):
            return
        found = renewal.renew(self._contracted, self.peak)
        if renewal.finished:
            self._renewal = None
        if found is not None:
            program, largest, peak, make, planning_s = found
            self._plan, self._make = None, make
            # the program first, then its (no higher) bounds: a call that reads the bounds
            # in between sees the old, larger ones
            self._direct(program, largest, peak, planning_s)
            self.largest, self.peak = largest, peak

    def _bounds(self) -> tuple[int, int]:
        return _bounds_of(self.plan)

    def _switch(self, program: Program, bounds: tuple[int, int]) -> None:
        """Run ``program``, whose largest allocation and peak are ``bounds``, from now on:
        first the bounds raised to cover the old program and the new, then the program,
        then its own bounds, so that a call in another thread that read the bounds (the
        memory guard) before reading the program checked ones that cover whichever it
        runs (a review: the plan's lower bounds, then the old direct program's run)."""
        self.largest, self.peak = max(self.largest, bounds[0]), max(self.peak, bounds[1])
        self.run = program
        self.largest, self.peak = bounds


def _bounds_of(plan: Plan) -> tuple[int, int]:
    """A plan's largest allocation and its peak (bytes)."""
    return plan.largest_bytes, plan_peak(plan)


@functools.lru_cache(maxsize=1024)
def class_program(
    equation: Equation,
    cls: ShapeClass,
    dtypes: tuple[np.dtype[Any], ...],
    dtype: np.dtype[Any] | None,
    opt_key: Any,
    options: PlannerOptions,
) -> tuple[Program, Plan, Where] | None:
    """The size-free program of the class's plan, that plan (for the bytes its allocations
    take at other sizes) and where each label's size is read; None when the plan's program
    needs a planned size."""
    _, plan = class_decisions(equation, cls, dtypes, dtype, opt_key, options)
    spec = plan.spec
    found: dict[int, tuple[int, int]] = {}
    for op, term in enumerate(spec.inputs):
        for ax, label in enumerate(term):
            if ax not in spec.stretched[op]:
                found.setdefault(label, (op, ax))
    if len(found) != len(spec.sizes):  # a label only under a stretched axis: size 1
        return None
    where = tuple(found[label] for label in range(len(spec.sizes)))
    program = compile_generic(plan, where)
    return None if program is None else (program, plan, where)


Same = tuple[tuple[int, int, int, int], ...]
"""``(op, ax, op2, ax2)``: axes that must have one size (a label's other axes, against the
one its size is read from)."""

Found = tuple[Program, Plan, Where, tuple[tuple[tuple[int, ...], int], ...], bool, Same]
"""A class's size-free program, its plan, where each label's size is read (operand, axis),
each allocation's labels and item size, whether there are several (then the peak is
walked), and the axes whose sizes must agree (a shape class rounds sizes: (4, 5) and
(4, 4) are one class, and only one of them fits ``ij,jk``)."""

_CLASS_PROGRAMS: dict[Any, Found] = {}
"""Size-free programs by (equation key, class key, dtype, optimize, options): the class
named by :func:`.skeleton.c_order_class` (representative shapes and dtypes, for C-ordered
operands) or :func:`.skeleton.dense_class` (also each operand's pattern), without binding
the equation or building the :class:`.skeleton.ShapeClass` (measured on strided views:
46 -> 22 µs)."""
_CLASS_PROGRAMS_SIZE = 1024
_LOOKED: dict[Any, int] = {}
"""The keys of :data:`_CLASS_PROGRAMS` that calls have looked up, and how many times: a
class's first :data:`DIRECT_LOOKS` calls may run without planning it
(:func:`generic_entry`'s ``first_call``)."""
DIRECT_LOOKS = 2
"""The looks of a class that run directly (where the direct way runs them) before the next
plans the class: a user whose every size varies meets most classes once or twice (measured,
1,200 distinct random shapes, every label 2-24, mean a call: `ab,bc,cd->ad` 180-186 ->
120-124 us with two looks (101 with three); the ring `ab,bc,cd,de,ea->` 276-289 ->
205-216 (185)), while the cold benchmark's growing label meets each class 3-16 times, whose
median stays the class program's with two (the tiny chain's 18.3 -> 19.8 us, einstride
alone; 26.7 with three)."""

Level = Literal["known", "decided", "direct", "none"]
"""What answered a plan-cache miss (:func:`generic_entry`): a known class's program
("known"), this look's planning of the class ("decided"), the class's first call's entry
("direct"), or nothing ("none")."""


def generic_entry(
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: np.dtype[Any] | None,
    optimize: Any,
    options: PlannerOptions,
    first_call: Callable[[bool], Entry | None] | None = None,
) -> tuple[Entry | None, Level]:
    """The entry of these operands (``facts`` as :func:`.cache.facts_of`) from their
    class's size-free program (None without one), and what answered.  (A first call on a
    new shape: kept to a few dictionary looks.)  Where no call has looked the class up
    before, or fewer than :data:`DIRECT_LOOKS` times (or its path is searched at each
    shape's real sizes: every new shape is a first call), ``first_call(False)`` gives the
    entry if it can (the path run directly: the look after plans the class); at a later
    look of a class not planned yet, ``first_call(True)`` gives it only for a tiny problem
    (one loop over every operand, cheaper than planning the class: a class of tiny problems
    is planned by a larger shape of it, or by a repeated shape's own plan).  It is not asked
    for NumPy's one loop (``optimize=False``)."""
    if unoptimized(optimize):
        return None, "none"
    if not path_fits_any_size(optimize, len(facts) // 3):
        direct = None if first_call is None else first_call(False)
        return direct, "none" if direct is None else "direct"
    opt_key = optimize if type(optimize) is str else optimize_key(optimize)
    if opt_key is None:
        return None, "none"
    reps = c_order_class(facts)
    if reps is None:
        reps = dense_class(facts)
    key = None if reps is None else (eq_key, reps, dtype, opt_key, options)
    found = None if key is None else _CLASS_PROGRAMS.get(key)
    if found is not None:
        return _generic(found, eq_key, facts, dtype, optimize, options, True)
    if first_call is not None and key is not None:
        direct = first_call(not _direct_look(key))
        if direct is not None:
            return direct, "direct"
    misses = class_decisions.cache_info().misses
    found = _class_found(eq_key, facts, dtype, opt_key, options)
    reused = class_decisions.cache_info().misses == misses
    if found is None:
        return None, "none" if reused else "decided"
    if key is not None:
        if len(_CLASS_PROGRAMS) >= _CLASS_PROGRAMS_SIZE:
            _CLASS_PROGRAMS.clear()
        _CLASS_PROGRAMS[key] = found
    return _generic(found, eq_key, facts, dtype, optimize, options, reused)


def _direct_look(key: Any) -> bool:
    """Whether calls have looked the class of ``key`` up fewer than :data:`DIRECT_LOOKS`
    times before (this look is counted now)."""
    looks = _LOOKED.get(key, 0)
    if looks >= DIRECT_LOOKS:
        return False
    if len(_LOOKED) >= _CLASS_PROGRAMS_SIZE:
        _LOOKED.clear()
    _LOOKED[key] = looks + 1  # (threads may lose a count: one more direct look)
    return True


def _generic(
    found: Found,
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: np.dtype[Any] | None,
    optimize: Any,
    options: PlannerOptions,
    reused: bool,
) -> tuple[Entry | None, Level]:
    """The shape-generic entry of these operands from their class's ``found`` program
    (None where their sizes do not fit the equation), its bounds at their sizes."""
    program, plan, where, allocs, several, same = found
    for op, ax, op2, ax2 in same:
        if facts[3 * op][ax] != facts[3 * op2][ax2]:
            return None, "none"  # the planned way binds the shapes and says what is wrong
    largest = peak = 0
    if allocs:
        sizes = [facts[3 * op][ax] for op, ax in where]
        for labels, itemsize in allocs:
            n = itemsize
            for label in labels:
                n *= sizes[label]
            largest = max(largest, n)
        peak = plan_peak(plan, sizes) if several else largest
    make = functools.partial(plan_of, eq_key, facts, dtype, optimize, options, reused)
    return Entry.shape_generic(program, largest, peak, make), "known" if reused else "decided"


def plan_of(
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: np.dtype[Any] | None,
    optimize: Any,
    options: PlannerOptions,
    reused: bool | None,
) -> Plan:
    """The plan of a shape-generic (or direct) entry, built when asked for: the class's
    decisions replayed with these sizes (``reused``: as they were when the entry was
    made; None: as the class cache answers now, for a direct entry, whose run decided
    nothing of its class)."""
    shapes, strides, dtypes = facts[0::3], facts[1::3], facts[2::3]
    spec = bind(equation_of(eq_key), shapes)
    plan = build_plan(spec, dtypes, strides, dtype=dtype, optimize=optimize, options=options)
    return plan if reused is None else replace(plan, reused=reused)


def _class_found(
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: np.dtype[Any] | None,
    opt_key: Any,
    options: PlannerOptions,
) -> Found | None:
    """The class's size-free program (with its plan and where each label's size is read),
    or None when it has none."""
    shapes, strides, dtypes = facts[0::3], facts[1::3], facts[2::3]
    spec = bind(equation_of(eq_key), shapes)
    cls = shape_class(shapes, strides, dtypes)
    if cls is None:
        return None
    found = class_program(spec.equation, cls, dtypes, dtype, opt_key, options)
    if found is None:
        return None
    program, plan, where = found
    allocs = [alloc for _, alloc in plan.allocations()]
    return (
        program,
        plan,
        where,
        tuple((alloc.labels, alloc.dtype.itemsize) for alloc in allocs),
        len(allocs) > 1,
        _same_sizes(plan.spec, where),
    )


def _same_sizes(spec: EinsumSpec, where: Where) -> Same:
    """Every axis of a label but the one its size is read from, paired with that one
    (stretched ``...`` axes have size 1 in every shape of the class: none)."""
    return tuple(
        (op, ax, *where[label])
        for op, term in enumerate(spec.inputs)
        for ax, label in enumerate(term)
        if ax not in spec.stretched[op] and where[label] != (op, ax)
    )


def clear_generic() -> None:
    """Forget the shape-generic programs."""
    class_program.cache_clear()
    _CLASS_PROGRAMS.clear()
    _LOOKED.clear()
