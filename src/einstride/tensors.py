"""``Tensor``: a flat NumPy storage plus a validated :class:`~einstride.layout.Layout`.

>>> import numpy as np
>>> storage = np.arange(1, 7)
>>> t = Tensor(storage, shape=(2, 2), strides=(3, 1))
>>> t.numpy()
array([[1, 2],
       [4, 5]])
>>> t.shape, t.strides, t.offset
((2, 2), (3, 1), 0)
>>> np.shares_memory(t.numpy(), storage)
True
>>> Tensor(storage, shape=())
Tensor(1, layout=():()+0, dtype=int64)
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import memory as _memory
from .errors import LayoutError, OutOfRangeError, cast_errors, ragged_errors, value_errors
from .layout import Layout, as_sequence, is_int_scalar, normalize_axes
from .memory import MAX_NDARRAY_RANK, cast_dtype, check_array, check_array_like
from .narrow import as_dtype, as_strided, is_small_float

__all__ = ["Tensor", "any_tensor", "as_array", "as_tensor", "tensor", "wrap_like"]

Array = np.ndarray[Any, Any]

_UNSET: Any = np._NoValue  # NumPy's own "not given" (``np.sum(t)`` passes it for initial=)

# NumPy's own limits on an ndarray: its rank, and its bytes as a signed 64-bit count.
_MAX_NDARRAY_BYTES = 2**63 - 1


def _operator(name: str, reflected: bool = False) -> Callable[[Tensor, Any], Tensor]:
    """A Tensor operator delegating to the element-wise function ``name`` of einstride."""

    def method(self: Tensor, other: Any) -> Tensor:
        from . import elementwise  # imported late: elementwise builds on this module

        function = getattr(elementwise, name)
        result: Tensor = function(other, self) if reflected else function(self, other)
        return result

    method.__name__ = f"__r{name}__" if reflected else f"__{name}__"
    return method


class Tensor:
    """A strided view of a flat 1-D NumPy ``storage``.

    ``Tensor(storage, shape=None, strides=None, offset=0)``: ``shape`` defaults to the whole
    storage, ``strides`` (in elements) to row-major.  The layout is validated against the
    storage before any view exists, so no Tensor can reach outside its storage.
    """

    __slots__ = ("_array", "_layout", "_storage")

    __add__ = _operator("add")
    __radd__ = _operator("add", reflected=True)
    __sub__ = _operator("subtract")
    __rsub__ = _operator("subtract", reflected=True)
    __mul__ = _operator("multiply")
    __rmul__ = _operator("multiply", reflected=True)
    __truediv__ = _operator("divide")
    __rtruediv__ = _operator("divide", reflected=True)

    def __pow__(self, other: Any) -> Tensor:
        """``np.power``; with a Python number, NumPy's operator itself, which squares,
        inverts or takes the root for 2, -1 and 0.5 (``bools ** 2`` is int8, ``-0.0 ** 0.5``
        is -0.0, complex signs of zero differ: a review), its result sized first.

        >>> (Tensor(np.array([True, False])) ** 2).dtype
        dtype('int8')
        """
        from .elementwise import power

        if type(other) not in (int, float) or self.dtype.kind == "V":
            # (ml_dtypes' operator squares uint4 into int8, wrapped: np.power's, a review)
            result: Tensor = power(self, other)
            return result
        arr = self.numpy()
        try:
            kind = (np.empty(0, arr.dtype) ** other).dtype  # the result's, on no data
            check_array(arr.shape, kind, "Tensor ** (the result)")  # (a broadcast view)
            return as_tensor(np.asarray(arr**other))
        except OverflowError as error:  # a Python int the dtype cannot hold (as NumPy)
            raise OutOfRangeError(f"power: {error}") from None

    __rpow__ = _operator("power", reflected=True)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy's ufunc protocol: :func:`einstride.elementwise.array_ufunc` (``ndarray <op>
        Tensor`` is a Tensor, ``ndarray += Tensor`` writes the array)."""
        from .elementwise import array_ufunc

        return array_ufunc(ufunc, method, inputs, kwargs)

    # Ordering only: ``==`` keeps identity semantics (Tensors stay hashable); use es.equal.
    __lt__ = _operator("less")
    __le__ = _operator("less_equal")
    __gt__ = _operator("greater")
    __ge__ = _operator("greater_equal")

    def __neg__(self) -> Tensor:
        from .elementwise import negative

        result: Tensor = negative(self)
        return result

    def __abs__(self) -> Tensor:
        from .elementwise import abs as absolute

        result: Tensor = absolute(self)
        return result

    def __init__(
        self, storage: Any, shape: Any = None, strides: Any = None, offset: Any = 0
    ) -> None:
        flat = _check_storage(storage)
        if shape is None:
            if strides is not None:
                raise LayoutError("strides were given without a shape")
            shape = (flat.shape[0],)
        layout = Layout.create(shape, strides, offset, storage_size=flat.shape[0])
        check_representable(layout, flat.dtype)
        self._storage = flat
        self._layout = layout
        self._array: Array | None = None

    @classmethod
    def _wrap(cls, storage: Array, layout: Layout) -> Tensor:
        """Trusted constructor: ``layout`` was derived from one already valid on ``storage``
        (only NumPy's own limits on rank and size are checked again)."""
        check_representable(layout, storage.dtype)
        t = cls.__new__(cls)
        t._storage = storage
        t._layout = layout
        t._array = None
        return t

    def __reduce__(self) -> tuple[Any, tuple[Array, Layout]]:
        """Pickled (and copied) as its storage and layout: the cached NumPy view is not
        state (a review: pickled with it, the copy's view and storage were two arrays, and
        a broadcast view's pickle held every element)."""
        return Tensor._wrap, (self._storage, self._layout)

    # -- facts ----------------------------------------------------------------------------

    @property
    def storage(self) -> Array:
        return self._storage

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def shape(self) -> tuple[int, ...]:
        return self._layout.shape

    @property
    def strides(self) -> tuple[int, ...]:
        return self._layout.strides

    @property
    def offset(self) -> int:
        return self._layout.offset

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self._storage.dtype
        return dtype

    @property
    def ndim(self) -> int:
        return self._layout.ndim

    @property
    def size(self) -> int:
        return self._layout.size

    @property
    def is_dense(self) -> bool:
        return self._layout.is_dense

    @property
    def has_repeated_locations(self) -> bool:
        return self._layout.has_repeated_locations

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a rank-0 tensor")
        if self.shape[0] > sys.maxsize:  # an empty layout's other lengths are free (a review)
            raise LayoutError(
                f"len(): the first axis has {self.shape[0]} positions, past len()'s range"
            )
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """The views along the first axis (as iterating an ndarray)."""
        if not self.shape:
            raise TypeError("iteration over a rank-0 tensor")
        for i in range(self.shape[0]):
            yield self[i]

    def __bool__(self) -> bool:
        """NumPy's truth value: one element only."""
        return bool(self.numpy())

    def __index__(self) -> int:
        """A rank-0 integer tensor is an index (as a 0-d integer ndarray)."""
        return operator.index(self.numpy())

    def __contains__(self, value: Any) -> bool:
        check_array(self.shape, np.bool_, "Tensor.__contains__ (a comparison)")  # a broadcast?
        if isinstance(value, Tensor):  # compared as an array (a review: ndarray == Tensor
            value = value.numpy()  # deferred to Tensor's identity, always False)
        check_array_like(value, None, "Tensor.__contains__")  # (a range(10**12): a review)
        with ragged_errors("Tensor.__contains__"):  # (a list holding itself: a review)
            return bool(value in self.numpy())

    def __int__(self) -> int:
        return int(self.numpy())

    def __float__(self) -> float:
        return float(self.numpy())

    def __complex__(self) -> complex:
        return complex(self.numpy())

    # -- NumPy interop --------------------------------------------------------------------

    def numpy(self) -> Array:
        """The zero-copy ndarray view: read-only when the storage is, or when two positions
        share an element (a broadcast, sliding windows: as NumPy's ``broadcast_to``; a write
        through repeated locations is refused everywhere else too).

        >>> t = Tensor(np.arange(3.0)).view(Layout.create((2, 3), (0, 1)))
        >>> t.numpy().flags.writeable, Tensor(np.arange(3.0)).numpy().flags.writeable
        (False, True)
        """
        if self._array is None:
            array = _materialize(self._storage, self._layout)
            if self._layout.has_repeated_locations:
                array.flags.writeable = False
            self._array = array
        return self._array

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Array:
        """NumPy 2's protocol: ``copy=False`` with a dtype change is a ``ValueError`` (a copy
        would be needed), ``copy=True`` always copies, ``None`` copies only to convert."""
        arr = self.numpy()
        if dtype is not None and as_dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(
                    f"Tensor.__array__: converting {arr.dtype} to {np.dtype(dtype)} needs a copy, "
                    "but copy=False was given"
                )
            check_array(arr.shape, cast_dtype(arr.dtype, dtype), "Tensor.__array__ (a copy)")
            with value_errors("Tensor.__array__"):
                return arr.astype(dtype)
        if copy:
            check_array(arr.shape, arr.dtype, "Tensor.__array__ (a copy)")
            return arr.copy()
        return arr

    def __repr__(self) -> str:
        """The values (NumPy's printing), the layout and the dtype; an empty tensor NumPy
        cannot view (lengths past its limit beside a zero: valid, a review found its
        ``repr`` raising) prints ``[]`` for its values.

        >>> Tensor(np.zeros(1), shape=(2**60, 0))
        Tensor([], layout=(1152921504606846976,0):(0,0)+0, dtype=float64)
        """
        try:
            body = np.array2string(self.numpy(), separator=", ", prefix="Tensor(")
        except LayoutError:
            if self.size:
                raise
            body = "[]"
        return f"Tensor({body}, layout={self._layout!r}, dtype={self.dtype})"

    # -- views ----------------------------------------------------------------------------

    def view(self, layout: Layout) -> Tensor:
        """A view of the same storage under ``layout`` (validated against the storage)."""
        if not isinstance(layout, Layout):
            raise TypeError(
                f"Tensor.view: layout must be an einstride.Layout, not {type(layout).__name__} "
                "(Layout.create(shape, strides, offset) makes one)"
            )
        checked = Layout.create(
            layout.shape, layout.strides, layout.offset, storage_size=self._storage.shape[0]
        )
        check_representable(checked, self.dtype)
        return Tensor._wrap(self._storage, checked)

    def __getitem__(self, key: Any) -> Tensor:
        """Basic indexing as a view; a negative step is a ``LayoutError`` (see ``reverse``)."""
        return Tensor._wrap(self._storage, self._layout.index(key))

    @property
    def T(self) -> Tensor:
        return self.transpose()

    def transpose(self, *axes: Any) -> Tensor:
        """Axes reversed (no arguments, or None) or permuted; always a view.  An empty
        permutation of a tensor of axes is a ``LayoutError`` (NumPy: "axes don't match";
        it reversed the axes: a review)."""
        if len(axes) == 1 and not is_int_scalar(axes[0]):
            if axes[0] is None:
                axes = ()
            else:
                axes = as_sequence(axes[0], "transpose axes")  # (a float, a set: reviews)
                if not axes and self.ndim:
                    raise LayoutError(f"transpose: axes () do not permute {self.ndim} axes")
        perm = axes if axes else tuple(reversed(range(self.ndim)))
        return Tensor._wrap(self._storage, self._layout.permute(perm))

    def reshape(self, *shape: Any) -> Tensor:
        """A view when the strides allow it, else a dense copy (as NumPy); see ``es.reshape``."""
        from .ops.shape import reshape  # the ops build on Tensor: import at call time

        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]  # one sequence, or something es.reshape names in its TypeError
        result: Tensor = reshape(self, shape)
        return result

    def squeeze(self, axis: Any = None) -> Tensor:
        """Length-1 axes removed (all, or the named ones); see ``es.squeeze``."""
        return Tensor._wrap(self._storage, self._layout.squeeze(axis, "squeeze axis"))

    def expand_dims(self, axis: Any) -> Tensor:
        """Length-1 axes inserted at ``axis`` (a view); see ``es.expand_dims``."""
        from .ops.shape import expand_dims

        result: Tensor = expand_dims(self, axis)
        return result

    def broadcast_to(self, shape: Any) -> Tensor:
        return Tensor._wrap(self._storage, self._layout.broadcast_to(shape))

    def diagonal(self, axes: Any = (0, 1)) -> Tensor:
        """The equal-length ``axes`` (two or more) merged into one diagonal axis, placed
        where the first of them was (a view).  Not NumPy's ``diagonal(offset, axis1,
        axis2)``: one axis is refused, as NumPy reads ``t.diagonal(1)`` as an offset (a
        review found it returning the whole tensor); slice first for an offset diagonal.

        >>> m = Tensor(np.arange(9), shape=(3, 3))
        >>> m.diagonal().tolist(), m[:-1, 1:].diagonal((0, 1)).tolist()   # offset 1
        ([0, 4, 8], [1, 5])
        >>> m.diagonal(1)
        Traceback (most recent call last):
        einstride.errors.LayoutError: diagonal axes 1 name one axis of a tensor of shape (3, 3); a diagonal merges two or more (NumPy's diagonal(offset) is not this: slice first, t[:-k, k:].diagonal((0, 1)))
        """  # noqa: E501
        if len(normalize_axes(axes, self.ndim, "diagonal axes")) < 2:
            raise LayoutError(
                f"diagonal axes {axes!r} name one axis of a tensor of shape {self.shape}; a "
                "diagonal merges two or more (NumPy's diagonal(offset) is not this: slice "
                "first, t[:-k, k:].diagonal((0, 1)))"
            )
        return Tensor._wrap(self._storage, self._layout.diagonal(axes, "diagonal axes"))

    def copy(self) -> Tensor:
        """A dense copy in new storage."""
        return tensor(self.numpy())

    # -- NumPy-like methods: reductions, casts, matmul (each result a new Tensor) ---------
    # (the reductions take NumPy's argument order and ``out=``, as ``np.sum(t)`` passes it)

    def sum(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = _UNSET,
        where: Any = True,
    ) -> Any:
        """NumPy's ``sum`` over the viewed array; float16 and bfloat16 accumulate in float32
        and are rounded once (as ``es.einsum``).  A full reduction is a rank-0 Tensor.

        >>> t = Tensor(np.arange(6.0), shape=(2, 3))
        >>> t.sum(axis=1).tolist(), t.sum().item(), t.sum(axis=(0, -1), keepdims=True).shape
        ([3.0, 12.0], 15.0, (1, 1))
        """
        return _reduced(self, "sum", axis, dtype, keepdims, out, initial=initial, where=where)

    def mean(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        *,
        where: Any = True,
    ) -> Any:
        """NumPy's ``mean`` (integers give float64); 16-bit floats accumulate in float32.

        >>> Tensor(np.arange(6), shape=(2, 3)).mean(axis=0).tolist()
        [1.5, 2.5, 3.5]
        """
        return _reduced(self, "mean", axis, dtype, keepdims, out, where=where)

    def prod(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = _UNSET,
        where: Any = True,
    ) -> Any:
        """NumPy's ``prod``; 16-bit floats accumulate in float32.

        >>> Tensor(np.arange(1, 7), shape=(2, 3)).prod(axis=1).tolist()
        [6, 120]
        """
        return _reduced(self, "prod", axis, dtype, keepdims, out, initial=initial, where=where)

    def max(
        self,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = _UNSET,
        where: Any = True,
    ) -> Any:
        """NumPy's ``max`` (an empty reduction is a ``ValueError``, as NumPy's).

        >>> Tensor(np.array([3, 1, 4, 1, 5, 9])).max().item()
        9
        """
        return _reduced(self, "max", axis, None, keepdims, out, initial=initial, where=where)

    def min(
        self,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = _UNSET,
        where: Any = True,
    ) -> Any:
        """NumPy's ``min``.

        >>> Tensor(np.array([3, 1, 4, 1, 5, 9]), shape=(2, 3)).min(axis=-1).tolist()
        [1, 1]
        """
        return _reduced(self, "min", axis, None, keepdims, out, initial=initial, where=where)

    def any(
        self, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True
    ) -> Any:
        """NumPy's ``any`` (a bool Tensor).

        >>> Tensor(np.array([0, 0, 2, 0]), shape=(2, 2)).any(axis=1).tolist()
        [False, True]
        """
        return _reduced(self, "any", axis, None, keepdims, out, where=where)

    def all(
        self, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True
    ) -> Any:
        """NumPy's ``all`` (a bool Tensor).

        >>> Tensor(np.array([1, 1, 2, 0]), shape=(2, 2)).all(axis=1).tolist()
        [True, False]
        """
        return _reduced(self, "all", axis, None, keepdims, out, where=where)

    def astype(self, dtype: Any, copy: bool = True) -> Tensor:
        """The values cast to ``dtype`` (NumPy's unsafe ``astype`` casting) in new dense
        storage; ``self`` when the dtype is already ``dtype`` and ``copy=False``.

        >>> t = Tensor(np.array([1.7, -2.2]))
        >>> t.astype(np.int32).tolist(), t.astype(t.dtype, copy=False) is t
        ([1, -2], True)
        """
        try:
            target = as_dtype(dtype)
        except TypeError as error:  # (NumPy's "not understood" named nothing: a review)
            raise TypeError(f"Tensor.astype: {error}") from None
        if target == self.dtype and not copy:
            return self
        made = cast_dtype(self.dtype, target)  # (U0 from int64: <U21)
        check_array(self.shape, made, "Tensor.astype")  # (a broadcast view: sized first)
        with cast_errors("Tensor.astype", f" (into {target})"):  # (named tensor(): a review)
            arr = np.array(self.numpy(), dtype=target, order="C", copy=True)
        return Tensor(arr.reshape(-1), arr.shape)

    def __matmul__(self, other: Any) -> Tensor:
        """NumPy's ``matmul`` (batch dimensions broadcast, 1-D operands promoted), computed
        by ``es.einsum`` (one planned BLAS contraction).

        >>> a = Tensor(np.arange(6.0), shape=(2, 3))
        >>> (a @ a.T).tolist(), (a @ np.ones(3)).tolist()
        ([[5.0, 14.0], [14.0, 50.0]], [3.0, 12.0])
        """
        return _matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        """``other @ self`` for an ndarray or list ``other`` (a Tensor result).

        >>> (np.ones(2) @ Tensor(np.arange(6.0), shape=(2, 3))).tolist()
        [3.0, 5.0, 7.0]
        """
        return _matmul(other, self)

    def tolist(self) -> Any:
        """The values as nested Python lists (NumPy's ``tolist``), within the memory limit
        (a Python number takes about 32 bytes: a broadcast view's list could fill the
        machine, a review)."""
        if self.size * 32 > _memory.LIMIT:
            check_array(self.shape, np.dtype("V32"), "Tensor.tolist (Python numbers)")
        return self.numpy().tolist()

    def item(self, *index: Any) -> Any:
        """One element as a Python scalar (NumPy's ``item``).

        >>> Tensor(np.arange(6), shape=(2, 3)).item(1, 2)
        5

        A bad index is a ``LayoutError`` naming the shape, as ``t[i, j]``'s (NumPy's
        IndexError or ValueError otherwise leaked: a review).
        """
        try:
            return self.numpy().item(*index)
        except (IndexError, ValueError, OverflowError) as exc:  # (2**70: OverflowError)
            raise LayoutError(f"Tensor.item{index}: {exc} (shape {self.shape})") from None
        except TypeError as exc:  # (a string: NumPy's message named nothing, a review)
            raise TypeError(f"Tensor.item{index}: the index must be ints: {exc}") from None


# Floats narrower than float32 accumulate in float32 (the rule of es.einsum).
_ACCUMULATE_WIDER = ("sum", "mean", "prod")


def _where_mask(where: Any, name: str) -> Any:
    """A reduction's ``where=`` as NumPy takes it: an array (a Tensor's view) must cast
    safely to bool, anything else (a number, a list of them) is converted to bool (an
    int list was refused: a review), its size checked first."""
    if isinstance(where, (Tensor, np.ndarray)):
        return as_array(where)
    check_array_like(where, np.bool_, f"Tensor.{name} where=")
    with ragged_errors(f"Tensor.{name} where="):
        return np.asarray(where, dtype=bool)


def _reduced(
    t: Tensor,
    name: str,
    axis: Any,
    dtype: Any,
    keepdims: bool,
    out: Any = None,
    *,
    initial: Any = _UNSET,
    where: Any = True,
) -> Any:
    """``numpy.<name>`` over ``t``'s view, as a new Tensor (rank 0 for a full reduction), or
    written into ``out`` (an ndarray or Tensor of the result's shape, cast unsafely, as
    NumPy's; NumPy's ``np.sum(t)`` passes ``out=None``: a review found every NumPy
    reduction function refused on a Tensor), with NumPy's ``initial=`` and ``where=``.  A
    small float, ``t``'s or ``dtype=``'s, accumulates in float32 and is rounded once (a
    review: ``sum(dtype=bfloat16)`` of 10,000 ones stalled at 256), its input first rounded
    to a small-float ``dtype=`` as NumPy casts it (as einsum's operands: a review found
    ``sum(dtype=float16)`` of ``[1 + 2**-12, -1]`` 2**-12, NumPy's 0); into a wider ``out=``
    without ``dtype=`` NumPy's own sum runs in ``out``'s dtype, unrounded."""
    from .engine.backends.numpy.backend import rounded_to
    from .engine.spec.dtypes import compute_dtype, rounds_into

    axes = None if axis is None else normalize_axes(axis, t.ndim, f"Tensor.{name} axis")
    arr = t.numpy()
    target = as_dtype(dtype) if dtype is not None else arr.dtype
    wider = compute_dtype(target) if name in _ACCUMULATE_WIDER else target
    if arr.size > _memory.LIMIT // 16:  # one comparison for the common case (a review)
        _check_reduction(arr, name, axes, target)
    if dtype is not None and name in _ACCUMULATE_WIDER and rounds_into(arr.dtype, target):
        if arr.size > _memory.LIMIT // 16:
            distinct = tuple(1 if step == 0 else n for n, step in zip(arr.shape, arr.strides))
            check_array(distinct, target, f"Tensor.{name} (its input rounded to dtype=)")
        arr = rounded_to([arr], target)[0]  # (broadcast axes stay broadcast)
    kwargs: dict[str, Any] = {"axis": axes, "keepdims": bool(keepdims)}
    if initial is not _UNSET:
        kwargs["initial"] = initial
    if where is not True:
        kwargs["where"] = _where_mask(where, name)
    destination = None if out is None else _reduction_out(out, arr.shape, axes, keepdims, name)
    if destination is not None:
        small = is_small_float(destination.dtype) and name in _ACCUMULATE_WIDER
        if name in ("any", "all") and destination.dtype == object:
            # NumPy 2.4's any/all into an object out corrupts reference counts (a segfault
            # at a later collection, a review): a bool result, then copied in
            np.copyto(destination, getattr(np, name)(arr, **kwargs), casting="unsafe")
            return out
        if dtype is None and not small:  # NumPy's own, in out's dtype (initial= too)
            with _initial_errors(name, initial):
                getattr(np, name)(arr, out=destination, **kwargs)
            return out
        if dtype is None:  # a sum into a small float: in float32, rounded once into out
            target = destination.dtype
            wider = compute_dtype(target)
            if arr.dtype.kind == "c":  # complex64: a product of complex numbers (a review)
                wider = np.promote_types(wider, arr.dtype)
        elif wider == target:  # NumPy's own in dtype=, into out (a small float's: wider)
            into = destination
            if is_small_float(destination.dtype):  # rounded once (mean: divided in float32)
                into = np.empty(destination.shape, np.promote_types(np.float32, target))
            with _initial_errors(name, initial):
                getattr(np, name)(arr, dtype=target, out=into, **kwargs)
            if into is not destination:
                np.copyto(destination, into, casting="unsafe")
            return out
    if wider != target or dtype is not None:
        kwargs["dtype"] = wider
    with _initial_errors(name, initial):
        value = getattr(np, name)(arr, **kwargs)
    # (an object array's full reduction without dtype= is a Python object: its dtype was
    # inferred anew, a review: 2**62 + 2**62 became uint64; NumPy's own values keep theirs)
    python = arr.dtype == object and not isinstance(value, (np.ndarray, np.generic))
    result = np.asarray(value, dtype=object if python else None)
    if wider != target:
        result = result.astype(target)  # rounded once
    if destination is None:
        return as_tensor(result)
    np.copyto(destination, result, casting="unsafe")
    return out


@contextmanager
def _initial_errors(name: str, initial: Any) -> Iterator[None]:
    """An ``initial=`` the reduction's dtype cannot hold is an ``OutOfRangeError`` naming
    the method (NumPy's bare ``OverflowError``, or ``ValueError`` for a NaN into integers,
    named nothing: a review)."""
    try:
        yield
    except (OverflowError, ValueError) as error:
        if initial is _UNSET or type(error) not in (OverflowError, ValueError):
            raise
        raise OutOfRangeError(f"Tensor.{name}: initial={initial!r}: {error}") from None


def _reduction_out(out: Any, shape: tuple[int, ...], axes: Any, keepdims: bool, name: str) -> Array:
    """``out=`` of a reduction as an ndarray: an ndarray or Tensor of exactly the result's
    shape (NumPy's rule; a review: ``copyto`` broadcast a sum into every element of a larger
    ``out``, and a list was a temporary copy, written and lost)."""
    if not isinstance(out, (np.ndarray, Tensor)):
        raise TypeError(
            f"Tensor.{name}: out= must be an ndarray or Tensor, not {type(out).__name__}"
        )
    reduced = range(len(shape)) if axes is None else axes
    kept = tuple(
        1 if ax in reduced else n for ax, n in enumerate(shape) if keepdims or ax not in reduced
    )
    if tuple(out.shape) != kept:
        raise LayoutError(f"Tensor.{name}: out= has shape {tuple(out.shape)}, the result {kept}")
    arr = as_array(out)
    flags = arr.flags
    if not (flags.writeable and (flags.c_contiguous or flags.f_contiguous)):
        # writeable, no repeated locations (a review); a contiguous array has none, and is
        # not asked (the check cost a sum of 15 us another 10, a review)
        from .transfer import check_destination

        check_destination(out, f"Tensor.{name} out=")
    return arr


def _check_reduction(arr: Array, name: str, axes: Any, dtype: np.dtype[Any]) -> None:
    """The memory guard of a reduction whose view may be a broadcast: its scan (one byte an
    element: a broadcast view of 10**12 elements would run for hours) and its result (a
    review: 40 kB of sums of an 8-byte storage passed a 10 kB limit)."""
    check_array(arr.shape, np.bool_, f"Tensor.{name} (reading the input)")
    kept = () if axes is None else tuple(n for ax, n in enumerate(arr.shape) if ax not in axes)
    check_array(kept, dtype, f"Tensor.{name}")


def _matmul(a: Any, b: Any) -> Tensor:
    """``a @ b`` with NumPy's rules, as the einsum of the operands' ranks."""
    from .engine import einsum

    ranks = [_matmul_rank(x, position) for position, x in enumerate((a, b))]
    if 0 in ranks:
        raise LayoutError(  # (NumPy: a plain ValueError; ours names the operand, a review)
            f"matmul: operand {ranks.index(0)} has rank 0 (use * to multiply by a scalar)"
        )
    equation = {
        (True, True): "j,j->",
        (True, False): "j,...jk->...k",
        (False, True): "...ij,j->...i",
        (False, False): "...ij,...jk->...ik",
    }[(ranks[0] == 1, ranks[1] == 1)]
    result: Tensor = einsum(equation, a, b)
    return result


def _matmul_rank(x: Any, position: int) -> int:
    """The rank of matmul's operand ``position``; nested sequences of unequal lengths are a
    :class:`LayoutError` naming it (NumPy's bare ``ValueError`` named nothing)."""
    if isinstance(x, (Tensor, np.ndarray)):
        return x.ndim
    check_array_like(x, None, f"matmul: operand {position}")  # (np.ndim converts it)
    with ragged_errors(f"matmul: operand {position}"):
        return int(np.ndim(x))


def _check_storage(storage: Any) -> Array:
    if not isinstance(storage, np.ndarray):
        raise TypeError(
            f"storage must be a 1-D numpy.ndarray, not {type(storage).__name__} "
            "(use einstride.tensors or einstride.as_tensor for other data)"
        )
    if storage.ndim != 1:
        raise LayoutError(f"storage must be 1-D, got shape {storage.shape}")
    if storage.shape[0] > 1 and storage.strides[0] != storage.dtype.itemsize:
        raise LayoutError(
            f"storage must be contiguous, got byte stride {storage.strides[0]} for items of "
            f"{storage.dtype.itemsize} bytes (use einstride.as_tensor to wrap any array)"
        )
    return storage


def check_representable(layout: Layout, dtype: np.dtype[Any]) -> None:
    """NumPy's limits on the ndarray view of ``layout``: a rank it supports and, when it has
    elements, a byte count that fits int64; else a ``LayoutError``.  (An empty layout whose
    lengths multiply past int64 is valid; only its ``numpy()`` view fails.)

    >>> check_representable(Layout.create((2**62,), (0,)), np.dtype(np.float64))
    Traceback (most recent call last):
    einstride.errors.LayoutError: shape (4611686018427387904,) of float64 items spans ...
    """
    if layout.ndim > MAX_NDARRAY_RANK:
        raise LayoutError(
            f"shape {layout.shape} has rank {layout.ndim}; NumPy arrays have at most "
            f"{MAX_NDARRAY_RANK} dimensions"
        )
    if layout.size == 0:
        return
    nbytes = dtype.itemsize
    for n in layout.shape:
        nbytes *= n
    if nbytes > _MAX_NDARRAY_BYTES:
        raise LayoutError(
            f"shape {layout.shape} of {dtype} items spans {nbytes:,} bytes, more than a NumPy "
            "array can describe"
        )


def writeable_array(t: Tensor) -> Array:
    """``t``'s ndarray, writeable wherever its storage is, repeated locations included (where
    :meth:`Tensor.numpy` is read-only): for ``flatten_to``, which writes the distinct head of
    a destination and checks that head itself.

    >>> writeable_array(Tensor(np.zeros(3), (2, 3), (0, 1))).flags.writeable
    True
    """
    return _materialize(t._storage, t._layout)


def _materialize(storage: Array, layout: Layout) -> Array:
    """The ndarray of a layout that was validated against ``storage``.

    Audited ``as_strided`` / ``ndarray(buffer=...)`` site (docs/reliability.md): every element
    of ``layout`` lies in ``storage``; length-1 axes get stride 0 (their stride is free and
    may be any size).
    """
    check_representable(layout, storage.dtype)
    item = storage.dtype.itemsize
    strides = tuple(s * item if n > 1 else 0 for n, s in zip(layout.shape, layout.strides))
    try:
        if storage.dtype.hasobject or storage.dtype.kind in "mM" or item == 0:
            # These dtypes do not export the buffer protocol; the layout is already validated.
            start = storage[min(layout.offset, storage.shape[0]) :]
            return as_strided(start, layout.shape, strides)
        return np.ndarray(layout.shape, storage.dtype, storage, layout.offset * item, strides)
    except (ValueError, OverflowError) as exc:
        # An empty layout may have lengths whose product overflows (the spec allows it);
        # NumPy cannot describe such a shape at all.
        raise LayoutError(f"layout {layout} cannot be viewed as a NumPy array: {exc}") from None


def tensor(data: Any, dtype: Any = None) -> Tensor:
    """Copy any array-like into new dense storage.  The copy is sized before it is made (a
    broadcast view, or a ``range``, may be huge); a value that ``dtype`` cannot hold is an
    :class:`~einstride.errors.OutOfRangeError`.

    >>> tensor([[1, 2], [3, 4]]).layout
    (2,2):(2,1)+0
    >>> tensor([1000], dtype=np.int8)
    Traceback (most recent call last):
    einstride.errors.OutOfRangeError: tensor: Python integer 1000 out of bounds for int8
    """
    if isinstance(data, (np.ndarray, Tensor)):  # maybe a broadcast view: size the copy first
        made = data.dtype if dtype is None else cast_dtype(data.dtype, dtype)
        check_array(data.shape, made, "tensor (a copy)")
    else:
        check_array_like(data, dtype, "tensor")
    with value_errors("tensor"), ragged_errors("tensor"):
        arr = np.array(data, dtype=dtype, order="C", copy=True)
    return Tensor(arr.reshape(-1), arr.shape)


def as_tensor(x: Any) -> Tensor:
    """Wrap ``x`` without copying when its layout is representable (non-negative strides that
    are multiples of the item size); copy otherwise.  A Tensor is returned unchanged.

    >>> a = np.arange(12.0).reshape(3, 4)[:, ::2]
    >>> t = as_tensor(a)
    >>> t.layout, np.shares_memory(t.numpy(), a)
    ((3,2):(4,2)+0, True)
    >>> as_tensor(a[::-1]).layout          # a negative stride: copied into dense storage
    (3,2):(2,1)+0
    """
    if isinstance(x, Tensor):
        return x
    arr = as_array(x)
    item = arr.dtype.itemsize
    strides = _element_strides(arr)
    if strides is None:
        return tensor(arr)
    if arr.size == 0:
        return Tensor(np.empty(0, arr.dtype), arr.shape)
    span = sum((n - 1) * s for n, s in zip(arr.shape, strides))
    if arr.ndim == 1 and arr.strides[0] == item:
        storage = arr
    else:
        # Audited (docs/reliability.md): strides >= 0, so every element of ``arr`` lies in the
        # ``span + 1`` items from its first one, all inside the buffer ``arr`` views.
        storage = as_strided(arr, (span + 1,), (item,), writeable=arr.flags.writeable)
    return Tensor._wrap(storage, Layout.create(arr.shape, strides, 0, storage_size=span + 1))


def _element_strides(arr: Array) -> tuple[int, ...] | None:
    item = arr.dtype.itemsize
    if item == 0:
        return None
    strides = []
    for n, s in zip(arr.shape, arr.strides):
        if n <= 1:
            strides.append(0)
        elif s < 0 or s % item:
            return None
        else:
            strides.append(s // item)
    return tuple(strides)


def as_array(x: Any, what: str | None = None) -> Array:
    """The ndarray behind a Tensor (a view), or ``np.asarray`` of anything else once its size
    was checked (``memory.check_array_like``: a ``range(10**12)`` fails before NumPy reads it);
    nested sequences of unequal lengths are a :class:`LayoutError` naming ``what`` (the
    function and argument), or the object taken as an array.
    """
    if isinstance(x, Tensor):
        return x.numpy()
    if isinstance(x, np.ndarray):
        return x
    check_array_like(x, None, "the conversion to an array")
    with ragged_errors(what or f"a {type(x).__name__} taken as an array"):
        return np.asarray(x)


def any_tensor(*xs: Any) -> bool:
    """Whether any argument is a Tensor: then results are Tensors ("any Tensor in, Tensor
    out"); otherwise NumPy in, NumPy out."""
    return any(isinstance(x, Tensor) for x in xs)


def wrap_like(result: Any, as_tensor_result: bool) -> Any:
    """Return ``result`` (an ndarray) as a Tensor view when ``as_tensor_result``, else as is."""
    return as_tensor(result) if as_tensor_result else result
