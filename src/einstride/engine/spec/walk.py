"""The path walk every backend's planner shares.

A path (NumPy's format) names, per entry, positions in the list of live operands; the entry's
operands are contracted (pairwise, left to right) and the result goes to the end of the list.
:func:`walk_path` keeps that list and tells each contraction which labels must survive it
(the output's and those of every operand still waiting); the backend only says how one
operand (``unary``) or one pair (``pair``) is contracted.  :func:`plan_path` finds the path
over the operands as every planner sees them (broadcast size-1 ``...`` axes dropped,
repeated labels taken as diagonals), and :func:`path_flops` counts its FLOPs.

>>> from .equation import parse_equation
>>> spec = parse_equation("ij,jk,kl->il", (2, 3), (3, 4), (4, 5))
>>> path = plan_path(spec, "greedy")
>>> path
((1, 2), (0, 1))
>>> names = lambda labels: "".join(spec.names[x] for x in labels)
>>> steps = []
>>> def pair(a, b, keep, final):
...     labels = tuple(x for x in dict.fromkeys(a + b) if x in keep)
...     steps.append(f"{names(a)},{names(b)}->{names(labels)}")
...     return labels
>>> names(walk_path(prepared_labels(spec), path, spec.output, unary=None, pair=pair))
'il'
>>> steps
['jk,kl->jl', 'ij,jl->il']
>>> path_flops(spec, path) < path_flops(spec, ((0, 1, 2),), naive=True)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from .equation import EinsumSpec
from .paths import check_optimize, find_path
from .search import PathChoice, recall_choice

__all__ = [
    "flop_count",
    "path_choice_of",
    "path_flops",
    "plan_path",
    "prepared_labels",
    "search_problem",
    "walk_path",
]

T = TypeVar("T")
Labels = tuple[int, ...]


def _labels_of(item: Any) -> Iterable[int]:
    labels: Iterable[int] = item if isinstance(item, tuple) else item.labels
    return labels


def walk_path(
    items: Sequence[T],
    path: Sequence[Sequence[int]],
    output: Iterable[int],
    *,
    unary: Callable[[T, frozenset[int], bool], T] | None,
    pair: Callable[[T, T, frozenset[int], bool], T],
    labels_of: Callable[[T], Iterable[int]] = _labels_of,
) -> T:
    """Contract ``items`` along ``path``; returns the last result.  ``unary(x, keep, final)``
    and ``pair(a, b, keep, final)`` get the labels that must survive (``keep``) and whether
    this is the contraction that produces the result (``final``)."""
    out = frozenset(output)
    live = list(items)

    def keep(*groups: Sequence[T]) -> frozenset[int]:
        needed = set(out)
        for group in groups:
            for item in group:
                needed.update(labels_of(item))
        return frozenset(needed)

    for k, entry in enumerate(path):
        final = k == len(path) - 1
        picked = [live[i] for i in entry]
        for i in sorted(entry, reverse=True):
            del live[i]
        if len(picked) == 1:
            assert unary is not None, "a one-operand path entry needs a unary contraction"
            live.append(unary(picked[0], keep(live), final))
            continue
        acc = picked[0]
        for j in range(1, len(picked)):
            last = final and j == len(picked) - 1
            acc = pair(acc, picked[j], keep(live, picked[j + 1 :]), last)
        live.append(acc)
    return live[-1]


def prepared_labels(spec: EinsumSpec) -> list[Labels]:
    """Each operand's distinct labels as the planners see it: stretched size-1 ``...`` axes
    dropped, each repeated label once (its diagonal)."""
    found = []
    for term, stretched in zip(spec.inputs, spec.stretched):
        if not stretched and len(set(term)) == len(term):
            found.append(term)  # the common case, without a generator (networks' first calls)
            continue
        kept = (lab for ax, lab in enumerate(term) if ax not in stretched)
        found.append(tuple(dict.fromkeys(kept)))
    return found


def search_problem(spec: EinsumSpec) -> tuple[list[Labels], Labels]:
    """The operands' labels and the output's (each once) as the path finders take them.

    >>> from .equation import parse_equation
    >>> search_problem(parse_equation("iij,jk->ik", (2, 2, 3), (3, 4)))
    ([(0, 1), (1, 2)], (0, 2))
    """
    return prepared_labels(spec), tuple(dict.fromkeys(spec.output))


def plan_path(spec: EinsumSpec, optimize: Any) -> tuple[tuple[int, ...], ...]:
    """The contraction path of ``spec`` for ``optimize`` (``((0,),)`` for one operand; an
    explicit path or a finder name is checked whatever the operand count)."""
    n = len(spec.inputs)
    if n in (1, 2) and not isinstance(optimize, (list, tuple)):
        check_optimize(optimize)  # one way only: no search, but a bad value is an error
        return ((0,),) if n == 1 else ((0, 1),)
    return find_path(*search_problem(spec), spec.sizes, optimize)


def path_choice_of(
    spec: EinsumSpec, path: Sequence[Sequence[int]], form: Any = "auto"
) -> PathChoice | None:
    """How ``path`` was found for ``spec``, when a recent search under the ``optimize=``
    form ``form`` (``paths.finder_form``) found it (for reports).

    >>> from .equation import parse_equation
    >>> spec = parse_equation("ij,jk,kl->il", (2, 3), (3, 4), (4, 5))
    >>> path_choice_of(spec, plan_path(spec, "auto")).finder
    'optimal'
    """
    return recall_choice(*search_problem(spec), spec.sizes, path, form)


def flop_count(labels: Iterable[int], inner: bool, terms: int, sizes: Sequence[int]) -> int:
    """opt_einsum's FLOP convention: the size of all labels times ``max(1, terms - 1)``,
    plus one when something is summed (``inner``).

    >>> flop_count((0, 1), True, 2, (3, 4))
    24
    """
    size: int = math.prod(sizes[x] for x in set(labels))
    return size * (max(1, terms - 1) + (1 if inner else 0))


def path_flops(spec: EinsumSpec, path: Sequence[Sequence[int]], *, naive: bool = False) -> int:
    """FLOPs of ``spec`` along ``path`` in opt_einsum's convention, labels of one operand
    summed before each product (``naive``: one loop over every label at once)."""
    sizes = spec.sizes
    if naive:
        every = {lab for term in spec.inputs for lab in term}
        return flop_count(every, bool(every - set(spec.output)), len(spec.inputs), sizes)
    total = 0

    def reduce(labels: Labels, keep: frozenset[int]) -> Labels:
        nonlocal total
        kept = tuple(lab for lab in labels if lab in keep)
        if kept != labels:
            total += flop_count(labels, True, 1, sizes)
        return kept

    def unary(labels: Labels, keep: frozenset[int], final: bool) -> Labels:
        return reduce(labels, keep)

    def pair(a: Labels, b: Labels, keep: frozenset[int], final: bool) -> Labels:
        nonlocal total
        both = tuple(dict.fromkeys(a + b))
        total += flop_count(both, any(lab not in keep for lab in both), 2, sizes)
        a, b = reduce(a, keep | set(b)), reduce(b, keep | set(a))
        return tuple(lab for lab in dict.fromkeys(a + b) if lab in keep)

    walk_path(prepared_labels(spec), path, spec.output, unary=unary, pair=pair)
    return total
