"""The measured results of a case and of the suite, and the targets judged on them.

>>> import numpy as np
>>> from einstride_bench.case import dense
>>> from einstride_bench.timing import Timing
>>> case = Case("mm", "ij,jk->ik", dense(np.float64, [(2, 2)] * 2))
>>> entries = (Entry("subject", "subject", Timing((2.0,), 1)),
...            Entry("a", "peer", Timing((4.0,), 1)), Entry("b", "peer", Timing((1.0,), 1)))
>>> result = CaseResult(case, "2x2, 2x2", "float64", 16.0, entries)
>>> result.fastest_peer.name, result.ratio
('b', 2.0)
>>> result.verdicts()
(('<= 1.1x the fastest peer', False, '2.00x b'),)
>>> result.status
'MISS'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .case import Case, Target
from .timing import Timing

if TYPE_CHECKING:
    from .netbench import NetworkResult

__all__ = ["CaseResult", "Entry", "SuiteResult", "geometric_mean"]

NOISY_SPREAD = 0.25
Verdict = tuple[str, bool | None, str]  # target, met (None: not measurable), measured


@dataclass(frozen=True)
class Entry:
    """One contender on one case: its timing, or the ``problem`` that kept it out
    ("skipped: ...", "error: ...", "wrong: ...")."""

    name: str
    role: Literal["subject", "peer", "reference"]
    timing: Timing | None
    problem: str = ""


@dataclass(frozen=True)
class CaseResult:
    """A case's entries (subject first), with the derived ratio, rates and verdicts."""

    case: Case
    shapes: str
    dtype: str
    flops: float
    entries: tuple[Entry, ...]
    background: float | None = None  # cores other processes kept busy meanwhile

    def timed(self, role: str) -> list[Entry]:
        """The entries of ``role`` that have a timing."""
        return [e for e in self.entries if e.role == role and e.timing is not None]

    @property
    def subject(self) -> Entry:
        """The entry of the engine under test."""
        return next(e for e in self.entries if e.role == "subject")

    def seconds(self, name: str) -> float | None:
        """The median seconds of the named contender, if it was timed."""
        for entry in self.entries:
            if entry.name == name and entry.timing is not None:
                return entry.timing.median
        return None

    @property
    def fastest_peer(self) -> Entry | None:
        """The timed peer with the lowest median, if any."""
        peers = self.timed("peer")
        return min(peers, key=lambda e: e.timing.median if e.timing else math.inf, default=None)

    @property
    def ratio(self) -> float | None:
        """Subject time / fastest peer time (below 1: the subject wins)."""
        fastest = self.fastest_peer
        if fastest is None or fastest.timing is None:
            return None
        return _ratio(self.subject, fastest.timing.median)

    def gflops(self) -> float | None:
        """The subject's GFLOP/s, for cases that count floating-point work."""
        if self.flops <= 0 or self.subject.timing is None:
            return None
        return self.flops / self.subject.timing.median / 1e9

    def matmul_share(self) -> float | None:
        """numpy.matmul's time on the same data / subject time (1.0: as fast as matmul)."""
        reference = self.timed("reference")
        if not reference or reference[0].timing is None:
            return None
        inverse = _ratio(self.subject, reference[0].timing.median)
        return None if inverse is None else 1 / inverse

    def noisy(self) -> bool:
        """Whether the subject's or the fastest peer's samples spread widely
        (interquartile range over ``NOISY_SPREAD`` of the median)."""
        judged = [self.subject, self.fastest_peer]
        return any(e is not None and e.timing and e.timing.spread > NOISY_SPREAD for e in judged)

    def _judge(self, target: Target) -> Verdict:
        phrase = target.describe()
        if target.kind == "matmul":
            share = self.matmul_share()
            met = None if share is None else share >= target.limit
            return phrase, met, "" if share is None else f"{share:.0%} of matmul"
        if target.kind == "fastest":
            fastest = self.fastest_peer
            value, against = self.ratio, fastest.name if fastest else ""
        else:
            seconds, against = self.seconds(target.peer), target.peer
            value = None if seconds is None else _ratio(self.subject, seconds)
        met = None if value is None else value <= target.limit
        return phrase, met, "" if value is None else f"{value:.2f}x {against}"

    def verdicts(self) -> tuple[Verdict, ...]:
        """Each target of the case: its phrase, whether it was met, what was measured."""
        return tuple(self._judge(target) for target in self.case.targets)

    @property
    def status(self) -> str:
        """ERROR/WRONG when the subject failed, MISS when a target failed, else PASS
        (or n/a when no target could be measured)."""
        if self.subject.timing is None:
            return "WRONG" if self.subject.problem.startswith("wrong") else "ERROR"
        met = [verdict[1] for verdict in self.verdicts() if verdict[1] is not None]
        if not met:
            return "n/a"
        return "PASS" if all(met) else "MISS"


def _ratio(subject: Entry, seconds: float) -> float | None:
    if subject.timing is None or seconds <= 0:
        return None
    return subject.timing.median / seconds


def geometric_mean(values: Sequence[float]) -> float | None:
    """The geometric mean, or ``None`` for no values.

    >>> geometric_mean([0.5, 2.0]), geometric_mean([])
    (1.0, None)
    """
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


GEOMEAN_LIMIT = 0.9


@dataclass
class SuiteResult:
    """Everything a report needs: the cases' results and the run's circumstances."""

    engine: str
    mode: str
    stand_in: bool = False
    results: list[CaseResult] = field(default_factory=list)
    machine: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    blas: list[str] = field(default_factory=list)
    matmul_rates: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    background: float | None = None  # cores other processes kept busy during the run
    sections: tuple[str, ...] = ("warm",)  # which of "warm", "cold", "networks" ran
    cold: list[CaseResult] = field(default_factory=list)
    torch_cold: list[CaseResult] = field(default_factory=list)  # the cold cases on torch
    networks: list[NetworkResult] = field(default_factory=list)
    imports: dict[str, float] = field(default_factory=dict)  # seconds per module (cold)

    def geomean_ratio(self) -> float | None:
        """The geometric mean of every case's subject / fastest-peer ratio."""
        return geometric_mean([r.ratio for r in self.results if r.ratio is not None])

    def failed(self) -> list[CaseResult]:
        """The cases where the subject raised or gave a wrong result."""
        return [r for r in self.results if r.status in ("ERROR", "WRONG")]

    def any_failed(self) -> bool:
        """Whether the subject raised or was wrong anywhere: warm, cold or on a network."""
        cold = any(r.status in ("ERROR", "WRONG") for r in (*self.cold, *self.torch_cold))
        nets = any(r.status in ("ERROR", "WRONG") for r in self.networks)
        return bool(self.failed()) or cold or nets

    def missed(self) -> list[CaseResult]:
        """The cases where a target was missed."""
        return [r for r in self.results if r.status == "MISS"]

    def geomean_met(self) -> bool | None:
        """Whether the suite's geometric mean is within its target (<= 0.9)."""
        value = self.geomean_ratio()
        return None if value is None else value <= GEOMEAN_LIMIT
