"""Autograd through the torch backend: gradcheck and gradgradcheck (float64, small sizes),
agreement with torch.einsum's autograd, gradients only where needed, operands untouched."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import einstride as es
from einstride import memory
from einstride.engine.backends.numpy.generic import PROMOTE_AT
from einstride.engine.backends.torch import lanes
from einstride.errors import EinsumError

F64 = torch.float64

# (equation, operand shapes); every one through gradcheck AND gradgradcheck
EQUATIONS: list[tuple[str, list[tuple[int, ...]]]] = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("i->iii", [(3,)]),
    ("ii->i", [(3, 3)]),
    ("iii->i", [(2, 2, 2)]),
    ("ab,bc->aaca", [(2, 3), (3, 2)]),
    ("i...ii->...i", [(2, 3, 2, 2)]),
    ("...i,...i->...i", [(1, 3), (4, 3)]),  # a size-1 '...' axis broadcasts
    ("b...ij,b...jk->b...ik", [(2, 1, 2, 3), (2, 3, 3, 2)]),
    ("ii->", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("i->ii", [(3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("abc,cb->a", [(2, 3, 2), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 3)]),
    ("ea,fb,abcd,gc,hd->efgh", [(2, 2), (2, 2), (2, 2, 2, 2), (2, 2), (2, 2)]),
    ("ij->ji", [(2, 3)]),
    ("ij,jk", [(2, 3), (3, 2)]),  # implicit mode
    ("αβ,βγ->γα", [(2, 2), (2, 3)]),
]


def _operands(
    shapes: list[tuple[int, ...]], dtype: torch.dtype = F64, seed: int = 0
) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g, dtype=dtype).requires_grad_() for s in shapes]


def _fn(equation: str) -> Callable[..., torch.Tensor]:
    return lambda *ops: es.einsum(equation, *ops)


@pytest.mark.parametrize(("equation", "shapes"), EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_gradcheck_and_gradgradcheck(equation: str, shapes: list[tuple[int, ...]]) -> None:
    ops = _operands(shapes)
    before = [op.detach().clone() for op in ops]
    assert torch.autograd.gradcheck(_fn(equation), ops)
    assert torch.autograd.gradgradcheck(_fn(equation), ops)
    for op, old in zip(ops, before):
        assert torch.equal(op.detach(), old)


def test_gradcheck_on_complex_operands_and_the_sublist_form() -> None:
    ops = _operands([(2, 3), (3, 2)], torch.complex128)
    assert torch.autograd.gradcheck(lambda a, b: es.einsum(a, [0, 1], b, [1, 2], [0, 2]), ops)
    assert torch.autograd.gradgradcheck(lambda a, b: es.einsum("ij,jk->ik", a, b), ops)


@pytest.mark.parametrize(
    "equation",
    ["ij,jk->ik", "ii->i", "...i,...i->...", "bij,bkj->bik", "i,i->", "ij->"],
)
@pytest.mark.parametrize("dtype", [F64, torch.complex128])
def test_gradients_equal_torch_einsums(equation: str, dtype: torch.dtype) -> None:
    shapes = {
        "ij,jk->ik": [(2, 3), (3, 4)],
        "ii->i": [(3, 3)],
        "...i,...i->...": [(2, 1, 3), (4, 3)],
        "bij,bkj->bik": [(2, 3, 4), (2, 5, 4)],
        "i,i->": [(3,), (3,)],
        "ij->": [(2, 3)],
    }[equation]
    ours, theirs = _operands(shapes, dtype), _operands(shapes, dtype)
    cot_shape = torch.einsum(equation, *theirs).shape
    cot = torch.randn(cot_shape, generator=torch.Generator().manual_seed(9), dtype=dtype)
    es.einsum(equation, *ours).backward(cot)
    torch.einsum(equation, *theirs).backward(cot)
    for a, b in zip(ours, theirs):
        assert a.grad is not None and b.grad is not None
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-12)


def test_second_derivatives_equal_torch_einsums() -> None:
    a, b = _operands([(3, 4), (4, 2)])
    grads = []
    for einsum in (es.einsum, torch.einsum):
        loss = (einsum("ij,jk->ik", a, b) ** 2).sum()
        (ga,) = torch.autograd.grad(loss, [a], create_graph=True)
        grads.append(torch.autograd.grad(ga.sum(), [a, b]))
    for ours, theirs in zip(*grads):
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


def test_only_operands_that_need_a_gradient_get_one(monkeypatch: pytest.MonkeyPatch) -> None:
    a = torch.randn(2, 3, dtype=F64, requires_grad=True)
    b, c = torch.randn(3, 4, dtype=F64), torch.randn(4, 40, dtype=F64)
    products: list[Any] = []
    original = torch.mm

    def counting(*args: Any, **kwargs: Any) -> torch.Tensor:
        products.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(torch, "mm", counting)  # what every product here runs
    for _ in range(2):  # the second backward runs the gradients' plans cached by the first
        a.grad = None
        result = es.einsum("ij,jk->ik", a, b, optimize="greedy")  # the plan (no lane)
        products.clear()
        # (a dense cotangent: the expanded ones of result.sum() would be read without
        # their summed label, no product at all: numpy.plan.dropped_axes)
        cotangent = torch.arange(8.0, dtype=F64).reshape(2, 4)
        result.backward(cotangent)
        assert len(products) == 1  # the backward einsum of a only
        assert a.grad is not None and b.grad is None
        torch.testing.assert_close(a.grad, cotangent @ b.T)
    path = es.einsum_path("ij,jk,kl->il", a, b, c)[0]
    assert path[1:] == [(0, 1), (0, 1)]  # a and b first: both steps on a's side
    for _ in range(2):
        a.grad = None
        result = es.einsum("ij,jk,kl->il", a, b, c)  # step by step, a graph on a's side
        products.clear()
        cotangent = torch.arange(80.0, dtype=F64).reshape(2, 40)
        result.backward(cotangent)
        assert len(products) == 2  # each step: the gradient of its operand on a's side only
        assert a.grad is not None and b.grad is None and c.grad is None
        torch.testing.assert_close(a.grad, cotangent @ (b @ c).T)


def test_a_graph_only_when_needed() -> None:
    a = torch.ones(2, 2, requires_grad=True)
    assert es.einsum("ij->i", a).grad_fn is not None
    with torch.no_grad():
        assert es.einsum("ij->i", a).grad_fn is None
    assert es.einsum("ij->i", a.detach()).grad_fn is None


def test_out_does_not_take_part_in_autograd() -> None:
    a = torch.ones(2, 2, requires_grad=True)
    out = torch.zeros(2)
    with pytest.raises(TypeError, match="out= does not take part in autograd"):
        es.einsum("ij->i", a, out=out)
    assert torch.equal(out, torch.zeros(2))
    with torch.no_grad():
        assert es.einsum("ij->i", a, out=out) is out
    assert out.tolist() == [2.0, 2.0]


def test_gradients_of_broadcast_and_low_precision_operands_keep_their_dtype() -> None:
    a = torch.ones(1, 3, dtype=torch.float16, requires_grad=True)
    b = torch.ones(4, 3, dtype=torch.float32, requires_grad=True)
    es.einsum("...i,...i->...i", a, b).sum().backward()
    assert a.grad is not None and a.grad.dtype == torch.float16 and a.grad.shape == (1, 3)
    assert a.grad.tolist() == [[4.0, 4.0, 4.0]]
    r = torch.ones(3, dtype=F64, requires_grad=True)
    z = torch.ones(3, dtype=torch.complex128)
    es.einsum("i,i->", r, z).real.backward()
    assert r.grad is not None and r.grad.dtype == F64


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_scalar_result_s_gradients_are_computed_in_its_dtype(create_graph: bool) -> None:
    """A 0-d cotangent does not count in torch's promotion: the gradients of a scalar
    result are still computed in its dtype (float64 here, not the float16 of the other
    operand; complex64, not the complex32 torch would make of float16 and a 0-d complex)."""
    x = torch.randn(1000, dtype=torch.float16, generator=torch.Generator().manual_seed(0))
    w = torch.randn(1000, dtype=F64, requires_grad=True)
    y = es.einsum("i,i->", x, w)
    cot = torch.tensor(1 / 3, dtype=F64)
    (grad,) = torch.autograd.grad(y, w, cot, create_graph=create_graph)
    assert grad.dtype == F64
    torch.testing.assert_close(grad, x.double() / 3, rtol=1e-15, atol=1e-15)
    v = torch.randn(3, dtype=torch.complex64, requires_grad=True)
    (grad,) = torch.autograd.grad(es.einsum("i,i->", x[:3], v).abs(), v, create_graph=create_graph)
    assert grad.dtype == torch.complex64


def test_parameters_train_through_the_backend() -> None:
    w = torch.nn.Parameter(torch.zeros(3, 2, dtype=F64))
    x = torch.randn(8, 3, dtype=F64, generator=torch.Generator().manual_seed(0))
    y = x @ torch.tensor([[1.0, -1.0], [2.0, 0.5], [0.0, 3.0]], dtype=F64)
    opt = torch.optim.SGD([w], lr=0.1)
    for _ in range(200):
        opt.zero_grad()
        loss = ((es.einsum("bi,io->bo", x, w) - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 1e-6


@pytest.mark.parametrize(
    "dtypes", [(torch.float32, torch.float32, torch.float64), (torch.float16,) * 2 + (F64,)]
)
def test_the_forward_value_does_not_depend_on_requires_grad(dtypes: tuple[Any, ...]) -> None:
    gen = torch.Generator().manual_seed(3)
    ops = [torch.randn(30, 30, generator=gen).to(d) for d in dtypes]
    plain = es.einsum("ij,jk,kl->il", *ops)
    graph = es.einsum("ij,jk,kl->il", ops[0].requires_grad_(), *ops[1:])
    torch.testing.assert_close(graph.detach(), plain, rtol=0, atol=0)


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_a_network_s_value_does_not_depend_on_requires_grad(seed: int) -> None:
    """Step by step under autograd, each step must be the plan's own product: popped in
    reverse, the steps ran transposed products (and partial products summed elsewhere),
    and float32 results differed by rounding (a review: 73 of 600 random calls)."""
    from opt_einsum.testing import rand_equation

    n = 3 + seed % 4
    eq, shapes = rand_equation(n, 2 + seed % 2, seed=seed, d_min=2, d_max=12, n_out=seed % 3)
    gen = torch.Generator().manual_seed(seed)
    ops = [torch.randn(*shape, generator=gen) for shape in shapes]
    ops = [
        x.T.contiguous().T if k % 3 == seed % 3 and x.dim() == 2 else x for k, x in enumerate(ops)
    ]
    for _ in range(PROMOTE_AT - 1):  # (a class's first calls, a tiny call's until its
        es.einsum(eq, *ops)  # PROMOTE_AT-th, run directly: other sums)
    plain = es.einsum(eq, *ops)
    k = seed % n
    leaf = ops[k].detach().requires_grad_()
    graph = es.einsum(eq, *ops[:k], leaf, *ops[k + 1 :])
    assert torch.equal(graph.detach(), plain)
    (grad,) = torch.autograd.grad(graph.sum(), [leaf])
    wide = [x.double() for x in ops]
    ref = wide[k].requires_grad_()
    (want,) = torch.autograd.grad(torch.einsum(eq, *wide).sum(), [ref])
    torch.testing.assert_close(grad.double(), want, rtol=1e-4, atol=1e-3)


def test_cached_gradients_follow_the_cotangent_layout_and_the_memory_limit() -> None:
    # the gradients' plans are cached per forward plan and cotangent layout; a cotangent of
    # another layout gets its own, and a limit set later still stops them
    g = torch.Generator().manual_seed(3)
    a = torch.randn(4, 3, 5, generator=g, dtype=F64, requires_grad=True)
    b = torch.randn(4, 5, 6, generator=g, dtype=F64, requires_grad=True)
    cotangents = [
        torch.randn(4, 3, 6, generator=g, dtype=F64),
        torch.randn(6, 3, 4, generator=g, dtype=F64).permute(2, 1, 0),  # another layout
    ]
    planned = {"optimize": "greedy"}  # the plan and its Function (a lane's is torch's own)
    for cot in cotangents * 2:
        ours = torch.autograd.grad(es.einsum("bij,bjk->bik", a, b, **planned), (a, b), cot)
        theirs = torch.autograd.grad(torch.einsum("bij,bjk->bik", a, b), (a, b), cot)
        for x, y in zip(ours, theirs):
            torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)
    result = es.einsum("bij,bjk->bik", a, b, **planned)
    before = memory.set_memory_limit(4 * 3 * 6 * 8)  # the forward fits, a gradient does not
    try:
        with pytest.raises(EinsumError, match="memory limit"):
            torch.autograd.grad(result, (a, b), cotangents[0])
    finally:
        memory.set_memory_limit(before)


def test_cached_gradients_take_each_call_s_own_memory_limit() -> None:
    # two calls on one plan, the second with a memory limit: the gradients' plans cached by
    # the first must still be held to the second's limit
    a = torch.randn(4, 3, 5, dtype=F64, requires_grad=True)
    b = torch.randn(4, 5, 6, dtype=F64, requires_grad=True)
    cot = torch.ones(4, 3, 6, dtype=F64)
    torch.autograd.grad(es.einsum("bij,bjk->bik", a, b), (a, b), cot)  # fills the cache
    limited = es.einsum("bij,bjk->bik", a, b, memory_limit=4 * 3 * 6 * 8)  # the forward fits
    with pytest.raises(EinsumError, match="memory limit"):
        torch.autograd.grad(limited, (a, b), cot)


def test_a_tight_memory_limit_once_does_not_send_later_backwards_the_full_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from einstride.engine.backends.torch import backend

    a = torch.randn(5, 3, 4, dtype=F64, requires_grad=True)
    b = torch.randn(5, 4, 6, dtype=F64, requires_grad=True)
    cot = torch.ones(5, 3, 6, dtype=F64)
    limited = es.einsum("bij,bjk->bik", a, b, memory_limit=5 * 3 * 6 * 8)
    with pytest.raises(EinsumError, match="memory limit"):
        torch.autograd.grad(limited, (a, b), cot)  # the first backward on this plan
    full_calls: list[Any] = []
    original = backend.einsum
    monkeypatch.setattr(backend, "einsum", lambda call: full_calls.append(call) or original(call))
    grads = torch.autograd.grad(es.einsum("bij,bjk->bik", a, b), (a, b), cot)
    assert full_calls == []  # the gradients' plans, looked up once, run directly
    expected = torch.autograd.grad(torch.einsum("bij,bjk->bik", a, b), (a, b), cot)
    for x, y in zip(grads, expected):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "equation, shape, dtype",
    [
        ("ijk->i", (3, 4, 5), F64),
        ("ijk->ki", (3, 4, 5), F64),
        ("ij->", (3, 4), torch.float32),
        ("bij->b", (2, 3, 4), torch.complex128),
    ],
)
def test_one_sum_runs_under_torch_s_own_autograd(
    equation: str, shape: tuple[int, ...], dtype: torch.dtype
) -> None:
    """A call that is one ``torch.sum`` gets torch's own graph (no ``EinsumFunction``): the
    gradient of torch.einsum, a zero-stride view, differentiable again."""
    x = torch.randn(shape, dtype=dtype, requires_grad=True)
    ours, theirs = es.einsum(equation, x), torch.einsum(equation, x)
    assert ours.grad_fn is not None and ours.grad_fn.name() != "EinsumFunctionBackward"
    cotangent = torch.randn_like(theirs)
    (grad,) = torch.autograd.grad(ours, [x], cotangent, create_graph=True)
    assert torch.allclose(grad, torch.autograd.grad(theirs, [x], cotangent)[0])
    assert 0 in grad.stride()  # the cotangent expanded, not written out
    if dtype == F64:
        assert torch.autograd.gradgradcheck(lambda t: es.einsum(equation, t), (x,))


@pytest.mark.parametrize(
    "equation, options",
    [
        ("ij->ji", {"optimize": "greedy"}),  # planned (no lane): a permuted view
        ("ijk->kij", {"memory_limit": 10**9}),
        ("ij->ij", {"optimize": "greedy"}),
        ("ijk->ki", {"optimize": "greedy"}),  # one sum
    ],
)
def test_a_permuted_view_runs_under_torch_s_own_autograd(
    equation: str, options: dict[str, Any]
) -> None:
    """A permuted view of one operand gets torch's own graph, as torch.einsum's: the result
    stays a view torch tracks, so an in-place change of the operand afterwards is handled
    as torch.einsum's is (a custom Function's view output refuses it), and the gradients
    are torch.einsum's, to any order."""
    rank = len(equation.split("->")[0])
    leaf = torch.randn((3,) * rank, dtype=F64, requires_grad=True)
    grads = []
    for ours in (True, False):
        x = leaf * 1
        y = es.einsum(equation, x, **options) if ours else torch.einsum(equation, x)
        assert y.grad_fn.name() != "EinsumFunctionBackward"
        x.mul_(2)  # the operand changed in place after the call
        grads.append(torch.autograd.grad(y.sum(), leaf)[0])
    torch.testing.assert_close(grads[0], grads[1])
    assert torch.autograd.gradgradcheck(lambda t: es.einsum(equation, t, **options), (leaf,))


def test_a_diagonal_s_backward_stays_einstride_s_and_reads_no_operand() -> None:
    """A diagonal (a view) and a trace keep einstride's backward (zero pages, 3-4x faster
    than torch's zeroed gradient), which reads no operand: an in-place change of the
    operand after a trace is fine; after a diagonal view torch refuses the backward with
    its own error (a custom Function's view), never a wrong gradient."""
    leaf = torch.randn(3, 3, dtype=F64, requires_grad=True)
    x = leaf * 1
    y = es.einsum("ii->", x, optimize="greedy")
    assert y.grad_fn.name() == "EinsumFunctionBackward"
    x.mul_(2)
    torch.testing.assert_close(torch.autograd.grad(y, leaf)[0], torch.eye(3, dtype=F64))
    x = leaf * 1
    y = es.einsum("ii->i", x)
    assert y.grad_fn.name() == "EinsumFunctionBackward"
    x.mul_(2)
    with pytest.raises(RuntimeError, match="view"):
        torch.autograd.grad(y.sum(), leaf)


def test_an_operand_no_gradient_reads_is_not_saved() -> None:
    """The Function saves an operand only where another one's gradient reads it: changing
    it in place afterwards does not fail a backward that never needed it."""
    a = torch.randn(3, 4, dtype=F64, requires_grad=True)
    b = torch.randn(4, 5, dtype=F64)
    x = a * 1
    y = es.einsum("ij,jk->ik", x, b, optimize="greedy")  # (planned: einstride's backward)
    assert y.grad_fn.name() == "EinsumFunctionBackward"
    x.mul_(2)  # x's gradient reads b, never x
    (grad,) = torch.autograd.grad(y.sum(), a)
    torch.testing.assert_close(grad, b.sum(1).expand(3, 4))
    b2 = b.clone()
    y = es.einsum("ij,jk->ik", a, b2, optimize="greedy")
    b2.mul_(2)  # a's gradient reads b2: torch's own check refuses, as for torch.einsum
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad(y.sum(), a)


@pytest.mark.parametrize(
    "equation, shapes, dtype, options",
    [
        ("ii->i", [(3, 3)], F64, {"dtype": torch.complex128}),  # cast: einstride's backward
        ("ij,jk->ik", [(2, 3), (3, 4)], F64, {"optimize": "greedy"}),
        ("i,j->ij", [(700,), (400,)], F64, {}),  # an outer product past the lane's bound
        ("ij->i", [(2, 3)], torch.float16, {}),  # accumulated in float32, then cast
    ],
)
def test_other_calls_keep_einstride_s_backward(
    equation: str, shapes: list[tuple[int, ...]], dtype: torch.dtype, options: dict[str, Any]
) -> None:
    tensors = [torch.ones(s, dtype=dtype, requires_grad=True) for s in shapes]
    assert es.einsum(equation, *tensors, **options).grad_fn.name() == "EinsumFunctionBackward"


@pytest.mark.parametrize(
    "equation, shapes, kernel",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)], "MmBackward0"),
        ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)], "UnsafeViewBackward0"),  # matmul's bmm
        ("ij->ji", [(2, 3)], "PermuteBackward0"),
        ("ijk->ki", [(2, 3, 4)], "PermuteBackward0"),  # a sum, permuted
        ("i,j->ij", [(3,), (4,)], "MulBackward0"),  # a small outer product
        ("ij,ij->ij", [(3, 4), (3, 4)], "MulBackward0"),
    ],
)
def test_a_lanes_kernel_runs_under_torch_s_own_autograd(
    equation: str, shapes: list[tuple[int, ...]], kernel: str
) -> None:
    """A call a torch lane runs (one matmul, one mul, a view or a sum over it) records
    torch's own graph, as torch.einsum's: the gradients are torch's, and on a new shape
    forward plus backward cost what torch.einsum's do (measured, k of 40-99: bhqd,bhkd->bhqk
    2,290 -> 657 µs, torch.einsum 650; ij,jk->ik of k x 8 980 -> 187, 303; i,j->ij 928 ->
    244, 236), where einstride's Function made three plans per new shape."""
    g = torch.Generator().manual_seed(5)
    tensors = [torch.randn(s, generator=g, dtype=F64, requires_grad=True) for s in shapes]
    before = lanes.lane_answers()
    ours = es.einsum(equation, *tensors)
    assert lanes.lane_answers() == before + 1 and ours.grad_fn.name() == kernel
    theirs = torch.einsum(equation, *tensors)
    cot = torch.randn(ours.shape, generator=g, dtype=F64)
    for x, y in zip(torch.autograd.grad(ours, tensors, cot),
                    torch.autograd.grad(theirs, tensors, cot)):  # fmt: skip
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradgradcheck(lambda *t: es.einsum(equation, *t), tuple(tensors))


@pytest.mark.parametrize("dtype", [torch.complex128, torch.float64])
def test_a_sum_cast_by_dtype_keeps_einstride_s_backward(dtype: torch.dtype) -> None:
    """A sum into another dtype (``dtype=``) keeps the Function: torch's own sum of a real
    operand into complex has no backward to the operand, einstride's gives its real part."""
    x = torch.randn(3, 4, dtype=torch.float32, requires_grad=True)
    y = es.einsum("ij->i", x, dtype=dtype)
    assert y.dtype == dtype and y.grad_fn.name() == "EinsumFunctionBackward"
    (grad,) = torch.autograd.grad(y.real.sum(), [x])
    assert grad.dtype == torch.float32 and bool((grad == 1).all())


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,ij->", [(3, 4), (3, 4)]),
        ("ij,j->", [(3, 4), (4,)]),
        ("ij,jk->", [(3, 4), (4, 5)]),
        ("ijk,k->i", [(2, 3, 4), (4,)]),
        ("dbc,dac->ab", [(2, 3, 4), (2, 5, 4)]),
        ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_a_result_changed_in_place_backpropagates_as_torch_einsums(
    equation: str, shapes: list[tuple[int, ...]], dtype: torch.dtype
) -> None:
    """``loss += 1.0`` and ``y.mul_(2)`` on the result: einstride's Function returned a
    view of its product's buffer, which autograd refuses to change in place (a review)."""
    torch.manual_seed(0)
    tensors = [torch.randn(s, dtype=dtype, requires_grad=True) for s in shapes]
    grads = []
    for einsum in (es.einsum, torch.einsum):
        result = einsum(equation, *tensors)
        result.mul_(2)
        result += 1.0
        result.sum().backward()
        grads.append([t.grad for t in tensors])
        for t in tensors:
            t.grad = None
    for mine, theirs in zip(*grads):
        torch.testing.assert_close(mine, theirs, rtol=1e-2, atol=1e-2)


def test_a_results_own_tensor_shares_no_operands_storage() -> None:
    """The result made a tensor of its own holds the product's buffer, never an operand's
    (a diagonal stays a view of its operand, which shares its version counter)."""
    a = torch.randn(4, 4, dtype=torch.float32, requires_grad=True)
    diagonal = es.einsum("ii->i", a)
    assert diagonal._base is not None and diagonal.untyped_storage().data_ptr() == (
        a.untyped_storage().data_ptr()
    )
    product = es.einsum("ij,jk->", a, a)
    assert product._base is None
    assert product.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()


def test_a_single_use_path_optimizer_leaves_the_backward_its_own_search() -> None:
    """The torch Function's backward einsums got the forward's optimizer object; opt_einsum's
    random ones refuse a second contraction (a review: float16 operands, three of them)."""
    oe = pytest.importorskip("opt_einsum")
    torch.manual_seed(1)
    tensors = [
        torch.randn(s, dtype=torch.float16, requires_grad=True) for s in [(2, 3), (3, 4), (4, 5)]
    ]
    es.einsum("ab,bc,cd->ad", *tensors, optimize=oe.RandomGreedy()).sum().backward()
    mine = [t.grad for t in tensors]
    for t in tensors:
        t.grad = None
    torch.einsum("ab,bc,cd->ad", *tensors).sum().backward()
    for got, want in zip(mine, (t.grad for t in tensors)):
        torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)


def test_the_backward_of_a_left_to_right_call_searches_its_own_path() -> None:
    """``optimize=False`` runs the call's operands left to right; its backward einsums'
    operands (the cotangent first) came in that order too, so ``ab,bc,cd,de->ae``'s
    gradient of ``bc`` began with the outer product of the cotangent and ``ab``: 20 MB,
    over the memory limit the forward met (a review; 400x the time without a limit)."""
    torch.manual_seed(2)
    tensors = [torch.randn(40, 40, dtype=torch.float64, requires_grad=True) for _ in range(4)]
    result = es.einsum("ab,bc,cd,de->ae", *tensors, optimize=False, memory_limit=2**20)
    mine = torch.autograd.grad(result.sum(), tensors)
    wanted = torch.autograd.grad(torch.einsum("ab,bc,cd,de->ae", *tensors).sum(), tensors)
    for got, want in zip(mine, wanted):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize(
    ("equation", "shape", "kwargs"),
    [
        ("ii->i", (3, 3), {"memory_limit": 10**9}),
        ("ii->", (3, 3), {"memory_limit": 10**9}),
        ("i->ii", (3,), {"memory_limit": 10**9}),
        ("ij->i", (2, 3), {"dtype": torch.float32}),
    ],
)
def test_a_result_that_saved_nothing_backpropagates_twice(
    equation: str, shape: Any, kwargs: Any
) -> None:
    """A review: the Function read its saved tensors even when it saved none, and torch
    refused the second backward (torch.einsum's nodes save nothing there)."""
    x = torch.rand(shape, dtype=torch.float64, requires_grad=True)
    y = es.einsum(equation, x, **kwargs)
    assert y.grad_fn is not None and y.grad_fn.name() == "EinsumFunctionBackward"
    (y**2).sum().backward()
    first = x.grad.clone()
    (3 * y).sum().backward()  # (raised: "Trying to backward through the graph a second time")
    assert torch.allclose(x.grad - first, torch.autograd.grad((3 * y).sum(), x)[0])


def test_a_call_by_steps_under_autograd_counts_the_intermediates_it_keeps() -> None:
    # a review: the guard checked the plan's peak, which frees each intermediate after its
    # reader, where the steps under autograd keep them for the backward: 720,000 bytes
    # measured under a limit of 640,000, and explain said 640,000. Past the limit by
    # steps, the call runs as one function, which keeps none (a second review: refusing it
    # refused calls that fit)
    torch.manual_seed(0)
    shapes = [(100, 400), (400, 400), (400, 400), (400, 100)]
    leaves = [torch.randn(*s, dtype=torch.float64).requires_grad_() for s in shapes]
    equation = "ab,bc,cd,de->ae"
    for limit, line in (
        (640_000, "by steps, their kept results (720,000 B) would pass the memory limit"),
        (720_000, "keep their results for the backward: peak 720,000 B"),
    ):
        report = es.explain(equation, *leaves, memory_limit=limit)
        assert line in report and "einsum would raise" not in report, report
        for _ in range(2):  # (the first call of its shapes and the planned one)
            result = es.einsum(equation, *leaves, memory_limit=limit)
            assert result.requires_grad
            torch.testing.assert_close(result, torch.einsum(equation, *leaves))
    with torch.no_grad():  # (no graph: the plan's own peak)
        assert "autograd:" not in es.explain(equation, *leaves, memory_limit=640_000)
    # one function past the limit by steps: its gradients are torch's (the backward's
    # gradients fit this limit, those above do not)
    small = [torch.randn(*s, dtype=torch.float64).requires_grad_()
             for s in [(60, 2), (2, 3), (3, 2), (2, 3)]]  # fmt: skip
    assert "would pass the memory limit" in es.explain(equation, *small, memory_limit=2000)
    cotangent = torch.randn(60, 3, dtype=torch.float64)
    got = torch.autograd.grad(es.einsum(equation, *small, memory_limit=2000), small, cotangent)
    want = torch.autograd.grad(torch.einsum(equation, *small), small, cotangent)
    for mine, theirs in zip(got, want):
        torch.testing.assert_close(mine, theirs)
