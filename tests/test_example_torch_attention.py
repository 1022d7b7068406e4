"""The torch example: an nn.Module whose products are einstride's trains exactly as the same
module on torch.einsum (float64: equal loss curves to 1e-9)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "torch_attention.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torch_attention_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_loss_curves_equal_torch_einsums_and_fall() -> None:
    ours, theirs = _load().train(
        steps=40, seed=3, verbose=False, d=8, heads=2, hidden=16, batch=16, length=5
    )
    assert len(ours) == len(theirs) == 40
    assert max(abs(a - b) for a, b in zip(ours, theirs)) < 1e-9
    assert ours[-1] < 0.5 * ours[0]


def test_every_product_runs_through_einstride() -> None:
    ex = _load()
    block = ex.Block(8, 2, 16, 3, ex.es.einsum)
    x, _ = ex.make_task(4, 5, 8, 3, seed=0)
    seen: list[str] = []

    def spying(equation: str, *ops: object) -> object:
        seen.append(equation)
        return ex.es.einsum(equation, *ops)

    block.einsum = spying
    result = block(x)
    assert result.grad_fn is not None  # (its last product a lane's: torch's own node)
    assert len(seen) == 10
