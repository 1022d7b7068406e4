"""The plan report that ``Expression.explain()``, ``einsum_path`` and ``einstride explain``
print: the equation, FLOPs, the largest intermediate, and per step what it does, over which
labels and shapes, whether each operand was viewed or copied (and why), and the bytes it
allocates (exactly what the executor allocates)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...._compat import assert_never
from ...spec.equation import bind
from ...spec.walk import path_choice_of
from .delivery import Delivery, OutputCreation
from .peak import plan_peak
from .steps import (
    BatchStep,
    ContractStep,
    CopyStep,
    FusedStep,
    Kernel,
    Plan,
    ReduceStep,
    Spread,
    Step,
    ViewStep,
)

__all__ = ["format_plan", "spread_lines"]


def _bytes(n: int) -> str:
    return f"{n:,} B"


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class _Names:
    """Printable names of registers and label groups."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.regs: dict[int, str] = {i: f"operand {i}" for i in range(len(plan.spec.inputs))}

    def labels(self, labels: Sequence[int]) -> str:
        text = self.plan.spec.label_string(labels)
        return text if text else "-"

    def reg(self, reg: int) -> str:
        return self.regs.get(reg, f"register {reg}")


def format_plan(plan: Plan) -> str:
    """The full report of ``plan`` (see the module doc)."""
    names = _Names(plan)
    lines = _call_lines(plan)
    lines.append(f"  path: {list(plan.path)}")
    lines += _path_finder(plan)
    lines.append(f"  decisions: {_decided(plan)}")
    lines += _output_lines(plan, names)
    lines += spread_lines(plan)
    for k, step in enumerate(plan.steps):
        lines += _step_lines(k + 1, step, names)
        names.regs[step.dst] = f"step {k + 1}"
    if not plan.steps and plan.spread is None:
        lines.append(f"  (no steps: the result is a view of operand {plan.viewed_operand()})")
    return "\n".join(lines)


def _call_lines(plan: Plan) -> list[str]:
    """The report's head: the operands, the result, FLOPs and bytes."""
    spec = plan.call_spec
    lines = [f"einsum {spec.text!r}  (labels: {spec.describe()})"]
    for i, (shape, dtype, strides) in enumerate(zip(spec.shapes(), plan.dtypes, plan.call_strides)):
        lines.append(f"  operand {i}: {_shape(shape)} {dtype}, byte strides {_shape(strides)}")
    viewed = plan.viewed_operand() if plan.spread is None else None
    out_where = "new array"
    if plan.output.create is OutputCreation.OUT:
        out_where = "written into out="
    elif viewed is not None:
        out_where = f"a view of operand {viewed}"
    lines.append(
        f"  result:    {_shape(spec.output_shape)} {plan.result_dtype} ({out_where}); "
        f"computed in {plan.compute_dtype}"
    )
    lines.append(
        f"  naive FLOPs: {count_text(plan.naive_flops)}   optimized FLOPs: "
        f"{count_text(plan.flops)}   (speedup {_ratio_text(plan.naive_flops, plan.flops)})"
    )
    inter = plan.largest_intermediate()
    largest = "none"
    if inter is not None:
        where, buffer = inter
        largest = (
            f"{_bytes(buffer.nbytes)} ({buffer.what} {_shape(buffer.shape)} {buffer.dtype}, "
            f"{where})"
        )
    lines.append(f"  largest intermediate: {largest}")
    lines.append(
        f"  allocated in total: {_bytes(plan.allocated_bytes)}   "
        f"peak: {_bytes(plan_peak(plan))} (alive at once)"
    )
    return lines


def _output_lines(plan: Plan, names: _Names) -> list[str]:
    """How the output is made: allocated first (and laid out how), zeroed, expanded."""
    output, lines = plan.output, []
    if output.allocs:
        a = output.allocs[0]
        fill = "zeroed: output labels repeat" if output.create is OutputCreation.ZEROS else "empty"
        if output.order:  # (fold.write_order)
            axes = "".join(names.labels((output.labels[ax],)) for ax in output.order)
            fill += f", laid out as {axes} in memory: the last step reads its operand in runs"
        lines.append(
            f"  output: {_shape(a.shape)} {a.dtype} allocated first ({fill}); {_bytes(a.nbytes)}"
        )
    elif output.create is OutputCreation.OUT and output.expands:
        lines.append("  output: out= is zeroed first (output labels repeat)")
    if output.expands:
        lines.append(
            f"  diagonal-expand: the steps write through the strided diagonal view "
            f"{names.labels(tuple(dict.fromkeys(output.labels)))} of the "
            f"{names.labels(output.labels)} output"
        )
    return lines


def spread_lines(plan: Plan) -> list[str]:
    """What a :class:`~.steps.Spread` reads, leaves out and broadcasts."""
    spread = plan.spread
    if spread is None:
        return []
    lines = _dropped_lines(spread)
    full, alloc = spread.spec, spread.alloc
    if alloc is None:
        return lines
    labels = full.label_string(tuple(full.output[ax] for ax in spread.axes))
    read = "; ".join(
        f"operand {i} at index 0 of axes {list(axes)}"
        for i, axes in enumerate(spread.operand_axes)
        if axes
    )
    into = f"a new array ({_bytes(alloc.nbytes)})"
    if alloc.what != "output":
        into = f"out= (its first slice copied first, {_bytes(alloc.nbytes)})"
    return lines + [
        f"  spread: the result is the same along {labels} (every operand axis carrying it "
        f"is broadcast, a zero stride): the steps read {read} and compute a "
        f"{_shape(plan.spec.output_shape)} result, then broadcast into the "
        f"{_shape(full.output_shape)} output, {into}"
    ]


def _dropped_lines(spread: Spread) -> list[str]:
    """The operand axes a :class:`~.steps.Spread` leaves out (``plan.dropped_axes``)."""
    full, lines = spread.spec, []
    for i, gone in enumerate(spread.dropped):
        if not gone:
            continue
        term = full.inputs[i]
        summed = tuple(dict.fromkeys(term[ax] for ax in gone if term[ax] not in full.output))
        labels = full.label_string(summed)
        axes = [ax for ax in gone if term[ax] in summed]
        line = f"  dropped: operand {i} "
        if summed:
            line += (
                f"broadcasts the summed {'label' if len(summed) == 1 else 'labels'} {labels} "
                f"(zero strides): the steps read it at index 0 of axes {axes}, outside the "
                f"sum over {labels}"
            )
        if len(axes) < len(gone):
            rest = [ax for ax in gone if ax not in axes]
            line += f"{'; ' if summed else ''}its size-1 '...' axes {rest} are read at index 0"
        lines.append(line)
    return lines


def _step_lines(number: int, step: Step, names: _Names) -> list[str]:
    head = f"  step {number}: {step.kind}"
    allocated = sum(a.nbytes for a in step.allocs)
    tail = f"      allocates {_bytes(allocated)}" + (
        ""
        if not step.allocs
        else " (" + ", ".join(f"{a.what} {_shape(a.shape)} {a.dtype}" for a in step.allocs) + ")"
    )
    match step:
        case ViewStep():
            return [*_view_lines(head, step, names), tail]
        case ReduceStep():
            kernel = _REDUCE_KERNELS[step.kernel]
            return [
                f"{head}  {names.reg(step.src)}: sum over {names.labels(step.summed)} -> "
                f"{names.labels(step.labels)} {_shape(step.shape)} in {step.dtype} "
                f"({kernel}, over the view)",
                f"      {_write_words(step.delivery.mode)}",
                *_split_lines(step, names),
                tail,
            ]
        case CopyStep():
            return [
                f"{head}  {names.reg(step.src)} -> {names.labels(step.labels)} "
                f"{_shape(step.shape)} {step.dtype}",
                f"      why: {step.reason}",
                tail,
            ]
        case ContractStep():
            return _contract_lines(head, step, names, tail)
        case FusedStep():
            ins = ",".join(names.labels(t) for t in step.labels)
            return [
                f"{head}  all operands: {ins}->{names.labels(step.out_labels)} "
                f"{_shape(step.shape)} in {step.dtype}",
                "      one pass of NumPy's sum-of-products loop over the operands as they "
                f"are ({step.reason})",
                f"      {_write_words(step.delivery.mode)}",
                tail,
            ]
        case BatchStep():
            return _batch_lines(head, step, names, tail)
        case _:
            assert_never(step)


def _view_lines(head: str, step: ViewStep, names: _Names) -> list[str]:
    body = [
        f"{head}  {names.reg(step.src)}: {names.labels(step.labels_in)} -> "
        f"{names.labels(step.labels)} {_shape(step.shape)}"
    ]
    if step.squeeze:
        body.append(f"      view: size-1 '...' axes {list(step.squeeze)} broadcast (dropped)")
    if step.diagonals:
        body.append("      view: repeated labels become one axis whose stride is the sum")
    return body


def _write_words(mode: Delivery) -> str:
    match mode:
        case Delivery.NEW:
            return "into a new buffer"
        case Delivery.RETURN:
            return "into a new array: the result"
        case Delivery.INTO:
            return "written straight into the output"
        case Delivery.TEMP:
            return "into a temporary, then copied (cast) into the output"
        case _:
            assert_never(mode)


def _contract_lines(head: str, step: ContractStep, names: _Names, tail: str) -> list[str]:
    n, g, geo = names.labels, step.groups, step.geometry
    lines = [
        f"{head}  {names.reg(step.left.register)} x {names.reg(step.right.register)} -> "
        f"{n(step.labels)} {_shape(step.shape)}: one batched matmul (BLAS)",
        f"      batch {n(g.batch)} | contracted {n(g.contracted)} | left-free "
        f"{n(g.left_free)} | right-free {n(g.right_free)} | left-only "
        f"{n(g.left_only)} | right-only {n(g.right_only)}",
        *(
            [
                f"      looped {n(step.looped)}: do not fold, so matmul's batch loop runs over "
                "them"
                + (
                    " (contracted ones are summed by the next step)"
                    if set(step.looped) & set(g.contracted)
                    else ""
                )
            ]
            if step.looped
            else []
        ),
        f"      left  as {_shape(geo.left.shape)}: {step.left.note}",
        f"      right as {_shape(geo.right.shape)}: {step.right.note}",
        f"      out   as {_shape(geo.out_shape)}: {_out_words(step)}",
    ]
    return [*lines, tail]


def _out_words(step: ContractStep | BatchStep) -> str:
    return step.delivery.note or _write_words(step.delivery.mode)


def _batch_lines(head: str, step: BatchStep, names: _Names, tail: str) -> list[str]:
    n, g, geo = names.labels, step.groups, step.geometry
    return [
        f"{head}  {names.reg(step.left.register)} x {names.reg(step.right.register)} -> "
        f"{n(step.labels)} {_shape(step.shape)}: no contracted labels, "
        + (
            "one broadcast multiply"
            if step.kernel is Kernel.MULTIPLY
            else "NumPy's sum-of-products loop (an outer product)"
        ),
        f"      batch {n(g.batch)} | left-free {n(g.left_free)} | right-free "
        f"{n(g.right_free)} | left-only {n(g.left_only)} | right-only "
        f"{n(g.right_only)}",
        "      operands viewed"
        + (
            f" as {_shape(geo.left.shape)} and {_shape(geo.right.shape)}"
            if step.kernel is Kernel.MULTIPLY
            else " as they are"
        ),
        f"      out: {_out_words(step)}",
        *_split_lines(step, names),
        tail,
    ]


_REDUCE_KERNELS = {
    Kernel.LOOP: "NumPy's strided sum-of-products loop",
    Kernel.UFUNC: "numpy.add.reduce",
    Kernel.MATVEC: "a BLAS matrix-vector product, matrix @ ones, on BLAS's threads",
    Kernel.VECMAT: "a BLAS vector-matrix product, ones @ matrix, on BLAS's threads",
}


def count_text(n: int) -> str:
    """A count with thousands separators, or past 10**18 in powers of ten (a naive count of
    thousands of operands has more digits than a float holds, or ``str`` writes).

    >>> count_text(1234567), count_text(3 * 10**400), count_text(10**21 - 1)
    ('1,234,567', '3e+400', '1e+21')
    """
    return f"{n:,}" if n < 10**18 else _powers_of_ten(math.log10(n))


def _ratio_text(a: int, b: int) -> str:
    """``a / b`` as ``"12.5x"``, in powers of ten past a float's range (a review: the
    report's speedup raised OverflowError for 130 operands of 300).

    >>> _ratio_text(25, 2), _ratio_text(10**400, 4)
    ('12.5x', '2.5e+399x')
    """
    if not b:
        return "1x"
    try:
        return f"{a / b:.3g}x"
    except OverflowError:
        return f"{_powers_of_ten(math.log10(a) - math.log10(b))}x"


def _powers_of_ten(exponent: float) -> str:
    whole = math.floor(exponent)
    mantissa = float(f"{10 ** (exponent - whole):.3g}")
    if mantissa >= 10:  # (rounded up to the next power)
        mantissa, whole = mantissa / 10, whole + 1
    return f"{mantissa:g}e+{whole}"


def _split_lines(step: ReduceStep | BatchStep, names: _Names) -> list[str]:
    if step.split is None:
        return []
    return [
        f"      split over {step.split.threads} threads along "
        f"{names.labels((step.split.label,))} "
        "(memory-bound: each thread writes its own part of the output)"
    ]


def _decided(plan: Plan) -> str:
    """Which level of the plan cache decided: the shape class (reused or new) or none (of
    the steps' call where the plan reads broadcast axes once)."""
    text = _class_decided(plan)
    if plan.spread is not None:
        text += f", for the steps' call {plan.spec.text!r} (broadcast axes read once)"
    return text


def _class_decided(plan: Plan) -> str:
    if plan.decided_for is None:
        return (
            "made for these shapes (no shape class: an irregular layout, out=, or an "
            "optimize= that chooses its path at the real sizes)"
        )
    shapes = ", ".join(_shape(s) for s in plan.decided_for)
    how = (
        "reused from the shape-generic cache (decided when an earlier call, maybe of "
        "these very shapes, first planned the class)"
        if plan.reused
        else "decided when these shapes, the first of their class, were planned, and cached"
    )
    return f"of the shape class of {shapes} (half-octave sizes), {how}"


def _path_finder(plan: Plan) -> list[str]:
    """Which finder found the path: searched at the representative shapes for a plan
    decided for its shape class (where another ``optimize=`` may have found the same path
    at the real shapes: its choice is not this plan's), else at the real ones."""
    choice, at, form = None, "", plan.finder
    if form == "given":
        return []  # the caller's own path: no finder to name
    if plan.decided_for is not None:
        choice = path_choice_of(bind(plan.spec.equation, plan.decided_for), plan.path, form)
        if plan.decided_for != plan.spec.shapes():
            at = " (estimated at the representative shapes)"
    if choice is None:
        choice, at = path_choice_of(plan.spec, plan.path, form), ""
    if choice is None:
        return []
    if len(plan.spec.inputs) > 2 and any(isinstance(step, FusedStep) for step in plan.steps):
        # its estimate rates the path's pairs, which do not run (a review)
        at += "; the plan runs one loop over all the operands instead of its pairs (step 1)"
    return [f"  path finder: {choice.describe()}{at}"]
