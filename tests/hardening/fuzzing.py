"""The knobs ``make fuzz`` turns (``EINSTRIDE_FUZZ=1``): example counts and stress durations.

Tests here fix their example counts with :func:`scaled`, so the normal suite stays quick and
the fuzz run multiplies every one of them.
"""

from __future__ import annotations

import os

from hypothesis import settings

FUZZ = bool(os.environ.get("EINSTRIDE_FUZZ"))
FACTOR = 25


def scaled(examples: int) -> settings:
    """``settings(max_examples=...)``: ``examples`` normally, ``FACTOR`` times more under fuzz."""
    return settings(max_examples=examples * FACTOR if FUZZ else examples)


def seconds(normal: float, fuzz: float) -> float:
    """How long a stress loop runs."""
    return fuzz if FUZZ else normal
