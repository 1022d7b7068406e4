"""``einstride.clear_plan_cache()`` empties the torch backend's plan cache too."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import einstride as es  # noqa: E402
from einstride.engine.backends.torch import lanes as torch_lanes  # noqa: E402
from einstride.engine.backends.torch import plan as torch_plan  # noqa: E402


def test_clear_plan_cache_forgets_torch_plans() -> None:
    a, b = torch.ones(30, 40), torch.ones(40, 50)
    es.einsum("ij,jk->ik", a, b)  # a small matmul: the equation's lane runs it
    es.einsum("ij,jk->ik", a, b, optimize="greedy")  # another optimize=, not tiny: planned
    assert torch_plan._cached.cache_info().currsize > 0
    assert torch_lanes._LANES
    es.clear_plan_cache()
    assert torch_plan._cached.cache_info().currsize == 0
    assert not torch_lanes._LANES and torch_lanes.lane_answers() == 0
