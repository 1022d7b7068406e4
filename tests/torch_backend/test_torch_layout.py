"""Layouts on torch: zero-copy views into matmul, ``out=`` of any strides and its exact
overlap check, and the memory guard (CPU, and CUDA's free memory through mocks)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import einstride as es
from einstride import memory
from einstride.engine.backends.torch import backend, guard, lanes
from einstride.engine.backends.torch.operands import facts_of, overlaps
from einstride.engine.backends.torch.plan import entry_for

F64 = torch.float64


def _allocated_bytes(fn: Any) -> tuple[Any, list[int]]:
    """What ``fn()`` returns, and the sizes of the CPU allocations torch's allocator made."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    return result, [e.cpu_memory_usage for e in prof.events() if e.cpu_memory_usage > 0]


def _spy_on_products(monkeypatch: pytest.MonkeyPatch) -> list[tuple[torch.Tensor, ...]]:
    seen: list[tuple[torch.Tensor, ...]] = []
    for name in ("mm", "bmm"):
        original = getattr(torch, name)

        def spy(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            seen.append(args)
            return _original(*args, **kwargs)

        monkeypatch.setattr(torch, name, spy)
    return seen


def _same_memory(view: torch.Tensor, operand: torch.Tensor) -> bool:
    return (
        view.untyped_storage().data_ptr() == operand.untyped_storage().data_ptr()
        and view.data_ptr() == operand.data_ptr()
    )


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.usefixtures("planned")
def test_transposed_and_sliced_operands_feed_matmul_without_copies(
    batched: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = torch.Generator().manual_seed(0)
    if batched:
        a = torch.randn(4, 64, 48, generator=g, dtype=F64).transpose(1, 2)  # (4, 48, 64)
        b = torch.randn(4, 64, 100, generator=g, dtype=F64)[:, :, 10:40]  # gapped rows
        equation = "bij,bjk->bik"
    else:
        a = torch.randn(64, 48, generator=g, dtype=F64).T
        b = torch.randn(64, 100, generator=g, dtype=F64)[:, 10:40]
        equation = "ij,jk->ik"
    report = es.explain(equation, a, b)
    assert "copy" not in report and report.count(": viewed") == 2
    entry = entry_for(equation, facts_of([a, b]), None, None, "auto")
    result_bytes = a.shape[-2] * b.shape[-1] * 8 * (4 if batched else 1)
    assert entry.plan.allocated_bytes == result_bytes
    seen = _spy_on_products(monkeypatch)
    result, allocations = _allocated_bytes(lambda: es.einsum(equation, a, b))
    assert allocations == [result_bytes]  # torch's allocator: the result and nothing else
    (args,) = seen
    left, right = args[0], args[1]
    assert {left.untyped_storage().data_ptr(), right.untyped_storage().data_ptr()} == {
        a.untyped_storage().data_ptr(),
        b.untyped_storage().data_ptr(),
    }
    assert _same_memory(left, a) or _same_memory(left, b)
    torch.testing.assert_close(result, torch.matmul(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.usefixtures("planned")
def test_batch_dims_that_do_not_fold_are_looped_not_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    base = torch.randn(3, 5, 4, 6, dtype=F64)
    a = base.permute(1, 0, 2, 3)  # batch (b, c) = (5, 3): strides do not fold
    b = torch.randn(5, 3, 6, 2, dtype=F64)
    seen = _spy_on_products(monkeypatch)
    result, allocations = _allocated_bytes(lambda: es.einsum("bcij,bcjk->bcik", a, b))
    assert allocations == [5 * 3 * 4 * 2 * 8]
    assert len(seen) == 5 and all(_same_memory(args[0], a[k]) for k, args in enumerate(seen))
    torch.testing.assert_close(result, torch.matmul(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.usefixtures("planned")
def test_batch_dims_that_fold_run_as_one_bmm_of_their_views(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(2, 3, 5, 4, generator=g, dtype=F64)  # (b, h, q, k)
    b = torch.randn(2, 3, 6, 4, generator=g, dtype=F64).transpose(-1, -2)  # (b, h, k, d)
    seen: list[dict[str, Any]] = []
    original = torch.bmm
    monkeypatch.setattr(torch, "bmm", lambda *args, **kw: seen.append(kw) or original(*args, **kw))
    folds = _spy_on_products(monkeypatch)
    for _ in range(2):  # the second call takes the same path
        seen.clear()
        folds.clear()
        result, allocations = _allocated_bytes(lambda: es.einsum("bhqk,bhkd->bhqd", a, b))
        assert allocations == [2 * 3 * 5 * 6 * 8]
        ((left, right),) = folds
        assert seen == [{}]  # bmm allocates the result itself: no torch.empty, no out=
        assert left.shape == (6, 5, 4) and right.shape == (6, 4, 6)
        assert _same_memory(left, a) and _same_memory(right, b)
        torch.testing.assert_close(result, torch.matmul(a, b), rtol=1e-12, atol=1e-12)
    # into out= (matmul_into): the batch axes merged by views too, one bmm into out's memory
    out = torch.empty(2, 3, 6, 5, dtype=F64).transpose(-1, -2)
    seen.clear()
    assert es.einsum("bhqk,bhkd->bhqd", a, b, out=out) is out
    (kw,) = seen
    assert kw["out"].shape == (6, 6, 5) and _same_memory(kw["out"], out)  # out^T = b^T a^T
    torch.testing.assert_close(out, torch.matmul(a, b), rtol=1e-12, atol=1e-12)
    # batch axes that do not fold, and free labels looped on both sides (batch views of
    # different shapes): no merge, no copy, the same values
    pa = torch.randn(3, 2, 5, 4, generator=g, dtype=F64).permute(1, 0, 2, 3)
    for x, y, equation in ((pa, b, "bhqk,bhkd->bhqd"), (a, b, "bhqk,bhkd->bhdq")):
        expected = torch.einsum(equation, x, y)
        for _ in range(2):
            torch.testing.assert_close(es.einsum(equation, x, y), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("tall", [True, False])
def test_a_tall_narrow_product_runs_the_other_way_round(
    tall: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MKL computes a (rows >> cols, cols <= 128) row-major result about 2x slower than its
    # transpose: the plan writes the transpose (a wide result) and returns its view
    g = torch.Generator().manual_seed(2)
    rows = 4096 if tall else 256
    a, b = (
        torch.randn(rows, 64, generator=g, dtype=F64),
        torch.randn(64, 64, generator=g, dtype=F64),
    )
    seen = _spy_on_products(monkeypatch)
    # (the other way: the product as it stands, which the torch lane runs as the plan would)
    monkeypatch.setattr(lanes, "_matmul", lambda x, y: seen.append((x, y)) or torch.matmul(x, y))
    result = es.einsum("ik,kj->ij", a, b)
    ((left, right),) = seen
    if tall:
        assert left.shape == (64, 64) and right.shape == (64, rows)
        assert result.stride() == (1, rows)  # the wide product, viewed transposed
    else:
        assert left.shape == (rows, 64) and result.stride() == (64, 1)
    torch.testing.assert_close(result, a @ b, rtol=1e-12, atol=1e-12)


# -- out= -------------------------------------------------------------------------------------


def test_out_of_any_strides_takes_the_result() -> None:
    a, b = torch.randn(2, 4, dtype=F64), torch.randn(4, 3, dtype=F64)
    out = torch.zeros(3, 2, dtype=F64).T  # transposed
    assert es.einsum("ij,jk->ik", a, b, out=out) is out
    torch.testing.assert_close(out, a @ b, rtol=1e-12, atol=1e-12)
    gapped = torch.full((3, 6), 7.0)[:, ::2]
    assert es.einsum("i->ii", torch.tensor([1.0, 2.0, 3.0]), out=gapped) is gapped
    assert gapped.tolist() == [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]


def test_out_of_another_dtype_gets_the_result_cast() -> None:
    a = torch.full((2, 3), 0.1, dtype=F64)
    out = torch.zeros(2, 2, dtype=torch.float32).T
    assert es.einsum("ij,jk->ik", a, a.T, out=out) is out
    torch.testing.assert_close(out, (a @ a.T).float())
    ints = torch.zeros(2, dtype=torch.int16)
    es.einsum("ij->i", torch.full((2, 3), 7, dtype=torch.int64), out=ints)
    assert ints.tolist() == [21, 21]


def _rejected(error: type[Exception], match: str, equation: str, *ops: Any, out: Any) -> None:
    """The call raises, and every byte of ``out``'s storage is as it was."""
    before = out.untyped_storage().tolist()
    with pytest.raises(error, match=match):
        es.einsum(equation, *ops, out=out)
    assert out.untyped_storage().tolist() == before


def test_out_overlapping_an_operand_is_rejected_before_writing() -> None:
    storage = torch.arange(20.0)
    a = storage[:6].view(2, 3)
    _rejected(es.LayoutError, "overlaps operand 0", "ij->j", a, out=storage[5:8])
    square = torch.arange(1.0, 10.0)  # a diagonal expansion would zero its out= first
    _rejected(es.LayoutError, "overlaps operand 0", "i->ii", square[6:], out=square.view(3, 3))
    words = torch.arange(8)  # an int64 and an int32 view of one buffer
    halves = words.view(torch.int32)
    _rejected(
        es.LayoutError,
        "overlaps operand 1",
        "i,i->i",
        torch.ones(3, dtype=torch.int32),
        words[:3],
        out=halves[5:8],
    )  # bytes 20..31 meet element 2


def test_interleaved_views_of_one_storage_do_not_overlap() -> None:
    storage = torch.zeros(12)
    evens, odds = storage[0::2], storage[1::2]
    evens.copy_(torch.arange(6.0))
    assert not overlaps(evens, odds) and overlaps(storage[::3], storage[1::2])
    assert es.einsum("i->i", evens, out=odds) is odds
    assert storage.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]


def test_bad_out_is_rejected_untouched() -> None:
    a = torch.ones(2, 3)
    _rejected(
        es.LayoutError,
        "repeated locations",
        "ij->j",
        a,
        out=torch.full((1,), 7.0).expand(3),
    )
    _rejected(
        TypeError, "cannot hold torch.float32", "ij->j", a, out=torch.zeros(3, dtype=torch.int64)
    )
    _rejected(
        es.EinsumError,
        r"out= has shape \(2,\), but the result has shape \(3,\)",
        "ij->j",
        a,
        out=torch.zeros(2),
    )
    with pytest.raises(TypeError, match="out= is on meta"):
        es.einsum("ij->j", a, out=torch.zeros(3, device="meta"))
    with pytest.raises(TypeError, match=r"out= must be a torch\.Tensor"):
        es.einsum("ij->j", a, out=[0.0, 0.0, 0.0])


# -- the memory guard -------------------------------------------------------------------------


def test_memory_limit_on_cpu_is_the_numpy_paths() -> None:
    with pytest.raises(es.EinsumError, match="output would allocate 8,000,000,000,000,000"):
        es.einsum("i->iii", torch.ones(10**5, dtype=F64), memory_limit="1MiB")
    previous = memory.set_memory_limit(1000)
    try:
        with pytest.raises(es.EinsumError, match="more than the memory limit of 1,000 bytes"):
            es.einsum("i,j->ij", torch.ones(20), torch.ones(20))
        assert es.einsum("i,j->ij", torch.ones(5), torch.ones(5)).shape == (5, 5)
    finally:
        memory.set_memory_limit(previous)


def test_memory_limit_bounds_the_peak_not_only_each_allocation() -> None:
    ops = torch.ones(10, 1000), torch.ones(1000, 1000), torch.ones(1000, 10)
    path = [(0, 1), (0, 1)]  # an intermediate of 40,000 B alive while the output is written
    with pytest.raises(es.EinsumError, match="40,400 bytes at its peak, more than the memory"):
        es.einsum("ij,jk,kl->il", *ops, optimize=path, memory_limit=40_000)
    assert es.einsum("ij,jk,kl->il", *ops, optimize=path, memory_limit=40_400).shape == (10, 10)


@pytest.fixture
def cuda_with_free_memory(monkeypatch: pytest.MonkeyPatch) -> int:
    """torch.cuda's memory queries mocked: 1000 bytes free, 24 reserved of which 8 used."""
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1000, 10**9))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 24)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 8)
    return 1016


def test_cuda_default_limit_is_the_free_device_memory(cuda_with_free_memory: int) -> None:
    cuda = torch.device("cuda", 0)
    assert guard.cuda_free_bytes(cuda) == cuda_with_free_memory
    assert guard.limit_for(cuda, None) == cuda_with_free_memory
    assert guard.limit_for(cuda, 5) == 5
    small = entry_for("i,j->ij", facts_of([torch.ones(10)] * 2), None, None, "auto")
    large = entry_for("i,j->ij", facts_of([torch.ones(20)] * 2), None, None, "auto")
    backend._guard(small, cuda, None)  # 400 bytes fit
    with pytest.raises(es.EinsumError, match="more than the memory limit of 1,016 bytes"):
        backend._guard(large, cuda, None)  # 1,600 bytes do not: raised before allocating


def test_integer_products_off_the_cpu_are_a_type_error() -> None:
    ints = torch.ones(3, 3, dtype=torch.int64)
    entry = entry_for("ij,jk->ik", facts_of([ints, ints]), None, None, "auto")
    assert entry.integer_products
    with pytest.raises(TypeError, match="integers or bools, which torch does not do on cuda"):
        backend._guard(entry, torch.device("cuda", 0), None)
    backend._guard(entry, torch.device("cpu"), None)


def test_torch_plans_avoid_a_product_of_two_transposed_operands() -> None:
    # ojb in C order would be (oj x i) @ (i x b) over two transposed views: NumPy's OpenBLAS
    # runs that as fast as the plain product (NumPy's plan writes it into the C-ordered
    # output), torch's MKL 2.5-3.5x slower (measured), so the torch plan computes boj
    # plainly and returns the transposed view instead
    x, w = torch.rand(128, 64, dtype=torch.float64), torch.rand(64, 64, 64, dtype=torch.float64)
    on_torch = es.explain("bi,ioj->ojb", x, w)
    on_numpy = es.explain("bi,ioj->ojb", x.numpy(), w.numpy())
    assert "operand 0 x operand 1 -> boj" in on_torch and "transposed view" in on_torch
    assert "written straight into the output" in on_numpy
    torch.testing.assert_close(es.einsum("bi,ioj->ojb", x, w), torch.einsum("bi,ioj->ojb", x, w))


def _spy_on_trace(monkeypatch: pytest.MonkeyPatch) -> list[torch.Tensor]:
    traced: list[torch.Tensor] = []
    original = torch.trace
    monkeypatch.setattr(torch, "trace", lambda t: traced.append(t) or original(t))
    return traced


@pytest.mark.parametrize("equation", ["ii->", "ii"])  # explicit, and implicit: the same trace
@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.rand(6, 6, dtype=F64),
        lambda: torch.rand(6, 6, dtype=F64).T,
        lambda: torch.rand(12, 12, dtype=torch.float32)[::2, 1::2],
        lambda: torch.rand(5, 5, dtype=torch.complex128),
        lambda: torch.rand(5, dtype=F64).expand(5, 5),  # zero stride: the diagonal still reads
        lambda: torch.rand(1, 1, dtype=F64),
    ],
)
def test_a_trace_runs_torchs_trace_kernel(
    make: Any, equation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = make()
    traced = _spy_on_trace(monkeypatch)
    result = es.einsum(equation, x)
    expected = torch.einsum(equation, x)
    assert result.dtype == expected.dtype and torch.allclose(result, expected)
    assert len(traced) == 1 and traced[0] is x  # the operand itself: no view, no copy


@pytest.mark.parametrize(
    ("equation", "x"),
    [
        ("ii->", torch.rand(6, 6, dtype=torch.float16)),  # summed in float32: not its kernel
        ("ii->i", torch.rand(6, 6, dtype=F64)),  # a diagonal, not summed
        ("iij->", torch.rand(4, 4, 3, dtype=F64)),  # more axes
    ],
)
def test_what_is_not_a_square_trace_runs_the_general_program(
    equation: str, x: torch.Tensor, monkeypatch: pytest.MonkeyPatch
) -> None:
    traced = _spy_on_trace(monkeypatch)
    result = es.einsum(equation, x)
    expected = torch.einsum(equation, x.double()).to(result.dtype)
    assert torch.allclose(result, expected, rtol=1e-3)
    assert not traced


def test_a_trace_into_out_writes_out() -> None:
    x, out = torch.rand(4, 4, dtype=F64), torch.empty((), dtype=F64)
    assert es.einsum("ii->", x, out=out) is out and torch.allclose(out, torch.trace(x))


@pytest.mark.usefixtures("planned")
def test_a_last_product_returns_its_own_buffer_rather_than_write_into_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a product of the output's shape is the output: run the way round that makes it
    # C-ordered (b^T a^T) instead of writing a transposed product into a new tensor, which
    # costs torch.empty, views and checks (PlannerOptions.into_ns)
    g = torch.Generator().manual_seed(4)
    cot, b = torch.randn(4, 16, 8, generator=g, dtype=F64), torch.randn(4, 16, 12, generator=g)
    b = b.to(F64)
    seen: list[dict[str, Any]] = []
    original = torch.bmm
    monkeypatch.setattr(torch, "bmm", lambda *args, **kw: seen.append(kw) or original(*args, **kw))
    result = es.einsum("bik,bij->bjk", cot, b)
    assert seen == [{}] and result.is_contiguous()
    torch.testing.assert_close(result, b.mT @ cot, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.complex128, torch.bfloat16])
@pytest.mark.parametrize("threshold", [0, 1 << 62])
def test_zeroed_results_from_calloc_or_torch_give_the_same_values(
    dtype: torch.dtype, threshold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zeroed CPU result (repeated output labels) past the size threshold is NumPy's
    calloc'd memory: the same values, a writable tensor autograd can use."""
    from einstride.engine.backends.torch import execute

    monkeypatch.setattr(execute, "ZEROS_FROM_CALLOC_BYTES", threshold)
    es.clear_plan_cache()
    x = torch.arange(1, 13, dtype=torch.float64).reshape(3, 4).to(dtype).requires_grad_()
    zeros, made = torch.zeros, []
    monkeypatch.setattr(torch, "zeros", lambda *a, **k: made.append(a) or zeros(*a, **k))
    got = es.einsum("ij->iij", x)
    monkeypatch.setattr(torch, "zeros", zeros)
    expected = torch.diag_embed(x.detach().T).permute(1, 2, 0)
    assert got.dtype == dtype and torch.equal(got.detach(), expected)
    # NumPy has no bfloat16: torch makes those
    assert bool(made) == (threshold > 0 or dtype == torch.bfloat16)
    got.sum().real.backward() if dtype.is_complex else got.sum().backward()
    assert x.grad is not None and torch.equal(x.grad, torch.ones_like(x))
    got.detach().add_(1)  # writable
