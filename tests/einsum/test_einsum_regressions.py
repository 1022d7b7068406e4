"""Named tricky cases, each checked against the brute-force oracle (and NumPy where it can)."""

from __future__ import annotations

import numpy as np
import pytest
from einsum_oracle import ELL, brute_force

import einstride as es
from einstride.memory import MAX_NDARRAY_RANK

RNG = np.random.default_rng(1234)


def _operand(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.integers(-3, 4, size=shape).astype(np.float64)


def _terms(text: str) -> tuple[list[list[str]], list[str]]:
    """Split an explicit ASCII equation into oracle terms (the oracle never parses)."""
    ins, out = text.split("->")

    def term(t: str) -> list[str]:
        return [ELL if x == "." else x for x in t.replace("...", ".")]

    return [term(t) for t in ins.split(",")], term(out)


NAMED = [
    ("tiijj->ij", [(2, 3, 3, 4, 4)]),
    ("a...a->...", [(3, 2, 5, 3)]),
    ("i...ii->...i", [(3, 2, 3, 3)]),
    ("aab,bcc->ac", [(3, 3, 4), (4, 2, 2)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),  # zero-size contraction: zeros
    ("ij,jk->ik", [(0, 4), (4, 3)]),  # zero-size free label: empty
    ("ijk,kl->il", [(2, 3, 0), (0, 5)]),
    ("->", [()]),
    (",->", [(), ()]),
    ("...->...", [(2, 3)]),
    ("...->...", [()]),
    ("i->iii", [(3,)]),
    ("ij,jk->iik", [(3, 4), (4, 2)]),
    ("ab,bc,cd->aad", [(3, 2), (2, 4), (4, 2)]),
    ("...i->...ii", [(2, 3)]),
    ("ii->i", [(4, 4)]),
    ("iii->", [(3, 3, 3)]),
    ("ij->", [(3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("abcd,dcbe->ae", [(2, 3, 4, 5), (5, 4, 3, 2)]),
    ("bi,ioj,bj->bo", [(2, 3), (3, 4, 5), (2, 5)]),
    ("ea,fb,abcd,gc,hd->efgh", [(2, 3), (2, 2), (3, 2, 2, 2), (2, 2), (2, 2)]),
    ("a...,a...->a...", [(2, 1, 4), (2, 3, 1)]),
    ("...,...->...", [(3, 1), (4,)]),
    ("ij->jii", [(2, 3)]),
    ("ab,ab->aab", [(2, 3), (2, 3)]),
]


@pytest.mark.parametrize(("equation", "shapes"), NAMED, ids=[e for e, _ in NAMED])
@pytest.mark.parametrize("optimize", [False, "greedy", "optimal"])
def test_named_case(equation: str, shapes: list[tuple[int, ...]], optimize: object) -> None:
    operands = [_operand(s) for s in shapes]
    terms, output = _terms(equation)
    expected = brute_force(terms, output, operands)
    got = es.einsum(equation, *operands, optimize=optimize)
    np.testing.assert_allclose(np.asarray(got), expected)
    assert np.shape(got) == expected.shape
    if len(set(output)) == len(output):
        np.testing.assert_allclose(np.asarray(got), np.einsum(equation, *operands))


def test_repeated_output_label_is_a_diagonal_of_zeros() -> None:
    x = np.arange(1.0, 4.0)
    got = es.einsum("i->iii", x)
    assert got.shape == (3, 3, 3)
    assert np.count_nonzero(got) == 3
    np.testing.assert_array_equal(got[np.arange(3), np.arange(3), np.arange(3)], x)


def test_seventy_matrix_chain_in_sublist_form() -> None:
    mats = [RNG.standard_normal((3, 3)) / 2 for _ in range(70)]
    args: list[object] = []
    for k, m in enumerate(mats):
        args += [m, [k, k + 1]]
    got = es.einsum(*args, [0, 70])
    np.testing.assert_allclose(got, np.linalg.multi_dot(mats), rtol=1e-9, atol=1e-12)


def test_sixty_label_unicode_string_equation() -> None:
    labels = [chr(0x4E00 + k) for k in range(60)]
    mats = [RNG.standard_normal((2, 2)) / 2 for _ in range(59)]
    terms = ",".join(labels[k] + labels[k + 1] for k in range(59))
    equation = f"{terms}->{labels[0]}{labels[59]}"
    assert len(set(equation) - {",", "-", ">"}) == 60
    got = es.einsum(equation, *mats)
    np.testing.assert_allclose(got, np.linalg.multi_dot(mats), rtol=1e-9, atol=1e-12)


def test_whitespace_is_ignored_anywhere() -> None:
    a, b = _operand((2, 3)), _operand((3, 4))
    np.testing.assert_allclose(es.einsum(" i j , j k - > i k ", a, b), a @ b)
    np.testing.assert_allclose(es.einsum("\tij,\njk", a, b), a @ b)


def test_unicode_digit_and_underscore_labels() -> None:
    a, b = _operand((2, 3)), _operand((3, 4))
    np.testing.assert_allclose(es.einsum("α7,7_->α_", a, b), a @ b)


def test_implicit_mode_sorts_by_code_point_and_puts_ellipsis_first() -> None:
    a = _operand((2, 3, 4))
    np.testing.assert_allclose(es.einsum("...ba", a), np.einsum("...ba", a))
    np.testing.assert_allclose(es.einsum("ba", a[0]), a[0].T)
    assert es.einsum("ii", _operand((3, 3))).shape == ()


def test_pure_view_results_are_views() -> None:
    a = _operand((3, 3))
    assert np.shares_memory(es.einsum("ij->ji", a), a)
    assert np.shares_memory(es.einsum("ii->i", a), a)


def test_unary_reduction_of_a_broadcast_operand() -> None:
    a = np.broadcast_to(_operand((1, 4)), (5, 4))
    np.testing.assert_allclose(es.einsum("ij->j", a), a.sum(0))


@pytest.mark.skipif(MAX_NDARRAY_RANK < 60, reason="NumPy 1 arrays have at most 32 axes")
def test_operands_with_more_axes_than_numpys_52_letters() -> None:
    x = RNG.integers(1, 3, size=(2, 3, 2) + (1,) * 57).astype(np.float64)  # 60 axes
    axes = list(range(60))
    np.testing.assert_allclose(
        es.einsum(x, axes, [1]), x.sum(axis=tuple(a for a in axes if a != 1))
    )
    np.testing.assert_allclose(
        es.einsum(x, axes, x, axes, [0, 2]), (x * x).sum(axis=tuple(range(3, 60))).sum(axis=1)
    )
    assert es.einsum(x, axes, axes[::-1]).shape == x.shape[::-1]
    assert es.einsum(x, axes, [0, 0, 1]).shape == (2, 2, 3)


@pytest.mark.parametrize("equation", ["ij->i", "ij,jk->ik", "ij,ij->", "i,j->ij"])
@pytest.mark.parametrize("requested", [">f8", ">f4", ">c16", "<f8"])
def test_dtype_of_the_other_byte_order_computes_in_its_native_twin(
    equation: str, requested: str
) -> None:
    # a review: dtype=">f8" went to NumPy's C loops as given and came back as garbage
    # (numpy.einsum's own bug); now its native twin, as NumPy's promotion gives
    rng = np.random.default_rng(7)
    shapes = {"ij->i": [(3, 4)], "ij,jk->ik": [(3, 4), (4, 5)], "ij,ij->": [(60, 70)] * 2,
              "i,j->ij": [(3,), (4,)]}[equation]  # fmt: skip
    operands = [rng.random(s) for s in shapes]
    native = np.dtype(requested).newbyteorder("=")
    expected = np.einsum(equation, *[x.astype(native) for x in operands])
    got = es.einsum(equation, *operands, dtype=requested)
    assert got.dtype == native
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    expression = es.contract_expression(equation, *shapes, dtype=requested)
    np.testing.assert_allclose(expression(*operands), expected, rtol=1e-5)


def test_a_pure_view_of_an_operand_of_the_other_byte_order_is_a_native_copy() -> None:
    # as documented (docs/einsum.md): NumPy returns a '>f8' view; the values agree
    x = np.arange(9.0).reshape(3, 3).astype(">f8")
    for equation in ("ii->i", "ij->ji"):
        got = es.einsum(equation, x)
        assert got.dtype == np.dtype("float64") and not np.shares_memory(got, x)
        np.testing.assert_array_equal(got, np.einsum(equation, x))
