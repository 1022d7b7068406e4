"""Where a view's elements live in memory, in bytes: the facts the overlap rules are made of.

A Tensor and a NumPy array viewing the same buffer are judged alike, by address, so the rules
hold across both kinds (and for NumPy views that no Tensor can express, such as reversed ones).

>>> import numpy as np
>>> storage = np.arange(6)
>>> Footprint.of(storage[1:5]).is_dense, Footprint.of(storage[::2]).is_dense
(True, False)
>>> Footprint.of(storage[:3]).same_view(Footprint.of(storage.reshape(2, 3)[0]))
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .layout import Layout
from .strides import ByteView
from .tensors import as_array

__all__ = ["Footprint"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Footprint(ByteView):
    """A view's :class:`~einstride.strides.ByteView` with its ``address`` (the byte address of
    logical element 0; it means nothing for a view without elements), and the overlap facts
    read from it.  ``size``, ``is_dense`` and ``same_view`` are the view's.

    >>> import numpy as np
    >>> Footprint.of(np.zeros((2, 3)).T).is_dense, Footprint.of(np.zeros((0, 3))).is_dense
    (False, True)
    >>> a = np.arange(6)
    >>> Footprint.of(a[None, :]).same_view(Footprint.of(a)), Footprint.of(a[1:]).same_view(
    ...     Footprint.of(a[:-1]))
    (True, False)
    """

    address: int

    @classmethod
    def of(cls, x: Any) -> Footprint:
        """The footprint of a Tensor (its ndarray view) or of an array."""
        arr = as_array(x)
        address: int = arr.__array_interface__["data"][0]
        return cls(
            shape=tuple(arr.shape),
            strides=tuple(arr.strides),
            itemsize=arr.dtype.itemsize,
            address=address,
        )

    @property
    def has_repeated_locations(self) -> bool:
        """Whether two logical elements share a byte (exact; a partial overlap counts).

        Each element is widened into an axis of ``itemsize`` one-byte positions, so the byte-level
        question becomes ``Layout.has_repeated_locations``; reflecting an axis (a negative
        stride) permutes positions without changing whether two of them coincide.

        >>> import numpy as np
        >>> Footprint.of(np.broadcast_to(np.arange(3), (2, 3))).has_repeated_locations
        True
        >>> Footprint.of(np.arange(6)[::-2]).has_repeated_locations
        False
        """
        if self.size <= 1:
            return False
        widened = Layout((*self.shape, self.itemsize), (*(abs(s) for s in self.strides), 1), 0)
        return widened.has_repeated_locations

    def changes_under_reversal(self, axes: tuple[int, ...]) -> bool:
        """Whether reversing ``axes`` moves any value: not when each of them has length <= 1 or
        a zero stride (every position along it holds the same element).

        >>> import numpy as np
        >>> Footprint.of(np.broadcast_to(np.arange(3), (4, 3))).changes_under_reversal((0,))
        False
        """
        if self.size == 0:
            return False
        return any(self.shape[a] > 1 and self.strides[a] != 0 for a in axes)
