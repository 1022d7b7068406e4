"""The torch backend's hot path: a plain call skips the front end, gives what the full path
gives (a graph too, for one or two operands), and leaves every other call (a graph of
three operands or more, mixed devices or types, conjugate views, sparse tensors, over the
memory limit) to the full path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import einstride as es  # noqa: E402
from einstride.engine.backends.torch import backend  # noqa: E402
from einstride.engine.registry import HOT_PATHS  # noqa: E402

F64 = torch.float64

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ii->", [(5, 5)]),
    ("bii->b", [(2, 3, 3)]),
    ("i->iii", [(3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ijk->kji", [(2, 3, 4)]),
]


def _operands(shapes: list[tuple[int, ...]]) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(s, dtype=F64, generator=gen) for s in shapes]


@pytest.mark.parametrize(("equation", "shapes"), CASES)
def test_the_hot_path_gives_the_full_paths_result(
    equation: str, shapes: list[tuple[int, ...]]
) -> None:
    ops = _operands(shapes)
    es.einsum(equation, *ops)  # loads the backend (its hot path registers itself)
    assert HOT_PATHS[torch.Tensor] is backend.hot
    fast = backend.hot(equation, tuple(ops), "auto")
    assert fast is not None
    full = es.einsum(equation, *ops, dtype=F64)  # dtype=: the full path (same dtype)
    torch.testing.assert_close(fast, full, rtol=0, atol=0)
    if "iii" not in equation:  # torch.einsum does not expand
        torch.testing.assert_close(fast, torch.einsum(equation, *ops))


@pytest.mark.parametrize("kind", ["list", "scalar", "ndarray", "einstride"])
def test_a_first_operand_that_is_not_a_torch_tensor_takes_the_full_path(kind: str) -> None:
    t = torch.arange(3.0, dtype=F64)
    first: Any = {
        "list": [1.0, 1.0, 1.0],
        "scalar": 1.0,
        "ndarray": np.ones(3),
        "einstride": es.as_tensor(np.ones(3)),
    }[kind]
    equation = ",i->" if kind == "scalar" else "i,i->"
    assert backend.hot(equation, (first, t), "auto") is None
    assert float(es.einsum(equation, first, t)) == 3.0  # converted onto t's device


def test_einsum_takes_the_hot_path_after_the_first_call(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _operands([(3, 4), (4, 5)])
    es.einsum("ij,jk->ik", a, b)
    calls: list[Any] = []
    original = backend.einsum

    def counting(call: Any) -> torch.Tensor:
        calls.append(call)
        return original(call)

    monkeypatch.setattr("einstride.engine.backends.torch.einsum", counting)  # the registry's
    for _ in range(3):
        torch.testing.assert_close(es.einsum("ij,jk->ik", a, b), a @ b)
    assert calls == []  # the backend's full entry point was never called


class _Subclass(torch.Tensor):
    pass


def _declines(equation: str, *operands: Any) -> bool:
    return backend.hot(equation, operands, "auto") is None


def test_the_hot_path_declines_what_needs_the_full_path() -> None:
    a = torch.ones(3, 3, dtype=F64)
    assert not _declines("ij->ji", a)
    leaf = a.clone().requires_grad_()
    assert backend.hot("ij->ji", (leaf,), "auto").grad_fn is not None  # one Function
    stepped = backend.hot("ij,jk,kl->il", (leaf, a, a), "auto")  # a graph built step by step
    assert stepped is not None and stepped.grad_fn.name() == "EinsumFunctionBackward"
    inputs = [fn.name() for fn, _ in stepped.grad_fn.next_functions if fn is not None]
    assert inputs == ["EinsumFunctionBackward"]  # the first step's, under the second
    with torch.no_grad():
        assert not _declines("ij,jk,kl->il", leaf, a, a)
        assert backend.hot("ij->ji", (leaf,), "auto").grad_fn is None
    assert _declines("ij,jk->ik", a, a.numpy())  # a NumPy operand to convert
    assert not _declines("ij->ji", torch.nn.Parameter(a.clone()))  # a layer's weight
    assert _declines("ij->ji", a.as_subclass(_Subclass))  # a subclass of its own
    assert _declines("ij->ji", torch.ones(3, 3, dtype=torch.complex128).conj())
    assert _declines("ij->ji", a.to_sparse())
    assert _declines("i->iii", torch.ones(10**5, dtype=F64))  # over the memory limit


def test_declined_calls_still_run_or_raise_as_before() -> None:
    a = torch.ones(2, 2, dtype=torch.complex128) * 1j
    torch.testing.assert_close(es.einsum("ij->ji", a.conj()), a.conj().T.resolve_conj())
    with pytest.raises(es.EinsumError, match="memory limit"):
        es.einsum("i->iii", torch.ones(10**5, dtype=F64))
    with pytest.raises(TypeError, match="strided"):
        es.einsum("ij->ji", torch.ones(2, 2).to_sparse())
