"""A planned einsum on Dask arrays (:class:`DaskEinsum`) and its report: what
:func:`einstride.dask.explain` prints.

For each operand how it enters the graph and in which chunks, the chunk size of every
label, and per step the blocks, the bound on one task's memory, how summed labels are added
up and how many tasks the step adds.  Imports no Dask.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .plan import DaskPlan, DaskStep, partial_chunks, step_bytes

__all__ = ["DaskEinsum", "StepTasks", "chunks_text", "format_dask_plan", "format_size"]

Array = Any  # dask.array.Array (this module imports no Dask)


@dataclass(frozen=True)
class StepTasks:
    """The graph layers one step added: blockwise einsums (or expansions, casts) and tree
    sums.  Only their names are kept: counting a layer's tasks materializes it, which for a
    graph of millions of tasks costs far more than building it lazily, so the report counts
    them and planning does not."""

    blockwise_layers: tuple[str, ...]
    sum_layers: tuple[str, ...]
    split_every: int


@dataclass(frozen=True)
class DaskEinsum:
    """A planned einsum on Dask arrays: the plan, the chunk size of every label, the per-task
    memory budget, the lazy ``result`` and the tasks each step added."""

    plan: DaskPlan
    naive_flops: int
    flops: int
    budget: int
    budget_source: str
    chunks: dict[int, int]
    targets: dict[int, tuple[int, ...]]
    inputs: tuple[str, ...]
    steps: tuple[StepTasks, ...]
    result: Array

    @property
    def tasks(self) -> int:
        """Tasks in the graph (before Dask fuses blockwise chains; materializes the graph)."""
        return len(self.result.__dask_graph__())

    def layer_tasks(self, names: Sequence[str]) -> int:
        """Tasks in the named layers of the graph (materializes them)."""
        layers = self.result.__dask_graph__().layers
        return sum(len(layers[name]) for name in names)

    def explain(self) -> str:
        """The report: plan, chunking, memory per task and number of tasks."""
        return format_dask_plan(self)


def format_size(n: int) -> str:
    """Bytes in binary units.

    >>> format_size(200), format_size(8 * 2**20), format_size(int(1.5 * 2**30))
    ('200 B', '8.00 MiB', '1.50 GiB')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def chunks_text(chunks: Sequence[Sequence[int]]) -> str:
    """Chunks in short: ``(3, 3)`` -> ``3x2``; irregular ones listed.

    >>> chunks_text(((3, 3), (4, 4, 2), (5,)))
    '(3x2, 4x2+2, 5)'
    """
    parts = []
    for c in chunks:
        c = tuple(c)
        full = c[:-1] if len(c) > 1 and c[-1] < c[0] and len(set(c[:-1])) == 1 else c
        if len(set(full)) == 1:
            text = f"{full[0]}" + (f"x{len(full)}" if len(full) > 1 else "")
            parts.append(text + (f"+{c[-1]}" if full is not c else ""))
        else:
            parts.append(f"{len(c)} of <={max(c)}")
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def format_dask_plan(built: DaskEinsum) -> str:
    """The report of a planned Dask einsum (what ``explain`` prints)."""
    plan, spec = built.plan, built.plan.spec
    names = {i: f"operand {i}" for i in range(len(spec.inputs))}
    lines = [f"einsum {spec.text!r} on Dask  (labels: {spec.describe()})"]
    for i, (shape, dt) in enumerate(zip(spec.shapes(), plan.dtypes)):
        chunks = tuple(built.targets[lab] for lab in plan.operands[i])
        lines.append(
            f"  operand {i}: {_shape(shape)} {dt}; {built.inputs[i]}; chunks {chunks_text(chunks)}"
        )
    result = built.result
    lines.append(
        f"  result:    {_shape(result.shape)} {plan.result_dtype}, chunks "
        f"{chunks_text(result.chunks)}; computed in {plan.compute_dtype}"
    )
    lines.append(
        f"  naive FLOPs: {built.naive_flops:,}   optimized FLOPs: {built.flops:,}   "
        f"path: {list(plan.path)}"
    )
    lines.append(f"  task memory budget: {format_size(built.budget)} ({built.budget_source})")
    used = sorted({lab for term in plan.operands for lab in term})
    lines.append(
        "  chunks per label: "
        + (
            " | ".join(f"{spec.names[lab]} {_chunk_words(built.targets[lab])}" for lab in used)
            or "-"
        )
    )
    for k, (step, tasks) in enumerate(zip(plan.steps, built.steps)):
        lines += _step_lines(k + 1, step, tasks, built, names)
        names[step.dst] = f"step {k + 1}"
    if not plan.steps:
        lines.append("  (no steps: the result is operand 0)")
    # two identical steps build one layer (Dask names a layer by its inputs): count it once
    # (a review found a negative count)
    made = dict.fromkeys(name for t in built.steps for name in t.blockwise_layers + t.sum_layers)
    inputs = built.tasks - built.layer_tasks(tuple(made))
    lines.append(
        f"  tasks: {built.tasks:,} in the graph ({inputs:,} to load or rechunk the "
        "operands), before Dask fuses blockwise chains"
    )
    return "\n".join(lines)


def _chunk_words(chunks: tuple[int, ...]) -> str:
    count = len(chunks)
    return f"{max(chunks)} ({count} chunk{'s' if count != 1 else ''})"


def _step_lines(
    number: int, step: DaskStep, tasks: StepTasks, built: DaskEinsum, names: Mapping[int, str]
) -> list[str]:
    spec = built.plan.spec
    label = spec.label_string
    sizes = spec.sizes
    srcs = " x ".join(names[r] for r in step.srcs)
    shape = tuple(sizes[lab] for lab in step.labels)
    head = f"  step {number}: {step.kind}  {srcs} -> {label(step.labels) or '-'} {_shape(shape)}"
    blocks = " x ".join(
        f"{label(term) or '-'} {_shape(_block_shape(term, built.chunks, sizes))}"
        for term in step.inputs
    )
    out_block = _block_shape(step.labels, built.chunks, sizes)
    per_task = step_bytes(step, built.chunks, sizes, built.budget)
    lines = [
        head,
        f"      blocks {blocks} -> {_shape(out_block)}; at most {format_size(per_task)} per task",
    ]
    if step.summed:
        partial = partial_chunks(step, built.targets)
        where = (
            "within each block"
            if not partial
            else (
                f"{label(partial)} over several chunks: partial results added in a tree, "
                f"up to {tasks.split_every} per task"
            )
        )
        lines.append(f"      summed {label(step.summed)}: {where}")
    what = {"cast": "cast(s)", "expand": "expansion(s) (zeros off the diagonal blocks)"}.get(
        step.kind, "einstride einsum(s), one per block"
    )
    blockwise, sums = built.layer_tasks(tasks.blockwise_layers), built.layer_tasks(tasks.sum_layers)
    lines.append(f"      tasks: {blockwise:,} {what}" + (f" + {sums:,} sums" if sums else ""))
    return lines


def _block_shape(
    labels: Sequence[int], chunks: Mapping[int, int], sizes: Sequence[int]
) -> tuple[int, ...]:
    return tuple(min(chunks[lab], sizes[lab]) for lab in labels)
