"""The torch backend's tests: skipped as a whole without torch; tests marked ``cuda`` are
skipped without a CUDA device.  tests/einsum (the equation strategies and the brute-force
oracle) is put on ``sys.path`` for the differential tests.

(Not named tests/torch: pytest puts tests/ on ``sys.path``, and where torch is not
installed that folder would import as a namespace package called ``torch``.)"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["test_*.py"]

EINSUM_TESTS = Path(__file__).resolve().parents[1] / "einsum"
if str(EINSUM_TESTS) not in sys.path:
    sys.path.insert(0, str(EINSUM_TESTS))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cuda = [item for item in items if item.get_closest_marker("cuda") is not None]
    if not cuda:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in cuda:
        item.add_marker(skip)


@pytest.fixture
def planned() -> Iterator[None]:
    """Small matmul-form products planned too (the equation's lane off,
    ``lane_max_combos=0``, and a shape class's first call planned, not run directly:
    ``FIRST_CALL_WORK`` -1): for tests that watch the plan's own kernels and buffers."""
    from einstride.engine.backends.numpy import direct
    from einstride.engine.backends.numpy.options import default_options, set_default_options

    before = set_default_options(dataclasses.replace(default_options(), lane_max_combos=0))
    work, direct.FIRST_CALL_WORK = direct.FIRST_CALL_WORK, -1
    try:
        yield
    finally:
        set_default_options(before)
        direct.FIRST_CALL_WORK = work
