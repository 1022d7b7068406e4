"""dtypes, out=, Tensors, einsum_path, contract_expression, the plan cache and the report."""

from __future__ import annotations

import threading
import tracemalloc

import ml_dtypes
import numpy as np
import pytest

import einstride as es
from einstride.engine.backends.numpy.cache import clear_plan_cache, plan_cache_info
from einstride.engine.cli import explain_main

RNG = np.random.default_rng(7)


# -- dtypes ----------------------------------------------------------------------------------


def test_float16_accumulates_in_float32() -> None:
    total = es.einsum("i->", np.ones(3000, np.float16))
    assert total == 3000 and np.asarray(total).dtype == np.float16
    a = RNG.random((40, 3000)).astype(np.float16)
    b = RNG.random((3000, 30)).astype(np.float16)
    exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    got = es.einsum("ij,jk->ik", a, b)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), exact.astype(np.float64), rtol=2e-3)


def test_bfloat16_accumulates_in_float32() -> None:
    ones = np.ones(1000, ml_dtypes.bfloat16)  # a bfloat16 accumulator would stop at 256
    total = es.einsum("i->", ones)
    assert np.asarray(total).dtype == ml_dtypes.bfloat16 and float(total) == 1000.0
    got = es.einsum(
        "ij,jk->ik", np.ones((2, 1000), ml_dtypes.bfloat16), np.ones((1000, 2), ml_dtypes.bfloat16)
    )
    assert got.dtype == ml_dtypes.bfloat16 and np.all(got.astype(np.float32) == 1000)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_integers_wrap_like_numpy(dtype: type) -> None:
    a = np.full((3, 200), 100, dtype)
    b = np.full((200, 2), 7, dtype)
    for eq, ops in [("ij,jk->ik", (a, b)), ("ij->", (a,)), ("ij,ij->i", (a, a))]:
        got = es.einsum(eq, *ops)
        expected = np.einsum(eq, *ops)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(got, expected)


def test_bool_is_and_or() -> None:
    a = RNG.random((4, 5)) < 0.3
    b = RNG.random((5, 3)) < 0.3
    got = es.einsum("ij,jk->ik", a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, (a.astype(int) @ b.astype(int)) > 0)
    np.testing.assert_array_equal(es.einsum("ij->i", a), a.any(axis=1))
    np.testing.assert_array_equal(es.einsum("ij,ij->ij", a, a[::-1]), a & a[::-1])


def test_complex_and_mixed_dtypes() -> None:
    a = RNG.random((3, 4)) + 1j * RNG.random((3, 4))
    b = RNG.integers(0, 5, (4, 2)).astype(np.int32)
    got = es.einsum("ij,jk->ik", a, b)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, a @ b)
    mixed = es.einsum("i,i->i", np.ones(3, np.int32), np.ones(3, np.float32))
    assert mixed.dtype == np.result_type(np.int32, np.float32)


def test_dtype_argument_sets_the_result_dtype() -> None:
    a = RNG.random((3, 4))
    got = es.einsum("ij,jk->ik", a, a.T, dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a @ a.T, rtol=1e-5)
    assert es.einsum("ij->i", np.ones((2, 3), np.int8), dtype=np.int64).dtype == np.int64


def test_scalars_and_lists_are_converted() -> None:
    assert es.einsum(",->", 2, 3.5) == 7.0
    assert es.einsum("i,i", [1, 2, 3], [4, 5, 6]) == 32
    assert isinstance(es.einsum("i->", np.ones(3)), np.floating)


def test_numpy_in_numpy_out_tensor_in_tensor_out() -> None:
    a, b = RNG.random((2, 3)), RNG.random((3, 4))
    assert type(es.einsum("ij,jk->ik", a, b)) is np.ndarray
    got = es.einsum("ij,jk->ik", es.as_tensor(a), b)
    assert isinstance(got, es.Tensor)
    np.testing.assert_allclose(got.numpy(), a @ b)
    scalar = es.einsum("ij,ij->", es.as_tensor(a), a)
    assert isinstance(scalar, es.Tensor) and scalar.shape == ()
    strided = es.Tensor(np.arange(12.0), (3, 2), (4, 1), 1)  # a gapped Tensor view
    np.testing.assert_allclose(es.einsum("ij->j", strided).numpy(), strided.numpy().sum(0))


# -- out= ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "equation", ["ij,jk->ik", "ij,jk->ki", "bij,bjk->bik", "ij->j", "ij,jk->iik", "i,j->ij"]
)
def test_out_with_transposed_and_gapped_layouts(equation: str) -> None:
    shapes = {
        "ij,jk->ik": [(3, 4), (4, 5)],
        "ij,jk->ki": [(3, 4), (4, 5)],
        "bij,bjk->bik": [(2, 3, 4), (2, 4, 5)],
        "ij->j": [(3, 4)],
        "ij,jk->iik": [(3, 4), (4, 5)],
        "i,j->ij": [(3,), (5,)],
    }[equation]
    ops = [RNG.random(s) for s in shapes]
    expected = np.asarray(es.einsum(equation, *ops))
    for make in (
        lambda s: np.empty(s[::-1]).T,
        lambda s: np.full(tuple(2 * d for d in s), 9.0)[tuple(slice(None, None, 2) for _ in s)],
        lambda s: np.full(s, 7.0, order="F"),
    ):
        out = make(expected.shape)
        assert es.einsum(equation, *ops, out=out) is out
        np.testing.assert_allclose(out, expected)


def test_out_tensor_receives_the_result() -> None:
    out = es.Tensor(np.zeros(8), (2, 2), (1, 2))
    result = es.einsum("ij,jk->ik", np.eye(2), np.full((2, 2), 3.0), out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), np.full((2, 2), 3.0))


def test_out_float32_for_float64_operands_is_a_cast() -> None:
    out = np.zeros((2, 2), np.float32)
    es.einsum("ij,jk->ik", np.eye(2), np.full((2, 2), 0.5), out=out)
    np.testing.assert_allclose(out, 0.5)


# -- einsum_path, contract_expression, explain -------------------------------------------------


def test_einsum_path_is_numpy_compatible() -> None:
    a, b, c = RNG.random((10, 20)), RNG.random((20, 30)), RNG.random((30, 2))
    path, report = es.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
    assert path[0] == "einsum_path" and all(isinstance(p, tuple) for p in path[1:])
    np.testing.assert_allclose(
        np.einsum("ij,jk,kl->il", a, b, c, optimize=path),
        es.einsum("ij,jk,kl->il", a, b, c, optimize=path),
    )
    assert "optimized FLOPs" in report
    path2, _ = es.einsum_path("ij,jk,kl->il", (10, 20), (20, 30), (30, 2), optimize="greedy")
    assert path2 == path


def test_contract_expression_reuses_its_plan_for_any_layout() -> None:
    expr = es.contract_expression("bij,bjk->bik", (2, 3, 4), (2, 4, 5))
    a, b = RNG.random((2, 3, 4)), RNG.random((2, 4, 5))
    np.testing.assert_allclose(expr(a, b), a @ b)
    at = np.ascontiguousarray(a.transpose(2, 1, 0)).transpose(2, 1, 0)
    np.testing.assert_allclose(expr(at, b), a @ b)
    out = np.empty((5, 3, 2)).transpose(2, 1, 0)
    assert expr(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b)
    assert "contract" in str(expr) and repr(expr).startswith("<Expression")


def test_explain_reports_views_copies_flops_and_true_bytes() -> None:
    report = es.contract_expression("bij,bjk->bik", (8, 64, 32), (8, 32, 16)).explain()
    for fragment in (
        "einsum 'bij,bjk->bik'",
        "naive FLOPs",
        "optimized FLOPs",
        "largest intermediate",
        "step 1: contract",
        "batch b",
        "contracted j",
        "left-free i",
        "right-free k",
        "viewed",
        "65,536 B",
    ):
        assert fragment in report, fragment
    # contracted labels in the same memory order in both operands: views, no copy
    _, report = es.einsum_path("ijk,jkl->il", (40, 50, 60), (50, 60, 30))
    assert "copy" not in report and report.count("viewed") == 2
    # ... in opposite orders: the smaller operand is copied, and the report says why
    _, report = es.einsum_path("ikj,jkl->il", (40, 60, 50), (50, 60, 30))
    assert "step 1: copy  operand 1" in report and "order" in report
    # a gapped operand whose labels cannot fold into one stride
    a = RNG.random((20, 40, 30))[:, ::2, :]
    plan_report = _plan_report("ijk,jkl->il", a, RNG.random((20, 30, 10)))
    assert "copy  operand 0" in plan_report and "do not fold" in plan_report
    # a transposed operand that folds jointly is viewed, not copied
    t = RNG.random((30, 50, 60)).transpose(1, 2, 0)  # labels j k l, l outermost
    assert "copy" not in _plan_report("ijk,jkl->il", RNG.random((40, 50, 60)), t)
    t = RNG.random((60, 50, 30)).transpose(1, 0, 2)  # k before j: the orders differ
    assert "copy" in _plan_report("ijk,jkl->il", RNG.random((40, 50, 60)), t)
    # a unit-stride-free operand is copied so that BLAS can take it
    g = RNG.random((40, 50, 120))[:, :, ::2]
    assert "not BLAS-ready" in _plan_report("ijk,jkl->il", g, RNG.random((50, 60, 30)))


def test_tiny_multi_step_problems_fuse_into_one_loop() -> None:
    ops = [RNG.random((3, 4)), RNG.random((4,)), RNG.random((4, 3))]
    report = _plan_report("ab,b,ba->a", *ops)
    assert "step 1: fused" in report and "step 2" not in report
    np.testing.assert_allclose(es.einsum("ab,b,ba->a", *ops), np.einsum("ab,b,ba->a", *ops))
    chain = [RNG.random((100, 100))] * 3  # a fused loop would be O(n^4): pairs win
    assert "fused" not in _plan_report("ab,bc,cd->ad", *chain)


def test_a_product_whose_output_dominates_is_not_fused() -> None:
    # a tensor-network step: 242k index combinations, a (576 x 3) @ (3 x 140) GEMM.  Both
    # ways write the 645 kB output; the one loop costs ~1 ns per combination (7.6 ns on
    # these scrambled strides), the GEMM 50 us: the output's bytes must not count for one
    # side only
    a = RNG.random((3, 6, 2, 6, 8)).transpose(4, 0, 1, 2, 3)
    b = RNG.random((5, 3, 4, 7)).transpose(1, 0, 2, 3)
    report = _plan_report("xJBhF,JCul->xBhFCul", a, b)
    assert "fused" not in report and "matmul" in report
    np.testing.assert_allclose(
        es.einsum("xJBhF,JCul->xBhFCul", a, b), np.einsum("xJBhF,JCul->xBhFCul", a, b)
    )


def _plan_report(equation: str, *ops: np.ndarray) -> str:
    return es.explain(equation, *ops)  # the report for these operands' own layouts


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(300, 200), (200, 100)]),
        ("ijk->i", [(50, 60, 70)]),
        ("ij,jk,kl->il", [(100, 200), (200, 100), (100, 300)]),
        ("i->ii", [(300,)]),
        ("cdba,ca->db", [(64, 32, 16, 64), (64, 64)]),  # looped contracted label + reduce
        ("ikj,jkl->il", [(40, 60, 50), (50, 60, 30)]),  # a copy
        ("ab,b,ba->a", [(30, 40), (40,), (40, 30)]),  # one fused loop
        ("ij,jk->ik", [(2000, 3), (3, 1000)]),
    ],
)
def test_reported_bytes_are_the_bytes_allocated(
    equation: str, shapes: list[tuple[int, ...]]
) -> None:
    from einstride.engine.backends.numpy.cache import entry_for as _entry_for

    arrays = [RNG.random(s) for s in shapes]
    entry = _entry_for(equation, arrays, None, None, "auto")
    entry.run(arrays, None)  # warm up
    tracemalloc.start()
    result = entry.run(arrays, None)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    reported = entry.plan.allocated_bytes
    assert entry.plan.largest_bytes <= peak <= reported + 64 * 1024, (peak, reported)


# -- the plan cache --------------------------------------------------------------------------


def test_plan_cache_is_thread_safe_and_bounded() -> None:
    clear_plan_cache()
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(60):
                n = int(rng.integers(1, 6))
                a, b = rng.random((n, 3)), rng.random((3, n + 1))
                # optimize= named: the planned way (the lanes need no cache)
                got = es.einsum("ij,jk->ik", a, b, optimize="greedy")
                np.testing.assert_allclose(got, a @ b)
                np.testing.assert_allclose(es.einsum("ij->j", a.T, optimize="greedy"), a.T.sum(0))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    info = plan_cache_info()
    assert info.hits > 0 and info.currsize <= 2 * info.maxsize


def test_plan_cache_keys_on_layout() -> None:
    a = RNG.random((4, 5))
    b = RNG.random((5, 6))
    np.testing.assert_allclose(es.einsum("ij,jk->ik", a, b), a @ b)
    bt = np.asfortranarray(b)
    np.testing.assert_allclose(es.einsum("ij,jk->ik", a, bt), a @ b)
    np.testing.assert_allclose(es.einsum("ij,jk->ik", a, b[:, ::-1]), a @ b[:, ::-1])


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_explain_prints_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert explain_main(["bij,bjk->bik", "8x64x32", "8x32x16"]) == 0
    out = capsys.readouterr().out
    assert "step 1: contract" in out and "FLOPs" in out and "largest intermediate" in out
    assert (
        explain_main(
            ["ij,jk,kl->il", "10x20", "20x30", "30x2", "--optimize", "greedy", "--dtype", "float32"]
        )
        == 0
    )
    assert "float32" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["ij,jk->ik", "2x3", "4x5"],
        ["ij->k", "2x3"],
        ["ij", "2xq"],
        ["ij", "2x3", "--dtype", "nonsense"],
        [],
    ],
)
def test_cli_explain_bad_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert explain_main(argv) == 2
    assert capsys.readouterr().err


def test_any_opt_einsum_path_optimizer_is_accepted() -> None:
    import opt_einsum

    ops = [RNG.random((5, 6)), RNG.random((6, 7)), RNG.random((7, 8)), RNG.random((8, 3))]
    expected = np.linalg.multi_dot(ops)
    for optimizer in (
        opt_einsum.DynamicProgramming(),
        opt_einsum.RandomGreedy(max_repeats=4),
        opt_einsum.paths.greedy,
    ):
        np.testing.assert_allclose(es.einsum("ab,bc,cd,de->ae", *ops, optimize=optimizer), expected)
    calls: list[int] = []

    def left_to_right(inputs, output, size_dict, memory_limit=None):  # type: ignore[no-untyped-def]
        calls.append(len(inputs))
        return [(0, 1)] * (len(inputs) - 1)

    np.testing.assert_allclose(es.einsum("ab,bc,cd,de->ae", *ops, optimize=left_to_right), expected)
    assert calls == [4]


def test_einsum_path_takes_the_sublist_form_and_shapes() -> None:
    path, report = es.einsum_path((3, 4), [0, 1], (4, 5), [1, 2], (5, 2), [2, 3], [0, 3])
    assert path[0] == "einsum_path" and len(path) == 3
    assert "[0,1],[1,2],[2,3]->[0,3]" in report


def test_intermediates_take_the_layout_the_next_product_wants() -> None:
    # BLAS runs a (13824 x 24) @ (24 x 24) product faster than its transpose (rows < cols:
    # 1.1-1.5x measured), so each product of this ring runs "the other way round" and leaves
    # its result in the order the next one folds (numpy.einsum's tensordot rotation):
    # four single GEMMs, no batch loop over 576 small ones
    ops = [RNG.random((24, 24)), RNG.random((24, 24)), RNG.random((24,) * 4)]
    ops += [RNG.random((24, 24)), RNG.random((24, 24))]
    report = _plan_report("ea,fb,abcd,gc,hd->efgh", *ops)
    assert "looped" not in report and "copy" not in report
    # ... but not when that leaves a later batch label on the unit-stride axis: 'b' of
    # bi,ioj,bj->bo stays outermost, so the second product needs no copy
    ops = [RNG.random((128, 64)), RNG.random((64, 64, 64)), RNG.random((128, 64))]
    report = _plan_report("bi,ioj,bj->bo", *ops)
    assert "step 1: contract" in report and "copy" not in report
    np.testing.assert_allclose(es.einsum("bi,ioj,bj->bo", *ops), np.einsum("bi,ioj,bj->bo", *ops))


def test_einsum_path_s_report_is_explain_s() -> None:
    # a review: the plan's own report said neither the lane nor a network's direct call
    a, b = np.ones((8, 64, 32)), np.ones((8, 32, 16))
    _, report = es.einsum_path("bij,bjk->bik", a, b)
    assert "lane: einsum runs this call without a plan" in report
    assert report == es.explain("bij,bjk->bik", a, b)
    shapes = ((2, 3), (3, 4), (4, 5))
    path, report = es.einsum_path("ij,jk,kl->il", *shapes, optimize="greedy")
    assert report == es.explain("ij,jk,kl->il", *shapes, optimize="greedy")
    assert path == ["einsum_path", (1, 2), (0, 1)]


def test_an_expression_with_optimize_false_runs_einsum_s_plan() -> None:
    # a review: its path was planned as a given one, so the one loop einsum falls back to
    # (where a pair would outgrow the operands) was skipped: a 768,000-byte peak for 48,000
    shapes = ((300, 20), (20, 300), (300, 20))
    ops = [np.random.default_rng(k).random(s) for k, s in enumerate(shapes)]
    expr = es.contract_expression("ij,jk,kl->il", *shapes, optimize=False)
    for call in (lambda: expr(*ops), lambda: es.einsum("ij,jk,kl->il", *ops, optimize=False)):
        tracemalloc.start()
        got = call()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 100_000
        np.testing.assert_allclose(got, np.einsum("ij,jk,kl->il", *ops))
    assert "one loop" in expr.explain()


def test_an_expression_s_memory_limit_without_dtype_bounds_each_call() -> None:
    # a review: the limit was checked when the expression was made, as for float64
    expr = es.contract_expression("ij,jk->ik", (64, 64), (64, 64), memory_limit=20_000)
    small = np.ones((64, 64), np.float32)
    assert expr(small, small).shape == (64, 64)
    with pytest.raises(es.EinsumError, match="memory limit"):
        expr(small.astype(np.float64), small.astype(np.float64))
    with pytest.raises(es.EinsumError, match="memory limit"):
        es.contract_expression(
            "ij,jk->ik", (64, 64), (64, 64), dtype=np.float64, memory_limit=20_000
        )


def test_a_dtype_that_is_not_numeric_is_refused_naming_dtype() -> None:
    # a review: contract_expression took dtype=object, and every call (and explain, with
    # shapes) blamed operand 0
    with pytest.raises(TypeError, match="dtype= is object"):
        es.contract_expression("ij->i", (2, 3), dtype=object)
    with pytest.raises(TypeError, match="dtype= is object"):
        es.explain("ij->i", (2, 3), dtype=object)


def test_an_expression_pickles_and_copies_as_opt_einsums_do() -> None:
    """Expressions go to process pools and Dask's process workers: one pickles (its plan
    caches are rebuilt when it is unpickled), keeping its path, finder, dtype and limit."""
    import copy
    import pickle

    a, b, c = np.ones((2, 3)), np.arange(12.0).reshape(3, 4), np.ones((4, 5))
    expr = es.contract_expression(
        "ij,jk,kl->il", a.shape, b.shape, c.shape, optimize="greedy", memory_limit="1MiB",
        dtype="float32",
    )  # fmt: skip
    expr(a, b, c)  # (its caches hold a plan now)
    for again in (pickle.loads(pickle.dumps(expr)), copy.deepcopy(expr)):
        assert again.path == expr.path and again.path.form == "greedy"
        assert (again.dtype, again.memory_limit) == (np.dtype("float32"), 1 << 20)
        np.testing.assert_array_equal(again(a, b, c), expr(a, b, c))
        assert again.plan().steps == expr.plan().steps


def test_an_expression_is_freed_when_its_last_reference_goes() -> None:
    """No reference cycle through its plan caches (a cache of its bound method made every
    expression one, freed only by the garbage collector)."""
    import gc
    import weakref

    a, b = np.ones((3, 4)), np.ones((4, 5))
    expr = es.contract_expression("ij,jk->ik", a.shape, b.shape)
    expr(a, b)
    expr(a.T.copy().T, b, out=np.empty((3, 5)))  # (both caches hold an entry)
    gone = weakref.ref(expr)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del expr
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()


def test_an_expression_s_path_is_read_only() -> None:
    """Its plans follow the path it was made with: one set afterwards would reach only the
    layouts not cached yet (a review), so setting it raises; a pickle made while it was a
    plain attribute still loads."""
    import pickle

    a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
    expr = es.contract_expression("ij,jk,kl->il", a.shape, b.shape, c.shape)
    with pytest.raises(AttributeError):
        expr.path = [(0, 1), (0, 1)]  # type: ignore[misc]
    state = expr.__getstate__()
    state["path"] = state.pop("_path")  # (the state of an expression pickled before)
    old = es.Expression.__new__(es.Expression)
    old.__setstate__(state)
    assert old.path == expr.path and old.plan().steps == expr.plan().steps
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(old))(a, b, c), expr(a, b, c))


def test_an_expression_takes_opt_einsums_backend_keyword() -> None:
    """opt_einsum's ``expr(*arrays, backend=...)``: the operands' own library (or "auto")
    runs; another library is refused by name (einstride converts nothing)."""
    a, b = np.ones((2, 3)), np.ones((3, 4))
    expr = es.contract_expression("ij,jk->ik", a.shape, b.shape)
    out = np.empty((2, 4))
    for backend in ("auto", "AUTO", None, "einstride", "Einstride", "numpy", "NumPy"):
        np.testing.assert_array_equal(expr(a, b, backend=backend), np.full((2, 4), 3.0))
    assert expr(a, b, out=out, backend="numpy") is out
    with pytest.raises(es.EinsumError, match="backend='torch', but this call runs on numpy"):
        expr(a, b, backend="torch")
    for wrong in (3, np.array(["numpy", "numpy"])):  # (an array-like: no == first, a review)
        with pytest.raises(TypeError, match="backend= takes a library's name"):
            expr(a, b, backend=wrong)
    da = pytest.importorskip("dask.array")
    got = expr(da.from_array(a), da.from_array(b), backend="dask.array")  # opt_einsum's name
    np.testing.assert_array_equal(np.asarray(got), np.full((2, 4), 3.0))
    torch = pytest.importorskip("torch")
    x, y = torch.ones(2, 3), torch.ones(3, 4)
    assert torch.equal(expr(x, y, backend="torch"), torch.full((2, 4), 3.0))
    with pytest.raises(es.EinsumError, match="this call runs on torch"):
        expr(x, y, backend="numpy")
