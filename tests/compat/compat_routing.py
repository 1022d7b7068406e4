"""Running other projects' test suites against einstride, without copying them.

A foreign test module (NumPy's ``test_einsum.py``, opt_einsum's ``tests/``) is imported from
the installed package; its tests are re-collected in one of our modules, and while each runs
the names it looks up (``np``, ``contract``, ...) are replaced in *that module's* globals
only (``routes_for``), and parametrized arguments that hold a routed function (NumPy's
``einsum_fn``, opt_einsum's ``contract_fn``) are swapped too (``routed_arguments``).  Nothing
is patched globally: ``numpy.einsum`` stays NumPy's everywhere else.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import opt_einsum
import pytest

import einstride

__all__ = ["RoutedModule", "Routes", "foreign_module", "opt_einsum_routes", "suite_class"]


def foreign_module(name: str) -> types.ModuleType:
    """The installed test module ``name`` (never a copy in this repository); a package
    installed without its tests skips the wrapper module that asks for them."""
    module: types.ModuleType = pytest.importorskip(
        name, reason=f"{name} is not installed (a package built without its tests)"
    )
    return module


class RoutedModule(types.ModuleType):
    """``module`` with some attributes replaced; everything else is the module's own."""

    def __init__(self, module: types.ModuleType, overrides: Mapping[str, Any]) -> None:
        super().__init__(module.__name__, module.__doc__)
        self.__dict__.update(overrides)
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


@dataclass(frozen=True, kw_only=True)
class Routes:
    """What a wrapper module routes: ``globals`` maps a name in the foreign test module to its
    replacement while a test runs; ``arguments`` maps a function object that a test receives
    as a parametrized argument to its replacement."""

    globals: Mapping[str, Any] = field(default_factory=dict)
    arguments: Mapping[Any, Any] = field(default_factory=dict)

    def routed_arguments(self, funcargs: dict[str, Any]) -> dict[str, Any]:
        return {name: self._replacement(value) for name, value in funcargs.items()}

    def _replacement(self, value: Any) -> Any:
        try:
            return self.arguments.get(value, value)
        except TypeError:  # an unhashable argument (an array) is never routed
            return value


def suite_class(name: str, module: types.ModuleType, into: str) -> type:
    """A test class holding every module-level ``test_*`` function of ``module`` as a static
    method, so pytest collects them under ``into`` (our wrapper module) with ids
    ``into::name::test_x[...]``; their globals stay ``module``'s."""
    tests = {
        key: staticmethod(value)
        for key, value in vars(module).items()
        if key.startswith("test_")
        and isinstance(value, types.FunctionType)
        and value.__module__ == module.__name__
    }
    return type(name, (), {**tests, "__module__": into, "__doc__": f"{module.__name__}"})


# -- opt_einsum routed to einstride ----------------------------------------------------------

# opt_einsum keywords that choose *how* to compute, not what: einstride plans on its own
_HOW_KEYWORDS = ("use_blas", "backend")


def routed_contract(*operands: Any, **kwargs: Any) -> Any:
    """``opt_einsum.contract`` as a user who swapped the import gets it:
    ``einstride.contract``, which takes opt_einsum's keywords.  ``memory_limit`` means
    something else in each library (opt_einsum: the largest intermediate the path may
    build, in elements; einstride: the bytes of the call's peak), so it is dropped."""
    kwargs.pop("memory_limit", None)
    return einstride.contract(*operands, **kwargs)


def routed_contract_expression(*args: Any, **kwargs: Any) -> Any:
    """``opt_einsum.contract_expression`` -> ``einstride.contract_expression``."""
    for key in (*_HOW_KEYWORDS, "memory_limit"):
        kwargs.pop(key, None)
    return einstride.contract_expression(*args, **kwargs)


def backend_contract(*operands: Any, **kwargs: Any) -> Any:
    """``opt_einsum.contract(..., backend="einstride")`` unless the test names a backend."""
    kwargs.setdefault("backend", "einstride")
    return opt_einsum.contract(*operands, **kwargs)


@dataclass(frozen=True)
class BackendExpression:
    """An opt_einsum ``ContractExpression`` whose calls default to ``backend="einstride"``."""

    expression: Any

    def __call__(self, *arrays: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("backend", "einstride")
        return self.expression(*arrays, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.expression, name)

    def __repr__(self) -> str:
        return repr(self.expression)

    def __str__(self) -> str:
        return str(self.expression)


def backend_contract_expression(*args: Any, **kwargs: Any) -> BackendExpression:
    return BackendExpression(opt_einsum.contract_expression(*args, **kwargs))


def opt_einsum_routes(kind: str) -> Routes:
    """The routes of opt_einsum's tests: ``"routed"`` (contract -> einstride.einsum) or
    ``"backend"`` (contract(..., backend="einstride"))."""
    contract: Callable[..., Any]
    expression: Callable[..., Any]
    if kind == "routed":
        contract, expression = routed_contract, routed_contract_expression
    else:
        contract, expression = backend_contract, backend_contract_expression
    overrides = {"contract": contract, "contract_expression": expression}
    return Routes(
        globals={**overrides, "oe": RoutedModule(opt_einsum, overrides)},
        arguments={opt_einsum.contract: contract},
    )
