"""Interleaved, adaptive timing of several calls on the same inputs.

On a small shared machine two effects dominate the noise: other processes take whole
scheduler slices (a few milliseconds) at random, and the library that ran last leaves
its worker threads spinning (OpenMP, OpenBLAS), which slows the first calls of the
next one. So:

- a *sample* is a short batch of back-to-back calls (at least ``min_sample`` seconds;
  many calls for microsecond cases, one for slow ones), and the reported time is the
  median sample, which ignores the slices lost to other processes;
- contenders take *turns* in rounds, in a new random order each round, so that drift
  hits all of them alike and none always follows the same neighbour; a turn starts
  with one untimed settling call and then takes samples for about ``turn`` seconds;
- rounds go on until the case's ``seconds`` are spent; a contender too slow to share
  them stops after ``min_turns`` turns.

>>> brief = Budget(seconds=0.02, min_sample=1e-4, turn=1e-3, min_turns=2, max_rounds=50)
>>> timings = interleave({"sum": lambda: sum(range(50))}, brief)
>>> timings["sum"].median > 0, len(timings["sum"].samples) >= brief.min_turns
(True, True)
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .case import Thunk

__all__ = ["FULL", "QUICK", "Budget", "Timing", "calls_per_sample", "interleave"]

# Below this many seconds per call a turn starts with an untimed settling call; above
# it the transition is a small part of the call and settling would double the cost.
SETTLE_BELOW = 0.02


@dataclass(frozen=True)
class Budget:
    """How long to time one case: ``seconds`` for all its contenders together."""

    seconds: float
    min_sample: float
    turn: float
    min_turns: int
    max_rounds: int


FULL = Budget(seconds=2.5, min_sample=2e-4, turn=0.01, min_turns=3, max_rounds=500)
QUICK = Budget(seconds=0.4, min_sample=2e-4, turn=0.004, min_turns=2, max_rounds=200)


@dataclass(frozen=True)
class Timing:
    """Seconds per call: each sample is the mean over ``calls`` back-to-back calls."""

    samples: tuple[float, ...]
    calls: int

    @property
    def median(self) -> float:
        """The median seconds per call.

        >>> Timing((3.0, 1.0, 2.0), 1).median
        2.0
        """
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median (0 for fewer than 4 samples).

        >>> round(Timing((1.0, 1.0, 2.0, 3.0, 3.0), 1).spread, 2)
        1.0
        """
        if len(self.samples) < 4:
            return 0.0
        low, _, high = statistics.quantiles(self.samples, n=4)
        return (high - low) / self.median


def _seconds(thunk: Thunk, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        thunk()
    return time.perf_counter() - start


def calls_per_sample(thunk: Thunk, min_sample: float) -> tuple[int, float]:
    """The smallest count in 1, 2, 5, 10, 20, ... whose calls last ``min_sample``
    seconds, and the seconds per call it measured.

    >>> calls, seconds = calls_per_sample(lambda: None, 1e-4)
    >>> calls > 10, seconds < 1e-4
    (True, True)
    """
    calls = 1
    for step in range(1, 60):
        took = _seconds(thunk, calls)
        if took >= min_sample:
            break
        calls = (1, 2, 5)[step % 3] * 10 ** (step // 3)
    return calls, took / calls


@dataclass
class _Plan:
    thunk: Thunk
    calls: int
    burst: int
    settle: bool
    turns: int = 0
    last: float = 0.0  # seconds the last turn took

    def take_turn(self, samples: list[float]) -> None:
        start = time.perf_counter()
        if self.settle:
            self.thunk()
        samples.extend(_seconds(self.thunk, self.calls) / self.calls for _ in range(self.burst))
        self.turns += 1
        self.last = time.perf_counter() - start


def _plan(thunk: Thunk, budget: Budget) -> _Plan:
    calls, seconds = calls_per_sample(thunk, budget.min_sample)
    burst = min(100, max(1, int(budget.turn / (calls * seconds))))
    return _Plan(thunk, calls, burst, settle=seconds < SETTLE_BELOW)


def _shuffled(names: list[str], rng: random.Random) -> list[str]:
    order = names[:]
    rng.shuffle(order)
    return order


def _all_had(plans: Iterable[_Plan], turns: int) -> bool:
    return all(plan.turns >= turns for plan in plans)


def interleave(thunks: Mapping[str, Thunk], budget: Budget) -> dict[str, Timing]:
    """Time every thunk (already warmed up) in interleaved rounds; see the module doc."""
    names = list(thunks)
    if not names:
        return {}
    plans = {name: _plan(thunks[name], budget) for name in names}
    samples: dict[str, list[float]] = {name: [] for name in names}
    rng = random.Random(0)  # a fixed seed: the same orders on every run
    fair_share = budget.seconds / max(1, len(names) * budget.min_turns)
    start = time.perf_counter()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(budget.max_rounds):
            took_turn = False
            for name in _shuffled(names, rng):
                plan = plans[name]
                if plan.turns < budget.min_turns or plan.last < fair_share:
                    plan.take_turn(samples[name])
                    took_turn = True
            spent = time.perf_counter() - start >= budget.seconds
            if not took_turn or (spent and _all_had(plans.values(), budget.min_turns)):
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: Timing(tuple(samples[name]), plans[name].calls) for name in names}
