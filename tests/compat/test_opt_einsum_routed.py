"""opt_einsum's own tests (from the installed opt_einsum: test_contract, test_edge_cases,
test_input, test_blas, test_paths) with ``contract`` and ``contract_expression``
routed to einstride (a user who swapped the import: ``einstride.einsum`` and
``einstride.contract_expression``, opt_einsum's how-to-compute keywords dropped).
The tests that fail by design are listed in compat_expected.py (strict xfail).
"""

from __future__ import annotations

from .compat_routing import foreign_module, opt_einsum_routes, suite_class

ROUTES = opt_einsum_routes("routed")
# test_contract has 7,482 cases (equations x path finders): `make test` runs a stable sixteenth
SAMPLE_EVERY = {"TestContract": 16}

TestContract = suite_class(
    "TestContract", foreign_module("opt_einsum.tests.test_contract"), __name__
)
TestEdgeCases = suite_class(
    "TestEdgeCases", foreign_module("opt_einsum.tests.test_edge_cases"), __name__
)
TestInput = suite_class("TestInput", foreign_module("opt_einsum.tests.test_input"), __name__)
TestBlas = suite_class("TestBlas", foreign_module("opt_einsum.tests.test_blas"), __name__)
TestPaths = suite_class("TestPaths", foreign_module("opt_einsum.tests.test_paths"), __name__)
