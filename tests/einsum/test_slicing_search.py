"""The slicer's incremental pricing (spec/slicing.py): what one pass over the moments and
contractions says of every label's new width is what a fresh evaluation at that width
says, exactly (a review: the search evaluated every candidate afresh, seconds to minutes
for a 7 x 7 or 8 x 8 lattice under a memory limit)."""

from __future__ import annotations

import math

import opt_einsum as oe
import opt_einsum.testing  # (the submodule rand_equation lives in)
from hypothesis import given, settings
from hypothesis import strategies as st

from einstride.engine.spec.equation import parse_equation
from einstride.engine.spec.slicing import PathModel, chunk_counts, path_model


def _model(n: int, seed: int) -> PathModel:
    equation, shapes = oe.testing.rand_equation(n, 3, seed=seed, d_min=2, d_max=5)
    spec = parse_equation(equation, *[tuple(s) for s in shapes])
    path, _ = oe.contract_path(equation, *shapes, shapes=True, optimize="greedy")
    return path_model(spec, path)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(4, 14), seed=st.integers(0, 10**6), data=st.data())
def test_one_pass_prices_every_label_s_new_width_exactly(
    n: int, seed: int, data: st.DataObject
) -> None:
    model = _model(n, seed)
    widths = tuple(data.draw(st.integers(1, size)) if size > 1 else size for size in model.sizes)
    labels = [x for x, w in enumerate(widths) if w > 1]
    for whole in (False, True):
        elements, total, halved = model.halvings(widths, labels, whole=whole)
        assert (elements, total) == (model.buffer_elements(widths), model.buffer_total(widths))
        for x in labels:
            trial = list(widths)
            trial[x] = 1 if whole else math.ceil(widths[x] / 2)
            assert halved[x] == (
                model.buffer_elements(tuple(trial)),
                model.buffer_total(tuple(trial)),
            )
    flops, inside = model.flops_within(widths)
    assert flops == model.flops(widths)
    counts = chunk_counts(model.sizes, widths)
    for x in labels:
        trial = list(widths)
        trial[x] = math.ceil(widths[x] / 2)
        more = chunk_counts((model.sizes[x],), (trial[x],))[0]
        priced = inside.get(x, 0) + (flops - inside.get(x, 0)) // counts[x] * more
        assert priced == model.flops(tuple(trial))
