"""The documented differences from NumPy and opt_einsum, and the foreign tests each one makes
fail.  ``EXPECTED`` maps a test id (``module.py::Class::test[params]``, as collected in
tests/compat) to every difference it hits; conftest.py marks each ``xfail(strict=True)``, so a
test that starts to pass (a difference dropped, a pending feature landed) fails the run until
its entry is removed.

A difference named ``PENDING_*`` is a NumPy/opt_einsum feature einstride does not have *yet*
(the engine front end is being rewritten to add it); the others are deliberate, each a row of
the differences table in docs/einsum.md.
"""

from __future__ import annotations

import enum

__all__ = ["EXPECTED", "TABLE_VERSIONS", "Difference", "reason"]

# The releases whose suites the table was made from: with others, the test ids may differ,
# so an entry naming no test is then reported, not an error.
TABLE_VERSIONS = {
    "test_numpy_einsum.py": ("numpy", "2.4"),
    "test_opt_einsum_backend.py": ("opt_einsum", "3.4"),
    "test_opt_einsum_routed.py": ("opt_einsum", "3.4"),
}


class Difference(enum.Enum):
    """Why einstride's outcome differs from NumPy's or opt_einsum's (the value is the reason
    shown by pytest)."""

    STRICT_SIZES = "strict label sizes: a named label of size 1 never broadcasts (write '...')"
    OBJECT_DTYPE = "object and other non-numeric dtypes raise TypeError"
    OUT_OVERLAP = "an out= that shares memory with an operand is a LayoutError"
    REPEATED_OUTPUT = "a repeated output label is diagonal expansion, not an error"
    SUBLIST_LABELS = "sublist labels are any int >= 0, not only 0-51"
    SUBLIST_OBJECTS = "sublist labels are ints (opt_einsum: any hashable object)"
    RANK0_SCALAR = "a rank-0 result is a NumPy scalar (numpy.einsum(optimize=True): a 0-d array)"
    REPORT_TEXT = "einsum_path's report is einstride's plan report, not NumPy's table"
    PATHS = "paths come from opt_einsum's finders, without NumPy's memory cap"
    MESSAGE_TEXT = "error messages are einstride's own (equation, operand, label, sizes)"
    OE_KEYWORDS = "opt_einsum's constants=/shapes= are not einstride's (use backend='einstride')"
    OPTIMIZER_ERROR = "an unknown optimize= name is an EinsumError (opt_einsum: KeyError)"
    PENDING_ORDER = "pending: order="
    DEFAULT_CASTING = (
        "without casting=, dtype= casts unsafely and out= takes same_kind "
        "(NumPy's default: casting='safe')"
    )
    PENDING_OPTIMIZE_TUPLE = "pending: optimize=(name, memory_limit)"
    PENDING_OPTIMIZE_FALSE = "pending: optimize=False's plan (NumPy: one loop, path (0, ..., n-1))"
    PENDING_EXCEPTION_CLASS = "pending: exception classes that are also NumPy's class"
    PENDING_EXPRESSION_INTERLEAVED = "pending: contract_expression interleaved form"
    PENDING_EXPRESSION_CHECKS = "pending: contract_expression refuses optimize=False and out="

    @property
    def pending(self) -> bool:
        return self.name.startswith("PENDING_")


D = Difference

_NUMPY_SUMS = [
    f"TestEinsum::test_einsum_sums_{kind}"
    for kind in (
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "float16",
        "float32",
        "float64",
        "longdouble",
        "cfloat64",
        "cfloat128",
        "clongdouble",
    )
]

_NUMPY: dict[str, tuple[Difference, ...]] = {
    **{
        f"TestEinsum::test_einsum_errors[{fn}-{opt}]": (
            D.REPEATED_OUTPUT,
            D.PENDING_EXCEPTION_CLASS,
            D.DEFAULT_CASTING,
        )
        for fn in ("einsum", "einsum_path")
        for opt in (True, False)
    },
    "TestEinsum::test_einsum_sorting_behavior": (D.REPORT_TEXT,),
    "TestEinsum::test_einsum_object_errors": (D.OBJECT_DTYPE,),
    **{name: (D.STRICT_SIZES, D.DEFAULT_CASTING) for name in _NUMPY_SUMS},
    "TestEinsum::test_einsum_sums_object": (D.OBJECT_DTYPE, D.STRICT_SIZES, D.DEFAULT_CASTING),
    "TestEinsum::test_einsum_0d_out": (D.DEFAULT_CASTING,),
    "TestEinsum::test_object_loop": (D.OBJECT_DTYPE,),
    "TestEinsum::test_subscript_range": (D.SUBLIST_LABELS,),
    "TestEinsum::test_out_is_res": (D.OUT_OVERLAP,),
    "TestEinsum::test_broadcasting_dot_cases": (D.STRICT_SIZES,),
    "TestEinsum::test_singleton_broadcasting": (D.STRICT_SIZES,),
    "TestEinsumPath::test_long_paths": (D.PATHS,),
    "TestEinsumPath::test_edge_paths": (D.PATHS,),
    "TestModuleLevel::test_overlap": (D.OUT_OVERLAP,),
}

_OPT_EINSUM_BOTH: dict[str, tuple[Difference, ...]] = {
    "TestEdgeCases::test_broadcasting_contraction": (D.STRICT_SIZES,),
    "TestEdgeCases::test_broadcasting_contraction2": (D.STRICT_SIZES,),
    "TestEdgeCases::test_broadcasting_contraction3": (D.STRICT_SIZES,),
    "TestInput::test_singleton_dimension_broadcast": (D.STRICT_SIZES,),
}

_OPT_EINSUM_BACKEND: dict[str, tuple[Difference, ...]] = {
    **_OPT_EINSUM_BOTH,
}

_OPT_EINSUM_ROUTED: dict[str, tuple[Difference, ...]] = {
    **_OPT_EINSUM_BOTH,
    **{
        f"TestContract::test_contract_expression_with_constants[{case}]": (D.OE_KEYWORDS,)
        for case in (
            "hbc,bdef,cdkj,ji,ikeh,lfo-constants0",
            "bdef,cdkj,ji,ikeh,hbc,lfo-constants1",
            "hbc,bdef,cdkj,ji,ikeh,lfo-constants2",
            "hbc,bdef,cdkj,ji,ikeh,lfo-constants3",
            "ijab,acd,bce,df,ef->ji-constants4",
            "ab,cd,ad,cb-constants5",
            "ab,bc,cd-constants6",
        )
    },
    "TestEdgeCases::test_contract_expression_checks": (D.MESSAGE_TEXT, D.PENDING_EXPRESSION_CHECKS),
    "TestEdgeCases::test_can_blas_on_healed_broadcast_dimensions": (D.STRICT_SIZES,),
    "TestInput::test_value_errors[contract]": (D.REPEATED_OUTPUT, D.PENDING_EXCEPTION_CLASS),
    "TestInput::test_hashable_object_input_format": (D.SUBLIST_OBJECTS,),
    "TestPaths::test_bad_path_option": (D.OE_KEYWORDS, D.OPTIMIZER_ERROR),
}

EXPECTED: dict[str, tuple[Difference, ...]] = {
    **{f"test_numpy_einsum.py::{test}": why for test, why in _NUMPY.items()},
    **{f"test_opt_einsum_backend.py::{test}": why for test, why in _OPT_EINSUM_BACKEND.items()},
    **{f"test_opt_einsum_routed.py::{test}": why for test, why in _OPT_EINSUM_ROUTED.items()},
}


def reason(differences: tuple[Difference, ...]) -> str:
    """The xfail reason: every difference the test hits, deliberate ones first."""
    ordered = sorted(differences, key=lambda d: (d.pending, d.name))
    return "; ".join(d.value for d in ordered)
