"""Inputs that Dask reads block by block: NumPy memmaps and ``.npy`` files.

``da.from_array`` copies an array-like whole before slicing it (Dask's guard against later
mutation), which defeats a memmap.  These readers hand Dask one block at a time instead.
"""

from __future__ import annotations

import os
import weakref
from typing import Any

import dask.array as da
import numpy as np

from ....errors import LayoutError
from ....layout import as_int, is_int_scalar
from ....memory import check_listing

__all__ = ["MemmapBlocks", "NpyFile", "from_npy", "lazy_array", "npy_source"]

Array = Any  # dask.array.Array


class MemmapBlocks:
    """A memmap that Dask reads block by block (``da.from_array`` would copy it whole)."""

    def __init__(self, array: np.memmap[Any, Any]) -> None:
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self.ndim = array.ndim

    def __getitem__(self, key: Any) -> Any:
        return np.array(self.array[key])


class NpyFile:
    """A ``.npy`` file that Dask reads block by block; it pickles as its path, so workers
    of a cluster that share the file system read their own blocks.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
    >>> np.save(path, np.arange(12.0).reshape(3, 4))
    >>> f = NpyFile(path)
    >>> f.shape, f.dtype, f[1:, 2]
    ((3, 4), dtype('float64'), array([ 6., 10.]))
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        header = np.load(self.path, mmap_mode="r")
        self.shape: tuple[int, ...] = header.shape
        self.dtype: np.dtype[Any] = header.dtype
        self.ndim = header.ndim

    def __getitem__(self, key: Any) -> Any:
        return np.array(np.load(self.path, mmap_mode="r")[key])

    def __dask_tokenize__(self) -> Any:
        stat = os.stat(self.path)
        return ("einstride-npy", self.path, stat.st_mtime_ns, stat.st_size)


def from_npy(path: str | os.PathLike[str], chunks: Any = "auto") -> Array:
    """A Dask array over a ``.npy`` file, read block by block (see :class:`NpyFile`).

    Pick ``chunks`` within the task memory budget: einstride splits larger chunks, and the
    task reading one holds it whole.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
    >>> np.save(path, np.arange(12.0).reshape(3, 4))
    >>> from_npy(path, chunks=2).chunks
    ((2, 1), (2, 2))
    """
    source = NpyFile(path)
    if is_int_scalar(chunks):  # (a 0-d array: Dask asked its len())
        chunks = as_int(chunks, "from_npy chunks")
    elif isinstance(chunks, np.ndarray):  # (Dask lists it: a broadcast view filled memory)
        check_listing(chunks, "from_npy chunks")
    try:
        return lazy_array(source, chunks)
    except ZeroDivisionError:  # Dask's own, for a chunk of 0 on an axis of elements
        raise LayoutError(
            f"from_npy: chunks {chunks!r} hold a chunk of 0 elements on an axis of the file's "
            f"shape {source.shape}: each chunk needs at least one"
        ) from None
    except (ValueError, TypeError, OverflowError) as error:  # Dask's name no function
        kind = TypeError if isinstance(error, TypeError) else LayoutError
        raise kind(f"from_npy: chunks {chunks!r} for shape {source.shape}: {error}") from None


_NPY_ARRAYS: weakref.WeakValueDictionary[str, NpyFile] = weakref.WeakValueDictionary()
"""The file behind every array :func:`from_npy` made (by array name), to re-read it in
other chunks."""


def lazy_array(source: Any, chunks: Any, name: Any = None) -> Array:
    """A Dask array over ``source`` (shape, dtype, ndim, ``__getitem__``), without a copy."""
    meta = np.empty((0,) * source.ndim, source.dtype)
    array = da.from_array(
        source, chunks=chunks, meta=meta, asarray=True, name=name, inline_array=True
    )
    if isinstance(source, NpyFile):
        _NPY_ARRAYS[array.name] = source
    return array


def npy_source(array: Array) -> NpyFile | None:
    """The file behind an array :func:`from_npy` made, if ``array`` is one."""
    return _NPY_ARRAYS.get(array.name)
