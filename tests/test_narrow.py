"""ml_dtypes is imported only when a call needs it (its import is most of a second), and
everything that took its dtypes or their names still does."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import einstride as es
from einstride.engine.spec.dtypes import check_numeric, compute_dtype
from einstride.narrow import as_dtype, bfloat16, is_bfloat16, is_small_float


def _run(code: str) -> str:
    """``code`` in a fresh interpreter (nothing imported yet); its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_and_plain_calls_leave_ml_dtypes_out() -> None:
    out = _run(
        """
        import sys
        import numpy as np
        import einstride as es
        a, b = np.ones((2, 3)), np.ones((3, 4), np.float16)
        es.einsum("ij,jk->ik", a, b)
        es.einsum("ij,jk->ik", a, b, dtype="float32")
        es.contract_expression("ij,jk->ik", (2, 3), (3, 4))(a, np.ones((3, 4)))
        es.explain("ii->i", np.eye(3))
        es.tensor(a).astype("float32").sum()
        print("ml_dtypes" in sys.modules)
        """
    )
    assert out == "False"


def test_ml_dtypes_names_work_without_importing_it_first() -> None:
    out = _run(
        """
        import sys
        import numpy as np
        import einstride as es
        assert "ml_dtypes" not in sys.modules
        a = np.ones((2, 3))
        got = es.einsum("ij,kj->ik", a, a, dtype="bfloat16")
        print(got.dtype, float(got[0, 0]), es.tensor(a).astype("float8_e4m3fn").dtype)
        """
    )
    assert out == "bfloat16 3.0 float8_e4m3fn"


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"])
def test_ml_dtypes_small_floats_accumulate_in_float32(name: str) -> None:
    dtype = np.dtype(getattr(ml_dtypes, name))
    assert is_small_float(dtype) and compute_dtype(dtype) == np.float32
    check_numeric(dtype, "operand 0 has dtype")  # accepted


def test_other_dtypes_are_not_small_floats() -> None:
    others = ["float32", "float64", "int8", "complex64", "V2", [("a", "f2")]]
    assert is_small_float(np.dtype("float16"))
    assert not any(is_small_float(np.dtype(dtype)) for dtype in others)
    with pytest.raises(TypeError, match="not numeric"):
        check_numeric(np.dtype(ml_dtypes.int4), "operand 0 has dtype")


def test_bfloat16_helpers_and_unknown_names() -> None:
    assert bfloat16() == np.dtype(ml_dtypes.bfloat16) and is_bfloat16(bfloat16())
    assert not is_bfloat16(np.dtype(np.float16)) and not is_bfloat16(np.dtype("V2"))
    assert as_dtype("bfloat16") == bfloat16()
    with pytest.raises(TypeError):
        as_dtype("bfloat17")
    with pytest.raises(TypeError, match="dtype='bfloat17'"):
        es.einsum("i->i", np.ones(2), dtype="bfloat17")


@pytest.mark.parametrize("name", ["float8_e5m2", "float8_e4m3fn", "bfloat16"])
def test_views_of_every_small_float_work(name: str) -> None:
    """float8_e5m2 exports the type string '<f1', which NumPy cannot parse back: every raw
    view of one raised TypeError (a review), so as_tensor, transposes and overlapping
    copies failed on it alone."""
    dt = np.dtype(getattr(ml_dtypes, name))
    a = np.arange(6).astype(dt).reshape(2, 3)
    assert np.array_equal(es.as_tensor(a.T).numpy().astype(float), a.T.astype(float))
    assert es.transpose(a).shape == (3, 2)
    assert np.array_equal(np.asarray(es.diag_part(a)).astype(float), [0.0, 4.0])
    s = np.arange(6).astype(dt)
    es.copy_to(s[:4], s[2:])  # dense onto a shifted dense: through the flat views
    assert s.astype(float).tolist() == [0.0, 1.0, 0.0, 1.0, 2.0, 3.0]
