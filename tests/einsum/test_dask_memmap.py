"""Out of core on one machine: contractions over ``.npy`` memmaps several times larger than
the per-task memory budget, on Dask's threaded scheduler, written into a memmap."""

from __future__ import annotations

import pickle
import tracemalloc

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from numpy.lib.format import open_memmap  # noqa: E402

import einstride as es  # noqa: E402
import einstride.dask as ed  # noqa: E402
from einstride.engine.backends.dask.sources import NpyFile, from_npy  # noqa: E402

BUDGET = 2**20


def _npy(path, shape, seed):
    """A .npy file of random values, written band by band through open_memmap."""
    rng = np.random.default_rng(seed)
    out = open_memmap(path, mode="w+", dtype=np.float64, shape=shape)
    for start in range(0, shape[0], 250):
        out[start : start + 250] = rng.standard_normal((min(250, shape[0] - start), *shape[1:]))
    out.flush()
    del out
    return path


def _peak(run):
    """Peak bytes NumPy and Python allocate while ``run`` runs (memmapped pages are not)."""
    da.ones(4, chunks=2).sum().compute(scheduler="threads")  # imports happen outside
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_threaded_scheduler_contracts_memmaps_larger_than_the_budget(tmp_path):
    a = np.load(_npy(tmp_path / "a.npy", (2000, 1500), 1), mmap_mode="r")  # 24 MB memmap
    b_path = _npy(tmp_path / "b.npy", (1500, 160), 2)  # 1.9 MB
    b = from_npy(b_path, chunks=(500, 160))
    out = open_memmap(tmp_path / "c.npy", mode="w+", dtype=np.float64, shape=(2000, 160))
    assert a.nbytes > 20 * BUDGET and b.nbytes > BUDGET and out.nbytes > BUDGET

    def run():  # the NumPy memmap is read block by block, as the .npy file b is
        result = es.einsum("ik,kj->ij", a, b, memory_limit=BUDGET)
        da.store(result, out, scheduler="threads", num_workers=2)

    peak = _peak(run)
    out.flush()
    assert peak < 10 * BUDGET, peak  # a few blocks at a time, never a whole operand
    expected = es.einsum("ik,kj->ij", np.asarray(a), np.load(b_path))
    np.testing.assert_allclose(
        np.load(tmp_path / "c.npy", mmap_mode="r"), expected, rtol=1e-10, atol=1e-10
    )


def test_threaded_scheduler_reduces_a_memmap_with_a_diagonal(tmp_path):
    x = np.load(_npy(tmp_path / "x.npy", (1200, 3, 1200), 3), mmap_mode="r")  # 34.6 MB
    weights = da.arange(3.0, chunks=1)
    got = []

    def run():  # 'iji': only the blocks on the diagonal are read
        result = es.einsum("iji,j->j", x, weights, memory_limit=BUDGET)
        got.append(result.compute(scheduler="threads", num_workers=2))

    peak = _peak(run)
    assert peak < 8 * BUDGET, peak
    np.testing.assert_allclose(
        got[0], es.einsum("iji,j->j", np.asarray(x), np.arange(3.0)), rtol=1e-12
    )


def test_npy_file_pickles_as_its_path(tmp_path):
    path = _npy(tmp_path / "p.npy", (300, 4), 4)
    f = NpyFile(path)
    assert len(pickle.dumps(f)) < 1000
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(f))[10:20], np.load(path)[10:20])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_building_the_graph_reads_no_memmap_and_casts_no_ndarray(tmp_path, dtype):
    # a small-float dtype= rounds each block as the graph reads it (a review: a memmap was
    # read and cast whole while the graph was built, an ndarray copied)
    pytest.importorskip("ml_dtypes")
    path = tmp_path / "m.npy"
    m = open_memmap(path, mode="w+", shape=(1000, 1000))
    m[:] = 1.0
    m.flush()
    del m
    mapped = np.load(path, mmap_mode="r")  # 8 MB on disk
    held = np.ones((1000, 1000))  # 8 MB in memory
    v = da.ones(1000, chunks=250)

    def made(operand, to):
        return _peak(lambda: es.einsum("ij,j->i", operand, v, dtype=to))

    made(mapped, dtype), made(held, dtype)  # (the first calls import and plan)
    assert made(mapped, dtype) < 500_000  # (8 MB: the file read and cast whole)
    # Dask's from_array copies an ndarray itself (8 MB), with or without dtype=; the cast
    # made another 2-8 MB
    assert made(held, dtype) < made(held, None) + 500_000
    result = es.einsum("ij,j->i", mapped, v, dtype=dtype)
    assert result.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(result.compute().astype(float), np.full(1000, 1000.0))
    report = es.explain("ij,j->i", mapped, v, dtype=dtype)
    assert f"NumPy memmap, read block by block, rounded to {dtype} per block" in report


def test_rounded_blocks_give_the_values_of_rounded_operands():
    rng = np.random.default_rng(0)
    a, b = rng.random((30, 20)) * 3, rng.random((20, 10))
    lazy = es.einsum("ij,jk->ik", da.from_array(a, chunks=7), b, dtype="float16")
    eager = es.einsum("ij,jk->ik", a, b, dtype="float16")
    assert lazy.dtype == eager.dtype == np.float16
    np.testing.assert_array_equal(lazy.compute(), eager)


@pytest.mark.parametrize(
    ("chunks", "words"),
    [
        ((0, 2), "chunks (0, 2) hold a chunk of 0 elements on an axis of the file's shape (3, 4)"),
        (0, "chunks 0 hold a chunk of 0 elements"),
        ((2,), "from_npy: chunks (2,) for shape (3, 4): "),
        (((1, 1), (2, 2)), "from_npy: chunks ((1, 1), (2, 2)) for shape (3, 4): "),
        (10**20, "from_npy: chunks 100000000000000000000 for shape (3, 4): "),
    ],
)
def test_from_npy_names_chunks_it_cannot_take(tmp_path, chunks, words):
    # (a chunk of 0 raised Dask's ZeroDivisionError; its other messages named no function)
    np.save(tmp_path / "x.npy", np.ones((3, 4)))
    with pytest.raises((es.LayoutError, TypeError)) as caught:
        ed.from_npy(tmp_path / "x.npy", chunks=chunks)
    assert words in str(caught.value)
    assert ed.from_npy(tmp_path / "x.npy", chunks=2).chunks == ((2, 1), (2, 2))
    assert ed.from_npy(tmp_path / "x.npy", chunks=np.array(2)).chunks == ((2, 1), (2, 2))


def test_dask_explain_takes_operands_not_shapes():
    # (it took a tuple of ints for a vector: es.explain takes it for a shape)
    with pytest.raises(TypeError, match=r"operand 0 is the tuple \(3,\) \(einstride\.explain"):
        ed.explain("i,j->ij", (3,), (4,))
    assert "on Dask" in ed.explain("i,j->ij", da.ones(3), np.ones(4))
    assert "on Dask" not in es.explain("i,j->ij", (3,), (4,))
