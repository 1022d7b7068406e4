"""``Layout``: the immutable (shape, strides, offset) value of a strided view, and its algebra.

Strides and offsets count **elements**, never bytes, and are never negative.  Logical element
``(i0, ..., ik)`` lives at ``offset + sum(i_d * strides[d])``.  Every operation returns a new
``Layout`` (or ``None`` where a view is impossible and the caller must copy); nothing mutates.

>>> lay = Layout.create((2, 3))
>>> lay
(2,3):(3,1)+0
>>> lay.permute((1, 0))
(3,2):(1,3)+0
>>> Layout.create((3, 3)).diagonal((0, 1))
(3,):(4,)+0
>>> lay.permute((1, 0)).reshape((6,)) is None        # a transposed view cannot be flattened
True
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import LayoutError
from .memory import check_listing, check_views
from .overlap import repeats_listed, shares_memory, solved
from .strides import is_row_major, row_major_strides

__all__ = [
    "Layout",
    "as_int",
    "as_int_tuple",
    "as_sequence",
    "is_int_scalar",
    "normalize_axes",
    "normalize_axis",
    "row_major_strides",
]

# Views are materialised as NumPy arrays, whose byte offsets are signed 64-bit integers: keep
# every reachable element offset comfortably below that even for 16-byte items.
_MAX_ELEMENT_OFFSET = 2**59

# The one shared base of every overlap probe (see ``_probe``): probes must share an origin.
_PROBE_BASE = np.zeros(1, np.uint8)


def as_int(value: Any, what: str) -> int:
    """``operator.index`` that also rejects ``bool`` (a common accident, never a length);
    a ``TypeError`` naming ``what`` for anything else."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None


def is_int_scalar(value: Any) -> bool:
    """Whether ``value`` is one integer: a Python or NumPy integer, a 0-d integer array
    (NumPy takes one for a length or a count), or another object with ``__index__`` and no
    length (NumPy takes one too: a review), never a bool.

    >>> [is_int_scalar(v) for v in (3, np.int8(3), np.array(3), np.array([3]), True, 3.0)]
    [True, True, True, False, False, False]
    """
    kind = type(value)
    if kind is int or kind is tuple or kind is list:  # (the common cases first: reviews)
        return kind is int
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "iu"
    if getattr(value, "ndim", None) == 0 and hasattr(kind, "__index__"):
        return True  # a 0-d Tensor or torch tensor, as a 0-d array (a review)
    return hasattr(kind, "__index__") and not hasattr(kind, "__len__")


def as_sequence(values: Any, what: str) -> tuple[Any, ...]:
    """``values`` as a tuple, its length checked before it is listed; a ``TypeError``
    naming ``what`` for what is no sequence, an unordered set or mapping included (NumPy
    refuses one: its order is no axis order, a review found ``transpose(a, {1, 0})`` the
    identity)."""
    if type(values) in (tuple, list):
        return tuple(values)
    if isinstance(values, (AbstractSet, Mapping)):
        raise TypeError(f"{what} must be an int or a sequence of ints, not {values!r}")
    check_listing(values, what)  # a range(10**12) as a shape fails before it is listed
    try:
        return tuple(values)
    except TypeError:
        raise TypeError(f"{what} must be an int or a sequence of ints, not {values!r}") from None


def as_int_tuple(values: Any, what: str) -> tuple[int, ...]:
    """An int (:func:`is_int_scalar`) or a 1-D sequence of ints as a tuple: ``TypeError``
    naming ``what`` for anything else, ``LayoutError`` for an array of rank 2 or more.

    >>> as_int_tuple(np.array(6), "reshape shape"), as_int_tuple([2, np.int8(3)], "length")
    ((6,), (2, 3))
    >>> as_int_tuple(None, "reshape shape")
    Traceback (most recent call last):
    TypeError: reshape shape must be an int or a sequence of ints, not None
    """
    if type(values) is tuple and all(type(v) is int for v in values):
        return values  # (the common case first: a review measured the checks below)
    if is_int_scalar(values):
        return (as_int(values, what),)
    if isinstance(values, np.ndarray) and values.ndim > 1:
        raise LayoutError(f"{what} must be an int or a 1-D sequence, got shape {values.shape}")
    return tuple(as_int(v, what) for v in as_sequence(values, what))


def normalize_axis(axis: Any, ndim: int, what: str = "axis") -> int:
    """Map a possibly negative axis into ``range(ndim)``; out of range is a ``LayoutError``.

    >>> normalize_axis(-1, 3)
    2
    """
    ax = as_int(axis, what)
    if not -ndim <= ax < ndim:
        raise LayoutError(f"{what} {ax} is out of range for rank {ndim}")
    return ax + ndim if ax < 0 else ax


def normalize_axes(axes: Any, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """``normalize_axis`` for an int or a sequence; repeated axes are a ``LayoutError``,
    anything else than ints a ``TypeError`` naming ``what``.

    >>> normalize_axes(1.0, 2, "reverse axis")
    Traceback (most recent call last):
    TypeError: reverse axis must be an int or a sequence of ints, not 1.0
    """
    if is_int_scalar(axes):
        items: tuple[Any, ...] = (axes,)
    else:
        items = as_sequence(axes, what)
    result = tuple(normalize_axis(a, ndim, what) for a in items)
    if len(set(result)) != len(result):
        raise LayoutError(f"repeated {what} in {tuple(items)}")
    return result


def _plain_parts(
    shape: Any, strides: Any, offset: Any
) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The plain :class:`Layout` constructor's arguments as tuples of Python ints, checked
    (:func:`_checked_parts`; a ``TypeError`` for what is no integer)."""
    shp = as_int_tuple(shape, "Layout shape")
    std = as_int_tuple(strides, "Layout strides")
    off = as_int(offset, "Layout offset")
    _checked_parts(shp, std, off)
    return shp, std, off


def _checked_parts(shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> int:
    """The element count of a layout of these parts, after the checks every constructor
    makes (``LayoutError``): one rank, no negative length, stride or offset, a count int64
    holds."""
    if len(strides) != len(shape):
        raise LayoutError(f"strides {strides} do not match the rank of shape {shape}")
    if any(n < 0 for n in shape):
        raise LayoutError(f"shape {shape} has a negative length")
    if any(s < 0 for s in strides):
        axis = next(k for k, s in enumerate(strides) if s < 0)
        raise LayoutError(
            f"strides {strides} have a negative stride (axis {axis}); reversed views are not "
            "representable (use einstride.reverse)"
        )
    if offset < 0:
        raise LayoutError(f"offset {offset} is negative (shape {shape}, strides {strides})")
    return _checked_size(shape)


def _checked_size(shape: tuple[int, ...]) -> int:
    if 0 in shape:
        return 0
    size = 1
    for n in shape:
        size *= n
        if size >= 2**63:
            raise LayoutError(f"shape {shape} has more elements than int64 can count")
    return size


@dataclass(frozen=True, slots=True, eq=False)
class Layout:
    """A strided view: ``shape`` and ``strides`` (elements, ``>= 0``) and an element ``offset``.

    Build one with :meth:`create`, which validates and canonicalizes (a layout with no
    elements has all strides zero) and checks a storage's bounds.  The plain constructor
    checks what the algebra relies on -- tuples of ints of one rank, no negative length,
    stride or offset, a countable size -- and zeroes an empty layout's strides, as the spec
    asks of every constructor (a review: it took ``Layout((3,), (-1,), 2)``, whose overlap
    answers were wrong, and a rank mismatch that ``permute`` met as an ``IndexError``).

    >>> Layout((2, 3), (1,))
    Traceback (most recent call last):
    einstride.errors.LayoutError: strides (1,) do not match the rank of shape (2, 3)
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    def __post_init__(self) -> None:
        shape, strides, offset = self.shape, self.strides, self.offset
        if (
            type(shape) is tuple
            and type(strides) is tuple
            and type(offset) is int
            and len(shape) == len(strides)
            and all(type(n) is int and n >= 0 for n in shape)
            and all(type(s) is int and s >= 0 for s in strides)
            and offset >= 0
        ):
            if not _checked_size(shape) and any(strides):  # the spec: empty, all strides 0
                object.__setattr__(self, "strides", (0,) * len(shape))
            return
        shape, strides, offset = _plain_parts(shape, strides, offset)
        object.__setattr__(self, "shape", shape)  # (NumPy ints, lists: made plain)
        object.__setattr__(self, "strides", (0,) * len(shape) if 0 in shape else strides)
        object.__setattr__(self, "offset", offset)

    def __eq__(self, other: object) -> bool:
        """Equal shapes and offsets, and equal strides but on axes of length 1, whose
        strides are free (the spec: nothing may depend on them; a review found
        ``tensor([[1, 2]]).layout != as_tensor(np.array([[1, 2]])).layout``).

        >>> Layout.create((1, 2), (2, 1)) == Layout.create((1, 2), (0, 1))
        True
        """
        if not isinstance(other, Layout):
            return NotImplemented
        return (
            self.shape == other.shape
            and self.offset == other.offset
            and self._kept_strides() == other._kept_strides()
        )

    def __hash__(self) -> int:
        return hash((self.shape, self._kept_strides(), self.offset))

    def _kept_strides(self) -> tuple[int, ...]:
        return tuple(0 if n == 1 else s for n, s in zip(self.shape, self.strides))

    @classmethod
    def _derived(cls, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> Layout:
        """A layout the algebra below derives from a checked one (it stays inside its
        parent's extent): built without the constructor's checks, which cost a view op
        ~25% (``t.T`` 5.9 -> 7.5 us)."""
        layout = object.__new__(cls)
        object.__setattr__(layout, "shape", shape)
        object.__setattr__(layout, "strides", strides)
        object.__setattr__(layout, "offset", offset)
        return layout

    # -- construction -------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        shape: Any,
        strides: Any = None,
        offset: Any = 0,
        storage_size: int | None = None,
    ) -> Layout:
        """Validate and canonicalize; with ``storage_size``, every element must lie inside.

        >>> Layout.create((2, 0, 3), (5, 7, 1))
        (2,0,3):(0,0,0)+0
        >>> Layout.create((2, 2), (3, 1), storage_size=4)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        einstride.errors.LayoutError: shape (2, 2) ... reaches element 4, outside a storage ...
        """
        shp = as_int_tuple(shape, "length")
        std = row_major_strides(shp) if strides is None else as_int_tuple(strides, "stride")
        off = as_int(offset, "offset")
        size = _checked_parts(shp, std, off)
        if size == 0:
            std = (0,) * len(shp)
        layout = cls._derived(shp, std, off)  # (checked above)
        # (an integer like every length: NaN or 6.5 skipped the bounds check, a string
        # compared with an int, a review)
        size_given = None if storage_size is None else as_int(storage_size, "storage_size")
        if size_given is not None and size_given < 0:
            raise LayoutError(f"storage_size must be >= 0, got {size_given}")
        layout._check_bounds(size_given)
        return layout

    def _check_bounds(self, storage_size: int | None) -> None:
        last = self.offset + self.span
        where = f"shape {self.shape} with strides {self.strides} and offset {self.offset}"
        if last >= _MAX_ELEMENT_OFFSET:
            raise LayoutError(f"{where} reaches element {last}, beyond any addressable storage")
        if storage_size is None:
            return
        if self.size > 0 and last >= storage_size:
            raise LayoutError(
                f"{where} reaches element {last}, outside a storage of length {storage_size}"
            )
        if self.size == 0 and self.offset > storage_size:
            raise LayoutError(f"{where} starts past the end of a storage of length {storage_size}")

    # -- basic facts ----------------------------------------------------------------------

    def __repr__(self) -> str:
        shape = ",".join(map(str, self.shape)) + ("," if len(self.shape) == 1 else "")
        strides = ",".join(map(str, self.strides)) + ("," if len(self.strides) == 1 else "")
        return f"({shape}):({strides})+{self.offset}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of logical elements (overflow-checked at creation)."""
        return _checked_size(self.shape)

    @property
    def span(self) -> int:
        """Distance from the first to the last reachable element (0 when empty).

        >>> Layout.create((2, 3), (10, 2)).span
        14
        """
        if self.size == 0:
            return 0
        return sum((n - 1) * s for n, s in zip(self.shape, self.strides))

    @property
    def extent(self) -> tuple[int, int]:
        """Half-open storage range ``[lo, hi)`` holding every element (``lo == hi`` if empty).

        >>> Layout.create((2, 3), (10, 2), 1).extent
        (1, 16)
        """
        if self.size == 0:
            return (self.offset, self.offset)
        return (self.offset, self.offset + self.span + 1)

    @property
    def is_dense(self) -> bool:
        """Row-major contiguous without gaps; length-1 dimensions are ignored.

        >>> Layout.create((2, 3)).is_dense, Layout.create((3, 2), (1, 3)).is_dense
        (True, False)
        """
        return is_row_major(self.shape, self.strides)

    @property
    def has_repeated_locations(self) -> bool:
        """Whether two logical positions share a storage element (exact).

        >>> Layout.create((3, 2), (0, 1)).has_repeated_locations       # a broadcast
        True
        >>> Layout.create((3, 3), (1, 1)).has_repeated_locations       # sliding windows
        True
        >>> Layout.create((2, 2), (2, 3)).has_repeated_locations       # 0,2,3,5: distinct
        False
        """
        dims = sorted((s, n) for n, s in zip(self.shape, self.strides) if n > 1)
        if not dims or self.size == 0:
            return False
        if dims[0][0] == 0:
            return True
        reach = 0
        for s, n in dims:
            if s <= reach:
                return _solve_repeated(dims, self.size)
            reach += (n - 1) * s
        return False

    def offset_of(self, index: Sequence[int]) -> int:
        """Storage element of a logical index (no bounds check beyond rank).

        >>> Layout.create((2, 3), (3, 1), 2).offset_of((1, 2))
        7
        """
        items = as_int_tuple(index, "index")  # (sized first, ints: 0.5 gave 2.0, reviews)
        if len(items) != self.ndim:  # (zip's own ValueError named no layout: a review)
            raise LayoutError(f"index {items} has {len(items)} entries, not {self.ndim}")
        return self.offset + sum(i * s for i, s in zip(items, self.strides))

    # -- views ----------------------------------------------------------------------------

    def permute(self, perm: Sequence[int]) -> Layout:
        """Axes reordered: new axis ``k`` is old axis ``perm[k]``."""
        axes = normalize_axes(perm, self.ndim, "permutation axis")
        if len(axes) != self.ndim:
            # (the normalized axes: ``perm`` may be one int, or a generator spent above)
            raise LayoutError(f"permutation {tuple(axes)} does not name all {self.ndim} axes")
        return Layout._derived(
            tuple(self.shape[a] for a in axes), tuple(self.strides[a] for a in axes), self.offset
        )

    def broadcast_to(self, shape: Any) -> Layout:
        """NumPy broadcasting as zero strides; incompatible shapes are a ``LayoutError``.

        >>> Layout.create((3,)).broadcast_to((2, 3))
        (2,3):(0,1)+0
        """
        target = as_int_tuple(shape, "length")
        if any(n < 0 for n in target):
            raise LayoutError(f"cannot broadcast to {target}: negative length")
        lead = len(target) - self.ndim
        if lead < 0:
            raise LayoutError(f"cannot broadcast shape {self.shape} to fewer dimensions {target}")
        strides = [0] * lead
        for n, s, t in zip(self.shape, self.strides, target[lead:]):
            if n == t:
                strides.append(s)
            elif n == 1:
                strides.append(0)
            else:
                raise LayoutError(f"cannot broadcast shape {self.shape} to {target}")
        return Layout.create(target, strides, self.offset)

    def diagonal(self, axes: Sequence[int], what: str = "axis") -> Layout:
        """Merge equal-length ``axes`` into one diagonal axis (a stride sum) placed where the
        first of them (in axis order) was; ``what`` names ``axes`` in errors.

        >>> Layout.create((2, 3, 2)).diagonal((0, 2))
        (2,3):(7,2)+0
        """
        picked = sorted(normalize_axes(axes, self.ndim, what))
        if not picked:
            raise LayoutError("diagonal needs at least one axis")
        lengths = {self.shape[a] for a in picked}
        if len(lengths) != 1:
            raise LayoutError(
                f"diagonal axes {tuple(picked)} of shape {self.shape} have different lengths"
            )
        stride = sum(self.strides[a] for a in picked)
        shape, strides = [], []
        for axis, (n, s) in enumerate(zip(self.shape, self.strides)):
            if axis == picked[0]:
                shape.append(n)
                strides.append(stride)
            elif axis not in picked:
                shape.append(n)
                strides.append(s)
        return Layout.create(shape, strides, self.offset)

    def slice(self, axis: int, start: Any = None, stop: Any = None, step: Any = None) -> Layout:
        """Python slice semantics on one axis; a negative step is a ``LayoutError``.

        >>> Layout.create((10,)).slice(0, 1, None, 3)
        (3,):(3,)+1
        """
        ax = normalize_axis(axis, self.ndim)
        if step is not None and as_int(step, "step") < 0:
            raise LayoutError(
                f"slice step {step} on axis {ax} of shape {self.shape}: a negative step would "
                "need a negative stride; use einstride.reverse"
            )
        if step is not None and as_int(step, "step") == 0:
            raise LayoutError(f"slice step cannot be zero (axis {ax} of shape {self.shape})")
        begin, end, stride = slice(start, stop, step).indices(self.shape[ax])
        length = max(0, (end - begin + stride - 1) // stride)
        shape = self.shape[:ax] + (length,) + self.shape[ax + 1 :]
        strides = self.strides[:ax] + (self.strides[ax] * stride,) + self.strides[ax + 1 :]
        offset = self.offset + (begin * self.strides[ax] if length else 0)
        return Layout.create(shape, strides, offset)

    def index(self, key: Any) -> Layout:
        """NumPy basic indexing (ints, slices with non-negative steps, ``...``, ``None``).

        >>> Layout.create((4, 5)).index((1, slice(None, None, 2)))
        (3,):(2,)+5
        """
        keys = key if isinstance(key, tuple) else (key,)
        consumed = sum(1 for k in keys if k is not None and k is not Ellipsis)
        if sum(1 for k in keys if k is Ellipsis) > 1:
            raise LayoutError("an index can only have a single ellipsis ('...')")
        if consumed > self.ndim:
            raise LayoutError(f"too many indices ({consumed}) for rank {self.ndim}")
        expanded: list[Any] = []
        for k in keys:
            if k is Ellipsis:
                expanded.extend([slice(None)] * (self.ndim - consumed))
            else:
                expanded.append(k)
        if not any(k is Ellipsis for k in keys):
            expanded.extend([slice(None)] * (self.ndim - consumed))
        return self._apply_index(expanded)

    def _apply_index(self, keys: list[Any]) -> Layout:
        shape: list[int] = []
        strides: list[int] = []
        offset = self.offset
        axis = 0
        for k in keys:
            if k is None:
                shape.append(1)
                strides.append(0)
                continue
            n, s = self.shape[axis], self.strides[axis]
            if isinstance(k, slice):
                if k.step is not None and as_int(k.step, "step") <= 0:
                    self.slice(axis, k.start, k.stop, k.step)  # (its error names this axis)
                sub = Layout._derived((n,), (s,), 0).slice(0, k.start, k.stop, k.step)
                shape.append(sub.shape[0])
                strides.append(sub.strides[0])
                offset += sub.offset
            else:
                i = as_int(k, "index")
                if not -n <= i < n:
                    raise LayoutError(f"index {i} is out of range for axis {axis} of length {n}")
                offset += (i + n if i < 0 else i) * s
            axis += 1
        return Layout.create(shape, strides, offset)

    def expand(self, axis: int) -> Layout:
        """Insert a length-1 axis at ``axis`` (in ``[-(ndim+1), ndim]``).

        >>> Layout.create((2, 3)).expand(-1)
        (2,3,1):(3,1,0)+0
        """
        ax = normalize_axis(axis, self.ndim + 1)
        return Layout._derived(
            self.shape[:ax] + (1,) + self.shape[ax:],
            self.strides[:ax] + (0,) + self.strides[ax:],
            self.offset,
        )

    def squeeze(self, axes: Any = None, what: str = "axis") -> Layout:
        """Remove length-1 axes (all of them, or the named ones, which must have length 1);
        ``what`` names ``axes`` in errors.

        >>> Layout.create((1, 2, 1)).squeeze()
        (2,):(1,)+0
        """
        if axes is None:
            drop = {a for a, n in enumerate(self.shape) if n == 1}
        else:
            drop = set(normalize_axes(axes, self.ndim, what))
            bad = [a for a in sorted(drop) if self.shape[a] != 1]
            if bad:
                raise LayoutError(f"cannot squeeze axis {bad[0]} of length {self.shape[bad[0]]}")
        keep = [a for a in range(self.ndim) if a not in drop]
        return Layout._derived(
            tuple(self.shape[a] for a in keep), tuple(self.strides[a] for a in keep), self.offset
        )

    def split(self, axis: int, sizes: Sequence[int]) -> tuple[Layout, ...]:
        """Consecutive views of the given lengths along ``axis``; they must sum to its length.

        >>> Layout.create((5, 2)).split(0, (2, 3))
        ((2,2):(2,1)+0, (3,2):(2,1)+4)
        """
        ax = normalize_axis(axis, self.ndim)
        lengths = as_int_tuple(sizes, "split size")
        check_views(len(lengths), "split")
        if any(n < 0 for n in lengths) or sum(lengths) != self.shape[ax]:
            raise LayoutError(
                f"split sizes {lengths} must be >= 0 and sum to {self.shape[ax]} (axis {ax})"
            )
        parts = []
        start = 0
        for n in lengths:
            parts.append(self.slice(ax, start, start + n))
            start += n
        return tuple(parts)

    def reshape(self, shape: Any) -> Layout | None:
        """The same elements in row-major order under a new shape, or ``None`` if that needs a
        copy.  One ``-1`` is inferred.

        >>> Layout.create((4, 6)).slice(1, 0, 3).reshape((2, 2, 3))
        (2,2,3):(12,6,1)+0
        >>> Layout.create((4, 6)).slice(1, 0, 3).reshape((12,)) is None
        True
        """
        target = infer_shape(shape, self.size)
        if self.size == 0:
            return Layout.create(target, None, self.offset)
        old = [(n, s) for n, s in zip(self.shape, self.strides) if n != 1]
        new_strides = _nocopy_strides(old, target)
        if new_strides is None:
            return None
        return Layout.create(target, new_strides, self.offset)

    def coalesce(self) -> Layout:
        """The fewest axes with the same element order: length-1 axes dropped, and axes merged
        where the outer stride equals the inner stride times the inner length.

        >>> Layout.create((2, 3, 4)).coalesce()
        (24,):(1,)+0
        >>> Layout.create((2, 1, 3), (6, 9, 2)).coalesce()
        (6,):(2,)+0
        """
        if self.size == 0:
            return Layout._derived((0,), (0,), self.offset)
        shape: list[int] = []
        strides: list[int] = []
        for n, s in zip(self.shape, self.strides):
            if n == 1:
                continue
            if shape and strides[-1] == s * n:
                shape[-1] *= n
                strides[-1] = s
            else:
                shape.append(n)
                strides.append(s)
        return Layout._derived(tuple(shape), tuple(strides), self.offset)

    def squeezed_key(self) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """(shape, strides, offset) with length-1 axes dropped: equal keys = the same mapping."""
        if self.size == 0:
            return (tuple(n for n in self.shape if n != 1), (), 0)
        pairs = [(n, s) for n, s in zip(self.shape, self.strides) if n != 1]
        return (tuple(n for n, _ in pairs), tuple(s for _, s in pairs), self.offset)

    def same_view(self, other: Layout) -> bool:
        """Identical logical-index -> storage-offset mappings (length-1 axes ignored).

        >>> Layout.create((1, 3), (0, 1)).same_view(Layout.create((3,)))
        True
        """
        _check_layout(other, "same_view")
        return self.squeezed_key() == other.squeezed_key()

    def overlaps(self, other: Layout) -> bool:
        """Whether the two views (on one storage) share at least one element: exact, but
        for views past what NumPy's solver can describe (its probes of more than 64 axes or
        2**63 elements, a review), which count as overlapping.

        >>> evens, odds = Layout.create((3,), (2,)), Layout.create((3,), (2,), 1)
        >>> evens.overlaps(odds), evens.overlaps(Layout.create((1,), (1,), 4))
        (False, True)
        >>> Layout.create((2**62,), (0,)).overlaps(Layout.create((1,)))
        True
        """
        _check_layout(other, "overlaps")
        if self.size == 0 or other.size == 0:
            return False
        lo1, hi1 = self.extent
        lo2, hi2 = other.extent
        if hi1 <= lo2 or hi2 <= lo1:
            return False
        base = min(self.offset, other.offset)  # (one probe at offset 0: no doubled axis)
        first, second = _probe(self, self.offset - base), _probe(other, other.offset - base)
        if first is None or second is None:
            return True
        return shares_memory(first, second)


def _check_layout(other: Any, method: str) -> None:
    """The other operand of a two-layout question must be a Layout (``TypeError``).

    >>> Layout.create((2,)).overlaps(5)
    Traceback (most recent call last):
    TypeError: Layout.overlaps: the other operand must be a Layout, not int
    """
    if not isinstance(other, Layout):
        raise TypeError(
            f"Layout.{method}: the other operand must be a Layout, not {type(other).__name__}"
        )


def infer_shape(shape: Any, size: int) -> tuple[int, ...]:
    """Resolve one ``-1`` in ``shape`` against ``size``; a count mismatch is a ``LayoutError``.

    >>> infer_shape((2, -1), 6)
    (2, 3)
    """
    target = list(as_int_tuple(shape, "length"))
    unknown = [i for i, n in enumerate(target) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in target):
        raise LayoutError(f"invalid shape {tuple(target)}: at most one -1 and no other negatives")
    if unknown:
        known = _checked_size(tuple(n for n in target if n != -1))
        if known == 0 or size % known:
            raise LayoutError(f"cannot infer -1 in shape {tuple(target)} for {size} elements")
        target[unknown[0]] = size // known
    result = tuple(target)
    if _checked_size(result) != size:
        raise LayoutError(f"cannot reshape {size} elements into shape {result}")
    return result


def _nocopy_strides(old: list[tuple[int, int]], target: tuple[int, ...]) -> list[int] | None:
    """NumPy's no-copy reshape: match groups of old and new axes with equal products; each old
    group must be contiguous in its own order.  ``old`` has no length-1 axes."""
    strides = [0] * len(target)
    oi, ni = 0, 0
    while ni < len(target) and target[ni] == 1:
        ni += 1
    while oi < len(old) or ni < len(target):
        if ni < len(target) and target[ni] == 1:
            ni += 1
            continue
        if oi >= len(old) or ni >= len(target):
            return None
        oj, nj = oi + 1, ni + 1
        op, np_ = old[oi][0], target[ni]
        while op != np_:
            if op < np_:
                if oj >= len(old):
                    return None
                op *= old[oj][0]
                oj += 1
            else:
                if nj >= len(target):
                    return None
                np_ *= target[nj]
                nj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][1] * old[k + 1][0]:
                return None
        step = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            strides[k] = step
            step *= target[k]
        oi, ni = oj, nj
    return strides


def _probe(layout: Layout, offset: int) -> np.ndarray[Any, Any] | None:
    """A read-only byte-per-element ndarray with ``layout``'s addresses shifted to
    ``offset``, for NumPy's overlap solver; None where NumPy cannot describe it.  It is never
    read: ``np.shares_memory`` only does arithmetic on its bounds and strides, so a one-byte
    base stands in for a storage of any size.  The axes that move no element (length 1,
    whose stride is free, or stride 0) are left out: the same addresses, in fewer axes and
    elements (a review found a broadcast of 2**62 and 64 axes of length 1 past NumPy's
    limits)."""
    moving = [(n, s) for n, s in zip(layout.shape, layout.strides) if n > 1 and s != 0]
    shape, strides = tuple(n for n, _ in moving), tuple(s for _, s in moving)
    try:
        if offset == 0:
            return np.lib.stride_tricks.as_strided(_PROBE_BASE, shape, strides, writeable=False)
        full = np.lib.stride_tricks.as_strided(
            _PROBE_BASE, shape=(2, *shape), strides=(offset, *strides), writeable=False
        )
    except ValueError:  # past 64 axes or 2**63 elements
        return None
    probe: np.ndarray[Any, Any] = full[1, ...]  # ``...`` keeps a rank-0 probe a view
    return probe


def _solve_repeated(dims: list[tuple[int, int]], size: int) -> bool:
    """Exact repeated-location test for (stride, length) pairs, all lengths > 1, of a view
    of ``size`` elements.

    Positions ``i != j`` first differ on some axis ``k`` (taken in stride order); with
    ``j_k > i_k`` they collide iff ``d*s_k + sum_{l>k} i_l s_l == sum_{l>k} j_l s_l`` for some
    ``d in [1, n_k - 1]`` -- an overlap question between two views, which NumPy solves exactly
    within its bound of work (:mod:`.overlap`); past it, the view's sorted addresses answer
    (or, too many to list, the safe side: repeating).
    """
    for k in range(len(dims) - 1):
        s_k, n_k = dims[k]
        rest = dims[k + 1 :]
        shifted = Layout._derived(
            (n_k - 1,) + tuple(n for _, n in rest), (s_k,) + tuple(s for s, _ in rest), s_k
        )
        plain = Layout._derived(tuple(n for _, n in rest), tuple(s for s, _ in rest), 0)
        first, second = _probe(shifted, s_k), _probe(plain, 0)
        if first is None or second is None:
            return True  # past what NumPy can describe: the safe side, as overlaps()
        found = solved(first, second)
        if found is None:
            return repeats_listed(dims, size)
        if found:
            return True
    return False
