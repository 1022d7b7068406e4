"""The torch backend through the public API: forms, semantics, dtypes, devices, errors."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

import einstride as es
from einstride.engine.backends.torch import dtypes as torch_dtypes
from einstride.engine.backends.torch.operands import facts_of
from einstride.engine.backends.torch.plan import clear_cache, entry_for

F64 = torch.float64


def _rand(*shape: int, dtype: torch.dtype = F64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


def _same(got: torch.Tensor, expected: np.ndarray) -> None:
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


# -- forms ----------------------------------------------------------------------------------


def test_string_and_sublist_forms_return_torch_tensors() -> None:
    a, b = _rand(2, 3), _rand(3, 4, seed=1)
    expected = a.numpy() @ b.numpy()
    _same(es.einsum("ij,jk->ik", a, b), expected)
    _same(es.einsum(a, [0, 1], b, [1, 2], [0, 2]), expected)
    _same(es.einsum(a, [0, 1], b, [1, 2]), expected)  # implicit output
    _same(es.einsum("ij,jk", a, b), expected)


def test_expression_path_and_explain_take_torch_tensors() -> None:
    a, b, c = _rand(4, 5), _rand(5, 6, seed=1), _rand(6, 3, seed=2)
    expected = a.numpy() @ b.numpy() @ c.numpy()
    expr = es.contract_expression("ij,jk,kl->il", a.shape, b.shape, c.shape)
    _same(expr(a, b, c), expected)
    path, report = es.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
    assert path[0] == "einsum_path" and len(path) == 3
    assert "path:" in report
    text = es.explain("ij,jk,kl->il", a, b, c)
    assert text.splitlines()[0] == "einsum 'ij,jk,kl->il' on torch (cpu)  (labels: ij,jk,kl->il)"
    assert "on torch: result torch.float64 on cpu" in text


def test_einsum_path_and_dtype_accept_parameters_and_torch_dtypes() -> None:
    w = torch.nn.Parameter(_rand(3, 3))
    path, _ = es.einsum_path("ij,jk->ik", w, w)
    assert path == ["einsum_path", (0, 1)]
    got = es.einsum("ij,jk->ik", w, w, dtype=torch.float32)
    assert got.dtype == torch.float32 and got.requires_grad


def test_n_operands_follow_every_path_option() -> None:
    ops = [_rand(3, 4), _rand(4, 5, seed=1), _rand(5, 2, seed=2), _rand(2, 3, seed=3)]
    expected = np.einsum("ab,bc,cd,de->ae", *[t.numpy() for t in ops])
    for optimize in (False, True, "greedy", "optimal", "dp", [(0, 1), (0, 1), (0, 1)]):
        _same(es.einsum("ab,bc,cd,de->ae", *ops, optimize=optimize), expected)


# -- docs/einsum.md semantics ----------------------------------------------------------------


def test_repeated_output_labels_expand_the_diagonal() -> None:
    x = torch.arange(1.0, 4.0, dtype=F64)
    got = es.einsum("i->iii", x)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = i + 1
    _same(got, expected)
    a, b = _rand(2, 3), _rand(3, 2, seed=1)
    got = es.einsum("ab,bc->aaca", a, b)
    m = a.numpy() @ b.numpy()
    expected = np.zeros((2, 2, 2, 2))
    for i in range(2):
        expected[i, i, :, i] = m[i]
    _same(got, expected)


def test_diagonals_and_pure_views() -> None:
    m = _rand(3, 3)
    d = es.einsum("ii->i", m)
    _same(d, np.diag(m.numpy()))
    assert d.data_ptr() == m.data_ptr() and d is not m  # a view, as NumPy returns
    t = es.einsum("ij->ji", m)
    assert t.data_ptr() == m.data_ptr() and t.stride() == (1, 3)
    cube = _rand(3, 3, 3)
    _same(es.einsum("iii->i", cube), np.einsum("iii->i", cube.numpy()))
    _same(es.einsum("ii", m), np.trace(m.numpy()))  # implicit mode: the trace
    assert es.einsum("ii", m).dim() == 0


def test_ellipsis_broadcasts_and_named_labels_do_not() -> None:
    a, b = _rand(2, 1, 3), _rand(4, 3, seed=1)
    _same(es.einsum("...i,...i->...", a, b), np.einsum("...i,...i->...", a.numpy(), b.numpy()))
    with pytest.raises(es.EinsumError, match="named labels never broadcast"):
        es.einsum("ij,ij->ij", _rand(2, 1), _rand(2, 3))


def test_any_unicode_label() -> None:
    a, b = _rand(2, 2), _rand(2, 2, seed=1)
    _same(es.einsum("αβ,βγ->αγ", a, b), a.numpy() @ b.numpy())
    _same(es.einsum("中文,文字", a, b), a.numpy() @ b.numpy())


def test_errors_are_the_numpy_paths_errors() -> None:
    cases = [
        ("ij,jk->ik", [(2, 3), (4, 5)]),
        ("ij,jk->il", [(2, 3), (3, 4)]),
        ("ij->", [(2, 3, 4)]),
        ("ij,jk->ik", [(2, 3)]),
    ]
    for equation, shapes in cases:
        with pytest.raises(es.EinsumError) as from_numpy:
            es.einsum(equation, *[np.ones(s) for s in shapes])
        with pytest.raises(es.EinsumError) as from_torch:
            es.einsum(equation, *[torch.ones(s) for s in shapes])
        assert str(from_torch.value) == str(from_numpy.value)


# -- dtypes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (torch.int32, torch.float32),  # NumPy: float64
        (torch.int64, torch.float16),  # NumPy: float64
        (torch.uint8, torch.int8),
        (torch.bool, torch.int32),
        (torch.float32, torch.complex64),
        (torch.bfloat16, torch.float16),
    ],
)
def test_result_dtype_follows_torch_result_type(left: torch.dtype, right: torch.dtype) -> None:
    a = torch.ones(2, 3, dtype=left)
    b = torch.ones(3, 2, dtype=right)
    got = es.einsum("ij,jk->ik", a, b)
    assert got.dtype == torch.result_type(a, b)
    assert bool((got == 3).all())


def test_a_zero_dim_operand_does_not_widen_a_dimensioned_one() -> None:
    got = es.einsum("ij,->ij", torch.ones(2, 2, dtype=torch.float16), torch.tensor(2.0, dtype=F64))
    assert got.dtype == torch.float16  # torch.result_type; NumPy would give float64
    got = es.einsum("ij,->ij", torch.ones(2, 2, dtype=torch.int32), torch.tensor(2.5, dtype=F64))
    assert got.dtype == F64 and bool((got == 2.5).all())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_small_floats_accumulate_in_float32(dtype: torch.dtype) -> None:
    # 4096 ones: a float16/bfloat16 running sum stalls (at 2048 / 256), a float32 one does not
    ones = torch.ones(4096, dtype=dtype)
    total = es.einsum("i->", ones)
    assert total.dtype == dtype and float(total) == 4096.0
    a, b = torch.ones(2, 4096, dtype=dtype), torch.ones(4096, 2, dtype=dtype)
    assert bool((es.einsum("ij,jk->ik", a, b) == 4096).all())


def test_integers_wrap_and_bools_are_or_of_and() -> None:
    a = torch.full((2, 300), 100, dtype=torch.int8)
    got = es.einsum("ij,j->i", a, torch.ones(300, dtype=torch.int8))
    assert got.dtype == torch.int8
    assert got.tolist() == np.einsum("ij,j->i", a.numpy(), np.ones(300, np.int8)).tolist()
    m = torch.tensor([[True, False], [False, False]])
    assert es.einsum("ij,jk->ik", m, m).tolist() == [[True, False], [False, False]]
    assert es.einsum("ij->i", m).tolist() == [True, False]


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32])
@pytest.mark.parametrize("equation", ["ab->a", "ab->b", "ab->", "ii->", "ii->i", "abc->ca"])
def test_one_operand_integer_sums_wrap_in_their_dtype(dtype: torch.dtype, equation: str) -> None:
    """torch.sum of integers is int64 unless told: the result keeps the operand's dtype and
    wraps around as NumPy's does (the spec's integer rule)."""
    shape = (5,) * len(equation.split("->")[0])
    x = torch.full(shape, 100, dtype=dtype)
    got = es.einsum(equation, x)
    expected = np.einsum(equation, x.numpy())
    assert got.dtype == dtype
    assert np.array_equal(got.numpy(), expected)


def test_dtype_keyword_casts() -> None:
    a = torch.full((2, 2), 1.7, dtype=F64)
    assert es.einsum("ij->ij", a, dtype=torch.int32).tolist() == [[1, 1], [1, 1]]
    got = es.einsum("ij,jk->ik", a, a, dtype="float32")
    assert got.dtype == torch.float32


def test_every_supported_dtype_round_trips_the_planner() -> None:
    for dtype in torch_dtypes.SUPPORTED:
        assert torch_dtypes.torch_dtype(torch_dtypes.numpy_dtype(dtype, "x"), "x") == dtype
    assert torch_dtypes.numpy_dtype(torch.bfloat16, "x") == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(TypeError, match="uint16"):
        es.einsum("i->", torch.ones(3, dtype=torch.uint16))


# -- operands -------------------------------------------------------------------------------


def test_numpy_operands_join_the_torch_device_and_dtype_rules() -> None:
    a = _rand(2, 3)
    b = np.arange(12.0).reshape(3, 4)[:, ::-1]  # negative strides: torch cannot view it
    got = es.einsum("ij,jk->ik", a, b)
    assert isinstance(got, torch.Tensor)
    _same(got, a.numpy() @ b)
    bf = np.ones((3,), ml_dtypes.bfloat16)
    assert es.einsum("i,i->", torch.ones(3, dtype=torch.bfloat16), bf).dtype == torch.bfloat16
    assert float(es.einsum("i,->i", torch.ones(3), 2.0)[0]) == 2.0
    assert float(es.einsum("i,i->", torch.ones(2), es.tensor([1.0, 2.0]))) == 3.0


def test_operands_on_different_devices_are_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"different devices \(operand 0 on cpu, operand 1 on meta"):
        es.einsum("i,i->", torch.ones(2), torch.ones(2, device="meta"))


def test_unconvertible_and_sparse_operands_are_type_errors() -> None:
    with pytest.raises(TypeError, match=r"operand 1 .* cannot be converted"):
        es.einsum("i,i->", torch.ones(2), np.array(["a", "b"], dtype=object))
    with pytest.raises(TypeError, match="sparse"):
        es.einsum("ij->", torch.eye(2).to_sparse())


def test_conjugate_views_are_read_as_their_values() -> None:
    z = torch.tensor([1 + 2j, 3 - 1j])
    got = es.einsum("i,i->", z.conj(), torch.ones(2, dtype=torch.complex64))
    assert complex(got) == 4 - 1j


def test_registry_imports_torch_only_when_the_user_did() -> None:
    code = (
        "import sys, numpy as np, einstride as es\n"
        "es.einsum('ij->j', np.ones((2, 2)))\n"
        "es.explain('ij->j', np.ones((2, 2)))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_plans_are_cached_per_layout() -> None:
    clear_cache()
    a = torch.ones(4, 3)
    first = entry_for("ij,jk->ik", facts_of([a, a.T]), None, None, "auto")
    assert entry_for("ij,jk->ik", facts_of([a, a.T]), None, None, "auto") is first
    other = entry_for("ij,jk->ik", facts_of([a, a.T.contiguous()]), None, None, "auto")
    assert other is not first and other.plan.strides != first.plan.strides


def test_out_overlapping_an_operand_that_was_converted_is_a_layout_error() -> None:
    """An operand whose converted tensor is a copy (a lazy conjugate or negation resolved,
    a NumPy view of negative strides) still names the memory it reads: ``out=`` there ran
    in place (a review); the converted copy's own memory was checked instead."""
    z = torch.tensor([[1 + 1j, 2 + 2j]])
    x = torch.tensor([1.0, 2.0, 3.0])
    a = np.arange(4.0)
    calls = [
        lambda: es.einsum("ij->ij", z.conj(), out=z),
        lambda: es.einsum("i->i", torch._neg_view(x), out=x),
        lambda: es.einsum("i,i->i", a[::-1], torch.ones(4).double(), out=torch.from_numpy(a)),
    ]
    for call in calls:
        with pytest.raises(es.LayoutError, match="out= overlaps operand 0"):
            call()
    separate = torch.zeros(4, dtype=torch.float64)
    es.einsum("i,i->i", a[::-1], torch.ones(4, dtype=torch.float64), out=separate)
    assert separate.tolist() == [3.0, 2.0, 1.0, 0.0]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_nested_tensor_is_a_type_error() -> None:
    """Its layout says strided, but it has no sizes: torch's own internal error came out."""
    nested = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
    for call in (
        lambda: es.einsum("ij->i", nested),
        lambda: es.einsum("ij,jk->ik", nested, torch.ones(3, 3)),
        lambda: es.explain("ij->i", nested),
    ):
        with pytest.raises(TypeError, match="nested torch tensor"):
            call()


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize(
    ("equation", "shapes", "fortran"),
    [
        ("ij,jk->ik", [(2, 3), (3, 4)], False),
        ("ij,jk->ik", [(2, 3), (3, 4)], True),
        ("i,j->ij", [(2,), (3,)], False),  # vectors are Fortran contiguous too (NumPy's "A")
    ],
)
def test_order_lays_out_the_result_as_the_numpy_path_does(
    order: str, equation: str, shapes: list[tuple[int, ...]], fortran: bool
) -> None:
    """order= was accepted and dropped on torch (a review)."""
    a, b = (np.full(shape, 0.5) for shape in shapes)
    if fortran:
        a, b = np.asfortranarray(a), np.asfortranarray(b)
    mine = es.einsum(equation, torch.from_numpy(a), torch.from_numpy(b), order=order)
    theirs = es.einsum(equation, a, b, order=order)
    assert np.array_equal(mine.numpy(), theirs)
    if order != "K":
        element_strides = tuple(s // theirs.itemsize for s in theirs.strides)
        assert mine.stride() == element_strides


@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float16])
def test_casting_rules_the_dtype_and_out_casts_as_on_the_numpy_path(
    casting: str, dtype: Any
) -> None:
    """casting= was accepted and dropped on torch (a review): dtype=int32 with 'no' ran."""
    a, b = np.full((2, 3), 0.5, np.float32), np.ones((3, 4), np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    outcomes = []
    for call in (
        lambda: es.einsum("ij,jk->ik", a, b, dtype=dtype, casting=casting),
        lambda: es.einsum("ij,jk->ik", ta, tb, dtype=dtype, casting=casting),
        lambda: es.einsum("ij,jk->ik", a, b, out=np.zeros((2, 4), dtype), casting=casting),
        lambda: es.einsum(
            "ij,jk->ik", ta, tb, out=torch.from_numpy(np.zeros((2, 4), dtype)), casting=casting
        ),
    ):
        try:
            outcomes.append(np.asarray(call()).tolist())
        except TypeError:
            outcomes.append("refused")
    assert outcomes[1] == outcomes[0] and outcomes[3] == outcomes[2]


def test_casting_without_dtype_checks_the_operands_into_the_result_dtype() -> None:
    """As NumPy's: casting= rules every operand's cast into the dtype computed in (torch's
    result type here), not only a dtype= one's."""
    a, b = torch.ones(3, dtype=torch.int32), torch.ones(3, dtype=torch.float32)
    with pytest.raises(es.EinsumTypeError, match="casting='no'"):
        es.einsum("i,i->", a, b, casting="no")
    assert float(es.einsum("i,i->", a, b, casting="same_kind")) == 3.0
    assert float(es.einsum("i,i->", b, b, casting="no")) == 3.0


def test_einsum_path_reports_the_torch_plan() -> None:
    """einsum_path on torch tensors gave the NumPy report: int32 with float32 said float64
    (torch's result is float32) (a review)."""
    a, b = torch.ones(3, 4, dtype=torch.int32), torch.ones(4, 5, dtype=torch.float32)
    path, report = es.einsum_path("ij,jk->ik", a, b)
    assert path == ["einsum_path", (0, 1)] and "on torch" in report
    assert "(3, 5) float32" in report and report == es.explain("ij,jk->ik", a, b)
    assert es.einsum_path(a, [0, 1], b, [1, 2], [0, 2])[0] == path


@pytest.mark.parametrize(
    ("dtype", "number"),
    [(torch.float16, 3.0), (torch.bfloat16, 3.0), (torch.int8, 3), (torch.uint8, 3),
     (torch.int32, 2.5), (torch.float32, 1j), (torch.bool, 2)],
)  # fmt: skip
def test_a_python_number_promotes_as_torch_s_wrapped_numbers(dtype: Any, number: Any) -> None:
    """Next to 0-dim tensors a Python number was a float32/int64 0-dim tensor, which
    outranked them: float16 times 3.0 gave float32 (a review); torch ranks it last."""
    t = torch.tensor(2, dtype=dtype)
    got = es.einsum(",->", t, number)
    want = t * number
    assert got.dtype == want.dtype and torch.equal(got, want)
    vector = torch.ones(2, dtype=dtype)
    assert es.einsum("i,->i", vector, number).dtype == (vector * number).dtype


def test_explain_over_the_memory_limit_says_what_einsum_would_raise() -> None:
    """As on the NumPy path; the torch report showed the plan alone (a review)."""
    a, b = torch.randn(20, 30), torch.randn(30, 40)
    report = es.explain("ij,jk->ik", a, b, memory_limit=100)
    assert "memory limit: 100 B; einsum would raise EinsumError" in report
    with pytest.raises(es.EinsumError):
        es.einsum("ij,jk->ik", a, b, memory_limit=100)
    assert "would raise" not in es.explain("ij,jk->ik", a, b)


def test_functions_beside_einsum_refuse_a_tensor_under_autograd_with_a_type_error() -> None:
    # a review: torch's bare RuntimeError leaked from the array-like functions (es.tensor's
    # was even turned into OutOfRangeError); einsum itself takes the tensor under autograd
    g = torch.ones(3, dtype=F64, requires_grad=True)
    calls = (
        lambda: es.as_tensor(g),
        lambda: es.tensor(g),
        lambda: es.full((3,), g),
        lambda: es.reverse(g, 0),
        lambda: es.gather(g, [0]),
        lambda: es.add(g, 1),
        lambda: es.pad(g, [(1, 1)]),
        lambda: es.copy_to(g, np.empty(3)),
    )
    for call in calls:
        with pytest.raises(TypeError, match=r"requires grad .* tensor\.detach\(\)"):
            call()
    assert es.add(g.detach(), 1).tolist() == [2.0] * 3
    assert es.einsum("i->", g).requires_grad


def test_dtype_of_the_other_byte_order_is_its_native_twin() -> None:
    # torch has one byte order: dtype=">f4" is float32 (it was a TypeError)
    x = torch.arange(12.0, dtype=F64).reshape(3, 4)
    got = es.einsum("ij->i", x, dtype=">f4")
    assert got.dtype == torch.float32 and got.tolist() == [6.0, 22.0, 38.0]


def test_a_numpy_operand_of_the_other_byte_order_joins_torch_operands() -> None:
    # a review: torch.as_tensor refused it ("byte order different from the native")
    a = np.arange(6.0).reshape(2, 3).astype(">f8")
    got = es.einsum("ij,jk->ik", a, torch.ones(3, 2, dtype=F64))
    assert got.tolist() == [[3.0, 3.0], [12.0, 12.0]] and got.dtype == F64


def test_a_process_s_first_call_builds_the_graph_later_calls_build() -> None:
    # a review: the first call imported the backend (which registers its hot path) and took
    # the full path, another graph: a non-reentrant checkpoint's recomputation then failed
    code = (
        "import torch, einstride as es\n"
        "from torch.utils.checkpoint import checkpoint\n"
        "a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)\n"
        "b = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)\n"
        "block = lambda x, w: es.einsum('ij,jk->ik', x, w).sin()\n"
        "checkpoint(block, a, b, use_reentrant=False).sum().backward()\n"
        "want = (torch.cos(a.detach() @ b.detach()) @ b.detach().T)\n"
        "assert torch.allclose(a.grad, want)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_broadcast_tensor_beside_torch_operands_converts_without_a_warning() -> None:
    # a review: numpy() of repeated locations is read-only now, and torch.as_tensor warned
    import warnings

    t = es.Tensor(np.arange(3.0), (2, 3), (0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = es.einsum("ij,j->i", t, torch.ones(3, dtype=F64))
    assert got.tolist() == [3.0, 3.0]


def test_optimize_false_on_torch_keeps_the_pairs() -> None:
    # a review: NumPy's one-loop fallback planned for torch ran as the product of every
    # operand (288 MB for these shapes, under a 1 MiB limit, in an expression)
    shapes = ((300, 20), (20, 300), (300, 20))
    ops = [torch.rand(s, dtype=F64) for s in shapes]
    report = es.explain("ij,jk,kl->il", *ops, optimize=False)
    assert "one loop" not in report and "step 2: contract" in report
    assert "one loop" in es.explain("ij,jk,kl->il", *[o.numpy() for o in ops], optimize=False)
    expr = es.contract_expression("ij,jk,kl->il", *shapes, optimize=False, memory_limit="1MiB")
    want = torch.einsum("ij,jk,kl->il", *ops)
    assert torch.allclose(expr(*ops), want) and torch.allclose(
        es.einsum("ij,jk,kl->il", *ops, optimize=False), want
    )


def test_gradients_follow_their_torch_operand_s_device_and_the_backend_s_dtypes() -> None:
    # a review: a torch operand's gradient landed on the CPU where its backward einsum held
    # no other tensor; a list's was in NumPy's float64; NumPy operands torch cannot take
    # as they are (negative strides, the other byte order, bfloat16) raised torch's errors
    a = torch.ones(2, 3, device="meta")
    (grad,) = es.einsum_vjp("ij->i", (a,), np.ones(2))
    assert grad.device.type == "meta" and grad.shape == (2, 3)
    b = torch.ones(3, dtype=F64)
    for other in (np.arange(3.0)[::-1], np.ones(3, ">f8"), np.ones(3, ml_dtypes.bfloat16)):
        ga, gb = es.einsum_vjp("i,i->", (b, other), np.float64(1.0))
        assert ga.dtype == F64 and gb.shape == (3,)
        assert gb.dtype == (torch.bfloat16 if other.dtype == ml_dtypes.bfloat16 else F64)
    _, glist = es.einsum_vjp("i,i->", (torch.ones(3), [1.0, 2.0, 3.0]), torch.tensor(1.0))
    assert glist.dtype == torch.float32


@pytest.mark.parametrize("equation", ["i,i->", "ij,ij->"])
@pytest.mark.parametrize("into_out", [False, True])
def test_a_float32_full_contraction_is_as_accurate_as_torch_einsum(
    equation: str, into_out: bool
) -> None:
    """A scalar result's (1 x K) @ (K x 1) product goes through torch.dot: torch's CPU mm
    summed it one term at a time (a review: 1.6e-2 relative error at K = 4e6, torch.einsum
    1e-5)."""
    rng = np.random.default_rng(9)
    shape = (4 * 10**6,) if equation == "i,i->" else (2000, 2000)
    a = (0.3 + 0.01 * rng.standard_normal(shape)).astype(np.float32)
    b = (0.3 + 0.01 * rng.standard_normal(shape)).astype(np.float32)
    exact = float(np.einsum(equation, a.astype(np.float64), b.astype(np.float64)))
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    out = torch.empty((), dtype=torch.float32) if into_out else None
    got = es.einsum(equation, ta, tb, out=out)
    ours = abs(float(got) - exact) / exact
    theirs = abs(float(torch.einsum(equation, ta, tb)) - exact) / exact
    assert ours <= max(10 * theirs, 1e-5)


@pytest.mark.parametrize("equation", ["ij->i", "ijk->ik", "ij->", "ij,jk->ik", "ij,ij->i"])
def test_a_small_float_dtype_rounds_a_reduction_into_a_wider_out(equation: str) -> None:
    """dtype=float16 into a float32 out= holds float16 values on torch's reductions too (a
    review: its reduce op wrote the float32 sum unrounded)."""
    gen = torch.Generator().manual_seed(0)
    sizes = {"i": 5, "j": 7, "k": 3}
    ops = [
        torch.randn(*[sizes[c] for c in term], generator=gen, dtype=torch.float64) * 3
        for term in equation.split("->")[0].split(",")
    ]
    want = es.einsum(equation, *ops, dtype=torch.float16).to(torch.float32)
    out = torch.zeros(want.shape, dtype=torch.float32)
    es.einsum(equation, *ops, dtype=torch.float16, out=out)
    assert torch.equal(out, want)


@pytest.mark.parametrize(
    ("operand", "out_dtype"),
    [
        (torch.ones(3, 2, 3, dtype=torch.bool), torch.int64),  # counts, not an OR
        (torch.full((3, 2, 3), 200, dtype=torch.uint8), torch.int64),  # no wrap at 256
        (torch.full((3, 2, 3), 0.1, dtype=torch.float32), torch.float64),  # not rounded
    ],
)
def test_out_widens_the_computation_as_on_numpy(operand: torch.Tensor, out_dtype: Any) -> None:
    """A review: a bool sum into an int64 out= gave 1 (the sum ran in bool, an OR), where
    NumPy, einstride's NumPy backend and torch.einsum count (6): the computation runs in
    the common dtype of the operands and out=, NumPy's rule."""
    out = torch.empty((), dtype=out_dtype)
    es.einsum("bdb->", operand, out=out)
    want = np.einsum("bdb->", operand.numpy(), out=np.empty((), out.numpy().dtype))
    assert out.item() == want.item()
