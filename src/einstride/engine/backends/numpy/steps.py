"""The immutable steps of an einsum plan, and the plan itself.

A plan runs over *registers*: registers ``0..n-1`` hold the operands, every step reads
registers and fills a new one (each register is filled once).  A step that writes the
result may instead write into the *destination*: ``out=``, or an array the plan allocates
(a zeroed one when output labels repeat).  Every allocation a step makes is an
:class:`Alloc`, so the plan knows its bytes before anything runs.

Step kinds (as :attr:`kind` and in the report):

* ``diagonal`` / ``broadcast`` (:class:`ViewStep`): repeated labels of one operand become
  one axis whose stride is the sum (``ndarray.diagonal``), and size-1 ``...`` dimensions
  that broadcast are dropped.  Views, no data moves.
* ``reduce`` (:class:`ReduceStep`): labels of one operand only, not needed later, summed
  (NumPy's strided sum-of-products loop, ``numpy.einsum``'s kernel, over the view).
* ``copy`` (:class:`CopyStep`): an operand copied into a layout (and dtype) the next
  product can use as a view, or a result copied into the destination.
* ``contract`` (:class:`ContractStep`): one batched ``numpy.matmul`` over folded views.
* ``fused`` (:class:`FusedStep`): a tiny problem (a few thousand multiply-adds) done in one
  pass of NumPy's sum-of-products loop, when that beats several steps' Python overhead.
* ``batch`` (:class:`BatchStep`): a product without contracted labels: one broadcast
  ``numpy.multiply`` (Hadamard), or NumPy's sum-of-products loop when a free label makes it
  an outer product (that loop is faster than a ufunc over stride-0 operands).

A large reduce or batch step may be *split*: ``threads`` > 1 chunks along the output label
``split`` (free in every operand), run on threads (see :mod:`.threads`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...spec.equation import EinsumSpec

__all__ = [
    "WRITE_INTO",
    "WRITE_NEW",
    "WRITE_RETURN",
    "WRITE_TEMP",
    "Alloc",
    "BatchStep",
    "ContractStep",
    "CopyStep",
    "OutputPlan",
    "Plan",
    "ReduceStep",
    "Step",
    "ViewStep",
]

# The NumPy kernel of a reduce or batch step:
KERNEL_LOOP = "loop"          # NumPy's strided sum-of-products loop (numpy.einsum's C core)
KERNEL_MULTIPLY = "multiply"  # numpy.multiply over broadcast views
KERNEL_UFUNC = "ufunc"        # numpy.add.reduce / logical_or.reduce (beyond the loop's 52 axes)

# How a step delivers its result:
WRITE_NEW = "new"        # into a C-ordered buffer the plan allocates (register `labels` order)
WRITE_RETURN = "return"  # NumPy allocates (or it is a view); this is the einsum result
WRITE_INTO = "into"      # straight into the destination view
WRITE_TEMP = "temp"      # NumPy allocates a temporary, then it is copied into the destination


@dataclass(frozen=True)
class Alloc:
    """One allocation: ``what`` it holds, its shape and dtype."""

    what: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class ViewStep:
    """Operand register ``src`` viewed: size-1 broadcast axes squeezed, then diagonals."""

    src: int
    dst: int
    operand: int
    squeeze: tuple[int, ...]
    diagonals: tuple[tuple[int, int], ...]
    labels_in: tuple[int, ...]
    labels: tuple[int, ...]
    shape: tuple[int, ...]
    allocs: tuple[Alloc, ...] = ()

    @property
    def kind(self) -> str:
        return "diagonal" if self.diagonals else "broadcast"


@dataclass(frozen=True)
class ReduceStep:
    """Sum ``axes`` of register ``src`` (``logical_or`` for bool) in ``dtype``.

    The kept axes come out in ``src`` order (``kept``); the register holds them in
    ``labels`` order (a C-ordered buffer when ``write`` is ``new``).
    """

    src: int
    dst: int
    axes: tuple[int, ...]
    summed: tuple[int, ...]
    kept: tuple[int, ...]
    labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    write: str
    dest_perm: tuple[int, ...] = ()
    allocs: tuple[Alloc, ...] = ()
    kernel: str = KERNEL_LOOP
    split: int = -1
    threads: int = 1

    kind = "reduce"


@dataclass(frozen=True)
class CopyStep:
    """Register ``src`` transposed by ``perm`` and copied (cast to ``dtype``): into a new
    C-ordered buffer (``write`` = new) or into the destination (``write`` = into)."""

    src: int
    dst: int
    perm: tuple[int, ...]
    labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    write: str
    reason: str
    dest_perm: tuple[int, ...] = ()
    allocs: tuple[Alloc, ...] = ()

    kind = "copy"




@dataclass(frozen=True)
class ContractStep:
    """``matmul(left (B.., M, K), right (B.., K, N)) -> (B.., M, N)`` over folded views.

    ``left_perm``/``left_shape`` turn the left register into its (batch..., M, K) view
    (transpose, then a reshape that the planner checked is a view); likewise right.  The
    batch dimensions are the batch labels, then the ``looped`` labels (free or contracted
    labels that do not fold, moved into matmul's batch loop; an operand without one gets a
    size-1 dimension).  The register holds ``labels`` = batch + looped + M + N, unfolded to
    ``shape``; looped contracted labels are summed by the next step.
    """

    left: int
    right: int
    dst: int
    left_in: tuple[int, ...]
    right_in: tuple[int, ...]
    batch: tuple[int, ...]
    contracted: tuple[int, ...]
    left_free: tuple[int, ...]
    right_free: tuple[int, ...]
    left_perm: tuple[int, ...]
    left_shape: tuple[int, ...]
    right_perm: tuple[int, ...]
    right_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    write: str
    dest_perm: tuple[int, ...] = ()
    left_note: str = "viewed"
    right_note: str = "viewed"
    out_note: str = ""
    left_only: tuple[int, ...] = ()
    right_only: tuple[int, ...] = ()
    allocs: tuple[Alloc, ...] = ()
    looped: tuple[int, ...] = ()

    kind = "contract"


@dataclass(frozen=True)
class BatchStep:
    """``left * right`` over batch + left-free + right-free labels: ``numpy.multiply`` on
    broadcast views (``kernel`` multiply), or NumPy's sum-of-products loop over the
    registers' own labels ``left_labels``/``right_labels`` (``kernel`` loop)."""

    left: int
    right: int
    dst: int
    kernel: str
    left_labels: tuple[int, ...]
    right_labels: tuple[int, ...]
    left_in: tuple[int, ...]
    right_in: tuple[int, ...]
    batch: tuple[int, ...]
    left_free: tuple[int, ...]
    right_free: tuple[int, ...]
    left_perm: tuple[int, ...]
    left_shape: tuple[int, ...]
    right_perm: tuple[int, ...]
    right_shape: tuple[int, ...]
    labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    write: str
    dest_perm: tuple[int, ...] = ()
    left_only: tuple[int, ...] = ()
    right_only: tuple[int, ...] = ()
    allocs: tuple[Alloc, ...] = ()
    out_note: str = ""
    split: int = -1
    threads: int = 1

    kind = "batch"


@dataclass(frozen=True)
class FusedStep:
    """A tiny einsum in ONE pass of NumPy's sum-of-products loop over the operands as they
    are (``labels[i]``: operand ``i``'s label per axis, repeats included), chosen only when
    the whole problem is so small that one loop beats the Python cost of several steps."""

    operands: tuple[int, ...]
    dst: int
    labels: tuple[tuple[int, ...], ...]
    out_labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    write: str
    dest_perm: tuple[int, ...] = ()
    allocs: tuple[Alloc, ...] = ()
    cast: bool = True

    kind = "fused"


Step = ViewStep | ReduceStep | CopyStep | ContractStep | BatchStep | FusedStep


@dataclass(frozen=True)
class OutputPlan:
    """Where the result lives.

    ``create``: ``out`` (the caller's array), ``zeros``/``empty`` (allocated before the
    steps run), or ``none`` (register ``result`` is the result, viewed through
    ``final_perm``).  ``expand`` lists, per distinct output label, the output axes that carry
    it; when a label repeats, the steps write through the strided diagonal view.
    """

    labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    create: str
    expand: tuple[tuple[int, ...], ...]
    result: int
    final_perm: tuple[int, ...]
    allocs: tuple[Alloc, ...] = ()

    @property
    def expands(self) -> bool:
        return len(self.expand) != len(self.labels)


@dataclass(frozen=True)
class Plan:
    """An immutable plan: the spec, the layouts it was made for, the path and the steps."""

    spec: EinsumSpec
    dtypes: tuple[np.dtype[Any], ...]
    strides: tuple[tuple[int, ...], ...]
    out_strides: tuple[int, ...] | None
    result_dtype: np.dtype[Any]
    compute_dtype: np.dtype[Any]
    path: tuple[tuple[int, ...], ...]
    steps: tuple[Step, ...]
    output: OutputPlan
    naive_flops: int
    flops: int
    n_registers: int
    frees: tuple[tuple[int, ...], ...] = field(default=())

    def allocations(self) -> list[tuple[str, Alloc]]:
        """Every allocation, with the name of the step making it, in execution order."""
        found = [("output", a) for a in self.output.allocs]
        for k, step in enumerate(self.steps):
            found += [(f"step {k + 1} ({step.kind})", a) for a in step.allocs]
        return found

    @property
    def allocated_bytes(self) -> int:
        return sum(a.nbytes for _, a in self.allocations())

    def largest_allocation(self) -> tuple[str, Alloc] | None:
        found = self.allocations()
        return max(found, key=lambda item: item[1].nbytes) if found else None

    @property
    def largest_bytes(self) -> int:
        largest = self.largest_allocation()
        return 0 if largest is None else largest[1].nbytes

    def largest_intermediate(self) -> tuple[str, Alloc] | None:
        """The largest allocation other than the output itself."""
        found = [(name, a) for name, a in self.allocations() if a.what != "output"]
        return max(found, key=lambda item: item[1].nbytes) if found else None
