"""The contenders: the engine under test (the subject) and its peers.

Every contender is a ``Prepare``: given a case and its operands it returns the call to
time (or raises ``Skip``). Setup that a user would do once (importing, wrapping arrays
as torch tensors without a copy, building an expression) happens in ``prepare``, outside
the timed call. The subject is loaded lazily, so the harness runs (and is tested) with
any engine that has einstride's ``einsum`` and ``contract_expression`` signatures.

>>> from einstride_bench.case import dense
>>> engine = Engine("stand-in", opt_einsum.contract, opt_einsum.contract_expression)
>>> case = Case("mm", "ij,jk->ik", dense(np.float64, [(2, 3), (3, 4)]))
>>> ops = case.operands(quick=False)
>>> np.allclose(subject(engine)(case, ops)(), ops[0] @ ops[1])
True
>>> sorted(default_peers(optional=False))
['numpy.einsum', 'numpy.einsum(optimize)', 'opt_einsum']
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .case import Case, Operands, Prepare, Skip, Thunk

__all__ = [
    "MATMUL",
    "NAIVE_LIMIT",
    "NUMPY",
    "NUMPY_OPT",
    "OPT_EINSUM",
    "PYTBLIS",
    "TORCH",
    "Engine",
    "default_peers",
    "load_einstride",
    "naive_size",
    "optional_module",
    "path_flops",
    "stand_in",
    "subject",
]

# opt_einsum ships no type information; bound as Any so that mypy --strict accepts it
opt_einsum: Any = importlib.import_module("opt_einsum")

NUMPY = "numpy.einsum"
NUMPY_OPT = "numpy.einsum(optimize)"
OPT_EINSUM = "opt_einsum"
TORCH = "torch.einsum"
PYTBLIS = "pytblis.einsum"
MATMUL = "numpy.matmul"

# numpy.einsum(optimize=False) runs one nested loop over every label; past this many
# iterations a single call takes a second or more (its two-operand loop is vectorized
# and much faster per iteration), so that peer sits the case out.
NAIVE_LIMIT = 200_000_000
NAIVE_LIMIT_TWO_OPERANDS = 2_000_000_000


@dataclass(frozen=True)
class Engine:
    """The callables under test, with einstride's signatures.

    ``einsum(equation, *operands)`` and ``contract_expression(equation, *shapes)``
    (the latter returning a callable taking the operands).
    """

    name: str
    einsum: Callable[..., Any]
    contract_expression: Callable[..., Any]
    stand_in: bool = False  # True when this is not einstride, only something in its place


def load_einstride() -> Engine:
    """einstride's own engine; ``ImportError`` when this build does not have it yet."""
    module = importlib.import_module("einstride")
    einsum = getattr(module, "einsum", None)
    expression = getattr(module, "contract_expression", None)
    if not callable(einsum) or not callable(expression):
        raise ImportError("einstride.einsum / einstride.contract_expression are not in this build")
    return Engine("einstride", einsum, expression)


def stand_in() -> Engine:
    """opt_einsum in einstride's place, for developing the harness before the engine exists.

    >>> stand_in().name
    'opt_einsum (stand-in)'
    """
    return Engine(
        "opt_einsum (stand-in)", opt_einsum.contract, opt_einsum.contract_expression, stand_in=True
    )


def subject(engine: Engine) -> Prepare:
    """The subject's ``prepare``: an expression for expression cases, else ``einsum``."""

    def prepare(case: Case, ops: Operands) -> Thunk:
        if case.kind == "expression":
            expression = engine.contract_expression(case.equation, *(op.shape for op in ops))
            return lambda: expression(*ops)
        return lambda: engine.einsum(case.equation, *ops)

    return prepare


def naive_size(equation: str, ops: Operands) -> int:
    """Iterations of numpy.einsum's unoptimized loop: the product of every label's size.

    >>> naive_size("ij,jk->ik", (np.zeros((2, 3)), np.zeros((3, 4))))
    24
    """
    sizes: dict[str, int] = {}
    for term, op in zip(equation.split("->")[0].split(","), ops):
        sizes.update(zip(term.strip(), op.shape))
    return math.prod(sizes.values())


def path_flops(equation: str, ops: Operands) -> float:
    """Floating-point operations of the greedy contraction path (one per element read
    for a single operand), as opt_einsum counts them.

    >>> path_flops("ij,jk->ik", (np.zeros((2, 3)), np.zeros((3, 4))))
    48.0
    """
    _, info = opt_einsum.contract_path(equation, *ops, optimize="greedy")
    return float(info.naive_cost if len(ops) == 1 else info.opt_cost)


def _library_case(case: Case) -> None:
    if case.kind == "handwritten":
        raise Skip("no library call does this equation; the case has hand-written peers")


def _numpy(optimize: bool) -> Prepare:
    def prepare(case: Case, ops: Operands) -> Thunk:
        _library_case(case)
        size = naive_size(case.equation, ops)
        limit = NAIVE_LIMIT_TWO_OPERANDS if len(ops) <= 2 else NAIVE_LIMIT
        if not optimize and size > limit:
            raise Skip(f"its single nested loop would run {size:.2g} iterations")
        return lambda: np.einsum(case.equation, *ops, optimize=optimize)

    return prepare


def _opt_einsum(case: Case, ops: Operands) -> Thunk:
    _library_case(case)
    if case.kind == "expression":
        expression = opt_einsum.contract_expression(case.equation, *(op.shape for op in ops))
        return lambda: expression(*ops)
    return lambda: opt_einsum.contract(case.equation, *ops)


def _torch(torch: Any) -> Prepare:
    def prepare(case: Case, ops: Operands) -> Thunk:
        _library_case(case)
        try:
            tensors = [torch.from_numpy(op) for op in ops]
        except (ValueError, TypeError) as exc:
            raise Skip(f"torch cannot view these operands: {exc}") from exc
        return lambda: torch.einsum(case.equation, *tensors)

    return prepare


def _pytblis(pytblis: Any) -> Prepare:
    def prepare(case: Case, ops: Operands) -> Thunk:
        _library_case(case)
        return lambda: pytblis.einsum(case.equation, *ops)

    return prepare


def optional_module(name: str) -> Any:
    """The module if it imports, else ``None``.

    >>> optional_module("no_such_module_here") is None
    True
    """
    try:
        return importlib.import_module(name)
    except Exception:  # an optional peer may fail to load in many ways; it just sits out
        return None


def default_peers(optional: bool = True) -> dict[str, Prepare]:
    """NumPy's einsum (unoptimized and optimized), opt_einsum, and torch and pytblis
    when ``optional`` and they are installed."""
    peers: dict[str, Prepare] = {
        NUMPY: _numpy(optimize=False),
        NUMPY_OPT: _numpy(optimize=True),
        OPT_EINSUM: _opt_einsum,
    }
    if optional and (torch := optional_module("torch")) is not None:
        peers[TORCH] = _torch(torch)
    if optional and (pytblis := optional_module("pytblis")) is not None:
        peers[PYTBLIS] = _pytblis(pytblis)
    return peers
