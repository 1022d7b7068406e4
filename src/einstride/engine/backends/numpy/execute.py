"""Run a :class:`~.steps.Plan`: it follows the plan's steps and nothing else.

:func:`compile_plan` turns a plan into one Python callable, made once and cached with the
plan: a closure per step, specialised on what the plan already knows (which transposes and
reshapes are no-ops, whether the output is allocated first), so that a repeated einsum
costs a few NumPy calls and no decisions.  Single-step plans get one closure in all.

>>> import numpy as np
>>> from ...spec.equation import parse_equation
>>> from .plan import build_plan
>>> a = np.arange(6.0).reshape(2, 3)
>>> run = compile_plan(build_plan(parse_equation("ij->j", a.shape), (a.dtype,), (a.strides,)))
>>> run((a,), None)
array([3., 5., 7.])
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...._compat import assert_never
from .delivery import Delivery, DeliveryPlan, OutputCreation
from .fold import ordered_empty, write_order
from .pairs import Fold
from .steps import (
    BLAS_REDUCTIONS,
    BatchStep,
    ContractStep,
    CopyStep,
    FusedStep,
    Kernel,
    OutputPlan,
    Plan,
    ReduceStep,
    Spread,
    Step,
    ViewStep,
)
from .threads import run_chunks

__all__ = [
    "EINSUM_LETTERS",
    "Array",
    "KernelFn",
    "Program",
    "ShapeOf",
    "StepFn",
    "chunked",
    "compile_plan",
    "compile_simple",
    "copy_kernel",
    "delivered",
    "destination",
    "diagonal_view",
    "errors_raise",
    "fused_call",
    "fused_letters",
    "loop_kernel",
    "matmul_only",
    "numpy_equation",
    "operands_reader",
    "pair_reader",
    "program_of",
    "reduce_kernel",
    "reshape_view",
    "spread_program",
    "sum_of_products",
    "view_step",
]

Array = np.ndarray[Any, Any]
StepFn = Callable[[list[Any], Any], None]
Program = Callable[[Sequence[Array], "Array | None"], Any]
KernelFn = Callable[..., Any]
"""``kernel(inputs, out=None)``: the step's result in its register's axis order, written
into ``out`` when given (and returned), else into a new array.  ``inputs`` is what the step
reads: one array, a pair, or the operands of a fused loop."""


def errors_raise() -> bool:
    """Whether a floating-point error raises now (``np.errstate(... = "raise")``): NumPy's
    sum-of-products loop raises none, where ufuncs and ``matmul`` do; and a product
    written straight into ``out=`` could raise half-way."""
    return "raise" in np.geterr().values()


def _find_sum_of_products() -> Callable[..., Any]:
    """NumPy's C einsum loop (``numpy.einsum`` without its Python wrapper, where importable)."""
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            found: Callable[..., Any] = importlib.import_module(module).c_einsum
            return found
        except (ImportError, AttributeError):
            continue
    return np.einsum  # pragma: no cover - every supported NumPy has c_einsum


sum_of_products = _find_sum_of_products()
"""``sum_of_products(op0, labels0, [op1, labels1,] out_labels, out=, dtype=, casting=)``:
NumPy's strided sum-of-products loop over arbitrary views (the kernel of reduce steps and
outer products)."""

_matmul = np.matmul
_multiply = np.multiply
_copyto = np.copyto
_empty = np.empty
EINSUM_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""The labels ``numpy.einsum`` takes (a step's equation is written in these)."""


def numpy_equation(terms: Sequence[Sequence[int]], output: Sequence[int]) -> str | None:
    """``terms -> output`` (label ids) as ``numpy.einsum``'s equation, label id ``k``
    written as the ``k``-th letter; None where an id has no letter (past the 52).

    >>> numpy_equation([(0, 1), (1, 2)], (0, 2))
    'ab,bc->ac'
    >>> numpy_equation([(0, 60)], (0,)) is None
    True
    """
    letters = EINSUM_LETTERS  # (label ids are never negative)
    try:
        written = ",".join(["".join([letters[k] for k in term]) for term in terms])
        return written + "->" + "".join([letters[k] for k in output])
    except IndexError:
        return None


def compile_plan(plan: Plan) -> Program:
    """The plan as one callable ``run(operands, out) -> result`` (ndarray or NumPy scalar)."""
    simple = compile_simple(plan)
    program = simple
    if program is None:
        fns = [_compile_step(step) for step in plan.steps]
        program = program_of(plan, fns, destination(plan.output))
    return program if plan.spread is None else spread_program(program, plan.spread)


def spread_program(program: Program, spread: Spread) -> Program:
    """``program`` (the steps over the operands read at index 0 of their broadcast axes,
    without their dropped ones) followed, where it spreads, by the broadcast of its result
    into the full output: ``out=`` (the steps write into its first slice along the spread
    axes, then a copy of that slice, the plan's ``spread`` allocation, is broadcast along
    them: NumPy would copy an overlapping source whole, the size of ``out``, a review) or a
    new C-ordered array."""
    takes, first, shape = spread.reads(), spread.first(), spread.spec.output_shape
    if not spread.axes:  # axes dropped, nothing spread: the steps' result is the result

        def read(operands: Sequence[Array], out: Array | None) -> Any:
            return program([op if t is None else op[t] for op, t in zip(operands, takes)], out)

        return read

    def run(operands: Sequence[Array], out: Array | None) -> Any:
        ops = [op if take is None else op[take] for op, take in zip(operands, takes)]
        if out is not None:
            program(ops, out[first])
            np.copyto(out, out[first].copy())
            return out
        part = program(ops, None)
        full = np.empty(shape, part.dtype)
        full[...] = part
        return full

    return run


def program_of(plan: Plan, fns: list[StepFn], make_dest: MakeDest) -> Program:
    """The steps' closures run over the registers, each register freed after its last read."""
    n_regs, n_in = plan.n_registers, len(plan.spec.inputs)
    finish = _finisher(plan.output)
    pad = [None] * (n_regs - n_in)
    work = [(fn, free) for fn, free in zip(fns, plan.frees)]

    def run(operands: Sequence[Array], out: Array | None) -> Any:
        regs: list[Any] = [*operands, *pad]
        full, dest = make_dest(out, operands)
        for fn, free in work:
            fn(regs, dest)
            for reg in free:
                regs[reg] = None
        return finish(full, out, regs)

    return run


def _finisher(output: OutputPlan) -> Callable[[Any, Any, list[Any]], Any]:
    result, final_perm = output.result, output.final_perm
    identity = final_perm == tuple(range(len(final_perm)))
    scalar = not output.shape

    def finish(full: Any, out: Any, regs: list[Any]) -> Any:
        if full is not None:
            return full if out is not None or not scalar else full[()]
        value = regs[result]
        if not identity:
            value = value.transpose(final_perm)
        return value[()] if scalar else value.view() if value is regs[0] else value

    return finish


def compile_simple(plan: Plan) -> Program | None:
    """One closure for the commonest plans: a view, or one step over the operands whose
    result is the einsum result."""
    output = plan.output
    if output.create is not OutputCreation.NONE:
        return None
    final_perm = output.final_perm
    identity = final_perm == tuple(range(len(final_perm)))
    scalar = not output.shape
    if not plan.steps:
        if scalar:
            return lambda ops, out: ops[0][()]
        return lambda ops, out: ops[0].transpose(final_perm)
    if len(plan.steps) != 1:
        return None
    return _simple_step(plan.steps[0], final_perm, identity, scalar)


def _simple_step(
    step: Step, final_perm: tuple[int, ...], identity: bool, scalar: bool
) -> Program | None:
    """The closure of a plan of one step over the operands, when it has one."""
    returns = not isinstance(step, ViewStep) and step.delivery.mode is Delivery.RETURN
    match step:
        case ViewStep():
            return _simple_view(step, final_perm, identity, scalar)
        case ContractStep() if returns and (step.left.register, step.right.register) == (0, 1):
            if matmul_only(step):  # no Python frame between the call and BLAS
                if identity:
                    return lambda ops, out: _matmul(ops[0], ops[1])
                return lambda ops, out: _matmul(ops[0], ops[1]).transpose(final_perm)
            product = _contract_kernel(step)  # the operands are its pair
            if scalar:
                return lambda ops, out: product(ops)[()]
            if identity:
                return lambda ops, out: product(ops)
            return lambda ops, out: product(ops).transpose(final_perm)
        case ReduceStep() if returns and step.src == 0:
            reduce = _direct_reduce(step)  # a rank-0 result comes back as a NumPy scalar
            if identity:
                return lambda ops, out: reduce(ops[0])
            return lambda ops, out: reduce(ops[0]).transpose(final_perm)
        case FusedStep() if returns:
            if _fused_plain(step):
                equation = _fused_equation(step)
                return lambda ops, out: sum_of_products(equation, *ops)
            call = fused_call(step)
            return lambda ops, out: call(ops)
        case ReduceStep() | CopyStep() | ContractStep() | BatchStep() | FusedStep():
            return None  # the general path runs it
        case _:
            assert_never(step)


def _simple_view(
    step: ViewStep, final_perm: tuple[int, ...], identity: bool, scalar: bool
) -> Program | None:
    if step.src != 0 or scalar:
        return None
    if len(step.diagonals) == 1 and not step.squeeze:
        ((d1, d2),) = step.diagonals
        if identity:
            return lambda ops, out: diagonal_view(ops[0], d1, d2)
        return lambda ops, out: diagonal_view(ops[0], d1, d2).transpose(final_perm)
    view = view_step(step)

    def viewed(ops: Sequence[Array], out: Any) -> Any:
        regs: list[Any] = [ops[0], None]
        view(regs, None)
        return regs[1].transpose(final_perm)

    return viewed


ShapeOf = Callable[[Any], tuple[int, ...]]
"""The shape of an array a step allocates, read from what it is given (operands, inputs)."""
MakeDest = Callable[[Any, Sequence[Array]], tuple[Any, Any]]


def destination(output: OutputPlan, shape_of: ShapeOf | None = None) -> MakeDest:
    """``make_dest(out, operands)`` creates (or takes ``out=``) the result array and its
    write view: when output labels repeat, the writeable strided diagonal view that
    ``numpy.einsum`` gives (``"iij->ij"``), with ``as_strided`` as the fallback beyond 52
    labels.  The array has the plan's shape, or ``shape_of(operands)``."""
    shape, dtype = output.shape, output.dtype
    groups = output.expand if output.expands else None
    equation = None
    if groups is not None and len(groups) <= len(EINSUM_LETTERS):
        letter = {ax: EINSUM_LETTERS[k] for k, axes in enumerate(groups) for ax in axes}
        equation = (
            "".join(letter[ax] for ax in range(len(shape))) + "->" + EINSUM_LETTERS[: len(groups)]
        )

    def write_view(full: Array) -> tuple[Array, Array]:
        if groups is None:
            return full, full
        if equation is not None:
            return full, sum_of_products(equation, full)
        strides = tuple(sum(full.strides[ax] for ax in axes) for axes in groups)
        ushape = tuple(full.shape[axes[0]] for axes in groups)
        return full, as_strided(full, ushape, strides, writeable=True)

    match output.create:
        case OutputCreation.NONE:
            return lambda out, ops: (None, None)
        case OutputCreation.OUT:

            def take(out: Array | None, ops: Sequence[Array]) -> tuple[Any, Any]:
                assert out is not None
                if groups is not None:
                    out.fill(0)
                return write_view(out)

            return take
        case OutputCreation.ZEROS if shape_of is not None:
            return lambda out, ops: write_view(np.zeros(shape_of(ops), dtype))
        case OutputCreation.ZEROS:
            return lambda out, ops: write_view(np.zeros(shape, dtype))
        case OutputCreation.EMPTY if shape_of is not None:
            empty = ordered_empty(output.order)
            return lambda out, ops: write_view(empty(shape_of(ops), dtype))
        case OutputCreation.EMPTY:
            empty = ordered_empty(output.order)
            return lambda out, ops: write_view(empty(shape, dtype))
        case _:
            assert_never(output.create)


# -- the write combinator -----------------------------------------------------------------


def delivered(
    kernel: KernelFn,
    take: Callable[[list[Any]], Any],
    dst: int,
    delivery: DeliveryPlan,
    new_buffer: tuple[tuple[int, ...], np.dtype[Any]] | None = None,
    read_buffer: tuple[ShapeOf, np.dtype[Any]] | None = None,
) -> StepFn:
    """The step that runs ``kernel`` over its inputs (``take(regs)``) and delivers the
    result: the one place ``NEW``/``RETURN``/``INTO``/``TEMP`` are carried out, for every
    kernel.  ``new_buffer`` (shape, dtype): for ``NEW``, the C-ordered register buffer is
    allocated here and the kernel fills it (a kernel that may return another memory order);
    ``read_buffer`` (shape_of, dtype): the same with the shape read from the inputs."""
    perm = delivery.dest_perm
    match delivery.mode:
        case Delivery.NEW if read_buffer is not None:
            shape_of, dtype = read_buffer

            def fill_read(regs: list[Any], dest: Any) -> None:
                inputs = take(regs)
                buf = _empty(shape_of(inputs), dtype)
                kernel(inputs, buf)
                regs[dst] = buf

            return fill_read
        case Delivery.NEW if new_buffer is not None:
            shape, dtype = new_buffer

            def fill(regs: list[Any], dest: Any) -> None:
                buf = _empty(shape, dtype)
                kernel(take(regs), buf)
                regs[dst] = buf

            return fill
        case Delivery.NEW | Delivery.RETURN:

            def keep(regs: list[Any], dest: Any) -> None:
                regs[dst] = kernel(take(regs))

            return keep
        case Delivery.INTO:

            def into(regs: list[Any], dest: Any) -> None:
                kernel(take(regs), dest.transpose(perm))

            return into
        case Delivery.TEMP if delivery.rounded_to is not None:
            rounded_to = delivery.rounded_to

            def temp_rounded(regs: list[Any], dest: Any) -> None:
                value = kernel(take(regs)).astype(rounded_to)
                _copyto(dest.transpose(perm), value, casting="unsafe")

            return temp_rounded
        case Delivery.TEMP:

            def temp(regs: list[Any], dest: Any) -> None:
                _copyto(dest.transpose(perm), kernel(take(regs)), casting="unsafe")

            return temp
        case _:
            assert_never(delivery.mode)


def _compile_step(step: Step) -> StepFn:
    match step:
        case ViewStep():
            return view_step(step)
        case FusedStep():
            return delivered(
                fused_call(step), operands_reader(step.operands), step.dst, step.delivery
            )
        case ReduceStep():
            return delivered(
                reduce_kernel(step),
                operator.itemgetter(step.src),
                step.dst,
                step.delivery,
                (step.shape, step.dtype),
            )
        case CopyStep():
            return delivered(
                copy_kernel(step), operator.itemgetter(step.src), step.dst, step.delivery
            )
        case ContractStep():
            return delivered(_contract_kernel(step), pair_reader(step), step.dst, step.delivery)
        case BatchStep():
            return delivered(
                _batch_kernel(step),
                pair_reader(step),
                step.dst,
                step.delivery,
                (step.shape, step.dtype),
            )
        case _:
            assert_never(step)


def pair_reader(step: ContractStep | BatchStep) -> Callable[[list[Any]], Any]:
    return operator.itemgetter(step.left.register, step.right.register)


def operands_reader(reads: tuple[int, ...]) -> Callable[[list[Any]], Any]:
    """``regs -> [regs[r] for r in reads]`` (a slice when they are the first registers)."""
    if reads == tuple(range(len(reads))):
        return operator.itemgetter(slice(0, len(reads)))
    return lambda regs: [regs[r] for r in reads]


# -- kernels --------------------------------------------------------------------------------


def fused_letters(terms: Sequence[Sequence[int]], output: Sequence[int]) -> dict[int, str]:
    """The letter a fused step's equation gives each label, in order of first appearance
    (at most 52 labels: the planner checked; :mod:`.loopcalls` orders NumPy's axes by them)."""
    first = dict.fromkeys([lab for term in terms for lab in term] + list(output))
    return {lab: EINSUM_LETTERS[k] for k, lab in enumerate(first)}


def _fused_equation(step: FusedStep) -> str:
    """NumPy's own equation string for the step."""
    ids = fused_letters(step.labels, step.out_labels)
    equation = ",".join("".join(ids[lab] for lab in term) for term in step.labels)
    return equation + "->" + "".join(ids[lab] for lab in step.out_labels)


def _fused_plain(step: FusedStep) -> bool:
    """No cast, and not a pure view: NumPy's loop can be called as it is.  (NumPy answers
    a pure view -- one operand, nothing summed -- without applying ``dtype``.)"""
    pure_view = len(step.labels) == 1 and set(step.labels[0]) <= set(step.out_labels)
    return not step.cast and not pure_view


def fused_call(step: FusedStep) -> KernelFn:
    """One sum-of-products loop over every operand."""
    equation, dtype = _fused_equation(step), step.dtype
    kwargs: dict[str, Any] = {"dtype": dtype, "casting": "unsafe"} if step.cast else {}

    def call(ops: Sequence[Array], out: Array | None = None) -> Any:
        if out is not None:
            return sum_of_products(equation, *ops, out=out, **kwargs)
        value = sum_of_products(equation, *ops, **kwargs)
        return value if value.dtype == dtype else value.astype(dtype)

    return call


def view_step(step: ViewStep) -> StepFn:
    src, dst, squeeze, diagonals = step.src, step.dst, step.squeeze, step.diagonals

    def run(regs: list[Any], dest: Any) -> None:
        x = regs[src]
        if squeeze:
            x = x.squeeze(axis=squeeze)
        for a, b in diagonals:
            x = diagonal_view(x, a, b)
        regs[dst] = x

    return run


def diagonal_view(x: Array, a: int, b: int) -> Array:
    """The diagonal of axes ``a`` and ``b`` as the last axis, writeable when ``x`` is (as
    ``numpy.einsum("ii->i", x)`` gives it; ``ndarray.diagonal`` alone is read-only)."""
    view = x.diagonal(0, a, b)
    if x.flags.writeable:
        view.flags.writeable = True
    return view


def _reduce_labels(step: ReduceStep) -> tuple[list[int], list[int]]:
    n = len(step.axes) + len(step.kept)
    in_labels = list(range(n))
    out_labels = [ax for ax in range(n) if ax not in step.axes]
    return in_labels, out_labels


PIECE_BYTES = 2 << 20  # a split product's result in pieces of this to twice this (a huge page)
PIECE_READ = 1.5  # ... where it reads at most this many times what it writes (not a Hadamard's)


def _part(x: Array, axis: int, lo: int, hi: int) -> Array:
    """``x[lo:hi]`` along ``axis`` (all of it along a broadcast size-1 axis)."""
    if axis < 0 or x.shape[axis] == 1:
        return x
    return x[(slice(None),) * axis + (slice(lo, hi),)]


def chunked(
    kernel: Callable[..., Any],
    in_axes: Sequence[int],
    out_axis: int,
    threads: int,
    *,
    pieces: bool = False,
) -> Callable[..., None]:
    """``kernel(*inputs, out)`` run on ``threads`` threads along the output axis
    ``out_axis`` (input ``k``'s axis ``in_axes[k]``; -1: not sliced), each thread writing
    its own part of ``out``: one chunk each, of two rows at least (fewer threads where the
    axis is shorter), or with ``pieces`` (a product's step, which sums nothing) as many
    pieces as :func:`piece_count` says, taken in turn (:func:`thread_pieces`).  Only the
    planner asks for this (large memory-bound steps)."""

    def split_run(*arrays: Array) -> None:
        *inputs, out = arrays
        n = out.shape[out_axis]
        # (a chunk of one row is summed in another order than the whole: a review)
        count = (
            piece_count(out, out_axis, threads, sum(_read(x) for x in inputs))
            if pieces
            else min(threads, max(1, n // 2))
        )
        edges = [n * k // count for k in range(count + 1)]
        parts = [
            functools.partial(
                kernel,
                *[_part(x, ax, lo, hi) for x, ax in zip(inputs, in_axes)],
                _part(out, out_axis, lo, hi),
            )
            for lo, hi in itertools.pairwise(edges)
        ]
        groups, stop = thread_pieces(edges, threads), threading.Event()
        chunks = [_in_turn([parts[k] for k in group], stop) for group in groups if group]
        run_chunks(chunks, stop)

    return split_run


def piece_count(out: Array, axis: int, threads: int, read: int = 0) -> int:
    """How many pieces a product's step writing ``out`` and reading ``read`` bytes runs as
    along ``axis``: ``threads``, or where ``axis`` is the result's outermost in memory (each
    piece a block of it) and the step reads at most :data:`PIECE_READ` times what it writes,
    as many as :data:`PIECE_BYTES` fit, a multiple of ``threads`` (or the axis's length
    where that is less).  Threads that take such pieces in turn write a new result faster
    than threads that write its halves (measured on two threads, alternated in one
    process: a 32 MiB outer product 2.2-3.3 ms in pieces, 3.0-3.9 in halves, pytblis
    2.1-3.1, as the machine's state went; a matrix times a row of it 5.1-6.0 against
    5.8-6.2; a Hadamard product, which reads twice what it writes, 0-8% slower in
    pieces).  A reduction keeps its chunks: NumPy's loop may sum a piece of one row in
    another order than the whole (a review), and its split axis may be inner in its result
    (threads would share cache lines).

    >>> piece_count(np.empty((2048, 2048)), 0, 2), piece_count(np.empty((2048, 2048)), 1, 2)
    (16, 2)
    >>> piece_count(np.empty((2048, 2048)).T, 1, 2), piece_count(np.empty((10, 8)), 0, 2)
    (16, 2)
    >>> piece_count(np.empty((2048, 2048)), 0, 2, read=2 * 2048 * 2048 * 8)  # a Hadamard's
    2
    """
    n: int = out.shape[axis]
    stride = abs(out.strides[axis])
    if n <= threads or read > PIECE_READ * out.nbytes:
        return max(1, min(threads, n))  # (a part of no row would be the whole: _part)
    if any(abs(s) > stride for s, m in zip(out.strides, out.shape) if m > 1):
        return threads
    wanted = max(1, int(out.nbytes) // (PIECE_BYTES * threads)) * threads
    return min(wanted, n)


def _read(x: Array) -> int:
    """The bytes a view reads, a broadcast axis's once (a review: a broadcast row counted
    at its full size made a row times a matrix a Hadamard product's reading twice)."""
    read = int(x.itemsize)
    for n, step in zip(x.shape, x.strides):
        read *= n if step else 1
    return read


def thread_pieces(edges: Sequence[int], threads: int) -> list[list[int]]:
    """The pieces (between ``edges``) each of ``threads`` threads runs, in order: piece
    ``k`` to thread ``k`` where there are as many, else each piece to the thread with the
    fewest rows so far (the first of equals), so that threads differ by a piece at most
    (a review: pieces of 1 and 2 rows dealt in turn gave one thread twice the other's).

    >>> thread_pieces([0, 1, 3, 4, 6, 7, 9], 2)
    [[0, 2, 3], [1, 4, 5]]
    >>> thread_pieces([0, 0, 1], 2)
    [[0], [1]]
    """
    count = len(edges) - 1
    if count <= threads:
        return [[k] for k in range(count)] + [[] for _ in range(threads - count)]
    rows: list[int] = [0] * threads
    groups: list[list[int]] = [[] for _ in range(threads)]
    for k, (lo, hi) in enumerate(itertools.pairwise(edges)):
        t = rows.index(min(rows))
        groups[t].append(k)
        rows[t] += hi - lo
    return groups


def _in_turn(pieces: Sequence[Callable[[], object]], stop: threading.Event) -> Callable[[], None]:
    """The pieces one after another, until ``stop`` is set (the caller was interrupted: a
    pool thread then ends after its current piece, not after its whole list)."""

    def run() -> None:
        for piece in pieces:
            if stop.is_set():
                return
            piece()

    return run


def _direct_reduce(step: ReduceStep) -> Callable[..., Array]:
    """``reduce(x, out=None)`` with the step's kernel (the result in ``kept`` order)."""
    reduce = _plain_reduce(step)
    if step.split is None:
        return reduce
    n = len(step.axes) + len(step.kept)
    kept_axes = [ax for ax in range(n) if ax not in step.axes]
    out_axis = step.kept.index(step.split.label)
    split_run = chunked(reduce, [kept_axes[out_axis]], out_axis, step.split.threads)
    dtype = step.dtype

    def split_reduce(x: Array, out: Array | None = None) -> Array:
        if out is None:  # laid out as NumPy's loop lays out its own (a review: C order
            # summed otherwise than the unsplit step's own result, whose bits they must be)
            order = write_order(kept_axes, range(n), x.shape, x.strides)
            out = ordered_empty(order)([x.shape[ax] for ax in kept_axes], dtype)
        split_run(x, out)
        return out

    return split_reduce


def _plain_reduce(step: ReduceStep) -> Callable[..., Array]:
    if step.kernel in BLAS_REDUCTIONS:
        return _matvec_reduce(step, _loop_reduce(step))
    if step.kernel is Kernel.UFUNC:
        ufunc = np.logical_or if step.dtype == np.bool_ else np.add
        dtype, axes = step.dtype, step.axes

        def reduce_ufunc(x: Array, out: Array | None = None) -> Array:
            value: Array = ufunc.reduce(x, axis=axes, dtype=dtype, out=out)
            return value

        return reduce_ufunc
    return _loop_reduce(step)


def _loop_reduce(step: ReduceStep) -> Callable[..., Array]:
    in_labels, out_labels = _reduce_labels(step)
    dtype, summed = step.dtype, step.axes

    def reduce(x: Array, out: Array | None = None) -> Array:
        if out is None or any(x.strides[ax] < 0 for ax in summed):
            # NumPy's loop sums a negative-strided axis in another order into out= than
            # into its own result: such a sum is made on its own and copied, so that a
            # split's chunks (each written into its part of out=) give the bits of the
            # whole (a review: other bits at one thread and two)
            value: Array = sum_of_products(x, in_labels, out_labels, dtype=dtype, casting="unsafe")
            if out is None:
                return value
            _copyto(out, value, casting="unsafe")
            return out
        found: Array = sum_of_products(
            x, in_labels, out_labels, out=out, dtype=dtype, casting="unsafe"
        )
        return found

    return reduce


def _matvec_reduce(step: ReduceStep, loop: Callable[..., Array]) -> Callable[..., Array]:
    """The reduction as one BLAS matrix-vector product with a vector of ones made for the
    call: the operand's axes in the planned memory ``order``, the kept ones merged into one
    axis and the summed ones into another (views: the planner checked), then ``matrix @
    ones`` (``MATVEC``, the summed axes inside) or ``ones @ matrix`` (``VECMAT``).
    Floating-point flags are ignored, as NumPy's loop ignores them.  The result in ``kept``
    order, into ``out`` (a new buffer in the memory order of the kept axes, as the planner
    delivers it) when given.  An operand off its dtype's alignment, which the plan cannot
    see, takes ``loop``: ``matmul`` would copy it whole."""
    dtype, summed = step.dtype, step.axes
    kept = tuple(ax for ax in range(len(step.axes) + len(step.kept)) if ax not in summed)
    rows = tuple(ax for ax in step.order if ax in kept)  # in memory order
    columns = tuple(ax for ax in step.order if ax in summed)
    to_kept = tuple(rows.index(ax) for ax in kept)
    to_rows = _inverse(to_kept)
    row_sum = step.kernel is Kernel.MATVEC
    order = rows + columns if row_sum else columns + rows

    def matvec(x: Array, out: Array | None = None) -> Array:
        if not x.flags.aligned:
            return loop(x, out)
        kept_shape = tuple(x.shape[ax] for ax in rows)
        width, length = math.prod(kept_shape), math.prod(x.shape[ax] for ax in summed)
        matrix = reshape_view(x.transpose(order), (width, length) if row_sum else (length, width))
        target = None if out is None else reshape_view(out.transpose(to_rows), (width,))
        ones = np.ones(length, dtype)
        with np.errstate(all="ignore"):
            value = (
                _matmul(matrix, ones, out=target) if row_sum else _matmul(ones, matrix, out=target)
            )
        return out if out is not None else value.reshape(kept_shape).transpose(to_kept)

    return matvec


def reduce_kernel(step: ReduceStep) -> KernelFn:
    """The reduction with its output in register (``labels``) order: the kept axes come out
    in source order, so a buffer in another order is written through a transposed view."""
    direct = _direct_reduce(step)
    buf_perm = tuple(step.labels.index(lab) for lab in step.kept)
    if buf_perm == tuple(range(len(buf_perm))):
        return direct

    def reduce(x: Array, out: Array | None = None) -> Array:
        if out is None:
            return direct(x).transpose(_inverse(buf_perm))
        direct(x, out.transpose(buf_perm))
        return out

    return reduce


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(perm)
    for k, p in enumerate(perm):
        inverse[p] = k
    return tuple(inverse)


def copy_kernel(step: CopyStep) -> KernelFn:
    perm, dtype = step.perm, step.dtype

    def copy(x: Array, out: Array | None = None) -> Array:
        x = x.transpose(perm)
        if out is None:
            if x.size >= PACK_MIN_ELEMENTS and x.dtype == dtype:
                packed = packed_copy(x)
                if packed is not None:
                    return packed
            return x.astype(dtype, order="C")
        if x.size < PACK_MIN_ELEMENTS or not packed_copyto(out, x):
            _copyto(out, x, casting="unsafe")
        return out

    return copy


PACK_MIN_ELEMENTS = 1 << 12  # a smaller copy is quick whatever its runs
PACK_MAX_BYTES = 64  # trailing blocks up to a cache line are copied as one item each


def packed_copy(x: Array) -> Array | None:
    """A C-ordered copy of ``x`` whose trailing axes form a short contiguous block (at most
    :data:`PACK_MAX_BYTES`): NumPy's copy walks that block as its inner loop, a call per
    few elements, where the block viewed as one item of its bytes lets the axes outside
    it run long (a copy of an 18-qubit state moving two qubits to the front, runs of 2
    float64: 0.59 ms, packed as 16-byte items 0.07 ms).  None where that does not apply
    (no such block, the whole array one block, or a dtype holding objects).

    >>> x = np.arange(16.0).reshape(2, 2, 2, 2).transpose(1, 0, 2, 3)
    >>> np.array_equal(packed_copy(x), np.ascontiguousarray(x))
    True
    """
    found = _packed_block(x, x.strides)
    if found is None:
        return None
    outer, item = found
    items = x.reshape(outer + (-1,)).view(item)
    return items.copy(order="C").view(x.dtype).reshape(x.shape)


def packed_copyto(out: Array, x: Array) -> bool:
    """:func:`packed_copy` into ``out``, where it has ``x``'s shape and dtype and the
    trailing axes of both form the same short contiguous block; False where that does not
    apply (nothing copied).

    >>> x = np.arange(16.0).reshape(2, 2, 2, 2).transpose(1, 0, 2, 3)
    >>> out = np.empty((2, 2, 2, 2))
    >>> packed_copyto(out, x), np.array_equal(out, x)
    (True, True)
    """
    if out.dtype != x.dtype or out.shape != x.shape:
        return False  # (a cast, or a broadcast: NumPy's copy; a review)
    found = _packed_block(x, x.strides, out.strides)
    if found is None:
        return False
    outer, item = found
    _copyto(reshape_view(out, outer + (-1,)).view(item), x.reshape(outer + (-1,)).view(item))
    return True


def _packed_block(
    x: Array, *strides: tuple[int, ...]
) -> tuple[tuple[int, ...], np.dtype[Any]] | None:
    """The axes outside ``x``'s trailing block that is contiguous in every layout of
    ``strides`` (at most :data:`PACK_MAX_BYTES`, two elements at least, not the whole
    array), and the block as one item's dtype; None where there is none."""
    shape, size = x.shape, x.itemsize
    k, block = x.ndim, 1
    while k and (shape[k - 1] == 1 or all(s[k - 1] == size * block for s in strides)):
        block *= shape[k - 1]
        k -= 1
    if block < 2 or block * size > PACK_MAX_BYTES or k == 0 or x.dtype.hasobject:
        return None
    return shape[:k], np.dtype((np.void, block * size))


def _operand_view(in_shape: tuple[int, ...], fold: Fold) -> Callable[[Array], Array] | None:
    """transpose + reshape into the kernel's view; None when the register already is it."""
    perm, shape = fold.perm, fold.shape
    identity = perm == tuple(range(len(perm)))
    if identity and in_shape == shape:
        return None
    if identity:
        return lambda x: x.reshape(shape)
    permuted = tuple(in_shape[p] for p in perm)
    if permuted == shape:
        return lambda x: x.transpose(perm)
    return lambda x: x.transpose(perm).reshape(shape)


def reshape_view(x: Array, shape: tuple[int, ...]) -> Array:
    """``x.reshape(shape)`` that is guaranteed to be a view (the destination of a write):
    the planner checked the strides fold, and a copy would silently lose the result."""
    try:
        view: Array = np.reshape(x, shape, copy=False)
    except TypeError:  # pragma: no cover - NumPy < 2.1 has no copy=; check by hand
        view = x.reshape(shape)
        if view.size and not np.shares_memory(view, x):
            raise RuntimeError("einsum: the planned output view needs a copy") from None
    return view


def matmul_only(step: ContractStep) -> bool:
    """The step is ``numpy.matmul`` of its registers as they are."""
    geo = step.geometry
    return (
        _operand_view(step.left.shape, geo.left) is None
        and _operand_view(step.right.shape, geo.right) is None
        and len(geo.out_shape) <= 2
        and geo.out_shape == step.shape
    )


def _contract_kernel(step: ContractStep) -> KernelFn:
    """``contract((a, b), out=None)``: matmul of the folded views, unfolded to the step's
    shape (into ``out`` through a reshape that the planner checked is a view)."""
    geo = step.geometry
    view_a = _operand_view(step.left.shape, geo.left)
    view_b = _operand_view(step.right.shape, geo.right)
    out_shape, shape, dtype = geo.out_shape, step.shape, step.dtype
    batched = len(out_shape) > 2
    unfold = out_shape != shape

    def contract(pair: Sequence[Array], out: Array | None = None) -> Array:
        a, b = pair
        if view_a is not None:
            a = view_a(a)
        if view_b is not None:
            b = view_b(b)
        if out is not None:
            _matmul(a, b, out=reshape_view(out, out_shape))
            return out
        if batched:
            c = _empty(out_shape, dtype)
            _matmul(a, b, out=c)
        else:
            c = _matmul(a, b)
        return c.reshape(shape) if unfold else c

    return contract


def _same(x: Array) -> Array:
    return x


def _batch_kernel(step: BatchStep) -> KernelFn:
    """``batch((a, b), out=None)``: the product, split over threads when planned."""
    kernel = loop_kernel(step) if step.kernel is Kernel.LOOP else _multiply_kernel(step)
    return kernel if step.split is None else _split_batch(step, kernel)


def loop_kernel(step: BatchStep) -> KernelFn:
    """NumPy's sum-of-products loop over the registers' own labels (an outer product)."""
    shape, dtype = step.shape, step.dtype
    left, right = step.left.labels, step.right.labels
    ids = {lab: k for k, lab in enumerate(dict.fromkeys(left + right))}
    la, lb = [ids[x] for x in left], [ids[x] for x in right]
    lo = [ids[x] for x in step.labels]

    def loop(pair: Sequence[Array], out: Array | None = None) -> Array:
        a, b = pair
        if out is None:
            out = _empty(shape, dtype)
        sum_of_products(a, la, b, lb, lo, out=out, dtype=dtype, casting="unsafe")
        return out

    return loop if dtype != np.clongdouble else _skipping_empty(loop, shape, dtype)


def _skipping_empty(kernel: KernelFn, shape: tuple[int, ...], dtype: np.dtype[Any]) -> KernelFn:
    """``kernel``, not called for an empty result (nothing to write): on an outer product of
    complex long doubles with an empty operand, NumPy 2.4's loop corrupts the heap (glibc
    aborts the process: ``munmap_chunk(): invalid pointer``)."""

    def skipping(pair: Sequence[Array], out: Array | None = None) -> Array:
        if out is None:
            out = _empty(shape, dtype)
        return out if out.size == 0 else kernel(pair, out)

    return skipping


def _multiply_kernel(step: BatchStep) -> KernelFn:
    """``numpy.multiply`` over the broadcast views of the step's geometry."""
    shape, dtype = step.shape, step.dtype
    view_a = _operand_view(step.left.shape, step.geometry.left) or _same
    view_b = _operand_view(step.right.shape, step.geometry.right) or _same

    def multiply(pair: Sequence[Array], out: Array | None = None) -> Array:
        a, b = pair
        if out is None:
            out = _empty(shape, dtype)
        _multiply(view_a(a), view_b(b), out=out, dtype=dtype, casting="unsafe")
        return out

    return multiply


def _split_batch(step: BatchStep, kernel: KernelFn) -> KernelFn:
    """The batch kernel in chunks along ``step.split`` (see :func:`chunked`)."""
    assert step.split is not None
    label, threads, shape, dtype = step.split.label, step.split.threads, step.shape, step.dtype
    out_axis = step.labels.index(label)
    if step.kernel is Kernel.LOOP:
        in_axes = [
            labels.index(label) if label in labels else -1
            for labels in (step.left.labels, step.right.labels)
        ]
        chunks = chunked(
            lambda a, b, out: kernel((a, b), out), in_axes, out_axis, threads, pieces=True
        )
        views: tuple[Callable[[Array], Array], ...] = (_same, _same)
    else:
        # the viewed operands line up with the output's axes (size 1 where they broadcast)
        chunks = chunked(
            lambda a, b, out: _multiply(a, b, out=out, dtype=dtype, casting="unsafe"),
            [out_axis, out_axis],
            out_axis,
            threads,
            pieces=True,
        )
        views = (
            _operand_view(step.left.shape, step.geometry.left) or _same,
            _operand_view(step.right.shape, step.geometry.right) or _same,
        )
    view_a, view_b = views

    def split(pair: Sequence[Array], out: Array | None = None) -> Array:
        a, b = pair
        if out is None:
            out = _empty(shape, dtype)
        chunks(view_a(a), view_b(b), out)
        return out

    return split
