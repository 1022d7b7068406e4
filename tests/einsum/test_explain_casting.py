"""``explain(..., casting=...)``: einsum's rule for the operands' and ``out=``'s casts,
checked as einsum checks it, on every backend (explain took no ``casting=``: a call with
``casting="unsafe"`` into an int32 ``out=`` ran, and its explain refused the ``out``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import einstride as es


def _raised(call: Callable[[], Any]) -> tuple[type[BaseException], str] | None:
    try:
        call()
    except Exception as error:  # the kind and words einsum and explain give
        return type(error), str(error)
    return None


@pytest.mark.parametrize("given", ["shapes", "operands"])
def test_an_out_that_einsum_writes_by_unsafe_casting_is_reported(given: str) -> None:
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
