"""``memory_limit`` bounds the peak of a call (issue 13): plan peaks, slicing, the errors.

Peaks are measured with tracemalloc, which sees NumPy's array allocations.  The stated
slack (:func:`slack`): a measured peak may exceed a limit (or a reported peak) by what the
limit does not cover -- NumPy's scratch space inside one loop call (its iterator buffers:
at most 8,192 elements, its default buffer size, of each operand and of the output) and
the small Python objects of a call (views, tuples, closures: ``PYTHON_SLACK``).
"""

from __future__ import annotations

import math
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride import EinsumError, memory
from einstride.engine.backends.numpy.cache import entry_for, facts_of
from einstride.engine.backends.numpy.limited import limited_plan
from einstride.engine.backends.numpy.peak import plan_peak
from einstride.engine.backends.numpy.plan import build_plan
from einstride.engine.backends.numpy.report import format_plan
from einstride.engine.spec.equation import parse_equation
from einstride_bench.memory import traced_peak

PYTHON_SLACK = 16 * 1024
NUMPY_BUFFER = 8192
RNG = np.random.default_rng(13)


def slack(ops: list[np.ndarray]) -> int:
    """What a measured peak may exceed a limit or a reported peak by (see the module doc)."""
    widest = max(max(x.dtype.itemsize for x in ops), 8)
    return NUMPY_BUFFER * widest * (len(ops) + 1) + PYTHON_SLACK


def operands(shapes: list[tuple[int, ...]], dtype: Any = np.float64) -> list[np.ndarray]:
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


# -- the peak of a plan ----------------------------------------------------------------------

PLANS = [
    ("ab,cbe,ae->ac", [(100, 60), (80, 60, 50), (100, 50)], "auto", np.float64),
    ("abc,ade,bdf,cef->", [(24, 24, 24)] * 4, "auto", np.float64),
    ("zab,zcbe,zae->zac", [(3, 50, 30), (3, 40, 30, 25), (3, 50, 25)], "auto", np.float64),
    ("i,j,ij->", [(2000,), (2000,), (2000, 2000)], [(0, 1), (0, 1)], np.float64),
    ("ikj,jkl->il", [(40, 60, 50), (50, 60, 30)], "auto", np.float64),  # an operand copy
    ("i->ii", [(1000,)], "auto", np.float64),  # a zeroed output
    ("ij,jk,kl->il", [(300, 200), (200, 300), (300, 100)], "auto", np.float16),  # temporaries
]


@pytest.mark.parametrize(
    ("equation", "shapes", "optimize", "dtype"), PLANS, ids=[p[0] for p in PLANS]
)
def test_the_reported_peak_is_what_tracemalloc_sees(equation, shapes, optimize, dtype):
    ops = operands(shapes, dtype)
    entry = entry_for(equation, ops, None, None, optimize)
    entry.run(ops, None)  # warm up (BLAS, NumPy's caches)
    result, measured = traced_peak(lambda: entry.run(ops, None))
    reported = plan_peak(entry.plan)
    assert entry.peak == reported
    assert abs(measured - reported) <= 0.05 * reported, (measured, reported)
    assert f"peak: {reported:,} B" in es.explain(equation, *ops, optimize=optimize)
    del result


def test_out_is_not_an_allocation():
    a, b = operands([(300, 200), (200, 400)])
    assert entry_for("ij,jk->ik", [a, b], np.empty((300, 400)), None, "auto").peak == 0
    assert entry_for("ij,jk->ik", [a, b], None, None, "auto").peak == 300 * 400 * 8


# -- slicing under the limit -----------------------------------------------------------------

SLICED = [
    ("ab,cbe,ae->ac", [(200, 100), (150, 100, 120), (200, 120)], "auto"),
    ("abc,ade,bdf,cef->", [(30, 30, 30)] * 4, "auto"),  # the tetrahedron
    ("zab,zcbe,zae->zac", [(4, 100, 60), (4, 80, 60, 70), (4, 100, 70)], "auto"),  # batched
    ("i,j,ij->", [(2000,), (2000,), (2000, 2000)], [(0, 1), (0, 1)]),  # outer, then reduce
]


@pytest.mark.parametrize(("equation", "shapes", "optimize"), SLICED, ids=[c[0] for c in SLICED])
def test_a_call_over_the_limit_is_sliced_within_it(equation, shapes, optimize):
    ops = operands(shapes)
    unsliced = entry_for(equation, ops, None, None, optimize)
    limit = unsliced.peak // 8
    # numpy.einsum along the same path (its own path finder keeps intermediates no larger
    # than the operands, and takes 10 s on the tetrahedron)
    expected = np.einsum(equation, *ops, optimize=["einsum_path", *unsliced.plan.path])

    def call() -> Any:
        return es.einsum(equation, *ops, optimize=optimize, memory_limit=limit)

    call()  # plans (and warms up) outside the measurement
    result, measured = traced_peak(call)
    limited = limited_plan(equation, facts_of(ops), None, None, optimize, limit)
    assert limited.sliced is not None and limited.sliced.slicing.n_slices > 1
    assert measured <= limit + slack(ops), (measured, limit)
    assert measured <= limited.peak + slack(ops) and limited.peak <= limit
    np.testing.assert_allclose(result, expected, rtol=1e-10, atol=1e-8)


@pytest.mark.parametrize(
    "make_out",
    [
        lambda: np.zeros((100, 200)).T,  # transposed: the result is computed, then copied
        lambda: np.zeros((200, 200))[:, ::2],  # gapped
        lambda: np.zeros((200, 100), np.float32),  # computed in float64, then cast
    ],
    ids=["transposed", "gapped", "float32"],
)
@pytest.mark.parametrize("limit", [80_000, 120_000, 10_000])
def test_an_out_that_takes_a_temporary_is_sliced_within_the_limit(make_out, limit):
    """``out=`` that the product cannot write (a temporary of the result's size, then
    copied or cast): the slicer's model counts a slice's temporary (a review: every limit
    under the unsliced 160,000 bytes was refused, 'no slicing found')."""
    a, b = operands([(200, 300), (300, 100)])
    out = make_out()

    def call() -> Any:
        return es.einsum("ij,jk->ik", a, b, out=out, memory_limit=limit)

    call()
    out[...] = 0
    result, measured = traced_peak(call)
    assert result is out
    np.testing.assert_allclose(
        out, a @ b, rtol=1e-5 if out.dtype == np.float32 else 1e-10, atol=1e-10
    )
    out_facts = (out.shape, out.strides, out.dtype)
    limited = limited_plan("ij,jk->ik", facts_of([a, b]), out_facts, None, "auto", limit)
    assert limited.sliced is not None and limited.peak <= limit
    assert measured <= limit + slack([a, b])


def test_a_looser_limit_fits_where_a_tighter_one_does():
    """Slicing ``e`` makes ``cbe`` a copy that the slicer's model does not see; the next
    target shrank by that copy's full size, nothing was left and a limit of 30,000 bytes
    was refused where 20,480 fitted (a review's sweep)."""
    ops = operands([(40, 30), (50, 30, 20), (40, 20)])
    expected = np.einsum("ab,cbe,ae->ac", *ops)
    for limit in range(17_000, 60_001, 1_000):
        got = es.einsum("ab,cbe,ae->ac", *ops, memory_limit=limit)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_ab_cbe_ae_slices_output_labels_without_extra_flops():
    """cupy#4834's contraction: slicing ``a`` (an output label every step loops over)
    costs no extra FLOPs."""
    shapes = [(200, 100), (150, 100, 120), (200, 120)]
    report = es.explain("ab,cbe,ae->ac", *shapes, memory_limit="2MiB")
    assert "sliced over: a:" in report and "(overhead 0.0%)" in report


def test_sliced_results_equal_the_unsliced_ones_for_every_kind_of_slice():
    """Output labels only, summed labels into the result, summed labels in a float32
    accumulator (float16 results), bool (logical or), out= (strided), Tensors."""
    a, b, c = operands([(120, 40), (40, 120), (120, 30)])
    path = [(0, 1), (0, 1)]  # an intermediate ik of 115 KB
    unsliced = es.einsum("ij,jk,kl->il", a, b, c, optimize=path)
    for limit in (40_000, 60_000):
        np.testing.assert_allclose(
            es.einsum("ij,jk,kl->il", a, b, c, optimize=path, memory_limit=limit), unsliced
        )
    out = np.zeros((30, 120)).T
    assert es.einsum("ij,jk,kl->il", a, b, c, optimize=path, memory_limit=30_000, out=out) is out
    np.testing.assert_allclose(out, unsliced)
    tensor = es.einsum("ij,jk,kl->il", es.tensor(a), b, c, optimize=path, memory_limit=40_000)
    assert isinstance(tensor, es.Tensor)
    np.testing.assert_allclose(tensor.numpy(), unsliced)

    halves = [x.astype(np.float16) for x in operands([(20, 20, 20)] * 4)]
    wide = np.einsum("abc,ade,bdf,cef->", *[x.astype(np.float64) for x in halves])
    got = es.einsum("abc,ade,bdf,cef->", *halves, memory_limit=20_000)
    assert got.dtype == np.float16 and np.isclose(float(got), wide, rtol=1e-2, atol=1.0)
    report = es.explain("abc,ade,bdf,cef->", *halves, memory_limit=20_000)
    assert "in an accumulator of float32" in report

    bools = [RNG.random(s) < 0.02 for s in [(200, 50), (50, 200), (200, 40)]]
    np.testing.assert_array_equal(
        es.einsum("ij,jk,kl->il", *bools, optimize=path, memory_limit=20_000),
        np.einsum("ij,jk,kl->il", *bools),
    )


def test_a_repeated_output_label_is_sliced_on_its_diagonal():
    a, b, c = operands([(60, 40), (40, 60), (60, 5)])
    path = [(0, 1), (0, 1)]  # the zeroed output takes 144,000 bytes, the intermediate 28,800
    assert entry_for("ij,jk,kl->iil", [a, b, c], None, None, path).peak > 160_000
    got = es.einsum("ij,jk,kl->iil", a, b, c, optimize=path, memory_limit=160_000)
    expected = np.zeros((60, 60, 5))
    expected[np.arange(60), np.arange(60)] = a @ b @ c
    np.testing.assert_allclose(got, expected)


def test_the_path_search_respects_the_limit_first():
    """opt_einsum's greedy path holds a 32 KiB intermediate; within 19,865 bytes the path
    is searched again, and that plan fits without slicing."""
    shapes = [(32, 128), (128, 128), (128, 2), (2, 64)]
    ops = operands(shapes)
    limited = limited_plan("ij,jk,kl,lm->im", facts_of(ops), None, None, "greedy", 19_865)
    assert limited.sliced is None and limited.plan.path != limited.base.path
    assert plan_peak(limited.base) > 19_865 >= limited.peak
    got = es.einsum("ij,jk,kl,lm->im", *ops, optimize="greedy", memory_limit=19_865)
    np.testing.assert_allclose(got, ops[0] @ ops[1] @ ops[2] @ ops[3])
    report = es.explain("ij,jk,kl,lm->im", *shapes, optimize="greedy", memory_limit=19_865)
    assert "the path was searched within the limit" in report


def test_a_sum_that_fits_without_its_vector_of_ones_says_so():
    """Over the limit, a BLAS row sum is planned again with NumPy's loop (no vector of
    ones): the report said the path had been searched, and gave that plan's peak as the
    one over the limit (a review)."""
    a = np.ones((4096, 2048))
    unlimited = es.explain("ij->i", a)
    assert "peak: 49,152 B" in unlimited
    report = es.explain("ij->i", a, memory_limit=40_000)
    assert "path was searched" not in report
    assert "the plan along path [(0,)] would peak at 49,152 B" in report
    assert "so its sums run NumPy's loop instead of a BLAS product with a vector of ones" in report
    np.testing.assert_allclose(es.einsum("ij->i", a, memory_limit=40_000), a.sum(axis=1))


def test_contract_expression_takes_a_memory_limit():
    shapes = [(200, 100), (150, 100, 120), (200, 120)]
    ops = operands(shapes)
    expr = es.contract_expression("ab,cbe,ae->ac", *shapes, memory_limit="2MiB")
    assert expr.memory_limit == 2 * 2**20
    expected = np.einsum("ab,cbe,ae->ac", *ops)
    expr(*ops)
    result, measured = traced_peak(lambda: expr(*ops))
    assert measured <= 2 * 2**20 + slack(ops)
    np.testing.assert_allclose(result, expected)
    np.testing.assert_allclose(expr(*ops, memory_limit="1MiB"), expected)  # a call's own
    assert "sliced over:" in expr.explain() and "peak per slice" in expr.explain()
    with pytest.raises(EinsumError, match="output would allocate 240,000 bytes"):
        es.contract_expression("ab,cbe,ae->ac", *shapes, dtype=np.float64, memory_limit=100_000)
    with pytest.raises(EinsumError, match="output would allocate 240,000 bytes"):  # no dtype
        es.contract_expression("ab,cbe,ae->ac", *shapes, memory_limit=10_000)  # fits none
    small = es.contract_expression("ab,cbe,ae->ac", *shapes, memory_limit=100_000)
    with pytest.raises(EinsumError, match="memory limit"):  # float64 operands: at the call
        small(*ops)


def test_the_default_limit_applies_on_the_hot_path():
    ops = operands([(200, 100), (150, 100, 120), (200, 120)])
    expected = np.einsum("ab,cbe,ae->ac", *ops)
    previous = memory.set_memory_limit(3 * 2**20)
    try:
        es.einsum("ab,cbe,ae->ac", *ops)  # no keyword: the hot path
        result, measured = traced_peak(lambda: es.einsum("ab,cbe,ae->ac", *ops))
    finally:
        memory.set_memory_limit(previous)
    assert measured <= 3 * 2**20 + slack(ops)
    np.testing.assert_allclose(result, expected)


# -- what cannot fit -------------------------------------------------------------------------


def test_a_result_over_the_limit_raises_before_allocating():
    a, b = operands([(1000, 10), (10, 1000)])

    def call() -> Any:
        with pytest.raises(EinsumError) as info:
            es.einsum("ij,jk->ik", a, b, memory_limit=1_000_000)
        return info

    info, measured = traced_peak(call)
    message = str(info.value)
    assert "output would allocate 8,000,000 bytes" in message
    assert "memory limit of 1,000,000 bytes" in message
    # nothing of the result's size (8 MB) was allocated: only the Python objects of
    # planning it (and of the exception), a few pages
    assert measured < 4 * PYTHON_SLACK
    report = es.explain("ij,jk->ik", (1000, 10), (10, 1000), memory_limit=1_000_000)
    assert "einsum would raise EinsumError" in report and "8,000,000" in report


def test_when_even_the_smallest_slice_cannot_fit_the_error_says_so():
    a, b, c = operands([(100, 2), (2, 100), (100, 3)])
    result_bytes = 100 * 3 * 8  # fits; the result plus one slice's buffers does not
    with pytest.raises(EinsumError) as info:
        es.einsum("ij,jk,kl->il", a, b, c, optimize=[(0, 1), (0, 1)], memory_limit=result_bytes)
    message = str(info.value)
    assert "even sliced to one index of every label" in message
    assert f"memory limit of {result_bytes:,} bytes" in message


# -- any equation, any limit -----------------------------------------------------------------


@st.composite
def problems(draw: Any) -> tuple[str, list[tuple[int, ...]], Any, Any]:
    pool = "abcdef"
    sizes = {x: draw(st.integers(1, 12)) for x in pool}
    terms = [
        draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))
        for _ in range(draw(st.integers(2, 4)))
    ]
    used = sorted({x for t in terms for x in t})
    output = draw(st.lists(st.sampled_from(used), max_size=3, unique=True))
    assume(math.prod(sizes[x] for x in used) <= 300_000)
    equation = ",".join("".join(t) for t in terms) + "->" + "".join(output)
    dtype = draw(st.sampled_from([np.int64, np.int64, np.float32, np.complex128, np.bool_]))
    optimize = draw(st.sampled_from(["auto", "greedy", False]))
    return equation, [tuple(sizes[x] for x in t) for t in terms], dtype, optimize


@settings(
    max_examples=60, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow]
)
@given(problem=problems(), fraction=st.floats(0.0, 1.0))
def test_any_sliced_call_equals_the_unsliced_one_within_its_reported_peak(problem, fraction):
    equation, shapes, dtype, optimize = problem
    ops = [np.asarray(RNG.integers(-3, 4, s)).astype(dtype) for s in shapes]
    unsliced = es.einsum(equation, *ops, optimize=optimize)
    entry = entry_for(equation, ops, None, None, optimize)
    result_bytes = math.prod(np.shape(unsliced)) * np.dtype(dtype).itemsize
    assume(entry.peak > result_bytes)  # something besides the result to slice
    limit = result_bytes + int(fraction * (entry.peak - result_bytes))

    def call() -> Any:
        return es.einsum(equation, *ops, optimize=optimize, memory_limit=limit)

    try:
        call()
    except EinsumError as exc:
        assert "memory limit" in str(exc) and f"{limit:,} bytes" in str(exc)
        return
    result, measured = traced_peak(call)
    limited = limited_plan(equation, facts_of(ops), None, None, optimize, limit)
    assert limited.peak <= limit
    assert measured <= limited.peak + slack(ops)
    if dtype == np.float32:
        np.testing.assert_allclose(result, unsliced, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(result, unsliced)


@pytest.mark.parametrize(
    ("equation", "shapes", "limit"),
    [
        ("c,c,d->c", [(21,), (21,), (24,)], 16),
        ("cad,d,bac->d", [(4, 8, 5), (5,), (15, 8, 4)], 32),
        ("a,cd,ab->c", [(36,), (37, 59), (36, 44)], 35),
    ],
)
def test_limits_of_a_few_elements_with_an_out_of_another_dtype_fit(equation, shapes, limit):
    """The last step's temporary (computed in float64, cast into a float32 out=) counted
    on top of path buffers that may hold it: a few elements' limits that fitted were
    refused (a review of the fix that began counting it)."""
    ops = operands(shapes)
    out = np.zeros(np.einsum(equation, *ops).shape, np.float32)
    es.einsum(equation, *ops, out=out, memory_limit=limit)
    np.testing.assert_allclose(out, np.einsum(equation, *ops), rtol=1e-5, atol=1e-5)


def test_a_sliced_diagonal_expansion_into_out_zeroes_the_rest_of_out():
    """The slices write the diagonal only; into a given out= (not zeroed, as einsum's own
    result is) the off-diagonal entries kept out's old values (a review: 1,368 stale
    entries of 1,600 at a limit of 2,000 B)."""
    rng = np.random.default_rng(9)
    a, b, c = rng.random((40, 5)), rng.random((5, 6)), rng.random((6, 40))
    want = np.diag(np.einsum("ij,jk,ki->i", a, b, c))  # NumPy has no repeated output label
    for limit in (8000, 4000, 2000):
        out = np.full((40, 40), 7.0)
        es.einsum("ij,jk,ki->ii", a, b, c, out=out, memory_limit=limit)
        np.testing.assert_allclose(out, want)
    x = rng.random((2, 4, 4)).astype(np.float16)
    out = np.asfortranarray(np.full((4, 4, 2), 7.0, np.float16))
    es.einsum("baa->aab", x, out=out, memory_limit=8)
    want = np.zeros((4, 4, 2), np.float32)
    want[np.arange(4), np.arange(4)] = np.einsum("baa->ab", x.astype(np.float32))
    np.testing.assert_allclose(out, want, rtol=1e-3)


def test_under_errstate_raise_out_s_temporaries_count_and_are_named():
    """With np.errstate(all='raise') einsum computes into new arrays before writing out=
    (an error must leave out untouched): the cast copy into out's dtype went uncounted
    (480,938 B measured under a 330,000 B limit), and a refusal did not say why the
    result was allocated at all (a review)."""
    a, v = np.ones((200, 200)), np.ones(200)
    out = np.zeros((200, 200), np.float32)
    with np.errstate(all="raise"), pytest.raises(EinsumError, match="errstate"):
        es.einsum("ij,j->ij", a, v, out=out, memory_limit=330_000)
    assert not out.any()  # untouched
    with np.errstate(all="raise"):
        tracemalloc.start()
        es.einsum("ij,j->ij", a, v, out=out, memory_limit=500_000)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert out.all() and peak <= 500_000


@pytest.mark.parametrize("order", ["F", "C", "A"])
def test_order_lays_out_the_result_within_the_limit(order):
    """order='F' copied the whole result after the plan ran, outside the limit (640,602 B
    measured under 330,000 B, a review); near the limit the result is written straight
    into an array of that layout."""
    a, v = np.asfortranarray(np.ones((200, 200))), np.ones(200)
    es.einsum("ij,j->ij", a, v, order=order, memory_limit=330_000)  # planned: not measured
    tracemalloc.start()
    got = es.einsum("ij,j->ij", a, v, order=order, memory_limit=330_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    want = np.einsum("ij,j->ij", a, v, order=order)
    np.testing.assert_array_equal(got, want)
    assert got.flags.f_contiguous == want.flags.f_contiguous and peak <= 330_000
    with pytest.raises(EinsumError, match="output would allocate"):
        es.einsum("ij,j->ij", a, v, order=order, memory_limit=300_000)


@pytest.mark.parametrize(
    ("equation", "shapes", "limit"),
    [
        ("i->", [(10**6,)], 1000),
        ("ab,cbe,ae->ac", [(300, 300), (30, 300, 30), (300, 30)], 500_000),
    ],
)
def test_a_call_refused_for_its_rounded_operands_rounds_nothing(equation, shapes, limit):
    """A review: dtype=float16 rounded the float64 operands (2 MB) before finding that the
    copies alone pass memory_limit=1000; the check now comes first, in einsum and explain."""
    ops = [np.full(shape, 0.1) for shape in shapes]

    def refused() -> None:
        with pytest.raises(es.EinsumError, match="rounded to dtype=float16"):
            es.einsum(equation, *ops, dtype="float16", memory_limit=limit)

    refused()  # (a first call builds what it caches)
    _, peak = traced_peak(refused)
    report, explained = traced_peak(
        lambda: es.explain(equation, *ops, dtype="float16", memory_limit=limit)
    )
    assert peak < limit + 64 * 1024
    assert explained < limit + 256 * 1024  # the report's plan, no rounded copy
    assert "einsum would raise EinsumError" in report and "rounded to dtype=float16" in report


@pytest.mark.parametrize(
    ("equation", "shapes", "out", "error"),
    [
        ("ij,jk->ikz", [(100, 100), (100, 100)], None, "appears in no input"),
        ("ij,jk->ik", [(100, 100), (50, 100)], None, "has size 50"),
        ("ij,jk->ik", [(100, 100)], None, "2 input term"),
        ("ij,jk->ik", [(100, 100), (100, 100)], np.zeros((3, 3), np.float16), "out= has shape"),
    ],
)
def test_a_malformed_call_raises_its_own_error_before_the_rounding_limit(
    equation, shapes, out, error
):
    """A review: once the rounded copies were checked first, a malformed call with a tight
    limit reported the memory error, and explain the real one."""
    ops = [np.full(shape, 0.1) for shape in shapes]
    with pytest.raises(es.EinsumError, match=error):
        es.einsum(equation, *ops, dtype="float16", memory_limit=1000, out=out)


@pytest.mark.parametrize(
    ("equation", "shapes", "strides", "how"),
    [
        ("ij,j->i", [(4096, 4096), (4096,)], [(0, 0), (0,)], "spread:"),
        ("ij,j->i", [(4096, 4096), (4096,)], [(0, 8), (8,)], "spread:"),
        ("ij,i->j", [(4096, 4096), (4096,)], [(8, 0), (8,)], "spread:"),
        ("ij,ij->i", [(4096, 4096), (4096, 4096)], [(0, 0), (0, 8)], "spread:"),
        ("ij,j->i", [(4096, 4096), (4096,)], [(8, 0), (8,)], "dropped:"),  # j summed
    ],
)
def test_a_broadcast_operand_is_not_copied_to_its_full_size(equation, shapes, strides, how):
    """A review: broadcast_to(1.5, (8192, 8192)) times a vector copied the operand densely
    (512 MB for 8 stored bytes; NumPy's loop 67 kB): where a step would copy a broadcast
    operand and the one loop is estimated cheaper, the loop runs, over the views as they are;
    where the result is the same along the broadcast label, it is spread instead (computed
    once, then broadcast)."""
    rng = np.random.default_rng(3)
    ops = []
    for shape, steps in zip(shapes, strides):
        stored = rng.standard_normal(
            max(1, max((n - 1) * s // 8 + 1 for n, s in zip(shape, steps)))
        )
        ops.append(np.lib.stride_tricks.as_strided(stored, shape, steps, writeable=False))
    want = np.einsum(equation, *ops)
    es.einsum(equation, *ops)  # (its plan is built and cached first)
    got, peak = traced_peak(lambda: es.einsum(equation, *ops))
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert peak < 4 * want.nbytes + 64 * 1024  # not the 128 MiB dense copy
    assert how in es.explain(equation, *ops)


def test_no_loop_past_the_bound_even_from_a_shape_class():
    """A review: the class of (131072, 131072) decided to fuse at exactly 2**34 index
    combinations and replayed it for 196607 x 196607 (2.25x the bound); the bound now
    holds for every shape of the class (sizes up to 1.5x its own)."""
    # the planner's own decision: einsum reads such a matrix without its broadcast summed
    # label (plan.dropped_axes), a plan made without that (build_plan's spread) still
    # weighs the loop against a dense copy
    f8 = np.dtype(float)

    def report(n: int) -> str:
        spec = parse_equation("ij,j->i", (n, n), (n,))
        return format_plan(build_plan(spec, (f8, f8), ((8, 0), (8,))))

    assert "ij,j->i (196607,)" not in report(196607)
    assert "fused" in report(8192)
    n = 196607
    matrix = np.lib.stride_tricks.as_strided(np.ones(n), (n, n), (8, 0))
    assert "dropped:" in es.explain("ij,j->i", matrix, np.ones(n))


def test_a_call_of_thousands_of_slices_keeps_to_the_reported_peak() -> None:
    # a review: each slice rebuilt the sliced labels (a property), leaving ~22 B of
    # cyclic garbage a slice: 12,800 slices peaked at 1.9x the report, 288 KB left live
    import gc
    import re

    x = np.ones((200, 200))
    limit = 330_000
    report = es.explain("il,ij,kl->jk", x, x, x, memory_limit=limit)
    assert "slices: 12,800" in report
    found = re.search(r"  peak: ([\d,]+) B", report)
    assert found is not None
    reported = int(found.group(1).replace(",", ""))

    def call() -> None:
        es.einsum("il,ij,kl->jk", x, x, x, memory_limit=limit)

    call()
    gc.collect()
    tracemalloc.start()
    try:
        call()
        left, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 1.1 * reported, (peak, reported)
    assert left < 50_000, left


def test_einsum_vjp_bounds_its_gradients_together() -> None:
    # a review: each backward einsum kept within the limit, three 320 KB gradients under
    # a 500 KB limit returned (a peak of 1.1 MB)
    x = np.ones((200, 200))
    previous = memory.set_memory_limit(500_000)
    try:
        with pytest.raises(EinsumError, match="the gradients would allocate 960,000 bytes"):
            es.einsum_vjp("ij,jk,kl->il", (x, x, x), x)
        memory.set_memory_limit(1_100_000)
        es.einsum_vjp("ij,jk,kl->il", (x, x, x), x)
        tracemalloc.start()
        try:
            grads = es.einsum_vjp("ij,jk,kl->il", (x, x, x), x)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        memory.set_memory_limit(previous)
    assert peak <= 1_100_000, peak
    np.testing.assert_allclose(grads[0], x @ (x @ x).T)


def _vjp_peak(limit: int, equation: str, operands: Any, cotangent: Any) -> tuple[int, Any]:
    """The traced peak of a (second, planned) ``einsum_vjp`` under a process limit."""
    previous = memory.set_memory_limit(limit)
    try:
        es.einsum_vjp(equation, operands, cotangent)
        tracemalloc.start()
        try:
            grads = es.einsum_vjp(equation, operands, cotangent)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        memory.set_memory_limit(previous)
    return peak, grads


def test_einsum_vjp_of_other_dtypes_than_its_gradients_keeps_the_bound() -> None:
    # a review: a real operand's gradient of a complex cotangent was a .real view keeping
    # the complex buffer alive (1.96x the limit, the bound is 1.5x); a float32 operand's of
    # a float64 cotangent was made in float64, then cast beside it (1.5x, the bound 1x)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1000, 500)), rng.standard_normal((500, 4))
    cot = rng.standard_normal((1000, 4)) * (1 + 1j)
    limit = int((a.nbytes + b.nbytes) / 0.49)  # the gradients take 49% of it: within 1.5x
    peak, (ga, gb) = _vjp_peak(limit, "ij,jk->ik", (a, b), cot)
    assert peak <= 1.5 * limit and ga.base is None, (peak, limit)
    np.testing.assert_allclose(ga, (cot @ b.T).real)
    np.testing.assert_allclose(gb, (a.T @ cot).real)
    a32, v32 = a.astype(np.float32), rng.standard_normal(500).astype(np.float32)
    cot64 = rng.standard_normal(1000)
    limit = 2 * (a32.nbytes + v32.nbytes)  # half: within the limit (slack: Python's objects)
    peak, (ga, gv) = _vjp_peak(limit, "ij,j->i", (a32, v32), cot64)
    assert peak <= limit + 200_000, (peak, limit)
    assert ga.dtype == gv.dtype == np.float32
    np.testing.assert_allclose(ga, np.outer(cot64, v32).astype(np.float32))
    np.testing.assert_allclose(gv, (a32.astype(np.float64).T @ cot64).astype(np.float32), 1e-5)


def test_einsum_vjps_refusal_names_its_call_and_the_callers_limit() -> None:
    # a review: it named the backward equation 'ad,ab,bc->cd' and the limit less the
    # gradients made (320,001 bytes), neither of them the caller's
    x = np.ones((200, 200))
    previous = memory.set_memory_limit(960_001)
    try:
        with pytest.raises(EinsumError) as caught:
            es.einsum_vjp("ij,jk,kl->il", (x, x, x), x)
    finally:
        memory.set_memory_limit(previous)
    assert str(caught.value).startswith(
        "einsum_vjp 'ij,jk,kl->il': the gradient of operand 2 does not fit the memory limit "
        "of 960,001 bytes (the gradients before it hold 640,000 bytes of it): einsum"
    ), caught.value


@pytest.mark.parametrize("limit", [None, 400_000])
def test_explain_says_what_operands_rounded_to_a_small_float_add(limit: int | None) -> None:
    # a review: the report showed the limit less the rounded copies as the caller's
    # ("memory limit: 240,000 B" for 400,000) and a peak without them
    a, b = np.ones((300, 200)), np.ones((200, 100))
    report = es.explain("ij,jk->ik", a, b, dtype=np.float16, memory_limit=limit)
    within = memory.LIMIT if limit is None else limit
    assert report.splitlines()[-1] == (
        "  rounded: the operands rounded to dtype=float16 first take 160,000 B, alive through "
        "the call, beside the plan's peak above (the plan keeps within the memory limit of "
        f"{within:,} B less them: {within - 160_000:,} B)"
    ), report
    assert "rounded:" not in es.explain("ij,jk->ik", a, b, memory_limit=limit)


def test_einsum_vjp_of_a_bool_operand_beside_a_complex_one_is_the_same_under_a_limit() -> None:
    # (a review: under a limit the gradient was written into a bool out= by an unsafe cast,
    # True where the imaginary part alone was nonzero; without one, the real part's cast)
    a, b = np.ones(1000, bool), np.full(1000, 1j)
    free = es.einsum_vjp("i,i->", [a, b], 1.0)
    previous = memory.set_memory_limit(3 * (a.nbytes + b.nbytes) // 2)
    try:
        limited = es.einsum_vjp("i,i->", [a, b], 1.0)
    finally:
        memory.set_memory_limit(previous)
    for x, y in zip(free, limited):
        np.testing.assert_array_equal(x, y)
    assert not free[0].any()
