"""einsum on Dask arrays, the public facade of the Dask backend (``einstride[dask]``).

``einstride.einsum`` already runs on ``dask.array.Array`` operands (the Dask backend claims
them once ``dask.array`` is imported); this module adds what only Dask users need: the plan
report of a lazy einsum, ``.npy`` readers, and the per-task memory budget.  Importing it
imports Dask.  See docs/scaling.md.

>>> import numpy as np, dask.array as da
>>> from einstride import dask as esd
>>> print(esd.explain("ij,jk->ik", da.ones((6, 4), chunks=3), np.ones((4, 5))).splitlines()[0])
einsum 'ij,jk->ik' on Dask  (labels: ij,jk->ik)
"""

from __future__ import annotations

from .engine.backends.dask.backend import (
    CONFIG_KEY,
    DaskEinsum,
    explain,
    plan_dask,
    task_memory_budget,
)
from .engine.backends.dask.sources import from_npy

__all__ = ["CONFIG_KEY", "DaskEinsum", "explain", "from_npy", "plan_dask", "task_memory_budget"]
