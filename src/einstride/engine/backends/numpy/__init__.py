"""The NumPy backend (the default): plans over strided views, run through BLAS and NumPy's
sum-of-products loop.

* :mod:`.fold` and :mod:`.pairs`: layout facts (folding label groups, BLAS-ready views) and
  the choice of views or copies for one product;
* :mod:`.plan` turns a spec and the operands' layouts into an immutable :class:`.steps.Plan`;
* :mod:`.execute` compiles a plan into one callable; :mod:`.report` prints it;
* :mod:`.cache` keeps plans and programs; :mod:`.threads` splits large memory-bound steps;
* :mod:`.backend` is the entry the registry calls (``einsum(call)``, ``explain(call)``,
  ``cast_like(grad, operand)`` for ``einsum_vjp``).
"""

from .backend import cast_like, einsum, explain

__all__ = ["cast_like", "einsum", "explain"]
