"""Hypothesis strategies for einsum: random equations (structured, then rendered) and random
operand layouts (C, Fortran, transposed, negative strides, zero strides, gapped slices)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from einsum_oracle import ELL
from hypothesis import assume
from hypothesis import strategies as st

POOL = [*"abcdefgh", "α", "β", "ж", "中", "_", "7", "Ω"]
SIZES = st.sampled_from([1, 2, 3, 2, 3, 0, 1, 2])
MAX_COMBINATIONS = 3000


@dataclass
class Case:
    terms: list[list[str]]
    output: list[str]
    explicit: bool
    shapes: list[tuple[int, ...]]

    def render(self, spaces: bool = False) -> str:
        sep = ", " if spaces else ","
        ins = sep.join(" ".join(t) if spaces else "".join(t) for t in self.terms)
        return f"{ins}->{''.join(self.output)}" if self.explicit else ins

    def numpy_equation(self) -> str | None:
        """The equation in ASCII letters for numpy.einsum (explicit), or None if NumPy cannot
        express it (repeated output labels, too many labels)."""
        if len(set(self.output)) != len(self.output):
            return None
        labels = sorted({x for t in self.terms for x in t if x != ELL})
        if len(labels) > 52:
            return None
        letters = dict(zip(labels, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        letters[ELL] = ELL
        ins = ",".join("".join(letters[x] for x in t) for t in self.terms)
        return f"{ins}->{''.join(letters[x] for x in self.output)}"


def implicit_output(terms: list[list[str]]) -> list[str]:
    counts: dict[str, int] = {}
    for t in terms:
        for x in t:
            counts[x] = counts.get(x, 0) + 1
    single = sorted(x for x, n in counts.items() if n == 1 and x != ELL)
    return ([ELL] if ELL in counts else []) + single


@st.composite
def cases(draw: Any, max_operands: int = 5, max_rank: int = 4) -> Case:
    n = draw(st.integers(1, max_operands))
    labels = draw(st.lists(st.sampled_from(POOL), min_size=0, max_size=6, unique=True))
    sizes = {x: draw(SIZES) for x in labels}
    ell_rank = draw(st.sampled_from([0, 0, 1, 2]))
    ell_shape = [draw(SIZES) for _ in range(ell_rank)]
    terms, shapes = [], []
    for _ in range(n):
        k = draw(st.integers(0, max_rank)) if labels else 0
        term = [draw(st.sampled_from(labels)) for _ in range(k)]
        shape = [sizes[x] for x in term]
        if draw(st.integers(0, 3)) == 0 or (ell_rank and draw(st.booleans())):
            r = draw(st.integers(0, ell_rank))
            dims = [1 if draw(st.integers(0, 3)) == 0 else d for d in ell_shape[ell_rank - r :]]
            pos = draw(st.integers(0, len(term)))
            term.insert(pos, ELL)
            shape[pos:pos] = dims
        terms.append(term)
        shapes.append(tuple(shape))
    used = list(dict.fromkeys(x for t in terms for x in t if x != ELL))
    combos = math.prod(sizes[x] for x in used) * math.prod(ell_shape)
    assume(combos <= MAX_COMBINATIONS)
    if draw(st.integers(0, 3)) == 0:
        return Case(terms, implicit_output(terms), False, shapes)
    out = draw(st.lists(st.sampled_from(used), max_size=4)) if used else []
    has_ell = any(ELL in t for t in terms)
    broadcast_rank = max(
        (len(s) - len(t) + 1 for t, s in zip(terms, shapes) if ELL in t), default=0
    )
    if has_ell and (broadcast_rank > 0 or draw(st.booleans())):
        out.insert(draw(st.integers(0, len(out))), ELL)
    out_size = math.prod(sizes[x] for x in out if x != ELL) * math.prod(ell_shape)
    assume(out_size <= MAX_COMBINATIONS)
    return Case(terms, out, True, shapes)


DTYPES = st.sampled_from(["float64"] * 6 + ["float32", "int64", "int32", "complex128", "bool"])


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.6
    data = rng.integers(-3, 4, size=shape)
    if dtype.startswith("complex"):
        data = data + 1j * rng.integers(-3, 4, size=shape)
    return data.astype(dtype)


@st.composite
def layouts(draw: Any, shape: tuple[int, ...], dtype: str, writeable: bool = False) -> np.ndarray:
    """An array of ``shape`` with random strides: permuted, gapped, reversed, broadcast."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim))) if ndim else []
    gaps = [draw(st.sampled_from([1, 1, 2, 3])) for _ in range(ndim)]
    flips = [draw(st.booleans()) for _ in range(ndim)]
    zeros = [False if writeable else draw(st.integers(0, 4)) == 0 for _ in range(ndim)]
    base_shape = [1 if z else n * g for n, g, z in zip(shape, gaps, zeros)]
    base = values(rng, tuple(base_shape[p] for p in perm), dtype)
    inverse = np.argsort(perm) if ndim else []
    arr = base.transpose(inverse) if ndim else base
    index = tuple(slice(None, None, -g if f else g) for g, f in zip(gaps, flips))
    arr = arr[index] if ndim else arr
    arr = arr[tuple(slice(0, 1 if z else n) for n, z in zip(shape, zeros))] if ndim else arr
    if any(zeros):
        arr = np.broadcast_to(arr, shape)
    assert arr.shape == tuple(shape)
    return arr


def label_ids(
    equation: str, shapes: Any
) -> tuple[list[tuple[int, ...]], tuple[int, ...], list[int]]:
    """An explicit equation and its operands' shapes as the path search takes them: each
    term's label ids (in order of first appearance), the output's, and each label's size."""
    lhs, rhs = equation.split("->")
    ids: dict[str, int] = {}
    for c in equation.replace(",", "").replace("->", ""):
        ids.setdefault(c, len(ids))
    sizes = [0] * len(ids)
    for term, shape in zip(lhs.split(","), shapes, strict=True):
        for c, d in zip(term, shape, strict=True):
            sizes[ids[c]] = d
    inputs = [tuple(ids[c] for c in term) for term in lhs.split(",")]
    return inputs, tuple(ids[c] for c in rhs), sizes


@st.composite
def broadcast_equations(
    draw: Any, labels: str = "abcd"
) -> tuple[str, list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    """An equation of 1-3 operands (diagonals now and then), label sizes 1-4, and per operand
    its shape and the shape of the values it broadcasts (1 along a drawn set of labels, on
    every axis carrying them, and along one more axis of an operand now and then): the
    spread's cases (tests/einsum/test_spread.py, tests/torch_backend/test_torch_spread.py)."""
    n = draw(st.integers(1, 3))
    terms = ["".join(draw(st.lists(st.sampled_from(labels), min_size=1, max_size=3)))
             for _ in range(n)]  # fmt: skip
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(used))[: draw(st.integers(1, len(used)))])
    sizes = {x: draw(st.integers(1, 4)) for x in used}
    spread = set(draw(st.lists(st.sampled_from(used), max_size=2)))
    found = []
    for term in terms:
        shape = tuple(sizes[x] for x in term)
        alone = draw(st.sampled_from([None, *range(len(term))]))  # one more broadcast axis
        stored = tuple(1 if x in spread or ax == alone else n for ax, (x, n) in
                       enumerate(zip(term, shape)))  # fmt: skip
        found.append((shape, stored))
    return ",".join(terms) + "->" + output, found
