"""Parser fuzzing: hypothesis-made equations (random Unicode, stray dots, arrows and commas,
huge label counts, very long equations; in the string and the sublist form) with random
operand lists.  The only outcomes are a correct result (checked against ``numpy.einsum``
wherever NumPy accepts the call and its semantics agree) or ``EinsumError``/``TypeError`` --
never another exception, never a hang."""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any

import numpy as np
from fuzzing import scaled
from hypothesis import event, given
from hypothesis import strategies as st

import einstride as es
from einstride import EinsumError, Tensor

SECONDS_PER_CALL = 5.0  # generous on a loaded 2-core machine; typical calls take microseconds
LETTERS = "abcijkxyz"
UNICODE_LABELS = "αβγ中文é_7٣𝔸"
NOISE = [
    ".",
    "..",
    "...",
    "....",
    "-",
    ">",
    "->",
    "-->",
    ",",
    ",,",
    " ",
    "\t",
    "\n",
    "\x00",
    "\u0301",
    "\ufeff",
    "\ud7ff",
    "…",
    "🙂",
    "A",
    "Z",
]


# -- equations that are often valid, and their operands -------------------------------------------


@st.composite
def grammar_cases(draw: st.DrawFn) -> tuple[str, list[Any]]:
    """An equation built from terms (valid about half the time), then perturbed."""
    labels = draw(st.sampled_from([LETTERS, LETTERS + UNICODE_LABELS]))
    sizes = {lab: draw(st.integers(0, 3)) for lab in labels}
    n_terms = draw(st.integers(1, 4))
    terms: list[str] = []
    shapes: list[tuple[int, ...]] = []
    ellipsis_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    for _ in range(n_terms):
        term = draw(st.lists(st.sampled_from(labels), max_size=4))
        with_ellipsis = draw(st.booleans()) and draw(st.booleans())
        shape = [sizes[lab] for lab in term]
        if with_ellipsis:
            at = draw(st.integers(0, len(term)))
            kept = ellipsis_shape[draw(st.integers(0, len(ellipsis_shape))) :]
            term.insert(at, "...")
            shape[at:at] = [draw(st.sampled_from([n, 1])) for n in kept]
        terms.append("".join(term))
        shapes.append(tuple(shape))
    equation = ",".join(terms)
    if draw(st.booleans()):
        used = sorted({c for t in terms for c in t.replace("...", "")})
        output = draw(st.lists(st.sampled_from(used), unique=True, max_size=4)) if used else []
        if draw(st.booleans()) and any("..." in t for t in terms):
            output.insert(0, "...")
        equation += "->" + "".join(output)
    for _ in range(draw(st.integers(0, 2))):  # perturb: a stray character anywhere
        at = draw(st.integers(0, len(equation)))
        equation = equation[:at] + draw(st.sampled_from(NOISE)) + equation[at:]
    if draw(st.integers(0, 9)) == 0:  # a wrong rank or size
        k = draw(st.integers(0, len(shapes) - 1))
        shapes[k] = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    return equation, [operand(draw, s) for s in shapes]


def operand(draw: st.DrawFn, shape: tuple[int, ...]) -> Any:
    values = (np.arange(int(np.prod(shape))) % 5 - 2).reshape(shape)
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64, np.complex128, np.bool_]))
    arr = values.astype(dtype)
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return es.tensor(arr)
    if kind == 1:
        return arr.tolist()
    if kind == 2 and arr.ndim >= 2:
        return np.ascontiguousarray(arr.T).T  # transposed strides
    return arr


JUNK = [
    None,
    "abc",
    b"ab",
    {},
    {1, 2},
    object(),
    [[1], [1, 2]],
    1 + 2j,
    2.5,
    3,
    True,
    np.float32(1),
    np.array("x"),
    np.array([None]),
    np.array(["2020-01-01"], "M8[D]"),
]


@st.composite
def random_cases(draw: st.DrawFn) -> tuple[Any, list[Any]]:
    """Anything at all for the equation and the operands."""
    equation = draw(
        st.one_of(
            st.text(max_size=30),
            st.lists(st.sampled_from(list(LETTERS + UNICODE_LABELS) + NOISE), max_size=25).map(
                "".join
            ),
            st.sampled_from([None, 3, b"ij", ["i"], ("i",)]),
        )
    )
    operands = draw(
        st.lists(
            st.one_of(
                st.lists(st.integers(0, 3), max_size=3).map(lambda s: np.ones(tuple(s))),
                st.sampled_from(JUNK),
            ),
            max_size=4,
        )
    )
    return equation, operands


@st.composite
def huge_cases(draw: st.DrawFn) -> tuple[str, list[Any]]:
    """Very long equations and huge label counts."""
    kind = draw(
        st.sampled_from(
            [
                "many labels",
                "long term",
                "many operands",
                "whitespace",
                "many ellipses",
                "deep chain",
            ]
        )
    )
    n = draw(st.integers(50, 3000))
    if kind == "many labels":  # one term, n distinct labels, a rank-n operand (too many dims)
        labels = "".join(chr(0x4E00 + k) for k in range(n))
        return labels + "->" + labels[::-1], [np.ones((1,) * min(n, 64))]
    if kind == "long term":
        return "i" * n + "->i", [np.ones((2,) * draw(st.integers(0, 3)))]
    if kind == "many operands":
        count = draw(st.integers(30, 200))
        return ",".join("i" for _ in range(count)) + "->i", [np.ones(2)] * count
    if kind == "whitespace":
        return " " * n + "ij" + "\t" * n + "->" + "\n" * n + "ji", [np.ones((2, 3))]
    if kind == "many ellipses":
        return "...," * n + "...", [np.ones(2)] * (n + 1)
    count = draw(st.integers(20, 120))
    labels = [chr(0x3400 + k) for k in range(count + 1)]
    equation = ",".join(labels[k] + labels[k + 1] for k in range(count))
    return equation + "->" + labels[0] + labels[-1], [np.full((2, 2), 0.5)] * count


# -- the property ---------------------------------------------------------------------------------


NUMPY_ALPHABET = re.compile(r"[A-Za-z.,\-> ]*")


def numpy_says(equation: Any, operands: list[Any]) -> Any:
    """NumPy's answer, or None when NumPy refuses or reads the equation differently (its
    labels are ASCII letters only, and its C parser stops at a NUL character)."""
    if not isinstance(equation, str) or not NUMPY_ALPHABET.fullmatch(equation):
        return None
    try:
        plain = [o.numpy() if isinstance(o, Tensor) else o for o in operands]
        return np.einsum(equation, *plain)
    except Exception:
        return None


def check_outcome(equation: Any, operands: list[Any]) -> None:
    start = time.perf_counter()
    try:
        result = es.einsum(equation, *operands)
    except (EinsumError, TypeError) as error:
        event(type(error).__name__)
        assert str(error), "an error must say what is wrong"
        return
    finally:
        elapsed = time.perf_counter() - start
        assert elapsed < SECONDS_PER_CALL, f"{elapsed:.1f} s for {equation!r}"
    event("result")
    expected = numpy_says(equation, operands)
    if expected is not None:
        event("checked against numpy")
        got = result.numpy() if isinstance(result, Tensor) else np.asarray(result)
        assert got.shape == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert isinstance(result, Tensor) == any(isinstance(o, Tensor) for o in operands)


@scaled(400)
@given(grammar_cases())
def test_grammar_made_equations(case):
    check_outcome(*case)


@scaled(300)
@given(random_cases())
def test_random_equations_and_operands(case):
    check_outcome(*case)


@scaled(25)
@given(huge_cases())
def test_huge_label_counts_and_long_equations(case):
    check_outcome(*case)


@st.composite
def sublist_cases(draw: st.DrawFn) -> list[Any]:
    item = st.one_of(
        st.integers(0, 5),
        st.just(Ellipsis),
        st.integers(-2, 2**70),
        st.sampled_from([True, 1.0, "a", None, [0], np.int8(3), np.uint64(2)]),
    )
    args: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        args.append(operand(draw, tuple(draw(st.lists(st.integers(1, 3), max_size=3)))))
        args.append(draw(st.one_of(st.lists(item, max_size=4), st.sampled_from(JUNK))))
    if draw(st.booleans()):
        args.append(draw(st.lists(item, max_size=3)))
    return args


@scaled(300)
@given(sublist_cases())
def test_sublist_form(args):
    start = time.perf_counter()
    try:
        result = es.einsum(*args)
    except (EinsumError, TypeError):
        return
    assert time.perf_counter() - start < SECONDS_PER_CALL
    expected = numpy_says_sublists(args)
    if expected is not None:
        np.testing.assert_allclose(
            np.asarray(result.numpy() if isinstance(result, Tensor) else result),
            expected,
            rtol=1e-5,
            atol=1e-6,
        )


def numpy_says_sublists(args: list[Any]) -> Any:
    try:
        plain = [a.numpy() if isinstance(a, Tensor) else a for a in args]
        return np.einsum(*plain)
    except Exception:
        return None


def shape_of(x: Any) -> Any:
    """A shape for contract_expression (or the junk itself, to feed it junk too)."""
    if isinstance(x, (np.ndarray, Tensor)):
        return x.shape
    try:
        return np.shape(x) if isinstance(x, list) else x
    except ValueError:  # a ragged list
        return x


@scaled(150)
@given(st.one_of(grammar_cases(), random_cases()))
def test_path_and_expression_entry_points(case):
    equation, operands = case
    shapes = [shape_of(o) for o in operands]
    for call in (
        lambda: es.einsum_path(equation, *operands),
        lambda: es.contract_expression(equation, *shapes)(*operands),
        lambda: es.parse_equation(equation, *shapes),
    ):
        start = time.perf_counter()
        with contextlib.suppress(EinsumError, TypeError):
            call()
        assert time.perf_counter() - start < SECONDS_PER_CALL
