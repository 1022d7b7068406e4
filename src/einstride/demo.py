"""``einstride demo``: a short, printed tour of the strided core (and of einsum, when present).

Every step says what it does, then shows the result; nothing is read or written outside the
process.

>>> main(["--help"])  # doctest: +ELLIPSIS
usage: einstride demo
...
0
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import einstride as es

__all__ = ["main"]

_USAGE = "usage: einstride demo\n\nPrint a short tour of einstride's strided tensors."

Say = Callable[[str], None]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tour; returns the exit code (2 for unexpected arguments)."""
    args = list(argv or [])
    if args and args[0] in ("-h", "--help"):
        print(_USAGE)
        return 0
    if args:
        print(f"{_USAGE}\n\neinstride demo: unexpected arguments {args}", file=sys.stderr)
        return 2
    for step in (_model, _views, _overlap_rules, _snapshot, _elementwise, _einsum):
        step(print)
    return 0


def _show(say: Say, label: str, value: Any) -> None:
    shown = value.numpy().tolist() if isinstance(value, es.Tensor) else value
    say(f"  {label:<42} {shown}")


def _model(say: Say) -> None:
    say("1. A tensor is a view: flat storage + shape + strides (in elements) + offset.")
    storage = np.arange(1, 7)
    t = es.Tensor(storage, shape=(2, 2), strides=(3, 1))
    _show(say, "storage", storage.tolist())
    _show(say, "Tensor(storage, (2, 2), (3, 1))", t)
    _show(say, "its layout (shape):(strides)+offset", t.layout)
    _show(say, "a rank-0 view: Tensor(storage, ())", es.Tensor(storage, shape=()))


def _views(say: Say) -> None:
    say("2. Views share the storage: transpose, step slicing, broadcast, diagonal.")
    grid = es.Tensor(np.arange(9), shape=(3, 3))
    for label, view in (
        ("grid.T", grid.T),
        ("grid[:, ::2]", grid[:, ::2]),
        ("grid.diagonal()", grid.diagonal()),
    ):
        _show(say, f"{label} {view.layout}", view)
    row = grid[0].broadcast_to((2, 3))
    _show(say, f"grid[0].broadcast_to((2, 3)) {row.layout}", row)
    _show(say, "  ... has repeated locations", row.has_repeated_locations)
    try:
        grid[::-1]
    except es.LayoutError as exc:
        _show(say, "grid[::-1] (negative stride)", f"LayoutError: {exc}")
    _show(say, "es.reverse(grid, 0) allocates instead", es.reverse(grid, 0))


def _overlap_rules(say: Say) -> None:
    say("3. Overlap rules are checked before anything is written.")
    storage = np.arange(8)
    es.copy_to(es.Tensor(storage, (4,)), es.Tensor(storage, (4,), offset=2))
    _show(say, "dense -> shifted dense copy (memmove)", storage.tolist())
    storage = np.arange(8)
    try:
        es.copy_to(es.Tensor(storage, (4,), (2,)), es.Tensor(storage, (4,), offset=1))
    except es.LayoutError as exc:
        _show(say, "strided -> overlapping dense copy", f"LayoutError: {exc}")
    _show(say, "storage is unchanged", storage.tolist())


def _snapshot(say: Say) -> None:
    say("4. The spec's snapshot example: flatten to new storage, then copy.")
    storage = np.array([1, 2, 3, 4, 5, 6])
    src = es.Tensor(storage, shape=(2, 2), strides=(3, 1))
    dst = es.Tensor(storage, shape=(2, 2))
    try:
        es.copy_to(src, dst)
    except es.LayoutError:
        _show(say, "copy_to(src, dst) directly", f"LayoutError, storage still {storage.tolist()}")
    snap = np.empty(4, dtype=storage.dtype)
    es.flatten_to(src, snap)
    _show(say, "flatten_to(src, snap)", snap.tolist())
    es.copy_to(es.Tensor(snap, shape=(2, 2)), dst)
    _show(say, "copy_to(Tensor(snap, (2, 2)), dst)", storage.tolist())


def _elementwise(say: Say) -> None:
    say("5. Element-wise functions: out= may be the same view as an input, never shifted.")
    t = es.tensor([1.0, 4.0, 9.0])
    es.sqrt(t, out=t)
    _show(say, "sqrt([1, 4, 9], out=same view)", t)
    storage = np.arange(5.0)
    try:
        es.add(storage[:4], 1, out=storage[1:])
    except es.LayoutError as exc:
        _show(say, "add(s[:4], 1, out=s[1:])", f"LayoutError: {exc}")


def _einsum(say: Say) -> None:
    say("6. einsum works on the same strided views, and expands diagonals through them.")
    a = es.Tensor(np.arange(6.0), shape=(2, 3))
    _show(say, 'einsum("ij,kj->ik", a, a)', es.einsum("ij,kj->ik", a, a))
    _show(say, 'einsum("i->ii", [1, 2])', es.einsum("i->ii", es.tensor([1.0, 2.0])))
    plan = es.contract_expression("bij,bjk->bik", (8, 64, 32), (8, 32, 16)).explain()
    step = next(line.strip() for line in plan.splitlines() if line.strip().startswith("step 1"))
    _show(say, "explain bij,bjk->bik", step)
