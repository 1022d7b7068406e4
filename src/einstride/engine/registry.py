"""The backend registry: which backend runs a call, chosen by the operands' array type.

The NumPy backend is the default.  Every other backend claims a call only when one of its
operands is of its array type, and that type is looked up in ``sys.modules`` (the einops
idea): a library the user has not imported is never imported here, and asking costs a
dictionary lookup.  A backend's module is imported the first time it claims a call.

A backend is a module with two functions over an :class:`~.call.EinsumCall`:
``einsum(call)`` (the result, in the backend's array type) and ``explain(call)`` (the plan
report).  Adding one is a folder under ``engine/backends/`` plus one :class:`BackendEntry`
line in :data:`BACKENDS` (see docs/architecture.md).

>>> import numpy as np
>>> backend_for([np.ones(2), 3.0]).__name__
'einstride.engine.backends.numpy'
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from .call import EinsumCall

__all__ = [
    "BACKENDS",
    "HOT_PATHS",
    "LANE_REPORTS",
    "Backend",
    "BackendEntry",
    "HotPath",
    "LaneReport",
    "backend_for",
    "backend_named",
]

HotPath = Callable[[str, tuple[Any, ...], Any], Any]
"""``hot(subscripts, operands, optimize)``: a loaded backend's shortcut for a plain call
(no ``out=``, ``dtype=``, ``memory_limit=``, ``casting=``, ``order``): the result, or None
when the call needs the full path (which then runs it and raises what it raises)."""

HOT_PATHS: dict[type, HotPath] = {}
"""The hot path of each loaded backend, by the exact type of the first operand (a backend
adds its own when it is imported; the front end asks with one dictionary lookup)."""

LaneReport = Callable[[str, tuple[Any, ...]], "str | None"]
"""``lane_report(subscripts, operands)``: how a loaded backend's lane would run the call (a
sentence, computing nothing), or None when the call takes the planned way."""

LANE_REPORTS: dict[type, LaneReport] = {}
"""Each loaded backend's :data:`LaneReport`, by the exact type of the first operand
(``explain`` asks it after the NumPy lanes)."""


class Backend(Protocol):
    """What the front end calls (a backend module satisfies it with its functions:
    ``cast_like`` puts an ``einsum_vjp`` gradient in its operand's dtype; ``einsum_path``,
    the path the backend runs and its report, is asked only of backends other than NumPy's,
    whose is the front end's own (it also takes shapes))."""

    __name__: str

    def einsum(self, call: EinsumCall) -> Any: ...

    def explain(self, call: EinsumCall) -> str: ...

    def cast_like(self, grad: Any, like: Any) -> Any: ...

    def einsum_path(self, call: EinsumCall) -> tuple[list[tuple[int, ...]], str]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendEntry:
    """A backend: its ``module``, claiming operands of type ``array_module.array_type``."""

    name: str
    module: str
    array_module: str
    array_type: str

    def claims(self, operands: Sequence[Any]) -> bool:
        """Whether an operand is of this backend's type (never imports its library)."""
        library = sys.modules.get(self.array_module)
        if library is None:
            return False
        kind = getattr(library, self.array_type, None)
        return kind is not None and any(isinstance(x, kind) for x in operands)


DEFAULT = "einstride.engine.backends.numpy"

BACKENDS: tuple[BackendEntry, ...] = (
    BackendEntry(
        name="dask",
        module="einstride.engine.backends.dask",
        array_module="dask.array",
        array_type="Array",
    ),
    BackendEntry(
        name="torch",
        module="einstride.engine.backends.torch",
        array_module="torch",
        array_type="Tensor",
    ),
)
"""The registered backends besides NumPy, asked in this order."""


def backend_named(module: str) -> Backend:
    """A backend module by its dotted name (imported on first use)."""
    return cast(Backend, importlib.import_module(module))


def backend_for(operands: Sequence[Any]) -> Backend:
    """The backend of the first entry that claims ``operands``, else NumPy's."""
    for entry in BACKENDS:
        if entry.claims(operands):
            return backend_named(entry.module)
    return backend_named(DEFAULT)
