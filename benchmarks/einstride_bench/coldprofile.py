"""Where a cold call's time goes: cProfile over calls that each see a new shape.

``python benchmarks/profile_cold.py`` (or :func:`profile_cold`) calls ``einstride.einsum``
on ``calls`` new shapes per equation (one label grows by one per call, so every call plans
afresh) under cProfile, and reports per call: the time of each phase of the cold path
(parse and bind, path search, planning, compiling; the rest of the call is the cache
lookups and the contraction) and the functions with the most time of their own.

>>> report = profile_cold(["ij,jk->ik"], calls=3)
>>> report.calls, sorted(report.phases) == sorted(PHASES)
(3, True)
>>> print(format_profile(report, top=2).splitlines()[0])
cold-call profile: 3 calls of ij,jk->ik (µs per call, under cProfile)
"""

from __future__ import annotations

import cProfile
import importlib
import pstats
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PHASES", "ColdProfile", "format_profile", "profile_cold", "shapes_for"]

# (phase, the function whose cumulative time it is: file name ending, function name)
PHASES = {
    "einsum (the whole call)": ("engine/api.py", "einsum"),
    "make_entry (the cache miss)": ("numpy/cache.py", "make_entry"),
    "  bind (the parse is cached)": ("spec/equation.py", "bind"),
    "  build_plan": ("numpy/plan.py", "build_plan"),
    "    plan_path (path search)": ("spec/walk.py", "plan_path"),
    "  compile_plan": ("numpy/execute.py", "compile_plan"),
}

_GROWING: dict[str, list[tuple[int, ...]]] = {
    "ij,jk->ik": [(8, 8), (8, 8)],
    "bij,bjk->bik": [(4, 8, 16), (4, 16, 16)],
}


@dataclass(frozen=True)
class ColdProfile:
    """Per call: each phase's cumulative µs, and (function, own µs, cumulative µs) rows."""

    equations: tuple[str, ...]
    calls: int
    phases: dict[str, float]
    functions: tuple[tuple[str, float, float], ...]


def shapes_for(equation: str, step: int) -> list[tuple[int, ...]]:
    """The operand shapes of call ``step``: the first operand's second-to-last axis grows
    (the rows of a matmul, the sequence of a batched one) from the equation's base shapes,
    or from 8 per label for other equations.

    >>> shapes_for("ij,jk->ik", 1), shapes_for("ab,bc,cd->ad", 2)
    ([(9, 8), (8, 8)], [(10, 8), (8, 8), (8, 8)])
    """
    terms = equation.split("->")[0].split(",")
    base: list[tuple[int, ...]] = _GROWING.get(equation) or [(8,) * len(t) for t in terms]
    grow = terms[0][-2] if len(terms[0]) > 1 else terms[0][0]
    size = dict(zip(terms[0], base[0]))[grow] + step
    return [
        tuple(size if label == grow else n for label, n in zip(term, shape))
        for term, shape in zip(terms, base)
    ]


def profile_cold(equations: Sequence[str], calls: int = 60) -> ColdProfile:
    """Profile ``calls`` new-shape calls of each equation (operands made beforehand)."""
    es: Any = importlib.import_module("einstride")
    rng = np.random.default_rng(0)
    work = [
        (eq, [rng.standard_normal(s) for s in shapes_for(eq, step)])
        for eq in equations
        for step in range(1, calls + 1)
    ]
    es.clear_plan_cache()
    for eq in equations:  # imports and the first parse happen outside the profile
        es.einsum(eq, *[rng.standard_normal(s) for s in shapes_for(eq, 0)])
    profiler = cProfile.Profile()
    profiler.enable()
    for eq, ops in work:
        es.einsum(eq, *ops)
    profiler.disable()
    return _summary(pstats.Stats(profiler), tuple(equations), calls)


def _summary(stats: pstats.Stats, equations: tuple[str, ...], calls: int) -> ColdProfile:
    per_call = 1e6 / (calls * len(equations))
    raw: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]
    phases = dict.fromkeys(PHASES, 0.0)
    rows = []
    for (filename, _, function), (_, _, own, cumulative, _) in raw.items():
        for phase, (ending, name) in PHASES.items():
            if filename.endswith(ending) and function == name:
                phases[phase] += cumulative * per_call
        where = "/".join(filename.split("/")[-2:])
        rows.append((f"{where}:{function}", own * per_call, cumulative * per_call))
    rows.sort(key=lambda row: -row[1])
    return ColdProfile(equations, calls, phases, tuple(rows))


def format_profile(report: ColdProfile, top: int = 25) -> str:
    """The phases and the ``top`` functions by time of their own, as text."""
    lines = [
        f"cold-call profile: {report.calls} calls of {', '.join(report.equations)} "
        "(µs per call, under cProfile)",
        "",
        "phase                              cumulative µs",
    ]
    lines += [f"  {phase:32s} {us:10.1f}" for phase, us in report.phases.items()]
    lines += ["", "function                                            own µs   cumulative µs"]
    lines += [
        f"  {name[:48]:48s} {own:8.1f} {cum:12.1f}" for name, own, cum in report.functions[:top]
    ]
    return "\n".join(lines)
