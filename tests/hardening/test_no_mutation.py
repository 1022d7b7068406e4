"""No public function mutates its inputs: every name in ``einstride.__all__`` is called with
inputs of every kind (dense, transposed, strided, reversed and broadcast NumPy views,
read-only arrays, Tensors with gaps or zero strides, nested lists, Python containers), each
over a buffer of its own; afterwards every input buffer is byte-for-byte what it was, every
view keeps its shape/strides/flags, and every container still holds the same objects.  Only a
destination (``out=``, ``dst``) may change, and its buffer is its own.  Errors are allowed
(other tests judge them): mutation is never allowed, not even on the way to an error.

A function added to ``einstride.__all__`` must get an entry in ``CALLS`` below.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy: the inputs name it)
import numpy as np
from fuzzing import BINARY, UNARY, scaled
from hypothesis import given
from hypothesis import strategies as st

import einstride as es
from einstride import Tensor

KINDS = [
    "dense",
    "transposed",
    "strided",
    "reversed",
    "broadcast",
    "readonly",
    "tensor",
    "tensor-gaps",
    "tensor-broadcast",
    "list",
]


class Inputs:
    """Makes inputs over buffers of their own and checks afterwards that none changed."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.buffers: list[tuple[np.ndarray, bytes]] = []
        self.views: list[tuple[Any, tuple[Any, ...]]] = []
        self.containers: list[tuple[Any, Any]] = []
        self.destinations: set[int] = set()

    def _buffer(self, count: int, dtype: Any) -> np.ndarray:
        values = self.draw(st.lists(st.integers(1, 9), min_size=count, max_size=count))
        buffer = np.array(values, dtype=dtype)
        self.buffers.append((buffer, b""))
        return buffer

    def array(self, shape: tuple[int, ...], dtype: Any = np.float64, kinds: Any = None) -> Any:
        kind = self.draw(st.sampled_from(kinds or KINDS))
        size = int(np.prod(shape))
        if kind == "list":
            made: Any = (np.arange(size) % 7 + 1).astype(dtype).reshape(shape).tolist()
            self.containers.append((made, copy.deepcopy(made)))
            return made
        buffer = self._buffer(2 * size + 3, dtype)
        row_major = tuple(int(np.prod(shape[k + 1 :])) for k in range(len(shape)))
        if kind == "dense":
            made = buffer[:size].reshape(shape)
        elif kind == "transposed":
            made = buffer[:size].reshape(shape[::-1]).T
        elif kind == "strided":
            made = buffer[: 2 * size : 2].reshape(shape) if size else buffer[:0].reshape(shape)
        elif kind == "reversed":
            made = buffer[:size][::-1].reshape(shape)
        elif kind == "broadcast":
            made = np.broadcast_to(buffer[: shape[-1] if shape else 1], shape)
        elif kind == "readonly":
            made = buffer[:size].reshape(shape)
            made.flags.writeable = False
        elif kind == "tensor":
            made = Tensor(buffer, shape)
        elif kind == "tensor-gaps":
            made = Tensor(buffer, shape, tuple(2 * s for s in row_major), 1)
        else:
            made = Tensor(buffer, shape, (0,) * (len(shape) - 1) + (1,) if shape else (), 0)
        self.views.append((made, self._meta(made)))
        return made

    def destination(self, shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
        """A writeable destination with distinct elements, over its own buffer."""
        size = int(np.prod(shape))
        buffer = np.zeros(2 * size + 1, dtype)
        self.destinations.add(id(buffer))
        self.buffers.append((buffer, b""))
        if self.draw(st.booleans()):
            return buffer[:size].reshape(shape)
        strides = tuple(2 * int(np.prod(shape[k + 1 :])) for k in range(len(shape)))
        return Tensor(buffer, shape, strides, 1)

    def keep(self, container: Any) -> Any:
        """Track a Python container argument (list of arrays, shape list, ...)."""
        self.containers.append((container, list(container)))
        return container

    @staticmethod
    def _meta(x: Any) -> tuple[Any, ...]:
        if isinstance(x, Tensor):
            return ("tensor", x.storage, x.layout, x.storage.flags.writeable)
        return ("array", x.shape, x.strides, x.dtype, x.flags.writeable, x.base)

    def snapshot(self) -> None:
        self.buffers = [(b, b.tobytes()) for b, _ in self.buffers]

    def assert_unchanged(self, name: str) -> None:
        for buffer, before in self.buffers:
            if id(buffer) not in self.destinations:
                assert buffer.tobytes() == before, f"{name} wrote into an input"
        for made, meta in self.views:
            assert self._meta(made) == meta, f"{name} changed an input's metadata"
        for container, before in self.containers:
            if isinstance(before, list) and before and not isinstance(before[0], list):
                assert len(container) == len(before) and all(
                    a is b for a, b in zip(container, before)
                ), f"{name} changed a list"
            else:
                assert container == before, f"{name} changed a nested list"


Call = Callable[[Inputs], Callable[[], Any]]
M, N = 2, 3


def each(*calls: Callable[[], Any]) -> Callable[[], None]:
    """Several calls on the same inputs; an error in one does not skip the others."""

    def run() -> None:
        for call in calls:
            with contextlib.suppress(Exception):  # errors are judged elsewhere
                call()

    return run


def _unary(name: str, shape: tuple[int, ...] = (M, N)) -> Call:
    return lambda inp: partial(getattr(es, name), inp.array(shape))


def _unary_out(name: str) -> Call:
    def make(inp: Inputs) -> Callable[[], Any]:
        f = getattr(es, name)
        return each(
            partial(f, inp.array((M, N))),
            partial(f, inp.array((M, N)), out=inp.destination((M, N))),
        )

    return make


def _binary_out(name: str) -> Call:
    def make(inp: Inputs) -> Callable[[], Any]:
        f = getattr(es, name)
        return each(
            partial(f, inp.array((M, N)), inp.array((N,))),
            partial(f, inp.array((M, N)), inp.array((1, N)), out=inp.destination((M, N))),
        )

    return make


def _shape_only(name: str, **kwargs: Any) -> Call:
    return lambda inp: partial(getattr(es, name), inp.keep([M, N]), **kwargs)


def _indices(inp: Inputs, shape: tuple[int, ...]) -> Any:
    """Integer indices (values 1..9)."""
    kinds = ["dense", "transposed", "strided", "reversed", "readonly", "tensor", "list"]
    return inp.array(shape, np.int64, kinds)


def _copy_call(name: str, src: tuple[int, ...], dst: tuple[int, ...]) -> Call:
    return lambda inp: partial(getattr(es, name), inp.array(src), inp.destination(dst))


def _joined(name: str, dst: tuple[int, ...]) -> Call:
    def make(inp: Inputs) -> Callable[[], Any]:
        f = getattr(es, name)
        items = inp.keep([inp.array((M, N)), inp.array((M, N))])
        return each(partial(f, items, 1), partial(f, items, 0, out=inp.destination(dst)))

    return make


def _einsum(inp: Inputs) -> Callable[[], Any]:
    a, b, square, vector = inp.array((M, N)), inp.array((N, M)), inp.array((N, N)), inp.array((N,))
    return each(
        partial(es.einsum, "ij,jk->ik", a, b),
        partial(es.einsum, "ij->ji", a),
        partial(es.einsum, "ii->i", square),
        partial(es.einsum, "i->ii", vector),
        partial(es.einsum, a, inp.keep([0, 1]), b, inp.keep([1, 2])),
        partial(es.einsum, "ij,jk->ik", a, b, out=inp.destination((M, M))),
    )


def _expression(inp: Inputs) -> Callable[[], Any]:
    a, b, out = inp.array((M, N)), inp.array((N, M)), inp.destination((M, M))
    expression = es.contract_expression("ij,jk->ik", (M, N), (N, M))
    return each(partial(expression, a, b), partial(expression, a, b, out=out))


CALLS: dict[str, Call] = {
    "Tensor": lambda inp: partial(Tensor, inp.array((6,), kinds=["dense", "readonly"]), (2, 2)),
    "Layout": lambda inp: partial(es.Layout.create, inp.keep([M, N]), inp.keep([N, 1])),
    "as_tensor": _unary("as_tensor"),
    "tensor": _unary("tensor"),
    "check_destination": lambda inp: partial(es.check_destination, inp.array((M, N)), "op"),
    "check_no_overlap": lambda inp: partial(
        es.check_no_overlap, inp.array((M, N)), inp.keep([inp.array((M, N)), inp.array((N,))]), "op"
    ),
    "tensors_overlap": lambda inp: partial(es.tensors_overlap, inp.array((N,)), inp.array((N,))),
    "copy_to": _copy_call("copy_to", (1, N), (M, N)),
    "try_copy_to": _copy_call("try_copy_to", (N,), (M, N)),
    "flatten_to": _copy_call("flatten_to", (M, N), (M * N + 1,)),
    "try_flatten_to": _copy_call("try_flatten_to", (M, N), (M * N,)),
    "resize": lambda inp: partial(es.resize, inp.array((M, N)), inp.keep([N, N])),
    "resize_to": _copy_call("resize_to", (M, N), (N, N)),
    "reverse": lambda inp: each(
        partial(es.reverse, inp.array((M, N)), 0),
        partial(es.reverse, inp.array((M, N)), (0, 1), out=inp.destination((M, N))),
    ),
    **{name: _unary_out(name) for name in UNARY},
    **{name: _binary_out(name) for name in BINARY},
    "broadcast_to": lambda inp: partial(es.broadcast_to, inp.array((1, N)), inp.keep([M, M, N])),
    "concat": _joined("concat", (2 * M, N)),
    "stack": _joined("stack", (2, M, N)),
    "expand_dims": lambda inp: partial(es.expand_dims, inp.array((M, N)), inp.keep([0, -1])),
    "flatten": _unary("flatten"),
    "reshape": lambda inp: partial(es.reshape, inp.array((M, N)), inp.keep([N, -1])),
    "split": lambda inp: partial(es.split, inp.array((M, N)), inp.keep([1, 2]), axis=1),
    "squeeze": _unary("squeeze", (1, N)),
    "tile": lambda inp: partial(es.tile, inp.array((M, N)), inp.keep([2, 1])),
    "transpose": lambda inp: partial(es.transpose, inp.array((M, N)), inp.keep([1, 0])),
    "unstack": _unary("unstack"),
    "boolean_mask": lambda inp: partial(
        es.boolean_mask, inp.array((M, N)), inp.array((M,), np.bool_)
    ),
    "gather": lambda inp: partial(es.gather, inp.array((10, N)), _indices(inp, (M,))),
    "nonzero_indices": _unary("nonzero_indices"),
    "one_hot": lambda inp: partial(es.one_hot, _indices(inp, (M, N)), 10),
    "pad": lambda inp: partial(
        es.pad, inp.array((M, N)), inp.keep([(1, 0), (0, 1)]), mode="symmetric"
    ),
    "where": lambda inp: partial(
        es.where, inp.array((M, N), np.bool_), inp.array((M, N)), inp.array((N,))
    ),
    "band_part": lambda inp: partial(es.band_part, inp.array((M, N)), 0, -1),
    "diag": _unary("diag", (N,)),
    "diag_part": _unary("diag_part"),
    "eye": lambda inp: partial(es.eye, M, N, batch_shape=inp.keep([2])),
    "set_diag": lambda inp: partial(es.set_diag, inp.array((M, N)), inp.array((M,))),
    "trace": _unary("trace"),
    "arange": lambda inp: partial(es.arange, 1, 7, 2),
    "linspace": lambda inp: partial(es.linspace, 0, 1, 5),
    "full": lambda inp: partial(es.full, inp.keep([M, N]), 2.0),
    "ones": _shape_only("ones"),
    "zeros": _shape_only("zeros"),
    "full_like": lambda inp: partial(es.full_like, inp.array((M, N)), 3),
    "ones_like": _unary("ones_like"),
    "zeros_like": _unary("zeros_like"),
    "categorical": lambda inp: partial(es.categorical, inp.array((M, N)), 4, seed=0),
    "random_normal": _shape_only("random_normal", seed=1),
    "random_uniform": _shape_only("random_uniform", seed=1),
    "truncated_normal": _shape_only("truncated_normal", seed=1),
    "fans": _shape_only("fans"),
    **{
        name: _shape_only(name, seed=2)
        for name in (
            "glorot_normal",
            "glorot_uniform",
            "he_normal",
            "he_uniform",
            "lecun_normal",
            "lecun_uniform",
            "orthogonal",
        )
    },
    "qr": _unary("qr"),
    "svd": _unary("svd"),
    "is_reduced_precision": _unary("is_reduced_precision"),
    "to_reduced_precision": lambda inp: partial(
        es.to_reduced_precision, inp.array((M, N), np.float32)
    ),
    "to_full_precision": lambda inp: partial(es.to_full_precision, inp.array((M, N), "bfloat16")),
    "einsum": _einsum,
    "einsum_path": lambda inp: partial(
        es.einsum_path, "ij,jk->ik", inp.array((M, N)), inp.array((N, M))
    ),
    "contract_expression": _expression,
    "contract": lambda inp: partial(es.contract, "ij,jk->ik", inp.array((M, N)), inp.array((N, M))),
    "contract_path": lambda inp: partial(
        es.contract_path, "ij,jk->ik", inp.array((M, N)), inp.array((N, M))
    ),
    "parse_equation": lambda inp: partial(
        es.parse_equation, "ij,jk", inp.keep([M, N]), inp.keep([N, M])
    ),
    "clear_plan_cache": lambda inp: es.clear_plan_cache,  # no inputs: must simply not fail
    "plan_cache_info": lambda inp: es.plan_cache_info,
    "num_threads": lambda inp: es.num_threads,
    "set_num_threads": lambda inp: partial(es.set_num_threads, es.num_threads()),  # (as it is)
    "explain": lambda inp: partial(es.explain, "ij,jk->ik", inp.keep([M, N]), inp.keep([N, M])),
    "tensordot": lambda inp: each(
        partial(es.tensordot, inp.array((M, N)), inp.array((N, M)), 1),
        partial(es.tensordot, inp.array((M, N)), inp.array((M, N)), inp.keep([[0, 1], [0, 1]])),
        partial(es.tensordot, inp.array((M, N)), inp.array((N,)), inp.keep([-1, 0])),
    ),
    "einsum_vjp": lambda inp: partial(
        es.einsum_vjp,
        "ij,jk->ik",
        inp.keep([inp.array((M, N)), inp.array((N, M))]),
        inp.array((M, M)),
    ),
}

NOT_FUNCTIONS = {
    "EinsumError",
    "LayoutError",
    "EinsumTypeError",
    "EinsumPathError",  # error types
    "MemoryLimitError",
    "OutOfRangeError",
    "__version__",  # a string
    # plain immutable records: built by the functions above, holding no arrays of the caller
    "EinsumSpec",
    "Equation",
    "Plan",
    "QRResult",
    "SVDResult",
    "Expression",  # made by contract_expression (covered there)
}


def test_every_public_callable_is_covered():
    missing = set(es.__all__) - set(CALLS) - NOT_FUNCTIONS
    assert not missing, f"add a CALLS entry (its inputs) for {sorted(missing)}"
    assert not (set(CALLS) - set(es.__all__)), "CALLS names something that is not public"


@st.composite
def prepared(draw: st.DrawFn) -> tuple[str, Inputs, Callable[[], Any]]:
    name = draw(st.sampled_from(sorted(CALLS)))
    inputs = Inputs(draw)
    return name, inputs, CALLS[name](inputs)


@scaled(800)
@given(prepared())
def test_no_public_function_mutates_its_inputs(case):
    name, inputs, call = case
    inputs.snapshot()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        with contextlib.suppress(Exception):  # errors are judged elsewhere; mutation never is
            call()
    inputs.assert_unchanged(name)


@scaled(20)
@given(st.data(), st.sampled_from(["buffer", "metadata", "list"]))
def test_the_check_catches_a_mutation(data, what):
    inputs = Inputs(data.draw)
    x = inputs.array((M, N), kinds=["dense", "strided", "tensor-gaps"])
    items = inputs.keep([x])
    inputs.snapshot()
    if what == "buffer":
        (x.numpy() if isinstance(x, Tensor) else x)[0, 0] += 1
    elif what == "metadata":
        (x.storage if isinstance(x, Tensor) else x).flags.writeable = False
    else:
        items.append(x)
    try:
        inputs.assert_unchanged("sabotage")
    except AssertionError:
        return
    raise RuntimeError(f"a {what} mutation went unnoticed")
