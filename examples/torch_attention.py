"""A transformer block as a ``torch.nn.Module`` whose every product is ``einstride.einsum``,
trained with ``torch.optim.Adam`` -- side by side with the same module on ``torch.einsum``.

Both modules start from the same weights and see the same data; in float64 their loss
curves agree to 1e-9 (autograd runs through einstride's own backward einsums in one, through
torch's in the other).  The task is synthetic: each sequence's target is the mean of its
tokens weighted by their similarity to the first token, projected to a few outputs.

Run: ``python examples/torch_attention.py [--steps 300]`` (a few seconds).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import torch
from torch import nn

import einstride as es

Einsum = Callable[..., torch.Tensor]


class Block(nn.Module):
    """Pre-norm multi-head self-attention and a ReLU MLP, both residual, then a mean-pooled
    linear head.  ``einsum`` computes every product."""

    def __init__(self, d: int, heads: int, hidden: int, out: int, einsum: Einsum) -> None:
        super().__init__()
        self.einsum, self.heads, dh = einsum, heads, d // heads

        def weight(*shape: int, fan_in: int) -> nn.Parameter:
            return nn.Parameter(torch.randn(*shape, dtype=torch.float64) / math.sqrt(fan_in))

        self.wq, self.wk, self.wv = (weight(d, heads, dh, fan_in=d) for _ in range(3))
        self.wo = weight(heads, dh, d, fan_in=d)
        self.w1, self.w2 = weight(d, hidden, fan_in=d), weight(hidden, d, fan_in=hidden)
        self.b1 = nn.Parameter(torch.zeros(hidden, dtype=torch.float64))
        self.head = weight(d, out, fan_in=d)
        self.norm1 = nn.LayerNorm(d, dtype=torch.float64)
        self.norm2 = nn.LayerNorm(d, dtype=torch.float64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = self.einsum
        h = self.norm1(x)
        q, k, v = (e("btd,dhe->bhte", h, w) for w in (self.wq, self.wk, self.wv))
        scores = e("bhte,bhse->bhts", q, k) / math.sqrt(q.shape[-1])
        context = e("bhts,bhse->bhte", scores.softmax(-1), v)
        x = x + e("bhte,hed->btd", context, self.wo)
        hidden = torch.relu(e("btd,df->btf", self.norm2(x), self.w1) + self.b1)
        x = x + e("btf,fd->btd", hidden, self.w2)
        pooled = e("btd->bd", x) / x.shape[1]
        out: torch.Tensor = e("bd,do->bo", pooled, self.head)
        return out


def make_task(
    batch: int, length: int, d: int, out: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sequences and targets: the first-token-similarity-weighted mean of each sequence's
    tokens, through a fixed random projection, plus a little noise (the loss floor)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, d, generator=g, dtype=torch.float64)
    weights = torch.softmax(torch.einsum("btd,bd->bt", x, x[:, 0]) / math.sqrt(d), dim=1)
    projection = torch.randn(d, out, generator=g, dtype=torch.float64) / math.sqrt(d)
    y = torch.einsum("bt,btd,do->bo", weights, x, projection)
    return x, y + 0.05 * torch.randn(y.shape, generator=g, dtype=torch.float64)


def train(
    steps: int = 300,
    seed: int = 0,
    verbose: bool = True,
    d: int = 16,
    heads: int = 4,
    hidden: int = 32,
    batch: int = 32,
    length: int = 8,
    out: int = 3,
) -> tuple[list[float], list[float]]:
    """Train the einstride and the torch.einsum module from the same start; their losses."""
    x, y = make_task(batch, length, d, out, seed)
    torch.manual_seed(seed)
    ours = Block(d, heads, hidden, out, es.einsum)
    theirs = Block(d, heads, hidden, out, torch.einsum)
    theirs.load_state_dict(ours.state_dict())
    curves: list[list[float]] = [[], []]
    for model, curve in zip((ours, theirs), curves):
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        for _ in range(steps):
            optimizer.zero_grad()
            loss = torch.mean((model(x) - y) ** 2)
            loss.backward()
            optimizer.step()
            curve.append(float(loss.detach()))
    if verbose:
        for step in range(0, steps, max(1, steps // 12)):
            print(
                f"step {step:4d}  einstride {curves[0][step]:.15e}  "
                f"torch.einsum {curves[1][step]:.15e}"
            )
    return curves[0], curves[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    ours, theirs = train(args.steps, args.seed)
    gap = max(abs(a - b) for a, b in zip(ours, theirs))
    print(
        f"loss {ours[0]:.4e} -> {ours[-1]:.4e} (einstride), {theirs[0]:.4e} -> "
        f"{theirs[-1]:.4e} (torch.einsum); largest difference {gap:.2e}; "
        f"{time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
