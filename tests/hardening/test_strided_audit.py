"""The ``as_strided`` audit: the library builds raw strided views (``as_strided``,
``ndarray(..., buffer=...)``, ``frombuffer``) only in audited functions, each documented in
docs/reliability.md, and at run time every such view stays inside the memory it was made from.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
from fuzzing import scaled
from hypothesis import given
from hypothesis import strategies as st

import einstride as es
from einstride import Tensor
from einstride import layout as layout_module
from einstride.engine.backends.numpy import execute

SRC = Path(es.__file__).resolve().parent
DOC = SRC.parents[1] / "docs" / "reliability.md"

# module:function (nested functions joined by ".") -> why the view it builds is in bounds
AUDITED = {
    "einstride.tensors:_materialize": "a layout validated against the storage",
    "einstride.tensors:as_tensor": "non-negative strides: the span from the first element",
    "einstride.layout:_probe": "read-only address arithmetic for np.shares_memory, never read",
    "einstride.engine.api:_c_order_stand_in": "a read-only probe for the lanes' dry runs, never read",
    "einstride.engine.backends.numpy.backend:_stand_in": "zero strides, read-only, planned, never read",
    "einstride.transfer:_flat": "only dense arrays, whose size items are contiguous",
    "einstride.narrow:as_strided": "the audited sites' own views, built through raw bytes",
    "einstride.engine.backends.numpy.execute:destination.write_view": "the diagonal of the output array",
    # torch.as_strided: torch itself rejects a view outside the tensor's storage
    "einstride.engine.backends.torch.execute:_view_fn.run": "an operand's diagonals, size-1 axes dropped",
    "einstride.engine.backends.torch.execute:_fused_fn.compute": "an operand's diagonals, broadcast axes",
    "einstride.engine.backends.torch.execute:_fold_batch.viewed": "batch axes that fold, merged",
    "einstride.engine.backends.torch.execute:_destination.write_view": "the diagonal of the output",
    "einstride.engine.backends.torch.lanes:_unary_lane.unary": "an operand's diagonals, sizes checked",
}
RAW_VIEW_NAMES = {"as_strided", "frombuffer", "sliding_window_view"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


class _Finder(ast.NodeVisitor):
    """Collects ``module:qualname`` of every function calling a raw-view constructor."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.stack: list[str] = []
        self.sites: list[tuple[str, int, str]] = []

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name in RAW_VIEW_NAMES and alias.asname not in (None, alias.name):
                self.sites.append((f"{self.module}:<import alias>", node.lineno, alias.name))

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in RAW_VIEW_NAMES:  # getattr(..., "...")
            self.sites.append((self.where(), node.lineno, node.value))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        raw = name in RAW_VIEW_NAMES
        if name == "ndarray":  # ndarray(shape, dtype, buffer, ...) or buffer=...
            raw = len(node.args) >= 3 or any(k.arg == "buffer" for k in node.keywords)
        if raw:
            self.sites.append((self.where(), node.lineno, name))
        self.generic_visit(node)

    def where(self) -> str:
        return f"{self.module}:{'.'.join(self.stack) or '<module>'}"


def raw_view_sites() -> list[tuple[str, int, str]]:
    sites = []
    for path in sorted(SRC.rglob("*.py")):
        finder = _Finder(_module_name(path))
        finder.visit(ast.parse(path.read_text(), str(path)))
        sites += finder.sites
    return sites


def test_every_raw_strided_view_is_built_in_an_audited_function():
    sites = raw_view_sites()
    unaudited = [site for site in sites if site[0] not in AUDITED]
    assert not unaudited, (
        f"audit these and add them to AUDITED and docs/reliability.md: {unaudited}"
    )
    assert {where for where, _, _ in sites} == set(AUDITED), "an audited site disappeared"


def test_the_finder_catches_every_spelling():
    source = (
        "import numpy as np\n"
        "from numpy.lib.stride_tricks import as_strided as sneaky\n"
        "def f(a):\n"
        "    g = getattr(np.lib.stride_tricks, 'as_strided')\n"
        "    return np.ndarray((2,), a.dtype, a), np.ndarray((1,), buffer=a), np.frombuffer(a)\n"
    )
    finder = _Finder("m")
    finder.visit(ast.parse(source))
    assert [(where, name) for where, _, name in finder.sites] == [
        ("m:<import alias>", "as_strided"),
        ("m:f", "as_strided"),
        ("m:f", "ndarray"),
        ("m:f", "ndarray"),
        ("m:f", "frombuffer"),
    ]


def test_reliability_doc_names_every_audited_site():
    text = DOC.read_text()
    for site in AUDITED:
        module, function = site.split(":")
        assert f"{module.removeprefix('einstride.')}.{function.split('.')[0]}" in text, site


# -- at run time -----------------------------------------------------------------------------


def _root(arr: np.ndarray) -> np.ndarray:
    """The last ndarray in ``arr``'s base chain: the memory every view of it must stay in."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


byte_bounds = np.lib.array_utils.byte_bounds if hasattr(np.lib, "array_utils") else np.byte_bounds


@contextmanager
def checked_as_strided() -> Iterator[list[str]]:
    """``as_strided`` everywhere in the library, asserting each view stays in its source's
    memory (the overlap probe excepted: read-only and never read)."""
    original = np.lib.stride_tricks.as_strided
    calls: list[str] = []

    def checked(x, *args, **kwargs):
        view = original(x, *args, **kwargs)
        if x is layout_module._PROBE_BASE:
            assert not view.flags.writeable
            calls.append("probe")
            return view
        if view.size:
            lo, hi = byte_bounds(view)
            r_lo, r_hi = byte_bounds(_root(x))
            assert r_lo <= lo and hi <= r_hi, (view.shape, view.strides, x.shape, x.strides)
        calls.append("view")
        return view

    def checked_einsum(x, *args, **kwargs):
        calls.append("einsum")
        return checked(x, *args, **kwargs)

    with (
        mock.patch.object(np.lib.stride_tricks, "as_strided", checked),
        mock.patch.object(execute, "as_strided", checked_einsum),
    ):
        yield calls


@st.composite
def numpy_views(draw: st.DrawFn) -> np.ndarray:
    """Any NumPy view: negative steps, transposes, byte strides that are not whole items."""
    base = np.arange(draw(st.integers(1, 40)), dtype=np.float64)
    shape = draw(st.sampled_from([(-1,), (2, -1), (-1, 2)]))
    if base.size % 2:
        base = base[:-1] if base.size > 1 else base
        shape = (-1,)
    arr = base.reshape(shape)
    for _ in range(draw(st.integers(0, 3))):
        step = draw(st.sampled_from([1, 2, -1, -2]))
        arr = (
            arr[::step]
            if arr.ndim == 1
            else draw(st.sampled_from([arr.T, arr[::step], arr[:, ::step]]))
        )
    if draw(st.booleans()):  # a field of a record: byte strides that are not whole float32s
        rec = np.zeros(arr.shape, [("a", "u1"), ("b", np.float32)])
        rec["b"] = arr
        arr = rec["b"]
    return arr


@scaled(100)
@given(numpy_views())
def test_runtime_views_stay_inside_their_memory(arr):
    with checked_as_strided() as calls:
        exercise_raw_view_sites(arr)
    assert {"view", "probe", "einsum"} <= set(calls)


def exercise_raw_view_sites(arr: np.ndarray) -> None:
    t = es.as_tensor(arr)
    np.testing.assert_array_equal(t.numpy(), arr)
    if t.ndim == 2:
        assert es.transpose(t).numpy().tolist() == arr.T.tolist()
    snapshot = np.array(arr)
    dst = np.zeros(arr.size + 2, arr.dtype)
    es.flatten_to(t, dst)
    assert dst[: arr.size].tolist() == snapshot.ravel().tolist()
    dense = np.arange(10.0)
    es.copy_to(dense[:6], dense[2:8])  # the dense memmove path through _flat
    es.resize_to(dense[:3], dense[1:5])
    out = np.zeros((3, 3, 3))
    es.einsum("i->iii", np.arange(3.0), out=out)  # the diagonal write view
    assert out[1, 1, 1] == 1.0
    many = np.arange(2.0).reshape((2,) + (1,) * 52)  # past 52 labels: the as_strided fallback
    wide = es.einsum(many, list(range(53)), [*range(53), 0])
    assert wide.reshape(2, 2).tolist() == [[0.0, 0.0], [0.0, 1.0]]
    evens, odds = es.Layout.create((3,), (2,)), es.Layout.create((3,), (2,), 1)
    assert not evens.overlaps(odds)  # the probe path
    assert not Tensor(dense, (2, 2), (3, 1)).has_repeated_locations


def test_the_runtime_check_catches_a_view_past_its_memory():
    with checked_as_strided():
        np.lib.stride_tricks.as_strided(np.zeros(4)[:2], (4,), (8,))  # still inside the root
        try:
            np.lib.stride_tricks.as_strided(np.zeros(2), (3,), (8,))
        except AssertionError:
            return
    raise AssertionError("a view past the end of its memory went unnoticed")
