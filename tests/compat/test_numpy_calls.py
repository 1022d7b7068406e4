"""Call by call: NumPy's own einsum suite runs as it does natively (NumPy's results), while
every ``einsum``/``einsum_path`` call it makes also runs through einstride; a test during
which einstride disagrees with NumPy (value, dtype, shape, result kind, exception class)
without a documented difference fails (compat_calls.py), and the counts per kind are printed
at the end of the run.
"""

from __future__ import annotations

import numpy as np

import einstride

from .compat_calls import NUMPY_CALLS, compared
from .compat_routing import RoutedModule, Routes, foreign_module, suite_class

numpy_suite = foreign_module("numpy._core.tests.test_einsum")

_einsum = compared("einsum", np.einsum, einstride.einsum, NUMPY_CALLS)
_einsum_path = compared("einsum_path", np.einsum_path, einstride.einsum_path, NUMPY_CALLS)

ROUTES = Routes(
    globals={"np": RoutedModule(np, {"einsum": _einsum, "einsum_path": _einsum_path})},
    arguments={np.einsum: _einsum, np.einsum_path: _einsum_path},
)

TestEinsum = numpy_suite.TestEinsum
TestEinsumPath = numpy_suite.TestEinsumPath
TestModuleLevel = suite_class("TestModuleLevel", numpy_suite, __name__)
