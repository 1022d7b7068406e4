"""Allocation guards: every function that allocates a result whose size its arguments choose
(creation, ``tile``, ``pad``, ``resize``, copies of broadcast views, einsum) asks here first,
so an impossible request fails at once with an error that names the size, instead of dying in
the allocator or swapping the machine to a halt.

The limit is one allocation's bytes: the machine's physical memory unless
:func:`set_memory_limit` chose another (``einsum``'s ``memory_limit=`` overrides it per call).
The guard bounds every allocation a function makes, its temporaries included, and is asked
before the first of them (and before any scan whose length the arguments choose); the error
is :class:`~einstride.errors.MemoryLimitError` (a ``ValueError``).  An item of zero bytes
counts as one, so element counts are bounded too.

>>> import numpy as np
>>> check_array((10**6, 10**6), np.float64, "zeros")
Traceback (most recent call last):
einstride.errors.MemoryLimitError: zeros of shape (1000000, 1000000) (float64) would allocate ...
>>> previous = set_memory_limit(1000)
>>> check_allocation(1001, "a buffer")
Traceback (most recent call last):
einstride.errors.MemoryLimitError: a buffer would allocate 1,001 bytes, more than the memory ...
>>> set_memory_limit(previous)
1000
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .errors import LayoutError, MemoryLimitError
from .narrow import as_dtype

MAX_NDARRAY_RANK = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
"""The most axes a NumPy array has."""

__all__ = [
    "LIMIT",
    "LIMIT_HOOKS",
    "MAX_NDARRAY_RANK",
    "MemoryLimitError",
    "array_bytes",
    "check_allocation",
    "check_array",
    "check_array_like",
    "check_listing",
    "check_views",
    "memory_limit",
    "numpy_can_make",
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

LIMIT_HOOKS: list[Callable[[], None]] = []
"""Called after the limit changes (what was compiled with the old one is forgotten)."""


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
    ValueError: set_memory_limit: the memory limit must be >= 0 bytes, got -1
    """
    global _configured, LIMIT
    if nbytes is not None:
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)):
            raise TypeError(
                f"set_memory_limit: the memory limit must be an int (bytes) or None, not {nbytes!r}"
            )
        if nbytes < 0:
            raise ValueError(f"set_memory_limit: the memory limit must be >= 0 bytes, got {nbytes}")
        nbytes = int(nbytes)
    previous, _configured = _configured, nbytes
    LIMIT = physical_memory() if nbytes is None else nbytes
    for hook in LIMIT_HOOKS:
        hook()
    return previous


def check_allocation(
    nbytes: int, what: str, error: type[ValueError] = MemoryLimitError, limit: int | None = None
) -> None:
    """Raise ``error`` (default :class:`~einstride.errors.MemoryLimitError`; a caller may pass
    a subclass of its own family) when allocating ``nbytes`` for ``what`` would exceed
    ``limit`` (default :func:`memory_limit`).

    >>> check_allocation(8, "eight bytes")
    """
    bound = memory_limit() if limit is None else limit
    if nbytes > bound:
        raise error(
            f"{what} would allocate {nbytes:,} bytes, more than the memory limit of {bound:,} "
            "bytes (einstride.memory.set_memory_limit changes it)"
        )


def array_bytes(shape: Iterable[int], dtype: Any) -> int:
    """What a new array of ``shape`` and ``dtype`` costs, in bytes (exact: Python ints never
    overflow).  An item of zero bytes (``V0``) counts as one: NumPy still visits every element,
    so its element count has to be bounded like its bytes.

    >>> array_bytes((3, 4), np.float32), array_bytes((10, 10), "V0"), array_bytes((10,), "U0")
    (48, 100, 40)
    """
    count: int = math.prod(int(n) for n in shape)
    return count * max(_made_itemsize(np.dtype(dtype)), 1)


def cast_dtype(source: Any, target: Any) -> np.dtype[Any]:
    """The dtype NumPy makes casting items of ``source`` to ``target``: an unsized string or
    void target takes the width of the source's items (a review: ``astype("U0")`` of
    ``int64`` makes ``<U21``, 84 bytes an item, and was sized as one character).

    >>> cast_dtype(np.int64, "U0"), cast_dtype(np.float64, "f4"), cast_dtype("U5", "S0")
    (dtype('<U21'), dtype('float32'), dtype('S5'))
    """
    found: np.dtype[Any] = np.dtype(target)
    if found.itemsize or found.kind not in "SUV":
        return found
    try:
        made: np.dtype[Any] = np.empty(0, source).astype(found).dtype
    except (TypeError, ValueError):  # a cast NumPy refuses: the caller's cast says so
        return found
    return made


def _made_itemsize(dtype: np.dtype[Any]) -> int:
    """The item size of the array NumPy makes for ``dtype``: an unsized string dtype (``U0``,
    ``S0``) is made one character wide (``<U1``, ``|S1``; a review: ``zeros((2**33,), "U0")``
    passed the limit as 8 GiB, and NumPy allocated 32)."""
    if dtype.itemsize == 0 and dtype.kind in "SU":
        return np.dtype(f"{dtype.kind}1").itemsize
    return int(dtype.itemsize)


def numpy_can_make(shape: tuple[int, ...], dtype: np.dtype[Any]) -> bool:
    """Whether NumPy can make an array of ``shape``: at most :data:`MAX_NDARRAY_RANK` axes,
    each length and the bytes fewer than 2**63, the lengths past a zero counted too
    (NumPy's own check leaves the zeros out: an empty array of such lengths is refused).

    >>> numpy_can_make((2**61,), np.dtype("f8")), numpy_can_make((2,) * 65, np.dtype("f8"))
    (False, False)
    >>> numpy_can_make((0, 10**10, 10**10), np.dtype("f8"))
    False
    >>> numpy_can_make((0, 2**61, 2), np.dtype("U0")), numpy_can_make((0, 2**61, 2), np.dtype("S0"))
    (False, True)
    >>> numpy_can_make((0, 2**64), np.dtype("V0"))  # (each length an intp)
    False
    """
    if len(shape) > MAX_NDARRAY_RANK or any(n >= 2**63 for n in shape):
        return False
    return math.prod(n for n in shape if n) * _made_itemsize(dtype) < 2**63


def check_array(
    shape: Iterable[int], dtype: Any, what: str, error: type[ValueError] = MemoryLimitError
) -> None:
    """:func:`check_allocation` for a new array (or a scan, or a temporary) of ``shape`` and
    ``dtype``.

    >>> check_array((10**7, 10**7), "V0", "tile")
    Traceback (most recent call last):
    einstride.errors.MemoryLimitError: tile of shape (10000000, 10000000) (|V0) would allocate ...
    """
    dims = tuple(int(n) for n in shape)
    kind = as_dtype(dtype)
    if len(dims) > MAX_NDARRAY_RANK:  # (NumPy's bare ValueError named nothing: a review)
        raise LayoutError(
            f"{what} of shape {dims}: rank {len(dims)}; NumPy arrays have at most "
            f"{MAX_NDARRAY_RANK} dimensions"
        )
    check_allocation(array_bytes(dims, kind), f"{what} of shape {dims} ({kind})", error)
    if not numpy_can_make(dims, kind):  # (an empty one: the non-empty passed the limit above)
        raise LayoutError(
            f"{what} of shape {dims} ({kind}): NumPy makes no array with a length past 2**63 "
            "or whose lengths other than 0 multiply past 2**63 bytes"
        )


def check_array_like(data: Any, dtype: Any, what: str) -> None:
    """Size what ``np.asarray(data, dtype)`` would build **before** NumPy builds it: nested
    lists and tuples, ``range`` objects and other sequences, and arrays inside them (a
    broadcast view in a list is copied).  The estimate is the element count times the widest
    item (8 bytes for a number, 4 per character of a string, ``dtype``'s item when given;
    under ``U0``/``S0`` a number as wide as ``str()`` writes it, an array's item as its
    cast's).
    An ndarray (or anything with ``shape`` and ``dtype``) costs nothing: it exists already.

    >>> check_array_like([[1, 2], [3, 4]], None, "tensor")
    >>> check_array_like(range(10**15), None, "tensor")
    Traceback (most recent call last):
    einstride.errors.MemoryLimitError: tensor of a range would allocate 48,000,000,000,000,000 ...
    """
    if _is_array(data) or isinstance(data, _NUMBERS):
        _check_no_graph(data, what)
        return
    item = _fixed_item(dtype)
    bound = memory_limit()
    walk = _Walk(bound // max(item or 1, 1) + 1, _unsized(dtype))
    count = walk.count(data, 0)
    nbytes = count * max(item if item is not None else walk.widest, 1) + walk.boxed * _BOXED
    check_allocation(nbytes, f"{what} of a {type(data).__name__}", limit=bound)


def check_listing(values: Any, what: str) -> None:
    """Size ``tuple(values)`` before it is made: a sequence that is not already a list or
    tuple (a ``range``, an ndarray, possibly a broadcast one) becomes one boxed Python object
    per item.

    >>> check_listing(range(3), "shape")
    >>> check_listing(range(10**15), "shape")
    Traceback (most recent call last):
    einstride.errors.MemoryLimitError: shape (a range of 1000000000000000 items) would allocate ...
    """
    if isinstance(values, (list, tuple)):
        return
    try:
        count = len(values)
    except Exception:  # not sized: an iterator, or not a sequence at all (callers decide)
        return
    check_allocation(count * _BOXED, f"{what} (a {type(values).__name__} of {count} items)")


# What one returned view costs in Python objects (Tensor, Layout, tuples, maybe an ndarray).
_VIEW_BYTES = 512


def check_views(count: int, what: str) -> None:
    """A list of ``count`` views must fit the memory limit like any other allocation (any
    count divides an empty axis; a broadcast axis can be 10^12 long).

    >>> check_views(2**62, "split")
    Traceback (most recent call last):
    einstride.errors.MemoryLimitError: split into 4611686018427387904 views would allocate ...
    """
    check_allocation(count * _VIEW_BYTES, f"{what} into {count} views")


_NUMBERS = (int, float, complex, np.generic)
# NumPy reads at most this many nested levels (its rank limit); deeper items are objects.
_MAX_DEPTH = 64
# NumPy reads a sequence other than a list or tuple (a ``range``, say) by first making a list
# of its items as Python objects: a pointer and a boxed number per element, before the result.
_BOXED = 40


def _check_no_graph(data: Any, what: str) -> None:
    """A torch tensor that requires grad refuses to become an ndarray with a bare
    ``RuntimeError``: a ``TypeError`` naming the way out instead (einsum itself takes such
    tensors, under torch's autograd)."""
    if getattr(data, "requires_grad", False) is True and type(data).__module__.startswith("torch"):
        raise TypeError(
            f"{what}: a torch tensor that requires grad cannot become a NumPy array "
            "(einstride.einsum takes it under autograd; elsewhere pass tensor.detach())"
        )


def _is_array(x: Any) -> bool:
    """An array object whose memory exists already (ndarray, Tensor, Dask, torch, ...)."""
    return isinstance(x, np.ndarray) or (hasattr(x, "shape") and hasattr(x, "dtype"))


def _fixed_item(dtype: Any) -> int | None:
    """The item size ``dtype`` forces on a conversion; ``None`` without one (or an unsized
    string or void dtype, whose width the data decides: ``V0`` of ``b"x" * 10**5`` makes
    ``V100000``)."""
    kind = _dtype_or_none(dtype)
    if kind is None or (kind.kind in "SUV" and kind.itemsize == 0):
        return None
    return int(kind.itemsize)


def _dtype_or_none(dtype: Any) -> np.dtype[Any] | None:
    """``dtype`` as a NumPy dtype; None without one, or for one NumPy rejects (before it
    allocates anything)."""
    if dtype is None:
        return None
    try:
        return as_dtype(dtype)
    except (TypeError, ValueError):
        return None


def _unsized(dtype: Any) -> np.dtype[Any] | None:
    """``dtype`` when it is an unsized string dtype (``U0``, ``S0``: the data's items decide
    its width), else None."""
    kind = _dtype_or_none(dtype)
    return kind if kind is not None and kind.kind in "SU" and kind.itemsize == 0 else None


class _Walk:
    """Counts the elements NumPy would make from nested sequences.  A container met twice
    (``[row] * 10**6``) is counted from memory, so the walk costs no more than the objects
    that exist; it gives up as soon as the count passes ``stop`` (the request is refused).
    Under an unsized string dtype (``cast``) a number or an array's item is as wide as
    NumPy writes it (``float64``: 32 characters)."""

    def __init__(self, stop: int, cast: np.dtype[Any] | None = None) -> None:
        self.stop = stop
        self.cast = cast
        self.char = 4 if cast is not None and cast.kind == "U" else 1  # bytes a character
        self.widest = 0
        self.boxed = 0
        self.seen: dict[int, int] = {}

    def count(self, item: Any, depth: int) -> int:
        if isinstance(item, (list, tuple)) and depth < _MAX_DEPTH:
            known = self.seen.get(id(item))
            if known is None:
                known = self.seen[id(item)] = self._children(item, depth)
            return known
        elements, width, sample = _leaf(item)
        if self.cast is not None and sample is None:
            width = max(width, self._cast_width(item))
        if isinstance(item, range) or sample is not None:
            self.boxed += elements
        if sample is not None and depth < _MAX_DEPTH:
            return elements * self.count(sample, depth + 1)  # a sequence: its first item
        self.widest = max(self.widest, width)
        return elements

    def _children(self, items: list[Any] | tuple[Any, ...], depth: int) -> int:
        kinds = set(map(type, items))
        if kinds <= _PLAIN:  # the common case, at C speed
            width = 16 if complex in kinds else 8
            if self.cast is not None and len(items) <= self.stop:
                # NumPy writes a Python number as str() does (each object once: [x] * n)
                distinct = {id(x): x for x in items}.values()
                width = max(width, self.char * max(map(_written, distinct), default=0))
            self.widest = max(self.widest, width)
            return len(items)
        total = 0
        for child in items:
            total += self.count(child, depth + 1)
            if total > self.stop:
                break
        return total

    def _cast_width(self, item: Any) -> int:
        """The bytes of ``item``'s values written as :attr:`cast`'s strings: an array's or a
        NumPy scalar's as its dtype's, a Python number's or a range's as ``str()`` writes
        them (anything else is sized by :func:`_leaf`)."""
        assert self.cast is not None
        char = self.char
        if _is_array(item):
            try:
                return int(cast_dtype(np.dtype(item.dtype), self.cast).itemsize)
            except (TypeError, ValueError):
                return 0
        if isinstance(item, range):
            return char * max([len(str(item[0])), len(str(item[-1]))] if item else [0])
        return char * _written(item) if isinstance(item, (int, float, complex)) else 0


_PLAIN = frozenset({int, float, complex, bool})


def _written(number: Any) -> int:
    """The characters ``str()`` writes for a Python number; an int past Python's limit of
    digits for ``str()`` (4,300: NumPy's conversion then raises) by its bit length.

    >>> _written(-12.5), _written(10**5000)
    (5, 5002)
    """
    try:
        return len(str(number))
    except ValueError:
        return int(number.bit_length() * math.log10(2)) + 2


def _leaf(item: Any) -> tuple[int, int, Any]:
    """(elements, item bytes, first item or None) of one object inside an array-like."""
    if _is_array(item):
        return _array_elements(item), _array_item(item), None
    if isinstance(item, str):
        return 1, 4 * len(item), None
    if isinstance(item, (bytes, bytearray, memoryview)):
        return 1, len(item), None
    if isinstance(item, complex):
        return 1, 16, None
    if isinstance(item, range):
        return len(item), 8, None
    if isinstance(item, (dict, set, frozenset)) or not hasattr(item, "__getitem__"):
        return 1, 8, None
    try:
        length = len(item)
        first = item[0] if length else None
    except Exception:  # not a sequence NumPy can read: one object
        return 1, 8, None
    return (length, 8, first) if length else (0, 8, None)


def _array_elements(x: Any) -> int:
    try:
        return math.prod(int(n) for n in x.shape)
    except (TypeError, ValueError, OverflowError):
        return 1


def _array_item(x: Any) -> int:
    try:
        return int(np.dtype(x.dtype).itemsize)
    except (TypeError, ValueError):
        return 8
