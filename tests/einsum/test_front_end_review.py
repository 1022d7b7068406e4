"""The drop-in review's front-end findings: ``out=`` joins the operands' promotion all at
once as NumPy's ``result_type(*operands, out)`` (in two steps, uint8 and int8 with a
float16 ``out`` computed in float32, and ``casting="safe"`` refused the ``out``), a
``None`` output sublist is refused as NumPy refuses it (it ran in implicit mode), and an
array given as ``order=`` or ``casting=`` is a ``TypeError`` naming the keyword (NumPy's
bare "truth value of an array" ``ValueError`` escaped)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import einstride as es

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
OUTS = [np.float16, np.float32, np.float64, np.complex64, np.int16, np.int64, np.uint64]


@pytest.mark.parametrize("left", INTS[:4])
@pytest.mark.parametrize("right", INTS)
@pytest.mark.parametrize("out_dtype", OUTS)
def test_out_joins_the_promotion_as_numpy_does(left: Any, right: Any, out_dtype: Any) -> None:
    a = np.array([[3, 1], [2, 4]], left)
    b = np.array([[1, 2], [3, 1]], right)
    expected = np.zeros((2, 2), out_dtype)
    try:
        np.einsum("ij,jk->ik", a, b, out=expected, casting="safe")
    except TypeError:
        with pytest.raises(TypeError):
            es.einsum("ij,jk->ik", a, b, out=np.zeros((2, 2), out_dtype), casting="safe")
        return
    out = np.zeros((2, 2), out_dtype)
    assert es.einsum("ij,jk->ik", a, b, out=out, casting="safe") is out
    np.testing.assert_array_equal(out, expected)


def test_the_computation_dtype_with_out_is_numpys() -> None:
    a = np.array([[200, 3], [4, 5]], np.uint8)
    b = np.array([[-100, 2], [3, 4]], np.int8)
    out = np.zeros((2, 2), np.float16)
    es.einsum("ij,jk->ik", a, b, out=out, casting="safe")
    report = es.explain("ij,jk->ik", a, b, out=np.zeros((2, 2), np.float16), casting="safe")
    # float16 is the result's dtype (its products run in float32, as every small float's)
    assert "  result:    (2, 2) float16 (written into out=); computed in float32" in report
    np.testing.assert_array_equal(out, np.einsum("ij,jk->ik", a, b, out=np.zeros_like(out)))


def test_a_none_output_sublist_is_refused_as_numpy_refuses_it() -> None:
    a = np.ones((2, 3))
    with pytest.raises(TypeError):
        np.einsum(a, [0, 1], None)
    with pytest.raises(es.EinsumTypeError, match=r"the output sublist .* got None"):
        es.einsum(a, [0, 1], None)
    assert es.einsum(a, [0, 1]).shape == (2, 3)  # (left out: the implicit output)


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("order", np.array(["C", "F"])),
        ("order", np.array("C")),
        ("casting", np.array(["safe"])),
        ("casting", np.array(["safe", "no"])),
        ("casting", 3),
    ],
)
def test_an_array_as_order_or_casting_is_a_type_error_naming_it(keyword: str, value: Any) -> None:
    a = np.ones((2, 3))
    with pytest.raises(es.EinsumTypeError, match=f"einsum: {keyword} must be one of"):
        es.einsum("ij->ji", a, **{keyword: value})


def test_string_subclasses_stay_accepted() -> None:
    a = np.ones((2, 3))
    assert es.einsum("ij->ji", a, order=np.str_("f")).flags.f_contiguous
    assert es.einsum("ij->ji", a, casting=np.str_("safe")).shape == (3, 2)


@pytest.mark.parametrize("value", [np.array([1, 2]), np.array(["64MiB", "x"]), 1.5, [1000]])
def test_memory_limit_of_no_int_is_a_type_error_naming_it(value: Any) -> None:
    # (an array of several raised NumPy's bare "only 0-dimensional arrays" TypeError)
    a = np.ones((2, 2))
    for call in (es.einsum, es.explain, es.contract):
        with pytest.raises(es.EinsumTypeError, match="memory_limit must be an int"):
            call("ij,jk->ik", a, a, memory_limit=value)
    assert es.einsum("ij,jk->ik", a, a, memory_limit=np.array(10**6)).shape == (2, 2)
