"""Plans for torch operands: the NumPy planner on the tensors' shapes, byte strides and
dtypes, translated to torch records and compiled, in a thread-safe LRU.

The cache key holds every fact a plan depends on: the equation key, every operand's shape,
element strides and torch dtype (the dtype gives the bytes), ``out=``'s, ``dtype=``, the
path option and the planner options, as the NumPy backend's cache does.  The options are
NumPy's defaults with fusing off (one pass of NumPy's sum-of-products loop is not a torch
kernel) and no thread splits (torch runs its kernels on its own threads).

>>> import torch
>>> a = torch.ones(3, 2).T                      # a transposed view
>>> entry = entry_for("ij,jk->ik", facts_of([a, a.T]), None, None, "auto")
>>> entry is entry_for("ij,jk->ik", facts_of([a, a.T]), None, None, "auto")
True
>>> entry.result, entry.output_shape, entry.run([a, a.T], None).tolist()
(torch.float32, (2, 2), [[3.0, 3.0], [3.0, 3.0]])
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ....errors import EinsumError
from ...call import equation_of
from ...spec.equation import EinsumSpec, bind, quoted
from ...spec.matmul import MatmulForm, kind_counts
from ...spec.paths import optimize_key, optimize_of_key, path_fits_any_size, unoptimized
from ..numpy.cache import CLEAR_HOOKS
from ..numpy.generic import LazyPlan
from ..numpy.options import PlannerOptions, default_options
from ..numpy.plan import InnerCall, build_plan, class_decisions, inner_call, spread_plan
from ..numpy.skeleton import c_order_class, dense_class, shape_class
from ..numpy.steps import Plan, Spread
from .dtypes import numpy_dtype, result_dtype, torch_dtype
from .execute import compile_program, one_native, spread_run
from .operands import Facts, byte_strides, facts_of
from .records import (
    CopyOp,
    MatmulOp,
    TorchProgram,
    Write,
    largest_bytes,
    peak_bytes,
    sized_bytes,
    translate,
    translate_sized,
)

__all__ = [
    "CACHE_SIZE",
    "Entry",
    "OneProduct",
    "as_one_product",
    "clear_cache",
    "entry_for",
    "facts_of",
    "make_entry",
    "one_product_plan",
    "pair_class",
    "planner_options",
]

CACHE_SIZE = 512


class Entry(LazyPlan):
    """A cached plan: the NumPy plan (for reports; an entry of a new shape of a known class
    builds it when first read), its torch program and compiled ``run``, the torch result
    dtype, the output shape, the largest single allocation, the peak (the most bytes its
    allocations hold at once), whether a matrix product runs in an integer (or bool) dtype,
    whether it is a permuted view or a sum that torch's own autograd differentiates
    (``native``), the :class:`~..numpy.steps.Spread` its run expands the program's result
    by (``spread``, None: the program's result is the result), and
    ``memo``: what later calls on it reuse (the step-by-step equations of
    :mod:`.stepwise`, the gradients' plans per cotangent layout of :mod:`.autograd`)."""

    __slots__ = (
        "integer_products",
        "largest",
        "memo",
        "native",
        "output_shape",
        "peak",
        "program",
        "result",
        "run",
        "spread",
        "text",
    )

    def __init__(
        self,
        *,
        text: str,
        plan: Plan | Callable[[], Plan],
        program: TorchProgram,
        operands: Sequence[np.dtype[Any]],
        result: torch.dtype,
        output_shape: tuple[int, ...],
        largest: int,
        peak: int,
        spread: Spread | None = None,
    ) -> None:
        if isinstance(plan, Plan):
            super().__init__(plan, None)
        else:
            super().__init__(None, plan)
        self.text, self.program, self.run = text, program, compile_program(program)
        self.spread = spread  # the program's result is then expanded (None: it is the result)
        if spread is not None:
            self.run = spread_run(self.run, spread)
        # autograd: torch's own, but for a spread result (its program reads the operand at
        # index 0 of its broadcast axes: torch's graph would send the whole gradient
        # there, a review), whose gradient is einstride's (EinsumFunction)
        self.native = spread is None and one_native(program, operands[0])
        self.result, self.output_shape = result, output_shape
        self.largest, self.peak = largest, peak
        self.integer_products = any(
            isinstance(op, MatmulOp) and op.dtype.kind in "biu" for op in program.steps
        )
        self.memo: dict[Any, Any] = {}


@functools.lru_cache(maxsize=8)
def _options_for(defaults: PlannerOptions) -> PlannerOptions:
    # MKL (torch's CPU matmul) runs a tall, narrow row-major result about 2x slower than
    # the same product the other way round, and two transposed operands 1.5-3x slower
    # unless the result is wide (measured): NumPy's BLAS preferences do not carry over
    return dataclasses.replace(
        defaults,
        threads=1,
        loop_ns=math.inf,
        transposed_cost=0.15,
        both_transposed_cost=1.0,
        wide_cost=0.0,
        tall_cost=1.0,
        into_ns=50000.0,
    )


def planner_options() -> PlannerOptions:
    """The planner options of torch plans: the defaults, never fused, never split.

    >>> planner_options().loop_ns, planner_options().threads
    (inf, 1)
    """
    return _options_for(default_options())


def make_entry(
    eq_key: Any,
    facts: Facts,
    out_facts: Facts | None,
    dtype: np.dtype[Any] | None,
    optimize: Any,
    options: PlannerOptions | None = None,
) -> Entry:
    """Parse, bind, plan (with ``options``, default :func:`planner_options`), translate and
    compile (no cache).  Dense operands take their shape class's plan (made by the class's
    first shape, and cached), translated with their own sizes
    (:func:`.records.translate_sized`): their own plan, equal to its decisions replayed,
    is built only when read."""
    opts = planner_options() if options is None else options
    call = _Call.of(eq_key, facts, out_facts, dtype)
    # broadcast axes (expand()) read once, as on NumPy: the steps' call of several operands
    # through the cache (..numpy.plan.inner_call), one operand's planned per shape
    inner = inner_call(call.spec, call.dtypes, call.strides, out=call.out, dtype=call.compute)
    if inner is not None and len(call.dtypes) > 1:
        return _read_once_entry(call, inner, facts, out_facts, dtype, optimize, opts)
    spread = inner is not None
    entry = _class_entry(call, optimize, opts) if out_facts is None and not spread else None
    if entry is not None:
        return entry
    plan = call.plan(optimize, opts, spread=spread)
    return Entry(
        text=call.spec.text,
        plan=plan,
        program=translate(plan),
        operands=call.dtypes,
        result=call.result,
        output_shape=call.spec.output_shape,
        largest=largest_bytes(plan),
        peak=peak_bytes(plan),
        spread=plan.spread,
    )


def _read_once_entry(
    call: _Call,
    inner: InnerCall,
    facts: Facts,
    out_facts: Facts | None,
    dtype: np.dtype[Any] | None,
    optimize: Any,
    options: PlannerOptions,
) -> Entry:
    """The entry of a call of several operands that reads broadcast axes once: its steps'
    call's entry (through the cache: a new shape of a known class is not planned, 574 ->
    ~370 us a first call of identical columns times a matrix, 128 x 128; both entries are
    held in the cache), run over the operands it reads, its result expanded where it
    spreads, in the call's result dtype."""
    spread = inner.spread
    inner_facts = inner.facts(facts[2::3], [dt.itemsize for dt in call.dtypes])
    inner_out, opt_key = inner.out_facts(out_facts), optimize_key(optimize)

    def lookup(computed: np.dtype[Any] | None) -> Entry:
        if opt_key is None:
            return make_entry(inner.equation, inner_facts, inner_out, computed, optimize, options)
        return _cached(inner.equation, inner_facts, inner_out, computed, opt_key, options)

    found = lookup(dtype)
    if found.result != call.result:  # (a review: torch's promotion weighs 0-dim operands
        # less, and an operand read without its axes may be one: the call's dtype rules)
        found = lookup(call.compute)
    extra = 0 if spread.alloc is None else spread.alloc.nbytes
    return Entry(
        text=call.spec.text,
        plan=lambda: spread_plan(found.plan, spread),
        program=found.program,
        operands=call.dtypes,
        result=found.result,
        output_shape=call.spec.output_shape,
        largest=max(found.largest, extra),
        peak=found.peak + extra,
        spread=spread,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Call:
    """What a plan of torch operands is built from: the bound equation, the planner's
    (NumPy) dtypes and byte strides, the torch result dtype, ``out=``'s byte strides and
    dtype, and the operands' element strides."""

    spec: EinsumSpec
    dtypes: tuple[np.dtype[Any], ...]
    strides: tuple[tuple[int, ...], ...]
    elements: tuple[tuple[int, ...], ...]
    result: torch.dtype
    out: tuple[tuple[int, ...], np.dtype[Any]] | None

    @classmethod
    def of(
        cls, eq_key: Any, facts: Facts, out_facts: Facts | None, dtype: np.dtype[Any] | None
    ) -> _Call:
        shapes = [tuple(shape) for shape in facts[0::3]]
        torch_dtypes: list[torch.dtype] = list(facts[2::3])
        dtypes = [numpy_dtype(d, f"operand {i} has dtype") for i, d in enumerate(torch_dtypes)]
        spec = bind(equation_of(eq_key), shapes)
        result = (
            torch_dtype(dtype, "dtype=")
            if dtype is not None
            else result_dtype([(d, len(s)) for d, s in zip(torch_dtypes, shapes)])
        )
        out = None
        if out_facts is not None:
            out_shape, out_strides, out_dtype = out_facts
            if tuple(out_shape) != spec.output_shape:
                raise EinsumError(
                    f"einsum {quoted(spec.text)}: out= has shape {tuple(out_shape)}, but "
                    f"the result has shape {spec.output_shape}"
                )
            out = (byte_strides(out_strides, out_dtype), numpy_dtype(out_dtype, "out= has dtype"))
            if dtype is None:  # NumPy's rule: computed in the common dtype with out= (a bool
                # sum into an int64 out= counts, a review; a uint8 one does not wrap)
                result = torch.promote_types(result, out_dtype)
        elements = tuple(tuple(s) for s in facts[1::3])
        strides = tuple(byte_strides(s, d) for s, d in zip(elements, torch_dtypes))
        return cls(
            spec=spec, dtypes=tuple(dtypes), strides=strides, elements=elements,
            result=result, out=out,
        )  # fmt: skip

    @property
    def compute(self) -> np.dtype[Any]:
        return numpy_dtype(self.result, "the result has dtype")

    def plan(self, optimize: Any, options: PlannerOptions, *, spread: bool = False) -> Plan:
        return build_plan(
            self.spec, self.dtypes, self.strides, out=self.out, dtype=self.compute,
            optimize=optimize, options=options, spread=spread,
        )  # fmt: skip


Perm = tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OneProduct:
    """How a plan runs a two-operand product of the matmul form as one matrix product: each
    operand copied whole into a new C-ordered tensor of its axes permuted by ``copies[k]``
    first (None: viewed as it is), then viewed in ``folds[k]`` order (over the copy's axes)
    with its kinds merged; ``swapped``: the product is the result's transpose, the right
    operand's by the left one's (``right^T @ left^T``: MKL's choice for a tall result or
    two transposed operands); the product's axes (batch, the first operand's free labels,
    the second's) permuted by ``final`` into the output's order.  ``counts``: how many
    labels of each kind (batch, rows, inner, cols)."""

    copies: tuple[Perm | None, Perm | None]
    folds: tuple[Perm, Perm]
    swapped: bool
    final: Perm
    counts: tuple[int, int, int, int]


def one_product_plan(
    subscripts: str,
    shapes: tuple[tuple[int, ...], tuple[int, ...]],
    strides: tuple[tuple[int, ...], tuple[int, ...]],
    dtype: torch.dtype,
    form: MatmulForm,
) -> OneProduct | None:
    """How the plan of two operands of ``shapes``, element ``strides`` and ``dtype`` (any
    shape of their shape class: one plan's decisions) runs their product as one matrix
    product (:func:`as_one_product`), or None where it does more: what the torch lane runs
    past its bound (:mod:`.lanes`); ``form``: the equation's matmul form
    (:func:`..spec.matmul.matmul_form`).

    >>> from ...spec.matmul import matmul_form
    >>> form = matmul_form((0, 1), (1, 2), (0, 2))                  # ij,jk->ik
    >>> c = ((600, 1), (600, 1))                                     # C order
    >>> one_product_plan("ij,jk->ik", ((600, 600),) * 2, c, torch.float64, form).copies
    (None, None)
    >>> tall = one_product_plan("ij,jk->ik", ((600, 600), (600, 8)), ((600, 1), (8, 1)),
    ...                         torch.float64, form)                 # (k, i) = (j, k)^T (i, j)^T
    >>> tall.swapped, tall.folds, tall.final
    (True, ((1, 0), (1, 0)), (1, 0))
    >>> one_product_plan("ij,jk->ik", ((300, 300),) * 2, ((1200, 2),) * 2,   # every other
    ...                  torch.float64, form).copies
    ((0, 1), (0, 1))
    """
    facts = (shapes[0], strides[0], dtype, shapes[1], strides[1], dtype)
    entry = make_entry(subscripts, facts, None, None, "auto")
    if entry.spread is not None:  # its product is of the operands read at index 0
        return None
    return as_one_product(entry.program, form, numpy_dtype(dtype, "the operands have dtype"))


def as_one_product(
    program: TorchProgram, form: MatmulForm, dtype: np.dtype[Any]
) -> OneProduct | None:
    """``program`` as :class:`OneProduct`: copies of the operands (each at most once, in
    ``dtype``) and one product of them that is the result, each operand's axes ordered as
    the matmul ``form`` orders them (swapped: rows and columns exchanged); else None."""
    if not program.steps:
        return None
    *copies, product = program.steps
    held: dict[int, tuple[int, Perm | None]] = {0: (0, None), 1: (1, None)}  # operand, copy
    for step in copies:
        match step:
            case CopyOp(src=src, perm=perm, to=to) if (
                src in (0, 1) and to.write is Write.NEW and step.dtype == dtype
            ):
                if any(held_src == src for held_src, _ in list(held.values())[2:]):
                    return None  # copied twice
                held[to.dst] = (src, perm)
            case _:
                return None
    match product:
        case MatmulOp(left=left, right=right, left_view=lv, right_view=rv, to=to) if (
            left in held and right in held and product.dtype == dtype
        ):
            pass
        case _:
            return None
    if to.write is not Write.RETURN or program.output.create != "none":
        return None
    (first, first_copy), (second, second_copy) = held[left], held[right]
    if {first, second} != {0, 1}:
        return None
    swapped = first == 1
    counts = kind_counts(form)
    expected = _swapped_perms(form.perms, counts) if swapped else form.perms
    copy_perms, folds = (first_copy, second_copy), (lv.perm, rv.perm)
    for copy, fold, wanted in zip(copy_perms, folds, expected):
        if (fold if copy is None else tuple(copy[ax] for ax in fold)) != wanted:
            return None  # viewed in another order than the form's
    if program.output.final_perm != expected[2]:
        return None
    if swapped:
        copy_perms, folds = copy_perms[::-1], folds[::-1]
    return OneProduct(
        copies=copy_perms, folds=folds, swapped=swapped, final=program.output.final_perm,
        counts=counts,
    )  # fmt: skip


def _swapped_perms(
    perms: tuple[Perm, Perm, Perm], counts: tuple[int, int, int, int]
) -> tuple[Perm, Perm, Perm]:
    """The form's perms for ``right @ left``: the right operand's axes as batch + cols +
    inner, the left one's as batch + inner + rows, the output's among batch + cols + rows."""
    nb, nm, nk, nn = counts
    left, right, out = perms
    first = right[:nb] + right[nb + nk :] + right[nb : nb + nk]
    second = left[:nb] + left[nb + nm :] + left[nb : nb + nm]
    moved = list(range(nb)) + [nb + nn + j for j in range(nm)] + [nb + j for j in range(nn)]
    return first, second, tuple(moved[ax] for ax in out)


def pair_class(a: torch.Tensor, b: torch.Tensor) -> tuple[Any, ...] | None:
    """The shape class key of two operands of one dtype, as the NumPy backend's cache
    names it on a miss (:func:`..numpy.skeleton.c_order_class`, else
    :func:`..numpy.skeleton.dense_class`), None where one is not regular.

    >>> x, y = torch.ones(6, 5, dtype=torch.float64), torch.ones(7, 5, dtype=torch.float64)
    >>> pair_class(x, x.T) == pair_class(y, y.T)                     # sizes 6 and 7: one class
    True
    >>> pair_class(x.as_strided((3, 4), (3, 2)), x) is None         # overlapping: not dense
    True
    """
    dtype = numpy_dtype(a.dtype, "operand 0 has dtype")
    facts = (a.shape, byte_strides(a.stride(), a.dtype), dtype,
             b.shape, byte_strides(b.stride(), b.dtype), dtype)  # fmt: skip
    return c_order_class(facts) or dense_class(facts)


def _class_entry(call: _Call, optimize: Any, options: PlannerOptions) -> Entry | None:
    """The entry from the operands' shape class's plan, translated with their sizes (None:
    ``optimize=False`` or an optimizer object, a path asked for the real sizes
    (:func:`...spec.paths.path_fits_any_size`), operands that are not dense, or records
    that need more than the sizes)."""
    fits = not unoptimized(optimize) and path_fits_any_size(optimize, len(call.dtypes))
    opt_key = optimize_key(optimize) if fits else None
    if opt_key is None:
        return None
    cls = shape_class(call.spec.shapes(), call.strides, call.dtypes)
    if cls is None:
        return None
    # the class's plan (made now for its first shape, which build_plan would make too)
    _, class_plan = class_decisions(
        call.spec.equation, cls, call.dtypes, call.compute, opt_key, options
    )
    program = translate_sized(class_plan, call.spec, call.elements)
    if program is None:
        return None
    largest, peak = sized_bytes(class_plan, call.spec.sizes)
    return Entry(
        text=call.spec.text,
        plan=functools.partial(call.plan, optimize, options),
        program=program,
        operands=call.dtypes,
        result=call.result,
        output_shape=call.spec.output_shape,
        largest=largest,
        peak=peak,
    )


@functools.lru_cache(maxsize=CACHE_SIZE)
def _cached(
    eq_key: Any,
    facts: Facts,
    out_facts: Facts | None,
    dtype: np.dtype[Any] | None,
    opt_key: Any,
    options: PlannerOptions,
) -> Entry:
    optimize = optimize_of_key(opt_key)
    return make_entry(eq_key, facts, out_facts, dtype, optimize, options)


def entry_for(
    eq_key: Any, facts: Facts, out_facts: Facts | None, dtype: np.dtype[Any] | None, optimize: Any
) -> Entry:
    """The cached entry (optimizer objects are planned afresh: they may keep state)."""
    options = planner_options()
    opt_key = optimize_key(optimize)
    if opt_key is None:
        return make_entry(eq_key, facts, out_facts, dtype, optimize, options)
    return _cached(eq_key, facts, out_facts, dtype, opt_key, options)


def clear_cache() -> None:
    """Forget every cached torch plan (``einstride.clear_plan_cache()`` calls this too, once
    the torch backend is loaded)."""
    _cached.cache_clear()


CLEAR_HOOKS.append(clear_cache)
