"""``einstride.contract`` and ``einstride.contract_path``: opt_einsum's entry points, for
code written for opt_einsum with the import swapped (docs/einsum.md, *Drop-in use*; a
review found the docs promising that swap while neither existed).  opt_einsum's own
suites run ``contract`` through einstride's (test_opt_einsum_routed.py); here the path
and its ``PathInfo``, the keywords, and the refusals."""

from __future__ import annotations

from typing import Any

import numpy as np
import opt_einsum
import pytest
from opt_einsum.contract import PathInfo

import einstride as es

NETWORKS = [
    ("ij,jk,kl->il", [(1000, 2), (2, 1000), (1000, 3)]),
    ("abc,cd,dbe,ea->", [(4, 5, 6), (6, 7), (7, 5, 8), (8, 4)]),
    ("ab,bc,cd,de,ef,fg,gh,ha->", [(3, 4), (4, 5), (5, 3), (3, 6), (6, 2), (2, 7), (7, 3), (3, 3)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ij,ij,ij->", [(3, 4)] * 3),
]


def _operands(shapes: list[tuple[int, ...]], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random(s) for s in shapes]


@pytest.mark.parametrize(("equation", "shapes"), NETWORKS)
@pytest.mark.parametrize("optimize", [True, "greedy", "optimal", "dp", False])
def test_contract_gives_opt_einsums_values(
    equation: str, shapes: list[tuple[int, ...]], optimize: Any
) -> None:
    ops = _operands(shapes)
    expected = opt_einsum.contract(equation, *ops, optimize=optimize)
    got = es.contract(equation, *ops, optimize=optimize, use_blas=False)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert np.shape(got) == np.shape(expected)


@pytest.mark.parametrize(("equation", "shapes"), NETWORKS)
@pytest.mark.parametrize("given", ["shapes", "operands"])
def test_contract_path_is_the_path_einsum_runs_with_opt_einsums_info_of_it(
    equation: str, shapes: list[tuple[int, ...]], given: str
) -> None:
    ops: list[Any] = shapes if given == "shapes" else _operands(shapes)
    path, info = es.contract_path(equation, *ops, shapes=given == "shapes")
    runs = es.einsum_path(equation, *_operands(shapes))[0][1:]
    assert path == [tuple(step) for step in runs]
    assert isinstance(info, PathInfo)
    _, theirs = opt_einsum.contract_path(equation, *_operands(shapes), optimize=path)
    assert (info.opt_cost, info.largest_intermediate) == (
        theirs.opt_cost,
        theirs.largest_intermediate,
    )
    assert str(info) == str(theirs)


def test_contract_path_within_a_memory_limit_is_the_path_contract_runs_there() -> None:
    equation, shapes = "ab,bc,cd,de->ae", [(64, 64)] * 4
    limit = "64KiB"
    path, _ = es.contract_path(equation, *shapes, shapes=True, memory_limit=limit)
    expression = es.contract_expression(equation, *shapes, memory_limit=limit)
    assert path == list(expression.path)
    ops = _operands(shapes)
    expected = ops[0] @ ops[1] @ ops[2] @ ops[3]  # (np.einsum unoptimized: a 64**5 loop)
    np.testing.assert_allclose(es.contract(equation, *ops, memory_limit=limit), expected)


def test_the_sublist_form_and_out_dtype_order_keywords() -> None:
    a, b = _operands([(2, 3), (3, 4)])
    out = np.empty((2, 4), order="F")
    assert es.contract(a, [0, 1], b, [1, 2], [0, 2], out=out) is out
    np.testing.assert_allclose(out, a @ b)
    path, info = es.contract_path(a, [0, 1], b, [1, 2], [0, 2])
    assert path == [(0, 1)] and int(info.opt_cost) == int(
        opt_einsum.contract_path(a, [0, 1], b, [1, 2], [0, 2])[1].opt_cost
    )
    f32 = es.contract("ij,jk->ik", a, b, dtype=np.float32, order="F")
    assert f32.dtype == np.float32 and f32.flags.f_contiguous


def test_a_tuple_operand_is_data_unless_shapes_is_given() -> None:
    # opt_einsum's rule: with shapes=False a tuple is an array-like
    assert es.contract_path("i,i->", (1, 2), (3, 4))[0] == [(0, 1)]
    assert es.contract_path("i,i->", (1, 2), (3, 4))[1].size_dict == {"i": 2}
    assert es.contract_path("i,i->", (5,), (5,), shapes=True)[1].size_dict == {"i": 5}


def test_backend_is_the_operands_own_or_auto() -> None:
    a = np.ones((2, 2))
    for name in ("auto", "einstride", "numpy", "NumPy", None):
        np.testing.assert_array_equal(es.contract("ij->ji", a, backend=name), a)
    with pytest.raises(es.EinsumError, match="backend='torch', but this call runs on numpy"):
        es.contract("ij->ji", a, backend="torch")
    with pytest.raises(es.EinsumError, match=r"einsum '\[0,1\]->\[1,0\]': backend='torch'"):
        es.contract(a, [0, 1], [1, 0], backend="torch")


@pytest.mark.parametrize("call", [es.contract, es.contract_path])
def test_opt_einsums_max_input_is_refused_by_name(call: Any) -> None:
    with pytest.raises(es.EinsumError, match="'max_input' is opt_einsum's bound"):
        call("ij,jk->ik", np.ones((2, 2)), np.ones((2, 2)), memory_limit="max_input")


def test_an_equation_opt_einsum_cannot_describe_points_to_einsum_path() -> None:
    np.testing.assert_array_equal(es.contract("i->ii", np.arange(2.0)), np.diag([0.0, 1.0]))
    with pytest.raises(es.EinsumError, match=r"einstride\.einsum_path reports it"):
        es.contract_path("i->ii", np.arange(2.0))


def test_an_import_swapped_snippet_runs() -> None:
    import einstride as oe  # what a user of opt_einsum writes

    a, b, c = _operands([(5, 6), (6, 7), (7, 8)])
    path, info = oe.contract_path("ij,jk,kl->il", a, b, c)
    expr = oe.contract_expression("ij,jk,kl->il", a.shape, b.shape, c.shape)
    expected = a @ b @ c
    np.testing.assert_allclose(oe.contract("ij,jk,kl->il", a, b, c, optimize=path), expected)
    np.testing.assert_allclose(expr(a, b, c), expected)
    assert info.opt_cost > 0 and "Complete contraction" in str(info)


@pytest.mark.parametrize("shapes", [True, False])
def test_the_sublist_form_gets_opt_einsums_info_written_as_opt_einsum_writes_it(
    shapes: bool,
) -> None:
    # a review: opt_einsum's own sublist form fails with shapes=True (an AttributeError)
    a, b = _operands([(2, 3), (3, 4)])
    args: list[Any] = [a.shape if shapes else a, [5, 1], b.shape if shapes else b, [1, 2]]
    path, info = es.contract_path(*args, shapes=shapes)
    _, theirs = opt_einsum.contract_path(a, [5, 1], b, [1, 2])
    assert path == [(0, 1)] and info.eq == theirs.eq == "ca,ab->bc"
    assert str(info) == str(theirs)


def test_whatever_opt_einsum_raises_is_an_einsum_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise AttributeError("'tuple' object has no attribute 'pop'")  # (its sublist bug)

    monkeypatch.setattr(opt_einsum, "contract_path", broken)
    with pytest.raises(es.EinsumError, match="contract_path: opt_einsum cannot describe"):
        es.contract_path("ij,jk->ik", np.ones((2, 2)), np.ones((2, 2)))
