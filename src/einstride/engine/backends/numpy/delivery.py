"""How a step delivers its result, and how the plan creates the output: one vocabulary for
the planner, the steps, the executor and the report.

>>> d = DeliveryPlan(mode=Delivery.TEMP, dest_perm=(1, 0),
...                  allocs=(Alloc(what="temporary", shape=(2, 3), dtype=np.dtype("f4")),))
>>> d.mode.value, d.allocs[0].nbytes
('temp', 24)
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Alloc", "Delivery", "DeliveryPlan", "OutputCreation"]


class Delivery(enum.Enum):
    """Where a step's kernel writes."""

    NEW = "new"
    """Into a C-ordered buffer in the register's label order (an intermediate)."""
    RETURN = "return"
    """Into a new array (or a view) that is the einsum result."""
    INTO = "into"
    """Straight into the destination (``out=``, or the output the plan allocates), through
    the write view transposed by ``dest_perm``."""
    TEMP = "temp"
    """Into a new temporary, then copied (cast) into the destination."""


class OutputCreation(enum.Enum):
    """How the output array comes to be before the steps run."""

    NONE = "none"
    """Not at all: a step's register (viewed through ``final_perm``) is the result."""
    OUT = "out"
    """The caller's ``out=`` (zeroed first when output labels repeat)."""
    ZEROS = "zeros"
    """A zeroed array: output labels repeat and the steps write its diagonal view."""
    EMPTY = "empty"
    """An empty array the last step writes into."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Alloc:
    """One allocation: ``what`` it holds, its shape and dtype, and the label of each axis
    (so that its bytes can be told for other sizes: :meth:`nbytes_at`)."""

    what: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    labels: tuple[int, ...] = ()

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for d in self.shape:
            n *= d
        return n

    def nbytes_at(self, sizes: Sequence[int] | None) -> int:
        """The bytes for the label ``sizes`` (None: its own).

        >>> alloc = Alloc(what="output", shape=(2, 3), dtype=np.dtype("f8"), labels=(0, 1))
        >>> alloc.nbytes_at((5, 7))
        280
        """
        if sizes is None:
            return self.nbytes
        n = self.dtype.itemsize
        for label in self.labels:
            n *= sizes[label]
        return n


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryPlan:
    """A step's write, decided once by the planner: the ``mode``, the destination's axes per
    axis of the step's register (``INTO``/``TEMP``), what the step allocates and a ``note``
    for the report; ``rounded_to`` (``TEMP``): the dtype the values pass through on their
    way into the output (a small-float ``dtype=`` computed in float32, cast into a wider
    ``out=``: rounded to ``dtype=`` first, as NumPy computes in it)."""

    mode: Delivery
    dest_perm: tuple[int, ...] = ()
    allocs: tuple[Alloc, ...] = ()
    note: str = ""
    rounded_to: np.dtype[Any] | None = None
