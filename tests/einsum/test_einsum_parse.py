"""The parser: Equation and EinsumSpec from string and sublist forms."""

from __future__ import annotations

import pytest
from einsum_oracle import ELL
from einsum_strategies import cases
from hypothesis import HealthCheck, given, settings

from einstride import EinsumError
from einstride.engine.spec.equation import (
    ELLIPSIS,
    bind,
    parse_equation,
    parse_sublists,
    parse_subscripts,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(cases())
def test_parsed_terms_follow_the_written_labels(case) -> None:
    eq = parse_subscripts(case.render())
    name = {label: eq.names[label] for label in range(len(eq.names))}

    def written(term: tuple[int, ...]) -> list[str]:
        return [ELL if x == ELLIPSIS else name[x] for x in term]

    assert [written(t) for t in eq.terms] == case.terms
    assert written(eq.output) == case.output
    assert eq.explicit == case.explicit
    spec = bind(eq, case.shapes)
    assert spec.shapes() == tuple(case.shapes)
    assert all(len(t) == len(s) for t, s in zip(spec.inputs, case.shapes))


def test_spec_fields() -> None:
    spec = parse_equation("b...ij,b...jk->b...ik", (2, 5, 3, 4), (2, 1, 4, 6))
    assert spec.names == ("b", "i", "j", "k", "…0")
    assert spec.inputs == ((0, 4, 1, 2), (0, 4, 2, 3))
    assert spec.output == (0, 4, 1, 3)
    assert spec.sizes == (2, 3, 4, 6, 5)
    assert spec.stretched == ((), (1,))
    assert spec.output_shape == (2, 5, 3, 6)
    assert spec.describe() == "b …0 i j,b …0 j k->b …0 i k"


def test_positions_skip_whitespace_but_count_it() -> None:
    eq = parse_subscripts(" i j , j k -> i k")
    assert eq.positions == ((1, 3), (7, 9))
    assert eq.output_positions == (14, 16)
    assert eq.where(1, 0) == "position 7"


def test_repeated_labels_and_implicit_output() -> None:
    assert parse_subscripts("ii").output == ()
    assert parse_subscripts("ij,jk").output == (0, 2)
    eq = parse_subscripts("cba,a")
    assert [eq.names[x] for x in eq.output] == ["b", "c"]
    assert parse_subscripts("i...,j").output == (ELLIPSIS, 0, 1)
    assert parse_subscripts("i->iii").output == (0, 0, 0)


def test_sublist_form() -> None:
    eq = parse_sublists([[5, ...], [5, 3]], [..., 3])
    assert eq.terms == ((0, ELLIPSIS), (0, 1))
    assert eq.output == (ELLIPSIS, 1)
    assert eq.names == ("5", "3")
    assert eq.sublist and eq.where(1, 1) == "sublist index 1"
    assert parse_sublists([[100, 2], [2, 7]]).output == (2, 0)  # 7 < 100: by value


def test_parsing_is_cached() -> None:
    assert parse_subscripts("ab,bc->ac") is parse_subscripts("ab,bc->ac")


def test_labels_are_unlimited() -> None:
    labels = "".join(chr(0x100 + k) for k in range(300))
    eq = parse_subscripts(f"{labels}->{labels[::-1]}")
    assert len(eq.names) == 300 and eq.output == tuple(range(299, -1, -1))


@pytest.mark.parametrize("bad", [3, None, b"ij"])
def test_subscripts_must_be_text(bad: object) -> None:
    with pytest.raises(TypeError):
        parse_subscripts(bad)  # type: ignore[arg-type]


def test_the_specs_lookups_name_what_they_miss() -> None:
    # (an IndexError before: the family's rule holds for the exported spec classes too)
    spec = parse_equation("ij->ji", (2, 3))
    for lookup in (
        lambda: spec.equation.where(5, 0),
        lambda: spec.equation.where(0, 7),
        lambda: spec.label_string([9]),
    ):
        with pytest.raises(EinsumError, match=r"no (term|item|label) "):
            lookup()
    assert spec.equation.where(0, 1) == "position 1" and spec.label_string([1, 0]) == "ji"
