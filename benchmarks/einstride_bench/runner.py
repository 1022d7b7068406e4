"""Running cases: prepare and check every contender, then time them side by side.

Every contender gets the same operands. Each one is run once and its result checked
against NumPy before any timing; a contender that is skipped, raises or is wrong is
reported with the reason and not timed. The others are timed interleaved.

>>> import io, opt_einsum
>>> from einstride_bench.case import dense
>>> from einstride_bench.contenders import default_peers, stand_in
>>> from einstride_bench.timing import Budget
>>> brief = Budget(seconds=0.02, min_sample=1e-4, turn=1e-3, min_turns=1, max_rounds=20)
>>> case = Case("mm", "ij,jk->ik", dense(np.float64, [(3, 4), (4, 5)]))
>>> suite = run_suite([case], stand_in(), default_peers(optional=False), brief, quick=True,
...                   progress=io.StringIO(), measure_rates=False)
>>> result = suite.results[0]
>>> result.shapes, result.flops, result.subject.problem, len(result.timed("peer"))
('3x4, 4x5', 120.0, '', 3)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, TextIO

import numpy as np

from .case import Case, Operands, Prepare, Skip, Thunk
from .check import mismatch, oracle
from .contenders import MATMUL, Engine, path_flops, subject
from .machine import (
    CpuClock,
    background_cores,
    blas_environment,
    blas_libraries,
    load_average,
    machine_info,
    matmul_rate,
)
from .results import CaseResult, Entry, SuiteResult
from .timing import FULL, QUICK, Budget, interleave

__all__ = ["Contender", "contenders_for", "run_case", "run_suite"]

Role = Literal["subject", "peer", "reference"]
Contender = tuple[str, Role, Prepare]


def _matmul_reference(case: Case, ops: Operands) -> Thunk:
    if case.matmul is None:
        raise Skip("not GEMM-shaped")
    return case.matmul(ops)


def contenders_for(case: Case, engine: Engine, peers: Mapping[str, Prepare]) -> list[Contender]:
    """The subject, the case's peers (its hand-written ones, if it has them) and the
    numpy.matmul reference for GEMM-shaped cases."""
    own = case.handwritten if case.kind == "handwritten" else peers
    if engine.name in own or engine.name == MATMUL:
        raise ValueError(f"the engine's name {engine.name!r} is also a peer's name")
    chosen: list[Contender] = [(engine.name, "subject", subject(engine))]
    chosen += [(name, "peer", prepare) for name, prepare in own.items()]
    if case.matmul is not None:
        chosen.append((MATMUL, "reference", _matmul_reference))
    return chosen


def _prepared(
    contender: Contender, case: Case, ops: Operands, expected: Any
) -> tuple[Entry, Thunk | None]:
    name, role, prepare = contender
    try:
        thunk = prepare(case, ops)
        problem = mismatch(thunk(), expected, np.result_type(*ops))
    except Skip as exc:
        return Entry(name, role, None, f"skipped: {exc}"), None
    except Exception as exc:  # a failing contender is reported, never fatal
        return Entry(name, role, None, f"error: {type(exc).__name__}: {exc}"), None
    if problem is not None:
        return Entry(name, role, None, f"wrong: {problem}"), None
    return Entry(name, role, None), thunk


def _flops(case: Case, ops: Operands) -> float:
    if case.kind == "handwritten":
        return 0.0
    return path_flops(case.equation, ops)


def _shapes(ops: Operands) -> str:
    def one(op: Any) -> str:
        shape = "x".join(map(str, op.shape)) or "scalar"
        return shape if op.flags.c_contiguous else f"{shape} (view)"

    return ", ".join(one(op) for op in ops)


def run_case(
    case: Case, contenders: Sequence[Contender], budget: Budget, quick: bool
) -> CaseResult:
    """Check every contender on the case's operands, then time the correct ones."""
    start = CpuClock.now()
    ops = case.operands(quick)
    expected = case.reference(ops) if case.reference else oracle(case.equation, ops)
    prepared = [_prepared(contender, case, ops, expected) for contender in contenders]
    del expected
    thunks = {entry.name: thunk for entry, thunk in prepared if thunk is not None}
    timings = interleave(thunks, budget)
    entries = tuple(replace(entry, timing=timings.get(entry.name)) for entry, _ in prepared)
    dtype = np.result_type(*ops)
    busy = background_cores(start, CpuClock.now())
    return CaseResult(case, _shapes(ops), str(dtype), _flops(case, ops), entries, busy)


def _describe(result: CaseResult) -> str:
    seconds = result.subject.timing.median if result.subject.timing else None
    fastest = result.fastest_peer
    parts = [f"{result.subject.name} " + ("-" if seconds is None else f"{seconds:.3g} s")]
    if fastest is not None and fastest.timing is not None:
        parts.append(f"fastest peer {fastest.name} {fastest.timing.median:.3g} s")
    if result.ratio is not None:
        parts.append(f"{result.ratio:.2f}x")
    problems = [f"\n    {e.name}: {e.problem}" for e in result.entries if e.problem]
    if result.background is not None:
        parts.append(f"others busy {result.background:.1f} cores")
    return " | ".join([*parts, result.status]) + "".join(problems)


def _circumstances(suite: SuiteResult, quick: bool, measure_rates: bool, out: TextIO) -> None:
    suite.machine = machine_info()
    suite.environment = blas_environment()
    suite.blas = blas_libraries()
    suite.notes["load average at start"] = load_average()
    if measure_rates:
        print("measuring numpy.matmul's reference GFLOP/s ...", file=out, flush=True)
        size, seconds = (384, 0.1) if quick else (1024, 0.5)
        rate_budget = replace(QUICK if quick else FULL, seconds=seconds)
        for dtype in (np.float32, np.float64):
            suite.matmul_rates[np.dtype(dtype).name] = matmul_rate(dtype, size, rate_budget)
        suite.notes["reference GEMM"] = f"square {size}x{size} numpy.matmul"


def run_suite(
    cases: Sequence[Case],
    engine: Engine,
    peers: Mapping[str, Prepare],
    budget: Budget,
    quick: bool,
    progress: TextIO | None = None,
    measure_rates: bool = True,
) -> SuiteResult:
    """Run every case, reporting progress on ``progress`` (default stderr)."""
    out = sys.stderr if progress is None else progress
    suite = SuiteResult(engine.name, "quick" if quick else "full", engine.stand_in)
    start = CpuClock.now()
    _circumstances(suite, quick, measure_rates, out)
    for number, case in enumerate(cases, 1):
        print(f"[{number:2d}/{len(cases)}] {case.name} ({case.equation}) ...", file=out, flush=True)
        result = run_case(case, contenders_for(case, engine, peers), budget, quick)
        print(f"        {_describe(result)}", file=out, flush=True)
        suite.results.append(result)
    suite.notes["load average at end"] = load_average()
    suite.background = background_cores(start, CpuClock.now())
    return suite
