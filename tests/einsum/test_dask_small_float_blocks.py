"""The Dask backend's review leftovers: a small-float ``dtype=`` rounds each block as the
graph reads it (a memmap was read and cast whole while the graph was built, an ndarray
copied), ``from_npy`` names bad chunks, and ``einstride.dask.explain`` refuses shapes."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from numpy.lib.format import open_memmap  # noqa: E402

import einstride as es  # noqa: E402
import einstride.dask as ed  # noqa: E402


def _peak(run: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_building_the_graph_reads_no_memmap_and_casts_no_ndarray(
    tmp_path: Path, dtype: str
) -> None:
    pytest.importorskip("ml_dtypes")
    path = tmp_path / "m.npy"
    m = open_memmap(path, mode="w+", shape=(1000, 1000))
    m[:] = 1.0
    m.flush()
    del m
    mapped = np.load(path, mmap_mode="r")  # 8 MB on disk
    held = np.ones((1000, 1000))  # 8 MB in memory
    v = da.ones(1000, chunks=250)

    def made(operand: Any, to: str | None) -> int:
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


def test_rounded_blocks_give_the_values_of_rounded_operands() -> None:
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
    ],
)
def test_from_npy_names_chunks_it_cannot_take(tmp_path: Path, chunks: Any, words: str) -> None:
    np.save(tmp_path / "x.npy", np.ones((3, 4)))
    with pytest.raises(ValueError) as caught:
        ed.from_npy(tmp_path / "x.npy", chunks=chunks)
    assert words in str(caught.value)
    assert ed.from_npy(tmp_path / "x.npy", chunks=2).chunks == ((2, 1), (2, 2))


def test_dask_explain_takes_operands_not_shapes() -> None:
    with pytest.raises(TypeError, match=r"operand 0 is the tuple \(3,\) \(einstride\.explain"):
        ed.explain("i,j->ij", (3,), (4,))
    assert "on Dask" in ed.explain("i,j->ij", da.ones(3), np.ones(4))
    assert "on Dask" not in es.explain("i,j->ij", (3,), (4,))
