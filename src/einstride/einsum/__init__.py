"""The einsum engine: equation -> spec -> plan -> execution (see docs/einsum.md).

* :mod:`.equation` parses equations into :class:`EinsumSpec` (integer label ids);
* :mod:`.paths` finds contraction paths (opt_einsum);
* :mod:`.plan` turns a spec and the operands' layouts into an immutable :class:`Plan`;
* :mod:`.execute` runs a plan; :mod:`.report` prints it;
* :mod:`.cache` keeps plans and compiled programs; :mod:`.api` holds ``einsum`` and
  ``einsum_path``, :mod:`.expression` ``contract_expression``.
"""

from .api import einsum, einsum_path
from .cache import clear_plan_cache, plan_cache_info
from .equation import EinsumSpec, Equation, parse_equation
from .expression import Expression, contract_expression
from .steps import Plan

__all__ = [
    "EinsumSpec",
    "Equation",
    "Expression",
    "Plan",
    "clear_plan_cache",
    "contract_expression",
    "einsum",
    "einsum_path",
    "parse_equation",
    "plan_cache_info",
]
