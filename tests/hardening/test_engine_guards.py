"""The einsum front end against careless and hostile calls: conversions bounded before they
allocate, ``out=`` untouched on every error, one validation of ``optimize=`` and
``memory_limit=`` whatever the operand count, and the same error type on every backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import einstride as es
from einstride import EinsumError


@pytest.mark.parametrize(
    "call",
    [
        lambda r: es.einsum("i->", r),
        lambda r: es.einsum("i,i->", r, r),
        lambda r: es.einsum_vjp("i->", (r,), np.array(1.0)),
        lambda r: es.contract_expression("i->", (len(r),))(r),
    ],
)
def test_huge_sequences_fail_before_converting(call: Any) -> None:
    with pytest.raises(EinsumError, match="range of 1,000,000,000,000 items"):
        call(range(10**12))


def test_einsum_path_needs_only_shapes() -> None:
    path, report = es.einsum_path("i,i->", range(10**12), range(10**12))
    assert path == ["einsum_path", (0, 1)] and "1000000000000" in report.replace(",", "")


def test_out_of_the_wrong_kind_is_not_converted() -> None:
    with pytest.raises(
        TypeError, match=r"out must be an einstride\.Tensor or a numpy\.ndarray, not range"
    ):
        es.einsum("i->i", np.ones(3), out=range(10**12))


def test_a_torch_out_for_numpy_operands_is_named_torch_tensor() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"not torch\.Tensor \(a torch out= takes torch operands\)"):
        es.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)), out=torch.zeros(2, 4))


class _RefusesUfuncs(np.ndarray):  # e.g. a units-checked array: unknown ufuncs refused
    def __array_ufunc__(self, *args: object, **kwargs: object) -> object:
        return NotImplemented


@pytest.mark.parametrize("equation", ["ij,jk->ik", "ij,ij->ij", "ij,ij->"])
def test_a_subclass_out_is_written_without_its_ufunc_hooks(equation: str) -> None:
    """numpy.einsum writes into an ndarray subclass's out= without calling its hooks (a
    masked array's __array_wrap__ refused a matmul's shapes)."""
    a, b = np.arange(12.0).reshape(3, 4), np.arange(12.0).reshape(3, 4)
    b = b.T.copy() if equation == "ij,jk->ik" else b
    want = np.einsum(equation, a, b)
    for out in (np.ma.zeros(want.shape), np.zeros(want.shape).view(_RefusesUfuncs)):
        assert es.einsum(equation, a, b, out=out) is out
        np.testing.assert_array_equal(np.asarray(out), want)
        expression = es.contract_expression(equation, a.shape, b.shape)
        assert expression(a, b, out=out) is out


@pytest.mark.parametrize(
    ("equation", "operands", "out"),
    [
        ("ij,jk->ik", [np.full((4, 4), 1e300)] * 2, np.zeros((4, 4))),  # matmul overflow
        ("ij,jk->ik", [np.full((4, 4), 1e30)] * 2, np.zeros((4, 4), np.float32)),  # cast
        ("i,i->i", [np.full(8, 1e300)] * 2, np.zeros(8)),  # multiply overflow
        ("i->ii", [np.full(3, 1e308)], np.zeros((3, 3), np.float32)),  # expansion + cast
        ("ij,jk,kl->il", [np.full((60, 60), 1e110)] * 3, np.zeros((60, 60))),  # a later step
    ],
)
def test_out_is_untouched_when_a_floating_point_error_raises(equation, operands, out) -> None:
    out[...] = 7
    before = out.copy()
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        es.einsum(equation, *operands, out=out)
    np.testing.assert_array_equal(out, before)
    # without errstate the same call writes out (NumPy's default: warn and go on)
    with np.errstate(all="ignore"):
        es.einsum(equation, *operands, out=out)
    assert not np.array_equal(out, before)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize(
    ("optimize", "error"),
    [
        ("bogus", EinsumError),
        (["bogus", (0, 1), (0, 1)], EinsumError),
        ([(0, 1), (0, 1), (0, 1)], EinsumError),
        (3.5, EinsumError),
    ],
)
def test_bad_paths_fail_whatever_the_operand_count(n: int, optimize: Any, error: type) -> None:
    equation = ",".join("i" * n) + "->"
    operands = [np.ones(2)] * n
    with pytest.raises(error):
        es.einsum(equation, *operands, optimize=optimize)
    with pytest.raises(error):
        es.einsum_path(equation, *operands, optimize=optimize)
    with pytest.raises(error):
        es.contract_expression(equation, *[(2,)] * n, optimize=optimize)


@pytest.mark.parametrize(
    ("memory_limit", "error"),
    [
        (-1, EinsumError),
        ("", EinsumError),
        ("lots", EinsumError),
        (1.5, TypeError),
        (True, TypeError),
    ],
)
def test_memory_limit_is_validated_once_for_every_backend(memory_limit: Any, error: type) -> None:
    with pytest.raises(error):
        es.einsum("ij->i", np.ones((2, 2)), memory_limit=memory_limit)
    with pytest.raises(error):
        es.contract_expression("ij->i", (2, 2))(np.ones((2, 2)), memory_limit=memory_limit)
    da = pytest.importorskip("dask.array")
    with pytest.raises(error):
        es.einsum("ij->i", da.ones((2, 2)), memory_limit=memory_limit)


@pytest.mark.parametrize(
    "bad",
    [
        lambda x: es.einsum("ij,jk->ik", x, x[:1]),  # label sizes differ
        lambda x: es.einsum("ij->k", x),  # output label not in the inputs
        lambda x: es.einsum("ij", x, x),  # operand count
        lambda x: es.einsum(x, [0, "a"]),  # sublist label
        lambda x: es.einsum("ij->i", x, dtype="not a dtype"),
        lambda x: es.einsum("ij->i", x, optimize="bogus"),
        lambda x: es.einsum("ij->i", x, order="X"),
        lambda x: es.einsum("ij->i", x, out=np.empty(3)),
    ],
)
def test_the_same_bad_call_raises_the_same_type_on_numpy_and_dask(bad: Any) -> None:
    da = pytest.importorskip("dask.array")
    with pytest.raises(Exception) as on_numpy:
        bad(np.ones((2, 2)))
    with pytest.raises(Exception) as on_dask:
        bad(da.ones((2, 2)))
    if "out=" in str(on_dask.value) and "not supported" in str(on_dask.value):
        assert isinstance(on_dask.value, TypeError)  # out= is documented as unsupported
        return
    assert type(on_numpy.value) is type(on_dask.value), (on_numpy.value, on_dask.value)
