"""einops on einstride Tensors (einstride.einops_backend): the results equal einops on the
NumPy arrays holding the same values, are Tensors, and are views where einops' NumPy
backend gives views."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

einops = pytest.importorskip("einops")

import einstride as es  # noqa: E402
import einstride.einops_backend  # noqa: E402

X = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5) % 7


@pytest.mark.parametrize(
    ("pattern", "sizes"),
    [
        ("b c h w -> b (c h w)", {}),
        ("b c h w -> w h c b", {}),
        ("b c (h1 h2) w -> b c h1 h2 w", {"h1": 2}),
        ("b c h w -> (b c) h w", {}),
    ],
)
def test_rearrange(pattern, sizes):
    t = es.as_tensor(X)
    got = einops.rearrange(t, pattern, **sizes)
    expected = einops.rearrange(X, pattern, **sizes)
    assert isinstance(got, es.Tensor)
    np.testing.assert_array_equal(got.numpy(), expected)
    assert np.shares_memory(got.numpy(), X) == np.shares_memory(expected, X)


@pytest.mark.parametrize("operation", ["sum", "mean", "max", "min", "prod"])
def test_reduce(operation):
    t = es.as_tensor(X)[:, :, ::2]  # a strided view
    got = einops.reduce(t, "b c h w -> b w", operation)
    expected = einops.reduce(X[:, :, ::2], "b c h w -> b w", operation)
    assert isinstance(got, es.Tensor) and got.dtype == expected.dtype
    np.testing.assert_allclose(got.numpy(), expected)


def test_repeat_and_pack():
    t = es.as_tensor(X[0, 0])
    got = einops.repeat(t, "h w -> h w r", r=3)
    np.testing.assert_array_equal(got.numpy(), einops.repeat(X[0, 0], "h w -> h w r", r=3))
    stacked = einops.rearrange([es.as_tensor(X[0]), es.as_tensor(X[1])], "n c h w -> c n h w")
    np.testing.assert_array_equal(stacked.numpy(), X.transpose(1, 0, 2, 3))


def test_einsum():
    a, b = es.as_tensor(X), es.as_tensor(X[0, 0])
    got = einops.einsum(a, b, "batch c h w, h w -> batch c")
    assert isinstance(got, es.Tensor)
    np.testing.assert_allclose(got.numpy(), np.einsum("bchw,hw->bc", X, X[0, 0]))


def test_mean_of_integers_is_refused_as_for_every_einops_backend():
    with pytest.raises(NotImplementedError):
        einops.reduce(es.as_tensor(np.arange(6).reshape(2, 3)), "a b -> a", "mean")


@pytest.mark.parametrize("order", ["einops first", "einstride first"])
def test_registration(order):
    """``import einstride`` registers the backend when einops is already imported; otherwise
    ``import einstride.einops_backend`` does (a fresh interpreter for each order)."""
    imports = (
        "import einops, einstride"
        if order == "einops first"
        else "import einstride, einops; import einstride.einops_backend"
    )
    code = (
        f"{imports}; import numpy as np\n"
        "t = einstride.as_tensor(np.ones((2, 3)))\n"
        "print(type(einops.rearrange(t, 'a b -> b a')).__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=None
    )
    assert done.stdout.strip() == "Tensor", done.stderr
