"""The bounded overlap test (einstride.overlap): NumPy's exact solver within a bound of
work, the sorted addresses past it, the safe side past those; every answer checked against
brute force, with the bound forced to nothing so that the listing answers."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import einstride as es
from einstride import Layout, overlap

STORAGE = np.zeros(64, np.int16)


@st.composite
def views(draw: st.DrawFn) -> np.ndarray:
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    strides = tuple(draw(st.lists(st.integers(-6, 6), min_size=rank, max_size=rank)))
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    offset = draw(st.integers(-lo, STORAGE.size - 1 - hi)) if hi - lo < STORAGE.size else None
    if offset is None:
        return STORAGE[:0]
    byte = draw(st.integers(0, 1))  # a misaligned view: bytes shared by halves of items
    base = STORAGE.view(np.uint8)[byte : byte + 2 * (STORAGE.size - 1)].view(np.int16)
    return np.lib.stride_tricks.as_strided(
        base[offset:], shape, tuple(2 * s for s in strides), writeable=False
    )


def _bytes(a: np.ndarray) -> set[int]:
    start = a.__array_interface__["data"][0]
    out: set[int] = set()
    for index in np.ndindex(*a.shape):
        address = start + sum(i * s for i, s in zip(index, a.strides))
        out.update(range(address, address + a.itemsize))
    return out


@pytest.fixture(params=["solver", "listing"])
def bound(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "listing":
        monkeypatch.setattr(overlap, "solved", lambda x, y: None)
    return str(request.param)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=views(), second=views())
def test_shares_memory_is_exact_either_way(
    bound: str, first: np.ndarray, second: np.ndarray
) -> None:
    assert overlap.shares_memory(first, second) == bool(_bytes(first) & _bytes(second))


@settings(max_examples=300, deadline=None)
@given(
    dims=st.lists(st.tuples(st.integers(1, 7), st.integers(2, 4)), min_size=1, max_size=5),
)
def test_repeats_listed_is_exact(dims: list[tuple[int, int]]) -> None:
    size = math.prod(n for _, n in dims)
    positions = [
        sum(i * s for i, (s, _) in zip(index, dims)) for index in np.ndindex(*[n for _, n in dims])
    ]
    assert overlap.repeats_listed(dims, size) == (len(set(positions)) < size)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    strides=st.lists(st.integers(0, 9), min_size=5, max_size=5),
)
def test_has_repeated_locations_past_the_solver_bound(
    monkeypatch: pytest.MonkeyPatch, shape: list[int], strides: list[int]
) -> None:
    layout = Layout(tuple(shape), tuple(strides[: len(shape)]), 0)
    exact = layout.has_repeated_locations
    with monkeypatch.context() as patched:
        patched.setattr("einstride.layout.solved", lambda x, y: None)
        assert Layout(layout.shape, layout.strides, 0).has_repeated_locations == exact


def _conway_guy(n: int) -> list[int]:
    """Strides whose subset sums are all distinct: no repeated locations, and the hardest
    case for NumPy's solver."""
    u = [0, 1]
    for m in range(1, n + 1):
        u.append(2 * u[m] - u[m - round(math.sqrt(2 * m))])
    return [u[n] - u[n - i] for i in range(1, n + 1)]


def test_a_view_the_solver_takes_minutes_on_is_answered_from_its_addresses() -> None:
    """A review: Tensor.numpy() of a 22-axis view of 4M elements (22 MB of storage) took 50 s
    in NumPy's exact solver, each two axes more 7x as long; its addresses answer in 0.2 s."""
    strides = _conway_guy(22)
    t = es.Tensor(np.zeros(sum(strides) + 1, np.int8), shape=(2,) * 22, strides=strides)
    start = time.perf_counter()
    assert not t.layout.has_repeated_locations
    assert t.numpy().size == 2**22
    assert time.perf_counter() - start < 10  # (50 s before)
    bigger = Layout((2,) * 24, tuple(_conway_guy(24)), 0)
    assert bigger.has_repeated_locations  # past the listing: the safe side, at once
