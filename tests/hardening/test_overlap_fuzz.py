"""Overlap fuzzing for every operation with a destination: random views over ONE buffer --
NumPy views of any byte geometry (negative, zero and non-item strides, unaligned, the same
bytes read as another dtype) and Tensors wrapping them -- either give the snapshot semantics
(the result NumPy computes from copies of the inputs) or raise before writing (the buffer
is byte-for-byte unchanged).  A destination that overlaps nothing it reads and holds distinct
elements must succeed.

tests/test_transfer.py and tests/test_elementwise.py check the spec's exact verdicts on
element-strided Tensor views; these tests add byte-level geometry, every element-wise
function, ``stack``/``concat`` and einsum ``out=``.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from fuzzing import BINARY, UNARY, scaled
from hypothesis import event, given
from hypothesis import strategies as st

import einstride as es
from einstride import EinsumError, LayoutError

BUF_BYTES = 160
ALLOWED = (LayoutError, EinsumError, TypeError, ValueError)


@dataclass(frozen=True)
class Geometry:
    """A view of the shared buffer: dtype, shape, byte strides, byte offset."""

    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    def on(self, buffer: np.ndarray) -> np.ndarray:
        return np.ndarray(self.shape, self.dtype, buffer, self.offset, self.strides)

    def element_bytes(self) -> list[set[int]]:
        """The bytes of each element, by brute force over every index."""
        item = self.dtype.itemsize
        return [
            set(range(start, start + item))
            for index in itertools.product(*(range(n) for n in self.shape))
            for start in [self.offset + sum(i * s for i, s in zip(index, self.strides))]
        ]

    def touched(self) -> set[int]:
        return set().union(*self.element_bytes())

    def distinct(self) -> bool:
        """No two elements share a byte."""
        elements = self.element_bytes()
        return sum(map(len, elements)) == len(set().union(*elements))


def fits(shape: tuple[int, ...], strides: tuple[int, ...], item: int) -> tuple[int, int] | None:
    """(lowest, highest) byte reached relative to the offset, if it fits the buffer."""
    if 0 in shape:
        return (0, 0)
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + item
    return (low, high) if high - low <= BUF_BYTES else None


@st.composite
def geometries(draw: st.DrawFn, shape: tuple[int, ...], dtypes: Sequence[Any]) -> Geometry:
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    item = dtype.itemsize
    steps = [k * item for k in (-2, -1, 0, 1, 1, 1, 2, 3)]
    odd = draw(st.booleans()) and len(dtypes) > 1
    choices = steps + ([1, 3, item + 1] if odd else [])
    strides = tuple(draw(st.sampled_from(choices)) for _ in shape)
    if draw(st.booleans()):  # dense row-major, to reach the dense overlap rules often
        strides = tuple(int(np.prod(shape[k + 1 :])) * item for k in range(len(shape)))
    bounds = fits(shape, strides, item)
    if bounds is None:
        strides = (0,) * len(shape)
        bounds = (0, item if 0 not in shape else 0)
    low, high = bounds
    step = 1 if odd else item
    offset = draw(st.integers(-low // step, (BUF_BYTES - high) // step)) * step
    return Geometry(dtype, shape, strides, offset)


@st.composite
def sibling(
    draw: st.DrawFn, base: Geometry, shape: tuple[int, ...], exact: bool = False
) -> Geometry:
    """A geometry near ``base`` (so they often overlap), or an unrelated one.  ``exact``:
    the same dtype on the same element grid (values stay what they were written as)."""
    if shape == base.shape and draw(st.booleans()):
        item = base.dtype.itemsize
        shift = draw(st.sampled_from([0, 0, item, -item] + ([] if exact else [1])))
        reread = not exact and item in (4, 8)
        other = [np.dtype(f"{'f' if base.dtype.kind != 'f' else 'i'}{item}")] if reread else []
        dtype = draw(st.sampled_from([base.dtype, base.dtype, *other]))
        moved = Geometry(dtype, shape, base.strides, base.offset + shift)
        bounds = fits(shape, base.strides, dtype.itemsize)
        if bounds and moved.offset + bounds[0] >= 0 and moved.offset + bounds[1] <= BUF_BYTES:
            return moved
    return draw(geometries(shape, [base.dtype]))


def shared_buffer(draw: st.DrawFn, numeric: bool) -> np.ndarray:
    if numeric:  # small integers in float64 slots: every sum is exact
        values = np.array(
            draw(st.lists(st.integers(0, 4), min_size=BUF_BYTES // 8, max_size=BUF_BYTES // 8)),
            np.float64,
        )
        return values.view(np.uint8).copy()
    return np.frombuffer(draw(st.binary(min_size=BUF_BYTES, max_size=BUF_BYTES)), np.uint8).copy()


def wrap(draw: st.DrawFn, view: np.ndarray) -> Any:
    """The view itself, or a Tensor over the same memory (when one can describe it)."""
    if draw(st.booleans()):
        tensor = es.as_tensor(view)
        if view.size == 0 or np.shares_memory(tensor.numpy(), view):
            return tensor
    return view


def check(
    buffer: np.ndarray,
    dst: Geometry,
    sources: Sequence[Geometry],
    action: Callable[[], Any],
    reference: Callable[[np.ndarray], None],
    must_succeed: bool,
) -> None:
    """Run ``action``; compare the buffer with ``reference`` applied to a snapshot."""
    expected = buffer.copy()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        reference(dst.on(expected))
        before = buffer.copy()
        overlapping = any(s.touched() & dst.touched() for s in sources)
        try:
            action()
        except ALLOWED as error:
            event(f"raised ({'overlap' if overlapping else 'no overlap'})")
            assert buffer.tobytes() == before.tobytes(), f"written before raising {error!r}"
            if must_succeed:
                overlaps = [s.touched() & dst.touched() for s in sources]
                raise AssertionError(f"{error!r} without an overlap {overlaps}") from error
            return
    event(f"written ({'overlap' if overlapping else 'no overlap'})")
    assert buffer.tobytes() == expected.tobytes()


def independent(dst: Geometry, sources: Sequence[Geometry]) -> bool:
    """A destination the rules must accept: distinct elements, no byte read by a source."""
    written = dst.touched()
    return dst.distinct() and not any(s.touched() & written for s in sources)


shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)
BYTE_DTYPES = [np.int64, np.float64, np.int32, np.float32, np.uint8, np.int16]


# -- the copy family, byte-level -----------------------------------------------------------------


def _copy(s: np.ndarray, d: np.ndarray) -> None:
    np.copyto(d, s, casting="unsafe")


def _flatten(s: np.ndarray, d: np.ndarray) -> None:
    np.copyto(d[: s.size], s.reshape(-1), casting="unsafe")


def _resize(s: np.ndarray, d: np.ndarray) -> None:
    filled = np.zeros(d.size, d.dtype)
    count = min(s.size, d.size)
    filled[:count] = s.reshape(-1)[:count]
    np.copyto(d, filled.reshape(d.shape))


@st.composite
def copy_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    op = draw(
        st.sampled_from(
            ["copy_to", "try_copy_to", "flatten_to", "try_flatten_to", "resize_to", "reverse"]
        )
    )
    src_shape = draw(shapes)
    if op in ("flatten_to", "try_flatten_to"):
        dst_shape: tuple[int, ...] = (int(np.prod(src_shape)) + draw(st.integers(0, 2)),)
    elif op == "resize_to":
        dst_shape = draw(shapes)
    else:
        dst_shape = src_shape
    src = draw(geometries(src_shape, BYTE_DTYPES))
    dst = draw(sibling(src, dst_shape))
    axes = tuple(
        draw(
            st.lists(
                st.integers(0, max(len(src_shape) - 1, 0)), unique=True, max_size=len(src_shape)
            )
        )
    )
    return op, src, dst, axes, shared_buffer(draw, numeric=False), draw(st.data())


@scaled(300)
@given(copy_cases())
def test_copy_family_on_byte_level_views(case):
    op, src, dst, axes, buffer, data = case
    s = wrap(data.draw, src.on(buffer))
    d = wrap(data.draw, dst.on(buffer))
    snapshot = np.array(src.on(buffer))
    calls = {
        "copy_to": (lambda: es.copy_to(s, d), lambda out: _copy(snapshot, out)),
        "try_copy_to": (lambda: es.try_copy_to(s, d), lambda out: _copy(snapshot, out)),
        "flatten_to": (lambda: es.flatten_to(s, d), lambda out: _flatten(snapshot, out)),
        "try_flatten_to": (lambda: es.try_flatten_to(s, d), lambda out: _flatten(snapshot, out)),
        "resize_to": (lambda: es.resize_to(s, d), lambda out: _resize(snapshot, out)),
        "reverse": (
            lambda: es.reverse(s, axes, out=d),
            lambda out: _copy(np.flip(snapshot, axes), out),
        ),
    }
    action, reference = calls[op]
    written = dst
    if op in ("flatten_to", "try_flatten_to"):  # only the head is written
        written = Geometry(dst.dtype, (src.on(buffer).size,), dst.strides, dst.offset)
    check(buffer, written, [src], action, reference, independent(written, [src]))


# -- stack / concat out=, byte-level ----------------------------------------------------------------


@st.composite
def join_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    op = draw(st.sampled_from(["stack", "concat"]))
    rank = draw(st.integers(0 if op == "stack" else 1, 2))
    axis = draw(st.integers(0, rank if op == "stack" else rank - 1))
    shape = tuple(draw(st.integers(0, 2)) for _ in range(rank))
    inputs = []
    for _ in range(draw(st.integers(1, 3))):
        part = shape
        if op == "concat":
            part = shape[:axis] + (draw(st.integers(0, 2)),) + shape[axis + 1 :]
        inputs.append(draw(geometries(part, BYTE_DTYPES)))
    lengths = [g.shape[axis] for g in inputs] if op == "concat" else [len(inputs)]
    out_shape = (
        shape[:axis] + (sum(lengths),) + shape[axis + 1 :]
        if op == "concat"
        else shape[:axis] + (len(inputs),) + shape[axis:]
    )
    out = draw(
        sibling(inputs[0], out_shape)
        if inputs[0].shape == out_shape
        else geometries(out_shape, BYTE_DTYPES)
    )
    return op, axis, inputs, out, shared_buffer(draw, numeric=False), draw(st.data())


@scaled(150)
@given(join_cases())
def test_stack_and_concat_out_on_byte_level_views(case):
    op, axis, inputs, out, buffer, data = case
    views = [wrap(data.draw, g.on(buffer)) for g in inputs]
    d = wrap(data.draw, out.on(buffer))
    snapshots = [np.array(g.on(buffer)) for g in inputs]
    function = es.stack if op == "stack" else es.concat

    def reference(target: np.ndarray) -> None:
        start = 0
        for i, snap in enumerate(snapshots):
            if op == "stack":
                target[(slice(None),) * axis + (i,)] = snap
            else:
                target[(slice(None),) * axis + (slice(start, start + snap.shape[axis]),)] = snap
                start += snap.shape[axis]

    castable = np.can_cast(np.result_type(*snapshots), out.dtype, "same_kind")
    check(
        buffer,
        out,
        inputs,
        lambda: function(views, axis=axis, out=d),
        reference,
        castable and independent(out, inputs),
    )


# -- every element-wise function with out= ---------------------------------------------------------

UFUNCS = {"abs": np.absolute, **{n: getattr(np, n) for n in UNARY + BINARY if n != "abs"}}


@st.composite
def elementwise_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    name = draw(st.sampled_from(UNARY + BINARY))
    out_shape = draw(shapes)
    out = draw(geometries(out_shape, [np.float64]))
    inputs = []
    for _ in range(1 if name in UNARY else 2):
        tail = [draw(st.sampled_from([n, 1])) for n in out_shape]
        shape = tuple(tail[draw(st.integers(0, len(tail))) :])
        inputs.append(draw(sibling(out, shape, exact=True)))
    return name, inputs, out, shared_buffer(draw, numeric=True), draw(st.data())


@scaled(200)
@given(elementwise_cases())
def test_every_elementwise_function_with_out(case):
    name, inputs, out, buffer, data = case
    views = [wrap(data.draw, g.on(buffer)) for g in inputs]
    d = wrap(data.draw, out.on(buffer))
    snapshots = [np.array(g.on(buffer)) for g in inputs]
    function, ufunc = getattr(es, name), UFUNCS[name]
    expected = buffer.copy()
    with np.errstate(all="ignore"):
        ufunc(*snapshots, out=out.on(expected))
        before = buffer.copy()
        try:
            assert function(*views, out=d) is d
        except ALLOWED as error:
            assert buffer.tobytes() == before.tobytes(), f"written before raising {error!r}"
            assert not independent(out, inputs), f"{error!r} without an overlap"
            event("raised")
            return
    event("written (overlap)" if not independent(out, inputs) else "written (no overlap)")
    np.testing.assert_allclose(
        buffer.view(np.float64), expected.view(np.float64), rtol=1e-12, atol=0, equal_nan=True
    )


# -- einsum / contract_expression out= --------------------------------------------------------------

EQUATIONS = [
    ("ij->ji", [(2, 3)]),
    ("ij,jk->ik", [(2, 3), (3, 2)]),
    ("i,i->i", [(3,), (3,)]),
    ("ii->i", [(3, 3)]),
    ("ij->i", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("bij,bjk->bik", [(2, 2, 2), (2, 2, 2)]),
    ("ij,jk,kl->il", [(2, 2), (2, 2), (2, 2)]),
    ("...i,...i->...", [(2, 3), (3,)]),
    ("ijk->kji", [(1, 2, 3)]),
    ("i->", [(4,)]),
    ("i->ii", [(3,)]),
    ("ij->iij", [(2, 3)]),
    ("ij,jk->iik", [(2, 3), (3, 2)]),
]


@st.composite
def einsum_cases(draw: st.DrawFn) -> tuple[Any, ...]:
    equation, shapes_ = draw(st.sampled_from(EQUATIONS))
    expected_shape = es.einsum(equation, *(np.zeros(s) for s in shapes_)).shape
    out = draw(geometries(expected_shape, [np.float64]))
    inputs = [draw(sibling(out, s, exact=True)) for s in shapes_]
    return (
        equation,
        inputs,
        out,
        shared_buffer(draw, numeric=True),
        draw(st.booleans()),
        draw(st.data()),
    )


@scaled(200)
@given(einsum_cases())
def test_einsum_and_expression_out(case):
    equation, inputs, out, buffer, use_expression, data = case
    views = [wrap(data.draw, g.on(buffer)) for g in inputs]
    d = wrap(data.draw, out.on(buffer))
    snapshots = [np.array(g.on(buffer)) for g in inputs]
    if use_expression:
        expression = es.contract_expression(equation, *(g.shape for g in inputs))
        action: Callable[[], Any] = lambda: expression(*views, out=d)  # noqa: E731
    else:
        action = lambda: es.einsum(equation, *views, out=d)  # noqa: E731

    def reference(target: np.ndarray) -> None:
        output = equation.split("->")[1]
        if len(set(output)) == len(output):
            np.copyto(target, np.einsum(equation, *snapshots))
        else:  # a repeated output label: the engine itself, on copies (checked elsewhere)
            np.copyto(target, es.einsum(equation, *snapshots))

    check(buffer, out, inputs, action, reference, independent(out, inputs))


@pytest.mark.parametrize("function", [es.einsum, "expression"])
def test_einsum_out_overlapping_an_operand_by_one_byte_is_rejected(function):
    buffer = np.zeros(64, np.uint8)
    a = np.ndarray((2, 2), np.float64, buffer, 0)
    out = np.ndarray((2, 2), np.float64, buffer, 31)  # shares the last byte of a only
    before = buffer.copy()
    with pytest.raises(LayoutError, match="overlaps input 0"):
        if function == "expression":
            es.contract_expression("ij->ji", (2, 2))(a, out=out)
        else:
            es.einsum("ij->ji", a, out=out)
    assert buffer.tobytes() == before.tobytes()
