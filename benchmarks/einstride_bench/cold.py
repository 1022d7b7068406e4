"""The cold-call section: every call on a new shape, so every call misses every cache.

Users of ML layers call einsum with a sequence length or a batch that changes from call
to call; a plan cache never hits there. Each case is called on ``calls`` new shapes (one
label grows by one each call), each contender once per shape in a new random order, and
every call is timed on its own and its result checked against NumPy before the next (the
check's oracle, computed first, leaves numpy.einsum's cache of parses as it was:
:func:`.check.oracle`). The
reported time is the median over the shapes (a contender slower than
:data:`CONTENDER_SECONDS` per case in all is timed on the shapes it reached by then).

The cases are the seven of issue 14's table and every einsum case of the warm suite (an
expression case measures reuse, so it sits out). New operands keep the layout of the
case's own (transposed views stay transposed, strided ones strided).

>>> from einstride_bench.contenders import default_peers, stand_in
>>> case = ColdCase(Case("mm", "ij,jk->ik", dense(np.float64, [(3, 4), (4, 5)])), "i")
>>> [ops[0].shape for ops in case.variants(3)]
[(4, 4), (5, 4), (6, 4)]
>>> result = run_cold_case(case, stand_in(), default_peers(optional=False), 3)
>>> len(result.subject.timing.samples), result.shapes
(3, '4x4, 4x5 … 6x4, 4x5')
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TextIO

import numpy as np

from .case import Array, Case, Operands, Prepare, Skip, Target, dense
from .check import mismatch, oracle
from .contenders import Engine
from .machine import CpuClock, background_cores
from .results import CaseResult, Entry
from .runner import contenders_for
from .suite import default_cases
from .timing import Timing

__all__ = [
    "COLD_CALLS",
    "COLD_GEOMEAN_LIMIT",
    "COLD_TARGET",
    "CONTENDER_SECONDS",
    "QUICK_COLD_CALLS",
    "ColdCase",
    "cold_cases",
    "issue_cases",
    "like",
    "run_cold",
    "run_cold_case",
    "torch_cold_cases",
]

COLD_CALLS = 60
QUICK_COLD_CALLS = 12
COLD_TARGET = Target("fastest", 1.5)
COLD_GEOMEAN_LIMIT = 1.0
CONTENDER_SECONDS = 10.0  # a contender this slow per case is timed on fewer shapes
F64 = np.float64


@dataclass(frozen=True)
class ColdCase:
    """A case and the labels whose size grows by one on each call (all to the same size)."""

    case: Case
    vary: str

    def variants(self, calls: int, seed: int = 0) -> Iterator[Operands]:
        """``calls`` sets of operands: the varied labels take the sizes ``n + 1 .. n + calls``
        (``n``: their size in the case's quick operands), every other size as in those."""
        template = self.case.operands(quick=True, seed=seed)
        terms = self.case.equation.split("->")[0].split(",")
        base = _base_size(terms, template, self.vary)
        rng = np.random.default_rng(seed)
        for step in range(1, calls + 1):
            size = base + step
            yield tuple(
                like(op, tuple(size if label in self.vary else n for label, n in
                               zip(term.strip(), op.shape)), rng)
                for term, op in zip(terms, template)
            )  # fmt: skip


def _base_size(terms: Sequence[str], template: Operands, vary: str) -> int:
    for term, op in zip(terms, template):
        for label, n in zip(term.strip(), op.shape):
            if label in vary:
                return int(n)
    raise ValueError(f"no operand has the label(s) {vary!r}")


def like(template: Array, shape: tuple[int, ...], rng: np.random.Generator) -> Array:
    """A new random array of ``shape`` laid out as ``template``: the same order of axes in
    memory, the same steps between used elements, reversed and broadcast axes alike.

    >>> base = np.zeros((8, 6))[::2, ::3].T                  # strided, transposed
    >>> new = like(base, (5, 7), np.random.default_rng(0))
    >>> new.shape, new.strides, base.strides
    ((5, 7), (24, 240), (24, 96))
    """
    ndim, item = template.ndim, template.itemsize
    order = sorted(range(ndim), key=lambda ax: -abs(template.strides[ax]))
    steps, dense_stride = [1] * ndim, item
    for ax in reversed(order):
        stride = abs(template.strides[ax])
        if stride and template.shape[ax] > 1:
            steps[ax] = max(1, stride // dense_stride)
            dense_stride = stride * template.shape[ax]
    broadcast = [ax for ax in range(ndim) if template.strides[ax] == 0 and template.shape[ax] > 1]
    sizes = [1 if ax in broadcast else shape[ax] for ax in range(ndim)]
    full = tuple(sizes[ax] * steps[ax] for ax in order)
    base = _random(rng, full, template.dtype)
    picked = base[tuple(slice(None, None, steps[ax]) for ax in order)]
    view = picked.transpose([order.index(ax) for ax in range(ndim)])
    flips = tuple(slice(None, None, -1 if template.strides[ax] < 0 else 1) for ax in range(ndim))
    view = view[flips]
    return np.broadcast_to(view, shape) if broadcast else view


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    values = rng.standard_normal(shape)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def issue_cases() -> tuple[ColdCase, ...]:
    """The seven cases of issue 14's table, at the shapes of its first call."""

    def case(name: str, equation: str, shapes: list[tuple[int, ...]], vary: str) -> ColdCase:
        return ColdCase(Case(name, equation, dense(F64, shapes), "cold"), vary)

    return (
        case("cold matmul k x 8", "ij,jk->ik", [(8, 8), (8, 8)], "i"),
        case("cold batched matmul 4 x k x 16", "bij,bjk->bik", [(4, 8, 16), (4, 16, 16)], "i"),
        case("cold attention scores", "bhqd,bhkd->bhqk", [(1, 4, 32, 32)] * 2, "qk"),
        case("cold linear layer", "bsi,oi->bso", [(2, 16, 32), (32, 32)], "s"),
        case("cold reduction", "ijk->i", [(8, 8, 8)], "i"),
        case("cold trace", "ii->", [(8, 8)], "i"),
        case("cold chain of 3", "ab,bc,cd->ad", [(16, 32), (32, 32), (32, 32)], "a"),
    )


def torch_cold_cases() -> tuple[ColdCase, ...]:
    """Every case of the cold section on torch tensors but those ``torch.einsum`` cannot
    run (an output label that repeats: the diagonal expansion), no target.

    >>> cases = torch_cold_cases()
    >>> len(cases) > 20, cases[0].case.name, {c.case.targets for c in cases}
    (True, 'torch: cold matmul k x 8', {()})
    """
    return tuple(
        replace(c, case=replace(c.case, name=f"torch: {c.case.name}", kind="torch", targets=()))
        for c in cold_cases()
        if _distinct_output(c.case.equation)
    )


def _distinct_output(equation: str) -> bool:
    output = equation.split("->")[1]
    return len(set(output)) == len(output)


def cold_cases() -> tuple[ColdCase, ...]:
    """The issue's cases, then every einsum case of the warm suite but the torch ones (its
    first operand's first label grows), each judged by :data:`COLD_TARGET`.

    >>> cases = cold_cases()
    >>> len(cases) > 20, {c.case.targets for c in cases} == {(COLD_TARGET,)}
    (True, True)
    """
    suite = [ColdCase(case, _growing_label(case)) for case in default_cases()
             if case.kind != "expression" and not case.on_torch]  # fmt: skip
    return tuple(replace(c, case=replace(c.case, targets=(COLD_TARGET,)))
                 for c in (*issue_cases(), *suite))  # fmt: skip


def _growing_label(case: Case) -> str:
    """The first operand's first label of at least :data:`COLD_CALLS` (the batch or the
    sequence length, typically), else its largest.

    >>> _growing_label(Case("a", "bhqd,bhkd->bhqk", dense(F64, [(2, 4, 128, 64)] * 2)))
    'q'
    """
    term = case.equation.split("->")[0].split(",")[0].strip()
    shape = case.operands(quick=True)[0].shape
    sized = list(zip(term, shape))
    large = [label for label, n in sized if n >= COLD_CALLS]
    return large[0] if large else max(sized, key=lambda item: item[1])[0]


def _expected(case: Case, ops: Operands) -> Array:
    return case.reference(ops) if case.reference else oracle(case.equation, ops)


def _timed_call(prepare: Prepare, case: Case, ops: Operands) -> tuple[float, object]:
    thunk = prepare(case, ops)  # wrapping (e.g. torch.from_numpy) is not part of the call
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        result = thunk()
        return time.perf_counter() - start, result
    finally:
        if gc_was_enabled:
            gc.enable()


def _shapes(first: Operands, last: Operands) -> str:
    def text(ops: Operands) -> str:
        return ", ".join("x".join(map(str, op.shape)) or "scalar" for op in ops)

    return f"{text(first)} … {text(last)}"


def _call_once(prepare: Prepare, case: Case, ops: Operands, expected: Array) -> tuple[float, str]:
    """One timed call and its check: ``(seconds, "")`` or ``(0, why it is out)``."""
    try:
        seconds, result = _timed_call(prepare, case, ops)
        problem = mismatch(result, expected, np.result_type(*ops))
    except Skip as exc:
        return 0.0, f"skipped: {exc}"
    except Exception as exc:  # a failing contender is reported, never fatal
        return 0.0, f"error: {type(exc).__name__}: {exc}"
    if problem is not None:
        shape = ", ".join("x".join(map(str, op.shape)) for op in ops)
        return 0.0, f"wrong: {problem} (shapes {shape})"
    return seconds, ""


def run_cold_case(
    cold: ColdCase, engine: Engine, peers: Mapping[str, Prepare], calls: int
) -> CaseResult:
    """Time every contender (the subject and the peers) once per new shape; a contender
    whose calls add up to :data:`CONTENDER_SECONDS` sits out the remaining shapes."""
    case = cold.case
    chosen = [c for c in contenders_for(case, engine, peers) if c[1] != "reference"]
    samples: dict[str, list[float]] = {name: [] for name, _, _ in chosen}
    problems: dict[str, str] = {}
    order = random.Random(0)
    start = CpuClock.now()
    first: Operands | None = None
    last: Operands = ()
    for ops in cold.variants(calls):
        first, last = first or ops, ops
        expected = _expected(case, ops)
        for name, _, prepare in order.sample(chosen, len(chosen)):
            if name in problems or sum(samples[name]) > CONTENDER_SECONDS:
                continue
            seconds, problem = _call_once(prepare, case, ops, expected)
            if problem:
                problems[name] = problem
            else:
                samples[name].append(seconds)
    entries = tuple(
        Entry(name, role, None if name in problems else Timing(tuple(samples[name]), 1),
              problems.get(name, ""))
        for name, role, _ in chosen
    )  # fmt: skip
    dtype_name = str(np.result_type(*last)) if last else ""
    busy = background_cores(start, CpuClock.now())
    return CaseResult(case, _shapes(first or (), last), dtype_name, 0.0, entries, busy)


def run_cold(
    cases: Sequence[ColdCase],
    engine: Engine,
    peers: Mapping[str, Prepare],
    calls: int,
    progress: TextIO,
) -> list[CaseResult]:
    """Run every cold case, reporting progress; the engine's caches are emptied before each
    case (the first call of the case then also parses its equation)."""
    results = []
    for number, cold in enumerate(cases, 1):
        case = cold.case
        print(f"[cold {number:2d}/{len(cases)}] {case.name} ({case.equation}) ...", file=progress,
              flush=True)  # fmt: skip
        if engine.clear_caches is not None:
            engine.clear_caches()
        result = run_cold_case(cold, engine, peers, calls)
        ratio = "-" if result.ratio is None else f"{result.ratio:.2f}x"
        print(f"        {result.status} {ratio}", file=progress, flush=True)
        results.append(result)
    return results
