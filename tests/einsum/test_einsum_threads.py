"""Large memory-bound steps split over threads: planned, reported, and bit-identical."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.api import explain
from einstride.engine.backends.numpy import threads
from einstride.engine.backends.numpy.cache import entry_for
from einstride.engine.backends.numpy.steps import BatchStep, ReduceStep


@pytest.fixture(autouse=True)
def _restore_threads() -> Iterator[None]:
    yield
    threads.set_num_threads(None)


def _run(threads_n: int, equation: str, ops: list[np.ndarray], **kwargs: object) -> np.ndarray:
    threads.set_num_threads(threads_n)   # clears the plan cache: planned afresh
    return np.asarray(es.einsum(equation, *ops, **kwargs))


def _splits(equation: str, ops: list[np.ndarray]) -> list[int]:
    """The thread count of every reduce/batch step of the plan for these operands."""
    plan = entry_for(equation, ops, None, None, "auto").plan
    return [s.threads for s in plan.steps if isinstance(s, (ReduceStep, BatchStep))]


# (equation, shapes, axes transposed in operand 0 or None): reductions, diagonal sums,
# outer and Hadamard products, in C order and through transposed views
CASES = [
    ("ijk->i", [(9, 5, 7)], None),
    ("ijk->ij", [(9, 5, 7)], None),
    ("ijk->j", [(5, 9, 7)], (1, 0, 2)),
    ("bii->b", [(40, 30, 30)], None),
    ("bij->bj", [(11, 6, 5)], None),
    ("i,j->ij", [(13,), (7,)], None),
    ("bi,bj->bij", [(6, 4), (6, 5)], None),
    ("ij,ij->ij", [(10, 9), (10, 9)], None),
    ("ij,ij->ji", [(10, 9), (10, 9)], (1, 0)),
    ("ij,j->ij", [(10, 9), (9,)], None),
]


def _operands(shapes: list[tuple[int, ...]], perm: tuple[int, ...] | None, dtype: str,
              seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    ops = [(rng.standard_normal(s) * 100).astype(dtype) for s in shapes]
    if perm is not None:
        ops[0] = np.ascontiguousarray(ops[0].transpose(perm)).transpose(perm)
    return ops


@settings(max_examples=40)
@given(case=st.sampled_from(CASES), dtype=st.sampled_from(["float64", "float32", "int64"]),
       seed=st.integers(0, 2**16), cast=st.booleans())
def test_split_steps_are_bit_identical_to_one_thread(
        case: tuple[str, list[tuple[int, ...]], tuple[int, ...] | None], dtype: str,
        seed: int, cast: bool) -> None:
    equation, shapes, perm = case
    ops = _operands(shapes, perm, dtype, seed)
    kwargs: dict[str, object] = {"dtype": np.float64} if cast else {}
    saved = threads.SPLIT_MIN_BYTES
    threads.SPLIT_MIN_BYTES = 0     # split however small, so small cases exercise it
    try:
        one = _run(1, equation, ops, **kwargs)
        assert max(_splits(equation, ops), default=1) == 1
        two = _run(2, equation, ops, **kwargs)
        split = _splits(equation, ops)
    finally:
        threads.SPLIT_MIN_BYTES = saved
    assert one.dtype == two.dtype and one.shape == two.shape
    assert np.array_equal(one, two), equation
    expected = np.einsum(equation, *ops, **kwargs)  # type: ignore[arg-type]
    np.testing.assert_allclose(two, expected, rtol=1e-5 if dtype == "float32" else 1e-12)
    if equation in ("ijk->i", "i,j->ij", "ij,ij->ij", "bii->b") and split:  # [] when fused
        assert 2 in split, (equation, split)


def test_split_into_out_and_at_real_size(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    d = rng.standard_normal((256, 128, 128))   # a strided diagonal: 2 MiB of cache lines
    one = _run(1, "bii->b", [d])
    monkeypatch.setattr(threads, "SPLIT_MIN_BYTES", 1 << 20)
    assert np.array_equal(_run(2, "bii->b", [d]), one) and _splits("bii->b", [d]) == [2]
    monkeypatch.undo()
    a = rng.standard_normal((128, 128, 64))    # 8 MiB: over the default threshold
    assert _run(2, "ijk->i", [a]) is not None and _splits("ijk->i", [a]) == [2]
    out = np.full(128, np.nan)
    es.einsum("ijk->i", a, out=out)
    assert np.array_equal(out, _run(1, "ijk->i", [a]))
    x, y = rng.standard_normal(1024), rng.standard_normal(1024)
    outer = np.empty((1024, 1024))
    threads.set_num_threads(2)
    es.einsum("i,j->ij", x, y, out=outer)
    assert np.array_equal(outer, np.multiply.outer(x, y))


def test_explain_reports_the_split_and_thread_count() -> None:
    threads.set_num_threads(2)
    report = explain("ijk->i", (128, 128, 64))
    assert "split over 2 threads along i" in report
    assert "split over 2 threads along i" in explain("ij,ij->ij", (1024, 1024), (1024, 1024))
    threads.set_num_threads(1)
    assert "split" not in explain("ijk->i", (128, 128, 64))


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(4, 4), (4, 4)]),
    ("ijk->i", [(16, 16, 16)]),
    ("bii->b", [(256, 128, 128)]),      # 2 MiB of strided reads: the handoff would cost more
    ("i,j->ij", [(64,), (64,)]),
    ("ij,ij->ij", [(64, 64), (64, 64)]),
    ("ijk->k", [(128, 128, 64)]),        # only an inner axis is kept: chunks would be slower
])
def test_small_or_inner_axis_steps_are_never_split(
        equation: str, shapes: list[tuple[int, ...]]) -> None:
    threads.set_num_threads(2)
    assert "split" not in explain(equation, *shapes)


def test_thread_count_from_environment_and_setter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EINSTRIDE_NUM_THREADS", "1")
    assert threads.num_threads() == 1
    assert "split" not in explain("ijk->i", (128, 128, 64))   # 1 disables splitting
    monkeypatch.setenv("EINSTRIDE_NUM_THREADS", "3")
    assert threads.num_threads() == 3
    monkeypatch.setenv("EINSTRIDE_NUM_THREADS", "lots")
    assert 1 <= threads.num_threads() <= 2
    threads.set_num_threads(2)
    assert threads.num_threads() == 2
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="set_num_threads"):
            threads.set_num_threads(bad)  # type: ignore[arg-type]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_split_steps_work_in_a_forked_child() -> None:
    import multiprocessing

    threads.set_num_threads(2)
    a = np.random.default_rng(2).standard_normal((128, 128, 64))
    expected = es.einsum("ijk->i", a)          # starts the pool in the parent
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(es.einsum, ("ijk->i", a)).get(timeout=60)
    assert np.array_equal(got, expected)


def test_a_chunk_the_pool_has_not_started_runs_on_the_caller() -> None:
    import threading

    threads.set_num_threads(2)
    release = threading.Event()
    blocker = threads._executor().submit(release.wait, 30)   # the only worker is busy
    ran: list[int] = []
    try:
        threads.run_chunks([lambda: ran.append(threading.get_ident()),
                            lambda: ran.append(threading.get_ident())])
    finally:
        release.set()
    blocker.result(timeout=30)
    assert ran == [threading.get_ident()] * 2
