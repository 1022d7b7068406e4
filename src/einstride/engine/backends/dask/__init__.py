"""The Dask backend: einsum on ``dask.array.Array`` operands as a lazy blockwise graph that
follows the shared path walk, each block run by the NumPy backend (see docs/scaling.md).

* :mod:`.plan` (no Dask import): the blockwise steps and one chunk size per label within a
  per-task memory budget;
* :mod:`.backend`: the Dask graph, and the registry's entry points;
* :mod:`.report`: the plan report; :mod:`.sources`: ``.npy`` readers and memmaps.

The public facade is :mod:`einstride.dask`.
"""

from ..numpy.backend import cast_like  # Dask arrays take NumPy's .real and .astype, lazily
from .backend import einsum, einsum_path
from .backend import explain_call as explain

__all__ = ["cast_like", "einsum", "einsum_path", "explain"]
