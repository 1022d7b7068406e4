"""The cost model of einstride's executor that the path search ranks paths with.

It prices what the NumPy backend does, not FLOPs alone: a fixed cost per step, GEMM FLOPs at
BLAS speed (plus a cost per matrix of matmul's batch loop), products without a contracted
label (outer products, Hadamard products) at the much lower speed of a broadcast loop, a
pass over an operand whose own labels are summed first, a strided copy of a matmul's
operand of three or more axes into matmul's order (slow per element when its axes are
short, as in networks of bond dimension 2-4), and every byte an operand, intermediate or
result is read or written.  The constants are nanoseconds for float64 on the reference
two-core machine; only their ratios matter for ranking paths, while their scale sets the
search budget.

>>> path_cost([(0, 1), (1, 2), (2, 3)], (0, 3), (1000, 10, 1000, 10), ((1, 2), (0, 1)))[1:]
(400000, 10000)
"""

from __future__ import annotations

import bisect
import copy
import functools
import operator
from collections.abc import Callable, Collection, Iterable, Sequence

__all__ = [
    "BYTE_NS",
    "GEMM_NS_PER_FLOP",
    "ITEMSIZE",
    "LOOP_NS_PER_ELEMENT",
    "MATRIX_NS",
    "STEP_NS",
    "Problem",
    "as_float",
    "linear_of",
    "pair_cost",
    "path_cost",
    "thin_factor",
    "tree_of",
]

# -- the cost model (nanoseconds; float64 on the reference two-core machine) ----------------
STEP_NS = 10000.0  # the executor's fixed cost of one step: dispatch, views, a buffer
GEMM_NS_PER_FLOP = 0.025  # a batched matmul (BLAS), per FLOP (thin ones are memory-bound:
MATRIX_NS = 150.0  # the byte term); and per matrix of matmul's batch loop
LOOP_NS_PER_ELEMENT = 0.5  # a broadcast multiply or outer product, per element of the loop
BYTE_NS = 0.1  # one byte an operand, intermediate or result is read or written
# An operand of three or more labels is usually copied into a matmul's (batch, rows, cols)
# order first: a strided copy, per element plus per run along its innermost axis, whose
# length is taken as the operand's mean axis length (measured: 0.8-2.8 ns per element for
# 64**3, 6-7 ns for a tensor of 13-20 axes of 2-4)
COPY_NS_PER_ELEMENT = 1.0
COPY_NS_PER_RUN = 15.0
ITEMSIZE = 8
MAX_SIZE_CLASSES = 12  # distinct label sizes up to which a set's size is counted by size
# BLAS's kernels are blocked for matrices of 16 and more rows and columns: a thinner product
# runs at a fraction of its speed (measured, float64, (1440 x 56) @ (56 x n): n = 64, 16, 8,
# 4, 2 cost 1.2x, 1.6x, 2.5x, 5.7x, 12x per FLOP of n = 288; k = 8, 4, 2 with m = 1440,
# n = 288: 1.7x, 2.8x, 4.6x; m behaves as n)
THIN_SIDE = 16.0
THIN_INNER = 8.0


_CAPPED = 10**300
"""The largest size the estimates take (a float holds it; a review found sizes of 2**62 in
17 operands past a float's range: the cost model raised OverflowError)."""


def thin_factor(rows: int, inner: int, cols: int) -> float:
    """How many times its FLOPs at full BLAS speed a ``(rows x inner) @ (inner x cols)``
    product costs: about 1 for large matrices, more as any dimension thins.

    >>> round(thin_factor(1024, 1024, 1024), 2), round(thin_factor(1440, 56, 2), 1)
    (1.04, 10.4)
    """
    return (
        (1.0 + THIN_SIDE / min(max(rows, 2), _CAPPED))
        * (1.0 + THIN_INNER / min(max(inner, 2), _CAPPED))
        * (1.0 + THIN_SIDE / min(max(cols, 2), _CAPPED))
    )


def as_float(count: int) -> float:
    """A count (elements, bytes, calls) as a float for an estimate, at most ``1e300``:
    counts past a float's range (shapes given for planning only) are no machine's.

    >>> as_float(3), as_float(2**1100)
    (3.0, 1e+300)
    """
    return float(min(count, _CAPPED))


class Problem:
    """The operands' labels as bit masks (label ``k`` of ``labels`` is bit ``k``), with the
    sizes of label sets memoized: what every finder and the cost model work on."""

    def __init__(
        self, inputs: Sequence[Sequence[int]], output: Sequence[int], sizes: Sequence[int]
    ) -> None:
        self.labels = sorted({x for t in inputs for x in t} | set(output))
        bit = {x: 1 << k for k, x in enumerate(self.labels)}
        self.label_sizes = [max(int(sizes[x]), 1) for x in self.labels]
        self.inputs = tuple(_mask(t, bit) for t in inputs)
        self.output = _mask(output, bit)
        self.terms = inputs
        self.output_labels = output
        self._sizes: dict[int, int] = {0: 1}  # elements per label mask, memoized
        # the labels of each size above 1, as masks: a set's size is then a few popcounts
        classes: dict[int, int] = {}
        for k, size in enumerate(self.label_sizes):
            if size > 1:
                classes[size] = classes.get(size, 0) | 1 << k
        self._classes = tuple(classes.items()) if len(classes) <= MAX_SIZE_CLASSES else None
        self._copies: dict[int, float] = {}  # ns of copying an operand per label mask
        self._pairs: dict[tuple[int, int, int], tuple[float, int]] = {}  # pair costs made

    def part(self, members: Sequence[int], output: int) -> Problem:
        """The problem over the operands ``members`` toward the labels of the mask
        ``output``, with the same labels (bits) and sharing the memos: a block of a
        bisection, contracted by greedy, without relabelling it or pricing anew.

        >>> chain = Problem([(0, 1), (1, 2), (2, 3)], (0, 3), (4, 5, 6, 7))
        >>> part = chain.part([1, 2], chain.inputs[0] | chain.output)
        >>> part.inputs, part.output, part.size(part.inputs[0]) == chain.size(0b110)
        ((6, 12), 11, True)
        """
        found = copy.copy(self)  # (every memo is keyed by masks alone: safe to share)
        found.inputs = tuple(self.inputs[i] for i in members)
        found.output = output
        found.terms = [self.terms[i] for i in members]
        found.output_labels = [x for k, x in enumerate(self.labels) if output >> k & 1]
        return found

    def boundary(self, members: Iterable[int]) -> int:
        """The labels of the operands ``members`` that the output or an operand outside
        them holds (a mask): what their contraction keeps.

        >>> chain = Problem([(0, 1), (1, 2), (2, 3)], (3,), (2, 3, 4, 5))
        >>> bin(chain.boundary([1, 2]))                  # label 1 (operand 0), 3 (the output)
        '0b1010'
        """
        inside, outside, chosen = 0, self.output, set(members)
        for i, mask in enumerate(self.inputs):
            if i in chosen:
                inside |= mask
            else:
                outside |= mask
        return inside & outside

    def holder_counts(self) -> list[int]:
        """How many operands hold each label (label ``k``: bit ``k`` of the masks).

        >>> Problem([(0, 1), (1, 2)], (2,), (2, 3, 4)).holder_counts()
        [1, 2, 1]
        """
        counts = [0] * len(self.labels)
        for mask in self.inputs:
            _count(counts, mask, 1)
        return counts

    def oe_problem(self) -> tuple[list[frozenset[int]], frozenset[int], dict[int, int]]:
        """The problem as opt_einsum's finders take it: label sets and a size dict."""
        sets = [frozenset(t) for t in self.terms]
        return sets, frozenset(self.output_labels), dict(zip(self.labels, self.label_sizes))

    def size(self, mask: int) -> int:
        """The number of elements of a tensor over the labels of ``mask``."""
        return self._sizes.get(mask) or self._fill(mask)

    def _capped(self, mask: int) -> int:
        """:meth:`size` for the estimates, at most :data:`_CAPPED` (a float holds it)."""
        return min(self.size(mask), _CAPPED)

    @property
    def known_size(self) -> Callable[[int], int | None]:
        """The memo's lookup (None when not yet known): with :attr:`fill_size`, a hot loop's
        ``known(mask) or fill(mask)`` is :meth:`size` without a call per known mask."""
        return self._sizes.get

    @property
    def fill_size(self) -> Callable[[int], int]:
        """The size of a mask not yet known, memoized."""
        return self._fill

    def _fill(self, mask: int) -> int:
        found = 1
        if self._classes is not None:
            for size, labels in self._classes:
                count = (mask & labels).bit_count()
                if count:
                    found *= size**count
        else:
            rest = mask
            while rest:
                low = rest & -rest
                found *= self.label_sizes[low.bit_length() - 1]
                rest ^= low
        self._sizes[mask] = found
        return found

    def _copy(self, mask: int) -> float:
        """ns of copying an operand over ``mask`` into matmul's order (memoized)."""
        found = self._copies.get(mask)
        if found is None:
            rank, size = mask.bit_count(), self._capped(mask)
            run = size ** (1.0 / rank) if rank >= 3 else 0.0
            found = size * (COPY_NS_PER_ELEMENT + COPY_NS_PER_RUN / run) if run else 0.0
            self._copies[mask] = found
        return found

    def pair(self, a: int, b: int, keep: int) -> tuple[float, int]:
        """:func:`pair_cost` over masks (memoized: reconfiguration re-solves overlapping
        subtrees, and a third to a half of its pair costs repeat one already made)."""
        key = (a, b, keep) if a <= b else (b, a, keep)
        found = self._pairs.get(key)
        if found is None:
            found = self._pairs[key] = self._pair(a, b, keep)
        return found

    def _pair(self, a: int, b: int, keep: int) -> tuple[float, int]:
        known, fill = self._sizes.get, self._fill
        ra, rb = a & (b | keep), b & (a | keep)
        union = ra | rb
        out = union & keep
        exact_loop = known(union) or fill(union)
        # estimates in floats: sizes past a float's range (no machine's) are capped
        loop = min(exact_loop, _CAPPED)
        size_a, size_b = min(known(ra) or fill(ra), _CAPPED), min(known(rb) or fill(rb), _CAPPED)
        size_out = min(known(out) or fill(out), _CAPPED)
        ns = STEP_NS + BYTE_NS * ITEMSIZE * (size_a + size_b + size_out)
        if union != out:  # a batched matmul (BLAS), plus matmul's loop over its matrices
            batch = ra & rb & keep
            matrices = min(known(batch) or fill(batch), _CAPPED)
            inner = max(loop // size_out, 1)  # the matrix sizes from known sizes: no new mask
            thin = thin_factor(size_a // (matrices * inner), inner, size_b // (matrices * inner))
            ns += GEMM_NS_PER_FLOP * 2.0 * loop * thin + MATRIX_NS * matrices
            ns += self._copy(ra) + self._copy(rb)
        else:  # a broadcast multiply (outer or Hadamard product): NumPy's loop
            ns += LOOP_NS_PER_ELEMENT * loop
        if ra != a:
            ns += STEP_NS + BYTE_NS * ITEMSIZE * min(known(a) or fill(a), _CAPPED)
        if rb != b:
            ns += STEP_NS + BYTE_NS * ITEMSIZE * min(known(b) or fill(b), _CAPPED)
        if ra == a and rb == b:
            return ns, exact_loop * (2 if union != out else 1)
        both = a | b
        return ns, (known(both) or fill(both)) * (2 if both & ~keep else 1)

    def cost(self, path: Sequence[Sequence[int]]) -> tuple[float, int, int]:
        """:func:`path_cost` over masks: labels stay while the output or a live operand
        (one waiting in the same entry included) holds them."""
        if len(path) == len(self.inputs) - 1 and all(len(entry) == 2 for entry in path):
            return self._tree_cost(path)
        return self._walk_cost(path)

    def cost_bound(self, tree: Sequence[Sequence[int]], past: float = float("inf")) -> float:
        """An upper bound of :meth:`cost`'s nanoseconds for a contraction ``tree`` (the two
        children of each product, SSA ids: :func:`tree_of` of the path): every term of
        :meth:`pair` at its worst (the thinnest matmul, a batch loop per element, both
        operands copied and first summed), from four sizes per product.  Past ``past``
        (the caller only asks whether it stays below), the largest of these are replaced
        by the products' own pair costs (memoized: rating the path then reuses them) until
        the sum is back below ``past`` or all are (then it is :meth:`cost`'s): a few pair
        costs often save rating the whole path (measured: the worst terms alone bound a
        random 10-tensor network of degree 4 at 300x its estimate; its four largest made
        exact, at 1.9x).

        >>> chain = Problem([(0, 1), (1, 2), (2, 3)], (0, 3), (1000, 10, 1000, 10))
        >>> cost, tree = chain.cost(((1, 2), (0, 1)))[0], tree_of(((1, 2), (0, 1)), 3)
        >>> tree, cost < chain.cost_bound(tree), chain.cost_bound(tree, past=0) == cost
        ([(1, 2), (0, 3)], True, True)
        """
        products = self._tree_products(tree)
        terms = self._worst_pairs(products)
        total = sum(terms)
        if total <= past:
            return total
        for k in sorted(range(len(terms)), key=terms.__getitem__, reverse=True):
            exact = self.pair(*products[k])[0]
            total -= terms[k] - exact
            terms[k] = exact
            if total <= past:
                break
        # summed afresh in :meth:`cost`'s order: term by term at least its sum (a running
        # difference may round below it), and equal to it once every term is exact
        return sum(terms)

    def _worst_pairs(self, products: Sequence[tuple[int, int, int]]) -> list[float]:
        """:meth:`pair`'s nanoseconds at their worst for each ``(a, b, keep)``, from the
        sizes of ``a``, ``b``, ``keep`` and their union (written out: a first call of a
        small network rates nothing but this)."""
        known, fill, cap = self._sizes.get, self._fill, _CAPPED
        per_operand = 2 * BYTE_NS * ITEMSIZE + COPY_NS_PER_ELEMENT + COPY_NS_PER_RUN
        terms = []
        for a, b, keep in products:
            operands = min(known(a) or fill(a), cap) + min(known(b) or fill(b), cap)
            union = a | b
            terms.append(
                3 * STEP_NS
                + per_operand * operands
                + BYTE_NS * ITEMSIZE * min(known(keep) or fill(keep), cap)
                + _LOOP_BOUND_NS * min(known(union) or fill(union), cap)
            )
        return terms

    def _walk_cost(self, path: Sequence[Sequence[int]]) -> tuple[float, int, int]:
        """:meth:`cost` of any path, walking the live operands' label counts."""
        live = list(self.inputs)
        holders = self.holder_counts()
        total_ns, total_flops, largest = 0.0, 0, 0
        for entry in path:
            picked = [live[i] for i in entry]
            for i in sorted(entry, reverse=True):
                del live[i]
            for term in picked:
                _count(holders, term, -1)
            acc = picked[0]
            if len(picked) == 1:
                keep = acc & (self.output | _held(holders, acc))
                if keep != acc:  # a sum over labels of this operand alone (else a view)
                    total_ns += STEP_NS + BYTE_NS * ITEMSIZE * (
                        self._capped(acc) + self._capped(keep)
                    )
                    total_flops += self.size(acc)
                acc = keep
            for j in range(1, len(picked)):
                waiting = functools.reduce(operator.or_, picked[j + 1 :], 0)
                both = acc | picked[j]
                keep = both & (self.output | waiting | _held(holders, both))
                ns, flops = self.pair(acc, picked[j], keep)
                acc = both & keep
                total_ns, total_flops = total_ns + ns, total_flops + flops
                largest = max(largest, self.size(acc))
            _count(holders, acc, 1)
            live.append(acc)
        return total_ns, total_flops, largest

    def _tree_cost(self, path: Sequence[Sequence[int]]) -> tuple[float, int, int]:
        """:meth:`cost` of a path of pairs, over :meth:`_tree_products`."""
        total_ns, total_flops, largest, pair, size = 0.0, 0, 0, self.pair, self.size
        for a, b, keep in self._tree_products(tree_of(path, len(self.inputs))):
            ns, flops = pair(a, b, keep)
            total_ns, total_flops = total_ns + ns, total_flops + flops
            largest = max(largest, size(keep))
        return total_ns, total_flops, largest

    def _tree_products(self, children: Sequence[Sequence[int]]) -> list[tuple[int, int, int]]:
        """The ``(a, b, keep)`` masks of each product of a contraction tree (the two
        children of each product, :func:`tree_of`): a product keeps the labels that the
        output or an operand outside its subtree holds (a few mask operations per product
        where the walk over live operands counts every label: 1.5-2x faster at 40-200
        tensors)."""
        n = len(self.inputs)
        inside = list(self.inputs)
        for a, b in children:
            inside.append(inside[a] | inside[b])
        need = [0] * len(inside)  # the labels the output or the rest of the tree hold
        need[-1] = self.output
        for node in range(len(inside) - 1, n - 1, -1):
            a, b = children[node - n]
            need[a], need[b] = need[node] | inside[b], need[node] | inside[a]
        result = list(self.inputs) + [0] * len(children)
        products = []
        for node in range(n, len(inside)):
            a, b = children[node - n]
            keep = result[node] = inside[node] & need[node]
            products.append((result[a], result[b], keep))
        return products


# the most a pair costs per element of its loop: the thinnest matmul plus a matrix per element
_LOOP_BOUND_NS = GEMM_NS_PER_FLOP * 2.0 * thin_factor(2, 2, 2) + MATRIX_NS


def tree_of(path: Sequence[Sequence[int]], n: int) -> list[tuple[int, int]]:
    """A path of pairs over ``n`` operands as a tree: the two children of each product, in
    order (node ``n + k`` is the ``k``-th product; opt_einsum's ``linear_to_ssa``).

    >>> tree_of(((0, 2), (0, 1), (0, 1)), 4)
    [(0, 2), (1, 3), (4, 5)]
    """
    children: list[tuple[int, int]] = []
    ids = list(range(n))  # the tree node of each live operand
    for i, j in path:
        children.append((ids[i], ids[j]))
        for k in sorted((i, j), reverse=True):
            del ids[k]
        ids.append(n + len(children) - 1)
    return children


def linear_of(ssa: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """An SSA path (the inputs ``0..n-1``, each product the next id) in NumPy's format: each
    id's position among the live ones, an entry's in order (opt_einsum's ``ssa_to_linear``,
    over a list and bisections instead of an array updated per step: measured 1.7x faster
    on a path of ten steps, 1.35x on one of a thousand).  Ids not yet made are larger than
    every live one: counted among them, they shift no position.

    >>> linear_of([(0, 2), (1, 3), (4, 5)])
    ((0, 2), (0, 1), (0, 1))
    >>> linear_of([(0,)]), linear_of([])
    (((0,),), ())
    """
    if not ssa:
        return ()
    live = list(range(1 + max(max(entry) for entry in ssa)))
    path: list[tuple[int, ...]] = []
    for entry in ssa:
        if len(entry) == 2:
            i, j = bisect.bisect_left(live, entry[0]), bisect.bisect_left(live, entry[1])
            i, j = (i, j) if i < j else (j, i)
            del live[j], live[i]
            path.append((i, j))
            continue
        positions = tuple(sorted(bisect.bisect_left(live, x) for x in entry))
        for k in sorted(positions, reverse=True):
            del live[k]
        path.append(positions)
    return tuple(path)


def _mask(labels: Iterable[int], bit: dict[int, int]) -> int:
    found = 0
    for x in labels:
        found |= bit[x]
    return found


def _count(holders: list[int], mask: int, delta: int) -> None:
    while mask:
        low = mask & -mask
        holders[low.bit_length() - 1] += delta
        mask ^= low


def _held(holders: list[int], mask: int) -> int:
    """The labels of ``mask`` that some live operand still holds."""
    found, rest = 0, mask
    while rest:
        low = rest & -rest
        if holders[low.bit_length() - 1]:
            found |= low
        rest ^= low
    return found


def pair_cost(
    a: Collection[int], b: Collection[int], keep: Collection[int], sizes: Sequence[int]
) -> tuple[float, int]:
    """``(nanoseconds, FLOPs)`` of contracting operands labelled ``a`` and ``b`` into their
    labels in ``keep``, as einstride's executor does it: labels of one operand alone that
    are not kept are summed first (a pass over it); the product is a batched matmul (BLAS,
    plus a cost per matrix of its batch) when a label is contracted, else a broadcast
    multiply (NumPy's loop, ten times slower per element); every operand and result byte is
    read or written once.  FLOPs follow opt_einsum's convention.

    >>> i, j, k = 0, 1, 2
    >>> gemm, _ = pair_cost({i, j}, {j, k}, {i, k}, (64,) * 3)
    >>> outer, _ = pair_cost({i}, {k}, {i, k}, (64,) * 3)
    >>> round(gemm), round(outer)   # same output: 64x the FLOPs, not 64x the time
    (43020, 15427)
    """
    problem = Problem([tuple(a), tuple(b)], tuple(keep), sizes)
    ma, mb = problem.inputs
    return problem.pair(ma, mb, problem.output)


def path_cost(
    inputs: Sequence[Sequence[int]],
    output: Sequence[int],
    sizes: Sequence[int],
    path: Sequence[Sequence[int]],
) -> tuple[float, int, int]:
    """``(nanoseconds, FLOPs, largest intermediate in elements)`` of ``path`` (NumPy's
    format; an entry of several operands contracts them pairwise, left to right).

    >>> path_cost([(0, 1), (1, 2), (2, 3)], (0, 3), (1000, 10, 1000, 10), ((0, 1), (0, 1)))[1]
    40000000
    """
    return Problem(inputs, output, sizes).cost(path)
