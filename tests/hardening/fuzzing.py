"""The knobs ``make fuzz`` turns (``EINSTRIDE_FUZZ=1``): example counts and stress durations.

Tests here fix their example counts with :func:`scaled`, so the normal suite stays quick and
the fuzz run multiplies every one of them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import settings

from einstride import memory

FUZZ = bool(os.environ.get("EINSTRIDE_FUZZ"))
FACTOR = 25


def scaled(examples: int) -> settings:
    """``settings(max_examples=...)``: ``examples`` normally, ``FACTOR`` times more under fuzz."""
    return settings(max_examples=examples * FACTOR if FUZZ else examples)


def seconds(normal: float, fuzz: float) -> float:
    """How long a stress loop runs."""
    return fuzz if FUZZ else normal


@contextmanager
def memory_capped(nbytes: int = 256 * 2**20) -> Iterator[None]:
    """Run with einstride's memory limit lowered, so that a fuzzed request that is legal but
    huge (ten million views of an empty axis, say) is refused instead of slowly obeyed."""
    previous = memory.set_memory_limit(nbytes)
    try:
        yield
    finally:
        memory.set_memory_limit(previous)


# Every element-wise function of einstride, by arity (the hardening tests run each of them).
UNARY = [
    "negative",
    "abs",
    "sqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "tanh",
]
BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "power",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "equal",
    "not_equal",
]
