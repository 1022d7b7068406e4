"""Allocation guards: every function that allocates a result whose size its arguments choose
(creation, ``tile``, ``pad``, ``resize``, copies of broadcast views, einsum) asks here first,
so an impossible request fails at once with an error that names the size, instead of dying in
the allocator or swapping the machine to a halt.

The limit is one allocation's bytes: the machine's physical memory unless
:func:`set_memory_limit` chose another (``einsum``'s ``memory_limit=`` overrides it per call).

>>> import numpy as np
>>> check_array((10**6, 10**6), np.float64, "zeros")
Traceback (most recent call last):
ValueError: zeros of shape (1000000, 1000000) (float64) would allocate 8,000,000,000,000 bytes, ...
>>> previous = set_memory_limit(1000)
>>> check_allocation(1001, "a buffer")
Traceback (most recent call last):
ValueError: a buffer would allocate 1,001 bytes, more than the memory limit of 1,000 bytes ...
>>> set_memory_limit(previous)
1000
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "LIMIT",
    "array_bytes",
    "check_allocation",
    "check_array",
    "memory_limit",
    "physical_memory",
    "set_memory_limit",
]

@functools.cache
def physical_memory() -> int:
    """The machine's physical memory in bytes (``2**63 - 1`` where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 2**63 - 1


_configured: int | None = None  # set_memory_limit's value; None: the physical memory
LIMIT: int = physical_memory()
"""The limit in force (read directly by einsum's hot path; change it with set_memory_limit)."""


def memory_limit() -> int:
    """The bytes one allocation may take: the configured limit, else the physical memory.

    >>> memory_limit() == physical_memory()
    True
    """
    return LIMIT


def set_memory_limit(nbytes: int | None) -> int | None:
    """Set the limit (bytes, ``>= 0``), or go back to the physical memory with ``None``;
    returns the previous setting, so a caller can restore it.

    >>> set_memory_limit(-1)
    Traceback (most recent call last):
    ValueError: the memory limit must be >= 0 bytes, got -1
    """
    global _configured, LIMIT
    if nbytes is not None:
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)):
            raise TypeError(f"the memory limit must be an int (bytes) or None, not {nbytes!r}")
        if nbytes < 0:
            raise ValueError(f"the memory limit must be >= 0 bytes, got {nbytes}")
        nbytes = int(nbytes)
    previous, _configured = _configured, nbytes
    LIMIT = physical_memory() if nbytes is None else nbytes
    return previous


def check_allocation(
    nbytes: int, what: str, error: type[ValueError] = ValueError, limit: int | None = None
) -> None:
    """Raise ``error`` (a ``ValueError`` subclass: each caller keeps its own error type) when
    allocating ``nbytes`` for ``what`` would exceed ``limit`` (default :func:`memory_limit`).

    >>> check_allocation(8, "eight bytes")
    """
    bound = memory_limit() if limit is None else limit
    if nbytes > bound:
        raise error(
            f"{what} would allocate {nbytes:,} bytes, more than the memory limit of {bound:,} "
            "bytes (einstride.memory.set_memory_limit changes it)"
        )


def array_bytes(shape: Iterable[int], dtype: Any) -> int:
    """Bytes of a new array of ``shape`` and ``dtype`` (exact: Python ints never overflow).

    >>> array_bytes((3, 4), np.float32)
    48
    """
    count: int = math.prod(int(n) for n in shape)
    return count * int(np.dtype(dtype).itemsize)


def check_array(
    shape: Iterable[int], dtype: Any, what: str, error: type[ValueError] = ValueError
) -> None:
    """:func:`check_allocation` for a new array of ``shape`` and ``dtype``."""
    dims = tuple(int(n) for n in shape)
    kind = np.dtype(dtype)
    check_allocation(array_bytes(dims, kind), f"{what} of shape {dims} ({kind})", error)
