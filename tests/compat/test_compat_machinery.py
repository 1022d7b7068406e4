"""The comparison and routing machinery of tests/compat can fail: a wrong value, dtype, shape,
result kind or exception class is an unexplained disagreement, and routing never leaks out
of the foreign test module."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest

import einstride as es

from .compat_calls import CallLedger, Outcome, builtin_class, compared
from .compat_expected import EXPECTED, Difference

A = np.arange(6.0).reshape(2, 3)


def _record(mine, theirs, *args, function="einsum", **kwargs):
    ledger = CallLedger()
    ledger.record(function, args or ("ij->i", A), kwargs, mine, theirs)
    return ledger


@pytest.mark.parametrize(
    "wrong",
    [
        A.sum(1) + 1e-6,  # value
        A.sum(1).astype(np.float32),  # dtype
        A.sum(1)[None],  # shape
        np.float64(3.0),  # kind and shape
    ],
)
def test_a_wrong_result_is_unexplained(wrong):
    ledger = _record(Outcome(value=wrong), Outcome(value=A.sum(1)))
    assert len(ledger.unexplained) == 1 and ledger.agreed == 0


def test_a_0d_array_for_numpys_scalar_is_unexplained():
    ledger = _record(Outcome(value=np.asarray(3.0)), Outcome(value=np.float64(3.0)))
    assert ledger.unexplained
    ledger = _record(Outcome(value=np.float64(3.0)), Outcome(value=np.asarray(3.0)))
    assert ledger.differences == {Difference.RANK0_SCALAR: 1}


def test_agreement_and_tolerance():
    assert _record(Outcome(value=A.sum(1) * (1 + 1e-14)), Outcome(value=A.sum(1))).agreed == 1
    half = np.array([1.0, 2.0], np.float16)
    assert _record(Outcome(value=half + np.float16(0.001)), Outcome(value=half)).agreed == 1


def test_exception_classes():
    # an EinsumError is a ValueError, so `except ValueError` code keeps working: agreement
    assert _record(Outcome(error=es.EinsumError("x")), Outcome(error=ValueError("y"))).agreed == 1
    # NumPy's private subclasses count as their built-in base
    numpy_error = np.exceptions.AxisError(1, 1)
    assert builtin_class(type(numpy_error)) is ValueError
    # a different class is the pending difference, an error for a success is unexplained
    differs = _record(Outcome(error=es.EinsumError("x")), Outcome(error=TypeError("y")))
    assert differs.differences == {Difference.PENDING_EXCEPTION_CLASS: 1}
    assert _record(Outcome(error=TypeError("x")), Outcome(value=A)).unexplained


def test_documented_differences_are_recognized():
    strict = es.EinsumError("... (named labels never broadcast; write '...')")
    ledger = _record(Outcome(error=strict), Outcome(value=A))
    assert ledger.differences == {Difference.STRICT_SIZES: 1}
    ledger = _record(
        Outcome(value=np.eye(3)), Outcome(error=ValueError("repeated")), "i->ii", np.ones(3)
    )
    assert ledger.differences == {Difference.REPEATED_OUTPUT: 1}
    ledger = _record(
        Outcome(error=TypeError("einsum() got an unexpected keyword 'order'")),
        Outcome(value=A),
        "ij->ij",
        A,
        order="F",
    )
    assert ledger.differences == {Difference.PENDING_ORDER: 1}


def test_compared_returns_numpys_result_and_restores_out():
    ledger = CallLedger()

    def sabotaged(*args, out=None, **kwargs):
        out[...] = -1  # writes, then reports a wrong value
        return out

    call = compared("einsum", np.einsum, sabotaged, ledger)
    out = np.zeros(2)
    result = call("ij->i", A, out=out)
    assert result is out and np.array_equal(out, A.sum(1))
    assert len(ledger.unexplained) == 1 and ledger.total == 1


def test_routing_does_not_leak():
    """Outside a routed test, the foreign modules see the real functions."""
    import opt_einsum.tests.test_contract as oe_suite
    from numpy._core.tests import test_einsum as numpy_suite

    assert numpy_suite.np is np and np.einsum.__module__.startswith("numpy")
    assert oe_suite.contract is opt_einsum.contract


def test_expected_entries_name_their_differences():
    for key, differences in EXPECTED.items():
        assert key.count("::") >= 2 and differences, key
        assert all(isinstance(d, Difference) for d in differences), key
