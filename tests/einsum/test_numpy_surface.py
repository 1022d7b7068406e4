"""NumPy's and opt_einsum's call surface on einstride: order=, casting=, the optimize tuple,
the interleaved contract_expression, exception classes that are also NumPy's, memory_limit
strings, and explain on operands (the front end, engine/call.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import einstride as es
from einstride import EinsumError, EinsumPathError, EinsumTypeError
from einstride._compat import VALUE_BASED, promoted_scalars

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize(
    ("equation", "shapes", "fortran_in"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)], False),
        ("ij,jk->ik", [(3, 4), (4, 5)], True),
        ("ij->ji", [(3, 4)], False),
        ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)], False),
        ("i,j->ij", [(3,), (4,)], False),
        ("ij,j->ij", [(3, 4), (4,)], True),
        ("ij,j->ij", [(3, 4), (4,)], False),
        ("ij,jk->ik", [(3, 1), (1, 4)], False),
    ],
)
def test_order_gives_numpys_layout(order: str, equation: str, shapes, fortran_in: bool) -> None:
    """For C, F and A, NumPy's layout: "A" is Fortran when every operand is Fortran
    contiguous, vectors and (n, 1) matrices included (a review: they were taken as C)."""
    ops = [RNG.random(s) for s in shapes]
    if fortran_in:
        ops = [np.asfortranarray(x) for x in ops]
    got = es.einsum(equation, *ops, order=order)
    want = np.einsum(equation, *ops, order=order)
    np.testing.assert_allclose(got, want)
    if order in "CF":  # also where NumPy returns a view that ignores it ('ij->ji')
        assert got.flags[f"{order}_CONTIGUOUS"]
    if order != "K" and not any(np.shares_memory(want, x) for x in ops):
        assert got.flags.c_contiguous == want.flags.c_contiguous
        assert got.flags.f_contiguous == want.flags.f_contiguous


def test_order_with_tensors_and_bad_values() -> None:
    t = es.tensor(RNG.random((3, 4)))
    got = es.einsum("ij->ji", t, order="C")
    assert isinstance(got, es.Tensor) and got.numpy().flags.c_contiguous
    with pytest.raises(ValueError, match="order must be one of"):
        es.einsum("i->i", np.ones(2), order="X")


def test_casting_governs_dtype_and_out_as_numpy() -> None:
    a, b = RNG.random((3, 4)), RNG.random((4, 5))
    with pytest.raises(TypeError, match="casting='safe'"):
        es.einsum("ij,jk->ik", a, b, dtype=np.float32, casting="safe")
    with pytest.raises(TypeError):
        np.einsum("ij,jk->ik", a, b, dtype=np.float32, casting="safe")
    with pytest.raises(TypeError, match="cannot hold"):
        es.einsum("ij,jk->ik", a, b, out=np.empty((3, 5), np.float32), casting="safe")
    out = np.empty((3, 5), np.int64)
    assert es.einsum("ij,jk->ik", a, b, out=out, casting="unsafe") is out
    np.testing.assert_array_equal(out, np.einsum("ij,jk->ik", a, b).astype(np.int64))
    # the default keeps einstride's rules: dtype= casts, out= by same_kind
    assert es.einsum("ij,jk->ik", a, b, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="casting must be one of"):
        es.einsum("i->i", np.ones(2), casting="bogus")


@pytest.mark.skipif(VALUE_BASED, reason="NumPy 1's einsum computes in the operands' dtype")
@pytest.mark.parametrize("raise_errors", [False, True])
@pytest.mark.parametrize(
    ("equation", "operands", "out_dtype"),
    [
        ("ij->", [np.full((100, 100), 200, np.uint8)], np.int64),
        ("ij,jk->ik", [np.full((2, 40), 10, np.int8), np.full((40, 3), 10, np.int8)], np.int64),
        ("i->", [np.full(10**5, 0.1, np.float32)], np.float64),
        ("i,i->", [np.ones(5, bool), np.ones(5, bool)], np.int64),  # a count, not an OR
        ("i->", [np.full(1000, 200, np.int64)], np.int8),  # computed wide, then wrapped
    ],
)
def test_out_takes_part_in_the_computation_dtype_as_in_numpy(
    equation: str, operands: list[np.ndarray], out_dtype: Any, raise_errors: bool
) -> None:
    """NumPy computes in the common dtype of the operands and out=: a uint8 image summed
    into an int64 out does not wrap (a review: einstride summed in uint8, then cast)."""
    shape = np.einsum(equation, *operands).shape
    want, got = np.zeros(shape, out_dtype), np.zeros(shape, out_dtype)
    np.einsum(equation, *operands, out=want, casting="unsafe")
    with np.errstate(all="raise" if raise_errors else "warn"):
        es.einsum(equation, *operands, out=got, casting="unsafe")
    np.testing.assert_array_equal(got, want)
    expression = es.contract_expression(equation, *(x.shape for x in operands))
    again = np.zeros(shape, out_dtype)
    expression(*operands, out=again)
    np.testing.assert_array_equal(again, want)


@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize(
    ("operands", "kwargs"),
    [
        ([np.ones(3, np.int32), np.ones(3, np.float32)], {}),  # into their common float64
        ([np.full(3, 0.5, np.float32), np.ones(3, np.float32)], {"out": np.zeros((), np.float64)}),
        ([np.ones(3, np.float64), np.ones(3, np.float64)], {"out": np.zeros((), np.float32)}),
        ([np.ones(3, np.float64), np.ones(3, np.float64)], {"dtype": np.float32}),
        ([np.ones(3, np.int8), np.ones(3, np.int8)], {"out": np.zeros((), np.int64)}),
    ],
)
def test_casting_checks_every_operand_into_the_computation_dtype(
    operands: list[np.ndarray], kwargs: dict[str, Any], casting: str
) -> None:
    """NumPy's casting= applies to every operand's cast into the dtype it is computed in
    (dtype=, else the common dtype, out='s included): einstride checked it only with
    dtype= (int32 with float32 under 'no' ran)."""
    outcomes = []
    for run in (np.einsum, es.einsum):
        given = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        try:
            outcomes.append(np.asarray(run("i,i->", *operands, casting=casting, **given)).item())
        except TypeError:
            outcomes.append("refused")
    assert outcomes[1] == outcomes[0]


def test_exception_classes_are_also_numpys() -> None:
    with pytest.raises(ValueError):
        es.einsum()
    with pytest.raises(TypeError):
        np.einsum(0, 0)
    with pytest.raises(EinsumTypeError) as info:
        es.einsum(0, 0)
    assert isinstance(info.value, TypeError) and isinstance(info.value, EinsumError)
    with pytest.raises(TypeError):
        es.einsum(np.ones(2), [0.5], [0])
    three = [np.ones((2, 2))] * 3
    with pytest.raises(RuntimeError):
        np.einsum("ij,jk,kl->il", *three, optimize=["einsum_path", (0, 1)])
    with pytest.raises(EinsumPathError) as path_info:
        es.einsum("ij,jk,kl->il", *three, optimize=["einsum_path", (0, 1)])
    assert isinstance(path_info.value, RuntimeError) and isinstance(path_info.value, ValueError)


@pytest.mark.parametrize("path", [["einsum_path"], [], ()])
@pytest.mark.parametrize("equation", ["ij->", "ij->i", "ij->j", "ii->i", "ij->ji"])
def test_an_empty_path_of_one_operand_still_runs_its_step(equation: str, path: Any) -> None:
    """NumPy's path for one operand is ``[(0,)]``; an empty one (a review: einstride returned
    the operand unreduced for ``ij->``, a bare ValueError for ``ij->i``) is that step too."""
    a = np.arange(16.0).reshape(4, 4)
    np.testing.assert_array_equal(es.einsum(equation, a, optimize=path), np.einsum(equation, a))
    assert es.einsum_path(equation, a, optimize=path)[0] == ["einsum_path", (0,)]


@pytest.mark.parametrize(
    "args",
    [
        (np.ones(2), [np.array([0]), 1]),  # an array has __index__, which raises
        (np.ones(2), [np.array([0, 1])]),
        (None, np.ones((2, 2))),
        (np.ones((2, 2)), np.ones((2, 2))),  # an operand where a sublist belongs
    ],
)
def test_arrays_where_labels_belong_are_einstride_type_errors(args: tuple[Any, ...]) -> None:
    with pytest.raises(EinsumTypeError, match="labels must be non-negative ints"):
        es.einsum(*args)


def test_bytes_subscripts_are_ascii_as_numpy_takes_them() -> None:
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(es.einsum(b"ij->ji", a), np.einsum(b"ij->ji", a))
    with pytest.raises(EinsumError, match="not ASCII"):
        es.einsum(b"\xff", a)


def test_the_optimize_tuple_limits_intermediates() -> None:
    a, b, c = RNG.random((8, 2)), RNG.random((2, 8)), RNG.random((8, 3))
    # ab,bc would make an 8x8 intermediate: over a 20-element limit, greedy avoids it
    path, _ = es.einsum_path("ab,bc,cd->ad", a, b, c, optimize=("greedy", 20))
    np_path, _ = np.einsum_path("ab,bc,cd->ad", a, b, c, optimize=("greedy", 20))
    assert path == np_path
    np.testing.assert_allclose(
        es.einsum("ab,bc,cd->ad", a, b, c, optimize=("greedy", 20)), a @ b @ c
    )
    with pytest.raises(EinsumError, match="needs an int memory limit"):
        es.einsum("ab,bc,cd->ad", a, b, c, optimize=("greedy", "lots"))


def test_explain_takes_what_einsum_takes() -> None:
    """A list of ints was taken as a shape: the interleaved form and list operands failed
    in explain where einsum ran (a review); and explicit default keywords take the lane in
    einsum, as explain says (memory_limit=None took the planned way)."""
    from einstride.engine.backends.numpy.lanes import lane_answers

    a, b = RNG.random((2, 3)), RNG.random((3, 4))
    assert "path: [(0, 1)]" in es.explain(a, [0, 1], b, [1, 2], [0, 2])
    assert es.explain("i,i", [1, 2, 3], [4, 5, 6]).startswith("einsum 'i,i'")
    assert "lane: einsum runs this call" in es.explain("ij,jk->ik", a, b, memory_limit=None)
    before = lane_answers()
    es.einsum("ij,jk->ik", a, b, memory_limit=None, dtype=None, casting=None, order="K")
    assert lane_answers() == before + 1


@pytest.mark.parametrize("name", ["greedy", "optimal", "branch-2", "dp"])
def test_a_cap_no_pair_fits_falls_back_to_one_step_for_every_finder(name: str) -> None:
    """('dp', 5) raised opt_einsum's bare RuntimeError where the other finders fall back to
    one step of all operands (a review)."""
    ops = [np.ones((3, 3))] * 3
    assert es.einsum_path("ab,bc,cd->ad", *ops, optimize=(name, 5))[0] == ["einsum_path", (0, 1, 2)]
    np.testing.assert_allclose(
        es.einsum("ab,bc,cd->ad", *ops, optimize=(name, 5)), np.full((3, 3), 9.0)
    )


def test_contract_expression_interleaved_and_out() -> None:
    expr = es.contract_expression((2, 3), [0, 1], (3, 4), [1, 2], [0, 2])
    a, b = RNG.random((2, 3)), RNG.random((3, 4))
    np.testing.assert_allclose(expr(a, b), a @ b)
    out = np.empty((2, 4))
    assert expr(a, b, out=out) is out
    with pytest.raises(ValueError, match="out= is given to each call"):
        es.contract_expression("ij,jk->ik", (2, 3), (3, 4), out=out)


def test_memory_limit_strings_are_sizes_on_every_path() -> None:
    x = np.ones(10**4)
    with pytest.raises(EinsumError, match="memory limit of 1,024 bytes"):
        es.einsum("i->ii", x, memory_limit="1KiB")
    np.testing.assert_allclose(es.einsum("i->", x, memory_limit="1 MB"), 10**4)
    with pytest.raises(EinsumError, match="not a size"):
        es.einsum("i->", x, memory_limit="")


def test_explain_takes_shapes_or_operands() -> None:
    report = es.explain("ij,jk->ik", (30, 40), (40, 50))
    assert "viewed" in report
    transposed = es.explain("ij,jk->ik", np.ones((40, 30)).T, np.ones((40, 50)))
    assert "copy" not in transposed
    gapped = es.explain("ijk,jkl->il", np.ones((20, 40, 30))[:, ::2, :], np.ones((20, 30, 10)))
    assert "copy" in gapped
    with pytest.raises(TypeError, match="not both"):
        es.explain("ij,jk->ik", (3, 4), np.ones((4, 5)))


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,ij->ij", [(1000, 1500)] * 2),  # split over threads where there are several
        ("ijk->k", [(400, 300, 100)]),
        ("bsi,oi->bso", [(2, 3, 4), (5, 4)]),  # a lane: C-contiguous operands
        ("ij,jk->ik", [(4, 4), (4, 4)]),
        ("i,j->ij", [(3,), (0,)]),
    ],
)
def test_explain_of_shapes_tells_the_lane_as_of_c_arrays(
    equation: str, shapes: list[tuple[int, ...]]
) -> None:
    """Shapes stand for C-contiguous arrays: the report says what a call on such arrays
    runs, lane or plan (stride-0 stand-ins once said neither)."""
    of_shapes = es.explain(equation, *shapes).splitlines()
    of_arrays = es.explain(equation, *[np.zeros(s) for s in shapes]).splitlines()
    assert [x for x in of_shapes if "lane" in x] == [x for x in of_arrays if "lane" in x]


def test_explain_says_a_view_result_is_one() -> None:
    assert "(a view of operand 0)" in es.explain("ij->ji", np.ones((3, 3), int))
    assert "(a view of operand 0)" in es.explain("ii->i", (3, 3))
    assert "(new array)" in es.explain("ij->i", (3, 3))


def test_optimize_false_is_never_a_memory_trap() -> None:
    """Left-to-right pairs of ``ea,fb,gc,hd,abcd->efgh`` would allocate 18 GB at full size:
    optimize=False then runs NumPy's one loop, holding no more than NumPy does, and says why."""
    import tracemalloc

    equation = "ea,fb,gc,hd,abcd->efgh"
    shapes = [(8, 4), (6, 6), (4, 8), (12, 10), (4, 6, 8, 10)]  # half the sizes
    ops = [RNG.random(s) for s in shapes]
    report = es.explain(equation, *shapes, optimize=False)
    assert "step 1: fused" in report and "optimize=False: left-to-right pairs" in report
    # the finder line rates the pairs, which do not run: it says so (a review)
    assert "the plan runs one loop over all the operands instead of its pairs" in report
    peaks = []
    for run in (
        lambda: np.einsum(equation, *ops, optimize=False),
        lambda: es.einsum(equation, *ops, optimize=False),
    ):
        run()
        tracemalloc.start()
        result = run()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        np.testing.assert_allclose(result, np.einsum(equation, *ops))
    assert peaks[1] <= 2 * peaks[0]
    # small intermediates keep the left-to-right pairs (BLAS) as before
    small = es.explain("ij,jk,kl->il", (30, 40), (40, 50), (50, 60), optimize=False)
    assert "fused" not in small and "contract" in small
    # nor where the loop passes NumPy's iterator (2**63 index combinations): NumPy's own
    # one loop refuses it ("iterator is too large"), the pairs do not (a review)
    large = "cb,af,gih,kji,gj,gb,ck,b->f"
    sizes = [(2, 98310), (2**30, 1), (3, 3, 411711), (3, 725444, 3), (3, 725444), (3, 98310)]
    report = es.explain(large, *sizes, (2, 3), (98310,), optimize=False, memory_limit=10**6)
    assert "fused" not in report and "contract" in report
    broadcast = [np.broadcast_to(1.0, s) for s in [*sizes, (2, 3), (98310,)]]
    with pytest.raises(es.EinsumError, match="memory limit of 1,000,000 bytes"):
        es.einsum(large, *broadcast, optimize=False, memory_limit=10**6)


def test_numpy_forms_a_review_found_refused() -> None:
    """``order=None`` (NumPy's default spelled out) and a float cap in ``(name, limit)``
    (NumPy compares sizes with it) are taken as NumPy takes them."""
    a, b, c = RNG.random((3, 4)), RNG.random((4, 5)), RNG.random((5, 2))
    np.testing.assert_allclose(es.einsum("ij,jk->ik", a, b, order=None), a @ b)
    for cap in (1e10, 12.0, 12.5):
        got = es.einsum_path("ij,jk,kl->il", a, b, c, optimize=("greedy", cap))[0]
        assert got == np.einsum_path("ij,jk,kl->il", a, b, c, optimize=("greedy", cap))[0]
    with pytest.raises(EinsumError, match="needs an int memory limit"):
        es.einsum("ij,jk,kl->il", a, b, c, optimize=("greedy", float("nan")))


@pytest.mark.parametrize("optimize", [np.array([1]), np.array([(0, 1)]), np.array(["auto"])])
def test_an_array_as_optimize_is_an_einsum_error(optimize: Any) -> None:
    """Compared with ``==`` in the lanes' check, an array raised NumPy's bare 'truth value
    of an array is ambiguous' ValueError (a review)."""
    a = np.ones((3, 3))
    with pytest.raises(EinsumError, match="optimize="):
        es.einsum("ij,jk->ik", a, a, optimize=optimize)


def test_a_dtype_that_is_not_numeric_is_named_in_a_sentence() -> None:
    with pytest.raises(TypeError, match="operand 0 has dtype object, which is not numeric"):
        es.einsum("ij,jk->ik", np.ones((2, 2), dtype=object), np.ones((2, 2)))


def _small_float_front(front: str) -> Any:
    """einsum with dtype= through one front: the NumPy backend, an expression, Dask, torch."""
    if front == "numpy":
        return lambda eq, *ops, dtype: es.einsum(eq, *ops, dtype=dtype)
    if front == "expression":
        return lambda eq, *ops, dtype: es.contract_expression(
            eq, *(o.shape for o in ops), dtype=dtype
        )(*ops)
    if front == "dask":
        da = pytest.importorskip("dask.array")
        return lambda eq, *ops, dtype: np.asarray(
            es.einsum(eq, *(da.from_array(o) for o in ops), dtype=dtype).compute()
        )
    torch = pytest.importorskip("torch")
    return lambda eq, *ops, dtype: es.einsum(
        eq, *(torch.from_numpy(o) for o in ops), dtype=dtype
    ).numpy()


@pytest.mark.parametrize("front", ["numpy", "expression", "dask", "torch"])
def test_a_small_float_dtype_rounds_the_operands_first_as_numpy(front: str) -> None:
    """dtype=float16 casts the operands to float16 (docs/einsum.md: "operands are then
    cast"), then accumulates in float32: values that float16 rounds are rounded, and one
    past its range is inf, as in numpy.einsum (a review: they went to float32 as given)."""
    run = _small_float_front(front)
    x = np.array([1 + 2**-11])  # float16 rounds it to 1.0
    assert float(run("i,i->", x, x, dtype=np.float16)) == 1.0
    with np.errstate(over="ignore"):
        big = run("i,i->i", np.array([70000.0]), np.array([0.5]), dtype=np.float16)
        want = np.einsum("i,i->i", np.array([70000.0]), np.array([0.5]), dtype=np.float16,
                         casting="unsafe")  # fmt: skip
    np.testing.assert_array_equal(np.asarray(big, np.float64), want.astype(np.float64))
    a, b = RNG.random((5, 6)), RNG.integers(0, 9, (6, 3)).astype(np.uint8)  # uint8: exact
    got = run("ij,jk->ik", a, b, dtype=np.float16)
    exact = a.astype(np.float16).astype(np.float64) @ b
    np.testing.assert_array_equal(np.asarray(got, np.float64), exact.astype(np.float16))


@pytest.mark.parametrize(
    ("array", "scalar"),
    [
        (np.arange(3, dtype=np.float32), 2.5),
        (np.arange(3, dtype=np.int8), 3),
        (np.arange(3, dtype=np.int8), 300),
        (np.arange(3, dtype=np.uint8), np.int64(7)),
        (np.arange(3, dtype=np.float32), np.asarray(2.5)),  # a 0-d array: the hot path
        (np.arange(3, dtype=np.complex64), 1.5),
    ],
)
def test_a_scalar_operand_promotes_as_the_installed_numpy_promotes_it(
    array: np.ndarray, scalar: Any
) -> None:
    """The result dtype with a 0-d operand is numpy.einsum's: by its value under NumPy 1
    (float32 times 2.5 is float32 there), by its dtype under NumPy 2 (a review ran NumPy
    1.26: einstride gave float64)."""
    want = np.einsum("i,->i", array, scalar).dtype
    assert es.einsum("i,->i", array, scalar).dtype == want
    expression = es.contract_expression("i,->i", array.shape, ())
    assert (
        expression(array, np.asarray(scalar)).dtype
        == np.einsum("i,->i", array, np.asarray(scalar)).dtype
    )


def test_value_based_promotion_casts_only_the_0d_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under NumPy 1's rule (forced here) each 0-d operand among arrays is cast to the common
    dtype that ``np.result_type`` gives; arrays, and calls of scalars alone, stay as they are."""
    import einstride._compat as compat

    monkeypatch.setattr(compat, "VALUE_BASED", True)
    vector, scalar = np.ones(3), np.asarray(2, np.float32)
    cast = compat.promoted_scalars([vector, scalar])
    assert cast[0] is vector and cast[1].dtype == np.result_type(vector, scalar)
    alone = [np.asarray(1.0), np.asarray(2, np.int8)]
    assert compat.promoted_scalars(alone) == alone
    monkeypatch.setattr(compat, "VALUE_BASED", False)
    assert promoted_scalars([vector, scalar])[1] is scalar


@pytest.mark.parametrize("front", ["numpy", "sliced", "expression", "torch"])
@pytest.mark.parametrize("small", ["float16", "bfloat16"])
@pytest.mark.parametrize("wide", [np.float32, np.float64])
def test_a_small_float_dtype_rounds_the_result_into_a_wider_out(
    front: str, small: str, wide: Any
) -> None:
    """dtype=float16 with a float32 out= writes float16 values, as numpy.einsum computes
    in dtype= (a review: the float32 accumulation went into out= unrounded)."""
    x = np.array([[1.0, 1.0]], wide)
    y = np.array([[1.0], [2.0**-12]], wide)  # 1 + 2**-12: no float16 or bfloat16 value
    out = np.zeros((1, 1), wide)
    if front == "numpy":
        es.einsum("ij,jk->ik", x, y, dtype=small, casting="unsafe", out=out)
    elif front == "sliced":
        es.einsum("ij,jk->ik", x, y, dtype=small, out=out, memory_limit=10**6)
    elif front == "expression":
        es.contract_expression("ij,jk->ik", x.shape, y.shape, dtype=small)(x, y, out=out)
    else:
        torch = pytest.importorskip("torch")
        into = torch.from_numpy(out)
        es.einsum("ij,jk->ik", torch.from_numpy(x), torch.from_numpy(y), dtype=small, out=into)
    assert out[0, 0] == 1.0


def test_rounding_to_a_small_float_dtype_keeps_broadcasts_and_the_memory_limit() -> None:
    """The operands rounded to dtype=float16 are new arrays of the call: a broadcast one
    stays broadcast (a review: 8 bytes became 200 MB under a 1 MiB limit), and their bytes
    count against the memory limit."""
    import tracemalloc

    a = np.broadcast_to(np.float64(0.5), (2_000, 2_000))
    tracemalloc.start()
    try:
        got = es.einsum("ij->i", a, dtype=np.float16, memory_limit="1MiB")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    np.testing.assert_array_equal(got, np.full(2_000, 1000.0, np.float16))
    dense = np.ones(10**6)  # rounded: 2 MB, past the limit by itself
    with pytest.raises(EinsumError, match="rounded to dtype=float16 take 2,000,000 bytes"):
        es.einsum("i->", dense, dtype=np.float16, memory_limit="1MiB")
    expression = es.contract_expression("i->", dense.shape, dtype=np.float16)
    with pytest.raises(EinsumError, match="more than the memory limit"):
        expression(dense, memory_limit="1MiB")


@pytest.mark.parametrize("limit", [120, 48])
@pytest.mark.parametrize("into", [None, "bfloat16", np.float32])
def test_a_sliced_small_float_result_rounds_its_total_once(limit: int, into: Any) -> None:
    """Sliced over a summed label, the chunks add up in float32 and only the total rounds
    to bfloat16, as the unsliced plan does (a review: each chunk was rounded before it was
    added, and a float32 out= got no rounding at all)."""
    import ml_dtypes

    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7, 3)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((3, 7)).astype(ml_dtypes.bfloat16)
    whole = es.einsum("ijk,kj->i", a, b)
    assert "sliced over" in es.explain("ijk,kj->i", a, b, memory_limit=limit)
    if into is None:
        got = es.einsum("ijk,kj->i", a, b, memory_limit=limit)
    else:
        got = np.zeros(5, into)
        es.einsum("ijk,kj->i", a, b, out=got, dtype="bfloat16", memory_limit=limit)
    np.testing.assert_array_equal(np.asarray(got, np.float64), whole.astype(np.float64))


def test_explain_says_when_the_rounded_operands_alone_pass_the_limit() -> None:
    """explain reports what einsum does: the operands rounded to dtype= count against the
    limit (a review: explain showed a slicing that einsum refused)."""
    a, b = np.ones((5, 7, 3)), np.ones((3, 7))
    report = es.explain("ijk,kj->i", a, b, dtype="bfloat16", memory_limit=200)
    assert "einsum would raise EinsumError" in report and "252 bytes" in report
    with pytest.raises(EinsumError, match="252 bytes"):
        es.einsum("ijk,kj->i", a, b, dtype="bfloat16", memory_limit=200)
