"""What a call allocates at its peak, as tracemalloc sees it (NumPy reports its buffers to it)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any


def traced_peak(call: Callable[[], Any]) -> tuple[Any, int]:
    """``call()``'s result and the most bytes tracemalloc saw allocated during it."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        value = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, peak
