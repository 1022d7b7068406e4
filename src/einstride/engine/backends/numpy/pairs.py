"""How one pairwise product is laid out for ``numpy.matmul``: the heart of the planner.

The labels of a pair are classified once (:func:`classify`).  The product is
``(batch..., M, K) @ (batch..., K, N)``, each of the groups M (left-free), K (contracted)
and N (right-free) folded into one dimension *jointly* across the operands and the output
that keep their layout (TBLIS style), so that strided and transposed operands are views.
When a group does not fold, three remedies compete on an estimated cost (:func:`choose`):

* copy an operand into an order that folds (cost: its bytes);
* write into a temporary instead of a fixed output, then copy (cost: the output's bytes);
* move the labels that do not fold into the batch loop of ``matmul`` (cost: more, smaller
  BLAS calls; for contracted labels also a partial result summed afterwards).

>>> import numpy as np
>>> c_order = Term.row_major((0, 1, 2), (4, 5, 6), np.dtype(float))         # 'ijk'
>>> other = Term.of((1, 2, 3), (5, 6, 3), (144, 24, 8), np.dtype(float))    # 'jkl'
>>> g = classify(c_order.labels, other.labels, frozenset({0, 3}))
>>> g.contracted, g.left_free, g.right_free
((1, 2), (0,), (3,))
>>> pick = choose(c_order, other, g, [Out(mode=Delivery.NEW)], ct=np.dtype(float),
...               sizes=(4, 5, 6, 3), pref_m=(0,), pref_n=(3,), names=str,
...               options=PlannerOptions())
>>> pick.k, pick.copy_a, pick.copy_b, pick.loop_k
((1, 2), False, False, ())
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...spec.costmodel import as_float, thin_factor
from .delivery import Delivery
from .fold import BLAS_TYPES, Term, blas_ready, fold_group, fold_stride
from .options import PlannerOptions

__all__ = [
    "Choice",
    "Fold",
    "Geometry",
    "Groups",
    "Out",
    "blas_ns",
    "choose",
    "classify",
    "fold_geometry",
    "matmul_geometry",
    "split_group",
]

# BLAS time per FLOP, in the estimated nanoseconds of PlannerOptions' cost model
_NS_PER_FLOP = {
    np.dtype(np.float32): 0.011,
    np.dtype(np.float64): 0.025,
    np.dtype(np.complex64): 0.045,
    np.dtype(np.complex128): 0.1,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Groups:
    """Every label of a pair, classified once."""

    batch: tuple[int, ...]
    contracted: tuple[int, ...]
    left_free: tuple[int, ...]
    right_free: tuple[int, ...]
    left_only: tuple[int, ...]
    right_only: tuple[int, ...]

    def swapped(self) -> Groups:
        """The groups of the pair taken the other way round (``b``, ``a``)."""
        return Groups(
            batch=self.batch,
            contracted=self.contracted,
            left_free=self.right_free,
            right_free=self.left_free,
            left_only=self.right_only,
            right_only=self.left_only,
        )


def classify(la: tuple[int, ...], lb: tuple[int, ...], keep: frozenset[int]) -> Groups:
    """batch (both, kept), contracted (both, not kept), left-/right-free (one, kept),
    left-/right-only (one, not kept)."""
    sb, sa = set(lb), set(la)
    return Groups(
        batch=tuple(x for x in la if x in sb and x in keep),
        contracted=tuple(x for x in la if x in sb and x not in keep),
        left_free=tuple(x for x in la if x not in sb and x in keep),
        right_free=tuple(x for x in lb if x not in sa and x in keep),
        left_only=tuple(x for x in la if x not in sb and x not in keep),
        right_only=tuple(x for x in lb if x not in sa and x not in keep),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Out:
    """One way the last product may deliver, at an extra ``cost``: ``mode`` ``NEW`` (an
    intermediate), ``RETURN`` (a new array that is the result), ``INTO`` the destination
    ``term`` (``out=``, the zeroed array of a diagonal expansion, or -- ``own`` -- the
    C-ordered output the plan would allocate) or ``TEMP`` (a temporary copied into it)."""

    mode: Delivery
    term: Term | None = None
    cost: float = 0.0
    own: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """Folded orders, looped labels, copies and the output way of one product."""

    m: tuple[int, ...]
    k: tuple[int, ...]
    n: tuple[int, ...]
    loop_m: tuple[int, ...]
    loop_k: tuple[int, ...]
    loop_n: tuple[int, ...]
    copy_a: bool
    copy_b: bool
    out: Out
    reason_a: str = ""
    reason_b: str = ""
    cost: float = 0.0

    @property
    def left_order(self) -> tuple[int, ...]:
        """The left operand's labels (after the batch ones) in its matmul view's order."""
        return self.loop_m + self.loop_k + self.m + self.k

    @property
    def right_order(self) -> tuple[int, ...]:
        return self.loop_n + self.loop_k + self.k + self.n


@dataclass(frozen=True, slots=True, kw_only=True)
class Fold:
    """How a kernel views an operand register: transposed by ``perm``, then reshaped to
    ``shape`` (the planner checked that this is a view)."""

    perm: tuple[int, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Geometry:
    """The kernel's views of both operands, the shape it computes (``out_shape``) and the
    labels of the result register (for matmul: batch + looped + M + N)."""

    left: Fold
    right: Fold
    out_shape: tuple[int, ...]
    labels: tuple[int, ...]


def matmul_geometry(
    pick: Choice,
    bt: tuple[int, ...],
    la: tuple[int, ...],
    lb: tuple[int, ...],
    sizes: Sequence[int],
) -> Geometry:
    """``(batch, loops..., M, K) @ (batch, loops..., K, N)``: each operand gets a size-1
    dimension for the other's looped free labels, so matmul broadcasts over them."""
    loops = (pick.loop_m, pick.loop_k, pick.loop_n)
    return fold_geometry(bt, loops, (pick.m, pick.k, pick.n), la, lb, sizes)


Kinds = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def fold_geometry(
    bt: tuple[int, ...],
    loops: Kinds,
    folded: Kinds,
    la: tuple[int, ...],
    lb: tuple[int, ...],
    sizes: Sequence[int],
) -> Geometry:
    """:func:`matmul_geometry` of the labels ``bt`` (batch), ``loops`` (looped free-left,
    contracted, free-right) and ``folded`` (M, K, N) of operands labelled ``la`` and
    ``lb`` at label ``sizes`` (another shape of a plan's product: the torch records')."""

    def dims(labels: Sequence[int]) -> tuple[int, ...]:
        return tuple(sizes[x] for x in labels)

    lm, lk, ln = loops
    m, k, n = folded
    mm, kk, nn = (math.prod(dims(grp)) for grp in folded)
    return Geometry(
        left=Fold(
            perm=tuple(la.index(x) for x in bt + lm + lk + m + k),
            shape=dims(bt + lm) + (1,) * len(ln) + dims(lk) + (mm, kk),
        ),
        right=Fold(
            perm=tuple(lb.index(x) for x in bt + ln + lk + k + n),
            shape=dims(bt) + (1,) * len(lm) + dims(ln + lk) + (kk, nn),
        ),
        out_shape=dims(bt + lm + ln + lk) + (mm, nn),
        labels=bt + lm + ln + lk + m + n,
    )


def split_group(
    group: Sequence[int], terms: Sequence[Term]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(folded order, looped labels)``: the whole group folded when some ordering folds in
    every term; else the longest run that does (preferring one with a unit stride), the
    other labels left to loop over."""
    order = fold_group(group, terms)
    if order is not None:
        return order, ()
    live = [t for t in terms if t.size != 0]
    big = [x for x in group if live[0].size_of(x) != 1]
    small = tuple(x for x in group if live[0].size_of(x) == 1)
    best: tuple[tuple[bool, int], list[int]] | None = None
    for ref in live:
        seq = sorted(big, key=lambda x: -abs(ref.stride(x)))
        runs: list[list[int]] = [[seq[0]]]
        for x in seq[1:]:
            prev = runs[-1][-1]
            if all(t.stride(prev) == t.stride(x) * t.size_of(x) for t in live):
                runs[-1].append(x)
            else:
                runs.append([x])
        for run in runs:
            unit = all(abs(t.stride(run[-1])) == t.dtype.itemsize for t in live)
            score = (unit, math.prod(live[0].size_of(x) for x in run))
            if best is None or score > best[0]:
                best = (score, run)
    assert best is not None
    folded = tuple(best[1]) + small
    return folded, tuple(x for x in big if x not in best[1])


def choose(
    a: Term,
    b: Term,
    g: Groups,
    outs: Sequence[Out],
    *,
    ct: np.dtype[Any],
    sizes: Sequence[int],
    pref_m: tuple[int, ...],
    pref_n: tuple[int, ...],
    names: Callable[[Sequence[int]], str],
    options: PlannerOptions,
) -> Choice:
    """The cheapest layout for ``a @ b`` (operands without left-/right-only labels), under
    the cost model of ``options``."""
    found: list[tuple[tuple[float, int, int], Choice]] = []
    floor = _copy_floor(a, b, ct, sizes, options)
    for rank, out in enumerate(outs):
        for copy_a in (True,) if a.dtype != ct else (False, True):
            for copy_b in (True,) if b.dtype != ct else (False, True):
                option = _option(
                    a, b, g, out, rank, copy_a, copy_b, ct, sizes, pref_m, pref_n, options
                )
                if option is not None:
                    found.append(((option.cost, copy_a + copy_b, rank), option))
                if option is not None and not (copy_a or copy_b) and option.cost <= floor:
                    break  # no copy of this way can cost less than this view
            else:
                continue
            break
    _, best = min(found, key=lambda item: item[0])
    return _with_reasons(best, a, b, g, ct, names)


def _copy_floor(
    a: Term, b: Term, ct: np.dtype[Any], sizes: Sequence[int], costs: PlannerOptions
) -> float:
    """The least any option that copies an operand can cost: the smaller copy plus the BLAS
    work without a penalty (every option does all the multiply-adds), or -inf when the
    operands must be cast (then every option copies)."""
    if a.dtype != ct or b.dtype != ct:
        return -math.inf
    per_flop = _NS_PER_FLOP.get(ct, 0.0)
    work = per_flop * 2.0 * as_float(math.prod(sizes[x] for x in set(a.labels) | set(b.labels)))
    return costs.copy_ns_per_byte * as_float(min(a.nbytes, b.nbytes)) + work


def _option(
    a: Term,
    b: Term,
    g: Groups,
    out: Out,
    rank: int,
    copy_a: bool,
    copy_b: bool,
    ct: np.dtype[Any],
    sizes: Sequence[int],
    pref_m: tuple[int, ...],
    pref_n: tuple[int, ...],
    costs: PlannerOptions,
) -> Choice | None:
    """One combination of copies and output way: its folds, loops and estimated cost."""
    fa, fb = ([] if copy_a else [a]), ([] if copy_b else [b])
    k, loop_k = split_group(g.contracted, fa + fb)
    if loop_k and rank > 0:
        return None  # with looped contracted labels the output way does not matter
    fc = [out.term] if out.term is not None and not loop_k else []
    m, loop_m = split_group(pref_m, fa + fc)
    n, loop_n = split_group(pref_n, fb + fc)
    if not _blas_ok(ct, sizes, fa, fb, fc, m, k, n):
        return None
    batch_calls = math.prod(sizes[x] for x in g.batch)
    loops = loop_m + loop_n + loop_k
    calls = batch_calls * math.prod(sizes[x] for x in loops)
    out_bytes = ct.itemsize * math.prod(sizes[x] for x in g.batch + m + n + loops)
    copied = (a.nbytes if copy_a and a.dtype == ct else 0) + (
        b.nbytes if copy_b and b.dtype == ct else 0
    )
    cost = (  # (as floats: shapes given for planning alone may be past a float's range)
        costs.copy_ns_per_byte * as_float(copied)
        + (costs.partial_ns_per_byte * as_float(out_bytes) if loop_k else out.cost)
        + costs.call_ns * as_float(calls - batch_calls)
        + _gemm_ns(ct, sizes, fa, fb, fc, m, k, n, calls, costs)
    )
    chosen_out = Out(mode=Delivery.NEW) if loop_k else out
    return Choice(
        m=m,
        k=k,
        n=n,
        loop_m=loop_m,
        loop_k=loop_k,
        loop_n=loop_n,
        copy_a=copy_a,
        copy_b=copy_b,
        out=chosen_out,
        cost=cost,
    )


def _gemm_ns(
    ct: np.dtype[Any],
    sizes: Sequence[int],
    fa: list[Term],
    fb: list[Term],
    fc: list[Term],
    m: tuple[int, ...],
    k: tuple[int, ...],
    n: tuple[int, ...],
    calls: int,
    costs: PlannerOptions,
) -> float:
    """BLAS time, with what the BLAS measurably prefers (``costs`` says how much): operands
    with a unit stride along K ("no transpose") and, for the row-major output it writes,
    more rows than columns (OpenBLAS) or, for a narrow one, fewer (MKL)."""
    mm, kk, nn = (math.prod(sizes[x] for x in grp) for grp in (m, k, n))
    work = blas_ns(ct, mm, kk, nn, calls)
    if work == 0.0 or min(mm, kk, nn) <= 1:
        return work
    item = ct.itemsize
    # a copied operand counts as transposed: copying never pays for itself through this term
    plain_a = bool(fa) and fold_stride(k, fa[0]) == item
    plain_b = bool(fb) and fold_stride(n, fb[0]) == item
    rows, cols = mm, nn
    if fc and fold_stride(n, fc[0]) != item:  # a column-major output: NumPy swaps the roles
        # (out^T = b^T a^T: a view is plain the other way round; a copy still is not)
        plain_a, plain_b = bool(fb) and not plain_b, bool(fa) and not plain_a
        rows, cols = nn, mm
    penalty = 1.0 + costs.transposed_cost * (2 - plain_a - plain_b)
    if rows < cols:
        penalty += costs.wide_cost
    elif rows > cols:
        if not (plain_a or plain_b):
            penalty += costs.both_transposed_cost
        if cols <= costs.tall_max_cols and rows >= costs.tall_ratio * cols:
            penalty += costs.tall_cost
    return work * penalty


def blas_ns(ct: np.dtype[Any], rows: int, inner: int, cols: int, calls: int = 1) -> float:
    """Estimated ns of ``calls`` BLAS products ``(rows x inner) @ (inner x cols)`` in ``ct``
    (0 for dtypes BLAS does not take), thin matrices priced at their lower speed.

    >>> f8 = np.dtype(np.float64)
    >>> round(blas_ns(f8, 512, 512, 512) / 1e6, 1), round(blas_ns(f8, 576, 3, 140) / 1e3)
    (7.2, 51)
    """
    per_flop = _NS_PER_FLOP.get(ct, 0.0)
    if not per_flop:
        return 0.0
    flops = 2.0 * as_float(rows) * as_float(inner) * as_float(cols) * as_float(calls)
    return per_flop * flops * thin_factor(rows, inner, cols)


def _blas_ok(
    ct: np.dtype[Any],
    sizes: Sequence[int],
    fa: list[Term],
    fb: list[Term],
    fc: list[Term],
    m: tuple[int, ...],
    k: tuple[int, ...],
    n: tuple[int, ...],
) -> bool:
    """Every kept matrix is one BLAS takes as it is (other dtypes: NumPy's loops, any)."""
    if ct not in BLAS_TYPES:
        return True
    mm, kk, nn = (math.prod(sizes[x] for x in grp) for grp in (m, k, n))
    checks = [(t, mm, kk, m, k) for t in fa] + [(t, kk, nn, k, n) for t in fb]
    checks += [(t, mm, nn, m, n) for t in fc]
    return all(
        blas_ready(rows, cols, fold_stride(rg, t), fold_stride(cg, t), ct.itemsize)
        for t, rows, cols, rg, cg in checks
    )


def _with_reasons(
    best: Choice,
    a: Term,
    b: Term,
    g: Groups,
    ct: np.dtype[Any],
    names: Callable[[Sequence[int]], str],
) -> Choice:
    out_terms = [best.out.term] if best.out.term is not None else []
    reason_a = reason_b = ""
    if best.copy_a:
        reason_a = _why(
            a,
            ct,
            names,
            [
                ("left-free", g.left_free, out_terms, "the output"),
                ("contracted", g.contracted, [] if best.copy_b else [b], "the right operand"),
            ],
        )
    if best.copy_b:
        reason_b = _why(
            b,
            ct,
            names,
            [
                ("contracted", g.contracted, [] if best.copy_a else [a], "the left operand"),
                ("right-free", g.right_free, out_terms, "the output"),
            ],
        )
    return replace(best, reason_a=reason_a, reason_b=reason_b)


def _why(
    term: Term,
    ct: np.dtype[Any],
    names: Callable[[Sequence[int]], str],
    groups: Sequence[tuple[str, Sequence[int], list[Term], str]],
) -> str:
    """Why ``term`` was copied: a cast, a group that does not fold, a group that folds in
    another order than in a partner that keeps its layout, or BLAS."""
    if term.dtype != ct:
        return f"cast {term.dtype} -> {ct}"
    for what, grp, _, _ in groups:
        if fold_group(grp, [term]) is None:
            return (
                f"its {what} labels '{names(grp)}' do not fold into one stride, and "
                "copying is cheaper than looping over them"
            )
    for what, grp, partners, partner in groups:
        if partners and fold_group(grp, [term, *partners]) is None:
            here, there = fold_group(grp, [term]), fold_group(grp, partners)
            return (
                f"its {what} labels fold in the order '{names(here or ())}', but in "
                f"{partner} in the order '{names(there or ())}'; the smaller operand is "
                "copied into the other's order"
            )
    return "its strides are not BLAS-ready (no unit stride, or a leading dimension that aliases)"
