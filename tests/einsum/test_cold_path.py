"""The cold path's shortcuts give what the general code gives: binding without '...', and
no path search for one or two operands."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import einstride as es
from einstride.engine.spec import walk
from einstride.engine.spec.equation import _bind_general, bind, parse_equation, parse_subscripts

LABELS = "abcdef"


@st.composite
def plain_equations(draw: Any) -> tuple[str, list[tuple[int, ...]]]:
    """Equations without '...' and operand shapes that may or may not fit them."""
    n = draw(st.integers(1, 4))
    terms = ["".join(draw(st.lists(st.sampled_from(LABELS), max_size=4))) for _ in range(n)]
    sizes = {x: draw(st.integers(0, 4)) for x in LABELS}
    shapes = []
    for term in terms:
        shape = [sizes[x] for x in term]
        if draw(st.integers(0, 9)) == 0 and shape:  # now and then a size or rank is wrong
            shape = shape[1:] if draw(st.booleans()) else [shape[0] + 1, *shape[1:]]
        shapes.append(tuple(shape))
    return ",".join(terms), shapes


@given(plain_equations())
def test_binding_without_ellipsis_matches_the_general_binding(
    case: tuple[str, list[tuple[int, ...]]],
) -> None:
    text, shapes = case
    equation = parse_subscripts(text)
    assert not equation.has_ellipsis
    try:
        expected = _bind_general(equation, shapes)
    except es.EinsumError as error:
        with pytest.raises(es.EinsumError) as raised:
            bind(equation, shapes)
        assert str(raised.value) == str(error)
        return
    assert bind(equation, shapes) == expected


def test_ellipsis_equations_take_the_general_binding() -> None:
    spec = parse_equation("...i,i", (5, 2, 3), (3,))
    assert parse_subscripts("...i,i").has_ellipsis
    assert spec.inputs == ((1, 2, 0), (0,)) and spec.names == ("i", "…0", "…1")


def test_one_or_two_operands_search_no_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_search(*args: Any) -> Any:
        raise AssertionError("a path search ran")

    monkeypatch.setattr(walk, "find_path", no_search)
    a, b = np.ones((3, 4)), np.ones((4, 5))
    es.clear_plan_cache()
    np.testing.assert_allclose(es.einsum("ij,jk->ik", a, b, optimize="greedy"), a @ b)
    np.testing.assert_allclose(es.einsum("ij->j", a, optimize="optimal"), a.sum(0))
    assert walk.plan_path(parse_equation("ij,jk", (3, 4), (4, 5)), "auto") == ((0, 1),)
