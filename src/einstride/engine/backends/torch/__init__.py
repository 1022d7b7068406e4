"""The torch backend: einstride's plans on ``torch.Tensor`` operands, with autograd, on any
device (see docs/torch.md).  The registry claims a call for it only when torch is already
imported and an operand is a ``torch.Tensor``.

* :mod:`.dtypes`: torch dtypes as the planner sees them, and torch's result-type rule;
* :mod:`.operands`: conversion onto one device, the plan-cache facts, ``out=`` checks and
  the exact overlap test;
* :mod:`.records`: the adapter, the one module that reads the NumPy planner's records, and
  the torch records it makes of them;
* :mod:`.plan`: the NumPy planner on the tensors' layouts, cached; :mod:`.execute` runs the
  records with torch ops over views;
* :mod:`.autograd`: the ``torch.autograd.Function`` whose backward is einstride;
  :mod:`.guard`: the memory limit (free device memory on CUDA); :mod:`.report`: explain;
* :mod:`.backend`: the registry's entry points.
"""

from .backend import cast_like, einsum, einsum_path, explain

__all__ = ["cast_like", "einsum", "einsum_path", "explain"]
