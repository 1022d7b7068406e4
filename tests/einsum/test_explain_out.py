"""``explain(..., out=...)``: the report of the call that writes ``out=``, with ``out=``
checked as einsum checks it (NumPy, torch; Dask refuses it as einsum does); and
``explain(..., casting=...)``, einsum's rule for the operands' and ``out=``'s casts,
checked as einsum checks it on every backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import einstride as es

NETWORK = "ab,bc,cd,de,ef,fg,gh,hi->ai"


def _raised(call: Callable[[], Any]) -> tuple[type[BaseException], str] | None:
    try:
        call()
    except Exception as error:  # the kind and words einsum and explain give
        return type(error), str(error)
    return None


def _lines(report: str, word: str) -> list[str]:
    return [line for line in report.splitlines() if word in line]


@pytest.mark.parametrize("given", ["shapes", "operands"])
def test_the_report_is_that_of_the_call_writing_out(given: str) -> None:
    shapes = [(20, 30), (30, 40)]
    ops: list[Any] = shapes if given == "shapes" else [np.ones(s) for s in shapes]
    report = es.explain("ij,jk->ik", *ops, out=np.empty((20, 40)))
    assert _lines(report, "result:") == [
        "  result:    (20, 40) float64 (written into out=); computed in float64"
    ]
    assert _lines(report, "out   as") == [
        "      out   as (20, 40): written straight into the output"
    ]
    narrow = es.explain("ij,jk->ik", *ops, out=np.empty((20, 40), np.float32))
    assert _lines(narrow, "out   as") == [
        "      out   as (20, 40): computed in float64, then cast into the output"
    ]
    assert "(new array)" in es.explain("ij,jk->ik", *ops)  # without out=: einsum's own result


@pytest.mark.parametrize("given", ["shapes", "operands"])
def test_a_call_with_out_runs_its_plan_no_lane_nor_direct_way(given: str) -> None:
    # (equation, shapes, the line einsum's own call shows without out=)
    cases: list[tuple[str, list[tuple[int, ...]], str]] = [
        ("bij,bjk->bik", [(8, 64, 32), (8, 32, 16)], "lane:"),
        ("ab,bc,cd->ad", [(3, 3)] * 3, "first call:"),
        (NETWORK, [(3, 3)] * 8, "network:"),
    ]
    for equation, shapes, line in cases:
        ops: list[Any] = shapes if given == "shapes" else [np.ones(s) for s in shapes]
        es.clear_plan_cache()
        assert _lines(es.explain(equation, *ops), line), (equation, line)
        result_shape = np.einsum(equation, *[np.ones(s) for s in shapes]).shape
        with_out = es.explain(equation, *ops, out=np.empty(result_shape))
        assert not _lines(with_out, line), (equation, with_out)


def _bad_outs(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    readonly = np.empty((6, 5))
    readonly.flags.writeable = False
    return {
        "a list": [[0.0] * 5] * 6,
        "of another shape": np.empty((6, 4)),
        "of a dtype that cannot hold the result": np.empty((6, 5), np.int32),
        "read-only": readonly,
        "with repeated locations": np.lib.stride_tricks.as_strided(np.empty(5), (6, 5), (0, 8)),
        "overlapping an operand": a[:, :5],
    }


@pytest.mark.parametrize("case", list(_bad_outs(np.empty((6, 6)), np.empty((6, 5)))))
def test_out_is_checked_as_einsum_checks_it(case: str) -> None:
    a, b = np.ones((6, 6)), np.ones((6, 5))
    out = _bad_outs(a, b)[case]
    expected = _raised(lambda: es.einsum("ij,jk->ik", a, b, out=out))
    assert expected is not None, case
    assert _raised(lambda: es.explain("ij,jk->ik", a, b, out=out)) == expected
    if case != "overlapping an operand":  # (shapes stand for operands of their own)
        shaped = _raised(lambda: es.explain("ij,jk->ik", (6, 6), (6, 5), out=out))
        assert shaped is not None and shaped[0] is expected[0], (shaped, expected)


@pytest.mark.parametrize("given", ["shapes", "operands"])
def test_under_raise_the_report_is_the_plan_einsum_runs_apart_then_copies(given: str) -> None:
    # a review: the plan with out= was shown (einsum runs the one without), past a memory
    # limit it did not say einsum raises, and the shapes form gave no note
    a, b, out = np.ones((20, 30)), np.ones((30, 40)), np.empty((20, 40))
    ops: list[Any] = [(20, 30), (30, 40)] if given == "shapes" else [a, b]
    assert not _lines(es.explain("ij,jk->ik", *ops, out=out), "np.errstate")
    with np.errstate(all="raise"):
        report = es.explain("ij,jk->ik", *ops, out=out)
        es.einsum("ij,jk->ik", a, b, out=out)
        limited = es.explain("ij,jk->ik", *ops, out=out, memory_limit=1000)
        narrow = es.explain("ij,jk->ik", *ops, out=np.empty((20, 40), np.float32))
        with pytest.raises(es.EinsumError, match="6,400 bytes"):
            es.einsum("ij,jk->ik", a, b, out=out, memory_limit=1000)
    assert _lines(report, "out= under np.errstate(...='raise'): einsum runs the plan below")
    assert _lines(report, "result:") == [
        "  result:    (20, 40) float64 (new array); computed in float64"
    ]
    np.testing.assert_array_equal(out, a @ b)
    assert _lines(limited, "einsum would raise EinsumError") and _lines(limited, "6,400 bytes")
    assert _lines(narrow, "the cast into out's float32 takes 3,200 B")


def test_torch_out_that_requires_grad_is_refused_as_einsum_refuses_it() -> None:
    torch = pytest.importorskip("torch")
    a, b = torch.ones(3, 4, dtype=torch.float64), torch.ones(4, 5, dtype=torch.float64)
    out = torch.empty(3, 5, dtype=torch.float64, requires_grad=True)
    expected = _raised(lambda: es.einsum("ij,jk->ik", a, b, out=out))
    assert expected is not None and expected[0] is es.EinsumTypeError
    assert _raised(lambda: es.explain("ij,jk->ik", a, b, out=out)) == expected


def test_torch_out_is_reported_and_checked_as_einsum_checks_it() -> None:
    torch = pytest.importorskip("torch")
    a, b = torch.ones(6, 6), torch.ones(6, 5)
    report = es.explain("ij,jk->ik", a, b, out=torch.empty(6, 5))
    assert _lines(report, "(written into out=)"), report
    for out in (torch.empty(6, 4), torch.empty(6, 5, dtype=torch.int32), a[:, :5]):
        expected = _raised(lambda: es.einsum("ij,jk->ik", a, b, out=out))  # noqa: B023
        assert expected is not None
        assert _raised(lambda: es.explain("ij,jk->ik", a, b, out=out)) == expected  # noqa: B023


def test_dask_refuses_out_in_explain_as_einsum_does() -> None:
    da = pytest.importorskip("dask.array")
    a, b, out = da.ones((6, 6), chunks=3), da.ones((6, 5), chunks=3), np.empty((6, 5))
    expected = _raised(lambda: es.einsum("ij,jk->ik", a, b, out=out))
    assert expected is not None and expected[0] is es.EinsumTypeError
    assert _raised(lambda: es.explain("ij,jk->ik", a, b, out=out)) == expected


@pytest.mark.parametrize("given", ["shapes", "operands"])
def test_an_out_that_einsum_writes_by_unsafe_casting_is_reported(given: str) -> None:
    # (explain took no casting=: a call with casting="unsafe" into an int32 out= ran, and
    # its explain refused the out)
    a, b, out = np.full((20, 30), 0.5), np.ones((30, 40)), np.empty((20, 40), np.int32)
    ops: list[Any] = [(20, 30), (30, 40)] if given == "shapes" else [a, b]
    es.einsum("ij,jk->ik", a, b, out=out, casting="unsafe")
    np.testing.assert_array_equal(out, np.full((20, 40), 15))
    report = es.explain("ij,jk->ik", *ops, out=out, casting="unsafe")
    assert "  result:    (20, 40) float64 (written into out=); computed in float64" in report
    assert "computed in float64, then cast into the output" in report
    refused = _raised(lambda: es.explain("ij,jk->ik", *ops, out=out))
    assert refused == _raised(lambda: es.einsum("ij,jk->ik", a, b, out=out))
    assert refused is not None and "cannot hold float64" in refused[1]


def _backends() -> dict[str, Callable[[np.ndarray], Any]]:
    found: dict[str, Callable[[np.ndarray], Any]] = {"numpy": lambda x: x}
    try:
        import torch
    except ImportError:
        pass
    else:
        found["torch"] = torch.from_numpy
    try:
        import dask.array as da
    except ImportError:
        pass
    else:
        found["dask"] = lambda x: da.from_array(x, chunks=3)
    return found


@pytest.mark.parametrize("backend", list(_backends()))
@pytest.mark.parametrize(
    ("dtypes", "keywords"),
    [
        (("f8", "f8"), {"dtype": "f4", "casting": "safe"}),  # operands into dtype=
        (("f4", "f8"), {"casting": "no"}),  # into their common dtype
        (("f8", "f8"), {"casting": "bad"}),  # no such rule
        (("f4", "f8"), {"casting": "same_kind"}),  # allowed: a report
        (("f8", "f8"), {"dtype": "f4", "casting": "unsafe"}),
    ],
)
def test_operands_casting_is_checked_as_einsum_checks_it(
    backend: str, dtypes: tuple[str, str], keywords: dict[str, Any]
) -> None:
    wrap = _backends()[backend]
    a, b = (wrap(np.ones(shape, dt)) for shape, dt in zip([(6, 6), (6, 5)], dtypes))
    expected = _raised(lambda: es.einsum("ij,jk->ik", a, b, **keywords))
    got = _raised(lambda: es.explain("ij,jk->ik", a, b, **keywords))
    assert got == expected, (got, expected)
    if expected is None:
        assert es.explain("ij,jk->ik", a, b, **keywords).startswith("einsum 'ij,jk->ik'")


def test_a_call_naming_casting_takes_no_lane_and_its_report_shows_none() -> None:
    a, b = np.ones((8, 64, 32)), np.ones((8, 32, 16))
    assert "lane:" in es.explain("bij,bjk->bik", a, b)
    assert "lane:" not in es.explain("bij,bjk->bik", a, b, casting="same_kind")
    assert "lane:" not in es.explain("bij,bjk->bik", a.shape, b.shape, casting="same_kind")


@pytest.mark.parametrize(
    ("dtype", "out_dtype"),
    [(None, np.complex128), ("i1", np.float64), ("f4", np.float64), (None, np.float64)],
)
def test_shapes_cast_by_the_rule_as_operands_of_that_dtype_are(dtype: Any, out_dtype: Any) -> None:
    # a review: with shapes, casting= was checked on out= alone; out= widens the dtype
    # the operands are computed in, whose cast einsum checks
    out = np.empty((2, 4), out_dtype)
    ops = [np.ones(s, "f8" if dtype is None else dtype) for s in [(2, 3), (3, 4)]]
    expected = _raised(lambda: es.einsum("ij,jk->ik", *ops, out=out, casting="no"))
    shaped = _raised(
        lambda: es.explain("ij,jk->ik", (2, 3), (3, 4), dtype=dtype, out=out, casting="no")
    )
    assert shaped == expected, (shaped, expected)
