"""Large memory-bound steps split over threads: planned, reported, and bit-identical."""

from __future__ import annotations

import itertools
import time
import types
from collections.abc import Iterator
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import einstride as es
from einstride.engine.api import explain
from einstride.engine.backends.numpy import execute, threads
from einstride.engine.backends.numpy.cache import entry_for, hot_entry, plan_cache_info
from einstride.engine.backends.numpy.generic import PROMOTE_AT
from einstride.engine.backends.numpy.options import MAX_THREADS, PlannerOptions
from einstride.engine.backends.numpy.steps import BatchStep, Kernel, ReduceStep


@pytest.fixture(autouse=True)
def _restore_threads() -> Iterator[None]:
    yield
    threads.set_num_threads(None)


def _run(threads_n: int, equation: str, ops: list[np.ndarray], **kwargs: object) -> np.ndarray:
    threads.set_num_threads(threads_n)  # the default options: planned for this count
    return np.asarray(es.einsum(equation, *ops, **kwargs))


def _splits(
    equation: str, ops: list[np.ndarray], options: PlannerOptions | None = None
) -> list[int]:
    """The thread count of every reduce/batch step of the plan for these operands."""
    plan = entry_for(equation, ops, None, None, "auto", options=options).plan
    return [s.threads for s in plan.steps if isinstance(s, (ReduceStep, BatchStep))]


def _planned(
    options: PlannerOptions, equation: str, ops: list[np.ndarray], dtype: object = None
) -> tuple[np.ndarray, list[int]]:
    """The result of the plan made with ``options``, and its steps' thread counts (0 for a
    row sum run as a BLAS matrix-vector product instead of split)."""
    entry = entry_for(equation, ops, None, dtype, "auto", options=options)
    result = _run_planned(entry, ops, None)
    splits = [
        0 if isinstance(s, ReduceStep) and s.kernel in (Kernel.MATVEC, Kernel.VECMAT) else s.threads
        for s in entry.plan.steps
        if isinstance(s, (ReduceStep, BatchStep))
    ]
    return result, splits


def _run_planned(entry: Any, ops: list[np.ndarray], out: np.ndarray | None) -> np.ndarray:
    """What the entry's plan gives: a shape's first calls run directly (a tiny problem's
    one loop until its PROMOTE_AT-th call), not the plan's steps."""
    for _ in range(PROMOTE_AT):
        result = np.asarray(entry.run(ops, out))
    return result.copy() if out is not None else result  # (its own layout: a new result's)


def _split_run(
    equation: str,
    ops: list[np.ndarray],
    out: np.ndarray | None,
    threads_n: int,
    piece_bytes: int | None = None,
) -> tuple[np.ndarray, Any, list[tuple[Any, ...]]]:
    """What the plan for ``threads_n`` threads gives (split however small; in pieces of
    ``piece_bytes`` where given), its entry, and what each of its runs dealt to the threads
    (``execute.thread_pieces``' arguments: the edges and the thread count)."""
    saved = execute.PIECE_BYTES
    execute.PIECE_BYTES = saved if piece_bytes is None else piece_bytes
    try:
        with mock.patch.object(execute, "thread_pieces", wraps=execute.thread_pieces) as dealt:
            options = PlannerOptions(threads=threads_n, split_min_bytes=0)
            entry = entry_for(equation, ops, out, None, "auto", options=options)
            result = _run_planned(entry, ops, out)
    finally:
        execute.PIECE_BYTES = saved
    return result, entry, [call.args for call in dealt.call_args_list]


# (equation, shapes, axes transposed in operand 0 or None): reductions, diagonal sums,
# outer and Hadamard products, in C order and through transposed views
CASES = [
    ("ijk->i", [(9, 5, 7)], None),  # row sums: a matrix-vector product when large
    ("ijk->ij", [(9, 5, 7)], None),
    ("ijk->ik", [(9, 5, 7)], None),
    ("ijk->i", [(9, 5, 7)], (0, 2, 1)),  # a row sum still: k and j swapped in memory
    ("ijk->i", [(9, 5, 7)], (1, 0, 2)),  # the kept axis between summed ones
    ("ijk->j", [(5, 9, 7)], (1, 0, 2)),
    ("bii->b", [(40, 30, 30)], None),
    ("bij->bj", [(11, 6, 5)], None),
    ("i,j->ij", [(13,), (7,)], None),
    ("bi,bj->bij", [(6, 4), (6, 5)], None),
    ("ij,ij->ij", [(10, 9), (10, 9)], None),
    ("ij,ij->ji", [(10, 9), (10, 9)], (1, 0)),
    ("ij,j->ij", [(10, 9), (9,)], None),
]

# the cases whose summed axes are the innermost in memory
ROW_SUMS = {("ijk->i", None), ("ijk->ij", None), ("ijk->i", (0, 2, 1)), ("ijk->j", (1, 0, 2))}


def _operands(
    shapes: list[tuple[int, ...]], perm: tuple[int, ...] | None, dtype: str, seed: int
) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    ops = [(rng.standard_normal(s) * 100).astype(dtype) for s in shapes]
    if perm is not None:
        ops[0] = np.ascontiguousarray(ops[0].transpose(perm)).transpose(perm)
    return ops


@settings(max_examples=40)
@given(
    case=st.sampled_from(CASES),
    dtype=st.sampled_from(["float64", "float32", "int64"]),
    seed=st.integers(0, 2**16),
    cast=st.booleans(),
)
def test_split_steps_are_bit_identical_to_one_thread(
    case: tuple[str, list[tuple[int, ...]], tuple[int, ...] | None],
    dtype: str,
    seed: int,
    cast: bool,
) -> None:
    equation, shapes, perm = case
    ops = _operands(shapes, perm, dtype, seed)
    kwargs: dict[str, object] = {"dtype": np.float64} if cast else {}
    # split however small, so small cases exercise it
    one, unsplit = _planned(
        PlannerOptions(threads=1, split_min_bytes=0), equation, ops, kwargs.get("dtype")
    )
    assert max(unsplit, default=1) <= 1  # no chunks on one thread (0: a BLAS reduction)
    two, split = _planned(
        PlannerOptions(threads=2, split_min_bytes=0), equation, ops, kwargs.get("dtype")
    )
    assert one.dtype == two.dtype and one.shape == two.shape
    expected = np.einsum(equation, *ops, **kwargs)  # type: ignore[arg-type]
    rtol = 1e-5 if dtype == "float32" and not cast else 1e-12
    scale = np.einsum(equation, *[np.abs(op).astype(float) for op in ops]).max(initial=0.0)
    np.testing.assert_allclose(two, expected, rtol=rtol, atol=rtol * scale)  # cancellation
    if 0 in split:  # a BLAS reduction, whatever the thread count (a review)
        assert dtype != "int64" and (equation, perm) in ROW_SUMS, case
        assert 0 in unsplit, case
    assert np.array_equal(one, two), equation
    if equation in ("ijk->ik", "i,j->ij", "ij,ij->ij", "bii->b") and split:  # [] when fused
        assert 2 in split, (equation, split)


PRODUCTS = [case for case in CASES if "," in case[0]]  # outer and Hadamard products


def _out(kind: str, shape: tuple[int, ...], dtype: str) -> np.ndarray | None:
    """A result buffer filled with NaN (a part no thread wrote shows; an int one with a
    value no product here makes), or None."""
    if kind == "none":
        return None
    fill = -(2**62) if np.dtype(dtype).kind == "i" else np.nan
    full = np.full(shape[::-1] if kind == "F" else shape, fill, dtype)
    if kind == "F":
        return full.T
    return full[(slice(None, None, -1),) * len(shape)] if kind == "reversed" else full


@settings(max_examples=40)
@given(
    case=st.sampled_from(PRODUCTS),
    threads_n=st.sampled_from([2, 3, 4]),
    piece_bytes=st.sampled_from([1, 24, 200]),
    out_kind=st.sampled_from(["none", "C", "F", "reversed"]),
    dtype=st.sampled_from(["float64", "float32", "int64"]),
    seed=st.integers(0, 2**16),
)
def test_a_product_split_in_pieces_taken_in_turn_gives_one_thread_s_bits(
    case: tuple[str, list[tuple[int, ...]], tuple[int, ...] | None],
    threads_n: int,
    piece_bytes: int,
    out_kind: str,
    dtype: str,
    seed: int,
) -> None:
    # a product's result in pieces (where the split axis is its outermost in memory),
    # each thread taking its share in turn: every element written once, as one thread does
    # (complex products are left out: NumPy's multiply of a part of a stepped operand into
    # a reversed out= rounds otherwise than of the whole, a review found, before pieces too)
    equation, shapes, perm = case
    ops = _operands(shapes, perm, dtype, seed)
    one, _ = _planned(PlannerOptions(threads=1, split_min_bytes=0), equation, ops)
    out = _out(out_kind, one.shape, dtype)
    many, entry, dealt = _split_run(equation, ops, out, threads_n, piece_bytes)
    assert np.array_equal(one, many), (equation, out_kind)  # (NaN: an element not written)
    if threads_n in _threads_of(entry.plan):  # (a product fused away splits nothing)
        assert dealt, equation  # the split ran


@pytest.mark.parametrize("out_kind", ["none", "C", "F"])
@pytest.mark.parametrize(
    ("equation", "shapes", "count"),
    [
        ("i,j->ij", [(64,), (50,)], 16),
        ("ij,j->ij", [(64, 50), (50,)], 16),
        ("ij,ij->ij", [(64, 50), (64, 50)], 2),  # reads twice what it writes: halves
    ],
)
def test_a_large_product_s_outermost_axis_is_cut_in_pieces(
    out_kind: str, equation: str, shapes: list[tuple[int, ...]], count: int
) -> None:
    ops = _operands(shapes, None, "float64", 1)
    one, _ = _planned(PlannerOptions(threads=1, split_min_bytes=0), equation, ops)
    out = _out(out_kind, (64, 50), "float64")
    # four rows a piece: 16 pieces of 64 rows
    two, _, dealt = _split_run(equation, ops, out, 2, piece_bytes=8 * 50 * 4)
    assert np.array_equal(one, two)
    edges = dealt[-1][0]  # (the plan's run: the first ones are direct)
    # along the result's outermost axis in memory (the planner splits along it): 64 rows,
    # or 50 columns of an F-ordered out=
    assert edges[-1] == (50 if out_kind == "F" else 64) and len(edges) - 1 == count


# reductions whose kept axes lie outermost in memory, split over 2-3 threads: the chunks
# sum in the whole's order (a review: one thread's result laid out by NumPy, the split's in
# C order, and chunks of one row, each summed otherwise)
REDUCTIONS = [
    ("ijkl->il", (3, 1, 0, 2)),
    ("ijkl->il", (3, 2, 0, 1)),
    ("ijkl->lk", (3, 0, 2, 1)),
    ("ijkl->lk", (3, 1, 2, 0)),
]


@pytest.mark.parametrize(("equation", "perm"), REDUCTIONS)
@pytest.mark.parametrize("out_kind", ["none", "C", "F", "reversed"])
@pytest.mark.parametrize("threads_n", [2, 3])
def test_a_split_reduction_gives_one_thread_s_bits_into_any_result(
    equation: str, perm: tuple[int, ...], out_kind: str, threads_n: int
) -> None:
    sizes = dict(zip("ijkl", (9, 6, 301, 4)))
    x = np.random.default_rng(7).standard_normal([sizes[x] for x in "ijkl"])
    ops = [np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))]  # perm: in memory
    shape = tuple(sizes[x] for x in equation[-2:])
    one_out = _out(out_kind, shape, "float64")  # (one thread into the same kind of out=)
    alone = entry_for(equation, ops, one_out, None, "auto",
                      options=PlannerOptions(threads=1, split_min_bytes=0))  # fmt: skip
    one = _run_planned(alone, ops, one_out)
    out = _out(out_kind, shape, "float64")
    many, _, dealt = _split_run(equation, ops, out, threads_n)
    assert np.array_equal(one, many)
    assert many.strides == one.strides  # a new result laid out as one thread's (NumPy's)
    # the plan's run split the reduction along l (of 4): in halves, on three threads too
    assert dealt[-1] == ([0, 2, 4], 2)  # (on 3 threads: two of two)


@pytest.mark.parametrize("threads_n", [2, 3, 4])
@pytest.mark.parametrize("rows", [2, 3, 4, 5, 9])
def test_a_reduction_runs_on_the_threads_its_plan_and_explain_say(
    rows: int, threads_n: int
) -> None:
    # (a review: the executor cut no chunk of one row, the plan still said every thread)
    x = np.random.default_rng(rows).standard_normal((rows, 6, 7))
    result, entry, dealt = _split_run("ijk->ik", [x], None, threads_n)
    np.testing.assert_allclose(result, x.sum(axis=1))
    planned = max(_threads_of(entry.plan), default=1)
    edges = dealt[-1][0] if dealt else [0, rows]
    assert planned == max(1, min(threads_n, rows // 2)) == len(edges) - 1, (planned, edges)
    assert all(b - a >= 2 for a, b in itertools.pairwise(edges))  # two rows a chunk at least


def test_threads_take_pieces_so_that_they_differ_by_a_piece_at_most() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        n, threads_n = int(rng.integers(1, 80)), int(rng.integers(1, 5))
        count = int(rng.integers(1, 40))
        edges = [n * k // count for k in range(count + 1)]
        groups = execute.thread_pieces(edges, threads_n)
        assert len(groups) == threads_n
        assert sorted(k for group in groups for k in group) == list(range(count))
        assert all(group == sorted(group) for group in groups)
        rows = [sum(edges[k + 1] - edges[k] for k in group) for group in groups]
        widest = max(b - a for a, b in itertools.pairwise(edges))
        assert max(rows) - min(rows) <= widest, (n, threads_n, count, rows)
        if count <= threads_n:
            assert groups[:count] == [[k] for k in range(count)]


def test_only_a_result_s_outermost_axis_is_cut_in_pieces() -> None:
    big = execute.PIECE_BYTES * 16 // 8  # elements of a result of 16 pieces
    c = np.empty((64, big // 64))
    assert execute.piece_count(c, 0, 2) == 16 and execute.piece_count(c, 0, 3) == 15
    assert execute.piece_count(c, 1, 2) == 2  # an inner axis: threads would share lines
    assert execute.piece_count(c.T, 1, 2) == 16 and execute.piece_count(c[::-1], 0, 2) == 16
    assert execute.piece_count(np.empty((3, big // 3)), 0, 2) == 3  # at most a piece a row
    assert execute.piece_count(np.empty((2, big // 2)), 0, 2) == 2
    assert execute.piece_count(np.empty((64, 8)), 0, 2) == 2  # small: one piece a thread
    # what a product reads: a Hadamard product's two operands (halves), a broadcast row once
    row = np.broadcast_to(np.ones(c.shape[1]), c.shape)
    assert execute.piece_count(c, 0, 2, execute._read(c) + execute._read(c.copy())) == 2
    assert execute.piece_count(c, 0, 2, execute._read(c) + execute._read(row)) == 16


def test_split_into_out_and_at_real_size() -> None:
    rng = np.random.default_rng(1)
    d = rng.standard_normal((256, 128, 128))  # a strided diagonal: 2 MiB of cache lines
    one = _run(1, "bii->b", [d])
    two, split = _planned(PlannerOptions(threads=2, split_min_bytes=1 << 20), "bii->b", [d])
    assert np.array_equal(two, one) and split == [2]
    assert _splits("bii->b", [d], PlannerOptions(threads=2)) == [1]  # under the default 32 MiB
    a = rng.standard_normal((256, 256, 64))  # 32 MiB: at the default threshold
    assert _run(2, "ijk->ik", [a]) is not None and _splits("ijk->ik", [a]) == [2]
    out = np.full((256, 64), np.nan)
    es.einsum("ijk->ik", a, out=out)
    assert np.array_equal(out, _run(1, "ijk->ik", [a]))
    x, y = rng.standard_normal(1024), rng.standard_normal(1024)
    outer = np.empty((1024, 1024))
    threads.set_num_threads(2)
    es.einsum("i,j->ij", x, y, out=outer)
    assert np.array_equal(outer, np.multiply.outer(x, y))


def test_explain_reports_the_split_and_thread_count() -> None:
    threads.set_num_threads(2)
    report = explain("ijk->ik", (256, 256, 64))
    assert "split over 2 threads along i" in report
    assert "split over 2 threads along i" in explain("ij,ij->ij", (2048, 2048), (2048, 2048))
    threads.set_num_threads(1)
    assert "split" not in explain("ijk->ik", (256, 256, 64))


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk->ik", [(4, 4), (4, 4)]),
        ("ijk->i", [(16, 16, 16)]),
        ("bii->b", [(256, 128, 128)]),  # 2 MiB of strided reads: the handoff would cost more
        ("i,j->ij", [(64,), (64,)]),
        ("ij,ij->ij", [(64, 64), (64, 64)]),
        ("ijk->k", [(256, 256, 64)]),  # only an inner axis is kept: chunks would be slower
    ],
)
def test_small_or_inner_axis_steps_are_never_split(
    equation: str, shapes: list[tuple[int, ...]]
) -> None:
    threads.set_num_threads(2)
    assert "split" not in explain(equation, *shapes)


def test_thread_count_from_environment_and_setter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The public setter and getter (``einstride.set_num_threads``: a review found them
    only in the threads module) and the environment variable they go back to."""
    monkeypatch.setenv("EINSTRIDE_NUM_THREADS", "1")
    es.set_num_threads(None)  # the environment is read when the defaults are made
    assert es.num_threads() == 1
    assert "split" not in explain("ijk->ik", (256, 256, 64))  # 1 disables splitting
    monkeypatch.setenv("EINSTRIDE_NUM_THREADS", "3")
    es.set_num_threads(None)
    assert es.num_threads() == 3
    assert "split over 3 threads along i" in explain("ijk->ik", (256, 256, 64))
    monkeypatch.setenv("EINSTRIDE_NUM_THREADS", "lots")
    es.set_num_threads(None)
    assert 1 <= es.num_threads() <= 2
    monkeypatch.setenv("EINSTRIDE_NUM_THREADS", str(10**9))  # chunks are made per thread
    es.set_num_threads(None)
    assert es.num_threads() == MAX_THREADS
    es.set_num_threads(2)
    assert es.num_threads() == 2
    es.set_num_threads(np.int64(3))  # NumPy's integers are ints here (set_memory_limit's)
    assert es.num_threads() == 3
    for bad in (0, -1, MAX_THREADS + 1):
        with pytest.raises(ValueError, match="set_num_threads"):
            es.set_num_threads(bad)
    for wrong in (1.5, True, "4"):  # a type: TypeError, as the spec's errors go
        with pytest.raises(TypeError, match="set_num_threads"):
            es.set_num_threads(wrong)  # type: ignore[arg-type]
    es.set_num_threads(2)
    with pytest.raises(es.EinsumError, match="at most"):
        PlannerOptions(threads=MAX_THREADS + 1)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_split_steps_work_in_a_forked_child() -> None:
    import multiprocessing

    threads.set_num_threads(2)
    a = np.random.default_rng(2).standard_normal((256, 256, 64))
    expected = es.einsum("ijk->ik", a)  # starts the pool in the parent
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(es.einsum, ("ijk->ik", a)).get(timeout=60)
    assert np.array_equal(got, expected)


def _locks_held_elsewhere() -> list[object]:
    """Every module-level lock of the engine (a review found a child deadlocked on each)."""
    from einstride.engine.backends.numpy import cache, lanes, options
    from einstride.engine.spec import search

    return [lanes._HOT_LOCK, search._RECENT_LOCK, cache._COUNT_LOCK, options._INTERN_LOCK]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_child_forked_while_another_thread_holds_the_locks_runs_einsum() -> None:
    """A child forked while another thread is inside einsum inherits its locks held by a
    thread it does not have: its first einsum waited forever (a review)."""
    import os
    import threading
    import time

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        locks = _locks_held_elsewhere()
        for lock in locks:
            lock.acquire()  # type: ignore[attr-defined]
        held.set()
        release.wait()
        for lock in reversed(locks):
            lock.release()  # type: ignore[attr-defined]

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    held.wait(10)
    ring = ",".join("abcdefgh"[k] + "abcdefgh"[(k + 1) % 8] + "ijklmnop"[k] for k in range(8))
    pid = os.fork()
    if pid == 0:  # the child: a new equation (the lanes) and a network (the path search)
        code = 1
        try:
            es.einsum("qr,rs->qs", np.ones((2, 3)), np.ones((3, 2)))
            code = 0 if es.einsum(ring + "->", *[np.ones((2, 2, 2))] * 8) == 2**16 else 1
            es.clear_plan_cache()
        finally:
            os._exit(code)
    try:
        deadline = time.monotonic() + 60
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        if done[0] == 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        assert done[0] == pid, "the forked child's einsum did not return (deadlocked)"
        assert os.waitstatus_to_exitcode(done[1]) == 0, "the forked child's einsum failed"
    finally:
        release.set()
        holder.join(10)


@pytest.mark.parametrize("overflow_row", [0, -1])  # the caller's half, the pool's
def test_the_pool_s_half_runs_under_the_caller_s_errstate(overflow_row: int) -> None:
    """np.errstate reaches every chunk of a split step: the same overflow raises (or stays
    silent) whichever half holds it (a review: the pool's half ignored it)."""
    import warnings

    threads.set_num_threads(2)
    a = np.ones((2048, 2048))
    a[overflow_row] = 1e300
    assert "split over 2 threads" in es.explain("ij,ij->ij", a, a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="ignore"):
            assert np.isinf(es.einsum("ij,ij->ij", a, a)[overflow_row]).all()
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            es.einsum("ij,ij->ij", a, a)


@pytest.mark.skipif(not hasattr(__import__("signal"), "pthread_kill"), reason="POSIX signals")
def test_a_signal_while_waiting_for_the_pool_still_waits_for_its_chunk() -> None:
    """An exception raised by a signal handler while the caller waits for the pool's chunk
    raises only once that chunk has ended (a review: it went on writing out= afterwards)."""
    import signal
    import threading
    import time

    class Interrupted(Exception):
        pass

    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted

    caller, ended = threading.get_ident(), threading.Event()

    def pool_chunk() -> None:
        time.sleep(0.05)  # the caller is waiting by now
        signal.pthread_kill(caller, signal.SIGUSR1)
        time.sleep(0.3)
        ended.set()

    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        with pytest.raises(Interrupted):
            threads.run_chunks([lambda: None, pool_chunk])
        assert ended.is_set()
    finally:
        signal.signal(signal.SIGUSR1, previous)
        ended.wait(5)


def _interrupted_split(interrupt: str) -> tuple[list[int], np.ndarray]:
    """A product in pieces (32 MiB: 16 pieces, 8 a thread) whose caller is interrupted
    while the pool writes its first piece: in its own pieces (``"own"``) or, done with
    them, while it waits (``"waiting"``: a signal).  The pool's first piece ends only once
    the split's stop event is set (within 3 s, else the test fails), so the outcome does
    not depend on timing; returns the rows of the pieces the pool wrote, and ``out``."""
    import signal
    import threading

    caller, started, caller_done = threading.get_ident(), threading.Event(), threading.Event()
    events: list[threading.Event] = []
    pool_rows: list[int] = []
    caller_rows: list[int] = []
    stopped: list[bool] = []

    class Interrupted(Exception):
        pass

    def kernel(a: np.ndarray, out: np.ndarray) -> None:
        if threading.get_ident() == caller:
            if interrupt == "own":
                assert started.wait(10)  # the pool is in its first piece
                raise Interrupted
            out[...] = a
            caller_rows.append(out.shape[0])
            if sum(caller_rows) == 32:
                caller_done.set()
            return
        pool_rows.append(out.shape[0])
        if len(pool_rows) == 1:
            started.set()
            if interrupt == "waiting":
                assert caller_done.wait(10)
                time.sleep(0.05)  # (the caller is in its wait by now)
                signal.pthread_kill(caller, signal.SIGUSR1)
            stopped.append(events[0].wait(3))  # set by the caller's interrupt
        out[...] = a

    def on_signal(signum: int, frame: object) -> None:
        raise Interrupted

    def recorded() -> threading.Event:
        events.append(threading.Event())
        return events[-1]

    a, out = np.ones((64, 65536)), np.zeros((64, 65536))
    assert execute.piece_count(out, 0, 2) == 16
    run = execute.chunked(kernel, [0], 0, 2, pieces=True)
    waiting = interrupt == "waiting"  # (only that case signals: POSIX)
    previous = signal.signal(signal.SIGUSR1, on_signal) if waiting else None
    try:
        spy = types.SimpleNamespace(Event=recorded)  # (execute's threading: its Event only)
        with mock.patch.object(execute, "threading", spy), pytest.raises(Interrupted):
            run(a, out)
    finally:
        if waiting:
            signal.signal(signal.SIGUSR1, previous)
    assert stopped == [True]
    return pool_rows, out


def test_an_interrupted_caller_stops_the_pool_s_pieces_after_its_current_one() -> None:
    """A product in pieces: when the caller's own pieces raise (an interrupt), the pool's
    thread ends after the piece it is writing, not after its whole list (a review: it ran
    them all while the caller waited)."""
    pool_rows, out = _interrupted_split("own")
    assert pool_rows == [4]  # one piece of 4 rows of its 8 pieces
    assert np.count_nonzero(out) == 4 * 65536


@pytest.mark.skipif(not hasattr(__import__("signal"), "pthread_kill"), reason="POSIX signals")
def test_an_interrupt_while_waiting_for_the_pool_stops_its_pieces_too() -> None:
    """The caller done with its pieces and waiting for the pool's: an interrupt then stops
    them as well (a review: only an exception in the caller's own pieces did)."""
    pool_rows, out = _interrupted_split("waiting")
    assert pool_rows == [4]
    assert np.count_nonzero(out) == (32 + 4) * 65536  # the caller's 32 rows, the pool's 4


def test_reports_count_no_answers_of_the_size_free_or_direct_levels() -> None:
    """``generic`` and ``direct`` count misses answered so, never a report's own plan (a
    review: each einsum_path bumped them past the misses)."""
    es.clear_plan_cache()
    a, b, c = np.ones((3, 4)), np.ones((4, 5)), np.ones((5, 2))
    ring = ",".join("abcdefgh"[k] + "abcdefgh"[(k + 1) % 8] for k in range(8)) + "->"
    es.einsum("ij,jk,kl->il", a, b, c)
    es.einsum(ring, *[np.ones((2, 2))] * 8)
    before = es.plan_cache_info()
    for _ in range(3):
        es.einsum_path("ij,jk,kl->il", a, b, c)
        es.einsum_path(ring, *[np.ones((2, 2))] * 8)
        es.einsum_path(ring, *[(2, 2)] * 8)
    after = es.plan_cache_info()
    assert (after.misses, after.generic, after.direct) == (
        before.misses,
        before.generic,
        before.direct,
    )
    assert after.generic + after.direct <= after.misses


@pytest.mark.parametrize(
    ("equation", "shape"),
    [("ij->i", (600_000, 8)), ("ij->j", (600_000, 8)), ("ijk->k", (300, 2000, 8)),
     ("ijk->i", (300, 2000, 8)), ("ijk->jk", (8, 2000, 300))],
)  # fmt: skip
def test_the_thread_count_never_changes_a_reduction_s_bits(
    equation: str, shape: tuple[int, ...]
) -> None:
    """The kernel of a large reduction (BLAS or NumPy's loop) is decided by its size alone:
    one thread and two give the same bits (a review: one thread ran the loop, two BLAS)."""
    a = np.random.default_rng(12).standard_normal(shape)
    found = []
    for count in (1, 2):
        threads.set_num_threads(count)
        es.clear_plan_cache()
        found.append(es.einsum(equation, a))
    assert np.array_equal(found[0], found[1])


@pytest.mark.parametrize(
    ("equation", "view"),
    [("ij->i", (slice(None), slice(None, None, -1))), ("ij->i", (slice(None, None, -1),) * 2),
     ("ijk->ik", (slice(None), slice(None, None, -1)))],
)  # fmt: skip
def test_a_reversed_summed_axis_sums_alike_split_or_not_and_into_out(
    equation: str, view: tuple[slice, ...]
) -> None:
    """NumPy's loop sums a negative-strided axis in another order into out= than into its
    own result; a split's chunks write into out=, so they gave other bits than one thread
    (a review)."""
    base = np.random.default_rng(1).standard_normal((2048, 4096)).astype(np.float32)
    x = (base if equation == "ij->i" else base.reshape(2048, 64, 64))[view]
    found = []
    for count in (1, 2):
        threads.set_num_threads(count)
        es.clear_plan_cache()
        found.append(es.einsum(equation, x))
        out = np.empty_like(found[-1])
        es.einsum(equation, x, out=out)
        found.append(out)
    assert all(np.array_equal(found[0], other) for other in found[1:])
    assert np.array_equal(found[0], np.einsum(equation, x))


def test_no_cached_property_whose_lock_a_forked_child_could_not_take() -> None:
    """Python 3.11's functools.cached_property locks its class's one lock on every first
    read: a child forked while another thread held it deadlocked (a review, Equation's)."""
    from pathlib import Path

    package = Path(es.__file__).parent
    users = [p.name for p in package.rglob("*.py") if "cached_property" in p.read_text()]
    assert users == []


def test_a_chunk_the_pool_has_not_started_runs_on_the_caller() -> None:
    import threading

    threads.set_num_threads(2)
    release = threading.Event()
    blocker = threads._executor().submit(release.wait, 30)  # the only worker is busy
    ran: list[int] = []
    try:
        threads.run_chunks(
            [lambda: ran.append(threading.get_ident()), lambda: ran.append(threading.get_ident())]
        )
    finally:
        release.set()
    blocker.result(timeout=30)
    assert ran == [threading.get_ident()] * 2


def test_options_are_part_of_the_plan_key_so_nothing_is_cleared() -> None:
    a = np.random.default_rng(3).standard_normal((256, 256, 64))
    two = entry_for("ijk->ik", [a], None, None, "auto", options=PlannerOptions(threads=2))
    assert two is entry_for("ijk->ik", [a], None, None, "auto", options=PlannerOptions(threads=2))
    one = entry_for("ijk->ik", [a], None, None, "auto", options=PlannerOptions(threads=1))
    assert one is not two and _threads_of(one.plan) == [1] and _threads_of(two.plan) == [2]
    threads.set_num_threads(2)
    default = entry_for("ijk->ik", [a], None, None, "auto")
    assert default is two  # the default options are the same value
    before = plan_cache_info().currsize
    threads.set_num_threads(1)  # no longer clears the plan cache
    assert plan_cache_info().currsize == before
    assert entry_for("ijk->ik", [a], None, None, "auto") is one
    threads.set_num_threads(2)
    assert entry_for("ijk->ik", [a], None, None, "auto") is two


def test_memory_limited_plans_follow_the_thread_count() -> None:
    """A plan sliced under a memory limit is cached with the planner options too (a
    review: after set_num_threads(1) it still ran split over the 4 threads it was made
    for)."""
    from einstride.engine.backends.numpy.limited import limited_plan
    from einstride.engine.backends.numpy.options import set_default_options

    ops = [np.ones((100, 100)), np.ones((100, 100))]
    facts = tuple(fact for x in ops for fact in (x.shape, x.strides, x.dtype))
    limit = 81_000  # the result's 80,000 B fit, the plan's 82,400 B peak does not
    before = set_default_options(PlannerOptions(threads=4, split_min_bytes=1))
    try:
        four = limited_plan("ij,kl->ik", facts, None, None, "auto", limit)
        assert 4 in _threads_of(four.base)
        threads.set_num_threads(1)
        one = limited_plan("ij,kl->ik", facts, None, None, "auto", limit)
        assert one is not four and set(_threads_of(one.base)) == {1}
        got = es.einsum("ij,kl->ik", *ops, memory_limit=limit)
        assert np.array_equal(got, np.full((100, 100), 1e4))
    finally:
        set_default_options(before)


def _threads_of(plan: object) -> list[int]:
    return [
        s.threads
        for s in plan.steps  # type: ignore[attr-defined]
        if isinstance(s, (ReduceStep, BatchStep))
    ]


def test_the_hot_path_plans_with_the_default_options() -> None:
    a = np.random.default_rng(4).standard_normal((256, 256, 64))
    facts = (a.shape, a.strides, a.dtype)
    threads.set_num_threads(1)
    one = es.einsum("ijk->ik", a)  # the hot path: cached for 1 thread
    assert _threads_of(hot_entry("ijk->ik", facts, "auto").plan) == [1]
    threads.set_num_threads(2)
    assert np.array_equal(es.einsum("ijk->ik", a), one)  # planned again, for 2
    assert _threads_of(hot_entry("ijk->ik", facts, "auto").plan) == [2]
    assert (
        hot_entry("ijk->ik", facts, "auto", PlannerOptions(threads=1)).plan
        is not hot_entry("ijk->ik", facts, "auto").plan
    )


def test_planner_options_are_validated_values() -> None:
    import copy
    import dataclasses
    import pickle

    two = PlannerOptions(threads=2)
    # interned: equal options are one object, whichever way they were made
    assert two is PlannerOptions(threads=2) and two == PlannerOptions(threads=2)
    assert dataclasses.replace(PlannerOptions(threads=3), threads=2) is two
    assert copy.copy(two) is two and copy.deepcopy(two) is two
    assert pickle.loads(pickle.dumps(two)) is two
    assert hash(PlannerOptions(call_ns=1.0)) == hash(PlannerOptions(call_ns=1.0))
    assert two != PlannerOptions(threads=3) and two != PlannerOptions(threads=2, call_ns=1.0)
    for bad in (
        {"threads": 0},
        {"threads": True},
        {"split_min_bytes": -1},
        {"copy_ns_per_byte": -0.5},
        {"loop_ns": float("nan")},
        {"fuse_max_combos": 1.5},
    ):
        with pytest.raises(ValueError, match="PlannerOptions"):
            PlannerOptions(**bad)  # type: ignore[arg-type]
    assert PlannerOptions(loop_ns=float("inf")).loop_ns == float("inf")  # never fuse


def test_threads_module_is_a_leaf() -> None:
    """threads.py imports no other einstride module but the options (never the cache)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(threads))
    ours = [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert ours == ["options"]


def test_a_plan_for_more_threads_than_the_default_runs_them() -> None:
    threads.set_num_threads(2)
    a = np.random.default_rng(5).standard_normal((30, 20, 10))
    one, _ = _planned(PlannerOptions(threads=1, split_min_bytes=0), "ijk->ik", [a])
    three, split = _planned(PlannerOptions(threads=3, split_min_bytes=0), "ijk->ik", [a])
    assert split == [3] and np.array_equal(one, three)
