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
