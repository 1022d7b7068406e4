"""Data movement between tensors, and every overlap rule of the layout spec, in one place.

Sources and destinations may be Tensors or NumPy arrays (a NumPy destination is written in
place).  Every rule is checked **before anything is written**: on an error the destination and
its storage are unchanged, and no hidden snapshot copy ever rescues an overlapping layout.

=====================================  ==================================================
operation                              overlapping source/destination that is supported
=====================================  ==================================================
``copy_to`` / ``try_copy_to``          both dense with equal element counts (memmove),
                                       or exactly the same view
``flatten_to`` / ``try_flatten_to``    a dense source
element-wise ``out=``                  an input that is the same view as ``out``
``resize_to``                          both dense
``reverse(t, axis, out=t)``            a dense view reversed in place; a reversal that
                                       changes nothing
``concat`` / ``stack`` ``out=``        none (``check_no_overlap``)
=====================================  ==================================================

>>> import numpy as np
>>> from einstride import Tensor
>>> storage = np.array([1, 2, 3, 4, 5, 6])
>>> src = Tensor(storage, shape=(2, 2), strides=(3, 1))    # [1, 2, 4, 5]
>>> dst = Tensor(storage, shape=(2, 2))                    # dense, overlaps src
>>> copy_to(src, dst)                                      # doctest: +ELLIPSIS
Traceback (most recent call last):
einstride.errors.LayoutError: copy_to: the source (shape (2, 2), strides (3, 1)) overlaps the ...
>>> snap = np.empty(4, dtype=storage.dtype)
>>> flatten_to(src, snap)
>>> copy_to(Tensor(snap, shape=(2, 2)), dst)
>>> storage.tolist()
[1, 2, 4, 5, 5, 6]
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .errors import LayoutError, cast_errors, value_errors
from .footprint import Footprint
from .layout import Layout, as_int_tuple, normalize_axes
from .memory import check_array, check_listing
from .narrow import as_strided
from .overlap import shares_memory
from .tensors import Tensor, as_array, wrap_like, writeable_array

__all__ = [
    "check_destination",
    "check_no_overlap",
    "copy_to",
    "flatten_to",
    "resize",
    "resize_to",
    "reverse",
    "tensors_overlap",
    "try_copy_to",
    "try_flatten_to",
]

Array = np.ndarray[Any, Any]


# -- the shared checks ----------------------------------------------------------------------


def tensors_overlap(a: Any, b: Any) -> bool:
    """Whether two Tensors/arrays share at least one byte of memory (exact).

    Judged on memory, so a NumPy array and a Tensor viewing one buffer are compared too.

    >>> storage = np.arange(6)
    >>> tensors_overlap(Tensor(storage, (3,), (2,)), storage[1::2])   # evens vs odds
    False
    """
    x, y = as_array(a), as_array(b)
    if x.size == 0 or y.size == 0:
        return False
    return shares_memory(x, y)


def check_destination(dst: Any, op: str) -> None:
    """A destination must be writeable and hold distinct values (no repeated locations).

    >>> check_destination(np.zeros((2, 3))[:, :2], "demo")              # gaps are fine
    >>> check_destination(Tensor(np.zeros(3), (2, 3), (0, 1)), "demo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    einstride.errors.LayoutError: demo: the destination (layout (2,3):(0,1)+0) has repeated ...
    >>> check_destination([1.0, 2.0], "demo")   # (a review: a list passed, as a new array)
    Traceback (most recent call last):
    TypeError: demo: the destination must be an einstride.Tensor or a numpy.ndarray, not list
    """
    if not isinstance(dst, (Tensor, np.ndarray)):
        raise TypeError(
            f"{op}: the destination must be an einstride.Tensor or a numpy.ndarray, not "
            f"{type(dst).__name__}"
        )
    arr = as_array(dst)
    if arr.dtype.itemsize == 0:  # no bytes, yet every element is visited: bound the count
        check_array(arr.shape, arr.dtype, f"{op} (writing the destination)")
    # (first: such a view is read-only too, which would be the less telling message)
    if Footprint.of(arr).has_repeated_locations:
        raise LayoutError(
            f"{op}: the destination ({_describe(dst)}) has repeated locations and cannot "
            "hold distinct values"
        )
    if not arr.flags.writeable:
        raise LayoutError(f"{op}: the destination ({_describe(dst)}) is read-only")


def check_no_overlap(dst: Any, sources: Iterable[Any], op: str) -> None:
    """Reject any source that shares memory with ``dst`` (the rule for einsum ``out=``,
    ``concat``/``stack`` ``out=``)."""
    if not isinstance(dst, (Tensor, np.ndarray)):  # (None passed silently: a review)
        raise out_type_error(dst, op)
    check_listing(sources, f"{op} sources")  # a range(10**9) of sources: refused, not walked
    try:
        listed = list(sources)
    except TypeError:  # (None: Python's "not iterable" named nothing, a review)
        raise TypeError(
            f"{op}: sources must be a sequence of arrays, not {type(sources).__name__}"
        ) from None
    for index, src in enumerate(listed):
        if tensors_overlap(dst, src):
            raise LayoutError(f"{op}: the destination overlaps input {index}")


def out_type_error(out: Any, op: str) -> TypeError:
    """The error for an ``out=`` that is neither an einstride Tensor nor an ndarray, naming
    its type with its package (a torch tensor is a ``torch.Tensor``, not a ``Tensor``).

    >>> print(out_type_error([0.0], "einsum out="))
    einsum out=: out must be an einstride.Tensor or a numpy.ndarray, not list
    """
    kind = type(out)
    package = kind.__module__.partition(".")[0]
    name = kind.__qualname__ if package == "builtins" else f"{package}.{kind.__qualname__}"
    hint = " (a torch out= takes torch operands)" if package == "torch" else ""
    return TypeError(f"{op}: out must be an einstride.Tensor or a numpy.ndarray, not {name}{hint}")


def check_out(
    out: Any,
    sources: Iterable[Any],
    dtype: np.dtype[Any],
    op: str,
    shape: tuple[int, ...] | None = None,
    casting: str = "same_kind",
) -> Array:
    """The ndarray view of an ``out=`` that must not overlap its inputs (einsum, ``stack``,
    ``concat``), after every check and before anything is written.

    ``out`` must be a Tensor or an ndarray (``TypeError``), of ``shape`` when one is given
    (``LayoutError``), able to take ``dtype`` values by a ``casting`` cast (default
    ``same_kind``; ``TypeError``, as NumPy's ufuncs), writeable with distinct locations, and
    share no memory with any source (``LayoutError``).
    """
    if not isinstance(out, (Tensor, np.ndarray)):
        raise out_type_error(out, op)
    dst = as_array(out)
    if shape is not None and dst.shape != shape:
        raise LayoutError(f"{op}: out has shape {dst.shape}, the result has shape {shape}")
    if not np.can_cast(dtype, dst.dtype, casting):  # type: ignore[arg-type]
        raise TypeError(f"{op}: out has dtype {dst.dtype}, which cannot hold {dtype} values")
    check_destination(dst, op)
    check_no_overlap(dst, sources, op)
    return dst


def check_elementwise_out(out: Any, inputs: Sequence[Any], op: str) -> Array:
    """The element-wise ``out=`` rule; returns ``out``'s ndarray, ready to be written.

    The inputs must broadcast to ``out``'s shape, ``out`` must be a valid destination, and an
    input that overlaps ``out`` must be exactly the same view of it once broadcast to its shape
    (each element is then read before it is written).  Any other overlap is a ``LayoutError``.

    >>> a = np.arange(4.0)
    >>> check_elementwise_out(a, [a, 1.0], "add") is a
    True
    """
    target = _destination(out, op)
    arrays = [as_array(x) for x in inputs]
    shapes = [arr.shape for arr in arrays]
    try:
        joint = np.broadcast_shapes(target.shape, *shapes)
    except ValueError:
        joint = None
    if joint != target.shape:
        raise LayoutError(
            f"{op}: inputs of shapes {shapes} do not broadcast to out's shape {target.shape}"
        )
    check_destination(target, op)
    written = Footprint.of(target)
    for index, arr in enumerate(arrays):
        if not tensors_overlap(arr, target):
            continue
        if not Footprint.of(np.broadcast_to(arr, target.shape)).same_view(written):
            raise LayoutError(
                f"{op}: input {index} ({_describe(inputs[index])}) overlaps out= "
                f"({_describe(out)}) without being exactly the same view; pass a copy"
            )
    return target


def _destination(dst: Any, op: str) -> Array:
    if isinstance(dst, Tensor):
        return dst.numpy()
    if isinstance(dst, np.ndarray):
        return dst
    raise TypeError(
        f"{op}: the destination must be an einstride.Tensor or a numpy.ndarray, "
        f"not {type(dst).__name__}"
    )


def _describe(x: Any) -> str:
    """A view's shape and strides for messages: a Tensor's layout, an array's element strides
    (byte strides when they are not whole elements)."""
    if isinstance(x, Tensor):
        return f"layout {x.layout}"
    arr = as_array(x)
    item = arr.dtype.itemsize
    if item and all(s % item == 0 for s in arr.strides):
        return f"shape {arr.shape}, strides {tuple(s // item for s in arr.strides)}"
    return f"shape {arr.shape}, byte strides {arr.strides}"


def errors_may_raise() -> bool:
    """Whether a floating-point error (overflow, an invalid cast) would stop NumPy half-way:
    ``np.errstate`` set to raise, call or log, or to warn under a warnings filter that makes
    RuntimeWarning an error.  NumPy raises after it has written what it computed."""
    modes = np.geterr().values()
    return any(v in ("raise", "call", "log") for v in modes) or (
        "warn" in modes and _warnings_raise()
    )


def _warnings_raise() -> bool:
    """Whether a filter may turn NumPy's RuntimeWarning into an exception (``-W error``):
    any "error" filter of a category it belongs to (the order of filters is not followed:
    a temporary too many is the safe side)."""
    return any(
        action == "error" and issubclass(RuntimeWarning, category)
        for action, _, category, _, _ in warnings.filters
    )


def cast_may_stop(source: np.dtype[Any], target: np.dtype[Any], errors: bool | None = None) -> bool:
    """Whether casting ``source`` values into ``target`` may raise half-way, after writing
    part of its destination: a value the dtype cannot hold (a Python int beyond int64 in an
    object source, a datetime too long for a string, a string that is no number, a
    character bytes cannot encode or bytes no character decodes: reviews found ``["1",
    "2", "x"]`` leaving ``[1, 2, 0]``)
    or, for a cast NumPy does not call safe, a floating-point error that
    :func:`errors_may_raise` (float64's 1e300 into float32 under
    ``np.errstate(over="raise")``: a review found ``copy_to``, ``stack`` and ``concat``
    leaving ``inf`` written; a safe cast, int32 into float64, raises none).  ``errors``:
    :func:`errors_may_raise` asked once by a caller that casts many sources.

    >>> cast_may_stop(np.dtype("f8"), np.dtype("f8")), cast_may_stop(np.dtype("U1"), np.dtype("i8"))
    (False, True)
    >>> with np.errstate(over="raise"):
    ...     cast_may_stop(np.dtype("f8"), np.dtype("f4"))
    True
    """
    if source == target:
        return False
    kind, into = source.kind, target.kind
    if (
        source.hasobject
        or target.hasobject
        or (kind in "mM" and into in "SU")
        or (kind in "SU" and into != kind)  # (parsed, encoded or decoded)
    ):
        return True
    if np.can_cast(source, target, "safe"):
        return False
    return errors_may_raise() if errors is None else errors


def converted(source: Array, dtype: np.dtype[Any], op: str) -> Array:
    """``source``'s values as ``dtype`` in a new array (an unsafe cast, as ``np.copyto``'s),
    made before a destination is written where :func:`cast_may_stop`; a value the dtype
    cannot hold (a string that is no number too: NumPy's bare ValueError named no function,
    a review) is an ``OutOfRangeError`` naming ``op``."""
    # a broadcast source (stride 0) is converted once per distinct element, then broadcast
    # again (a review: a scalar copied into 200 MB made a 200 MB converted copy)
    # (the Ellipsis keeps a 0-d object source an array: source[()] is its element, a review)
    compact = source[(*(slice(0, 1) if s == 0 else slice(None) for s in source.strides), ...)]
    check_array(compact.shape, dtype, f"{op} (a converted copy)")
    with cast_errors(op):
        done = compact.astype(dtype, casting="unsafe")
    return done if done.shape == source.shape else np.broadcast_to(done, source.shape)


def _cast_copy(target: Array, source: Array, op: str) -> None:
    """``np.copyto`` with unsafe casting, from a converted copy where the cast may stop
    half-way (:func:`cast_may_stop`), so ``target`` is untouched on error."""
    if cast_may_stop(source.dtype, target.dtype):
        source = converted(source, target.dtype, op)
    np.copyto(target, source, casting="unsafe")


def _flat(arr: Array) -> Array:
    """The 1-D view of a dense array (its elements in row-major order).

    Audited ``as_strided`` site (docs/reliability.md): every caller passes an array that
    ``Footprint.is_dense`` accepted, whose ``size`` items are contiguous from its first one.
    """
    flat: Array = as_strided(arr, (arr.size,), (arr.dtype.itemsize,))
    return flat


def _both_dense(source: Array, target: Array) -> bool:
    return (
        source.dtype.itemsize == target.dtype.itemsize
        and Footprint.of(source).is_dense
        and Footprint.of(target).is_dense
    )


# -- copy_to ----------------------------------------------------------------------------------


def copy_to(src: Any, dst: Any) -> None:
    """Copy ``src`` into ``dst`` (NumPy assignment semantics: broadcasting, unsafe casting).

    ``src`` must broadcast to ``dst.shape`` (extra leading length-1 dimensions are accepted) and
    ``dst`` must have at least as many elements; overlap is allowed only between dense views
    with equal element counts (memmove semantics) or exactly the same view.

    >>> storage = np.arange(6)
    >>> copy_to(storage[:4], storage[2:])           # dense and dense: memmove
    >>> storage.tolist()
    [0, 1, 0, 1, 2, 3]
    >>> copy_to([[7]], Tensor(storage, (2,), (3,)))
    >>> storage.tolist()
    [7, 1, 0, 7, 2, 3]
    """
    target = _destination(dst, "copy_to")  # its type first: nothing converted for a bad one
    source = as_array(src)
    shaped = _fit_source(source, target.shape)
    if shaped is None:
        raise LayoutError(
            f"copy_to: the source shape {source.shape} does not broadcast to the destination "
            f"shape {target.shape}"
        )
    if target.size < source.size:
        raise LayoutError(
            f"copy_to: the destination has {target.size} elements, fewer than the source's "
            f"{source.size}"
        )
    _copy_checked(shaped, target, "copy_to")


def try_copy_to(src: Any, dst: Any) -> bool:
    """``copy_to`` that returns ``False`` (copying nothing) when the shapes do not broadcast or
    ``dst`` has fewer elements; an unsupported overlap or a bad destination still raises.

    >>> dst = np.zeros(2)
    >>> try_copy_to(np.ones(3), dst), try_copy_to(np.ones(2), dst), dst.tolist()
    (False, True, [1.0, 1.0])
    """
    target = _destination(dst, "try_copy_to")
    source = as_array(src)
    shaped = _fit_source(source, target.shape)
    if shaped is None or target.size < source.size:
        return False
    _copy_checked(shaped, target, "try_copy_to")
    return True


def _fit_source(source: Array, shape: tuple[int, ...]) -> Array | None:
    """``source`` broadcast to ``shape`` as NumPy assignment does, or ``None``."""
    kept = source.shape
    while len(kept) > len(shape) and kept[0] == 1:
        kept = kept[1:]
    if len(kept) > len(shape):
        return None
    if any(n not in (m, 1) for n, m in zip(reversed(kept), reversed(shape))):
        return None
    fitted: Array = np.broadcast_to(source.reshape(kept), shape)
    return fitted


def _copy_checked(source: Array, target: Array, op: str) -> None:
    """The overlap rule of ``copy_to``, then the copy; ``source`` already has ``target``'s
    shape."""
    check_destination(target, op)
    if not tensors_overlap(source, target):
        _cast_copy(target, source, op)
        return
    if Footprint.of(source).same_view(Footprint.of(target)):
        if source.dtype != target.dtype:  # the same bytes read as another type: convert
            _cast_copy(target, source, op)
        return
    if not _both_dense(source, target):
        raise LayoutError(
            f"{op}: the source ({_describe(source)}) overlaps the destination "
            f"({_describe(target)}); only dense views with equal element counts, or exactly the "
            "same view, may overlap (flatten_to a snapshot first)"
        )
    # 1-D contiguous views with equal strides: NumPy copies in the safe direction (memmove);
    # a cast that may stop half-way is made first (its copy overlaps nothing)
    _cast_copy(_flat(target), _flat(source), op)


# -- flatten_to -------------------------------------------------------------------------------


def flatten_to(src: Any, dst: Any) -> None:
    """Write ``src``'s elements in row-major order into the first ``src.size`` elements of the
    1-D ``dst``; too short is a ``LayoutError``.  Overlap is allowed when ``src`` is dense.

    >>> storage = np.arange(8)
    >>> flatten_to(storage[2:6].reshape(2, 2), storage[::2])    # reads 2..5, writes 0, 2, 4, 6
    >>> storage.tolist()
    [2, 1, 3, 3, 4, 5, 5, 7]
    """
    target = _flat_destination(dst, "flatten_to")
    source = as_array(src)
    if target.shape[0] < source.size:
        raise LayoutError(
            f"flatten_to: the destination has {target.shape[0]} elements, fewer than the "
            f"source's {source.size}"
        )
    _flatten_checked(source, target[: source.size], "flatten_to")


def try_flatten_to(src: Any, dst: Any) -> bool:
    """``flatten_to`` that returns ``False`` (writing nothing) when ``dst`` is too short.

    >>> try_flatten_to(np.ones((2, 2)), np.zeros(3))
    False
    """
    target = _flat_destination(dst, "try_flatten_to")
    source = as_array(src)
    if target.shape[0] < source.size:
        return False
    _flatten_checked(source, target[: source.size], "try_flatten_to")
    return True


def _flat_destination(dst: Any, op: str) -> Array:
    # only the head is written (and checked): repeated locations past it are no concern
    target = writeable_array(dst) if isinstance(dst, Tensor) else _destination(dst, op)
    if target.ndim != 1:
        raise LayoutError(f"{op}: the destination must be 1-D, not of shape {target.shape}")
    return target


def _flatten_checked(source: Array, head: Array, op: str) -> None:
    check_destination(head, op)
    if not tensors_overlap(source, head):
        # ``head`` (1-D) reshapes to any shape as a view; ``source.reshape(-1)`` would copy
        # a strided source whole.
        _cast_copy(head.reshape(source.shape), source, op)
        return
    if not Footprint.of(source).is_dense:
        raise LayoutError(
            f"{op}: the source ({_describe(source)}) overlaps the destination and is not dense"
        )
    _ordered_copy(_flat(source), head, op)


def _ordered_copy(source: Array, head: Array, op: str) -> None:
    """Copy the dense 1-D ``source`` into the overlapping 1-D ``head`` as if from a snapshot.

    NumPy gets an overlapping 1-D copy right only when both strides are equal (a memmove), so
    a strided ``head`` is copied in chunks, each of which overlaps nothing it still has to read.
    """
    if cast_may_stop(source.dtype, head.dtype):  # the converted copy overlaps nothing
        np.copyto(head, converted(source, head.dtype, op), casting="unsafe")
        return
    if Footprint.of(head).is_dense and source.dtype.itemsize == head.dtype.itemsize:
        np.copyto(head, source, casting="unsafe")
        return
    item = source.dtype.itemsize
    gap = Footprint.of(head).address - Footprint.of(source).address
    stride = head.strides[0]
    if head.dtype.itemsize != item or stride < 0 or gap % item or stride % item:
        raise LayoutError(
            f"{op}: the destination ({_describe(head)}) overlaps the source off its element "
            "grid (another item size, a reversed or misaligned view)"
        )
    for start, stop in ordered_chunks(head.shape[0], gap // item, stride // item):
        np.copyto(head[start:stop], source[start:stop], casting="unsafe")


def ordered_chunks(count: int, start: int, step: int) -> list[tuple[int, int]]:
    """Chunks ``[k0, k1)`` and a safe order to copy ``source[k] -> dest[k]`` for ``k < count``,
    where source element ``k`` sits at position ``k`` and destination element ``k`` at
    ``start + k * step`` (``step >= 2``): no chunk writes a position that it, or a later chunk,
    still has to read.

    Elements whose destination lies below their source are copied in ascending chunks, those
    above in descending ones; chunk lengths grow geometrically away from the crossing point,
    so there are O(log count) of them.

    >>> ordered_chunks(4, -2, 2)      # destinations at -2, 0, 2, 4
    [(3, 4), (2, 3), (0, 1), (1, 2)]
    """
    split = min(count, max(0, -(start // (step - 1)))) if start < 0 else 0
    chunks = []
    high = count
    while high > split:  # destination above (or on) the source: descending
        low = max(split, (high - 1 - start) // step + 1)
        if low >= high:  # the one element that lands on itself
            low = high - 1
        chunks.append((low, high))
        high = low
    low = 0
    while low < split:  # destination below the source: ascending
        high = min(split, (low - start - 1) // step + 1)
        chunks.append((low, high))
        low = high
    return chunks


# -- resize, resize_to ----------------------------------------------------------------------


def resize(t: Any, new_shape: Any) -> Any:
    """A new dense tensor of ``new_shape`` holding ``t``'s elements in row-major order,
    truncated or padded with the dtype's zero (not repeated, as ``np.resize`` does).

    >>> resize(np.array([1, 2]), 5).tolist()
    [1, 2, 0, 0, 0]
    >>> resize(Tensor(np.arange(6), (2, 2), (3, 1)), (3,))
    Tensor([0, 1, 3], layout=(3,):(1,)+0, dtype=int64)
    """
    source = as_array(t)
    shape = _as_shape(new_shape, "resize")
    check_array(shape, source.dtype, "resize")
    result = np.zeros(shape, dtype=source.dtype)
    count = min(source.size, result.size)
    result.reshape(-1)[:count] = _first(source, count)
    return wrap_like(result, isinstance(t, Tensor))


def _as_shape(shape: Any, op: str) -> tuple[int, ...]:
    """``shape`` checked as a tensor's shape, its errors naming ``op`` and the shape alone
    (a review: ``resize(x, 2**62)`` spoke of strides and an offset never given; one that is
    no shape, a rank-2 array, was then said to have a negative length)."""
    lengths = as_int_tuple(shape, f"{op} length")
    try:
        return Layout.create(lengths).shape
    except LayoutError:
        raise LayoutError(
            f"{op}: new shape {lengths} has a negative length or more elements than any "
            "storage can address"
        ) from None


def _first(source: Array, count: int) -> Array:
    """The first ``count`` elements of ``source`` in row-major order, reading only those
    (``reshape(-1)`` would copy a strided or broadcast source whole)."""
    if source.flags.c_contiguous:
        return source.reshape(-1)[:count]
    flat: Array = source.flat[:count]
    return flat


def resize_to(src: Any, dst: Any) -> None:
    """Fill ``dst``'s logical elements with ``src``'s elements in row-major order, then zeros;
    storage outside ``dst``'s elements (gaps) is untouched.  Overlap: both dense.

    >>> storage = np.arange(1, 7)
    >>> resize_to(np.array([9, 9, 9]), Tensor(storage, (2, 2), (3, 1)))
    >>> storage.tolist()
    [9, 9, 3, 9, 0, 6]
    """
    target = _destination(dst, "resize_to")
    source = as_array(src)
    check_destination(target, "resize_to")
    count = min(source.size, target.size)
    if tensors_overlap(source, target):
        if not _both_dense(source, target):
            raise LayoutError(
                f"resize_to: the source ({_describe(source)}) overlaps the destination "
                f"({_describe(target)}); only two dense views may overlap"
            )
        flat = _flat(target)
        _cast_copy(flat[:count], _flat(source)[:count], "resize_to")  # a memmove
        flat[count:] = np.zeros((), target.dtype)
        return
    filled = np.zeros(target.size, target.dtype)
    with value_errors("resize_to"):
        filled[:count] = _first(source, count)
    np.copyto(target, filled.reshape(target.shape))


# -- reverse ----------------------------------------------------------------------------------


def reverse(t: Any, axis: Any, out: Any = None) -> Any:
    """``t`` with the order of ``axis`` (an int or a tuple, negative allowed) reversed.

    Without ``out``: a new dense tensor (reversed views need negative strides, which a Tensor
    cannot have).  With ``out``: written there and ``out`` returned; an overlapping ``out``
    must be the same view, and dense unless the reversal changes nothing.

    >>> t = Tensor(np.arange(6), (2, 3))
    >>> reverse(t, -1).numpy().tolist()
    [[2, 1, 0], [5, 4, 3]]
    >>> reverse(t, (0, 1), out=t) is t                # a dense view reversed in place
    True
    >>> t.storage.tolist()
    [5, 4, 3, 2, 1, 0]
    """
    source = as_array(t)
    axes = normalize_axes(axis, source.ndim, "reverse axis")
    flipped = np.flip(source, axes) if axes else source
    if out is None:
        check_array(source.shape, source.dtype, "reverse")  # the input may be a broadcast
        return wrap_like(np.array(flipped, order="C", copy=True), isinstance(t, Tensor))
    target = _destination(out, "reverse")
    if target.shape != source.shape:
        raise LayoutError(f"reverse: out has shape {target.shape}, the input {source.shape}")
    if tensors_overlap(source, target):
        _reverse_in_place(source, target, axes)
    else:
        check_destination(target, "reverse")
        _cast_copy(target, flipped, "reverse")
    return out


def _reverse_in_place(source: Array, target: Array, axes: tuple[int, ...]) -> None:
    """The overlapping case of ``reverse``: ``target`` must be ``source`` itself."""
    footprint = Footprint.of(source)
    if not footprint.same_view(Footprint.of(target)):
        raise LayoutError(
            f"reverse: out ({_describe(target)}) overlaps the input ({_describe(source)}) "
            "without being the same view"
        )
    if source.dtype == target.dtype and not footprint.changes_under_reversal(axes):
        return  # nothing moves: fine even with repeated locations, or read-only memory
    if not footprint.is_dense:  # (first: a view with repeated locations is read-only too)
        raise LayoutError(
            f"reverse: an in-place reversal needs a dense view, not {_describe(target)}"
        )
    if not target.flags.writeable:
        raise LayoutError(f"reverse: the destination ({_describe(target)}) is read-only")
    if source.dtype != target.dtype:  # the same bytes read as another type: convert first
        _cast_copy(target, source, "reverse")
    for ax in axes:
        half = target.shape[ax] // 2
        lead = (slice(None),) * ax
        low = target[(*lead, slice(0, half))]
        high = np.flip(target[(*lead, slice(target.shape[ax] - half, None))], ax)
        saved = low.copy()  # the swap's temporary: half an axis, not a rescue of a bad overlap
        low[...] = high
        high[...] = saved
