"""Quick checks of the core's spec examples (the full suites live beside this file)."""

import numpy as np
import pytest

import einstride as es


def test_spec_model_example() -> None:
    storage = np.arange(1, 7)
    t = es.Tensor(storage, shape=(2, 2), strides=(3, 1))
    assert t.numpy().tolist() == [[1, 2], [4, 5]]
    assert (t.shape, t.strides, t.offset) == ((2, 2), (3, 1), 0)
    assert np.shares_memory(t.numpy(), storage)
    assert es.Tensor(storage).shape == (6,)
    assert es.Tensor(storage, shape=()).numpy() == 1


def test_out_of_bounds_is_rejected() -> None:
    with pytest.raises(es.LayoutError):
        es.Tensor(np.arange(4), shape=(2, 2), strides=(3, 1))
