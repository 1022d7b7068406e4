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

A plan may *spread* its result (:class:`Spread`): where every operand axis of an output
label is broadcast (zero strides), the result is the same along it; the steps compute it
over the operands read at index 0 of those axes (the label of size 1), and it is then
broadcast into the full output.  The same record leaves out (*drops*) the axes of a summed
label that an operand broadcasts: the steps read it at index 0 there, and the label is
summed over the operands that carry it densely.

A large reduce or batch step may be *split* (:class:`Split`): ``threads`` > 1 chunks along
an output label free in every operand, run on threads (see :mod:`.threads`).  How every
step but a view writes its result is its :class:`~.delivery.DeliveryPlan`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ...spec.equation import EinsumSpec
from .delivery import Alloc, DeliveryPlan, OutputCreation
from .pairs import Geometry, Groups

__all__ = [
    "BLAS_REDUCTIONS",
    "BatchStep",
    "ContractStep",
    "CopyStep",
    "FusedStep",
    "Kernel",
    "OperandView",
    "OutputPlan",
    "Plan",
    "ReduceStep",
    "Split",
    "Spread",
    "Step",
    "ViewStep",
]


class Kernel(enum.Enum):
    """The NumPy kernel of a reduce or batch step."""

    LOOP = "loop"
    """NumPy's strided sum-of-products loop (``numpy.einsum``'s C core)."""
    MULTIPLY = "multiply"
    """``numpy.multiply`` over broadcast views."""
    UFUNC = "ufunc"
    """``numpy.add.reduce`` / ``logical_or.reduce`` (beyond the loop's 52 axes)."""
    MATVEC = "matvec"
    """A row sum as one BLAS matrix-vector product, ``matrix @ ones``: the summed axes are
    the operand's innermost dense run, the kept ones merge into the rows."""
    VECMAT = "vecmat"
    """A column sum as one BLAS vector-matrix product, ``ones @ matrix``: the kept axes are
    the operand's innermost dense run, the summed ones merge into the rows."""


BLAS_REDUCTIONS = (Kernel.MATVEC, Kernel.VECMAT)


@dataclass(frozen=True, slots=True, kw_only=True)
class Split:
    """A step run as ``threads`` chunks along the output label ``label`` (see
    :mod:`.threads`)."""

    label: int
    threads: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OperandView:
    """An operand of a pairwise step: its ``register``, the register's ``labels`` and
    ``shape``, and how the kernel got it (``note``: viewed, or copied by an earlier step and
    why).  How the kernel folds it is the step's :class:`~.pairs.Geometry`."""

    register: int
    labels: tuple[int, ...]
    shape: tuple[int, ...]
    note: str = "viewed"


class _Delivers:
    """A step that writes through its :class:`~.delivery.DeliveryPlan`, which holds every
    allocation it makes."""

    __slots__ = ()
    delivery: DeliveryPlan

    @property
    def allocs(self) -> tuple[Alloc, ...]:
        return self.delivery.allocs


class _Splits(_Delivers):
    """A step the planner may split over threads."""

    __slots__ = ()
    split: Split | None

    @property
    def threads(self) -> int:
        return 1 if self.split is None else self.split.threads


class _Pairwise(_Delivers):
    """A product of two registers: its register holds the ``labels`` of its geometry."""

    __slots__ = ()
    geometry: Geometry

    @property
    def labels(self) -> tuple[int, ...]:
        return self.geometry.labels


@dataclass(frozen=True, slots=True, kw_only=True)
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

    @property
    def kind(self) -> str:
        return "diagonal" if self.diagonals else "broadcast"

    @property
    def allocs(self) -> tuple[Alloc, ...]:
        return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReduceStep(_Splits):
    """Sum ``axes`` of register ``src`` (``logical_or`` for bool) in ``dtype``.

    The kept axes come out in ``src`` order (``kept``); the register holds them in
    ``labels`` order (a C-ordered buffer when the delivery is ``NEW``).
    """

    src: int
    dst: int
    axes: tuple[int, ...]
    summed: tuple[int, ...]
    kept: tuple[int, ...]
    labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    delivery: DeliveryPlan
    kernel: Kernel = Kernel.LOOP
    split: Split | None = None
    order: tuple[int, ...] = ()  # a BLAS kernel's: the kept axes, then the summed ones
    scratch: tuple[Alloc, ...] = ()  # a BLAS kernel's vector of ones

    kind: ClassVar[str] = "reduce"

    @property
    def allocs(self) -> tuple[Alloc, ...]:
        return self.delivery.allocs + self.scratch


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyStep(_Delivers):
    """Register ``src`` transposed by ``perm`` and copied (cast to ``dtype``): into a new
    C-ordered buffer (``NEW``) or into the destination (``INTO``), for ``reason``."""

    src: int
    dst: int
    perm: tuple[int, ...]
    labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    reason: str
    delivery: DeliveryPlan

    kind: ClassVar[str] = "copy"


@dataclass(frozen=True, slots=True, kw_only=True)
class ContractStep(_Pairwise):
    """``matmul(left (B.., M, K), right (B.., K, N)) -> (B.., M, N)`` over folded views.

    ``geometry.left`` turns the left register into its (batch..., M, K) view (transpose,
    then a reshape that the planner checked is a view); likewise right.  The batch
    dimensions are the batch labels, then the ``looped`` labels (free or contracted labels
    that do not fold, moved into matmul's batch loop; an operand without one gets a size-1
    dimension).  The register holds ``labels`` = batch + looped + M + N, unfolded to
    ``shape``; looped contracted labels are summed by the next step.  ``groups`` are the
    pair's labels in the product's order (contracted = K + looped K, ...).
    """

    dst: int
    left: OperandView
    right: OperandView
    geometry: Geometry
    groups: Groups
    looped: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    delivery: DeliveryPlan

    kind: ClassVar[str] = "contract"


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchStep(_Pairwise, _Splits):
    """``left * right`` over batch + left-free + right-free labels: ``numpy.multiply`` on
    the broadcast views of ``geometry`` (``Kernel.MULTIPLY``), or NumPy's sum-of-products
    loop over the registers' own labels (``Kernel.LOOP``)."""

    dst: int
    kernel: Kernel
    left: OperandView
    right: OperandView
    geometry: Geometry
    groups: Groups
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    delivery: DeliveryPlan
    split: Split | None = None

    kind: ClassVar[str] = "batch"


@dataclass(frozen=True, slots=True, kw_only=True)
class FusedStep(_Delivers):
    """A tiny einsum in ONE pass of NumPy's sum-of-products loop over the operands as they
    are (``labels[i]``: operand ``i``'s label per axis, repeats included), chosen only when
    the whole problem is so small that one loop beats the Python cost of several steps."""

    operands: tuple[int, ...]
    dst: int
    labels: tuple[tuple[int, ...], ...]
    out_labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    delivery: DeliveryPlan
    cast: bool = True
    reason: str = "the problem is too small for several steps to pay off"

    kind: ClassVar[str] = "fused"


Step = ViewStep | ReduceStep | CopyStep | ContractStep | BatchStep | FusedStep


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputPlan:
    """Where the result lives.

    ``create``: how the output array comes to be (:class:`~.delivery.OutputCreation`);
    with ``NONE``, register ``result`` is the result, viewed through ``final_perm``.
    ``expand`` lists, per distinct output label, the output axes that carry it; when a
    label repeats, the steps write through the strided diagonal view.  ``order``: the axes
    of an output created ``EMPTY``, outermost first in memory (``()``: C order), as the
    last step writes it best (:func:`~.fold.write_order`).
    """

    labels: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    create: OutputCreation
    expand: tuple[tuple[int, ...], ...]
    result: int
    final_perm: tuple[int, ...]
    allocs: tuple[Alloc, ...] = ()
    order: tuple[int, ...] = ()

    @property
    def expands(self) -> bool:
        return len(self.expand) != len(self.labels)


@dataclass(frozen=True, slots=True, kw_only=True)
class Spread:
    """Broadcast operand axes read once: ``spec`` is the call as given (the plan's own spec
    reads the spread labels at size 1, without the dropped axes).  The result is broadcast
    along the output ``axes`` after the steps (none: the steps' result is the result);
    ``operand_axes[i]`` are the zero-stride axes of operand ``i`` of those labels, which
    the steps read at index 0 (a slice of one); ``dropped[i]`` its axes left out (read at
    index 0: a summed label it broadcasts, see ``plan.dropped_axes``); ``strides`` are the
    operands' byte strides as given; ``alloc`` is the full output, or with ``out=`` the
    copy of its first slice that is broadcast into it (None when nothing is spread)."""

    spec: EinsumSpec
    strides: tuple[tuple[int, ...], ...]
    axes: tuple[int, ...]
    operand_axes: tuple[tuple[int, ...], ...]
    dropped: tuple[tuple[int, ...], ...]
    alloc: Alloc | None

    def reads(self) -> list[tuple[slice | int, ...] | None]:
        """Per operand, the index reading it at index 0 of its spread axes and of its
        dropped ones (None: whole)."""
        found: list[tuple[slice | int, ...] | None] = []
        for axes, gone, term in zip(self.operand_axes, self.dropped, self.spec.inputs):
            index = tuple(
                0 if ax in gone else slice(0, 1) if ax in axes else slice(None)
                for ax in range(len(term))
            )
            found.append(index if axes or gone else None)
        return found

    def first(self) -> tuple[slice, ...]:
        """The index of the output's first slice along the spread axes."""
        return tuple(
            slice(0, 1) if ax in self.axes else slice(None) for ax in range(len(self.spec.output))
        )


@dataclass(frozen=True, slots=True, kw_only=True)
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
    decided_for: tuple[tuple[int, ...], ...] | None = None
    """The representative shapes whose decisions the plan replays (see :mod:`.skeleton`);
    None: planned at its own shapes."""
    reused: bool = field(default=False, compare=False)
    """The decisions came from the shape-generic cache (made for an earlier call)."""
    finder: Any = field(default="auto", compare=False)
    """The ``optimize=`` form that chose the path (``spec.paths.finder_form``), for the
    report's "path finder" line."""
    spread: Spread | None = None
    """The result broadcast along labels that every operand broadcasts (see the module
    doc); None: the steps compute the whole result."""

    @property
    def call_spec(self) -> EinsumSpec:
        """The spec of the call as given: :attr:`spec`, or with a :class:`Spread` the
        spec whose broadcast labels have their full sizes."""
        return self.spec if self.spread is None else self.spread.spec

    @property
    def call_strides(self) -> tuple[tuple[int, ...], ...]:
        """The operands' byte strides as given: :attr:`strides`, or with a :class:`Spread`
        its own (the steps' leave its dropped axes out)."""
        return self.strides if self.spread is None else self.spread.strides

    def viewed_operand(self) -> int | None:
        """The operand whose view the result is (its register, or views of it: the plan
        computes nothing), else None."""
        if self.output.create is not OutputCreation.NONE:
            return None
        register = self.output.result
        views = {step.dst: step for step in self.steps if isinstance(step, ViewStep)}
        while register in views:
            register = views[register].src
        return register if register < len(self.spec.inputs) else None

    def allocations(self) -> list[tuple[str, Alloc]]:
        """Every allocation, with the name of the step making it, in execution order."""
        found = [("output", a) for a in self.output.allocs]
        for k, step in enumerate(self.steps):
            found += [(f"step {k + 1} ({step.kind})", a) for a in step.allocs]
        if self.spread is not None and self.spread.alloc is not None:
            found.append(("spread", self.spread.alloc))
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

    def intermediates(self) -> list[tuple[str, Alloc]]:
        """:meth:`allocations` other than the output itself."""
        return [(name, a) for name, a in self.allocations() if a.what != "output"]

    def largest_intermediate(self) -> tuple[str, Alloc] | None:
        """The largest allocation other than the output itself."""
        found = self.intermediates()
        return max(found, key=lambda item: item[1].nbytes) if found else None
