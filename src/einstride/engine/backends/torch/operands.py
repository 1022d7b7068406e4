"""The operands of a torch einsum: converted, on one device, and ``out=`` checked.

Torch operands are used as they are (strided tensors; a conjugate or negative view is
resolved first).  Everything else -- NumPy arrays, einstride Tensors, scalars, lists -- goes
through ``torch.as_tensor`` onto the torch operands' device.  ``out=`` must be a strided
tensor on that device that shares no byte with an operand: the overlap test is exact (the
one the NumPy path uses, on byte addresses and strides), and it runs before anything is
written.

>>> import numpy as np, torch
>>> tensors, device = as_tensors([torch.ones(2, 3), np.arange(3.0)])
>>> [t.dtype for t in tensors], device
([torch.float32, torch.float64], device(type='cpu'))
>>> base = torch.zeros(4, 4)
>>> overlaps(base[::2], base[1::2]), overlaps(base[:, 1], base.T[1])
(False, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ....errors import EinsumError, EinsumTypeError, LayoutError
from ....footprint import Footprint
from ....layout import Layout
from ....narrow import is_bfloat16, is_small_float
from ....tensors import Tensor, writeable_array
from ...spec.dtypes import rounds_into
from ...spec.equation import quoted
from .dtypes import numpy_dtype, result_dtype, torch_dtype

__all__ = [
    "Facts",
    "as_tensors",
    "byte_strides",
    "check_out",
    "facts_of",
    "overlaps",
    "rounded_tensors",
]

Facts = tuple[Any, ...]
"""``(shape, element strides, torch dtype)`` of every operand, flattened: a cache key."""


def rounded_tensors(
    tensors: Sequence[torch.Tensor], dtype: np.dtype[Any] | None
) -> list[torch.Tensor]:
    """The operands cast to a small-float ``dtype=`` where that cast rounds, as NumPy casts
    them (the NumPy backend's :func:`~..numpy.backend.rounded_to`): the products run in
    float32, where a float64 operand would keep digits that the ``dtype=`` cast drops.

    >>> [t.dtype for t in rounded_tensors([torch.ones(2, dtype=torch.float64)], np.dtype("f2"))]
    [torch.float16]
    """
    if dtype is None or not is_small_float(dtype):
        return list(tensors)
    target = torch_dtype(dtype, "dtype=")
    return [
        t.to(target) if rounds_into(numpy_dtype(t.dtype, f"operand {i} has dtype"), dtype) else t
        for i, t in enumerate(tensors)
    ]


def as_tensors(raw: Sequence[Any]) -> tuple[list[torch.Tensor], torch.device]:
    """Every operand as a strided tensor on the torch operands' one device (``TypeError``
    when they are on several, or an operand cannot be converted)."""
    device = _device_of(raw)
    tensors = []
    for i, x in enumerate(raw):
        if isinstance(x, torch.Tensor):
            tensors.append(_plain(x, f"operand {i}"))
        else:
            tensors.append(_converted(x, device, i))
    if any(_is_number(x) for x in raw):
        tensors = _wrapped_numbers(raw, tensors)
    return tensors, device


def _is_number(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _wrapped_numbers(raw: Sequence[Any], tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Python numbers in the dtype torch gives a "wrapped number" next to the other
    operands: the least of its kind, so ``float16`` 0-dim tensor times ``3.0`` is float16,
    not float32 (a review: converted as 0-dim tensors of the default dtype, they outranked
    the 0-dim tensors)."""
    others = [(t.dtype, t.dim()) for x, t in zip(raw, tensors) if not _is_number(x)]
    if not others:
        return tensors
    rest = torch.empty((), dtype=result_dtype(others))
    return [t.to(torch.result_type(rest, x)) if _is_number(x) else t for x, t in zip(raw, tensors)]


def _device_of(raw: Sequence[Any]) -> torch.device:
    devices = {x.device for x in raw if isinstance(x, torch.Tensor)}
    if len(devices) > 1:
        where = ", ".join(
            f"operand {i} on {x.device}" for i, x in enumerate(raw) if isinstance(x, torch.Tensor)
        )
        raise EinsumTypeError(
            f"einsum: the torch operands are on different devices ({where}); "
            "move them to one device first"
        )
    return devices.pop() if devices else torch.device("cpu")


def _plain(x: torch.Tensor, what: str) -> torch.Tensor:
    """A strided tensor whose memory holds its values (conjugate/negative views resolved)."""
    if x.layout != torch.strided:
        raise EinsumTypeError(
            f"einsum: {what} is a {x.layout} torch tensor; the torch backend "
            "takes strided (dense) tensors (call .to_dense() first)"
        )
    if x.is_nested:  # its layout says strided, but it has no sizes (a review: torch's crash)
        raise EinsumTypeError(
            f"einsum: {what} is a nested torch tensor; the torch backend takes strided "
            "tensors of one shape (call .to_padded_tensor(0.0) first)"
        )
    if x.is_conj() or x.is_neg():
        return x.resolve_conj().resolve_neg()
    return x


def _converted(x: Any, device: torch.device, i: int) -> torch.Tensor:
    """``torch.as_tensor`` onto ``device``; NumPy views torch cannot take (negative
    strides, ml_dtypes' bfloat16) are handled first."""
    if isinstance(x, Tensor):
        # writeable where its storage is, as torch's tensors are (numpy() of repeated
        # locations is read-only, and torch warned on it: a review)
        x = writeable_array(x)
    try:
        if isinstance(x, np.ndarray):
            return _from_numpy(x, device)
        return torch.as_tensor(x, device=device)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise EinsumTypeError(
            f"einsum: operand {i} ({type(x).__name__}) cannot be converted to a torch tensor: {exc}"
        ) from None


def _from_numpy(x: np.ndarray[Any, Any], device: torch.device) -> torch.Tensor:
    if any(s < 0 for s in x.strides):
        x = x.copy()  # torch has no negative strides
    if not x.dtype.isnative:  # nor another byte order (a review: torch.as_tensor refused it)
        x = x.astype(x.dtype.newbyteorder("="))
    if is_bfloat16(x.dtype):
        return torch.as_tensor(x.view(np.int16), device=device).view(torch.bfloat16)
    return torch.as_tensor(x, device=device)


def facts_of(tensors: Sequence[torch.Tensor]) -> Facts:
    """The layout part of a plan-cache key (element strides: the dtype gives the bytes)."""
    facts: list[Any] = []
    for t in tensors:
        facts += (t.shape, t.stride(), t.dtype)
    return tuple(facts)


def byte_strides(strides: Sequence[int], dtype: torch.dtype) -> tuple[int, ...]:
    """Element strides in bytes, as the planner (and NumPy) count them.

    >>> byte_strides((3, 1), torch.float64)
    (24, 8)
    """
    size = dtype.itemsize
    return tuple([s * size for s in strides])


def _footprint(t: torch.Tensor) -> Footprint:
    """Where ``t``'s elements live: the address of element 0 and byte strides."""
    return Footprint(
        shape=tuple(t.shape),
        strides=byte_strides(t.stride(), t.dtype),
        itemsize=t.element_size(),
        address=t.data_ptr(),
    )


def _byte_layout(t: torch.Tensor, base: int) -> Layout:
    """``t``'s bytes as a layout over memory from address ``base`` (each element widened
    into an axis of ``element_size`` one-byte positions, as ``Footprint`` does)."""
    return Layout(
        (*t.shape, t.element_size()),
        (*byte_strides(t.stride(), t.dtype), 1),
        t.data_ptr() - base,
    )


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors share at least one byte of memory: exact, by the overlap test the
    NumPy side uses (``Layout.overlaps``) on their byte addresses and strides, for tensors
    of one storage or of two storages whose memory meets (``torch.from_numpy`` of two views
    of one array)."""
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a_lo, b_lo = sa.data_ptr(), sb.data_ptr()
    if a_lo + sa.nbytes() <= b_lo or b_lo + sb.nbytes() <= a_lo:
        return False
    base = min(a.data_ptr(), b.data_ptr())  # torch strides are >= 0: offsets are too
    return _byte_layout(a, base).overlaps(_byte_layout(b, base))


def check_out(
    out: Any,
    tensors: Sequence[torch.Tensor],
    device: torch.device,
    result: torch.dtype,
    shape: tuple[int, ...],
    text: str,
    originals: Sequence[Any] = (),
    casting: Any = None,
) -> torch.Tensor:
    """``out=`` checked before anything is written: a strided tensor on ``device`` of the
    result's ``shape``, able to hold ``result`` values (torch's ``can_cast``, or NumPy's
    ``casting=`` rule when one is given), with distinct
    locations, sharing no memory with any operand (``tensors``, and the ``originals`` they
    were converted from)."""
    if not isinstance(out, torch.Tensor):
        raise EinsumTypeError(
            f"einsum {quoted(text)}: out= must be a torch.Tensor with torch operands, "
            f"not {type(out).__name__}"
        )
    if out.layout != torch.strided or out.is_conj() or out.is_neg():
        raise EinsumTypeError(
            f"einsum {quoted(text)}: out= must be a strided tensor whose memory holds "
            "its values (not sparse, not a conjugate or negative view)"
        )
    if out.device != device:
        raise EinsumTypeError(
            f"einsum {quoted(text)}: out= is on {out.device}, the operands on {device}"
        )
    if tuple(out.shape) != shape:
        raise EinsumError(
            f"einsum {quoted(text)}: out= has shape {tuple(out.shape)}, but the result has "
            f"shape {shape}"
        )
    held = numpy_dtype(out.dtype, "out= has dtype")
    if casting is None:  # torch's rule (as its out= takes)
        fits = torch.can_cast(result, out.dtype)
    else:  # the rule asked for, NumPy's
        fits = bool(np.can_cast(numpy_dtype(result, "the result has dtype"), held, casting))
    if not fits:
        raise EinsumTypeError(
            f"einsum {quoted(text)}: out= has dtype {out.dtype}, which cannot hold {result} values"
            + ("" if casting is None else f" by the rule casting={casting!r}")
        )
    if _footprint(out).has_repeated_locations:
        raise LayoutError(
            f"einsum {quoted(text)}: out= (shape {tuple(out.shape)}, strides "
            f"{out.stride()}) has repeated locations and cannot hold distinct "
            "values"
        )
    for i, t in enumerate(tensors):
        memory = _memory_of(originals[i]) if i < len(originals) else None
        if overlaps(out, t) or (memory is not None and memory is not t and overlaps(out, memory)):
            raise LayoutError(
                f"einsum {quoted(text)}: out= overlaps operand {i}; pass a tensor that "
                "shares no memory with the operands"
            )
    return out


def _memory_of(x: Any) -> torch.Tensor | None:
    """A tensor over the bytes operand ``x`` reads, before it was converted (a conjugate or
    negative view resolved, a NumPy view of negative strides copied: the converted tensor's
    memory is not the operand's, and a review found ``out=`` overlapping such operands
    written in place).  For the overlap check only; None for anything else."""
    if isinstance(x, torch.Tensor):
        return x if x.layout == torch.strided and not x.is_nested else None
    if isinstance(x, Tensor):
        x = writeable_array(x)  # (for the overlap check only: torch.from_numpy warned)
    if not isinstance(x, np.ndarray) or not x.size:
        return None
    flipped = tuple(ax for ax, stride in enumerate(x.strides) if stride < 0)
    if flipped:
        x = np.flip(x, flipped)  # the same bytes, strides >= 0
    x = x.view(np.int16) if is_bfloat16(x.dtype) else x
    try:
        return torch.from_numpy(x)
    except (TypeError, ValueError, RuntimeError):
        return None
