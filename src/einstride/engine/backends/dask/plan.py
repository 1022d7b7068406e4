"""The Dask plan: which blockwise steps an einsum becomes, and the chunk size of every label.

This module imports no Dask: it turns an :class:`~einstride.engine.spec.equation.EinsumSpec` and
the contraction path of einstride's own planner into a tuple of :class:`DaskStep` (the same
decomposition as the NumPy plan: diagonals first, labels of one operand summed before the
product, one pairwise contraction per path entry, the diagonal expansion last), then picks
one chunk size per label so that no task holds more than a memory budget.
:mod:`.dask_backend` builds the Dask graph from it.

Every label gets one chunk size, shared by every array that carries it, so the blocks of
all operands line up and a blockwise step never needs to realign them.  A step's task holds
its input blocks, the copies einstride may make of them (pairwise steps) and its output
block; when a summed label spans several chunks, the partial results are added in a tree
whose tasks hold ``split_every`` partial blocks and their sum.

>>> from ...spec.equation import parse_equation
>>> spec = parse_equation("ik,kj->ij", (1000, 1000), (1000, 1000))
>>> f8 = np.dtype("float64")
>>> plan = plan_steps(spec, ((0, 1),), (f8, f8), f8, f8)
>>> [(s.kind, s.summed) for s in plan.steps]
[('contract', (1,))]
>>> chunks = choose_chunks(plan, {}, 8 * 2**20)     # 8 MiB per task
>>> [chunks[label] for label in (0, 1, 2)]          # i, k, j
[500, 250, 500]
>>> max(step_bytes(s, chunks, spec.sizes, 8 * 2**20) for s in plan.steps) <= 8 * 2**20
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....errors import EinsumError
from ...spec.equation import EinsumSpec, quoted
from ...spec.walk import walk_path

__all__ = [
    "MAX_SPLIT_EVERY",
    "DaskPlan",
    "DaskStep",
    "choose_chunks",
    "n_blocks",
    "partial_chunks",
    "partial_labels",
    "plan_steps",
    "split_every",
    "step_bytes",
]

MAX_SPLIT_EVERY = 16
"""The most partial blocks one task of a summation tree adds up."""


@dataclass(frozen=True)
class DaskStep:
    """One blockwise step: ``inputs`` (label ids per axis; a repeat is a diagonal) of the
    registers ``srcs`` -> ``labels`` in register ``dst``, summing ``summed``.

    ``kind`` is ``"diagonal"`` (repeated labels of one operand), ``"reduce"`` (labels of one
    array summed or reordered), ``"contract"`` (two arrays, labels summed), ``"product"``
    (two arrays, nothing summed), ``"expand"`` (repeated output labels: the diagonal of a
    zero array) or ``"cast"`` (to the result dtype).
    """

    kind: str
    srcs: tuple[int, ...]
    dst: int
    inputs: tuple[tuple[int, ...], ...]
    labels: tuple[int, ...]
    summed: tuple[int, ...]
    in_dtypes: tuple[np.dtype[Any], ...]
    dtype: np.dtype[Any]

    @property
    def kernel_dtype(self) -> np.dtype[Any] | None:
        """The ``dtype=`` of the per-block einsum (None: keep the operand's, for views)."""
        return None if self.kind == "diagonal" else self.dtype


@dataclass(frozen=True)
class DaskPlan:
    """The steps of one einsum on Dask arrays.

    ``operands[i]``: the labels of operand ``i`` after its stretched size-1 ``...`` axes
    (``spec.stretched[i]``) are dropped.  ``result``: the register of the final array.
    """

    spec: EinsumSpec
    path: tuple[tuple[int, ...], ...]
    operands: tuple[tuple[int, ...], ...]
    dtypes: tuple[np.dtype[Any], ...]
    steps: tuple[DaskStep, ...]
    result: int
    result_dtype: np.dtype[Any]
    compute_dtype: np.dtype[Any]


# -- the steps --------------------------------------------------------------------------------


class _Builder:
    def __init__(
        self,
        spec: EinsumSpec,
        dtypes: Sequence[np.dtype[Any]],
        result: np.dtype[Any],
        compute: np.dtype[Any],
    ) -> None:
        self.spec = spec
        self.ct = compute
        self.rt = result
        self.steps: list[DaskStep] = []
        self.n_regs = len(spec.inputs)
        self.distinct = tuple(dict.fromkeys(spec.output))
        self.operands = tuple(
            tuple(lab for ax, lab in enumerate(term) if ax not in stretched)
            for term, stretched in zip(spec.inputs, spec.stretched)
        )
        self.dtypes = tuple(np.dtype(d) for d in dtypes)

    def add(
        self,
        kind: str,
        srcs: Sequence[tuple[int, tuple[int, ...], np.dtype[Any]]],
        labels: tuple[int, ...],
        dtype: np.dtype[Any],
    ) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
        inputs = tuple(labs for _, labs, _ in srcs)
        present = dict.fromkeys(lab for labs in inputs for lab in labs)
        summed = tuple(lab for lab in present if lab not in labels)
        dst = self.n_regs
        self.n_regs += 1
        self.steps.append(
            DaskStep(
                kind,
                tuple(reg for reg, _, _ in srcs),
                dst,
                inputs,
                labels,
                summed,
                tuple(dt for _, _, dt in srcs),
                dtype,
            )
        )
        return dst, labels, dtype

    def prepare(self, i: int) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
        labels = self.operands[i]
        live = (i, labels, self.dtypes[i])
        if len(set(labels)) == len(labels):
            return live
        return self.add("diagonal", [live], tuple(dict.fromkeys(labels)), self.dtypes[i])

    def unary(
        self, live: tuple[int, tuple[int, ...], np.dtype[Any]], keep: frozenset[int], final: bool
    ) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
        labels = live[1]
        kept = self.distinct if final else tuple(lab for lab in labels if lab in keep)
        if kept == labels:
            return live
        return self.add("reduce", [live], kept, self.ct)

    def pair(
        self,
        a: tuple[int, tuple[int, ...], np.dtype[Any]],
        b: tuple[int, tuple[int, ...], np.dtype[Any]],
        keep: frozenset[int],
        final: bool,
    ) -> tuple[int, tuple[int, ...], np.dtype[Any]]:
        """Labels of one side only and not kept are summed first, as the NumPy plan does."""
        a = self.unary(a, keep | set(b[1]), False)
        b = self.unary(b, keep | set(a[1]), False)
        both = list(dict.fromkeys(a[1] + b[1]))
        labels = self.distinct if final else tuple(lab for lab in both if lab in keep)
        kind = "contract" if any(lab not in labels for lab in both) else "product"
        return self.add(kind, [a, b], labels, self.ct)


def plan_steps(
    spec: EinsumSpec,
    path: Sequence[Sequence[int]],
    dtypes: Sequence[np.dtype[Any]],
    result: np.dtype[Any],
    compute: np.dtype[Any],
) -> DaskPlan:
    """The steps for ``spec`` along ``path`` (NumPy's format, as einstride's planner found)."""
    b = _Builder(spec, dtypes, np.dtype(result), np.dtype(compute))
    live = [b.prepare(i) for i in range(len(spec.inputs))]
    last = walk_path(
        live, path, b.distinct, unary=b.unary, pair=b.pair, labels_of=lambda item: item[1]
    )
    if last[2] != b.rt:
        last = b.add("cast", [last], last[1], b.rt)
    if spec.output != last[1]:
        last = b.add("expand", [last], spec.output, b.rt)
    return DaskPlan(
        spec,
        tuple(tuple(e) for e in path),
        b.operands,
        b.dtypes,
        tuple(b.steps),
        last[0],
        b.rt,
        b.ct,
    )


# -- the chunk sizes --------------------------------------------------------------------------


def n_blocks(size: int, chunk: int) -> int:
    """How many chunks of ``chunk`` cover ``size`` (a size-0 axis is one empty chunk).

    >>> n_blocks(10, 4), n_blocks(0, 4)
    (3, 1)
    """
    return max(1, -(-size // max(chunk, 1)))


def _block(labels: Sequence[int], chunks: Mapping[int, int], sizes: Sequence[int]) -> int:
    """Elements of the largest block of an array with these labels (repeats count twice)."""
    return math.prod(min(chunks.get(lab, sizes[lab]), sizes[lab]) for lab in labels)


def partial_labels(
    step: DaskStep, chunks: Mapping[int, int], sizes: Sequence[int]
) -> tuple[int, ...]:
    """The summed labels that span several chunks: each leaves a partial result to add."""
    return tuple(
        lab for lab in step.summed if n_blocks(sizes[lab], chunks.get(lab, sizes[lab])) > 1
    )


def partial_chunks(step: DaskStep, targets: Mapping[int, Sequence[int]]) -> tuple[int, ...]:
    """The summed labels of ``step`` over several chunks (``targets``: the chunks of every
    label): each leaves partial results that a summation tree adds.

    >>> s = DaskStep("reduce", (0,), 1, ((0, 1),), (0,), (1,), (np.dtype("f8"),),
    ...              np.dtype("f8"))
    >>> partial_chunks(s, {0: (2, 2), 1: (3, 1)}), partial_chunks(s, {0: (4,), 1: (4,)})
    ((1,), ())
    """
    return tuple(lab for lab in step.summed if len(targets[lab]) > 1)


def split_every(out_bytes: int, budget: int) -> int:
    """Partial blocks one task of a summation tree adds: as many as the budget allows.

    >>> split_every(10, 1000), split_every(400, 1000), split_every(1000, 1000)
    (16, 2, 2)
    """
    fits = budget // max(out_bytes, 1) - 1
    return max(2, min(MAX_SPLIT_EVERY, fits))


def step_bytes(
    step: DaskStep, chunks: Mapping[int, int], sizes: Sequence[int], budget: int | None = None
) -> int:
    """The most bytes one task of ``step`` holds for these chunk sizes.

    Blockwise tasks: input blocks + output block, plus a copy of each input for the
    pairwise steps (einstride copies an operand whose strides BLAS cannot take).  Summation
    tasks (summed labels over several chunks): ``split_every + 1`` output blocks (2 + 1 when
    no ``budget`` is given, the least a tree can do).
    """
    inputs = sum(
        _block(labs, chunks, sizes) * dt.itemsize for labs, dt in zip(step.inputs, step.in_dtypes)
    )
    copies = 0
    if len(step.inputs) == 2:
        copies = sum(_block(labs, chunks, sizes) for labs in step.inputs) * step.dtype.itemsize
    out = _block(step.labels, chunks, sizes) * step.dtype.itemsize
    blockwise = inputs + copies + out
    if not partial_labels(step, chunks, sizes):
        return blockwise
    split = 2 if budget is None else split_every(out, budget)
    return max(blockwise, (split + 1) * out)


def choose_chunks(plan: DaskPlan, initial: Mapping[int, int], budget: int) -> dict[int, int]:
    """One chunk size per label such that every task holds at most ``budget`` bytes.

    Starts from ``initial`` (the operands' own chunk sizes; a label missing there starts
    whole) and halves, one at a time, the label that most lowers the costliest step,
    splitting a kept label before a summed one on a tie (a summed label split over chunks
    costs a summation tree).  A step that cannot fit even in chunks of one element is an
    :class:`EinsumError`.

    >>> from ...spec.equation import parse_equation
    >>> f8 = np.dtype("float64")
    >>> spec = parse_equation("i->", (100,))
    >>> choose_chunks(plan_steps(spec, ((0,),), (f8,), f8, f8), {}, 200)
    {0: 13}
    """
    sizes = plan.spec.sizes
    chunks = {
        lab: max(1, min(initial.get(lab, sizes[lab]), sizes[lab])) for lab in range(len(sizes))
    }
    while True:
        costs = [step_bytes(step, chunks, sizes) for step in plan.steps]
        if not costs or max(costs) <= budget:
            return chunks
        worst = max(range(len(costs)), key=costs.__getitem__)
        label = _label_to_split(plan.steps[worst], chunks, sizes)
        if label is None:
            step = plan.steps[worst]
            raise EinsumError(
                f"einsum {quoted(plan.spec.text)}: step {worst + 1} ({step.kind}) needs "
                f"{costs[worst]:,} bytes per task even with chunks of one element, more than "
                f"the task memory budget of {budget:,} bytes"
            )
        chunks[label] = -(-chunks[label] // 2)


def _label_to_split(step: DaskStep, chunks: Mapping[int, int], sizes: Sequence[int]) -> int | None:
    labels = dict.fromkeys(lab for labs in step.inputs for lab in labs)
    labels.update(dict.fromkeys(step.labels))
    best: tuple[int, int, int] | None = None
    found = None
    for lab in labels:
        if chunks[lab] <= 1:
            continue
        trial = dict(chunks)
        trial[lab] = -(-chunks[lab] // 2)
        key = (step_bytes(step, trial, sizes), int(lab in step.summed), -chunks[lab])
        if best is None or key < best:
            best, found = key, lab
    return found
