"""einsum on Dask arrays: a lazy ``dask.array.Array`` whose graph follows einstride's plan.

``einstride.einsum`` comes here when any operand is a ``dask.array.Array`` (NumPy operands
beside them are wrapped with ``da.from_array``).  The equation is parsed and planned by the
same code as the NumPy path (same errors, same contraction path); :mod:`.dask_plan` turns
the path into blockwise steps and picks one chunk size per label within a per-task memory
budget; here every step becomes a ``dask.array.blockwise`` call that runs einstride's own
NumPy einsum on each block, and the partial results of labels summed over several chunks
are added in a tree (``dask.array.reduction``).  Dask schedules it: threads, processes or
a ``dask.distributed`` cluster.  See docs/scaling.md.

>>> import numpy as np, dask.array as da
>>> a = da.ones((6, 4), chunks=3)
>>> b = np.ones((4, 5))
>>> c = einsum_dask("ij,jk->ik", a, b)
>>> type(c).__name__, c.shape, c.chunks
('Array', (6, 5), ((3, 3), (5,)))
>>> c.compute()[0, 0]
np.float64(4.0)
>>> print(explain("ij,jk->ik", a, b, memory_limit="1KiB").splitlines()[0])
einsum 'ij,jk->ik' on Dask  (labels: ij,jk->ik)
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.utils import parse_bytes

from ....errors import EinsumError, EinsumTypeError
from ....memory import check_listing
from ...call import EinsumCall, checked_memory_limit, is_shape, make_call
from ...spec.dtypes import check_casting, check_numeric, compute_dtype, result_dtype
from ...spec.equation import bind, quoted
from ...spec.walk import path_flops, plan_path
from ..numpy.backend import as_arrays, rounding_dtypes
from ..numpy.backend import einsum as numpy_einsum
from .plan import DaskPlan, DaskStep, choose_chunks, partial_chunks, plan_steps, split_every
from .report import DaskEinsum, StepTasks, chunks_text
from .sources import MemmapBlocks, from_npy, lazy_array, npy_source

__all__ = [
    "CONFIG_KEY",
    "DaskEinsum",
    "StepTasks",
    "einsum",
    "einsum_dask",
    "explain",
    "explain_call",
    "from_npy",
    "plan_call",
    "plan_dask",
    "task_memory_budget",
]

CONFIG_KEY = "einstride.task-memory"
"""The Dask config key of the default per-task memory budget (bytes or a string like
``"256MiB"``); unset, the budget is 4 x Dask's ``array.chunk-size``."""

Array = Any  # dask.array.Array (Dask's own annotations are partial)


# -- the budget and the operands ------------------------------------------------------------


def task_memory_budget(memory_limit: Any = None) -> int:
    """Bytes one task may hold: ``memory_limit`` (an int or a string like ``"64MiB"``), else
    the ``einstride.task-memory`` Dask config value, else 4 x ``array.chunk-size``.

    >>> task_memory_budget("64MiB"), task_memory_budget(1000)
    (67108864, 1000)
    >>> with dask.config.set({CONFIG_KEY: "1MiB"}):
    ...     task_memory_budget()
    1048576
    """
    what = "memory_limit"
    if memory_limit is None:
        memory_limit = dask.config.get(CONFIG_KEY, None)
        if memory_limit is None:
            return 4 * int(parse_bytes(dask.config.get("array.chunk-size")))
        what = f"the Dask config value {CONFIG_KEY!r}"  # its errors name it (a review)
    try:  # (einsum's own check: an array of 2.9 was int()ed to 2, a review)
        limit = checked_memory_limit(memory_limit)
    except (TypeError, ValueError) as exc:
        # (a task needs a byte: where einsum's check says ">= 0", this one says why 0 fails)
        message = str(exc).replace("memory_limit", what, 1)
        message = message.replace("must be >= 0 bytes", "must be at least one byte")
        raise type(exc)(message) from None
    assert limit is not None  # (None was handled above)
    return _positive(limit, memory_limit, what)


def _positive(value: int, given: Any, what: str) -> int:
    if value < 1:
        raise EinsumError(f"einsum: {what}={given!r} must be at least one byte")
    return value


def _operands(raw: Sequence[Any]) -> list[Any]:
    """Dask operands, ndarrays and memmaps as they are (a memmap is read in chunks); the
    others converted as the NumPy backend converts them (an ``np.matrix`` stays 2-D under
    indexing, so a broadcast ``...`` axis of it could not be dropped: a review)."""
    arrays: list[Any] = []
    for i, x in enumerate(raw):
        if isinstance(x, da.Array) and any(math.isnan(n) for n in x.shape):
            raise EinsumError(
                f"einsum: operand {i} is a Dask array of unknown shape {x.shape}; "
                "call its compute_chunk_sizes() first"
            )
        if isinstance(x, da.Array) or type(x) is np.ndarray or isinstance(x, np.memmap):
            arrays.append(x)
            continue
        try:
            arrays.append(as_arrays([x])[0][0])
        except TypeError as exc:
            raise EinsumTypeError(str(exc).replace("operand 0", f"operand {i}")) from None
    return arrays


def _squeeze(x: Any, stretched: Sequence[int]) -> Any:
    """Drop the size-1 ``...`` axes that broadcast (read at index 0, as the NumPy plan does)."""
    if not stretched:
        return x
    return x[tuple(0 if ax in stretched else slice(None) for ax in range(x.ndim))]


def _initial_chunks(plan: DaskPlan, arrays: Sequence[Any]) -> dict[int, int]:
    """Per label, the largest chunk of the cut every Dask operand's boundaries make (a start
    for the search; :func:`_targets` cuts the label there at least).  The largest chunk
    any one operand gives was taken before: a label one operand cuts in two and another
    holds whole was charged as one chunk, so its partial sums were not (a review found a
    task holding twice the memory budget)."""
    return {lab: max(_refine(given)) for lab, given in _chunkings(plan, arrays).items()}


def _chunkings(plan: DaskPlan, arrays: Sequence[Any]) -> dict[int, list[tuple[int, ...]]]:
    """Per label, the chunks every Dask operand that carries it cuts it into."""
    seen: dict[int, list[tuple[int, ...]]] = {}
    for x, labels in zip(arrays, plan.operands):
        if isinstance(x, da.Array):
            for lab, given in zip(labels, x.chunks):
                seen.setdefault(lab, []).append(tuple(int(n) for n in given))
    return seen


def _regular(size: int, chunk: int) -> tuple[int, ...]:
    """``size`` in chunks of ``chunk`` (the last one shorter); a size-0 axis is ``(0,)``.

    >>> _regular(10, 4), _regular(0, 3)
    ((4, 4, 2), (0,))
    """
    if size == 0:
        return (0,)
    return (chunk,) * (size // chunk) + ((size % chunk,) if size % chunk else ())


def _targets(
    plan: DaskPlan, arrays: Sequence[Any], chunks: Mapping[int, int]
) -> dict[int, tuple[int, ...]]:
    """The chunks of every label, cut alike in every array that carries it: the Dask
    operands' chunk boundaries (all of them), each chunk split into pieces of at most the
    chosen size; a label no Dask operand carries is cut regularly.  Rechunking to these
    only splits chunks (and realigns operands that disagree)."""
    seen = _chunkings(plan, arrays)
    sizes = plan.spec.sizes
    return {
        lab: _split(_refine(seen[lab]), chunks[lab])
        if lab in seen
        else _regular(sizes[lab], chunks[lab])
        for lab in range(len(sizes))
    }


def _refine(tuples: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The chunks whose boundaries are all the given chunkings' boundaries.

    >>> _refine([(4, 2), (2, 4)]), _refine([(0,)])
    ((2, 2, 2), (0,))
    """
    ends = sorted({end for t in tuples for end in itertools.accumulate(t)} - {0})
    return tuple(b - a for a, b in zip([0, *ends], ends)) or (0,)


def _split(chunks: Sequence[int], most: int) -> tuple[int, ...]:
    """Every chunk split into near-equal pieces of at most ``most``.

    >>> _split((7, 3), 4)
    (4, 3, 3)
    """
    pieces: list[int] = []
    for n in chunks:
        parts = _parts(n, most)
        base, extra = divmod(n, parts)
        pieces += [base + 1] * extra + [base] * (parts - extra)
    return tuple(pieces)


def _wrap(
    x: Any, labels: Sequence[int], targets: Mapping[int, tuple[int, ...]]
) -> tuple[Array, str]:
    """An operand as a Dask array in the target chunks, and how it got there."""
    want = tuple(targets[lab] for lab in labels)
    if isinstance(x, np.memmap):
        # a random name: Dask would hash the whole file to name it
        return lazy_array(MemmapBlocks(x), want, name=False), "NumPy memmap, read block by block"
    if not isinstance(x, da.Array):
        return da.from_array(x, chunks=want), "NumPy, wrapped with da.from_array"
    source = npy_source(x)
    if source is not None and x.chunks != want:
        # read the file in the target chunks: rechunking would share each read block
        # between tasks, and Dask would then hold many partial products at once
        return lazy_array(source, want), f"from_npy, read in chunks (was {chunks_text(x.chunks)})"
    if x.chunks == want:
        return x, "Dask, chunks kept"
    return x.rechunk(want), f"Dask, rechunked from {chunks_text(x.chunks)}"


# -- the block kernels (module level: workers import them by name) ---------------------------


def _unwrap(block: Any) -> Any:
    # a summed label that lies in one chunk: blockwise hands the block in a list of one
    while isinstance(block, list):
        block = block[0]
    return block


def _block_einsum(
    *blocks: Any,
    terms: Sequence[Sequence[int]],
    labels: Sequence[int],
    extra: int,
    kernel_dtype: Any,
) -> Any:
    """einstride's NumPy einsum on one set of blocks; ``extra`` size-1 axes are appended
    for the summed labels whose other chunks are added later."""
    args: list[Any] = []
    for block, term in zip(blocks, terms):
        args += [_unwrap(block), list(term)]
    value = np.asarray(numpy_einsum(make_call(*args, list(labels), dtype=kernel_dtype)))
    return value.reshape(value.shape + (1,) * extra) if extra else value


def _block_expand(
    block: Any,
    *,
    axes_of: Sequence[Sequence[int]],
    term: Sequence[int],
    labels: Sequence[int],
    kernel_dtype: Any,
    block_id: Any = None,
    block_info: Any = None,
) -> Any:
    """One block of a diagonal expansion: einstride's strided diagonal write on the diagonal
    blocks, zeros elsewhere."""
    if any(len({block_id[ax] for ax in axes}) > 1 for axes in axes_of):
        return np.zeros(block_info[None]["chunk-shape"], kernel_dtype)
    return np.asarray(numpy_einsum(make_call(block, list(term), list(labels), dtype=kernel_dtype)))


def _keep(block: Any, axis: Any = None, keepdims: Any = None, computing_meta: bool = False) -> Any:
    return block


def _flatten(blocks: Any) -> list[Any]:
    if isinstance(blocks, list):
        return [b for part in blocks for b in _flatten(part)]
    return [blocks]


def _add_partials(
    blocks: Any,
    axis: Any = None,
    keepdims: bool = False,
    computing_meta: bool = False,
    sum_dtype: Any = None,
) -> Any:
    """Add partial results one by one (no concatenation: one accumulator besides them)."""
    parts = _flatten(blocks)
    total = parts[0] if len(parts) == 1 else np.add(parts[0], parts[1], dtype=sum_dtype)
    for part in parts[2:]:
        np.add(total, part, out=total, dtype=sum_dtype)
    return total if keepdims else np.squeeze(total, axis=axis)


# -- the graph --------------------------------------------------------------------------------


def _layers(x: Array) -> set[str]:
    return set(x.__dask_graph__().layers)


def _new_layers(x: Array, known: set[str]) -> tuple[str, ...]:
    """The names of the layers of ``x``'s graph not in ``known`` (nothing materialized)."""
    return tuple(sorted(_layers(x) - known))


def _run_step(
    step: DaskStep,
    srcs: Sequence[Array],
    plan: DaskPlan,
    chunks: Mapping[int, int],
    targets: Mapping[int, tuple[int, ...]],
    budget: int,
) -> tuple[Array, StepTasks]:
    known = set().union(*(_layers(x) for x in srcs))
    if step.kind == "cast":
        x = srcs[0].astype(step.dtype)
        return x, StepTasks(_new_layers(x, known), (), 0)
    if step.kind == "expand":
        x = _expand(step, srcs[0], targets)
        return x, StepTasks(_new_layers(x, known), (), 0)
    sizes = plan.spec.sizes
    partial = partial_chunks(step, targets)
    index = step.labels + partial
    args: list[Any] = []
    for x, term in zip(srcs, step.inputs):
        args += [x, term]
    y = da.blockwise(
        _block_einsum,
        index,
        *args,
        dtype=step.dtype,
        meta=np.empty((0,) * len(index), step.dtype),
        adjust_chunks=dict.fromkeys(partial, 1),
        token=f"einstride-{step.kind}",
        terms=step.inputs,
        labels=step.labels,
        extra=len(partial),
        kernel_dtype=step.kernel_dtype,
    )
    products = _new_layers(y, known)
    out_bytes = math.prod(min(chunks[lab], sizes[lab]) for lab in step.labels) * step.dtype.itemsize
    split = split_every(out_bytes, budget)
    x = y
    for axis in reversed(range(len(step.labels), len(index))):
        x = _sum_axis(x, axis, split, step.dtype)
    sums = _new_layers(x, known | set(products))
    return x, StepTasks(products, sums, split if partial else 0)


def _sum_axis(x: Array, axis: int, split: int, dtype: np.dtype[Any]) -> Array:
    """Add the partial results along ``axis`` in a tree of ``split`` blocks per task."""
    add = _partial_fn(dtype)
    return da.reduction(
        x,
        _keep,
        add,
        axis=axis,
        keepdims=False,
        dtype=dtype,
        split_every={axis: split},
        combine=add,
        concatenate=False,
        meta=np.empty((0,) * (x.ndim - 1), dtype),
        name="einstride-sum",
    )


def _partial_fn(dtype: np.dtype[Any]) -> Any:
    return functools.partial(_add_partials, sum_dtype=dtype)


def _expand(step: DaskStep, x: Array, targets: Mapping[int, tuple[int, ...]]) -> Array:
    """Repeated output labels: map the distinct-label array onto the full output's blocks."""
    out = step.labels
    term = step.inputs[0]
    new_axis = [ax for ax, lab in enumerate(out) if lab in out[:ax]]
    axes_of = tuple(tuple(ax for ax, lab in enumerate(out) if lab == u) for u in term)
    return da.map_blocks(
        _block_expand,
        x,
        chunks=tuple(targets[lab] for lab in out),
        new_axis=new_axis,
        dtype=step.dtype,
        meta=np.empty((0,) * len(out), step.dtype),
        token="einstride-expand",
        axes_of=axes_of,
        term=term,
        labels=out,
        kernel_dtype=step.dtype,
    )


# -- the entry points -------------------------------------------------------------------------


def _budget_source(memory_limit: Any) -> str:
    if memory_limit is not None:
        return "memory_limit="
    if dask.config.get(CONFIG_KEY, None) is not None:
        return f"Dask config {CONFIG_KEY!r}"
    return "default: 4 x Dask's array.chunk-size"


def plan_dask(
    subscripts: Any,
    operands: Sequence[Any],
    *,
    dtype: Any = None,
    optimize: Any = "auto",
    memory_limit: Any = None,
) -> DaskEinsum:
    """Plan and build the lazy graph of an einsum (string form) over Dask (and NumPy)
    operands."""
    check_listing(operands, "plan_dask operands")  # (a huge view took 37 s to list: a review)
    return plan_call(
        make_call(subscripts, *operands, dtype=dtype, optimize=optimize, memory_limit=memory_limit)
    )


def plan_call(call: EinsumCall) -> DaskEinsum:
    """:func:`plan_dask` for a normalized call."""
    arrays = _operands(call.operands)
    # rounded to a small-float dtype= as the graph reads each block (a review: a memmap was
    # read and cast whole while the graph was built, an ndarray copied)
    casts = rounding_dtypes(arrays, call.dtype, call.casting)
    shapes = [tuple(int(n) for n in x.shape) for x in arrays]
    dtypes = [np.dtype(x.dtype) if to is None else to for x, to in zip(arrays, casts)]
    spec = bind(call.equation(), shapes)
    for i, d in enumerate(dtypes):
        check_numeric(d, f"operand {i} has dtype")
    rt = result_dtype(dtypes, call.dtype)
    if call.casting is not None:  # NumPy's rule, as every backend's (a review: ignored)
        check_casting(dtypes, rt, call.casting)
    path = plan_path(spec, call.optimize)
    plan = plan_steps(spec, path, dtypes, rt, compute_dtype(rt))
    budget = task_memory_budget(call.memory_limit)
    squeezed = [_squeeze(x, st) for x, st in zip(arrays, spec.stretched)]
    chunks = choose_chunks(plan, _initial_chunks(plan, squeezed), budget)
    _check_blocks(plan, _chunk_counts(plan, squeezed, chunks), budget)
    targets = _targets(plan, squeezed, chunks)
    regs: dict[int, Array] = {}
    notes = []
    for i, x in enumerate(squeezed):
        regs[i], note = _wrap(x, plan.operands[i], targets)
        if casts[i] is not None:
            regs[i], note = regs[i].astype(casts[i]), f"{note}, rounded to {casts[i]} per block"
        notes.append(note)
    tasks = []
    for step in plan.steps:
        regs[step.dst], counted = _run_step(
            step, [regs[r] for r in step.srcs], plan, chunks, targets, budget
        )
        tasks.append(counted)
    return DaskEinsum(
        plan,
        path_flops(spec, path, naive=True),
        path_flops(spec, path),
        budget,
        _budget_source(call.memory_limit),
        chunks,
        targets,
        tuple(notes),
        tuple(tasks),
        regs[plan.result],
    )


MAX_STEP_BLOCKS = 10**6
"""The most blocks a step's result may have: a graph of millions of tasks takes minutes to
build and more to schedule (measured: an ``i->iii`` of 3 * 10**4 elements, 128**3 blocks,
69 s to build; of 10**5 it did not finish in 200 s: a review), so such a call fails fast."""


def _chunk_counts(
    plan: DaskPlan, arrays: Sequence[Any], chunks: Mapping[int, int]
) -> dict[int, int]:
    """How many chunks :func:`_targets` cuts each label into, counted from sizes before any
    tuple of them is built (a label of 10**9 elements in chunks of a few filled memory
    there first: a review).

    >>> from .plan import plan_steps
    >>> from ...spec.equation import bind, parse_subscripts
    >>> f8 = np.dtype("f8")
    >>> plan = plan_steps(bind(parse_subscripts("i->"), [(10,)]), ((0,),), (f8,), f8, f8)
    >>> _chunk_counts(plan, [np.ones(10)], {0: 4})
    {0: 3}
    """
    seen = _chunkings(plan, arrays)
    counts = {}
    for lab, size in enumerate(plan.spec.sizes):
        most = chunks[lab]
        given = _refine(seen[lab]) if lab in seen else (size,)
        counts[lab] = sum(_parts(n, most) for n in given)
    return counts


def _parts(n: int, most: int) -> int:
    """The pieces :func:`_split` cuts a chunk of ``n`` into (one for an empty chunk)."""
    return max(1, -(-n // most))


def _check_blocks(plan: DaskPlan, counts: Mapping[int, int], budget: int) -> None:
    """An :class:`EinsumError` for a step that would make more than :data:`MAX_STEP_BLOCKS`
    blocks at the chunk sizes the task memory budget allows (``counts``: each label's
    chunks): its blockwise tasks, one per block of its result and of every summed label
    it cuts (the partial sums; their summation tree adds fewer; a full reduction of one
    result block was not refused: a review)."""
    for k, step in enumerate(plan.steps):
        partial = [lab for lab in step.summed if counts[lab] > 1]
        blocks = math.prod(counts[lab] for lab in (*step.labels, *partial))
        if blocks > MAX_STEP_BLOCKS:
            raise EinsumError(
                f"einsum {quoted(plan.spec.text)}: step {k + 1} ({step.kind}) would make "
                f"{blocks:,} blocks (tasks) within the task memory budget of {budget:,} "
                f"bytes, more than Dask can schedule ({MAX_STEP_BLOCKS:,}); a larger "
                "memory_limit= (the budget per task) makes fewer, larger blocks"
            )


def einsum(call: EinsumCall) -> Array:
    """``einstride.einsum`` when an operand is a Dask array: a lazy ``dask.array.Array``.

    ``memory_limit`` is the per-task memory budget here (default: :func:`task_memory_budget`).
    ``out=`` is not supported: the result is lazy; write it with ``dask.array.store``.
    ``order=`` does not apply (a lazy array has no layout; ``compute()`` assembles the
    blocks as Dask does, docs/scaling.md).
    """
    _refuse_out(call)
    return plan_call(call).result


def _refuse_out(call: EinsumCall) -> None:
    if call.out is not None:
        raise EinsumTypeError(
            "einsum: out= is not supported with Dask operands (the result is a "
            "lazy dask array); write it with dask.array.store(result, target)"
        )


def explain_call(call: EinsumCall) -> str:
    """The report of ``call`` on Dask (the registry's ``explain``; ``out=`` refused, as
    einsum refuses it)."""
    _refuse_out(call)
    return plan_call(call).explain()


def einsum_path(call: EinsumCall) -> tuple[list[tuple[int, ...]], str]:
    """The path the Dask graph runs and its report (the registry's ``einsum_path``)."""
    planned = plan_call(call)
    return [tuple(entry) for entry in planned.plan.path], planned.explain()


def einsum_dask(
    subscripts: Any,
    *operands: Any,
    dtype: Any = None,
    optimize: Any = "auto",
    memory_limit: Any = None,
) -> Array:
    """:func:`einsum` from ``einstride.einsum``'s arguments (string or sublist form).

    >>> import dask.array as da
    >>> einsum_dask(da.ones((2, 3)), [0, 1], [1]).compute()
    array([2., 2., 2.])
    """
    return einsum(
        make_call(subscripts, *operands, dtype=dtype, optimize=optimize, memory_limit=memory_limit)
    )


def explain(
    subscripts: Any,
    *operands: Any,
    dtype: Any = None,
    optimize: Any = "auto",
    memory_limit: Any = None,
) -> str:
    """The report of ``einstride.einsum(subscripts, *operands)`` on Dask: the steps, the
    chunk size of every label, the memory bound per task and the number of tasks.  It takes
    operands, not shapes (``einstride.explain`` does: a tuple of ints, which this report
    took for a vector, is refused, a review)."""
    call = make_call(
        subscripts, *operands, dtype=dtype, optimize=optimize, memory_limit=memory_limit
    )
    for i, x in enumerate(call.operands):
        if is_shape(x):
            raise EinsumTypeError(
                f"einstride.dask.explain takes operands, not shapes: operand {i} is the tuple "
                f"{x!r} (einstride.explain takes shapes; an array of these values is "
                "np.array(...))"
            )
    return explain_call(call)
