"""einsum on Dask arrays: equal to the NumPy path on the regression list and random equations,
the same errors, the explain report, and the per-task memory budget (threaded scheduler)."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from dask.callbacks import Callback  # noqa: E402
from einsum_strategies import DTYPES, cases, values  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_einsum_errors import MALFORMED  # noqa: E402
from test_einsum_regressions import NAMED  # noqa: E402

import einstride as es  # noqa: E402
from einstride import EinsumError  # noqa: E402
from einstride.engine.backends.dask import backend as dask_backend  # noqa: E402

RNG = np.random.default_rng(2024)


def _operand(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.integers(-3, 4, size=shape).astype(np.float64)


def _dask(x: np.ndarray, chunk: int) -> object:
    return da.from_array(x, chunks=tuple(max(1, min(chunk, n)) for n in x.shape) or ())


def _same(got: object, expected: object) -> None:
    got_arr, expected_arr = np.asarray(got), np.asarray(expected)
    assert got_arr.shape == expected_arr.shape
    assert got_arr.dtype == expected_arr.dtype
    np.testing.assert_array_equal(got_arr, expected_arr)


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.mark.parametrize(("equation", "shapes"), NAMED, ids=[e for e, _ in NAMED])
@pytest.mark.parametrize(
    ("chunk", "optimize", "limit"),
    [
        (1, "greedy", None),
        (2, False, None),
        (100, "optimal", None),
        (100, "greedy", 96),
    ],
)
def test_regression_list_equals_the_numpy_path(equation, shapes, chunk, optimize, limit):
    operands = [_operand(s) for s in shapes]
    expected = es.einsum(equation, *operands, optimize=optimize)
    lazy = [_dask(x, chunk) if k % 2 == 0 else x for k, x in enumerate(operands)]
    result = es.einsum(equation, *lazy, optimize=optimize, memory_limit=limit)
    assert isinstance(result, da.Array)
    assert result.shape == np.shape(expected)
    _same(result.compute(), expected)


@st.composite
def problems(draw):
    case = draw(cases(max_operands=4))
    dtypes = [draw(DTYPES) for _ in case.shapes]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    operands = [values(rng, shape, dt) for shape, dt in zip(case.shapes, dtypes)]
    chunks = [tuple(draw(st.integers(1, max(n, 1))) for n in s) for s in case.shapes]
    numpy_too = [draw(st.booleans()) for _ in operands]
    return case, operands, chunks, numpy_too


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    problems(), st.sampled_from([False, "greedy", "optimal"]), st.sampled_from([None, 400, 4096])
)
def test_random_equations_equal_the_numpy_path(problem, optimize, limit):
    case, operands, chunks, numpy_too = problem
    expected = es.einsum(case.render(), *operands, optimize=optimize)
    lazy = [
        x if keep and k > 0 else da.from_array(x, chunks=c)
        for k, (x, c, keep) in enumerate(zip(operands, chunks, numpy_too))
    ]
    try:
        result = es.einsum(case.render(), *lazy, optimize=optimize, memory_limit=limit)
    except EinsumError as exc:  # a budget too small for one element of every block
        assert "even with chunks of one element" in str(exc)
        assert limit is not None
        return
    assert isinstance(result, da.Array)
    _same(result.compute(), expected)


@pytest.mark.parametrize(
    ("equation", "shapes", "fragments"),
    MALFORMED,
    ids=[f"{e}-{k}" for k, (e, _, _) in enumerate(MALFORMED)],
)
def test_malformed_equations_raise_the_numpy_path_errors(equation, shapes, fragments):
    operands = [np.ones(s) for s in shapes]
    with pytest.raises(EinsumError) as numpy_error:
        es.einsum(equation, *operands)
    with pytest.raises(EinsumError) as dask_error:
        es.einsum(equation, *[da.from_array(x) for x in operands])
    assert str(dask_error.value) == str(numpy_error.value)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"optimize": "fastest"}, EinsumError),
        ({"optimize": [(0, 5), (0, 1)]}, EinsumError),
        ({"optimize": [(0, 1)]}, EinsumError),
        ({"dtype": "not a dtype"}, TypeError),
        ({"dtype": object}, TypeError),
    ],
)
def test_bad_options_raise_the_numpy_path_errors(kwargs, error):
    ops = [np.ones((2, 2))] * 3
    with pytest.raises(error) as numpy_error:
        es.einsum("ij,jk,kl->il", *ops, **kwargs)
    with pytest.raises(error) as dask_error:
        es.einsum("ij,jk,kl->il", da.from_array(ops[0]), *ops[1:], **kwargs)
    assert str(dask_error.value) == str(numpy_error.value)


def test_bad_operands_sublists_out_and_memory_limit():
    x = da.ones((2, 2))
    with pytest.raises(TypeError, match=r"operand 1 \(list\) cannot be converted"):
        es.einsum("ij,j->i", x, [[1, 2], [3]])
    with pytest.raises(TypeError, match="not numeric"):
        es.einsum("ij,j->i", x, np.array(["a", "b"]))
    with pytest.raises(EinsumError, match="negative label -1"):
        es.einsum(x, [0, -1])
    with pytest.raises(TypeError, match="out= is not supported"):
        es.einsum("ij->i", x, out=np.empty(2))
    with pytest.raises(TypeError, match="memory_limit must be an int"):
        es.einsum("ij->i", x, memory_limit=1.5)
    with pytest.raises(EinsumError, match="not a size in bytes"):
        es.einsum("ij->i", x, memory_limit="lots")
    with pytest.raises(EinsumError, match="at least one byte"):
        es.einsum("ij->i", x, memory_limit=0)
    for bad in (-1, 0):  # a negative budget's message says why 0 fails too (einsum's: ">= 0")
        with pytest.raises(EinsumError, match=rf"memory_limit={bad} must be at least one byte"):
            dask_backend.task_memory_budget(bad)
    with pytest.raises(EinsumError, match=r"step 1 \(contract\) needs .* chunks of one element"):
        es.einsum("ij,jk->ik", x, x, memory_limit=16)
    unknown = x[x[:, 0] > 0]
    with pytest.raises(EinsumError, match="operand 1 is a Dask array of unknown shape"):
        es.einsum("ij,jk->ik", x, unknown)


def test_sublist_form_tensors_bool_and_float16():
    a, b = _operand((4, 3)), _operand((3, 5))
    got = es.einsum(da.from_array(a, chunks=2), [0, 1], es.as_tensor(b), [1, 2], [0, 2])
    assert isinstance(got, da.Array)  # a Tensor operand is read as its NumPy view
    _same(got.compute(), a @ b)
    mask = RNG.random((6, 5)) < 0.3
    _same(
        es.einsum("ij,jk->ik", da.from_array(mask, chunks=2), mask.T).compute(),
        es.einsum("ij,jk->ik", mask, mask.T),
    )
    half = np.full(3000, 1.0, np.float16)
    got = es.einsum("i->", da.from_array(half, chunks=100))  # float16 accumulates in float32
    assert got.dtype == np.float16 and got.compute() == np.float16(3000.0)
    ints = RNG.integers(0, 100, (50, 40)).astype(np.int8)  # wraps around like the NumPy path
    _same(
        es.einsum("ij,jk->ik", da.from_array(ints, chunks=7), ints.T).compute(),
        es.einsum("ij,jk->ik", ints, ints.T),
    )


def test_einsum_path_and_contract_expression_stay_lazy():
    a = da.ones((10**6, 10**6), chunks=10**4)  # 8 TB: never computed here
    path, report = es.einsum_path("ij,jk,k->i", a, a, np.ones(10**6))
    assert path[0] == "einsum_path" and "einsum 'ij,jk,k->i'" in report
    expr = es.contract_expression("ij,jk->ik", (4, 3), (3, 5))
    x, y = _operand((4, 3)), _operand((3, 5))
    got = expr(da.from_array(x, chunks=2), y)
    assert isinstance(got, da.Array)
    _same(got.compute(), x @ y)
    with pytest.raises(EinsumError, match=r"operand 1 has shape \(3, 4\)"):
        expr(da.from_array(x), np.ones((3, 4)))


def test_explain_shows_the_plan_chunks_and_tasks():
    a = da.from_array(_operand((60, 40)), chunks=(30, 40))
    b = _operand((40, 50))
    built = dask_backend.plan_dask("ij,jk->ik", [a, b], memory_limit=8000)
    text = built.explain()
    assert text.startswith("einsum 'ij,jk->ik' on Dask")
    assert "step 1: contract  operand 0 x operand 1 -> ik (60, 50)" in text
    assert "NumPy, wrapped with da.from_array" in text
    assert f"tasks: {len(built.result.__dask_graph__()):,} in the graph" in text
    for lab in range(3):
        assert max(built.targets[lab]) <= built.chunks[lab]
    assert "summed j: j over several chunks" in text  # 8000 B forces j into chunks
    assert dask_backend.explain("ij,jk->ik", a, b, memory_limit=8000) == text


def test_building_the_graph_materializes_none_of_its_blockwise_layers():
    """Planning counts no tasks: counting materializes a layer, which made a 10^4-chunk
    matmul take minutes to build (Dask's own matmul builds the same graph lazily).  The
    report counts them when asked."""
    from dask.blockwise import Blockwise

    big = da.ones((2000, 2000), chunks=100)
    built = dask_backend.plan_dask("ij,jk->ik", [big, big], memory_limit="64MiB")
    layers = built.result.__dask_graph__().layers
    ours = [layer for name, layer in layers.items() if "einstride" in name]
    blockwise = [layer for layer in ours if isinstance(layer, Blockwise)]
    assert blockwise and not any(layer.is_materialized() for layer in blockwise)
    assert built.result.numblocks == big.numblocks  # the budget keeps the user's chunks
    assert "tasks:" in built.explain()


class _TaskMemory(Callback):
    """Per task: the bytes of the results it reads plus the bytes of its own result."""

    def __init__(self):
        super().__init__()
        self.held: dict[object, int] = {}

    def _pretask(self, key, dsk, state):
        deps = getattr(dsk[key], "dependencies", ())
        self.held[key] = sum(getattr(state["cache"][dep], "nbytes", 0) for dep in deps)

    def _posttask(self, key, result, dsk, state, worker_id):
        self.held[key] += getattr(result, "nbytes", 0)


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ik,kj->ij", [(300, 200), (200, 250)]),
        ("bij,bjk->bik", [(20, 30, 40), (20, 40, 30)]),
        ("ii,i->i", [(400, 400), (400,)]),
        ("ab,bc,cd->ad", [(120, 150), (150, 160), (160, 70)]),
        ("i,j->iij", [(40,), (30,)]),
        ("...i,...i->...", [(100, 1, 200), (120, 200)]),
    ],
)
def test_no_einsum_task_holds_more_than_the_budget(equation, shapes):
    operands = [_operand(s) for s in shapes]
    budget = 64 * 1024
    lazy = [da.from_array(x, chunks=-1) for x in operands]  # one chunk each: too big
    result = es.einsum(equation, *lazy, memory_limit=budget)
    assert max(max(x.nbytes for x in operands), result.nbytes) > 2 * budget
    watch = _TaskMemory()
    with watch:
        got = result.compute(optimize_graph=False)  # every step its own task
    _same(got, es.einsum(equation, *operands))
    ours = [key for key in watch.held if "einstride" in str(key)]
    assert len(ours) > len(operands)
    assert max(watch.held[key] for key in ours) <= budget


def test_casting_is_checked_on_dask_as_on_numpy() -> None:
    """casting= was ignored with a Dask operand: a float64 einsum cast to float32 under
    'safe', and to int32 under 'no', ran (a review)."""
    a = np.full((3, 4), 1.5)
    lazy = da.from_array(a, chunks=2)
    for kwargs in ({"dtype": "f4", "casting": "safe"}, {"dtype": "i4", "casting": "no"}):
        with pytest.raises(es.EinsumTypeError, match="casting="):
            es.einsum("ij->i", lazy, **kwargs)
        with pytest.raises(es.EinsumTypeError, match="casting="):
            es.einsum("ij->i", a, **kwargs)
    got = es.einsum("ij->i", lazy, dtype="i4", casting="unsafe").compute()
    assert got.tolist() == es.einsum("ij->i", a, dtype="i4", casting="unsafe").tolist()


def test_einsum_path_gives_the_path_and_report_of_the_dask_graph() -> None:
    """einsum_path on Dask operands reported the NumPy planner's path (decided at rounded
    shapes: here another one than the graph's) and its report (a review)."""
    from einstride.engine.backends.dask.backend import plan_dask

    eq = "b,g,bc,hg->c"
    ops = [da.ones(s, chunks=4) for s in [(30,), (30,), (30, 30), (16, 30)]]
    path, report = es.einsum_path(eq, *ops)
    assert path[1:] == [tuple(e) for e in plan_dask(eq, ops).plan.path]
    assert "on Dask" in report and report == es.explain(eq, *ops)
    unknown = da.arange(10, chunks=3)
    unknown = unknown[unknown > 4]
    with pytest.raises(es.EinsumError, match="unknown shape"):  # was Dask's ValueError
        es.einsum_path("i->", unknown)


def test_explain_counts_a_layer_two_identical_steps_share_once() -> None:
    """Two identical steps build one Dask layer: the report subtracted its tasks twice and
    said '-3 to load or rechunk the operands' (a review)."""
    a, b = da.ones((4, 6), chunks=2), da.ones((6, 5), chunks=2)
    report = es.explain("ij,jk,ij,jk->ik", a, b, a, b, optimize=[(0, 1), (0, 1), (0, 1)])
    loads = int(report.rsplit("(", 1)[1].split(" to load")[0].replace(",", ""))
    assert loads > 0


def test_a_label_cut_by_one_operand_only_is_charged_its_partial_sums(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One operand cut k in two, the other held it whole: the plan took k as one chunk, so
    the tree summing its partial products held 240,000 B under a 120,000 B task budget,
    and the report said blocks of the whole k (a review)."""
    from einstride.dask import plan_dask
    from einstride.engine.backends.dask import backend as dask_backend

    held: list[int] = []
    add = dask_backend._add_partials

    def spy(blocks: object, *args: object, **kwargs: object) -> object:
        out = add(blocks, *args, **kwargs)
        held.append(sum(p.nbytes for p in dask_backend._flatten(blocks)) + out.nbytes)
        return out

    monkeypatch.setattr(dask_backend, "_add_partials", spy)
    a, b = np.random.default_rng(5).random((100, 10)), np.random.default_rng(6).random((10, 100))
    lazy_a, lazy_b = da.from_array(a, chunks=(100, 5)), da.from_array(b, chunks=(10, 100))
    planned = plan_dask("ik,kj->ij", [lazy_a, lazy_b], memory_limit=120_000)
    np.testing.assert_allclose(planned.result.compute(scheduler="sync"), a @ b)
    assert held and max(held) <= planned.budget
    assert "blocks ik (50, 5) x kj (5, 100)" in planned.explain()


@pytest.mark.parametrize(
    ("value", "error"), [("abc", es.EinsumError), (0, es.EinsumError), (1e5, TypeError)]
)
def test_a_bad_task_memory_config_value_is_named_in_its_error(value: object, error: type) -> None:
    """The errors said memory_limit=..., a keyword the call never had (a review)."""
    from einstride.engine.backends.dask.backend import CONFIG_KEY

    with dask.config.set({CONFIG_KEY: value}), pytest.raises(error, match=CONFIG_KEY):
        es.einsum("ij->i", da.ones((4, 4), chunks=2))


def test_a_torch_tensor_that_requires_grad_with_dask_is_a_type_error() -> None:
    """The Dask backend converts the other operands to NumPy; torch's RuntimeError for a
    tensor that requires grad leaked out (a review)."""
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"operand 0 \(Tensor\) cannot be converted"):
        es.einsum("i,i->", torch.ones(3, requires_grad=True), da.ones(3))


def test_ndarray_subclasses_beside_dask_operands() -> None:
    # a review: an np.matrix stayed 2-D when its broadcast ``...`` axis was dropped, and
    # Dask refused the chunks of the graph
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        m = np.matrix([[1.0, 2.0, 3.0]])
    x = np.arange(12.0).reshape(4, 3)
    got = es.einsum("...i,...i->...i", m, da.from_array(x, chunks=2)).compute()
    np.testing.assert_array_equal(got, np.einsum("...i,...i->...i", np.asarray(m), x))
    masked = np.ma.masked_array(x, mask=x > 5)
    got = es.einsum("ij,ij->i", masked, da.from_array(x, chunks=2)).compute()
    np.testing.assert_array_equal(got, np.einsum("ij,ij->i", x, x))  # the mask ignored, as NumPy's


def test_a_step_of_millions_of_blocks_fails_fast() -> None:
    """spec/einsum.md: ``i->iii`` on 10**5 elements fails fast and clearly, on every backend
    (a review: Dask built its 10**7-block graph for minutes)."""
    import time

    start = time.perf_counter()
    with pytest.raises(es.EinsumError, match=r"step 1 \(expand\) would make [\d,]+ blocks"):
        es.einsum("i->iii", da.ones(10**5))
    assert time.perf_counter() - start < 30


@pytest.mark.parametrize(
    ("equation", "operands"),
    [
        # one result block, 1.7e8 partial sums (the guard counted the result's blocks only,
        # and built the chunk tuples first: a MemoryError after 23 s)
        ("i->", lambda: (da.ones(10**9, chunks=10**8),)),
        # 500**2 result blocks, 500**3 products (it did not return)
        ("ij,jk->ik", lambda: (da.ones((1000, 1000), chunks=1000), np.ones((1000, 1000)))),
    ],
)
def test_the_block_guard_counts_the_partial_sums(equation: str, operands: object) -> None:
    import time

    start = time.perf_counter()
    with pytest.raises(es.EinsumError, match=r"step 1 \(\w+\) would make [\d,]+ blocks"):
        es.einsum(equation, *operands(), memory_limit=200)  # type: ignore[operator]
    assert time.perf_counter() - start < 10


def test_an_expression_keeps_the_dask_task_budget() -> None:
    """A review: contract_expression's calls held Dask's tasks to the process's memory
    limit (25 GB) instead of the task budget that einsum applies (config, else the default)."""
    from einstride.engine.backends.dask.backend import CONFIG_KEY

    a, b = da.ones((400, 300), chunks=(400, 300)), np.ones((300, 300))
    expr = es.contract_expression("ij,jk->ik", a.shape, b.shape)
    with dask.config.set({CONFIG_KEY: "64KiB"}):
        want = es.einsum("ij,jk->ik", a, b)
        got = expr(a, b)
    assert want.chunks != ((400,), (300,))
    assert got.chunks == want.chunks
    np.testing.assert_array_equal(got.compute(scheduler="sync"), a.compute() @ b)


@pytest.mark.parametrize("limit", [np.array(2.9), np.array(True), np.array(1 + 2j), 1.5, [3]])
def test_the_task_memory_budget_takes_what_einsums_memory_limit_takes(limit: object) -> None:
    # (einsum's own check: a 0-d array of 2.9 was int()ed to 2 bytes, np.array(True) to 1)
    with pytest.raises(es.EinsumTypeError, match="memory_limit must be an int"):
        dask_backend.task_memory_budget(limit)
    with pytest.raises(es.EinsumTypeError, match="memory_limit must be an int"):
        es.einsum("ij->", da.ones((2, 2), chunks=1), memory_limit=limit)
    assert dask_backend.task_memory_budget(np.array(5)) == 5
