"""NumPy's own ``numpy/_core/tests/test_einsum.py`` (from the installed NumPy) with
``np.einsum`` and ``np.einsum_path`` routed to einstride inside that module only.  The tests
that fail by design are listed in compat_expected.py (strict xfail).
"""

from __future__ import annotations

import numpy as np

import einstride

from .compat_routing import RoutedModule, Routes, foreign_module, suite_class

numpy_suite = foreign_module("numpy._core.tests.test_einsum")

_routed = {"einsum": einstride.einsum, "einsum_path": einstride.einsum_path}
ROUTES = Routes(
    globals={"np": RoutedModule(np, _routed)},
    arguments={np.einsum: einstride.einsum, np.einsum_path: einstride.einsum_path},
)

TestEinsum = numpy_suite.TestEinsum
TestEinsumPath = numpy_suite.TestEinsumPath
TestModuleLevel = suite_class("TestModuleLevel", numpy_suite, __name__)
