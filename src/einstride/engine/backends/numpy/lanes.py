"""Lanes: a call on plain NumPy arrays answered without a plan-cache look.

Every call on a new shape misses the plan cache, and even a hit hashes the operands'
shapes, strides and dtypes; for a diagonal, a trace or a 4 x 4 product that look costs more
than the work.  An equation's lane is compiled once per equation string and runs, for every
shape and every strides it fits, what the planned way runs (but where the plan swaps a
matmul-form product or writes it in a transposed output's order: the same product, summed
by BLAS in another order):

* one operand: a plan is a view (diagonals of repeated labels), at most one reduction whose
  kernel is NumPy's sum-of-products loop, and a transpose.  Unless the reduction would be
  split across threads or summed in two passes (:func:`.plan.deferred_sums`), that loop
  run over the operand itself (NumPy takes the diagonals as views first) is the plan in
  one call.
* one operand expanded (output labels repeat, nothing summed, the operand's labels
  distinct): a plan is zeros of the result, NumPy's diagonal view of them and one copy of
  the operand into it, which the lane runs as they are, within the memory limit.
* two operands of the matmul form (no label summed inside one operand, a contracted label,
  batch labels shared): a plan is one batched matmul over views, which ``numpy.matmul``
  over the transposed operands is (a kind of several labels merged by a reshape, only
  where that is a view).  Only for small products
  (:attr:`~.options.PlannerOptions.lane_max_combos` index combinations), where no layout
  decision of the planner can pay for its own cost.
* two operands that contract nothing (an outer or a Hadamard product): a plan is one batch
  step writing a new array in the output's order, which one call of NumPy's
  sum-of-products loop (a free label) or one broadcast ``numpy.multiply`` (none) is, unless
  the planner would split the step across threads (the bytes it moves, a strided element
  costing up to a cache line, against ``split_min_bytes``).

A call the lane does not fit (another operand count, rank or dtype, sizes that disagree, a
step the planner splits, a result over the memory limit, an empty product) goes the
planned way, which also raises the errors.

>>> import numpy as np
>>> trace = lane_for("ii->")
>>> float(trace((np.eye(3),)))
3.0
>>> trace((np.ones((2, 3)),)) is None                  # sizes disagree: planned
True
>>> lane_for("bij,bjk->bik")((np.ones((2, 3, 4)), np.ones((2, 4, 5)))).shape
(2, 3, 5)
>>> lane_for("i,j->ij")((np.ones(2), np.arange(3.0)))            # an outer product
array([[0., 1., 2.],
       [0., 1., 2.]])
>>> lane_for("i->ii")((np.arange(1.0, 3.0),))                     # an expansion
array([[1., 0.],
       [0., 2.]])
>>> lane_for("ii->iii") is NO_LANE                 # an expansion of a diagonal: planned
True
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import numpy as np

from .... import memory as _memory
from ....memory import MAX_NDARRAY_RANK
from ...forksafe import rlock
from ...spec.equation import Equation, parse_subscripts
from ...spec.matmul import (
    Groups,
    Indices,
    MatmulForm,
    contracts_nothing,
    matmul_form,
    merged_shapes,
)
from .execute import numpy_equation, sum_of_products
from .fold import Term, blas_ready, contiguous_strides, ordered_empty, write_order
from .options import DEFAULT, OPTIONS_HOOKS, PlannerOptions
from .plan import (
    CACHE_LINE,
    DEFER_MIN_COMBOS,
    bytes_moved,
    deferred_sums,
    inner_sums,
    reduction_bytes,
)

__all__ = [
    "LANES",
    "LINE_BYTES",
    "NO_LANE",
    "Lane",
    "UnaryLane",
    "clear_lanes",
    "lane_answers",
    "lane_for",
    "public_einsum",
]

Lane = Callable[..., Any]
"""``lane(operands, dry=False)``: the einsum of the operands, or None (then the planned way
runs); ``dry``: what the lane would run (a sentence), computing nothing.  A lane holds the
default options and the memory limit it was compiled with (a call that names its own takes
the planned way)."""

_ITEM_BYTES = 32
"""The largest item of a lane dtype (complex256): ``combos`` times this bounds a product's
result, without reading the dtype's item size."""

LINE_BYTES = CACHE_LINE + _ITEM_BYTES
"""A bound on the bytes a reduction moves per index combination of its view
(:func:`.plan.bytes_moved` counts an element up to a cache line, as in a strided diagonal,
plus an item of its share of the output): below ``split_min_bytes`` / this, the planner
never splits the reduction nor runs it on BLAS.  It bounds the bytes of its result too."""

_LANE_DTYPES = tuple(np.dtype(c) for c in "dfDFgG")
"""Native floating and complex dtypes, commonest first (a tuple: ``in`` tries identity
before equality, and NumPy's dtype hash builds a tuple): the plan computes in them
(float16 would be cast)."""
_CACHE_SIZE = 1024
_ndarray = np.ndarray
_matmul = np.matmul
_multiply = np.multiply
_empty = np.empty
_zeros = np.zeros
_copyto = np.copyto


def _no_lane(operands: tuple[Any, ...], dry: bool = False) -> Any:
    return None


NO_LANE: Lane = _no_lane
"""The lane of an equation that has none (an expansion of a diagonal, ``...``, three
operands, ...)."""

LANES: dict[str, Lane] = {}
"""Each equation string's lane (read directly by the hot path)."""
_HOT_LOCK = rlock()
"""Held to keep a lane, to forget them, to replace a hot record and to count; reentrant:
the GC's finalizers and signal handlers run inside its regions, and may call einsum."""
_HOT_RESETS: list[Callable[[], None]] = []  # each public einsum's: forget its last call


_answered = itertools.count()  # next() is one atomic C call: no lock on the lane
_answered_before = 0  # its count when the caches were last cleared (it is never replaced)


_DEFAULT_OPTIONS = {
    "optimize": "auto",
    "order": "K",
    "out": None,
    "dtype": None,
    "memory_limit": None,
    "casting": None,
}


def _names_auto(options: dict[str, Any]) -> bool:
    """Whether ``options`` only name einsum's defaults (``optimize="auto"``,
    ``memory_limit=None``, ...: still the lane, as ``explain`` says; a review found
    ``memory_limit=None`` taking the planned way), a str compared as a str: an array
    compared with ``==`` is an array, whose truth NumPy refuses (a review:
    ``optimize=np.array(...)`` raised a bare ValueError)."""
    for name, value in options.items():
        default = _DEFAULT_OPTIONS.get(name, options)  # an unknown name: never equal
        if default is None:
            if value is not None:
                return False
        elif type(value) is not str or value != default:
            return False
    return True


def _count() -> int:
    """Every answer of a lane: counted by the lanes, by replaced hot records and by the
    current ones."""
    return int(repr(_answered)[len("count(") : -1]) + _hot_answers()


def lane_answers() -> int:
    """How many calls the lanes answered since the caches were last cleared."""
    return _count() - _answered_before


def clear_lanes() -> None:
    """Forget the compiled lanes and restart their count."""
    global _answered_before
    _forget()
    _answered_before = _count()


def lane_for(subscripts: str) -> Lane:
    """The equation's lane (cached), :data:`NO_LANE` when it has none (parse errors raise).
    A lane is compiled with the default options and the memory limit of the moment (one
    comparison per call, not four attribute reads: on a cold cache that is microseconds);
    changing either forgets every lane.  A lane is kept under the lock that forgetting
    takes: one compiled with the old bounds is never kept past it."""
    lane = LANES.get(subscripts)
    if lane is None:
        options, limit = DEFAULT.options, _memory.LIMIT
        lane = _compile(parse_subscripts(subscripts), _Bounds.of(options, limit))
        with _HOT_LOCK:
            if len(LANES) >= _CACHE_SIZE:
                LANES.clear()
            if DEFAULT.options is options and limit == _memory.LIMIT:  # else: changed meanwhile
                LANES[subscripts] = lane
                if DEFAULT.options is not options or limit != _memory.LIMIT:  # (a finalizer's)
                    LANES.pop(subscripts, None)
    return lane


class _Bounds(NamedTuple):
    """What a lane takes from the options and the memory limit."""

    moved: int  # a reduction moving more bytes than this is planned (the limit) ...
    split: int  # ... or at least this many (the planner splits it across threads, or
    #   runs it by BLAS, whatever the thread count: a review found the lane's loop at one
    #   thread and the plan's BLAS at two giving other bits)
    combos: int  # a product of more index combinations is planned
    lane_max: int  # the option itself (for explain)
    options: PlannerOptions  # (the planner's test of a reduction in two passes)

    @classmethod
    def of(cls, options: PlannerOptions, limit: int) -> _Bounds:
        combos = min(options.lane_max_combos, limit // _ITEM_BYTES)
        return cls(limit, options.split_min_bytes, combos, options.lane_max_combos, options)


_NEVER = 1 << 126


def _compile(equation: Equation, bounds: _Bounds) -> Lane:
    if equation.has_ellipsis:
        return NO_LANE
    if len(set(equation.output)) != len(equation.output):
        if len(equation.terms) == 1:
            return _expand_lane(equation.terms[0], equation.output, bounds)
        return NO_LANE
    if len(equation.terms) == 1:
        native = equation.explicit and _ASCII_EQUATION.fullmatch(equation.text) is not None
        return _unary_lane(equation.terms[0], equation.output, bounds, native)
    if len(equation.terms) == 2:
        return _pair_lane(*equation.terms, equation.output, bounds)
    return NO_LANE


def _forget() -> None:
    with _HOT_LOCK:
        LANES.clear()
        for reset in _HOT_RESETS:
            reset()


OPTIONS_HOOKS.append(_forget)
_memory.LIMIT_HOOKS.append(_forget)


# -- one operand -----------------------------------------------------------------------------


_ASCII_EQUATION = re.compile(r"[a-zA-Z]*->[a-zA-Z]*")
"""A one-operand equation NumPy's loop reads as einstride does (explicit, letters only)."""


def _unary_lane(
    term: tuple[int, ...], output: tuple[int, ...], bounds: _Bounds, native: bool
) -> Lane:
    letters = numpy_equation((term,), output)
    if letters is None:
        return NO_LANE
    first = {lab: term.index(lab) for lab in term}
    same = tuple((first[lab], ax) for ax, lab in enumerate(term) if first[lab] != ax)
    if len(output) == len(first):  # nothing summed: a view (diagonals, a transpose)
        return cast(Lane, UnaryLane(letters, (), _NEVER, len(term), same, native, _NO_TRAFFIC))
    # one bound for both limits: combos * LINE_BYTES >= the result's bytes too
    most = min(bounds.moved // LINE_BYTES, (bounds.split - 1) // LINE_BYTES)
    two_passes = output and len(first) - len(output) >= 2  # (a summed label left for each)
    groups = tuple(tuple(ax for ax, x in enumerate(term) if x == lab) for lab in first)
    traffic = _Traffic(
        groups,
        tuple(first[lab] for lab in output),
        bounds.split,
        bounds.moved,
        bounds.options if two_passes else None,
        frozenset(g for g, lab in enumerate(first) if lab in output),
        {} if two_passes else None,
        most,
    )
    if two_passes:
        most = min(most, DEFER_MIN_COMBOS - 1)
    return cast(
        Lane, UnaryLane(letters, tuple(first.values()), most, len(term), same, native, traffic)
    )


class _Traffic(NamedTuple):
    """The planner's own test of a one-operand reduction, for one past the lane's bound:
    the bytes it moves (:func:`.plan.reduction_bytes` of the diagonal view, one axis per
    label of ``groups``, and of the result, the output labels' first axes ``kept``) below
    ``split`` (the planner neither splits it nor runs it on BLAS), its result within
    ``limit`` bytes (the memory limit), and, given the planner's ``options``, one pass
    (:func:`.plan.deferred_sums` names no label to sum in a second)."""

    groups: tuple[tuple[int, ...], ...]
    kept: tuple[int, ...]
    split: int
    limit: int
    options: PlannerOptions | None = None
    kept_groups: frozenset[int] = frozenset()  # the groups of ``kept`` (labels 0, 1, ...)
    memo: dict[tuple[Any, ...], bool] | None = None  # the verdicts, with ``options``
    moves_from: int = 0  # combinations up to which both limits hold (the lane's own bound)

    def fits(self, a: np.ndarray[Any, Any]) -> bool:
        """The test (with ``options``, its verdict kept per layout: the two-pass test
        prices NumPy's loops, tens of microseconds for a dozen axes)."""
        memo = self.memo
        if memo is None:
            return self._fits(a)
        key = (a.shape, a.strides, a.itemsize)
        found = memo.get(key)
        if found is None:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            found = memo[key] = self._fits(a)
        return found

    def _fits(self, a: np.ndarray[Any, Any]) -> bool:
        shape, strides, item = a.shape, a.strides, a.itemsize
        sizes = [shape[axes[0]] for axes in self.groups]
        steps = [sum(strides[ax] for ax in axes) for axes in self.groups]
        combos = math.prod(sizes)
        if combos > self.moves_from:
            result = item * _combos(shape, self.kept)
            if result > self.limit or reduction_bytes(sizes, steps, item, result) >= self.split:
                return False
        if self.options is None or combos < DEFER_MIN_COMBOS:
            return True
        labels = range(len(sizes))
        if not inner_sums(labels, sizes, steps, self.kept_groups):
            return True
        term = Term.of(labels, sizes, steps, a.dtype)
        return not deferred_sums(term, self.kept_groups, self.options)


_NO_TRAFFIC = _Traffic((), (), 0, 0)  # a view's: it moves nothing (never asked)
_MEMO_SIZE = 64  # layouts whose verdict a lane keeps (then it forgets them all)


class UnaryLane(NamedTuple):
    """A one-operand lane: one call of NumPy's sum-of-products loop with ``letters``,
    only where the planner can neither split the reduction across threads nor run it on
    BLAS and its result is within the memory limit: its own test of the bytes moved
    (``traffic``, a sufficient condition), asked only when the reduction's index
    combinations (the product of the sizes of the axes ``distinct``: one per label) pass
    ``most``, below which it always holds (each moves at most :data:`LINE_BYTES`).  A view
    sums nothing (``distinct`` empty; ``traffic`` not asked).

    An empty reduction is left to the planned way: its result may still pass the memory
    limit.  ``native``: the caller's subscripts read the same to NumPy's loop (explicit,
    ASCII letters only), which then gets them in place of ``letters``.

    The public :func:`einsum` runs it inline (:func:`public_einsum`); calling it is the
    same test, for the first call of an equation and for ``explain`` (``dry``)."""

    letters: str
    distinct: tuple[int, ...]
    most: int
    rank: int
    same: tuple[tuple[int, int], ...]  # axes whose sizes must agree (a dry run's check)
    native: bool  # the caller's subscripts are ``letters``' equal for NumPy
    traffic: _Traffic

    def __call__(self, operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 1:
            return None
        a = operands[0]
        if type(a) is not _ndarray or a.dtype not in _LANE_DTYPES:
            return None
        if dry:
            shape = a.shape
            fits = a.ndim == self.rank and all(shape[x] == shape[y] for x, y in self.same)
            if not fits or not self._fits(a):
                return None
            if not self.distinct:
                return "one call of NumPy's sum-of-products loop: a view of the operand"
            return "one call of NumPy's sum-of-products loop over the operand, on one thread"
        try:
            if self._fits(a):
                result = sum_of_products(self.letters, a)
                next(_answered)
                return result
        except (ValueError, IndexError):
            pass
        return None

    def _fits(self, a: Any) -> bool:
        """A view, unless a diagonal of an empty operand (NumPy's loop may not check that
        the sizes of its repeated labels agree there); a reduction over an operand that is
        not empty (an empty one's result may still pass the memory limit) of at most
        ``most`` index combinations, or past it one that ``traffic`` lets through."""
        if not self.distinct:
            return not self.same or a.size > 0
        size = a.size
        if not size:
            return False
        return (
            size <= self.most
            or _combos(a.shape, self.distinct) <= self.most
            or self.traffic.fits(a)
        )


def _combos(shape: tuple[int, ...], distinct: tuple[int, ...]) -> int:
    combos = 1
    for ax in distinct:
        combos *= shape[ax]
    return combos


def _expand_lane(term: tuple[int, ...], output: tuple[int, ...], bounds: _Bounds) -> Lane:
    """An expansion that sums nothing (output labels repeat: ``i->ii``, ``ij->iij``, as a
    hand-written backward pass has them) of an operand whose labels are distinct: what the
    plan runs, zeros of the result's shape, NumPy's diagonal view of them (each output
    label one axis, in the order of first appearance) and one copy of the operand,
    transposed, into that view.  The plan allocates nothing else (its copy step writes
    through the view), so the result's bytes within the memory limit is its whole test; an
    empty result is the plan's."""
    if len(set(term)) != len(term) or set(term) != set(output):
        return NO_LANE
    labels = tuple(dict.fromkeys(output))
    view = numpy_equation((output,), labels)
    if view is None or len(output) > MAX_NDARRAY_RANK:
        return NO_LANE  # (past NumPy's rank: the plan's error)
    perm = tuple(term.index(lab) for lab in labels)
    moved = None if perm == tuple(range(len(term))) else perm
    axes = tuple(term.index(lab) for lab in output)  # the result's shape, from the operand's
    rank, limit = len(term), bounds.moved

    def expand(operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 1:
            return None
        a = operands[0]
        if type(a) is not _ndarray or a.ndim != rank or a.dtype not in _LANE_DTYPES:
            return None
        sizes = a.shape
        shape = tuple([sizes[ax] for ax in axes])
        elements = math.prod(shape)
        if not elements or elements * a.itemsize > limit:
            return None
        if dry:
            return (
                f"zeros of the result ({elements:,} elements) and one copy of the operand "
                "into NumPy's diagonal view of them"
            )
        next(_answered)
        out = _zeros(shape, a.dtype)
        source = a if moved is None else a.transpose(moved)
        _copyto(sum_of_products(view, out), source, casting="unsafe")
        return out

    return expand


# NumPy raises ValueError for another rank, or sizes of one label that disagree: the checks
# of a one-operand lane that cost nothing when they pass (a try block is free in CPython
# 3.11); the planned way then binds the shapes and raises our error.  IndexError: a rank
# too low for an axis of ``distinct``.


_HOT_SLOTS = (
    "subscripts", "dtype", "letters", "most", "distinct", "type", "ndarray", "loop", "answered",
    "on", "traffic",
)  # fmt: skip
"""The slots of a hot record (:func:`_hot`), read by position in :func:`public_einsum`."""

_Onward = Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
"""``on(subscripts, operands, options)``: a public einsum's way for the calls its hot record
does not answer."""


def _hot(subscripts: object, dtype: object, lane: UnaryLane, on: _Onward) -> list[Any]:
    """The record of the one-operand call a lane answered last, for the next call's test
    (the slots of :data:`_HOT_SLOTS`): the caller's subscripts and the operand's dtype (the
    very objects: compared by identity), the letters NumPy's loop gets, and the lane's test
    (:meth:`UnaryLane._fits`): a bound of the operand's elements (or, past it, of the
    reduction's index combinations: one per label of ``distinct``) below which the lane
    takes any operand that is not empty (None: a view's, no bound); then ``type``,
    ``numpy.ndarray``, NumPy's loop, the calls the record answered, the public einsum's
    way ``on`` for the calls it does not answer, and past both bounds the planner's own
    test (``traffic``).

    One list holds it all, its count included, read by position: in a cold call (another
    library ran in between) every object read costs a cache and TLB miss (objects of other
    sizes live in other pages), and so does each global name and each closure cell (a call
    takes a reference to every cell of its function).  Measured in the cold benchmark's
    loop (``ii->i`` on 513 x 513 to 572 x 572, against numpy.einsum, the median of eight
    processes): a record and a shared counter read through seven cells (four of them read
    on the way), with the global ``type`` and the builtin ``next``, 2.1x; this list and one
    cell 1.5x; a bare wrapper of NumPy's loop 0.75-1.3x (as the machine's phase goes).
    Past the bound of elements the combinations are counted inline: the lane's own test,
    a method call, made ``bii->b`` (65-124 x 64 x 64) 1.5x numpy.einsum's time where
    inline it is 1.3x (the old record's 1.4x).

    >>> on = lambda subscripts, operands, options: None
    >>> lane = cast(UnaryLane, lane_for("ii->"))
    >>> record = _hot("ii->", np.dtype("d"), lane, on)
    >>> record[2], record[3] == lane.most, record[4], record[8], record[10](np.ones((3, 3)))
    ('ii->', True, (0,), 0, True)
    >>> len(record) == len(_cold(on)) == len(_HOT_SLOTS)
    True
    >>> _hot("ii->i", np.dtype("d"), cast(UnaryLane, lane_for("ii->i")), on)[3] is None
    True
    """
    letters = subscripts if lane.native else lane.letters
    most = lane.most if lane.distinct else None
    loop, fits = sum_of_products, lane.traffic.fits
    return [subscripts, dtype, letters, most, lane.distinct, type, _ndarray, loop, 0, on, fits]


def _cold(on: _Onward) -> list[Any]:
    """The record of no call yet (subscripts no one passes)."""
    return [object(), None, "", 0, (), type, _ndarray, sum_of_products, 0, on, None]


_RETIRED: list[list[Any]] = []  # replaced hot records a call may still hold
_FOLDED = [0]  # the answers of replaced records that no call holds


def _unheld() -> int:
    """A record's references in :func:`_fold`'s loop when no call holds it (measured: what
    the interpreter counts for a loop variable and an argument differs between versions)."""
    probe: list[list[Any]] = [[]]
    for record in probe:  # references: the list's, this loop's, getrefcount's argument
        return sys.getrefcount(record)
    raise AssertionError


_UNHELD = _unheld()
_HOT_RECORDS: list[Callable[[], list[Any]]] = []  # each public einsum's current record


def _fold() -> None:
    """Fold the counts of retired records that no call holds any more (the lock held; a
    call that read a record before it was replaced counts its answer there, after; a frame
    kept by an error's traceback would hold one too, which the public einsum's way on
    does not), from a snapshot: a nested fold (a finalizer's call) sees only what this one
    kept.  CPython's reference counts tell which are held."""
    retired = _RETIRED[:]
    del _RETIRED[:]
    for record in retired:  # references: retired's, this loop's, getrefcount's argument
        if sys.getrefcount(record) > _UNHELD:
            _RETIRED.append(record)
        else:
            _FOLDED[0] += record[8]


def _hot_answers() -> int:
    """The answers of every hot record: replaced ones and the current ones."""
    with _HOT_LOCK:
        _fold()
        records = [*_RETIRED, *(current() for current in _HOT_RECORDS)]
        return _FOLDED[0] + sum(int(record[8]) for record in records)


def public_einsum(planned: Callable[..., Any], no_subscripts: Any) -> Callable[..., Any]:
    """The public ``einsum``: the equation's lane, else ``planned(subscripts, *operands,
    **options)`` (the keyword checks and the planned way; ``no_subscripts`` is its default
    first argument).

    A call with the same subscripts object and operand dtype as the last one that a
    one-operand lane answered (its record, :func:`_hot`) is answered in this one frame, by
    two identity tests and a size bound (the lane's test, written out), reading one list
    through the function's one cell.  Any other call looks up its lane; a one-operand lane
    that answers becomes the last call.  The record counts its answers in place: a read,
    an add and a store, between which CPython's interpreter switches no thread (it checks
    for a switch at calls and backward jumps; under free threading the count would be a
    statistic); a record is replaced under a lock, its count kept (:func:`_fold`)."""
    lanes = LANES
    hot: list[Any] = []  # the record, made once onward is

    def einsum(subscripts: Any = no_subscripts, *operands: Any, **options: Any) -> Any:
        last = hot
        if subscripts is last[0] and not options:
            try:
                (a,) = operands  # ValueError: another operand count
                if last[5](a) is last[6] and a.dtype is last[1]:  # type(a): no global
                    size = a.size
                    fits = size and (last[3] is None or size <= last[3])
                    if not fits and size:  # a large reduction: its combinations, its bytes
                        shape, combos = a.shape, 1
                        for ax in last[4]:
                            combos *= shape[ax]
                        fits = combos <= last[3] or last[10](a)
                    if fits:
                        result = last[7](last[2], a)
                        last[8] += 1
                        return result
            except (ValueError, IndexError):  # NumPy's: another rank, sizes that disagree
                pass
        on = last[9]
        del last  # an error's traceback keeps this frame: it must not keep the record
        return on(subscripts, operands, options)

    def onward(subscripts: Any, operands: tuple[Any, ...], options: dict[str, Any]) -> Any:
        if type(subscripts) is str and (not options or _names_auto(options)):
            lane = lanes.get(subscripts) or lane_for(subscripts)
            result = lane(operands)
            if result is not None:
                if isinstance(lane, UnaryLane):
                    record = _hot(subscripts, operands[0].dtype, lane, onward)
                    with _HOT_LOCK:  # unless forgotten meanwhile: its bounds may be old
                        if lanes.get(subscripts) is lane:
                            install(record)
                            if lanes.get(subscripts) is not lane:  # (by a finalizer's call)
                                install(_cold(onward))
                return result
        return planned(subscripts, *operands, **options)

    def install(record: list[Any]) -> None:
        """Make ``record`` the hot one, the old one retired (the lock held)."""
        nonlocal hot
        retired, hot = hot, record  # no thread switch between: an interrupt leaves either
        _RETIRED.append(retired)
        del retired  # (a reference _fold would take for a call's)
        _fold()

    def forget() -> None:
        cold = _cold(onward)
        with _HOT_LOCK:
            install(cold)

    hot = _cold(onward)
    _HOT_RESETS.append(forget)
    _HOT_RECORDS.append(lambda: hot)
    return einsum


# -- two operands ----------------------------------------------------------------------------


def _pair_lane(
    left: tuple[int, ...], right: tuple[int, ...], output: tuple[int, ...], bounds: _Bounds
) -> Lane:
    """The matmul form (:func:`.spec.matmul.matmul_form`), a product that contracts
    nothing, or :data:`NO_LANE`."""
    if contracts_nothing(left, right, output):  # the planner's batch step, not 1 x 1 matmuls
        return _broadcast_lane(left, right, output, bounds)
    form = matmul_form(left, right, output)
    return NO_LANE if form is None else _matmul_lane(form, bounds)


def _broadcast_lane(
    left: tuple[int, ...], right: tuple[int, ...], output: tuple[int, ...], bounds: _Bounds
) -> Lane:
    """A product that contracts nothing (every label is an output label): what the planner's
    batch step runs, one pass writing a new array laid out as the plan lays it out (the
    memory order of the operand of more axes, :func:`_laid_out`) -- NumPy's
    sum-of-products loop when a label is free (an outer product), else one broadcast
    ``numpy.multiply`` (a Hadamard product) -- for steps too small to be split across
    threads and within the memory limit.  The split is the planner's own test
    (:func:`.plan.bytes_moved` of both operands plus the result against
    :attr:`_Bounds.split`) over the call's own shapes, strides and item size, asked only of
    results large enough for strided operands to reach it; the plan decides for its shape
    class's stand-in, which moves no more, so a call it would split never takes the lane.
    Sizes of a label are checked: NumPy would broadcast a length-1 axis, named labels never
    do.  ``lane_max_combos=0`` turns this lane off too."""
    letters = numpy_equation((left, right), output)
    if letters is None or bounds.lane_max == 0:
        return NO_LANE
    ranks = (len(left), len(right))
    same = tuple((left.index(lab), right.index(lab)) for lab in left if lab in right)
    cols = tuple(right.index(lab) for lab in right if lab not in left)
    most = bounds.moved // _ITEM_BYTES  # the result's bytes within the memory limit
    # below this the step moves less than the split needs whatever the layouts: each
    # operand at most a cache line per combination, the result at most an item of 32 B
    sure = (bounds.split - 1) // (2 * CACHE_LINE + _ITEM_BYTES)
    split = bounds.split
    if len(same) == len(left) == len(right):  # no free label: a Hadamard product
        run = _hadamard(
            tuple(left.index(lab) for lab in output), tuple(right.index(lab) for lab in output)
        )
        how = "one broadcast numpy.multiply into a new array"
    else:
        run = _outer(letters)
        how = "one call of NumPy's sum-of-products loop (an outer product) into a new array"
    laid_out = _laid_out(left, right, output)

    def broadcast(operands: tuple[Any, ...], dry: bool = False) -> Any:
        # _matmul_lane's operand checks, written out again rather than shared: in a cold
        # call each Python frame costs about 0.3-0.7 us, a tenth of a small product
        if len(operands) != 2:
            return None
        a, b = operands
        if type(a) is not _ndarray or type(b) is not _ndarray:
            return None
        dtype = a.dtype
        if (a.ndim, b.ndim) != ranks or dtype not in _LANE_DTYPES:
            return None
        if b.dtype is not dtype and b.dtype != dtype:
            return None
        left_shape, right_shape = a.shape, b.shape
        for x, y in same:
            if left_shape[x] != right_shape[y]:
                return None
        combos = math.prod(left_shape)
        for ax in cols:
            combos *= right_shape[ax]
        if combos > most or not combos:  # empty: the plan's (NumPy's loop may abort)
            return None
        if combos > sure and _splits(a, b, combos, split):
            return None
        if dry:
            return f"{how}, on one thread ({combos:,} elements)"
        next(_answered)
        return run(a, b, laid_out(a, b))

    return broadcast


def _laid_out(
    left: tuple[int, ...], right: tuple[int, ...], output: tuple[int, ...]
) -> Callable[[Any, Any], Callable[..., Any]]:
    """``empty(a, b)``: how the plan's batch step lays out its new result
    (``plan._batch_order``: after the operand of more axes, the first of two as many),
    the order worked out once for a C-contiguous operand without axes of size 1."""
    first = len(left) >= len(right)
    labels = left if first else right
    plain = write_order(
        output, labels, (2,) * len(labels), contiguous_strides((2,) * len(labels), 1)
    )
    if len(set(output)) != len(output):
        return lambda a, b: _empty  # (a repeated output label: a zeroed output, not a lane's)
    identity = tuple(range(len(output)))
    plain_empty = ordered_empty(() if plain == identity else plain)

    def laid_out(a: Any, b: Any) -> Callable[..., Any]:
        lead = a if first else b
        if 1 not in lead.shape and lead.flags.c_contiguous:
            return plain_empty
        order = write_order(output, labels, lead.shape, lead.strides)
        return ordered_empty(() if order == identity else order)

    return laid_out


def _splits(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], combos: int, split: int) -> bool:
    """Whether the planner would split the product of ``a`` and ``b`` across threads."""
    size = a.dtype.itemsize
    moved = bytes_moved(a.shape, a.strides, size) + bytes_moved(b.shape, b.strides, size)
    return bool(moved + combos * size >= split)


def _outer(letters: str) -> Callable[[Any, Any, Callable[..., Any]], Any]:
    shape_of = _outer_shape(letters)

    def outer(a: Any, b: Any, empty: Callable[..., Any]) -> Any:
        if empty is _empty:
            return sum_of_products(letters, a, b, order="C")
        return sum_of_products(letters, a, b, out=empty(shape_of(a, b), a.dtype))

    return outer


def _outer_shape(letters: str) -> Callable[[Any, Any], tuple[int, ...]]:
    """The result's shape from the operands of ``letters`` (``ab,bc->abc``)."""
    ins, out = letters.split("->")
    left, right = ins.split(",")
    at = [(0, left.index(x)) if x in left else (1, right.index(x)) for x in out]

    def shape_of(a: Any, b: Any) -> tuple[int, ...]:
        shapes = (a.shape, b.shape)
        return tuple([shapes[k][ax] for k, ax in at])

    return shape_of


def _hadamard(
    left_perm: tuple[int, ...], right_perm: tuple[int, ...]
) -> Callable[[Any, Any, Callable[..., Any]], Any]:
    left_moved = None if left_perm == tuple(range(len(left_perm))) else left_perm
    right_moved = None if right_perm == tuple(range(len(right_perm))) else right_perm
    scalar = () if not left_perm else None  # rank 0: NumPy's scalar, as the plan returns

    def hadamard(a: Any, b: Any, empty: Callable[..., Any]) -> Any:
        if left_moved is not None:
            a = a.transpose(left_moved)
        if right_moved is not None:
            b = b.transpose(right_moved)
        # into a new array as the plan's kernel does: numpy.multiply's own allocation
        # (order="C") takes another complex loop, which rounds differently
        out = empty(a.shape, a.dtype)
        _multiply(a, b, out=out)
        return out if scalar is None else out[scalar]

    return hadamard


def _matmul_lane(form: MatmulForm, bounds: _Bounds) -> Lane:
    """``numpy.matmul`` over the operands transposed to ``(batch, rows, inner)`` and
    ``(batch, inner, cols)`` (``form.same``: axes of equal size; ``form.sized``: one axis
    per label), its result transposed to the output's order.  With one label of each kind
    (:class:`~.spec.matmul.Indices`), a missing kind is an axis of length 1; kinds of
    several labels (:class:`~.spec.matmul.Groups`, ``bsi,oi->bso``) are merged into one
    axis each by a reshape, a view for a C-contiguous operand whose group is a run of its
    axes (checked when compiled), of C-contiguous operands only.  An operand whose matrices
    matmul would copy (neither a unit row nor a unit column stride) is planned: the plan of
    such a small product may be one fused loop, not matmul."""
    (left_rank, right_rank), perms, shaping, same, sized, _, _ = form  # (any merge: C-contiguous)
    left_perm, right_perm, out_perm = perms
    most = bounds.combos
    left_moved = None if left_perm == tuple(range(left_rank)) else left_perm
    right_moved = None if right_perm == tuple(range(right_rank)) else right_perm
    out_moved = None if out_perm == tuple(range(len(out_perm))) else out_perm
    groups = shaping if isinstance(shaping, Groups) else None
    indices = shaping if isinstance(shaping, Indices) else Indices(None, None, None)
    left_index, right_index, result_index = indices  # closure cells: no attribute reads
    merged = ", label groups merged as views" if groups is not None else ""

    def product(operands: tuple[Any, ...], dry: bool = False) -> Any:
        if len(operands) != 2:
            return None
        a, b = operands
        if type(a) is not _ndarray or type(b) is not _ndarray:
            return None
        dtype = a.dtype
        if a.ndim != left_rank or b.ndim != right_rank or dtype not in _LANE_DTYPES:
            return None
        if b.dtype is not dtype and b.dtype != dtype:
            return None
        shapes = (a.shape, b.shape)
        left, right = shapes
        for x, y in same:
            if left[x] != right[y]:
                return None
        combos = 1
        for op, ax in sized:
            combos *= shapes[op][ax]
        # the result has at most ``combos`` elements (the memory limit), unless the product
        # is empty: then the planned way (over an empty contracted label, its result of
        # zeros may pass the limit)
        if combos > most or not combos:
            return None
        if groups is not None and not (a.flags.c_contiguous and b.flags.c_contiguous):
            return None
        if left_moved is not None:
            a = a.transpose(left_moved)
        if right_moved is not None:
            b = b.transpose(right_moved)
        if groups is None:
            if left_index is not None:
                a = a[left_index]
            if right_index is not None:
                b = b[right_index]
            # C-ordered matrices, the common case, tested inline (else blas_ready's test)
            item, (ra, ca), (rb, cb) = dtype.itemsize, a.strides[-2:], b.strides[-2:]
            c_rows = ca == item and ra >= a.shape[-1] * item and cb == item
            if not (c_rows and rb >= b.shape[-1] * item) and not (
                _matrices_ready(a) and _matrices_ready(b)
            ):
                # matmul would copy: the plan's copy and product may be one fused loop
                # instead (a review: other bits, another layout than the plan's): planned
                return None
        if dry:
            return (
                f"one numpy.matmul over transposed views{merged} ({combos:,} index "
                f"combinations, at most {bounds.lane_max:,})"
            )
        next(_answered)
        if groups is not None:
            return _merged_product(a, b, left, right, groups, out_moved)
        result = _matmul(a, b)
        if result_index is not None:
            result = result[result_index]
        return result if out_moved is None else result.transpose(out_moved)

    return product


def _matrices_ready(x: Any) -> bool:
    """Whether ``numpy.matmul`` takes the matrices of ``x`` (its two last axes) as they are,
    as the plan's one matmul step over views would: else the plan copies the operand first,
    and a small plan's steps are one fused loop."""
    rows, cols = x.shape[-2:]
    row_stride, col_stride = x.strides[-2:]
    return blas_ready(rows, cols, row_stride, col_stride, x.itemsize)


def _merged_product(a: Any, b: Any, left: Any, right: Any, groups: Groups, out_moved: Any) -> Any:
    """The product of transposed operands whose kinds are merged by reshapes (views)."""
    left_shape, right_shape, shape = merged_shapes(left, right, groups)
    result = _matmul(a.reshape(left_shape), b.reshape(right_shape)).reshape(shape)
    if not result.ndim:
        return result[()]
    return result if out_moved is None else result.transpose(out_moved)
