"""Multi-head self-attention + MLP written only with einstride, trained with plain SGD.

Every product is an ``einsum``; every backward step through a product is an ``einsum_vjp``.
The task is generated here: each sequence's target is the attention-friendly "mean of the
tokens most similar to the first token", projected to a few outputs.

Run: ``python examples/attention.py`` (prints the loss falling; well under a minute).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

import einstride as es

Array = np.ndarray


@dataclass
class Params:
    wq: Array
    wk: Array
    wv: Array
    wo: Array
    w1: Array
    w2: Array
    wout: Array

    def items(self) -> list[tuple[str, Array]]:
        return list(vars(self).items())


def init_params(d: int, heads: int, hidden: int, out: int, rng: np.random.Generator) -> Params:
    dh = d // heads

    def glorot(*shape: int, fan_in: int, fan_out: int) -> Array:
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, shape)

    return Params(
        wq=glorot(d, heads, dh, fan_in=d, fan_out=d),
        wk=glorot(d, heads, dh, fan_in=d, fan_out=d),
        wv=glorot(d, heads, dh, fan_in=d, fan_out=d),
        wo=glorot(heads, dh, d, fan_in=d, fan_out=d),
        w1=glorot(d, hidden, fan_in=d, fan_out=hidden),
        w2=glorot(hidden, d, fan_in=hidden, fan_out=d),
        wout=glorot(d, out, fan_in=d, fan_out=out),
    )


def make_task(n: int, t: int, d: int, out: int, rng: np.random.Generator) -> tuple[Array, Array]:
    """Targets depend on token interactions: a softmax-weighted mean keyed on token 0."""
    x = rng.standard_normal((n, t, d))
    proj = rng.standard_normal((d, out)) / np.sqrt(d)
    scores = es.einsum("nd,ntd->nt", x[:, 0], x) / np.sqrt(d)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    pooled = es.einsum("nt,ntd->nd", weights, x)
    return x, es.einsum("nd,do->no", pooled, proj)


def softmax(s: Array) -> Array:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def forward(p: Params, x: Array) -> tuple[Array, dict[str, Array]]:
    dh = p.wq.shape[2]
    q = es.einsum("btd,dhe->bhte", x, p.wq)
    k = es.einsum("btd,dhe->bhte", x, p.wk)
    v = es.einsum("btd,dhe->bhte", x, p.wv)
    att = softmax(es.einsum("bhqe,bhke->bhqk", q, k) / np.sqrt(dh))
    ctx = es.einsum("bhqk,bhke->bhqe", att, v)
    h1 = x + es.einsum("bhte,hed->btd", ctx, p.wo)
    pre = es.einsum("btd,df->btf", h1, p.w1)
    act = np.maximum(pre, 0.0)
    h2 = h1 + es.einsum("btf,fd->btd", act, p.w2)
    pooled = es.einsum("btd->bd", h2) / x.shape[1]
    y = es.einsum("bd,do->bo", pooled, p.wout)
    cache = dict(
        x=x, q=q, k=k, v=v, att=att, ctx=ctx, h1=h1, pre=pre, act=act, h2=h2, pooled=pooled
    )
    return y, cache


def backward(p: Params, c: dict[str, Array], dy: Array) -> Params:
    vjp = es.einsum_vjp
    dh = p.wq.shape[2]
    t = c["x"].shape[1]
    dpooled, dwout = vjp("bd,do->bo", (c["pooled"], p.wout), dy)
    (dh2,) = vjp("btd->bd", (c["h2"],), dpooled / t)
    dact, dw2 = vjp("btf,fd->btd", (c["act"], p.w2), dh2)
    dpre = dact * (c["pre"] > 0)
    dh1_mlp, dw1 = vjp("btd,df->btf", (c["h1"], p.w1), dpre)
    dh1 = dh2 + dh1_mlp
    dctx, dwo = vjp("bhte,hed->btd", (c["ctx"], p.wo), dh1)
    datt, dv = vjp("bhqk,bhke->bhqe", (c["att"], c["v"]), dctx)
    att = c["att"]
    row = es.einsum("bhqk,bhqk->bhq", datt, att)
    dscores = att * (datt - row[..., None]) / np.sqrt(dh)
    dq, dk = vjp("bhqe,bhke->bhqk", (c["q"], c["k"]), dscores)
    _, dwq = vjp("btd,dhe->bhte", (c["x"], p.wq), dq)
    _, dwk = vjp("btd,dhe->bhte", (c["x"], p.wk), dk)
    _, dwv = vjp("btd,dhe->bhte", (c["x"], p.wv), dv)
    return Params(wq=dwq, wk=dwk, wv=dwv, wo=dwo, w1=dw1, w2=dw2, wout=dwout)


def train(steps: int = 600, lr: float = 0.3, seed: int = 0, verbose: bool = True) -> list[float]:
    """Train on the synthetic task; returns the loss after every step."""
    rng = np.random.default_rng(seed)
    d, heads, hidden, out, t = 16, 4, 32, 4, 8
    x, y = make_task(512, t, d, out, rng)
    p = init_params(d, heads, hidden, out, rng)
    losses = []
    for step in range(steps):
        batch = rng.choice(len(x), 64, replace=False)
        pred, cache = forward(p, x[batch])
        err = pred - y[batch]
        loss = float(es.einsum("bo,bo->", err, err) / err.size)
        losses.append(loss)
        grads = backward(p, cache, 2.0 * err / err.size)
        for (name, w), (_, g) in zip(p.items(), grads.items()):
            setattr(p, name, w - lr * g)
        if verbose and (step % max(1, steps // 10) == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {loss:.5f}")
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--lr", type=float, default=0.3)
    args = parser.parse_args()
    start = time.perf_counter()
    losses = train(args.steps, args.lr)
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    print(f"loss {first:.5f} -> {last:.5f} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
