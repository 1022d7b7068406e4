"""Slicing: cut labels into chunks so that a contraction fits a memory limit.

When a contraction's buffers would not fit the memory it may use, it can run in *slices*:
some labels are cut into chunks of a chosen width, and the contraction runs once per
combination of chunks, on views of the operands.  The chunks of an output label write
disjoint parts of the result; the chunks of a summed label give partial results that are
added up.  Every slice follows the same path, so the result is the unsliced one up to the
order of the sums.

This module is the backend-independent half.  :func:`path_model` describes a path as the
slicer sees it: each contraction's labels and FLOPs, and which buffers are alive together.
:func:`find_slicing` chooses the widths.  Like cotengra's ``SliceFinder`` it is greedy with
a few randomised restarts, minimising the FLOPs of all slices together; unlike it, it cuts
labels into chunks rather than single indices (fewer, larger slices), it measures the peak
over every buffer alive at once rather than the largest one, and the backend says what a
choice costs in memory (``peak_of``: its buffers, the result, an accumulator).

>>> from .equation import parse_equation
>>> spec = parse_equation("ab,cbe,ae->ac", (64, 64), (64, 64, 64), (64, 64))
>>> model = path_model(spec, ((0, 2), (0, 1)))        # ab,ae->abe, then abe,cbe->ac
>>> model.buffer_elements(model.sizes)                  # the intermediate abe
262144
>>> found = find_slicing(model, lambda widths, elements: 8 * elements, 2**18)
>>> found.describe(spec.names), found.n_slices, found.overhead
('a: 8 chunks of 8', 8, 0.0)
>>> found.chunks(0)[:2]
((0, 8), (8, 16))
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from .costmodel import as_float
from .equation import EinsumSpec
from .walk import prepared_labels, walk_path

__all__ = [
    "MAX_SLICES",
    "SLICE_FLOPS",
    "Contraction",
    "PathModel",
    "Slicing",
    "find_slicing",
    "make_slicing",
    "path_model",
]

SLICE_FLOPS = 100_000
"""What one more slice costs, counted in FLOPs: the overhead of running a plan once (tens
of microseconds), so that among choices of equal FLOPs the search takes fewer slices."""

MAX_SLICES = 1 << 16
"""The most slices a search may choose: past this, the overhead of the calls alone takes
seconds, and a call that needs more is refused rather than slowly obeyed."""

RESTARTS = 8
"""Greedy searches per :func:`find_slicing` (the first without randomness)."""

Widths = tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Contraction:
    """One contraction of the path: the labels it loops over and its FLOPs unsliced."""

    labels: frozenset[int]
    flops: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PathModel:
    """A path as the slicer sees it: the label ``sizes``, the ``output`` labels, every
    contraction, and the ``moments``: for each buffer made, the label sets of all buffers
    alive right then (the operands and the result are not buffers; an operand the backend
    copies is one, alive from the start)."""

    sizes: tuple[int, ...]
    output: frozenset[int]
    contractions: tuple[Contraction, ...]
    moments: tuple[tuple[frozenset[int], ...], ...]

    def flops(self, widths: Widths) -> int:
        """The FLOPs of all slices together: a contraction runs once per chunk of every
        sliced label it does not loop over (exact, the last chunks may be narrower)."""
        counts = chunk_counts(self.sizes, widths)
        sliced = [label for label, n in enumerate(counts) if n > 1]
        total = 0
        for c in self.contractions:
            total += c.flops * math.prod(counts[x] for x in sliced if x not in c.labels)
        return total

    def flops_within(self, widths: Widths) -> tuple[int, dict[int, int]]:
        """:meth:`flops` at ``widths``, and for each label the part of it that the
        contractions looping over that label make: a label's chunk count multiplies the
        rest alone, so a search can price a new width of one label without a new pass."""
        counts = chunk_counts(self.sizes, widths)
        sliced = [label for label, n in enumerate(counts) if n > 1]
        total, inside = 0, dict[int, int]()
        for c in self.contractions:
            term = c.flops * math.prod(counts[x] for x in sliced if x not in c.labels)
            total += term
            for x in c.labels:
                inside[x] = inside.get(x, 0) + term
        return total, inside

    def buffer_elements(self, widths: Widths) -> int:
        """The most elements the buffers of one slice hold at once."""
        return max((_elements(moment, widths) for moment in self.moments), default=0)

    def buffer_total(self, widths: Widths) -> int:
        """The elements of every moment added up (a tie-breaker for the search)."""
        return sum(_elements(moment, widths) for moment in self.moments)

    def halvings(
        self, widths: Widths, labels: Iterable[int], *, whole: bool = False
    ) -> tuple[int, int, dict[int, tuple[int, int]]]:
        """:meth:`buffer_elements` and :meth:`buffer_total` at ``widths``, and for each of
        ``labels`` the two with its width halved (rounded up; ``whole``: cut to 1), from one
        pass over the moments: a buffer's elements scale by the new width over the old,
        exactly (a review: the search evaluated both afresh per label and step, seconds for
        a 7 x 7 grid's limit)."""
        sums: list[int] = []
        shares: dict[int, dict[int, int]] = {}  # per label: its elements in each moment
        for m, moment in enumerate(self.moments):
            total = 0
            for labels_of in moment:
                n = math.prod(widths[x] for x in labels_of)
                total += n
                for x in labels_of:
                    by_moment = shares.setdefault(x, {})
                    by_moment[m] = by_moment.get(m, 0) + n
            sums.append(total)
        everything = sum(sums)
        largest = sorted(range(len(sums)), key=sums.__getitem__, reverse=True)
        found: dict[int, tuple[int, int]] = {}
        for x in labels:
            old = widths[x]
            new = 1 if whole else -(-old // 2)
            touched = shares.get(x, {})
            most = next((sums[m] for m in largest if m not in touched), 0)  # (unchanged)
            cut = 0
            for m, part in touched.items():
                lost = part - part // old * new
                most, cut = max(most, sums[m] - lost), cut + lost
            found[x] = (most, everything - cut)
        return max(sums, default=0), everything, found


def _elements(moment: tuple[frozenset[int], ...], widths: Widths) -> int:
    return sum(math.prod(widths[x] for x in labels) for labels in moment)


def chunk_counts(sizes: Sequence[int], widths: Widths) -> tuple[int, ...]:
    """Chunks per label (a label of size 0 or 1 has one).

    >>> chunk_counts((10, 7, 0), (4, 7, 0))
    (3, 1, 1)
    """
    return tuple(-(-size // width) if 0 < width < size else 1 for size, width in zip(sizes, widths))


@dataclass(frozen=True, slots=True)
class _Item:
    labels: tuple[int, ...]
    buffer: int | None


class _Walk:
    """Records contractions and moments while :func:`walk_path` contracts label tuples."""

    def __init__(self, sizes: tuple[int, ...]) -> None:
        self.sizes = sizes
        self.contractions: list[Contraction] = []
        self.moments: list[tuple[frozenset[int], ...]] = []
        self.live: dict[int, frozenset[int]] = {}
        self.ids = itertools.count()

    def make(self, labels: tuple[int, ...]) -> _Item:
        key = next(self.ids)
        self.live[key] = frozenset(labels)
        self.moments.append(tuple(self.live.values()))
        return _Item(labels, key)

    def drop(self, *items: _Item) -> None:
        for item in items:
            if item.buffer is not None:
                self.live.pop(item.buffer, None)

    def count(self, labels: Collection[int], summed: bool) -> None:
        flops = math.prod(self.sizes[x] for x in set(labels)) * (2 if summed else 1)
        self.contractions.append(Contraction(labels=frozenset(labels), flops=flops))

    def reduce(self, item: _Item, keep: Collection[int], final: bool) -> _Item:
        kept = tuple(x for x in item.labels if x in keep)
        if kept == item.labels:
            return item
        self.count(item.labels, True)
        new = _Item(kept, None) if final else self.make(kept)
        self.drop(item)
        return new

    def unary(self, item: _Item, keep: frozenset[int], final: bool) -> _Item:
        return self.reduce(item, keep, final)

    def pair(self, a: _Item, b: _Item, keep: frozenset[int], final: bool) -> _Item:
        both = tuple(dict.fromkeys(a.labels + b.labels))
        self.count(both, any(x not in keep for x in both))
        a = self.reduce(a, keep | set(b.labels), False)
        b = self.reduce(b, keep | set(a.labels), False)
        labels = tuple(x for x in both if x in keep)
        result = _Item(labels, None) if final else self.make(labels)
        self.drop(a, b)
        return result


def path_model(
    spec: EinsumSpec, path: Sequence[Sequence[int]], *, copied: Collection[int] = ()
) -> PathModel:
    """The :class:`PathModel` of ``spec`` along ``path`` (NumPy's format), counting FLOPs as
    :func:`~.walk.path_flops` does; ``copied``: operands the backend copies (buffers)."""
    walk = _Walk(spec.sizes)
    items = [
        walk.make(labels) if i in copied else _Item(labels, None)
        for i, labels in enumerate(prepared_labels(spec))
    ]
    walk_path(
        items,
        path,
        spec.output,
        unary=walk.unary,
        pair=walk.pair,
        labels_of=lambda item: item.labels,
    )
    return PathModel(
        sizes=spec.sizes,
        output=frozenset(spec.output),
        contractions=tuple(walk.contractions),
        moments=tuple(walk.moments),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Slicing:
    """A choice of chunk ``widths`` (one per label; a label's size when it is not sliced),
    with the FLOPs of all its slices and of the unsliced contraction."""

    sizes: tuple[int, ...]
    widths: Widths
    output: frozenset[int]
    flops: int
    base_flops: int

    @property
    def counts(self) -> tuple[int, ...]:
        return chunk_counts(self.sizes, self.widths)

    @property
    def labels(self) -> tuple[int, ...]:
        """The sliced labels: output labels first (the outer loops), then summed ones."""
        sliced = [x for x, n in enumerate(self.counts) if n > 1]
        return tuple(sorted(sliced, key=lambda x: x not in self.output))

    @property
    def n_slices(self) -> int:
        return math.prod(self.counts)

    @property
    def overhead(self) -> float:
        """Extra FLOPs over the unsliced contraction, as a fraction of it."""
        return self.flops / self.base_flops - 1.0 if self.base_flops else 0.0

    @property
    def cost(self) -> int:
        return self.flops + SLICE_FLOPS * self.n_slices

    def chunks(self, label: int) -> tuple[tuple[int, int], ...]:
        """``(start, stop)`` of each chunk of ``label``."""
        size, width = self.sizes[label], self.widths[label]
        if self.counts[label] == 1:
            return ((0, size),)
        return tuple((lo, min(lo + width, size)) for lo in range(0, size, width))

    def widths_of(self, label: int) -> tuple[int, ...]:
        """The distinct widths of ``label``'s chunks, the full one first.

        >>> make_slicing(PathModel(sizes=(10,), output=frozenset(), contractions=(),
        ...                        moments=()), (4,)).widths_of(0)
        (4, 2)
        """
        size, width, count = self.sizes[label], self.widths[label], self.counts[label]
        if count == 1:
            return (size,)
        last = size - (count - 1) * width
        return (width,) if last == width else (width, last)

    def describe(self, names: Sequence[str]) -> str:
        """``"a: 8 chunks of 8, b: 3 chunks of 40 (the last 20)"``, or ``"nothing"``."""
        parts = []
        for x in self.labels:
            widths = self.widths_of(x)
            ragged = f" (the last {widths[-1]})" if len(widths) > 1 else ""
            parts.append(f"{names[x]}: {self.counts[x]} chunks of {self.widths[x]}{ragged}")
        return ", ".join(parts) or "nothing"


def make_slicing(model: PathModel, widths: Widths) -> Slicing:
    """The :class:`Slicing` of ``widths`` over ``model``."""
    return Slicing(
        sizes=model.sizes,
        widths=tuple(widths),
        output=model.output,
        flops=model.flops(tuple(widths)),
        base_flops=model.flops(model.sizes),
    )


def find_slicing(
    model: PathModel,
    peak_of: Callable[[Widths, int], int],
    limit: int,
    *,
    labels: Collection[int] | None = None,
    max_slices: int = MAX_SLICES,
    restarts: int = RESTARTS,
    seed: int = 0,
) -> Slicing | None:
    """The cheapest widths found whose ``peak_of(widths, elements)`` is at most ``limit``
    bytes (``elements``: the model's :meth:`~PathModel.buffer_elements` at those widths),
    over at most ``max_slices`` slices, cutting only ``labels`` (default: every label
    longer than 1); None when none was found.  ``peak_of`` must not grow when a width
    shrinks.

    Each search halves the width of the label that saves the most peak per FLOP it adds,
    until the peak fits; then widens each sliced label as far as the limit allows (to a
    width that cuts it into equal chunks when one is near).  The first search may cut any
    label; then one search per label cuts that label alone (often the best: an output
    label every step loops over costs no FLOPs); later ones add noise to the choices.  The
    cheapest result wins.
    """
    if peak_of(model.sizes, model.buffer_elements(model.sizes)) <= limit:
        return make_slicing(model, model.sizes)
    allowed = range(len(model.sizes)) if labels is None else labels
    candidates = sorted(x for x in allowed if model.sizes[x] > 1)
    rng = random.Random(seed)
    # a label alone is searched only where cutting it to width 1 fits (else its search
    # finds nothing: the peak does not grow as a width shrinks)
    _, _, whole = model.halvings(model.sizes, candidates, whole=True)
    alone = [x for x in candidates if peak_of(_narrowed(model.sizes, x, 1), whole[x][0]) <= limit]
    searches = (
        [(candidates, 0.0)]
        + [([x], 0.0) for x in alone]
        + [(candidates, 0.5)] * max(restarts - 1, 0)
    )
    best: Slicing | None = None
    for cut, noise in searches:
        widths = _shrink(model, peak_of, limit, cut, max_slices, rng, noise)
        if widths is None:
            continue
        order = [x for x in cut if widths[x] < model.sizes[x]]
        if noise:
            rng.shuffle(order)
        found = make_slicing(model, _grow(model, peak_of, limit, widths, order))
        if best is None or (found.cost, found.n_slices) < (best.cost, best.n_slices):
            best = found
    return best


def _shrink(
    model: PathModel,
    peak_of: Callable[[Widths, int], int],
    limit: int,
    candidates: Sequence[int],
    max_slices: int,
    rng: random.Random,
    noise: float,
) -> Widths | None:
    """Halve widths greedily until the peak fits (None: no halving helps any more)."""
    widths = model.sizes
    while True:
        elements, total, halved = model.halvings(widths, (x for x in candidates if widths[x] > 1))
        peak = peak_of(widths, elements)
        if peak <= limit:
            return widths
        options = []
        counts = chunk_counts(model.sizes, widths)
        now, (flops, inside) = math.prod(counts), model.flops_within(widths)
        for x in candidates:
            if widths[x] <= 1:
                continue
            trial = _narrowed(widths, x, -(-widths[x] // 2))
            more = chunk_counts((model.sizes[x],), (trial[x],))[0]  # x's chunks, from counts[x]
            slices = now // counts[x] * more
            if slices > max_slices:
                continue
            elements, trial_total = halved[x]
            saved = peak - peak_of(trial, elements)
            tie = total - trial_total
            if saved <= 0 and tie <= 0:
                continue
            looping = inside.get(x, 0)  # (the rest runs once per chunk of x: exact)
            added = (flops - looping) // counts[x] * (more - counts[x]) + SLICE_FLOPS * (
                slices - now
            )
            # (capped floats: counts past a float's range, shapes for planning only; a review)
            ratio = as_float(added) / as_float(max(saved, tie))
            score = (
                (saved <= 0, ratio)
                if noise == 0
                else (saved <= 0, ratio * math.exp(noise * rng.gauss(0.0, 1.0)))
            )
            options.append((score, x, trial))
        if not options:
            return None
        _, _, widths = min(options)


def _narrowed(widths: Widths, label: int, width: int) -> Widths:
    return widths[:label] + (width,) + widths[label + 1 :]


def _grow(
    model: PathModel,
    peak_of: Callable[[Widths, int], int],
    limit: int,
    widths: Widths,
    order: Sequence[int],
) -> Widths:
    """Widen each label in ``order`` as far as the peak allows (binary search)."""
    current = list(widths)
    for x in order:
        lo, hi = current[x], model.sizes[x]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            current[x] = mid
            trial = tuple(current)
            if peak_of(trial, model.buffer_elements(trial)) <= limit:
                lo = mid
            else:
                hi = mid - 1
        current[x] = _even_width(model.sizes[x], lo)
    return tuple(current)


def _even_width(size: int, width: int) -> int:
    """A width of at most ``width`` that cuts ``size`` into equal chunks when that takes at
    most an eighth more chunks; else the balanced one (chunks differ by the last only).

    >>> _even_width(1000, 300), _even_width(1009, 300), _even_width(1000, 1000)
    (250, 253, 1000)
    """
    count = -(-size // width)
    for chunks in range(count, count + count // 8 + 1):
        if size % chunks == 0:
            return size // chunks
    return -(-size // count)
