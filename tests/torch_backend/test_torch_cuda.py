"""The torch backend on a CUDA device (every test is marked ``cuda``: skipped without one;
``benchmarks/gpu_check.sh`` runs them on a machine that has a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import einstride as es
from einstride.engine.backends.torch import guard

pytestmark = pytest.mark.cuda

F64 = torch.float64


def _cuda(*shape: int, dtype: torch.dtype = F64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype).cuda()


def test_results_stay_on_the_device_and_match_the_cpu() -> None:
    a, b = _cuda(8, 16), _cuda(16, 4, seed=1)
    for equation in ("ij,jk->ik", "ij,jk->ki", "ij,jk->iik"):
        got = es.einsum(equation, a, b)
        assert got.device == a.device
        expected = es.einsum(equation, a.cpu(), b.cpu())
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-12, atol=1e-12)
    t = _cuda(4, 5, 6).permute(2, 0, 1)
    torch.testing.assert_close(es.einsum("ijk->j", t).cpu(), es.einsum("ijk->j", t.cpu()))


def test_numpy_operands_are_moved_and_devices_must_agree() -> None:
    a = _cuda(3, 4)
    got = es.einsum("ij,j->i", a, np.ones(4))
    assert got.device == a.device
    with pytest.raises(TypeError, match="different devices"):
        es.einsum("ij,j->i", a, torch.ones(4, dtype=F64))


def test_gradcheck_and_gradgradcheck_on_the_device() -> None:
    for equation, shapes in [
        ("ij,jk->ik", [(2, 3), (3, 2)]),
        ("i->ii", [(3,)]),
        ("...i,...i->...i", [(1, 3), (2, 3)]),
    ]:
        ops = [_cuda(*s, seed=k).requires_grad_() for k, s in enumerate(shapes)]
        fn = lambda *xs, eq=equation: es.einsum(eq, *xs)  # noqa: E731
        assert torch.autograd.gradcheck(fn, ops)
        assert torch.autograd.gradgradcheck(fn, ops)


def test_half_precision_accumulates_in_float32() -> None:
    ones = torch.ones(4096, dtype=torch.float16, device="cuda")
    assert float(es.einsum("i->", ones)) == 4096.0
    m = torch.ones(2, 4096, dtype=torch.bfloat16, device="cuda")
    assert bool((es.einsum("ij,kj->ik", m, m) == 4096).all())


def test_default_limit_is_the_free_device_memory() -> None:
    device = torch.device("cuda", torch.cuda.current_device())
    free, total = torch.cuda.mem_get_info(device)
    assert free <= guard.limit_for(device, None) <= total
    with pytest.raises(es.EinsumError, match="more than the memory limit"):
        es.einsum("i->iii", torch.ones(10**5, device=device))


def test_transposed_operands_cost_no_device_memory_but_the_result() -> None:
    a, b = _cuda(256, 128).T, _cuda(256, 64, seed=1)[:, :32]
    es.einsum("ij,jk->ik", a, b)  # warm up (cuBLAS workspace)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    result = es.einsum("ij,jk->ik", a, b)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() - before == result.numel() * 8
    torch.testing.assert_close(result, a @ b)


def test_out_overlap_on_the_device_is_rejected_untouched() -> None:
    storage = torch.arange(20.0, device="cuda")
    before = storage.clone()
    with pytest.raises(es.LayoutError, match="overlaps operand 0"):
        es.einsum("ij->j", storage[:6].view(2, 3), out=storage[5:8])
    assert torch.equal(storage, before)
