"""The first call of a tensor network: its path's products run directly, no step planned.

Planning a network's steps (each product's layout, copies and output way under the cost
model, :mod:`.pairs`) costs about half a millisecond a step, far more than most of a
network's products take: a fresh 200-tensor circuit spent 130 ms planning for 2 ms of
arithmetic.  On a plan-cache miss, a network of :data:`~.skeleton.NETWORK_OPERANDS` operands
or more therefore runs its path at once, each product the way ``tensordot`` does it (sum
the labels no one else needs, transpose, reshape -- a view where the layout allows (one
that ``matmul`` loops over where an operand's free labels lie on both sides of the shared
ones), else a copy, written in whichever of the product's orders NumPy copies fastest when
it is large -- and one ``matmul``); the plan is built, and compiled, when the same shapes come
again often enough that the direct runs have taken as long as planning would
(:meth:`.generic.Entry.tiered`: then the faster of the plan's program and the direct one,
as a race of a few calls finds).  Where einstride's own search chose the path, the calls'
seconds also pay for longer searches of it (:class:`LongerSearch`).

Only what the direct way does exactly as the plan would is run so: one dtype that BLAS
multiplies, no repeated label in a term or the output, no broadcast ``...`` axis, no
``out=``, pairwise steps, no operand broadcast by a stride of 0 (its axes are read once:
the call within is planned), not under ``np.errstate(...="raise")``.  So is the first
call of a shape class of fewer operands (:func:`first_call_entry`: its products within
:data:`FIRST_CALL_WORK`, a small problem as one ``numpy.einsum`` loop), and its second,
whose class the third look plans (unless that call is tiny: one loop again,
:data:`LOOP_ELEMENTS`); the torch backend runs the
same steps with torch operations (:func:`first_call_steps`).  The peak bytes (for the
memory guard) count every intermediate alive at once and every copy a step may make, so
they bound the direct run's.

>>> import numpy as np
>>> ops = [np.full((2, 3), 0.5), np.ones((3, 2))] * 4
>>> eq = "ab,bc,cd,de,ef,fg,gh,hi->ai"
>>> facts = tuple(x for a in ops for x in (a.shape, a.strides, a.dtype))
>>> run = direct_program(eq, facts, None, "auto")
>>> run is not None and np.allclose(run[0](ops, None), np.einsum(eq, *ops))
True
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from ....memory import MAX_NDARRAY_RANK
from ...call import equation_of
from ...forksafe import lock
from ...spec.costmodel import Problem, as_float
from ...spec.equation import EinsumSpec, bind
from ...spec.paths import (
    FoundPath,
    check_optimize,
    finder_form,
    given_path,
    path_fits_any_size,
    unoptimized,
)
from ...spec.search import (
    MAX_BUDGET_S,
    adopt_longer,
    cheapest_finder_s,
    longer_generation,
    search_path,
)
from ...spec.walk import path_choice_of, plan_path, search_problem
from .execute import (
    EINSUM_LETTERS,
    PACK_MAX_BYTES,
    Program,
    errors_raise,
    numpy_equation,
    packed_copy,
    sum_of_products,
)
from .fold import BLAS_TYPES
from .generic import LIMITED_RUNNERS, PROMOTE_AT, Entry, plan_of
from .options import PlannerOptions
from .skeleton import NETWORK_OPERANDS, broadcasts, c_order_class, dense_class
from .steps import Plan

__all__ = [
    "DIRECT_NOTE",
    "FIRST_CALL_NOTE",
    "FIRST_CALL_WORK",
    "FIRST_LOOP_BYTES",
    "LOOP_ELEMENTS",
    "LOOP_MIN_RUN",
    "PLANNING_S_PER_STEP",
    "RENEW_GAIN",
    "RENEW_SHARE",
    "LongerSearch",
    "LoopProduct",
    "Product",
    "Step",
    "direct_entry",
    "direct_program",
    "first_call_entry",
    "first_call_program",
    "first_call_steps",
    "products",
    "tiny_equation",
    "walk_steps",
    "with_direct_note",
]

Labels = tuple[int, ...]


class Product(NamedTuple):
    """One step: registers ``a`` and ``b`` (``b`` -1: a sum of ``a`` alone), each summed
    over its ``sum_*`` axes, transposed by ``perm_*`` and reshaped to ``shape_*`` (swapping
    the last two axes of a ``swap_*`` one: a transposed matrix BLAS takes as it is), one
    ``matmul``, reshaped to ``shape``; the result goes to the end of the register list.
    Large products run so too: on plans of their own (as until 2026-12-03) the two of the
    benchmark's networks that had one took longer (random-20 of degree 4: 8.3e8
    multiply-adds 25.7 against 22.7 ms, and the next product 10.8 against 6.4 ms, as the
    plan's result, a transposed view of a ``b @ a``, was copied again), and batched
    products ran no faster (16,384 16 x 16 matmuls: 17.1 against 15.2 ms)."""

    a: int
    b: int
    sum_a: tuple[int, ...]
    sum_b: tuple[int, ...]
    perm_a: tuple[int, ...]
    perm_b: tuple[int, ...]
    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    swap_a: bool
    swap_b: bool
    shape: tuple[int, ...]


class LoopProduct(NamedTuple):
    """One small step: registers ``a`` and ``b`` (``b`` -1: a sum of ``a`` alone) in one
    ``numpy.einsum`` call (``subscripts``, local letters), its result C-ordered.  For a
    product whose loop has at most :data:`LOOP_ELEMENTS` elements, NumPy's loop is as fast
    as the transposes, reshapes and ``matmul`` of a :class:`Product`, and building it is
    one string instead of a layout analysis (a network's first call builds every step)."""

    a: int
    b: int
    subscripts: str


Step = Product | LoopProduct

PLANNING_S_PER_STEP = 0.6e-3  # planning a network's step (measured: 0.5-0.8 ms)
# measured, float64, contracting two of five axes of 2-8: einsum 8-17 µs against
# tensordot's 16-18 µs up to 2,560 elements, 53 against 22 µs at 18,144; the step's build
# is ~25 µs cheaper
LOOP_ELEMENTS = 4096
# a larger product that sums nothing is a loop where its innermost run holds this many
# elements or more (measured, 2**20 elements, float64: runs of 2 and 3 1.3-1.4x a matmul's
# time, of 4 1.0x, of 8 and more 0.35-0.75x)
LOOP_MIN_RUN = 4
FIRST_LOOP_BYTES = 2**21
"""A class's first call runs as one ``numpy.einsum`` loop over every operand where its index
combinations times the square of its operand count times its item size are at most this
(65,536 combinations of two float64 operands, 29,127 of three, 16,384 of four, 10,485 of
five; never fewer than :data:`LOOP_ELEMENTS`): the loop then costs less than the path's
steps (their search and layouts, 25-60 µs of Python a step, and their calls), and the
loop's cost per combination grows with its operands.  Measured, first calls, loop against
steps: random equations of two float64 operands 0.5-0.93x at 16k-65k combinations (past
it 0.78-1.16x), of three 0.43-0.98x at 16k-65k, of four 0.64-1.02x; chains and rings
of matrices, at 16k-32k combinations: three 0.51x, four 0.71x and 0.86x, five (a ring)
1.19x (0.76x at 8k-16k); two float32 operands 0.71-1.04x at 65k-131k, two complex128
0.93-1.04x at 16k-65k."""
MAX_RANK = MAX_NDARRAY_RANK  # NumPy's most dimensions (32 before NumPy 2)


def direct_program(
    eq_key: Any, facts: tuple[Any, ...], dtype: Any, optimize: Any
) -> tuple[Program, int, int, list[tuple[int, ...]]] | None:
    """``(run, largest, peak, path)`` of the direct way for these operands (``facts`` as
    :func:`.cache.facts_of`), or None when the call is not a network it runs exactly."""
    network = _network(eq_key, facts, dtype)
    if network is None:
        return None
    spec, itemsize = network
    path = given_path(optimize, len(spec.inputs)) or plan_path(spec, optimize)
    built = _built(spec, path, itemsize)
    return None if built is None else (*built, FoundPath(path, finder_form(optimize)))


FIRST_CALL_WORK = 2**20
"""A shape class's first call runs directly (:func:`first_call_entry`) where its products
loop over at most this many index combinations in all (well under a millisecond): past
that, what a plan adds (threads, a fused loop, cheaper copies) may save more than its
planning costs (0.3-1.8 ms)."""


def first_call_entry(
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: Any,
    optimize: Any,
    options: PlannerOptions,
    ran: Callable[[], None] | None = None,
    loop_only: bool = False,
) -> Entry | None:
    """The entry of the first call of a shape class of fewer operands than a network: its
    path run directly once, or one loop over every operand for a tiny problem (a class's
    first call would plan the class: 0.3-1.8 ms, where the direct way takes 0.03-0.5 ms);
    the plan from the next call on (a tiny problem's loop, what its plan fuses to, until
    the shape's :data:`~.generic.PROMOTE_AT`-th call; :meth:`.generic.Entry.direct_first`;
    ``ran`` is called when the direct way has run).  None where the
    direct way does not run the call exactly, NumPy's one loop is asked for
    (``optimize=False``), floating-point errors raise, or the work is over
    :data:`FIRST_CALL_WORK`; with ``loop_only`` (a later look of a class not planned
    yet), None unless the problem is tiny: its one loop costs less than planning the
    class would, at every new shape.

    >>> ops = [np.ones((30, 40)), np.ones((40, 50)), np.ones((50, 2))]
    >>> from einstride.engine.backends.numpy.options import DEFAULT
    >>> facts = tuple(x for a in ops for x in (a.shape, a.strides, a.dtype))
    >>> entry = first_call_entry("ab,bc,cd->ad", facts, None, "auto", DEFAULT.options)
    >>> entry.run(ops, None)[0], entry.planned   # the first call: the path, no plan
    (array([2000., 2000.]), False)
    >>> entry.run(ops, None)[0], entry.planned   # the next: the plan
    (array([2000., 2000.]), True)
    """
    if errors_raise():
        return None
    found = _first_call_found(eq_key, facts, dtype, optimize, loop_only)
    if found is None:
        return None
    run, largest, peak, tiny = found
    make = functools.partial(plan_of, eq_key, facts, dtype, optimize, options, None)
    limited = _limited_runner(eq_key, dtype, optimize)
    # a tiny problem's loop is what its plan fuses to: the shape builds its plan only when
    # it keeps coming back (PROMOTE_AT, as a known class's new shape does; planning it,
    # its class too, costs 0.4-1 ms)
    runs = PROMOTE_AT - 1 if tiny else 1
    return Entry.direct_first(run, largest, peak, make, ran, runs, limited)


def _may_be_first_call(facts: tuple[Any, ...], optimize: Any) -> bool:
    """Whether a call of these operands, with no broadcast operand and no floating-point
    error raising (:func:`with_direct_note` returns before), may be a class's first call,
    as the cache asks it (:func:`.cache.make_entry`, :func:`.generic.generic_entry`): a
    shape class to look up where the path is decided for the class."""
    if not path_fits_any_size(optimize, len(facts) // 3):
        return True  # (every new shape is a first call)
    return c_order_class(facts) is not None or dense_class(facts) is not None


def first_call_program(
    eq_key: Any, facts: tuple[Any, ...], dtype: Any, optimize: Any, loop_only: bool = False
) -> tuple[Program, int, int] | None:
    """``(run, largest, peak)`` of the direct way of a first call of two operands or more
    (:func:`first_call_entry`; ``loop_only``: only one loop over every operand), or None."""
    found = _first_call_found(eq_key, facts, dtype, optimize, loop_only)
    return None if found is None else found[:3]


def _first_call_found(
    eq_key: Any, facts: tuple[Any, ...], dtype: Any, optimize: Any, loop_only: bool
) -> tuple[Program, int, int, bool] | None:
    """:func:`first_call_program`'s answer, and whether it is a tiny problem's one loop (at
    most :data:`LOOP_ELEMENTS` combinations)."""
    network = _first_call_network(eq_key, facts, dtype, optimize)
    if network is None:
        return None
    spec, itemsize = network
    if given_path(optimize, len(spec.inputs)) is None:
        whole = _whole_loop(spec, itemsize, LOOP_ELEMENTS if loop_only else None)
        if whole is not None:
            check_optimize(optimize)  # (no path searched: a bad value is still an error)
            return (*whole, math.prod(spec.sizes) <= LOOP_ELEMENTS)
    if loop_only:
        return None
    found = _first_call_steps(spec, itemsize, optimize)
    if found is None:
        return None
    return _runner(found[0], found[1]), found[2], found[3], False


def first_call_steps(
    eq_key: Any, facts: tuple[Any, ...], dtype: Any, optimize: Any
) -> tuple[list[Step], tuple[int, ...], int, int] | None:
    """The steps of :func:`first_call_program`'s path (never one loop over every operand),
    the final transpose, the largest allocation and the peak; None as there (another
    backend runs them with its own operations: the torch backend's first calls)."""
    network = _first_call_network(eq_key, facts, dtype, optimize)
    return None if network is None else _first_call_steps(*network, optimize)


def tiny_equation(eq_key: Any, facts: tuple[Any, ...], most: int = LOOP_ELEMENTS) -> str | None:
    """The letters of one loop over every operand (``numpy.einsum``'s, ``torch.einsum``'s)
    for a call of two operands or more that the direct way runs exactly and that loops over
    at most ``most`` index combinations in all (and :data:`FIRST_CALL_WORK`: none where
    first calls are planned), else None: where its class is
    not planned yet, planning it (0.4-1 ms) costs more than running each new shape so (the
    torch backend's first calls ask it; :func:`first_call_entry`'s ``loop_only`` is
    NumPy's).

    >>> f8 = np.dtype(np.float64)
    >>> tiny_equation("xy,yz->xz", ((4, 5), (40, 8), f8, (5, 6), (48, 8), f8))
    'ab,bc->ac'
    >>> tiny_equation("xy,yz->xz", ((40, 50), (400, 8), f8, (50, 6), (48, 8), f8)) is None
    True
    """
    network = _network(eq_key, facts, None, least=2)
    if network is None or math.prod(network[0].sizes) > min(most, FIRST_CALL_WORK):
        return None
    return numpy_equation(network[0].inputs, network[0].output)


def _first_call_network(
    eq_key: Any, facts: tuple[Any, ...], dtype: Any, optimize: Any
) -> tuple[EinsumSpec, int] | None:
    return None if unoptimized(optimize) else _network(eq_key, facts, dtype, least=2)


def _first_call_steps(
    spec: EinsumSpec, itemsize: int, optimize: Any
) -> tuple[list[Step], tuple[int, ...], int, int] | None:
    """The path's steps within :data:`FIRST_CALL_WORK` and NumPy's axes, else None."""
    path = given_path(optimize, len(spec.inputs)) or plan_path(spec, optimize)
    found = _pairwise_steps(spec, path, itemsize)
    if found is None or found[4] > FIRST_CALL_WORK:
        return None
    return found[:4]


def _whole_loop(
    spec: EinsumSpec, itemsize: int, most: int | None = None
) -> tuple[Program, int, int] | None:
    """One ``numpy.einsum`` loop over all the operands where it has at most ``most`` index
    combinations (by default those of :data:`FIRST_LOOP_BYTES`: no path searched, no
    product built; :data:`LOOP_ELEMENTS` where the loop stands in for a plan: as fast as
    a product's own loop there, and what a plan of so small a problem fuses to), else
    None."""
    if most is None:
        most = max(LOOP_ELEMENTS, FIRST_LOOP_BYTES // (itemsize * len(spec.inputs) ** 2))
    if math.prod(spec.sizes) > most:
        return None
    letters = numpy_equation(spec.inputs, spec.output)
    if letters is None:
        return None

    def run(operands: Sequence[Any], out: Any) -> Any:
        result = sum_of_products(letters, *operands, order="C")
        return result[()] if result.ndim == 0 else result

    nbytes = itemsize * math.prod(spec.output_shape)
    return run, nbytes, nbytes


def _network(
    eq_key: Any, facts: tuple[Any, ...], dtype: Any, least: int = NETWORK_OPERANDS
) -> tuple[EinsumSpec, int] | None:
    """The bound equation and the item size of a call of ``least`` operands or more (a
    network, by default) that the direct way runs exactly."""
    n = len(facts) // 3
    dtypes = set(facts[2::3])
    if n < least or len(dtypes) != 1 or (dtype is not None and dtype not in dtypes):
        return None
    (item,) = dtypes
    if item not in BLAS_TYPES:
        return None
    spec = bind(equation_of(eq_key), facts[0::3])
    if any(spec.stretched) or not _distinct(spec):
        return None
    return spec, item.itemsize


def _built(
    spec: EinsumSpec, path: Sequence[Sequence[int]], itemsize: int
) -> tuple[Program, int, int] | None:
    """``(run, largest, peak)`` of ``path``'s direct program, None for a path the direct
    way does not run (a step of more than two operands, or of more axes than NumPy's)."""
    found = _pairwise_steps(spec, path, itemsize)
    if found is None:
        return None
    steps, output, largest, peak, _ = found
    return _runner(steps, output), largest, peak


def _pairwise_steps(
    spec: EinsumSpec, path: Sequence[Sequence[int]], itemsize: int
) -> tuple[list[Step], tuple[int, ...], int, int, int] | None:
    """:func:`products` of ``path``, or None where the direct way does not run it: a step
    of more than two operands, or a product of more axes than NumPy holds (the planner
    names that step)."""
    if any(len(step) > 2 for step in path):
        return None
    found = products(spec, path, itemsize)
    if max((len(s.shape) for s in found[0] if isinstance(s, Product)), default=0) > MAX_RANK:
        return None
    return found


DIRECT_NOTE = (
    "network: the first call of these shapes runs its path directly, each product as "
    "tensordot does it (no plan); the plan below runs once repeated calls have taken as "
    "long as planning would, if it is the faster of the two over six calls"
)


FIRST_CALL_NOTE = (
    "first call: the first two calls of a shape class (with a finder asked at the real "
    "sizes, every new shape's first call) run their path directly, each product as "
    "tensordot does it (a small problem: one numpy.einsum loop, as is each new shape of a "
    "tiny problem's class not planned yet; no plan; its result C-ordered, its sums maybe "
    "rounded otherwise); the plan below runs from the next call on (a tiny problem's: from "
    "the shape's eighth, generic.PROMOTE_AT). An explain counts as one of those calls and "
    "plans its own shapes: a call of these shapes after it runs the plan below"
)


def with_direct_note(
    report: str,
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: Any,
    optimize: Any,
    limit: int,
    first_calls: bool = True,
) -> str:
    """``report`` (a plan report) with :data:`DIRECT_NOTE` (a network) or
    :data:`FIRST_CALL_NOTE` (fewer operands, where ``first_calls``: einsum's own call,
    not a lane's or an expression's) under its first line when the first call of operands
    of these ``facts`` runs directly (:func:`direct_program`, :func:`first_call_program`;
    the direct way's peak within ``limit`` bytes; not under ``np.errstate(...="raise")``
    nor for a broadcast (stride-0) operand).

    >>> ops = [np.ones((2, 2))] * 8
    >>> facts = tuple(x for a in ops for x in (a.shape, a.strides, a.dtype))
    >>> eq = "ab,bc,cd,de,ef,fg,gh,hi->ai"
    >>> print(with_direct_note("head\\nrest", eq, facts, None, "auto", 2**30)[:65])
    head
      network: the first call of these shapes runs its path dire
    >>> with_direct_note("head\\nrest", eq, facts, None, "auto", 0)  # over the limit
    'head\\nrest'
    >>> three = with_direct_note("head\\nrest", "ab,bc,cd->ad", facts[:9], None, "auto", 2**30)
    >>> print(three[:50])
    head
      first call: the first two calls of a shape
    """
    # planned: a call under raise (direct_entry, first_call_entry), and one whose broadcast
    # operand is read once (cache._unplanned: its inner call is planned)
    if errors_raise() or broadcasts(facts):
        return report
    note = DIRECT_NOTE
    found: tuple[Any, ...] | None = direct_program(eq_key, facts, dtype, optimize)
    fewer = first_calls and 6 <= len(facts) < 3 * NETWORK_OPERANDS
    if found is None and fewer and _may_be_first_call(facts, optimize):
        note, found = FIRST_CALL_NOTE, first_call_program(eq_key, facts, dtype, optimize)
    if found is None or found[2] > limit:
        return report
    head, _, rest = report.partition("\n")
    # the direct way's own peak: it may hold twice the plan's (a review: only the plan's
    # was printed, 52 MB for a first call that held 101 MB)
    peak = (
        f"    the direct way: largest allocation {found[1]:,} B, peak {found[2]:,} B (the "
        "figures below are the plan's)"
    )
    return f"{head}\n  {note}:\n{peak}\n{rest}"


def direct_entry(
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: Any,
    optimize: Any,
    options: PlannerOptions,
) -> Entry | None:
    """The entry of a network's shapes: it runs :func:`direct_program` until those runs
    have taken as long as planning would (:meth:`.generic.Entry.tiered`); its plan (for
    ``explain``, the memory-limited paths and the warm path) is built on the path the
    direct runs take, when first asked for.  Where einstride's own search chose the path
    (``optimize="auto"``), the calls' seconds pay for longer searches
    (:class:`LongerSearch`).  None under ``np.errstate(...="raise")``: the call is planned
    (the direct program's small products are NumPy's loop, which raises no floating-point
    error; the entry runs its plan at every call under ``raise``, :meth:`.Entry.tiered`)."""
    if errors_raise():
        return None
    found = direct_program(eq_key, facts, dtype, optimize)
    if found is None:
        return None
    run, largest, peak, path = found
    renewal = None
    if optimize is None or (isinstance(optimize, str) and optimize == "auto"):
        renewal = LongerSearch(eq_key, facts, dtype, options, path, peak)
    make, planning_s = _planned_later(eq_key, facts, dtype, path, options)
    limited = _limited_runner(eq_key, dtype, optimize)
    return Entry.tiered(run, largest, peak, make, planning_s, renewal, limited)


def _limited_runner(
    eq_key: Any, dtype: Any, optimize: Any
) -> Callable[[Sequence[Any], Any, int], Any]:
    """What runs a call of this equation past a memory limit for an entry that may run
    its plan over the bounds its caller checked (:meth:`.generic.Entry.direct_first`,
    :meth:`.generic.Entry.tiered`): ``limited.run_limited``, through
    :data:`.generic.LIMITED_RUNNERS` (:mod:`.limited` imports this module)."""

    def limited(operands: Sequence[Any], out: Any, limit: int) -> Any:
        return LIMITED_RUNNERS[0](eq_key, operands, out, dtype, optimize, limit)

    return limited


def _planned_later(
    eq_key: Any,
    facts: tuple[Any, ...],
    dtype: Any,
    path: Sequence[Sequence[int]],
    options: PlannerOptions,
) -> tuple[Callable[[], Plan], float]:
    """What builds the plan of ``path``'s direct way when its runs have paid for it, and
    its estimated cost (:meth:`.generic.Entry.tiered`)."""
    make = functools.partial(plan_of, eq_key, facts, dtype, path, options, None)
    return make, PLANNING_S_PER_STEP * len(path)


RENEW_SHARE = 0.05
"""The share of the seconds a network's repeated calls contracted that pays, in advance,
for longer searches of its path (:class:`LongerSearch`): over many calls they take about
5% of the time (a search's own time counts where it ran past its budget, so one that
overran delays the next; the overrun itself falls in one call)."""
RENEW_GAIN = 0.9
"""A longer search's path is taken when the cost model rates it at most this share of the
current path's cost (and its peak is no higher): smaller gains are within the model's error."""


class LongerSearch:
    """Longer searches of a network's path while its shapes repeat (a
    :class:`.generic.Renewal`): the first call's search had a budget of a share of the
    estimated contraction (:func:`.search.search_budget`), right for a call made once, too
    little for shapes contracted a thousand times.  Each search is paid for in advance by
    :data:`RENEW_SHARE` of the seconds the calls contracted, and has twice the budget of
    the one before (the first, twice the first call's search), up to
    :data:`~.search.MAX_BUDGET_S`: then they end.  A search runs inside the call that paid
    for it (one thread at a time; another that finds it running goes on), with a seed of
    its own (deterministic).  A path that the cost model rates at :data:`RENEW_GAIN` of the
    current one's or less, with a peak no higher than the first path's and the entry's
    bound, replaces it: the entry starts over on its direct program (then its plan, raced
    as before), and every later default search of the problem returns it (``explain`` too:
    its finder says so) until ``einstride.clear_plan_cache()``.  Nothing is computed before
    the first search is due: a first call pays for nothing."""

    def __init__(
        self,
        eq_key: Any,
        facts: tuple[Any, ...],
        dtype: Any,
        options: PlannerOptions,
        path: Sequence[Sequence[int]],
        peak: int,
    ) -> None:
        self._key, self._facts, self._dtype, self._options = eq_key, facts, dtype, options
        self.path, self.peak = [tuple(step) for step in path], peak
        self.cost_ns = -1.0  # the current path's estimate, rated at the first search
        self.budget_s = 2 * cheapest_finder_s(len(facts) // 3)  # the next search's
        self.spent_s = 0.0  # the searches' budgets so far (their time, where longer)
        self.searches = 0
        self.finished = False
        self._lock = lock()
        self._since = longer_generation()  # a clear_plan_cache after it: adopt nothing

    def due(self, contracted_s: float) -> bool:
        """Whether the calls have paid for the next search."""
        budget = min(self.budget_s, MAX_BUDGET_S)
        return not self.finished and RENEW_SHARE * contracted_s >= self.spent_s + budget

    def renew(
        self, contracted_s: float, peak: int
    ) -> tuple[Program, int, int, Callable[[], Plan], float] | None:
        """Run the next search (unless another thread is running one, or it is not paid
        for); the direct program of a better path whose peak is at most ``peak`` (the
        entry's now) and the first path's, or None."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if not self.due(contracted_s):  # (another thread's search came first)
                return None
            self.peak = min(self.peak, peak)
            return self._search(contracted_s)
        finally:
            self._lock.release()

    def _search(
        self, contracted_s: float
    ) -> tuple[Program, int, int, Callable[[], Plan], float] | None:
        network = _network(self._key, self._facts, self._dtype)
        assert network is not None  # the entry was built from it
        spec, itemsize = network
        terms, output = search_problem(spec)
        if self.cost_ns < 0:  # the first time: rate the path, double its search's budget
            first = path_choice_of(spec, self.path)
            if first is None:  # (forgotten: the recent choices are bounded)
                self.cost_ns = Problem(terms, output, spec.sizes).cost(self.path)[0]
            else:
                self.cost_ns = first.cost_ns
                self.budget_s = max(self.budget_s, 2 * first.budget_s)
            if not self.due(contracted_s):
                return None
        budget = min(self.budget_s, MAX_BUDGET_S)
        self.searches += 1
        start = time.perf_counter()
        choice = search_path(terms, output, spec.sizes, seed=self.searches, budget_s=budget)
        # its time, where it ran past its budget (the finders' costs are estimates: dp on
        # a dense network takes 5-30x): the next search waits until that is paid for too
        self.spent_s += max(budget, time.perf_counter() - start)
        self.budget_s = 2 * budget
        self.finished = budget >= MAX_BUDGET_S
        if choice.cost_ns > RENEW_GAIN * self.cost_ns:
            return None
        built = _built(spec, choice.path, itemsize)
        if built is None or built[2] > self.peak:
            return None
        self.path = FoundPath(choice.path, "auto")  # (adopted as the default search's)
        self.cost_ns, self.peak = choice.cost_ns, built[2]
        finder = f"{choice.finder} (search {self.searches} while the shapes repeated)"
        adopt_longer(terms, output, spec.sizes, replace(choice, finder=finder), self._since)
        later = _planned_later(self._key, self._facts, self._dtype, self.path, self._options)
        return (*built, *later)


def _distinct(spec: EinsumSpec) -> bool:
    terms = (*spec.inputs, spec.output)
    return all(len(set(term)) == len(term) for term in terms)


def products(
    spec: EinsumSpec, path: Sequence[Sequence[int]], itemsize: int
) -> tuple[list[Step], tuple[int, ...], int, int, int]:
    """The steps, the final transpose to the output's order, the largest allocation, the
    peak bytes (intermediates alive, plus every copy a step may make) and the work: the
    index combinations of every step's loop (its labels' sizes multiplied), added up."""
    terms: list[Labels] = list(spec.inputs)
    regs: list[int] = list(range(len(terms)))  # the register of each live operand
    count: dict[int, int] = {}
    for term in (*terms, spec.output):
        for x in term:
            count[x] = count.get(x, 0) + 1
    sizes = spec.sizes
    nbytes = [0] * len(terms)  # intermediates only: the operands are the caller's
    alive = largest = peak = work = 0
    steps: list[Step] = []
    out_at = {x: i for i, x in enumerate(spec.output)}
    for contraction in path:
        taken = [(terms.pop(i), regs.pop(i)) for i in sorted(contraction, reverse=True)]
        for term, _ in taken:
            for x in term:
                count[x] -= 1
        step, labels, temps = _product(taken, count, sizes, out_at)
        work += _elements(set(taken[0][0]).union(*[term for term, _ in taken[1:]]), sizes)
        size = itemsize * _elements(labels, sizes)
        largest = max(largest, size, itemsize * max(temps))
        peak = max(peak, alive + size + itemsize * sum(temps))
        for _, r in taken:
            alive -= nbytes[r]
        alive += size
        for x in labels:
            count[x] += 1
        terms.append(labels)
        regs.append(len(nbytes))
        nbytes.append(size)
        steps.append(step)
    (last,) = terms
    output = tuple([last.index(x) for x in spec.output])
    if output != tuple(range(len(output))):  # the result is copied into the output's order
        peak = max(peak, alive + nbytes[regs[0]])
    return steps, output, largest, peak, work


def _product(
    taken: list[tuple[Labels, int]],
    count: dict[int, int],
    sizes: Sequence[int],
    out_at: dict[int, int],
) -> tuple[Step, Labels, list[int]]:
    """One step's product, its result's labels and the elements of every temporary it may
    make (sums and copies); ``out_at``: each output label's position (see
    :func:`_loop_product`).  (Loops rather than a comprehension per list: a
    network's first call builds every step, and in CPython 3.11 each comprehension is a
    call.)"""
    (la, ra), (lb, rb) = taken if len(taken) == 2 else (taken[0], ((), -1))
    small = _loop_product(la, ra, lb, rb, count, sizes, out_at)
    if small is not None:
        return small
    sa, sb = set(la), set(lb)
    kept_a, free_a, sum_a, n_a = _split(la, sb, count, sizes)
    kept_b, free_b, sum_b, n_b = _split(lb, sa, count, sizes)
    # the shared labels in the order of an operand that is then a view (the larger one)
    view_a, view_b = _views(kept_a, free_a, count), _views(kept_b, free_b, count)
    if not (view_a if n_a >= n_b else view_b):
        looped = _looped_view(taken, (kept_a, free_a, sum_a, n_a), (kept_b, free_b, sum_b, n_b),
                              count, sizes)  # fmt: skip
        if looped is not None:
            return looped
    lead = kept_a if (view_a, n_a) >= (view_b, n_b) else kept_b
    swap_a = swap_b = False
    chosen = None
    if not (view_a and view_b) and max(n_a * (not view_a), n_b * (not view_b)) >= COPY_CHOICE:
        chosen = _cheapest_copies(kept_a, free_a, view_a, kept_b, free_b, view_b, count, sizes)
        lead, swap_a, swap_b = chosen
    batch_l: list[int] = []
    inner_l: list[int] = []
    m = n = k = nb = 1
    for x in lead:
        if x in sa and x in sb:
            if count[x]:
                batch_l.append(x)
                nb *= sizes[x]
            else:
                inner_l.append(x)
                k *= sizes[x]
    for x in free_a:
        m *= sizes[x]
    for x in free_b:
        n *= sizes[x]
    batch, inner = tuple(batch_l), tuple(inner_l)
    if chosen is None:  # a view keeps its own order; else its innermost axis stays innermost
        swap_a = bool(inner) and bool(free_a) and kept_a[-1] in free_a
        swap_b = bool(inner) and bool(free_b) and kept_b[-1] in inner
    head = (nb,) if batch else ()
    labels = batch + free_a + free_b
    order_a = batch + (inner + free_a if swap_a else free_a + inner)
    order_b = batch + (free_b + inner if swap_b else inner + free_b)
    step = Product(
        a=ra,
        b=rb,
        sum_a=sum_a,
        sum_b=sum_b,
        perm_a=tuple(map(kept_a.index, order_a)),
        perm_b=tuple(map(kept_b.index, order_b)),
        shape_a=head + ((k, m) if swap_a else (m, k)),
        shape_b=head + ((n, k) if swap_b else (k, n)),
        swap_a=swap_a,
        swap_b=swap_b,
        shape=tuple(map(sizes.__getitem__, labels)),
    )
    # sums, then the reshapes should they copy
    return step, labels, [n_a * (kept_a != la), n_b * (kept_b != lb), n_a, n_b]


Split = tuple[Labels, Labels, tuple[int, ...], int]
"""An operand's kept labels, free ones, axes summed alone and kept elements (:func:`_split`)."""


def _looped_view(
    taken: list[tuple[Labels, int]],
    split_a: Split,
    split_b: Split,
    count: dict[int, int],
    sizes: Sequence[int],
) -> tuple[Step, Labels, list[int]] | None:
    """The step with the larger operand a view that ``matmul`` loops over where its free
    labels lie on both sides of the shared ones (batch labels, free ``F1``, contracted,
    free ``F2``): a ``(batch, F1, contracted, F2)`` view, its matrices transposed, times
    the other operand as ``(batch, 1, contracted, free)``, broadcast over ``F1`` (the
    plan's own way there: "looped ... matmul's batch loop runs over them").  Copying it
    instead writes its every element in runs as short as its innermost axis (measured, the
    random 10-tensor network of degree 4's first product: 61,740 elements of 7 axes, 268
    against 84 µs).  None where it is no such view, small, or the loop is long."""
    (la, ra), (lb, rb) = taken
    if split_b[3] > split_a[3]:  # the larger operand goes first
        (la, ra), (lb, rb), split_a, split_b = (lb, rb), (la, ra), split_b, split_a
    kept_a, free_a, sum_a, n_a = split_a
    kept_b, free_b, sum_b, n_b = split_b
    blocks = _free_around_shared(kept_a, free_a, count)
    if blocks is None or n_a < LOOPED_MIN_ELEMENTS:
        return None
    i, j, end = blocks
    loops = 1
    for x in kept_a[:j]:
        loops *= sizes[x]
    if loops * LOOPED_MIN_RUN > n_a:
        return None
    batch, looped, inner, rest = kept_a[:i], kept_a[i:j], kept_a[j:end], kept_a[end:]
    nb, m1, k, m2, n = (_elements(t, sizes) for t in (batch, looped, inner, rest, free_b))
    swap_b = bool(free_b) and kept_b[-1] in inner
    order_b = batch + (free_b + inner if swap_b else inner + free_b)
    labels = batch + looped + rest + free_b
    step = Product(
        a=ra,
        b=rb,
        sum_a=sum_a,
        sum_b=sum_b,
        perm_a=tuple(range(len(kept_a))),
        perm_b=tuple(map(kept_b.index, order_b)),
        shape_a=(nb, m1, k, m2),
        shape_b=(nb, 1) + ((n, k) if swap_b else (k, n)),
        swap_a=True,
        swap_b=swap_b,
        shape=tuple(map(sizes.__getitem__, labels)),
    )
    return step, labels, [n_a * (kept_a != la), n_b * (kept_b != lb), n_a, n_b]


def _free_around_shared(
    kept: Labels, free: Labels, count: dict[int, int]
) -> tuple[int, int, int] | None:
    """Where ``kept`` is batch labels, free ones, contracted ones, free ones again (each
    block not empty but the batch), the ends ``(i, j, end)`` of the first three blocks;
    else None."""
    i = 0
    while i < len(kept) and kept[i] not in free and count[kept[i]]:
        i += 1
    j = i
    while j < len(kept) and kept[j] in free:
        j += 1
    end = j
    while end < len(kept) and kept[end] not in free and not count[kept[end]]:
        end += 1
    rest = kept[end:]
    if j == i or end == j or not rest or any(x not in free for x in rest):
        return None
    return i, j, end


# an operand of this many elements or more is looped over rather than copied, where each
# matrix of the loop holds LOOPED_MIN_RUN of them or more (a matmul call's own cost)
LOOPED_MIN_ELEMENTS = 1 << 13
LOOPED_MIN_RUN = 512


def _cheapest_copies(
    kept_a: Labels,
    free_a: Labels,
    view_a: bool,
    kept_b: Labels,
    free_b: Labels,
    view_b: bool,
    count: dict[int, int],
    sizes: Sequence[int],
) -> tuple[Labels, bool, bool]:
    """``(lead, swap_a, swap_b)`` of the cheapest copies (:func:`_copy_cost`) when an operand
    is copied: the shared labels in either operand's order (a view leads: it stays one),
    each operand's free labels before or after them.  How fast NumPy copies a transposed
    tensor of many short axes depends on the run its innermost loop gets, and that on the
    order the copy is written in (measured, 9 axes of 2-8, 1.04M elements: 7.3 against
    3.4 ms for the two orders of one operand)."""
    leads = [kept_a] if view_a else [kept_b] if view_b else [kept_a, kept_b]
    best: tuple[float, Labels, bool, bool] | None = None
    for lead in leads:
        shared = [x for x in lead if x in kept_a and x in kept_b]
        batch = [x for x in shared if count[x]]
        inner = [x for x in shared if not count[x]]
        cost_a, swap_a = _operand_order(kept_a, batch, inner, free_a, sizes)
        cost_b, swap_b = _operand_order(kept_b, batch, inner, free_b, sizes, right=True)
        if best is None or cost_a + cost_b < best[0]:
            best = (cost_a + cost_b, lead, swap_a, swap_b)
    assert best is not None
    return best[1], best[2], best[3]


def _operand_order(
    kept: Labels,
    batch: list[int],
    inner: list[int],
    free: Labels,
    sizes: Sequence[int],
    right: bool = False,
) -> tuple[float, bool]:
    """The cheaper of an operand's two matmul orders (its free labels after the shared ones,
    or before; the right operand's first one is its plain order): its copy's cost (0 when
    it is a view) and whether it is the swapped one."""
    found: tuple[float, bool] | None = None
    for swap in (False, True) if inner and free else (False,):
        after = (not swap) if right else swap  # free labels after the shared ones
        order = (*batch, *inner, *free) if after else (*batch, *free, *inner)
        cost = 0.0 if order == kept else _copy_cost(kept, order, sizes)
        if found is None or cost < found[0]:
            found = (cost, swap)
    assert found is not None
    return found


# elements: a copy this large takes 0.06-2 ms, and choosing its order (~25 µs) pays
# (measured, fresh calls, 16,384 against 131,072: an MPS expectation value 0.79-0.80x, the
# random 10-tensor network of degree 4 0.81-0.88x, the closed 6 x 6 grid 0.91-0.93x, the
# 8 x 8 one 1.04-1.07x); at 4,096 the choice cost more than it saved (1.03-1.11x on seven
# networks of fourteen)
COPY_CHOICE = 1 << 14
COPY_RUN = 15.0  # an inner loop costs as much as this many elements copied (relative)


def _copy_cost(labels: Labels, order: Sequence[int], sizes: Sequence[int]) -> float:
    """The relative cost of copying a C-ordered tensor over ``labels`` into ``order``: per
    element (twice as much when its reads are strided), plus per inner loop, whose length
    is the innermost block of ``order`` that is also consecutive in ``labels`` (NumPy's copy
    coalesces such axes into one).

    >>> labels, sizes = (0, 1, 2, 3), (3, 4, 5, 6)
    >>> _copy_cost(labels, (1, 0, 2, 3), sizes) < _copy_cost(labels, (3, 2, 1, 0), sizes)
    True
    """
    at = {x: i for i, x in enumerate(labels)}
    block, k = 1, len(order) - 1
    while k >= 0 and (k == len(order) - 1 or at[order[k]] == at[order[k + 1]] - 1):
        block *= sizes[order[k]]
        k -= 1
    elements = _elements(labels, sizes)
    per_element = 1.0 if order[-1] == labels[-1] else 2.0
    return as_float(elements) * (per_element + COPY_RUN / as_float(block))


def _loop_product(
    la: Labels,
    ra: int,
    lb: Labels,
    rb: int,
    count: dict[int, int],
    sizes: Sequence[int],
    out_at: dict[int, int],
) -> tuple[LoopProduct, Labels, list[int]] | None:
    """The step as one ``einsum`` call when its loop is small or sums nothing (an outer
    or elementwise product: one multiplication an element of the result, where ``matmul``
    over a contracted axis of size 1 takes 3.5x as long: 1.2 against 0.34 ms for 2**20
    elements), else None.  Its result keeps the labels needed later: first those the
    output lacks, in order of appearance, then the output's (``out_at``: their positions)
    in the output's order, so that the loops of later steps write in runs and the path's
    last step writes the output as it is (no copy after it).  Measured, the direct
    program of the outer product of 20 vectors of 2: 4.2 ms (``matmul``s and a copy) and
    5.3 ms (loops in the order of appearance, which the path had scrambled) against 0.7.

    >>> at = {x: (x - 4) % 20 for x in range(20)}  # the output: 4, 5, ..., 19, 0, 1, 2, 3
    >>> count, sizes = dict.fromkeys(range(20), 1), [2] * 20
    >>> step, labels, _ = _loop_product((0, 1, 2, 3), 0, tuple(range(4, 20)), 1, count, sizes, at)
    >>> step.subscripts
    'abcd,efghijklmnopqrst->efghijklmnopqrstabcd'
    >>> reversed_output = {x: 19 - x for x in range(20)}  # runs of one element: a matmul
    >>> _loop_product((0, 1, 2, 3), 0, tuple(range(4, 20)), 1, count, sizes, reversed_output)
    """
    letters: dict[int, str] = {}
    loop = kept = 1
    for x in la + lb:
        if x not in letters:
            if len(letters) == len(EINSUM_LETTERS):
                return None
            letters[x] = EINSUM_LETTERS[len(letters)]
            loop *= sizes[x]
            if count[x]:
                kept *= sizes[x]
    if loop > LOOP_ELEMENTS and loop != kept:
        return None
    needed = [x for x in letters if count[x]]
    if out_at:
        needed.sort(key=lambda x: out_at.get(x, -1))  # (stable: the others keep their order)
    labels = tuple(needed)
    if loop > LOOP_ELEMENTS and _loop_run(labels, la, lb, sizes) < LOOP_MIN_RUN:
        return None
    name = letters.__getitem__
    result = "".join(map(name, labels))
    left = "".join(map(name, la))
    subscripts = f"{left},{''.join(map(name, lb))}->{result}" if rb >= 0 else f"{left}->{result}"
    return LoopProduct(ra, rb, subscripts), labels, [0]


def _loop_run(result: Labels, la: Labels, lb: Labels, sizes: Sequence[int]) -> int:
    """The elements of the innermost run of NumPy's loop writing ``result`` from C-ordered
    operands over ``la`` and ``lb``: the longest trailing block of ``result`` that each
    operand holds as its own trailing axes, or not at all (axes of size 1 left out: NumPy
    drops them).

    >>> sizes = [4, 5, 6]
    >>> _loop_run((0, 1, 2), (0, 1), (2,), sizes), _loop_run((0, 1, 2), (2, 0), (1,), sizes)
    (6, 1)
    >>> _loop_run((0, 1, 2), (0, 1, 2), (1, 2), sizes)  # (both hold 1, 2 as their last axes)
    30
    """

    def wide(labels: Labels) -> Labels:
        return tuple([x for x in labels if sizes[x] > 1])

    result, la, lb = wide(result), wide(la), wide(lb)
    run, k = 1, len(result) - 1
    while k >= 0:
        block = result[k:]
        if any(t[-len(block) :] != block and not set(t).isdisjoint(block) for t in (la, lb)):
            break
        run *= sizes[result[k]]
        k -= 1
    return run


def _split(
    labels: Labels, other: set[int], count: dict[int, int], sizes: Sequence[int]
) -> tuple[Labels, Labels, tuple[int, ...], int]:
    """An operand's kept labels (shared, or needed later), its free ones (kept, not
    shared), the axes it sums alone, and its kept elements."""
    kept: list[int] = []
    free: list[int] = []
    summed: list[int] = []
    elements = 1
    for i, x in enumerate(labels):
        if x in other:
            kept.append(x)
        elif count[x]:
            kept.append(x)
            free.append(x)
        else:
            summed.append(i)
            continue
        elements *= sizes[x]
    return tuple(kept), tuple(free), tuple(summed), elements


def _elements(labels: Iterable[int], sizes: Sequence[int]) -> int:
    n = 1
    for x in labels:
        n *= sizes[x]
    return n


def _views(labels: Labels, free: Labels, count: dict[int, int]) -> bool:
    """Whether a C-ordered operand over ``labels`` is a view as (batch, free, inner) or
    (batch, inner, free), the shared labels in its own order: its batch labels come first,
    then its free labels form one block."""
    at = [i for i, x in enumerate(labels) if x in free]
    batch = [i for i, x in enumerate(labels) if x not in free and count[x]]
    if batch and batch[-1] != len(batch) - 1:
        return False  # a batch label after another label
    if not at:
        return True
    return at[-1] - at[0] + 1 == len(at) and (at[0] == len(batch) or at[-1] == len(labels) - 1)


def walk_steps(
    steps: Sequence[Step],
    operands: Sequence[Any],
    loop: Callable[..., Any],
    fold: Callable[[Any, tuple[int, ...], tuple[int, ...]], Any],
) -> Any:
    """The direct way's walk over its registers (the operands, then each step's result),
    the last register returned: NumPy's (:func:`_runner`) and torch's, whose arrays differ
    only in ``loop(subscripts, *operands)`` (a :class:`LoopProduct`) and ``fold(x, perm,
    shape)`` (transposed, then reshaped: NumPy's packs a copy, :func:`_folded`); sums,
    reshapes, axis swaps and ``@`` are the same methods on both.  A step takes its operands
    out of the registers and drops its copies before the next, so each dies when its last
    step is done, as the peak counts it.

    >>> steps = [Product(0, 1, (), (), (0, 1), (0, 1), (2, 3), (3, 2), False, False, (2, 2))]
    >>> walk_steps(steps, [np.ones((2, 3)), np.ones((3, 2))], sum_of_products, _folded)
    array([[3., 3.],
           [3., 3.]])
    """
    regs: list[Any] = list(operands)
    for step in steps:
        a, b = regs[step.a], None if step.b < 0 else regs[step.b]
        regs[step.a] = None
        if b is not None:
            regs[step.b] = None
        if isinstance(step, LoopProduct):
            regs.append(loop(step.subscripts, a) if b is None else loop(step.subscripts, a, b))
            continue
        if step.sum_a:
            a = a.sum(step.sum_a)
        if b is None:
            regs.append(fold(a, step.perm_a, step.shape))
            continue
        if step.sum_b:
            b = b.sum(step.sum_b)
        a = fold(a, step.perm_a, step.shape_a)
        b = fold(b, step.perm_b, step.shape_b)
        product = (a.swapaxes(-1, -2) if step.swap_a else a) @ (
            b.swapaxes(-1, -2) if step.swap_b else b
        )
        regs.append(product.reshape(step.shape))
        a = b = product = None  # the operands' copies die here, as the peak counts
    return regs[-1]


def _folded(x: Any, perm: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """``x.transpose(perm).reshape(shape)``, a copy it needs of :data:`COPY_CHOICE`
    elements or more made by :func:`.execute.packed_copy` where its trailing axes form a
    short contiguous block (measured on the benchmark's networks' first calls, each such
    copy alone: 0.43-0.90x NumPy's copy's time, 10.6 -> 8.3 ms in all; the largest, 21 MB
    of random-100's, 7.25 -> 6.05 ms; from 4,096 elements the test and the smaller copies
    made the first calls of the closed 6 x 6 grid and an MPS expectation value 1.08-1.12x
    slower).  (A method: a sum over every axis leaves a NumPy scalar.)"""
    view, item = x.transpose(perm), x.itemsize
    # (a short contiguous block may end it: else no view test, which raises for a copy)
    if (
        view.size >= COPY_CHOICE
        and view.strides[-1] == item
        and view.shape[-1] * item <= PACK_MAX_BYTES
    ):
        try:
            return np.reshape(view, shape, copy=False)
        except ValueError:  # it needs a copy
            packed = packed_copy(view)
            if packed is not None:
                return packed.reshape(shape)
        except TypeError:  # pragma: no cover - NumPy < 2.1 has no copy=: NumPy's own copy
            pass
    return view.reshape(shape)


def _runner(steps: list[Step], output: tuple[int, ...]) -> Program:
    loop = functools.partial(sum_of_products, order="C")  # (without einsum's Python wrapper)

    def run(operands: Sequence[Any], out: Any) -> Any:
        result = walk_steps(steps, operands, loop, _folded).transpose(output)
        if result.ndim == 0:
            return result[()]
        return result if result.flags.c_contiguous else result.copy()

    return run
