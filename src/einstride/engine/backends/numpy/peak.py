"""The peak of a plan: the most bytes its allocations hold at one time.

A plan knows every buffer it allocates (:meth:`~.steps.Plan.allocations`) and, per step, the
registers whose last reader that step is (:attr:`~.steps.Plan.frees`).  Walking the steps
in order gives the bytes alive at each moment:

* the output the plan allocates before the steps (``zeros``/``empty``) lives throughout;
* a step's buffer (an intermediate, an operand copy, a result that is returned) lives from
  its step until the step that reads it last has run (a returned result: to the end);
* a *temporary* (computed in another dtype or layout, then copied into the destination)
  lives during its own step only;
* a user's ``out=`` and the operands are not allocations.

That is what ``tracemalloc`` sees while the compiled plan runs, up to NumPy's own scratch
space inside one ufunc or loop call (its iterator buffers: a few kilobytes) and the small
Python objects of the call.

>>> import numpy as np
>>> from ...spec.equation import parse_equation
>>> from .plan import build_plan
>>> spec = parse_equation("ij,jk,kl->il", (10, 1000), (1000, 1000), (1000, 10))
>>> plan = build_plan(spec, (np.dtype(float),) * 3, ((8000, 8), (8000, 8), (80, 8)),
...                   optimize=[(0, 1), (0, 1)])
>>> [(name, a.what, a.nbytes) for name, a in plan.allocations()]
[('output', 'output', 800), ('step 1 (contract)', 'intermediate', 80000)]
>>> plan_peak(plan)                  # both alive while the last step writes the output
80800
"""

from __future__ import annotations

from collections.abc import Sequence

from .steps import Plan

__all__ = ["TEMPORARY", "plan_peak"]

TEMPORARY = "temporary"
"""What an allocation that lives during its own step only holds (``Alloc.what``)."""


def plan_peak(plan: Plan, sizes: Sequence[int] | None = None) -> int:
    """The most bytes ``plan``'s allocations hold at once while it runs (see the module doc),
    or would hold with other label ``sizes`` (the plan's steps for another shape)."""
    # (loops, not sums of generators: a new shape of a known class works out its peak on
    # every first call, where this took 8 µs for two steps; now 3.5)
    live = 0
    for alloc in plan.output.allocs:
        live += alloc.nbytes_at(sizes)
    peak = live
    held: dict[int, int] = {}
    frees = plan.frees if len(plan.frees) == len(plan.steps) else ((),) * len(plan.steps)
    for step, freed in zip(plan.steps, frees):
        kept = temporary = 0
        for alloc in step.allocs:
            if alloc.what == TEMPORARY:
                temporary += alloc.nbytes_at(sizes)
            else:
                kept += alloc.nbytes_at(sizes)
        if live + kept + temporary > peak:
            peak = live + kept + temporary
        if kept:
            held[step.dst] = held.get(step.dst, 0) + kept
            live += kept
        for reg in freed:
            live -= held.pop(reg, 0)
    if plan.spread is not None and plan.spread.alloc is not None:
        # the full output (or out='s first slice copied), made while the steps' result is
        # alive (added to the steps' peak, whose temporaries are freed by then: a bound)
        peak += plan.spread.alloc.nbytes_at(sizes)
    return peak
