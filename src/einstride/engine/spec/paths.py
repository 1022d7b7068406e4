"""Contraction paths for three and more operands: einstride's budgeted search (the default,
``optimize="auto"``, see :mod:`.search`) or any of opt_einsum's path finders.

Labels are integer ids inside einstride; opt_einsum sees them as ``opt_einsum.get_symbol``
characters, so any number of labels works.  A path uses NumPy's format: each entry names the
positions (in the current operand list) contracted together; the result goes to the end.

>>> find_path([(0, 1), (1, 2), (2, 3)], (0, 3), (10, 20, 30, 40), "greedy")
((1, 2), (0, 1))
>>> find_path([(0, 1), (1, 2), (2, 3)], (0, 3), (10, 20, 30, 40), False)   # left to right
((0, 1, 2),)
>>> choose_path([(0, 1), (1, 2), (2, 3)], (0, 3), (10, 20, 30, 40), "greedy").finder
"opt_einsum 'greedy'"
>>> find_path([(0,), (0,)], (), (3,), [(0, 1)])
((0, 1),)
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import opt_einsum  # type: ignore[import-untyped]
from opt_einsum import paths as oe_paths
from opt_einsum.path_random import RandomOptimizer  # type: ignore[import-untyped]

from ...errors import EinsumError, EinsumPathError, EinsumTypeError
from .costmodel import path_cost
from .equation import int_tuple
from .search import PathChoice, remember_choice, search_path

__all__ = [
    "OPTIMIZE_NAMES",
    "FoundPath",
    "check_optimize",
    "choose_path",
    "derived_optimize",
    "find_path",
    "finder_form",
    "given_path",
    "optimize_key",
    "optimize_of_key",
    "path_fits_any_size",
    "unoptimized",
]


def _finder_names() -> tuple[str, ...]:
    """opt_einsum's documented path finder names that this opt_einsum provides."""
    names = (
        "auto",
        "auto-hq",
        "branch-1",
        "branch-2",
        "branch-all",
        "dp",
        "dynamic-programming",
        "eager",
        "greedy",
        "opportunistic",
        "optimal",
        "random-greedy",
        "random-greedy-128",
    )
    found = []
    for name in names:
        try:
            oe_paths.get_path_fn(name)
        except (KeyError, ValueError, NotImplementedError):
            continue
        found.append(name)
    return tuple(found)


OPTIMIZE_NAMES = _finder_names()
"""opt_einsum's own path finder names, which ``optimize`` accepts (besides False, True,
path lists, finder objects and any name registered with opt_einsum's
``paths.register_path_fn``, as ``import cotengra`` registers ``"hyper"``)."""


def optimize_key(optimize: Any) -> Any:
    """A hashable stand-in for ``optimize`` to key plan caches, or None if it cannot be
    cached (an optimizer object may keep state between calls).

    >>> optimize_key("auto"), optimize_key(False), optimize_key(["einsum_path", (0, 1)])
    ('auto', False, ('path', (0, 1)))
    """
    if optimize is None:
        return "auto"
    if isinstance(optimize, FoundPath):  # (its finder too: the report names it)
        return ("found", optimize.form, *optimize)
    limited = _limited(optimize)
    if limited is not None:
        return ("limited", *limited)
    if isinstance(optimize, bool):
        return optimize
    if isinstance(optimize, str):
        return optimize
    if isinstance(optimize, (list, tuple)):
        try:
            return ("path", *(_entry(e) for e in optimize if not _is_path_head(e)))
        except (TypeError, ValueError):
            return None
    return None


def optimize_of_key(opt_key: Any) -> Any:
    """The ``optimize=`` value that :func:`optimize_key` made ``opt_key`` of (what the
    caches plan with, from their keys).

    >>> for form in ("auto", ("greedy", 9), [(0, 1)], FoundPath([(0, 1)], "auto")):
    ...     assert finder_form(optimize_of_key(optimize_key(form))) == finder_form(form)
    """
    if not isinstance(opt_key, tuple):
        return opt_key
    if opt_key[0] == "limited":
        return opt_key[1:]
    if opt_key[0] == "found":
        return FoundPath(opt_key[2:], opt_key[1])
    return list(opt_key[1:])


def derived_optimize(optimize: Any, n: int | None = None) -> Any:
    """``optimize=`` for an einsum made from a call's (a gradient's, a path step's): an
    explicit path names the call's operands, ``False`` (left-to-right pairs) their order,
    which a derived einsum does not keep (a gradient's operands are the cotangent and the
    others: a review found torch's backward of ``ab,bc,cd,de->ae`` with ``optimize=False``
    starting with an outer product, 400x the time of ``"auto"`` and over a memory limit
    the forward call met), and opt_einsum's single-use optimizers (the random ones,
    BranchBound) refuse a second contraction ("the arguments ... have changed": reviews
    found gradients of three operands or more failing), so those einsums search their own
    path (``"auto"``); any other form, NumPy's ``(name, cap)`` included, is passed on.
    With the call's operand count ``n``, an explicit path is checked first (a review
    found an incomplete one accepted by ``einsum_vjp``), as is a cap.

    >>> derived_optimize([(0, 1), (0, 1)]), derived_optimize("greedy"), derived_optimize(False)
    ('auto', 'greedy', 'auto')
    >>> derived_optimize(opt_einsum.RandomGreedy()), derived_optimize(("greedy", 10), 3)
    ('auto', ('greedy', 10))
    >>> derived_optimize([(0, 1)], 3)
    Traceback (most recent call last):
      ...
    einstride.errors.EinsumPathError: einsum: the path [(0, 1)] leaves 2 operands; it must ...
    """
    if _limited(optimize) is not None:
        return optimize
    if isinstance(optimize, (list, tuple)):
        if n is not None:
            _checked_path(optimize, n)
        return "auto"
    if optimize is False or isinstance(optimize, (RandomOptimizer, oe_paths.BranchBound)):
        return "auto"
    return optimize


def path_fits_any_size(optimize: Any, n: int) -> bool:
    """Whether the path that ``optimize`` gives ``n`` operands may be chosen at a shape
    class's representative sizes (:mod:`..backends.numpy.skeleton`, half-octave sizes) and
    run at the real ones: with two operands or fewer (one way), an explicit path, or
    einstride's own search (``"auto"``: a first call's budgeted search, documented as
    decided for the class).  A named finder (``"optimal"``, True's greedy), NumPy's
    ``(name, memory_limit)`` or an optimizer object is asked for the real sizes: a review
    found ``("greedy", 12)`` keeping its cap only at the rounded sizes (an intermediate
    of 15 elements) and ``"optimal"`` 1.44x the optimum's FLOPs.

    >>> path_fits_any_size("auto", 5), path_fits_any_size([(0, 1), (0, 1)], 3)
    (True, True)
    >>> path_fits_any_size("optimal", 3), path_fits_any_size(("greedy", 12), 4)
    (False, False)
    >>> path_fits_any_size("optimal", 2)
    True
    """
    if n <= 2 or optimize is None or (type(optimize) is str and optimize == "auto"):
        return True
    return isinstance(optimize, (list, tuple)) and _limited(optimize) is None


def _limited(optimize: Any) -> tuple[str, int] | None:
    """NumPy's ``(path finder name, memory limit)`` form: the limit is the most elements an
    intermediate may have; None for every other form.

    >>> _limited(("greedy", 100)), _limited(["einsum_path", (0, 1)])
    (('greedy', 100), None)
    >>> _limited(("greedy", 1e3))   # NumPy compares sizes with a float limit too
    ('greedy', 1000)
    """
    if not isinstance(optimize, (list, tuple)) or len(optimize) != 2:
        return None
    name, limit = optimize
    if not isinstance(name, str) or name == "einsum_path" or isinstance(limit, (tuple, list)):
        return None
    if isinstance(limit, (float, np.floating)) and not math.isnan(limit):
        # (sizes are ints: its floor caps the same; infinity caps nothing)
        if math.isfinite(limit):
            return name, max(int(limit), 0)
        return name, _NO_CAP if limit > 0 else 0
    if isinstance(limit, bool) or not hasattr(limit, "__index__"):
        raise EinsumTypeError(  # NumPy's class
            f"einsum: optimize=({name!r}, {limit!r}) needs an int memory limit "
            "(the most elements an intermediate may have)"
        )
    # a negative cap holds nothing, as NumPy's (opt_einsum reads -1 as no limit: a review)
    return name, max(int(limit), 0)


_NO_CAP = 10**400  # an int cap past every size (a float's infinity)


def _is_path_head(entry: Any) -> bool:
    """NumPy's paths may start with the string ``"einsum_path"``; no other string is allowed."""
    return isinstance(entry, str) and entry == "einsum_path"


def _entry(entry: Any) -> tuple[int, ...]:
    if isinstance(entry, (str, bytes)):
        raise TypeError("not a path entry")
    return tuple(_index(i) for i in entry)


def find_path(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    optimize: Any = "auto",
    memory_limit: int | None = None,
) -> tuple[tuple[int, ...], ...]:
    """The contraction path for ``inputs`` (distinct label ids per operand) -> ``output``.

    ``optimize``: ``"auto"`` (einstride's budgeted search), False (left to right), True
    (greedy, as NumPy), a path finder name (see :data:`OPTIMIZE_NAMES`), NumPy's
    ``(name, memory_limit)``, an explicit path (NumPy's format, with or without the leading
    ``"einsum_path"``), or any opt_einsum ``PathOptimizer``, cotengra optimizer or path
    function.  ``memory_limit``: the most elements an intermediate may have, passed to the
    path finder (opt_einsum's meaning: a finder that cannot keep to it ends the path with one
    entry of every operand left).
    """
    return choose_path(inputs, output, sizes, optimize, memory_limit).path


def given_path(optimize: Any, n: int) -> tuple[tuple[int, ...], ...] | None:
    """An explicit path over ``n`` operands, checked (and not rated: nothing to choose),
    or None when ``optimize`` names a way to find one.

    >>> given_path(["einsum_path", (0, 1), (0, 1)], 3), given_path("greedy", 3)
    (((0, 1), (0, 1)), None)
    """
    if isinstance(optimize, (list, tuple)) and _limited(optimize) is None:
        return _checked_path(optimize, n)
    return None


def check_optimize(optimize: Any) -> None:
    """Raise :class:`EinsumError` for an ``optimize=`` that no path search accepts (checked
    even where there is only one way to contract)."""
    limited = _limited(optimize)
    if limited is not None:
        optimize = limited[0]
    if isinstance(optimize, (list, tuple)) or optimize is None or isinstance(optimize, bool):
        return
    if isinstance(optimize, str) and optimize == "auto":
        return
    _finder(optimize)


def choose_path(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    optimize: Any = "auto",
    memory_limit: int | None = None,
) -> PathChoice:
    """:func:`find_path` with how the path was found and what the cost model says of it;
    every choice but a given path is remembered for the plan report, under the form of
    ``optimize`` that found it (:func:`finder_form`)."""
    n, form = len(inputs), finder_form(optimize)
    limited = _limited(optimize)
    if limited is not None:  # NumPy's (name, limit): the tighter limit wins
        optimize, cap = limited
        memory_limit = cap if memory_limit is None else min(cap, memory_limit)
    if isinstance(optimize, (list, tuple)):
        return _rated(inputs, output, sizes, _checked_path(optimize, n), "given")
    check_optimize(optimize)
    auto = optimize is None or (isinstance(optimize, str) and optimize == "auto")
    if auto and memory_limit is not None:
        optimize, auto = "greedy", False  # opt_einsum's finders keep to a size limit
    if optimize is False or n <= 2:
        # NumPy's optimize=False path: one entry of every operand, contracted left to right
        path = (tuple(range(n)),) if n >= 1 else ()
        choice = _rated(inputs, output, sizes, path, "left to right")
    elif auto:
        choice = search_path(inputs, output, sizes)
    else:
        found = _external(inputs, output, sizes, optimize, memory_limit)
        choice = _rated(inputs, output, sizes, found, _finder_name(optimize))
        if memory_limit is not None and choice.largest > memory_limit:
            # a finder that ignores the cap (opt_einsum's random ones: a review); greedy
            # keeps to it, else ends the path with one entry of every operand left
            found = _external(inputs, output, sizes, "greedy", memory_limit)
            name = f"opt_einsum 'greedy' (within the cap {_finder_name(optimize)} passed)"
            choice = _rated(inputs, output, sizes, found, name)
    if n > 2:
        remember_choice(inputs, output, sizes, choice, form)
    return choice


class FoundPath(list[tuple[int, ...]]):
    """A path a finder found, given again as ``optimize=`` to plan it (a network's direct
    way, an expression's plans, a sliced plan): an explicit path that keeps the
    ``optimize=`` form that found it, so that the plan's report still names its finder.

    >>> found = FoundPath([(1, 2), (0, 1)], "auto")
    >>> found == [(1, 2), (0, 1)], finder_form(found)
    (True, 'auto')
    """

    def __init__(self, path: Sequence[Sequence[int]], form: Any) -> None:
        super().__init__(tuple(step) for step in path)
        self.form = form


def unoptimized(optimize: Any) -> bool:
    """Whether ``optimize`` asks for NumPy's ``optimize=False``: False itself, or a path it
    found, given again (an expression's: a review found its plans skipping the one loop
    that einsum falls back to).

    >>> unoptimized(False), unoptimized(FoundPath([(0, 1, 2)], False)), unoptimized([(0, 1)])
    (True, True, False)
    """
    return optimize is False or (isinstance(optimize, FoundPath) and optimize.form is False)


def finder_form(optimize: Any) -> Any:
    """What a plan's path came from, as the plan report's memo of choices keys it (a review
    found an "auto" plan's report naming the finder of another call that found the same
    path): the ``optimize=`` value where it is hashable, ``"given"`` for an explicit path,
    the identity of an optimizer object.

    >>> finder_form(None), finder_form(("greedy", 9)), finder_form([(0, 1)])
    ('auto', ('limited', 'greedy', 9), 'given')
    """
    key = optimize_key(optimize)  # (one reading of the forms: the caches' key)
    if isinstance(key, tuple) and key[0] != "limited":
        return key[1] if key[0] == "found" else "given"
    if key is None:  # an object, or a path the planner will refuse
        return "given" if isinstance(optimize, (list, tuple)) else ("object", id(optimize))
    return key


def _external(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    optimize: Any,
    memory_limit: int | None,
) -> tuple[tuple[int, ...], ...]:
    """The path of an opt_einsum finder (by name or object) or a cotengra optimizer; an
    opt_einsum finder that always finds the same path (:data:`_SAME_EVERY_TIME`) searches a
    problem once (``einsum_path`` plans a call and reports it, each plan searching: a review
    found ``"dp"`` run four times on a 30-operand network, 4x opt_einsum's time)."""
    if isinstance(optimize, str) and optimize in _SAME_EVERY_TIME:
        key = (tuple(map(tuple, inputs)), tuple(output), tuple(sizes), optimize, memory_limit)
        return _searched_once(*key)
    return _searched(inputs, output, sizes, optimize, memory_limit)


# opt_einsum's deterministic finders (the random ones, "auto-hq" past its DP range and any
# registered name may find another path on each search)
_SAME_EVERY_TIME = frozenset(
    {"greedy", "eager", "opportunistic", "optimal", "dp", "dynamic-programming", "branch-1",
     "branch-2", "branch-all"}
)  # fmt: skip


def _searched(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    optimize: Any,
    memory_limit: int | None,
) -> tuple[tuple[int, ...], ...]:
    try:
        return _found_by(_finder(optimize), inputs, output, sizes, memory_limit)
    except OverflowError:  # (a review: random-greedy's jitter, over sizes past a float)
        raise EinsumError(
            f"einsum: the path finder {optimize!r} cannot price these sizes (past a float's "
            "range: shapes for planning only); optimize='auto' can"
        ) from None


def _found_by(
    finder: Any,
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    memory_limit: int | None,
) -> tuple[tuple[int, ...], ...]:
    """:func:`_searched`'s call of ``finder`` over opt_einsum's symbols."""
    symbol = opt_einsum.get_symbol
    oe_inputs = [frozenset(symbol(label) for label in term) for term in inputs]
    oe_output = frozenset(symbol(label) for label in output)
    used = {label for term in inputs for label in term}
    size_dict = {symbol(label): max(sizes[label], 1) for label in used}
    if callable(getattr(finder, "search", None)):  # cotengra's: a contraction tree
        found = finder.search(oe_inputs, oe_output, size_dict)
        path = found.get_path() if hasattr(found, "get_path") else found
    elif memory_limit is not None:
        try:
            path = finder(oe_inputs, oe_output, size_dict, memory_limit)
        except RuntimeError:  # opt_einsum's dp finds no pair under the cap (a review):
            path = [tuple(range(len(inputs)))]  # one step, as the other finders fall back
    else:
        path = finder(oe_inputs, oe_output, size_dict, memory_limit)
    return _checked_path(list(path), len(inputs))


_searched_once = functools.lru_cache(maxsize=256)(_searched)  # (hashable arguments)


def _finder_name(optimize: Any) -> str:
    """The finder as the report names it: opt_einsum's by name, an object by its package and
    class, a function by its package and name (a review: "builtins function").

    >>> _finder_name(oe_paths.greedy), _finder_name(oe_paths.BranchBound())
    ('opt_einsum greedy', 'opt_einsum BranchBound')
    """
    if optimize is True:
        return "opt_einsum 'greedy' (optimize=True)"
    if isinstance(optimize, str):
        return f"opt_einsum {optimize!r}"
    if isinstance(optimize, functools.partial):
        return f"functools.partial of {_finder_name(optimize.func)}"
    named = optimize if inspect.isroutine(optimize) else type(optimize)
    package = (getattr(named, "__module__", None) or "?").split(".")[0]
    return f"{package} {getattr(named, '__qualname__', type(optimize).__name__)}"


def _rated(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    path: tuple[tuple[int, ...], ...],
    finder: str,
) -> PathChoice:
    ns, flops, largest = path_cost(inputs, output, sizes, path)
    return PathChoice(path=path, finder=finder, cost_ns=ns, flops=flops, largest=largest)


def _finder(optimize: Any) -> Any:
    if optimize is True or optimize is None:
        optimize = "greedy" if optimize is True else "auto"
    if isinstance(optimize, str):
        try:  # opt_einsum's registry, asked now: names registered since (cotengra's "hyper")
            return oe_paths.get_path_fn(optimize)
        except (KeyError, ValueError, NotImplementedError):
            raise EinsumError(
                f"einsum: unknown optimize={optimize!r}; use False, True, one of "
                f"{', '.join(OPTIMIZE_NAMES)} (or a name registered with opt_einsum's "
                "paths.register_path_fn), a path list or an opt_einsum PathOptimizer"
            ) from None
    if callable(optimize) or callable(getattr(optimize, "search", None)):
        return optimize
    raise EinsumTypeError(  # NumPy's class: "Did not understand the path"
        f"einsum: optimize={optimize!r} is neither a path finder name, a path list nor a "
        "PathOptimizer (or cotengra optimizer)"
    )


def _checked_path(path: Sequence[Any], n: int) -> tuple[tuple[int, ...], ...]:
    """Validate a NumPy-format path over ``n`` operands: it must end with one operand.  An
    empty path of one operand is its own step, ``(0,)`` (NumPy's path for one operand:
    the operand's sums and diagonals still run).

    >>> _checked_path(["einsum_path"], 1)
    ((0,),)
    """
    entries = [e for e in path if not _is_path_head(e)]
    if n == 1 and not entries:
        return ((0,),)
    live = n
    checked = []
    for k, entry in enumerate(entries):
        if (  # the common case, checked cheaply: a tuple of distinct ints in range
            int_tuple(entry)
            and entry
            and len(set(entry)) == len(entry)
            and min(entry) >= 0
            and max(entry) < live
        ):
            positions: tuple[int, ...] = entry
        else:
            positions = _checked_entry(k, entry, live)
        live -= len(positions) - 1
        checked.append(positions)
    if live != 1 and n > 0:
        raise EinsumPathError(
            f"einsum: the path {checked} leaves {live} operands; it must contract all {n} to one"
        )
    return tuple(checked)


def _checked_entry(k: int, entry: Any, live: int) -> tuple[int, ...]:
    """Path entry ``k`` as a tuple of ints naming distinct operands of the ``live`` ones."""
    try:
        positions = tuple(_index(i) for i in entry)
    except TypeError:
        raise EinsumTypeError(  # NumPy's class
            f"einsum: path entry {k} ({entry!r}) is not a tuple of ints"
        ) from None
    if not positions or len(set(positions)) != len(positions):
        raise EinsumError(f"einsum: path entry {k} {positions} must name distinct operands")
    bad = [i for i in positions if not 0 <= i < live]
    if bad:
        raise EinsumError(
            f"einsum: path entry {k} {positions} names operand {bad[0]}, but only {live} "
            "are left at that point"
        )
    return positions


def _index(value: Any) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError("not an int")
    return int(value)
