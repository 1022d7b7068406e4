"""The einsum engine: one front end, a shared spec layer, backends behind a registry.

Data flows one way (see docs/architecture.md):

* :mod:`.spec` parses equations into an :class:`EinsumSpec` (integer label ids) and walks
  contraction paths; it knows no backend;
* :mod:`.call` normalizes a call (operands, sublists, ``out=``, ``dtype=``, ``optimize=``,
  ``memory_limit=``) once; :mod:`.api`, :mod:`.expression` and :mod:`.grad` are the public
  functions over it;
* :mod:`.backends` holds the backends (NumPy, the default; Dask, claimed lazily) behind
  :mod:`.registry`.
"""

from .api import einsum, einsum_path, explain
from .backends.numpy.cache import clear_plan_cache, plan_cache_info
from .backends.numpy.steps import Plan
from .backends.numpy.threads import num_threads, set_num_threads
from .expression import Expression, contract_expression
from .grad import einsum_vjp
from .spec.equation import EinsumSpec, Equation, parse_equation

__all__ = [
    "EinsumSpec",
    "Equation",
    "Expression",
    "Plan",
    "clear_plan_cache",
    "contract_expression",
    "einsum",
    "einsum_path",
    "einsum_vjp",
    "explain",
    "num_threads",
    "parse_equation",
    "plan_cache_info",
    "set_num_threads",
]
