"""Every malformed equation, rank, operand-count, size, operand and out= error: its class and
that its message names the equation and the offending label/term/operand."""

from __future__ import annotations

import time

import numpy as np
import pytest

import einstride as es
from einstride import EinsumError, LayoutError

MALFORMED = [
    # (equation, shapes, fragments the message must contain)
    (
        "ij,jk->ik",
        [(2, 3), (4, 5)],
        [
            "einsum 'ij,jk->ik': operand 1 label 'j' (position 3) has size 4, but operand 0 gave it "
            "size 3"
        ],
    ),
    ("ij,jk->ik", [(2, 1), (3, 4)], ["label 'j'", "size 3", "size 1", "'...'"]),
    ("ii->i", [(2, 3)], ["operand 0 label 'i' (position 1)", "size 3", "size 2"]),
    ("i->j", [(2,)], ["output label 'j' (position 3)", "appears in no input"]),
    ("i.j->i", [(2, 3)], ["'.' (position 1)"]),
    ("i..->i", [(2,)], ["'.' (position 1)", "ellipsis"]),
    ("...i...->i", [(2, 3)], ["second '...'", "position 4"]),
    ("i->i->i", [(2,)], ["second '->'", "position 4"]),
    ("i-i", [(2,)], ["'-' (position 1)"]),
    ("i>i", [(2,)], ["'>' (position 1)"]),
    ("i,j->i,j", [(2,), (3,)], ["output cannot have ','", "position 6"]),
    ("ij", [(2,)], ["operand 0 has 1 dimension", "term 'ij'", "2 label"]),
    ("ij,j", [(2, 3), (3, 1)], ["operand 1 has 2 dimension", "term 'j'"]),
    ("...ij", [(2,)], ["operand 0", "term '...ij'", "besides '...'"]),
    ("ij,jk", [(2, 3)], ["'ij,jk'", "2 input term(s) but 1 operand(s)"]),
    ("ij", [(2, 3), (3, 4)], ["1 input term(s) but 2 operand(s)"]),
    (
        "...i,...i->...i",
        [(2, 3), (4, 3)],
        ["operand 1's '...' dimension 0 has size 4", "operand 0's has size 2"],
    ),
    ("...i->i", [(2, 3)], ["'...i->i'", "no '...'"]),
    ("...i->i", [(1, 3)], ["no '...'"]),
]


@pytest.mark.parametrize(
    ("equation", "shapes", "fragments"),
    MALFORMED,
    ids=[f"{e}-{k}" for k, (e, _, _) in enumerate(MALFORMED)],
)
def test_malformed_equations_raise_einsum_error(
    equation: str, shapes: list[tuple[int, ...]], fragments: list[str]
) -> None:
    operands = [np.ones(s) for s in shapes]
    with pytest.raises(EinsumError) as info:
        es.einsum(equation, *operands)
    message = str(info.value)
    assert message.startswith("einsum ")
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_parse_errors_come_before_any_operand_is_looked_at() -> None:
    with pytest.raises(EinsumError, match="appears in no input"):
        es.einsum("i->j", object())


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((np.ones(2), ["a"]), "'a' at index 0"),
        ((np.ones(2), [-1]), "negative label -1"),
        ((np.ones(2), [True]), "True at index 0"),
        ((np.ones(2), [0], [1]), "output label 1"),
        ((np.ones((2, 2)), [0, ..., ...]), "second '...'"),
        ((np.ones(2), [0], [0, ..., ...]), "second '...'"),
        ((np.ones(2), "ab"), "must be a list"),
        ((np.ones((2, 3)), [0, 0]), "label '0' (sublist index 1)"),
    ],
)
def test_sublist_errors(args: tuple[object, ...], fragment: str) -> None:
    with pytest.raises(EinsumError) as info:
        es.einsum(*args)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("optimize", "fragment"),
    [
        ("fastest", "unknown optimize='fastest'"),
        ([(0, 5), (0, 1)], "names operand 5"),
        ([(0, 1)], "leaves 2 operands"),
        ([(0, 0), (0, 1)], "distinct operands"),
        ([("a", 1)], "not a tuple of ints"),
        (3.5, "neither a path finder name"),
    ],
)
def test_bad_optimize(optimize: object, fragment: str) -> None:
    ops = [np.ones((2, 2))] * 3
    with pytest.raises(EinsumError) as info:
        es.einsum("ij,jk,kl->il", *ops, optimize=optimize)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "operand",
    [
        np.array(["a", "b"]),
        np.array([1, 2], dtype=object),
        np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
        [[1, 2], [3]],
    ],
)
def test_non_numeric_or_unconvertible_operands_raise_type_error(operand: object) -> None:
    with pytest.raises(TypeError, match="einsum"):
        es.einsum("i->", operand)


def test_subscripts_of_the_wrong_type() -> None:
    with pytest.raises(TypeError):
        es.einsum("i->", np.ones(2), dtype="not a dtype")
    with pytest.raises(TypeError):
        es.einsum("i->", np.ones(2), memory_limit=1.5)
    # a string is a size ("64MiB"), the same on every backend; a malformed one is a value error
    with pytest.raises(EinsumError, match="not a size in bytes"):
        es.einsum("i->", np.ones(2), memory_limit="lots")
    with pytest.raises(EinsumError, match="must be >= 0 bytes"):
        es.einsum("i->", np.ones(2), memory_limit=-1)


def test_a_size_string_is_read_exactly() -> None:
    # a review: read through a float, 400 digits raised OverflowError and a 17-digit limit
    # lost its last byte
    x = np.ones(3)
    huge = "1" + "0" * 400
    assert es.einsum("i->", x, memory_limit=huge) == 3.0
    assert es.contract_expression("i->", (3,), memory_limit=huge + "PiB")(x) == 3.0
    assert es.contract_expression("i->", (3,))(x, memory_limit=huge) == 3.0
    with pytest.raises(EinsumError, match="too many digits"):
        es.einsum("i->", x, memory_limit="9" * 5000)


def test_out_of_the_wrong_shape() -> None:
    with pytest.raises(
        EinsumError, match=r"out= has shape \(3,\), but the result has shape \(2,\)"
    ):
        es.einsum("ij->i", np.ones((2, 3)), out=np.empty(3))


def test_out_that_overlaps_an_operand_is_a_layout_error_and_out_is_untouched() -> None:
    a = np.arange(16.0).reshape(4, 4)
    before = a.copy()
    with pytest.raises(LayoutError, match="overlaps input 0"):
        es.einsum("ij,jk->ik", a, np.ones((4, 4)), out=a)
    np.testing.assert_array_equal(a, before)
    buf = np.arange(20.0)
    x, out = buf[:16].reshape(4, 4), buf[4:8]
    saved = out.copy()
    with pytest.raises(LayoutError):
        es.einsum("ij->i", x, out=out)
    np.testing.assert_array_equal(out, saved)


def test_out_that_is_read_only_or_not_an_array() -> None:
    out = np.zeros(2)
    out.flags.writeable = False
    with pytest.raises(LayoutError, match="read-only"):
        es.einsum("ij->i", np.ones((2, 3)), out=out)
    with pytest.raises(TypeError, match="out="):
        es.einsum("ij->i", np.ones((2, 3)), out=[0.0, 0.0])
    with pytest.raises(TypeError, match="float64"):
        es.einsum("ij->i", np.ones((2, 3)), out=np.zeros(2, np.int64))


def test_memory_guard_fails_fast_naming_the_step_and_size() -> None:
    start = time.perf_counter()
    with pytest.raises(EinsumError) as info:
        es.einsum("i->iii", np.ones(10**5))
    assert time.perf_counter() - start < 1.0
    message = str(info.value)
    assert "output" in message and "8,000,000,000,000,000 bytes" in message
    assert "(100000, 100000, 100000)" in message


def test_an_intermediate_over_the_memory_limit_is_sliced_a_result_over_it_raises() -> None:
    a, b, c = np.ones((100, 2)), np.ones((2, 100)), np.ones((100, 3))
    path = [(0, 1), (0, 1)]  # an 80,000-byte intermediate ik
    for limit in (50_000, 100_000):
        np.testing.assert_allclose(
            es.einsum("ij,jk,kl->il", a, b, c, optimize=path, memory_limit=limit), a @ b @ c
        )
    report = es.explain("ij,jk,kl->il", a, b, c, optimize=path, memory_limit=50_000)
    assert "sliced over" in report and "would peak at 82,400 B" in report
    with pytest.raises(EinsumError) as info:  # the result alone takes 2,400 bytes
        es.einsum("ij,jk,kl->il", a, b, c, optimize=path, memory_limit=2_000)
    message = str(info.value)
    assert "output would allocate 2,400 bytes" in message and "limit of 2,000 bytes" in message


def test_expression_checks_its_operands() -> None:
    expr = es.contract_expression("ij,jk->ik", (2, 3), (3, 4))
    with pytest.raises(EinsumError, match="takes 2 operand"):
        expr(np.ones((2, 3)))
    with pytest.raises(EinsumError, match=r"operand 1 has shape \(3, 5\)"):
        expr(np.ones((2, 3)), np.ones((3, 5)))


def test_sublist_form_without_operands_is_an_einsum_error() -> None:
    with pytest.raises(es.EinsumError, match="operand"):
        es.einsum([])


def test_cache_functions_are_exported() -> None:
    es.clear_plan_cache()
    es.einsum("ij->j", np.ones((2, 3)))
    assert es.plan_cache_info() is not None
