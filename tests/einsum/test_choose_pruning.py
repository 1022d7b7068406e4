"""``pairs.choose`` skips the copying options of an output way once a view of that way
costs no more than any copy could (issue 14: the cost model runs only where its answer can
change the plan): the choice equals scoring every option."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from test_shape_generic import twins

import einstride as es
from einstride.engine.backends.numpy import pairs
from einstride.engine.backends.numpy import plan as planner
from einstride.engine.backends.numpy.cache import clear_plan_cache


def _every_option(a: Any, b: Any, g: Any, outs: Any, **kw: Any) -> pairs.Choice:
    found = []
    ct = kw["ct"]
    for rank, out in enumerate(outs):
        for copy_a in (True,) if a.dtype != ct else (False, True):
            for copy_b in (True,) if b.dtype != ct else (False, True):
                option = pairs._option(a, b, g, out, rank, copy_a, copy_b, ct, kw["sizes"],
                                       kw["pref_m"], kw["pref_n"], kw["options"])  # fmt: skip
                if option is not None:
                    found.append(((option.cost, copy_a + copy_b, rank), option))
    _, best = min(found, key=lambda item: item[0])
    return pairs._with_reasons(best, a, b, g, ct, kw["names"])


@settings(max_examples=150, deadline=None)
@given(twins())
def test_the_pruned_choice_equals_the_choice_over_every_option(
    case: tuple[str, list[np.ndarray], list[np.ndarray]],
) -> None:
    equation, operands, _ = case
    compared = []

    def checked(*args: Any, **kw: Any) -> pairs.Choice:
        pick = pairs.choose(*args, **kw)
        compared.append(pick == _every_option(*args, **kw))
        return pick

    clear_plan_cache()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(planner, "choose", checked)
        es.einsum(equation, *operands)
    assert all(compared)
