"""The memory section (``benchmarks/run.py --memory``): how much memory each einsum takes at
its peak, and what fitting into an eighth of it costs einstride.

Per case: the peak bytes ``tracemalloc`` sees during one call (after two; the operands
are not counted) of the subject's ``einsum``, ``numpy.einsum(optimize=True)`` and
``opt_einsum.contract``; then the subject's time without a limit and with ``memory_limit``
at 1/8 of its own peak (einstride slices the call), timed interleaved, and the peak of the
sliced call.  Every result is checked against NumPy first.  The target: the sliced call
within 2x of the unsliced one on ``ab,cbe,ae->ac`` (cupy#4834's contraction).

>>> from einstride_bench.contenders import stand_in
>>> from einstride_bench.timing import Budget
>>> brief = Budget(seconds=0.02, min_sample=1e-4, turn=1e-3, min_turns=1, max_rounds=5)
>>> case = MemoryCase(name="tiny", equation="ij,jk->ik", full=((30, 20), (20, 30)),
...                   quick=((30, 20), (20, 30)))
>>> row = run_memory_case(case, stand_in(), brief, quick=True)
>>> row.peaks[NUMPY_OPT] >= 30 * 30 * 8, row.sliced is None   # the stand-in has no limit
(True, True)
>>> "| tiny |" in render_memory([row], "quick")
True
"""

from __future__ import annotations

import importlib
import re
import sys
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from .case import Operands, Thunk
from .check import mismatch, oracle
from .contenders import NAIVE_LIMIT, NUMPY_OPT, OPT_EINSUM, Engine, naive_size, opt_einsum
from .report import fmt_seconds
from .timing import Budget, Timing, interleave

__all__ = [
    "MemoryCase",
    "MemoryRow",
    "memory_cases",
    "render_memory",
    "run_memory",
    "run_memory_case",
    "traced_peak",
]

Shape = tuple[int, ...]
SHARE = 8  # the sliced call's limit: 1/SHARE of the unsliced peak


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryCase:
    """An equation, its operand shapes (full and quick), the path every contender takes
    (``None``: each its own) and the most the sliced call may take over the unsliced one."""

    name: str
    equation: str
    full: tuple[Shape, ...]
    quick: tuple[Shape, ...]
    path: tuple[tuple[int, ...], ...] | None = None
    target: float | None = None

    def operands(self, quick: bool) -> Operands:
        rng = np.random.default_rng(0)
        return tuple(rng.standard_normal(s) for s in (self.quick if quick else self.full))


def memory_cases() -> list[MemoryCase]:
    """The cases of issue 13: contractions whose best plan holds an intermediate many times
    larger than the operands and the result."""
    return [
        MemoryCase(
            name="cupy#4834",
            equation="ab,cbe,ae->ac",
            full=((400, 200), (300, 200, 240), (400, 240)),
            quick=((200, 100), (150, 100, 120), (200, 120)),
            target=2.0,
        ),
        MemoryCase(
            name="tetrahedron",
            equation="abc,ade,bdf,cef->",
            full=((40, 40, 40),) * 4,
            quick=((24, 24, 24),) * 4,
        ),
        MemoryCase(
            name="batched",
            equation="zab,zcbe,zae->zac",
            full=((8, 200, 100), (8, 150, 100, 120), (8, 200, 120)),
            quick=((4, 100, 60), (4, 80, 60, 70), (4, 100, 70)),
        ),
        MemoryCase(
            name="outer, then reduce",
            equation="i,j,ij->",
            full=((4000,), (4000,), (4000, 4000)),
            quick=((2000,), (2000,), (2000, 2000)),
            path=((0, 1), (0, 1)),
        ),
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRow:
    """One case's measurements: peak bytes per contender (None: did not run, see
    ``notes``), the limit of the sliced call, its slices, peak and both timings."""

    case: MemoryCase
    shapes: str
    peaks: dict[str, int | None]
    notes: dict[str, str]
    limit: int | None = None
    slices: str = ""
    sliced_peak: int | None = None
    unsliced: Timing | None = None
    sliced: Timing | None = None

    @property
    def ratio(self) -> float | None:
        """The sliced call's time over the unsliced one's."""
        if self.sliced is None or self.unsliced is None:
            return None
        return self.sliced.median / self.unsliced.median

    @property
    def status(self) -> str:
        if self.case.target is None or self.ratio is None:
            return ""
        return "PASS" if self.ratio <= self.case.target else "MISS"


def traced_peak(call: Thunk) -> tuple[object, int]:
    """``call()``'s result and the most bytes tracemalloc saw allocated during it."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        value = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, peak


def _numpy_thunk(case: MemoryCase, ops: Operands) -> Thunk:
    if case.path is not None:
        path: Any = ["einsum_path", *case.path]
        return lambda: np.einsum(case.equation, *ops, optimize=path)
    found, _ = np.einsum_path(case.equation, *ops, optimize=True)
    if any(len(step) > 2 for step in found[1:]) and naive_size(case.equation, ops) > NAIVE_LIMIT:
        raise ValueError(
            "its path keeps intermediates no larger than the largest operand: one "
            f"loop of {naive_size(case.equation, ops):.2g} iterations"
        )
    return lambda: np.einsum(case.equation, *ops, optimize=True)


def _thunks(case: MemoryCase, engine: Engine, ops: Operands) -> dict[str, Thunk | str]:
    """Each contender's call, or why it sits out."""
    optimize: Any = "auto" if case.path is None else list(case.path)
    found: dict[str, Thunk | str] = {
        engine.name: lambda: engine.einsum(case.equation, *ops, optimize=optimize)
    }
    try:
        found[NUMPY_OPT] = _numpy_thunk(case, ops)
    except ValueError as exc:
        found[NUMPY_OPT] = f"skipped: {exc}"
    found[OPT_EINSUM] = lambda: opt_einsum.contract(case.equation, *ops, optimize=optimize)
    return found


def _measure(thunk: Thunk, expected: Any, dtype: np.dtype[Any]) -> tuple[int | None, str]:
    try:
        for _ in range(2):  # (einstride runs a shape class's first call directly, and the
            thunk()  # call that builds the plan may too: the third is the plan's)
        value, peak = traced_peak(thunk)
        problem = mismatch(value, expected, dtype)
    except Exception as exc:  # a failing contender is reported, never fatal
        return None, f"error: {type(exc).__name__}: {exc}"
    return (peak, "") if problem is None else (None, f"wrong: {problem}")


def _slices(engine: Engine, case: MemoryCase, ops: Operands, limit: int) -> str:
    """The number of slices einstride's report gives (empty for another engine)."""
    explain = getattr(importlib.import_module("einstride"), "explain", None)
    if engine.stand_in or explain is None:
        return ""
    optimize: Any = "auto" if case.path is None else list(case.path)
    report = explain(case.equation, *ops, optimize=optimize, memory_limit=limit)
    found = re.search(r"slices: (\d+(?:,\d{3})*)", report)
    return found.group(1) if found else "1"


def run_memory_case(case: MemoryCase, engine: Engine, budget: Budget, quick: bool) -> MemoryRow:
    """Measure one case (see the module doc)."""
    ops = case.operands(quick)
    expected, dtype = oracle(case.equation, ops), np.result_type(*ops)
    peaks: dict[str, int | None] = {}
    notes: dict[str, str] = {}
    thunks = _thunks(case, engine, ops)
    for name, thunk in thunks.items():
        if isinstance(thunk, str):
            peaks[name], notes[name] = None, thunk
            continue
        peaks[name], problem = _measure(thunk, expected, dtype)
        if problem:
            notes[name] = problem
    shapes = ", ".join("x".join(map(str, op.shape)) for op in ops)
    free, subject = peaks[engine.name], thunks[engine.name]
    if engine.stand_in or free is None or isinstance(subject, str):
        return MemoryRow(case=case, shapes=shapes, peaks=peaks, notes=notes)
    limit = free // SHARE
    optimize: Any = "auto" if case.path is None else list(case.path)

    def limited() -> object:
        return engine.einsum(case.equation, *ops, optimize=optimize, memory_limit=limit)

    sliced_peak, problem = _measure(limited, expected, dtype)
    if problem:
        notes[f"{engine.name} within {limit:,} B"] = problem
        return MemoryRow(case=case, shapes=shapes, peaks=peaks, notes=notes, limit=limit)
    timings = interleave({"unsliced": subject, "sliced": limited}, budget)
    return MemoryRow(
        case=case,
        shapes=shapes,
        peaks=peaks,
        notes=notes,
        limit=limit,
        slices=_slices(engine, case, ops, limit),
        sliced_peak=sliced_peak,
        unsliced=timings.get("unsliced"),
        sliced=timings.get("sliced"),
    )


def run_memory(
    cases: Sequence[MemoryCase],
    engine: Engine,
    budget: Budget,
    quick: bool,
    progress: TextIO | None = None,
) -> list[MemoryRow]:
    """Every case in turn, reporting progress on ``progress`` (default stderr)."""
    out = sys.stderr if progress is None else progress
    rows = []
    for number, case in enumerate(cases, 1):
        print(
            f"[{number:2d}/{len(cases)}] memory: {case.name} ({case.equation}) ...",
            file=out,
            flush=True,
        )
        rows.append(run_memory_case(case, engine, budget, quick))
    return rows


def _mib(n: int | None) -> str:
    return "—" if n is None else f"{n / 2**20:.2f} MiB"


def render_memory(rows: Sequence[MemoryRow], mode: str) -> str:
    """The markdown of the memory section."""
    if not rows:
        return "## Memory\n\nNo case ran.\n"
    subject = next(iter(rows[0].peaks))
    peers = [name for name in rows[0].peaks if name != subject]
    head = [
        "case",
        "equation",
        "shapes",
        f"{subject} peak",
        *(f"{p} peak" for p in peers),
        "limit (1/8)",
        "slices",
        "sliced peak",
        "unsliced",
        "sliced",
        "ratio",
        "target",
    ]
    lines = [
        "## Memory",
        "",
        f"Peak bytes seen by tracemalloc during one call ({mode} sizes; operands not counted), "
        f"and {subject}'s time with `memory_limit` at 1/{SHARE} of its own peak (sliced) "
        "against without.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    notes: list[str] = []
    for row in rows:
        cells = [
            row.case.name,
            f"`{row.case.equation}`",
            row.shapes,
            *(_mib(row.peaks.get(name)) for name in [subject, *peers]),
            _mib(row.limit),
            row.slices or "—",
            _mib(row.sliced_peak),
            fmt_seconds(row.unsliced.median) if row.unsliced else "—",
            fmt_seconds(row.sliced.median) if row.sliced else "—",
            f"{row.ratio:.2f}x" if row.ratio is not None else "—",
            (f"<= {row.case.target:g}x: **{row.status}**" if row.status else ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
        notes += [f"- {row.case.name}, {name}: {text}" for name, text in row.notes.items()]
    return "\n".join([*lines, "", *notes, ""] if notes else [*lines, ""])
