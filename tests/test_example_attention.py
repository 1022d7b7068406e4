"""The attention example trains: a short run must lower the loss substantially."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "attention.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("attention_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_short_training_run_lowers_the_loss() -> None:
    losses = _load().train(steps=150, seed=1, verbose=False)
    assert len(losses) == 150 and all(np.isfinite(losses))
    assert np.mean(losses[-10:]) < 0.7 * np.mean(losses[:10])


def test_backward_pass_matches_finite_differences() -> None:
    ex = _load()
    rng = np.random.default_rng(5)
    params = ex.init_params(8, 2, 16, 3, rng)
    x, y = ex.make_task(5, 4, 8, 3, rng)

    def loss() -> float:
        pred, _ = ex.forward(params, x)
        return float(np.mean((pred - y) ** 2))

    pred, cache = ex.forward(params, x)
    grads = ex.backward(params, cache, 2.0 * (pred - y) / pred.size)
    for name, w in params.items():
        g = getattr(grads, name)
        for _ in range(3):
            idx = tuple(int(rng.integers(0, n)) for n in w.shape)
            old = w[idx]
            w[idx] = old + 1e-6
            up = loss()
            w[idx] = old - 1e-6
            down = loss()
            w[idx] = old
            assert np.isclose(g[idx], (up - down) / 2e-6, rtol=1e-5, atol=1e-8), name
