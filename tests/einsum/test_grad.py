"""einsum_vjp: finite differences, the adjoint identity, and the named cases of issue 6.

The forward oracle here is brute force from the definition (a loop over every label
assignment), so the tests do not lean on einstride's own einsum for the expected values.
"""

from __future__ import annotations

import itertools
import string
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine import grad as grad_module

# -- the oracle ------------------------------------------------------------------------------


def expand_terms(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str]:
    """Explicit per-axis labels (ellipsis dims become upper-case letters, right-aligned)."""
    eq = subscripts.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    ell_rank = max((len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = string.ascii_uppercase[:ell_rank]
    out_terms = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            n = len(s) - (len(t) - 3)
            t = t.replace("...", ell[ell_rank - n :])
        out_terms.append(t)
    if not arrow:
        counts = {c: "".join(terms).count(c) for c in "".join(terms).replace(".", "")}
        rhs = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c, k in counts.items() if k == 1)
        )
    return out_terms, rhs.replace("...", ell)


def brute_einsum(subscripts: str, *ops: np.ndarray) -> np.ndarray:
    terms, out = expand_terms(subscripts, [o.shape for o in ops])
    sizes: dict[str, int] = {}
    for t, o in zip(terms, ops):
        for c, n in zip(t, o.shape):
            if n != 1 or c not in sizes:
                sizes[c] = max(sizes.get(c, n), n) if c.isupper() else n
    labels = sorted(sizes)
    dtype = np.result_type(*ops)
    result = np.zeros(tuple(sizes[c] for c in out), dtype)
    for values in itertools.product(*(range(sizes[c]) for c in labels)):
        env = dict(zip(labels, values))
        term = np.asarray(1, dtype)
        for t, o in zip(terms, ops):
            idx = tuple(env[c] if n != 1 or not c.isupper() else 0 for c, n in zip(t, o.shape))
            term = term * o[idx]
        result[tuple(env[c] for c in out)] += term
    return result


# -- random equations --------------------------------------------------------------------------


@st.composite
def equations(draw: st.DrawFn) -> tuple[str, list[tuple[int, ...]]]:
    pool = "abcde"
    size_of = {c: draw(st.integers(1, 3)) for c in pool}
    if draw(st.booleans()):
        size_of[draw(st.sampled_from(pool))] = 0 if draw(st.integers(0, 9)) == 0 else 2
    n_ops = draw(st.integers(1, 3))
    ell_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    terms, shapes, used = [], [], []
    any_ell = False
    for _ in range(n_ops):
        labels = draw(st.lists(st.sampled_from(pool[:4]), max_size=3))
        shape = [size_of[c] for c in labels]
        term = "".join(labels)
        if ell_shape and draw(st.booleans()):
            k = draw(st.integers(0, len(ell_shape)))
            sub = [n if not draw(st.booleans()) else 1 for n in ell_shape[len(ell_shape) - k :]]
            pos = draw(st.integers(0, len(labels)))
            term = term[:pos] + "..." + term[pos:]
            shape = shape[:pos] + sub + shape[pos:]
            any_ell = True
        terms.append(term)
        shapes.append(tuple(shape))
        used.extend(labels)
    if draw(st.integers(0, 4)) == 0:
        return ",".join(terms), shapes
    out = draw(st.lists(st.sampled_from(sorted(set(used)) or ["a"]), max_size=3)) if used else []
    out_term = "".join(c for c in out if c in used)
    if any("..." in t and len(s) - (len(t) - 3) > 0 for t, s in zip(terms, shapes)) or (
        any_ell and draw(st.booleans())
    ):
        out_term = "..." + out_term
    return ",".join(terms) + "->" + out_term, shapes


def _operands(shapes: list[tuple[int, ...]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _unit(shape: tuple[int, ...], idx: tuple[int, ...]) -> np.ndarray:
    e = np.zeros(shape)
    e[idx] = 1.0
    return e


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(equations(), st.integers(0, 2**32 - 1))
def test_vjp_matches_central_differences(eq_shapes, seed) -> None:
    eq, shapes = eq_shapes
    ops = _operands(shapes, seed)
    fwd = brute_einsum(eq, *ops)
    cot = np.random.default_rng(seed + 1).standard_normal(fwd.shape)
    grads = es.einsum_vjp(eq, ops, cot)
    assert len(grads) == len(ops)
    for k, (g, x) in enumerate(zip(grads, ops)):
        assert g.shape == x.shape and g.dtype == x.dtype
        expected = np.zeros(x.shape)
        for idx in np.ndindex(*x.shape):
            plus = [o + _unit(o.shape, idx) if j == k else o for j, o in enumerate(ops)]
            minus = [o - _unit(o.shape, idx) if j == k else o for j, o in enumerate(ops)]
            diff = (brute_einsum(eq, *plus) - brute_einsum(eq, *minus)) / 2.0
            expected[idx] = np.sum(cot * diff)
        np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-9, err_msg=f"{eq} operand {k}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(equations(), st.integers(0, 2**32 - 1))
def test_vjp_adjoint_identity(eq_shapes, seed) -> None:
    eq, shapes = eq_shapes
    ops = _operands(shapes, seed)
    rng = np.random.default_rng(seed + 2)
    cot = rng.standard_normal(brute_einsum(eq, *ops).shape)
    grads = es.einsum_vjp(eq, ops, cot)
    for k, g in enumerate(grads):
        dx = rng.standard_normal(ops[k].shape)
        jvp = brute_einsum(eq, *[dx if j == k else o for j, o in enumerate(ops)])
        assert np.isclose(np.sum(g * dx), np.sum(cot * jvp), rtol=1e-9, atol=1e-9)


# -- named cases --------------------------------------------------------------------------------


def test_repeated_input_labels_expand_the_diagonal() -> None:
    x = np.arange(27.0).reshape(3, 3, 3)
    (g,) = es.einsum_vjp("iii->i", (x,), np.array([1.0, 2.0, 3.0]))
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = i + 1
    np.testing.assert_array_equal(g, expected)


def test_trace_gradient_is_a_scaled_identity() -> None:
    (g,) = es.einsum_vjp("ii->", (np.ones((4, 4)),), np.array(3.0))
    np.testing.assert_array_equal(g, 3.0 * np.eye(4))


def test_repeated_output_labels_extract_the_diagonal() -> None:
    cot = np.arange(9.0).reshape(3, 3)
    (g,) = es.einsum_vjp("i->ii", (np.ones(3),), cot)
    np.testing.assert_array_equal(g, np.diag(cot))


def test_summed_label_is_broadcast_back() -> None:
    (g,) = es.einsum_vjp("ij->i", (np.ones((2, 3)),), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])


def test_size_one_ellipsis_axes_sum_over_the_broadcast() -> None:
    a, b = np.ones((1, 3)), np.ones((4, 3))
    ga, gb = es.einsum_vjp("...i,...i->...i", (a, b), np.ones((4, 3)))
    np.testing.assert_array_equal(ga, np.full((1, 3), 4.0))
    np.testing.assert_array_equal(gb, np.ones((4, 3)))


def test_implicit_mode_rank0_and_size0() -> None:
    ga, gb = es.einsum_vjp("ij,jk", (np.ones((2, 0)), np.ones((0, 3))), np.ones((2, 3)))
    assert ga.shape == (2, 0) and gb.shape == (0, 3)
    gs, gv = es.einsum_vjp(",i->i", (np.array(2.0), np.arange(3.0)), np.ones(3))
    assert gs.shape == () and gs == 3.0
    np.testing.assert_array_equal(gv, [2.0, 2.0, 2.0])


def test_nary_chain_matches_matrix_calculus() -> None:
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    cot = rng.standard_normal((2, 5))
    ga, gb, gc = es.einsum_vjp("ab,bc,cd->ad", (a, b, c), cot)
    np.testing.assert_allclose(ga, cot @ (b @ c).T)
    np.testing.assert_allclose(gb, a.T @ cot @ c.T)
    np.testing.assert_allclose(gc, (a @ b).T @ cot)


def test_complex_follows_the_holomorphic_convention() -> None:
    a = np.array([1 + 2j, 3 - 1j])
    b = np.array([2 - 1j, 1j])
    ga, gb = es.einsum_vjp("i,i->", (a, b), np.array(1 + 1j))
    np.testing.assert_allclose(ga, (1 + 1j) * b)  # no conjugation, as JAX's vjp
    np.testing.assert_allclose(gb, (1 + 1j) * a)


def test_gradients_keep_dtype_and_kind() -> None:
    a32 = np.ones((2, 2), np.float32)
    (g,) = es.einsum_vjp("ij->", (a32,), np.array(1.0))
    assert g.dtype == np.float32
    t = es.tensor(np.ones((2, 3)))
    (gt,) = es.einsum_vjp("ij->j", (t,), np.ones(3))
    assert isinstance(gt, es.Tensor) and gt.shape == (2, 3)


def test_cotangent_shape_mismatch_is_an_einsum_error() -> None:
    with pytest.raises(es.EinsumError, match="cotangent"):
        es.einsum_vjp("ij->i", (np.ones((2, 3)),), np.ones(3))
    with pytest.raises(es.EinsumError):
        es.einsum_vjp("ij,jk->ik", (np.ones((2, 3)),), np.ones((2, 2)))
    with pytest.raises(TypeError):
        es.einsum_vjp("i->", np.ones(3), np.array(1.0))


def test_backward_equations_are_cached() -> None:
    from einstride.engine import grad

    grad._backward_equations.cache_clear()
    for _ in range(3):
        es.einsum_vjp("ij,jk->ik", (np.ones((2, 3)), np.ones((3, 4))), np.ones((2, 4)))
    info = grad._backward_equations.cache_info()
    assert info.misses == 1 and info.hits == 2


TORCH_EQUATIONS = [
    "ij,jk->ik",
    "bij,bjk->bik",
    "ii->i",
    "ii->",
    "i,j->ij",
    "...ij,...jk->...ik",
    "abc,cd->abd",
    "ij->",
    "ab,bc,cd->ad",
]


@pytest.mark.parametrize("eq", TORCH_EQUATIONS)
def test_agrees_with_torch_autograd(eq: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    shapes = {
        "ij,jk->ik": [(2, 3), (3, 4)],
        "bij,bjk->bik": [(2, 2, 3), (2, 3, 2)],
        "ii->i": [(3, 3)],
        "ii->": [(3, 3)],
        "i,j->ij": [(2,), (3,)],
        "...ij,...jk->...ik": [(2, 1, 2, 3), (3, 3, 4)],
        "abc,cd->abd": [(2, 3, 2), (2, 4)],
        "ij->": [(2, 3)],
        "ab,bc,cd->ad": [(2, 3), (3, 2), (2, 2)],
    }[eq]
    ops = [rng.standard_normal(s) for s in shapes]
    tops = [torch.tensor(o, requires_grad=True) for o in ops]
    result = torch.einsum(eq, *tops)
    cot = rng.standard_normal(tuple(result.shape))
    result.backward(torch.tensor(cot))
    grads = es.einsum_vjp(eq, ops, cot)
    for g, t in zip(grads, tops):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_sublist_form_and_explicit_forward_paths() -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    cot = np.ones((2, 4))
    by_string = es.einsum_vjp("ij,jk->ik", (a, b), cot)
    by_sublists = es.einsum_vjp(([0, 1], [1, 2], [0, 2]), (a, b), cot)
    for x, y in zip(by_string, by_sublists):
        np.testing.assert_array_equal(x, y)
    implicit = es.einsum_vjp([[0, 1], [1, 2]], (a, b), cot)
    np.testing.assert_array_equal(implicit[0], by_string[0])
    # a forward path is no path for the backward einsums, whose operand counts differ
    (g, _) = es.einsum_vjp("ij,jk->i", (a, b), np.ones(2), optimize=[(0, 1)])
    np.testing.assert_array_equal(g, np.broadcast_to(b.sum(axis=1), (2, 3)))
    with pytest.raises(TypeError, match="sublists"):
        es.einsum_vjp([[0, 1]], (a, b), cot)


@pytest.mark.parametrize(
    ("eq", "shapes", "lanes"),
    [
        ("bij,bjk->bik", [(2, 5, 3), (2, 3, 4)], 2),  # two small matmul-form products
        ("ii->i", [(4, 4)], 1),  # an expansion: i->ii
        ("ij->", [(2, 3)], 1),  # its fills one zero-stride operand: a pair that contracts nothing
    ],
)
def test_backward_einsums_take_the_lanes_as_the_forward_ones_do(
    eq: str, shapes: list[tuple[int, ...]], lanes: int
) -> None:
    from einstride.engine.backends.numpy.cache import plan_cache_info

    rng = np.random.default_rng(7)
    ops = [rng.standard_normal(s) for s in shapes]
    cot = rng.standard_normal(np.shape(es.einsum(eq, *ops)))
    before = plan_cache_info().lanes
    grads = es.einsum_vjp(eq, ops, cot)
    assert plan_cache_info().lanes == before + lanes
    planned = es.einsum_vjp(eq, ops, cot, optimize="greedy")  # a named finder: planned
    assert plan_cache_info().lanes == before + lanes
    for got, want in zip(grads, planned):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_labels_past_the_letters_take_the_sublist_form() -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    cot = np.ones((2, 4))
    by_letters = es.einsum_vjp(([0, 1], [1, 2], [0, 2]), (a, b), cot)
    by_large = es.einsum_vjp(([100, 61], [61, 90], [100, 90]), (a, b), cot)
    for x, y in zip(by_letters, by_large):
        np.testing.assert_array_equal(x, y)


def test_a_list_as_a_sublist_label_is_an_einsum_type_error() -> None:
    with pytest.raises(es.EinsumTypeError, match=r"\[1\] at index 1"):
        es.einsum_vjp([[0, [1]]], (np.ones((2, 2)),), np.ones(2))


def test_a_single_use_path_optimizer_leaves_the_gradients_their_own_search() -> None:
    """opt_einsum's random optimizers refuse a second contraction; the backward einsums
    (other contractions) passed it on and every gradient of three operands failed (a
    review)."""
    oe = pytest.importorskip("opt_einsum")
    rng = np.random.default_rng(5)
    ops = [rng.random((2, 3)), rng.random((3, 4)), rng.random((4, 5))]
    cot = rng.random((2, 5))
    got = es.einsum_vjp("ab,bc,cd->ad", ops, cot, optimize=oe.RandomGreedy())
    want = es.einsum_vjp("ab,bc,cd->ad", ops, cot)
    for mine, theirs in zip(got, want):
        np.testing.assert_allclose(mine, theirs)


def test_left_to_right_gradients_search_their_own_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``optimize=False`` names the order of the call's operands, which the backward
    einsums do not keep (the cotangent comes first): each searches its own path, as for an
    explicit path (a review: torch's backward began with an outer product)."""
    rng = np.random.default_rng(6)
    ops = [rng.random((40, 40)) for _ in range(4)]
    cot = rng.random((40, 40))
    asked: list[Any] = []
    einsum = grad_module.einsum

    def spy(*args: Any, optimize: Any = "auto", **keywords: Any) -> Any:
        asked.append(optimize)
        return einsum(*args, optimize=optimize, **keywords)

    monkeypatch.setattr(grad_module, "einsum", spy)
    got = es.einsum_vjp("ab,bc,cd,de->ae", ops, cot, optimize=False)
    assert asked == ["auto"] * 4
    want = es.einsum_vjp("ab,bc,cd,de->ae", ops, cot)
    for mine, theirs in zip(got, want):
        np.testing.assert_allclose(mine, theirs)


def test_torch_operands_get_torch_gradients_through_their_backend() -> None:
    """A torch tensor that requires grad (a custom Function's saved tensor) made
    einsum_vjp raise torch's RuntimeError from .numpy(), and plain ones got NumPy
    gradients (a review); now the torch backend computes them, graph kept."""
    torch = pytest.importorskip("torch")
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64)
    cot = torch.randn(3, 5, dtype=torch.float64)
    ga, gb = es.einsum_vjp("ij,jk->ik", (a, b), cot)
    assert isinstance(ga, torch.Tensor) and isinstance(gb, torch.Tensor)
    assert torch.allclose(ga, cot @ b.T) and torch.allclose(gb, a.detach().T @ cot)
    assert gb.requires_grad  # a's graph: a second-order gradient can flow through it
    x = torch.ones(3, 3, dtype=torch.float32)
    (gx,) = es.einsum_vjp("ij->", (x,), np.array(2.0))  # a NumPy cotangent: still torch's
    assert isinstance(gx, torch.Tensor) and gx.dtype == torch.float32
    assert torch.equal(gx, torch.full((3, 3), 2.0))
    (gc,) = es.einsum_vjp("i->", (torch.zeros(2),), torch.tensor(1 + 2j))
    assert gc.dtype == torch.float32 and gc.tolist() == [1.0, 1.0]  # the real part


def test_dask_operands_get_lazy_gradients() -> None:
    """Dask operands were computed on the spot and their gradients were NumPy arrays."""
    da = pytest.importorskip("dask.array")
    a, b = np.arange(12.0).reshape(3, 4), np.ones((4, 2))
    lazy = da.from_array(a, chunks=2)
    ga, gb = es.einsum_vjp("ij,jk->ik", (lazy, b), np.ones((3, 2)))
    assert isinstance(ga, da.Array) and isinstance(gb, da.Array)
    want = es.einsum_vjp("ij,jk->ik", (a, b), np.ones((3, 2)))
    np.testing.assert_array_equal(ga.compute(), want[0])
    np.testing.assert_array_equal(gb.compute(), want[1])


def test_errors_name_the_right_argument_on_every_backend() -> None:
    """Through torch or Dask, a bad cotangent was blamed on operand 0, a string operand gave
    a rank error, and a Dask array of unknown size raised ValueError (a review)."""
    torch = pytest.importorskip("torch")
    da = pytest.importorskip("dask.array")
    for x in (np.ones(3), torch.ones(3), da.ones(3, chunks=2)):
        with pytest.raises(TypeError, match="the cotangent has dtype object"):
            es.einsum_vjp("i,i->", (x, np.ones(3)), np.array(None, dtype=object))
        with pytest.raises(TypeError, match="operand 1 has dtype <U3"):
            es.einsum_vjp("i,i->", (x, "abc"), np.array(1.0))
    unknown = da.arange(10, chunks=3)
    unknown = unknown[unknown > 4]
    with pytest.raises(es.EinsumError, match="unknown shape"):
        es.einsum_vjp("i->", (unknown,), np.array(1.0))
    with pytest.raises(es.EinsumError, match="unknown shape"):
        es.einsum_path("i,i->", unknown, (3,))


def test_sublist_labels_are_checked_on_every_call() -> None:
    # a review: the backward equations are cached by the sublists, where True and 1.0
    # equal 1: after a call with [0, 1], [0, True] and [0, 1.0] were accepted
    x = np.ones((2, 2))
    es.einsum_vjp([[0, 1]], (x,), np.ones((2, 2)))
    for bad in ([[0, True]], [[0, 1.0]]):
        with pytest.raises(es.EinsumTypeError, match="index 1"):
            es.einsum_vjp(bad, (x,), np.ones((2, 2)))
    with pytest.raises(es.EinsumTypeError, match="output sublist"):
        es.einsum_vjp([[0, 1], [[1]]], (x,), np.ones(2))


@pytest.mark.parametrize(
    ("eq", "operands", "cotangent", "want"),
    [
        # an int8 cotangent times an int8 operand wrapped (-56) where the forward is float64
        ("i,i->", (np.array([1.5]), np.array([100], np.int8)), np.int8(2), [200.0]),
        # float16 300 * 300 overflowed to inf where the forward runs in float32
        ("i,i->i", (np.ones(3, np.float32), np.full(3, 300, np.float16)),
         np.full(3, 300, np.float16), [90000.0] * 3),
        # bool cotangent and operand summed as ORs (1) where the forward is float64
        ("ij,jk->ik", (np.ones((3, 4)), np.ones((4, 2), bool)), np.ones((3, 2), bool),
         [[2.0] * 4] * 3),
    ],
)  # fmt: skip
def test_a_narrow_cotangent_computes_in_the_forward_dtype(eq, operands, cotangent, want) -> None:
    grad = es.einsum_vjp(eq, operands, cotangent)[0]
    assert grad.dtype == operands[0].dtype
    np.testing.assert_array_equal(grad, np.asarray(want, grad.dtype))


@pytest.mark.parametrize("optimize", ["optimal", "branch-all"])
def test_summed_away_labels_add_no_path_search(optimize: str) -> None:
    """A review: each label summed away in the forward was its own vector of ones in the
    backward einsum, and optimize="optimal" searched every path over them (7 labels 10 s, 8
    more than 300 s); they are one zero-stride operand now."""
    import time

    a = np.arange(2.0**9).reshape((2,) * 9)
    start = time.perf_counter()
    (grad,) = es.einsum_vjp("abcdefghi->", (a,), np.array(3.0), optimize=optimize)
    assert time.perf_counter() - start < 5
    np.testing.assert_array_equal(grad, np.full(a.shape, 3.0))
    x, y = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    gx, gy = es.einsum_vjp("ij,jk->i", (x, y), np.ones(2), optimize=optimize)
    np.testing.assert_array_equal(gx, np.broadcast_to(y.sum(axis=1), (2, 3)))
    np.testing.assert_array_equal(gy, np.broadcast_to(x.sum(axis=0)[:, None], (3, 4)))


def test_an_output_sublist_of_none_is_implicit_mode() -> None:
    """A review: einsum takes None as the output sublist (implicit mode); einsum_vjp raised
    a TypeError from its internals."""
    a, b = np.ones((2, 3)), np.ones((3, 4))
    grads = es.einsum_vjp([[0, 1], [1, 2], None], (a, b), np.ones((2, 4)))
    want = es.einsum_vjp([[0, 1], [1, 2]], (a, b), np.ones((2, 4)))
    for got, expected in zip(grads, want):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("eq", "dtypes", "cot_dtype", "value"),
    [
        ("ij,jk->ik", ("float64", "int8"), "int8", 100),  # wrapped in int8 (64)
        ("ij,jk->ik", ("float32", "bool"), "bool", 1),  # summed as OR (1.0)
        ("i,i->", ("float16", "float32"), "float32", 70000),  # a 0-d float32 cotangent: inf
    ],
)
def test_torch_gradients_compute_in_the_forward_dtype(eq, dtypes, cot_dtype, value) -> None:
    """A review: the dtype rule held for NumPy and Dask operands, not torch's."""
    torch = pytest.importorskip("torch")
    shapes = [(2, 3), (3, 4)] if eq.startswith("ij") else [(3,), (3,)]
    ops = [torch.ones(s, dtype=getattr(torch, d)) for s, d in zip(shapes, dtypes)]
    cot = torch.full(tuple(np.shape(np.einsum(eq, *[np.ones(s) for s in shapes]))), value,
                     dtype=getattr(torch, cot_dtype))  # fmt: skip
    wide = [x.double() for x in ops]
    want = torch.autograd.grad(
        torch.einsum(eq, *[x.requires_grad_() for x in wide]), wide, cot.double()
    )
    for got, expected, x in zip(es.einsum_vjp(eq, ops, cot), want, ops):
        assert got.dtype == x.dtype
        np.testing.assert_allclose(got.double().numpy(), expected.to(x.dtype).double().numpy())


def test_bytes_subscripts_are_taken_as_einsum_takes_them() -> None:
    a = np.arange(6.0).reshape(2, 3)
    (grad,) = es.einsum_vjp(b"ij->", (a,), np.array(2.0))
    np.testing.assert_array_equal(grad, np.full((2, 3), 2.0))


def test_a_torch_dtype_the_backend_refuses_is_its_type_error() -> None:
    """A review: torch's promotion of float8 raised its RuntimeError before the backward
    einsum could refuse the dtype as einsum does."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("no float8 in this torch")
    a = torch.ones(2, 2, dtype=torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="does not support"):
        es.einsum_vjp("ij,jk->ik", (a, a), torch.ones(2, 2))


def test_a_refused_torch_dtype_is_named_as_the_user_gave_it() -> None:
    """A review: the backward einsum's numbering leaked (operand 0 was "operand 1", the
    cotangent "operand 0")."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("no float8 in this torch")
    a, b, g = torch.ones(3, 4), torch.ones(4, 5), torch.ones(3, 5)
    f8 = torch.float8_e4m3fn
    with pytest.raises(TypeError, match=r"operand 0 has dtype torch\.float8"):
        es.einsum_vjp("ij,jk->ik", (a.to(f8), b), g)
    with pytest.raises(TypeError, match=r"the cotangent has dtype torch\.float8"):
        es.einsum_vjp("ij,jk->ik", (a, b), g.to(f8))
