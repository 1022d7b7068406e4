"""The exact optimum over a few operands, its pair costs computed over arrays.

:func:`.trees.optimal_tree` solves a subtree by dynamic programming over every subset of
its ``k`` inputs: ``3**k / 2`` pair costs, each a few microseconds of Python (3,025 for
eight inputs: 5-9 ms).  The cost of a pair depends only on the two operands' labels and
the labels kept, never on the choices below it, so all of them can be priced at once: the
label sets of every subset as machine words (the subtree's labels renumbered, up to
:data:`MAX_LABELS`), the sizes of sets by table lookups (one table per byte of the word),
and the cost model of :meth:`.costmodel.Problem.pair` written over arrays, term by term in
its own order.  The dynamic programming itself is one ``argmin`` per subset size: each
subset of ``m`` inputs has ``2**(m-1) - 1`` splits (the parts holding its first input),
listed in the order the Python loop tries them, so the first cheapest split wins in both.

The result is the Python loop's up to rounding (NumPy's ``power`` may differ from Python's
in the last bit; sets of more than ``2**53`` elements are rounded): a tie within that
rounding may pick another tree of the same cost.  The chosen tree is then priced by
:meth:`.costmodel.Problem.pair` itself, so the nanoseconds, FLOPs and largest intermediate
returned are exactly the cost model's.

>>> from .costmodel import Problem
>>> ring = Problem([(k, (k + 1) % 6) for k in range(6)], (), (2, 30, 4, 50, 6, 70))
>>> ns, flops, largest, tree = optimal_tree_arrays(ring, ring.inputs, ring.output)
>>> from .trees import optimal_tree_loop
>>> (ns, flops, largest, tree) == optimal_tree_loop(ring, ring.inputs, ring.output)
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .costmodel import (
    BYTE_NS,
    COPY_NS_PER_ELEMENT,
    COPY_NS_PER_RUN,
    GEMM_NS_PER_FLOP,
    ITEMSIZE,
    LOOP_NS_PER_ELEMENT,
    MATRIX_NS,
    STEP_NS,
    THIN_INNER,
    THIN_SIDE,
    Problem,
)

__all__ = ["MAX_INPUTS", "MAX_LABELS", "optimal_tree_arrays"]

MAX_INPUTS = 12  # 2**12 subsets, 265,719 pair costs: past this the arrays outgrow the gain
MAX_LABELS = 64  # the subtree's labels, one bit each of a 64-bit word
# The product of two sets' sizes stays in a float's range (shapes given for planning only
# pass it: the loop's capped counts price those).
_MAX_LOG2_SIZE = 480

_BYTE_BITS = (np.arange(256)[:, None] >> np.arange(8)) & 1 == 1  # value x bit
_BYTE_COUNTS = _BYTE_BITS.sum(axis=1).astype(float)  # the labels in each byte value
_LOW_BYTE = np.uint64(255)

Words = NDArray[np.uint64]
Floats = NDArray[np.float64]
Tree = Any  # an input's index, or a pair of trees


def optimal_tree_arrays(
    problem: Problem, inputs: Sequence[int], output: int
) -> tuple[float, int, int, Tree] | None:
    """:func:`.trees.optimal_tree` over arrays: ``(ns, FLOPs, largest, tree)`` of the
    cheapest tree of ``inputs`` (label masks of ``problem``) into ``output``; None when
    they hold more than :data:`MAX_LABELS` labels, are more than :data:`MAX_INPUTS` or
    their sizes multiply past 2**480."""
    n = len(inputs)
    if not 2 <= n <= MAX_INPUTS:
        return None
    local = _Local.of(problem, inputs, output)
    if local is None:
        return None
    labels = _subset_labels(local.inputs, n)
    everything = np.arange(1 << n)
    kept = labels & (np.uint64(local.output) | labels[everything ^ ((1 << n) - 1)])
    splits = _splits(n)
    choice = _cheapest_splits(splits, local.pair_ns(kept, splits), n)
    tree = _tree(choice, (1 << n) - 1)
    return _priced(problem, inputs, output, tree)


class _Local:
    """The subtree's labels renumbered from bit 0: its masks as words, and per byte of a
    word the sizes (products of label sizes) of all 256 values (their label counts are
    the same for every byte: :data:`_BYTE_COUNTS`)."""

    def __init__(self, inputs: list[int], output: int, sizes: list[int]) -> None:
        self.inputs, self.output = inputs, output
        with np.errstate(over="ignore"):  # a product past float's range no set reaches
            self.size_tables = [
                np.prod(np.where(_BYTE_BITS[:, : len(chunk)], np.array(chunk, float), 1.0), axis=1)
                for chunk in (sizes[start : start + 8] for start in range(0, max(len(sizes), 1), 8))
            ]

    @classmethod
    def of(cls, problem: Problem, inputs: Sequence[int], output: int) -> _Local | None:
        union = output
        for mask in inputs:
            union |= mask
        bits = []
        while union:
            low = union & -union
            bits.append(low)
            union ^= low
        sizes = [problem.label_sizes[bit.bit_length() - 1] for bit in bits]
        if len(bits) > MAX_LABELS or sum(map(math.log2, sizes)) > _MAX_LOG2_SIZE:
            return None
        renumbered = {bit: 1 << k for k, bit in enumerate(bits)}

        def local(mask: int) -> int:
            return sum(renumbered[bit] for bit in bits if mask & bit)

        return cls([local(mask) for mask in inputs], local(output), sizes)

    def _by_byte(self, masks: Words, tables: list[Floats], combine: Any = np.multiply) -> Floats:
        """Each mask's bytes looked up in ``tables`` (one per byte) and combined."""
        found = tables[0][(masks & _LOW_BYTE).astype(np.intp)]
        for byte, table in enumerate(tables[1:], 1):
            found = combine(
                found, table[((masks >> np.uint64(8 * byte)) & _LOW_BYTE).astype(np.intp)]
            )
        return found

    def size(self, masks: Words) -> Floats:
        return self._by_byte(masks, self.size_tables)

    def count(self, masks: Words) -> Floats:
        return self._by_byte(masks, [_BYTE_COUNTS] * len(self.size_tables), np.add)

    def copy_ns(self, masks: Words) -> Floats:
        """:meth:`.costmodel.Problem._copy` over arrays."""
        rank, size = self.count(masks), self.size(masks)
        wide = rank >= 3
        run = np.where(wide, size ** (1.0 / np.maximum(rank, 1.0)), 1.0)
        return np.where(wide, size * (COPY_NS_PER_ELEMENT + COPY_NS_PER_RUN / run), 0.0)

    def pair_ns(self, kept: Words, splits: _Splits) -> Floats:
        """:meth:`.costmodel.Problem.pair`'s nanoseconds of every split over arrays, term by
        term in its order.  ``kept[s]`` holds the labels of subset ``s`` that its
        complement or the output needs: what its product holds, and what each side of a
        split keeps (a side's label that the other side does not hold is needed outside
        the pair, so the pair keeps it), so the sides' sizes and copies are looked up per
        subset and only the labels the two sides share are sized per split.  An input
        holding labels no other operand needs (summed alone first: ``ra != a``) adds that
        step wherever it is a side."""
        size, copy = self.size(kept), self.copy_ns(kept)
        alone = np.zeros(len(kept))  # the step summing an input's own labels first
        for k, mask in enumerate(self.inputs):
            if int(kept[1 << k]) != mask:
                own = float(self.size(np.array([mask], np.uint64))[0])
                alone[1 << k] = STEP_NS + BYTE_NS * ITEMSIZE * own
        parts, others, subsets = splits.parts, splits.others, splits.subsets
        keep = kept[subsets]
        shared: Words = np.bitwise_and(kept[parts], kept[others])
        size_a, size_b, size_out = size[parts], size[others], size[subsets]
        loop = size_a * size_b / self.size(shared)
        ns = STEP_NS + BYTE_NS * ITEMSIZE * (size_a + size_b + size_out)
        matmul = np.bitwise_and(shared, ~keep) != 0  # a label summed: BLAS
        matrices = self.size(np.bitwise_and(shared, keep))
        inner = loop / size_out
        rows, cols = size_a / (matrices * inner), size_b / (matrices * inner)
        thin = (
            (1.0 + THIN_SIDE / np.maximum(rows, 2.0))
            * (1.0 + THIN_INNER / np.maximum(inner, 2.0))
            * (1.0 + THIN_SIDE / np.maximum(cols, 2.0))
        )
        gemm = GEMM_NS_PER_FLOP * 2.0 * loop * thin + MATRIX_NS * matrices
        ns = ns + np.where(matmul, gemm, LOOP_NS_PER_ELEMENT * loop)
        ns = ns + np.where(matmul, copy[parts] + copy[others], 0.0)
        found: Floats = ns + alone[parts] + alone[others]
        return found


def _subset_labels(inputs: list[int], n: int) -> Words:
    """The labels of every subset of the inputs (subset ``s``: the inputs of its bits)."""
    labels = np.zeros(1 << n, np.uint64)
    for k, mask in enumerate(inputs):
        labels[1 << k : 2 << k] = labels[: 1 << k] | np.uint64(mask)
    return labels


class _Splits:
    """Every split of every subset of two or more of ``n`` inputs, by subset size:
    ``sizes`` (each size with its number of subsets), ``subset_list`` (the subsets of each
    size, increasing), and one entry per split in ``parts`` (the parts holding the subset's
    first input, decreasing: the Python loop's order), ``others`` (their complements) and
    ``subsets`` (whose split), concatenated over the sizes: each size's splits reshape to
    ``(subsets of that size, 2**(size-1) - 1)``."""

    def __init__(self, n: int) -> None:
        subsets, parts, sizes = [], [], []
        for m in range(2, n + 1):
            of_size = [s for s in range(1 << n) if s.bit_count() == m]
            for subset in of_size:
                low, part, found = subset & -subset, (subset - 1) & subset, []
                while part:
                    if part & low:
                        found.append(part)
                    part = (part - 1) & subset
                subsets.append(subset)
                parts.append(found)
            sizes.append((m, len(of_size)))
        self.sizes = sizes
        self.subset_list = np.array(subsets, np.intp)
        flat_parts = np.array([p for found in parts for p in found], np.intp)
        flat_subsets = np.repeat(self.subset_list, [len(found) for found in parts])
        self.parts, self.others, self.subsets = flat_parts, flat_subsets ^ flat_parts, flat_subsets


@functools.cache
def _splits(n: int) -> _Splits:
    return _Splits(n)


def _cheapest_splits(splits: _Splits, pair_ns: Floats, n: int) -> NDArray[np.intp]:
    """The dynamic programming: per subset, its cheapest split's part (the first of equal
    totals), subsets of each size after all smaller ones."""
    cost = np.zeros(1 << n)
    choice = np.zeros(1 << n, np.intp)
    start, first_subset = 0, 0
    for m, count in splits.sizes:
        width = (1 << (m - 1)) - 1
        stop = start + count * width
        parts = splits.parts[start:stop].reshape(count, width)
        others = splits.others[start:stop].reshape(count, width)
        total = cost[parts] + cost[others] + pair_ns[start:stop].reshape(count, width)
        best = np.argmin(total, axis=1)
        rows = np.arange(count)
        subsets = splits.subset_list[first_subset : first_subset + count]
        cost[subsets] = total[rows, best]
        choice[subsets] = parts[rows, best]
        start, first_subset = stop, first_subset + count
    return choice


def _tree(choice: NDArray[np.intp], subset: int) -> Tree:
    if subset & (subset - 1) == 0:
        return subset.bit_length() - 1
    part = int(choice[subset])
    return (_tree(choice, part), _tree(choice, subset ^ part))


def _priced(
    problem: Problem, inputs: Sequence[int], output: int, tree: Tree
) -> tuple[float, int, int, Tree]:
    """``tree`` priced by the cost model itself, summed as the Python loop sums it (the
    first part's total, the other's, then the pair's)."""
    full = (1 << len(inputs)) - 1

    def labels(subset: int) -> int:
        found = 0
        for k, mask in enumerate(inputs):
            if subset >> k & 1:
                found |= mask
        return found

    def walk(node: Tree) -> tuple[int, int, float, int, int]:
        """(its inputs as a subset, its result's labels, ns, FLOPs, largest)."""
        if isinstance(node, int):
            return 1 << node, inputs[node], 0.0, 0, 0
        left, right = walk(node[0]), walk(node[1])
        subset = left[0] | right[0]
        keep = labels(subset) & (output | labels(full ^ subset))
        ns, flops = problem.pair(left[1], right[1], keep)
        largest = max(left[4], right[4], problem.size(keep))
        return subset, keep, left[2] + right[2] + ns, left[3] + right[3] + flops, largest

    _, _, ns, flops, largest = walk(tree)
    return ns, flops, largest, tree
