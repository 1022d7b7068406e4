"""The front end's forms as NumPy and opt_einsum users write them, on every entry point:
finder names registered with opt_einsum, NumPy's error classes for arguments of the wrong
kind, ASCII bytes subscripts, the interleaved form with shapes, and arrays given where
shapes belong (a review of the drop-in surface found each missing on some entry point).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import opt_einsum as oe
import pytest

import einstride as es
from einstride.errors import EinsumError, EinsumTypeError

A, B, C = np.ones((2, 3)), np.arange(12.0).reshape(3, 4), np.ones((4, 5))


def _left_to_right(
    inputs: list[Any], output: Any, size_dict: dict[str, int], memory_limit: Any = None
) -> list[tuple[int, int]]:
    return [(0, 1)] * (len(inputs) - 1)


@pytest.fixture
def registered() -> Iterator[str]:
    name = "einstride-test-left-to-right"
    oe.paths.register_path_fn(name, _left_to_right)
    yield name
    oe.paths._PATH_OPTIONS.pop(name, None)


def test_a_finder_name_registered_with_opt_einsum_is_taken_everywhere(registered: str) -> None:
    eq = "ij,jk,kl->il"
    want = np.einsum(eq, A, B, C)
    path, _ = es.einsum_path(eq, A, B, C, optimize=registered)
    assert path == ["einsum_path", (0, 1), (0, 1)]
    np.testing.assert_allclose(es.einsum(eq, A, B, C, optimize=registered), want)
    expr = es.contract_expression(eq, A.shape, B.shape, C.shape, optimize=registered)
    np.testing.assert_allclose(expr(A, B, C), want)
    assert registered in es.explain(eq, A.shape, B.shape, C.shape, optimize=registered)


def test_cotengras_registered_names_are_taken() -> None:
    pytest.importorskip("cotengra")
    eq = "ij,jk,kl->il"
    got = es.einsum(eq, A, B, C, optimize="greedy-compressed")
    np.testing.assert_allclose(got, np.einsum(eq, A, B, C))


def test_an_unknown_name_is_still_an_einsum_error_naming_it() -> None:
    with pytest.raises(EinsumError, match="unknown optimize='no-such-finder'"):
        es.einsum("ij,jk,kl->il", A, B, C, optimize="no-such-finder")


WRONG_KINDS: list[tuple[str, Callable[[Any], Any]]] = [
    ("optimize=3", lambda m: m.einsum("ij,jk,kl->il", A, B, C, optimize=3)),
    ("optimize=np.True_", lambda m: m.einsum("ij,jk,kl->il", A, B, C, optimize=np.True_)),
    ("optimize=(name, str)", lambda m: m.einsum("ij,jk,kl->il", A, B, C, optimize=("greedy", "9"))),
    (
        "a float in a path",
        lambda m: m.einsum("ij,jk,kl->il", A, B, C, optimize=["einsum_path", (0.0, 1), (0, 1)]),
    ),
    ("order=1", lambda m: m.einsum("ij,jk->ik", A, B, order=1)),
    ("tensordot axes='x'", lambda m: m.tensordot(A, B, axes="x")),
    ("tensordot axes='xy'", lambda m: m.tensordot(A, B, axes="xy")),
]


@pytest.mark.parametrize(("case", "call"), WRONG_KINDS, ids=[c for c, _ in WRONG_KINDS])
def test_an_argument_of_the_wrong_kind_raises_numpys_class_too(
    case: str, call: Callable[[Any], Any]
) -> None:
    with pytest.raises(Exception) as numpy_error:
        call(np)
    with pytest.raises(EinsumError) as ours:  # our family, and NumPy's class as well
        call(es)
    assert isinstance(ours.value, numpy_error.type), (case, numpy_error.type, ours.value)


def test_bytes_subscripts_are_read_on_every_entry_point() -> None:
    want = np.einsum("ij,jk->ik", A, B)
    np.testing.assert_allclose(es.einsum(b"ij,jk->ik", A, B), want)
    assert es.einsum_path(b"ij,jk->ik", A, B)[0] == es.einsum_path("ij,jk->ik", A, B)[0]
    np.testing.assert_allclose(es.contract_expression(b"ij,jk->ik", A.shape, B.shape)(A, B), want)
    assert es.explain(b"ij,jk->ik", A.shape, B.shape) == es.explain("ij,jk->ik", A.shape, B.shape)
    with pytest.raises(EinsumError, match="not ASCII"):
        es.einsum_path("ij->jiβ".encode(), A)


def test_explain_takes_the_interleaved_form_with_shapes() -> None:
    def steps(report: str) -> list[str]:  # (the cache level that decided may differ)
        return [line for line in report.splitlines() if "decisions" not in line]

    report = es.explain((2, 3), [0, 1], (3, 4), [1, 2], [0, 2])
    arrays = es.explain(np.ones((2, 3)), [0, 1], np.ones((3, 4)), [1, 2], [0, 2])
    assert steps(report) == steps(arrays)
    assert "(2, 3)" in report and "matmul" in report


@pytest.mark.parametrize(
    "build",
    [
        lambda: es.contract_expression("ij,jk->ik", A, B),
        lambda: es.explain("ij,jk->ik", (2, 3), (np.int64(3), np.array([4]))),
    ],
)
def test_an_array_where_a_shape_belongs_names_it(build: Callable[[], Any]) -> None:
    with pytest.raises(EinsumTypeError, match="shape"):
        build()


def test_a_one_dimensional_int_array_is_a_shape_as_opt_einsum_takes_it() -> None:
    expr = es.contract_expression("ij,jk->ik", np.array([2, 3]), np.array([3, 4]))
    np.testing.assert_array_equal(expr(A, B), A @ B)


def test_einsum_paths_report_is_explains_in_the_sublist_form_too() -> None:
    """A review: with sublists einsum_path returned the bare plan report, without a
    network's first call or the memory limit's verdict that explain gives."""
    report = es.einsum_path((10**5,), [0], [0, 0, 0])[1]
    assert "would raise" in report and report == es.explain((10**5,), [0], [0, 0, 0])
    ops = [np.full((2, 2), 0.5)] * 8
    args = [x for k, op in enumerate(ops) for x in (op, [k, k + 1])] + [[0, 8]]
    assert "network:" in es.einsum_path(*args)[1]
