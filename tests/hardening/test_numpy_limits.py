"""Where NumPy's own limits (rank 64, int64 byte counts) or odd call shapes would surface as a
bare NumPy ``ValueError``, einstride answers with its own clear error first."""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np
import pytest

import einstride as es
from einstride import EinsumError, LayoutError, memory
from einstride.engine.api import explain
from einstride.engine.backends.numpy.cache import entry_for

LABELS = [chr(0x4E00 + k) for k in range(70)]


@pytest.mark.parametrize(
    ("equation", "operands"),
    [
        (",".join(LABELS[:65]) + "->" + "".join(LABELS[:65]), [np.ones(1)] * 65),
        (",".join(LABELS[:65]), [np.ones(1)] * 65),  # implicit output
        ("i->" + "i" * 65, [np.ones(1)]),  # a repeated output label
    ],
)
def test_results_beyond_numpys_rank_are_einsum_errors(equation, operands):
    with pytest.raises(EinsumError, match="rank 65; NumPy arrays have at most 64"):
        es.einsum(equation, *operands)


def test_an_intermediate_beyond_numpys_rank_is_an_einsum_error():
    left = "".join(LABELS[:40])
    right = "".join(LABELS[40:70])
    operands = [np.ones((1,) * 40), np.ones((1,) * 30), np.ones((1,) * 40), np.ones((1,) * 30)]
    equation = f"{left},{right},{left},{right}->"
    with pytest.raises(EinsumError, match=r"step 1 .* rank 70"):
        es.einsum(equation, *operands, optimize=[(0, 1), (0, 1), (0, 1)])
    sensible = [(0, 2), (0, 1), (0, 1)]  # the two halves first: never above rank 40
    assert es.einsum(equation, *operands, optimize=sensible) == 1.0


@pytest.mark.parametrize("bad", [(3, -4), (2**70, 3), (2.5, 3), ("a", 3), None, "ab"])
def test_shapes_given_for_planning_are_checked(bad):
    for call in (
        lambda: es.einsum_path("ij,jk", (2, 3), bad),
        lambda: es.contract_expression("ij,jk", (2, 3), bad),
        lambda: explain("ij,jk", (2, 3), bad),
    ):
        with pytest.raises((EinsumError, TypeError)):
            call()


@pytest.mark.parametrize("args", [(None,), (np.ones(2),), ([0],)])
def test_the_sublist_form_needs_an_operand_and_its_sublist(args):
    with pytest.raises(EinsumError, match="needs an operand and its sublist"):
        es.einsum(*args)


def test_large_problems_are_never_fused_into_one_loop():
    """One fused loop is for tiny problems: a bad explicit path over big operands must keep
    its intermediate (and so meet the memory limit: here it is sliced to fit) rather than
    loop 10^12 times."""
    ops = [np.ones((2000, 1)), np.ones((1, 2000)), np.ones((2000, 1))]
    plan = entry_for("ij,jk,kl->il", ops, None, None, [(0, 1), (0, 1)]).plan
    assert "fused" not in [step.kind for step in plan.steps]
    assert "intermediate" in [alloc.what for _, alloc in plan.allocations()]
    np.testing.assert_allclose(
        es.einsum("ij,jk,kl->il", *ops, optimize=[(0, 1), (0, 1)], memory_limit=10**6),
        np.full((2000, 1), 2000.0),
    )
    tiny = [np.ones((2, 1)), np.ones((1, 2)), np.ones((2, 1))]
    np.testing.assert_allclose(
        es.einsum("ij,jk,kl->il", *tiny, optimize=[(0, 1), (0, 1)]), np.full((2, 1), 2.0)
    )


def test_tensor_views_past_numpys_limits_are_layout_errors():
    t = es.Tensor(np.zeros(4), (4,))
    with pytest.raises(LayoutError, match="at most 64"):
        t[(None,) * 64 + (Ellipsis,)]
    with pytest.raises(LayoutError, match="bytes"):
        es.broadcast_to(t, (2**60, 4))


@pytest.mark.parametrize(
    "args",
    [
        ("i,j->", (2**61,), (2,)),  # 2**64 bytes: no NumPy array
        ("ij,jk->ik", (2**40, 2**40), (2**40, 2**40)),
        ("ij,jk->ik", (0, 2**62), (2**62, 2**62)),
        ("ijk,kl->il", (0, 10**10, 10**10), (10**10, 3)),  # no elements, but past NumPy's check
        ("".join(LABELS[:70]) + "->", (2,) * 70),  # rank 70
    ],
)
def test_explain_reports_shapes_no_numpy_array_can_have(args):
    """explain tried the lanes on C-order stand-ins, which NumPy refused to make (a bare
    ValueError, found by a review): no lane runs a call NumPy cannot make."""
    report = explain(*args)
    assert report.startswith("einsum ") and "lane:" not in report


def test_reports_of_counts_past_a_floats_range():
    """130 operands of 300: naive FLOPs past 1e308, the speedup a bare OverflowError (a
    review); the counts are then written in powers of ten."""
    labels = [chr(0x4E00 + k) for k in range(130)]
    report = es.einsum_path(",".join(labels) + "->", *[(300,)] * 130)[1]
    assert "naive FLOPs: 1.38e+324" in report and "x)" in report


def test_the_cost_model_takes_sizes_past_a_floats_range():
    """17 operands of 2**62 elements (broadcast views), every one kept: the cost model
    converted its sizes to floats (a bare OverflowError, before the output's own check)."""
    view = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), (2**62,), (0,))
    equation = ",".join("abcdefghijklmnopq") + "->abcdefghijklmnopq"
    with pytest.raises(EinsumError, match="output would allocate"):
        es.einsum(equation, *[view] * 17)
    for optimize in ("auto", "greedy", False):
        path, report = es.einsum_path(equation, *[(2**62,)] * 17, optimize=optimize)
        assert len(path) >= 2 and report.startswith("einsum ")


def test_errors_quote_a_long_equation_shortened():
    """Messages made after parsing quoted the whole equation (968 characters for 300
    operands, a review); they quote at most 80 characters of it, as the parser's do."""
    terms = ",".join(chr(0x4E00 + i) + chr(0x4E01 + i) for i in range(300))
    equation = terms + "->" + chr(0x4E00) + chr(0x4E00 + 300)
    operands = [np.ones((2, 2))] * 300
    for call in (
        lambda: es.einsum(equation, *operands, out=np.zeros((3, 3))),
        lambda: es.einsum(equation, *operands, memory_limit=10),
    ):
        with pytest.raises(EinsumError) as info:
            call()
        assert len(str(info.value)) < 400 and "…" in str(info.value)


def test_a_broadcast_network_past_a_floats_range_is_planned() -> None:
    """A review: lifting the fuse cap for plans that copy a broadcast operand let the
    product of every label's size (past 1.8e308) meet a float (a bare OverflowError)."""
    import opt_einsum

    symbol = opt_einsum.get_symbol
    ops = [np.broadcast_to(1.0, (10**9, 10**9)), np.broadcast_to(1.0, (10**9,))]
    terms, label = ["ab", "b"], 2
    for _ in range(16):
        terms.append(symbol(label) + symbol(label + 1) + symbol(label + 2))
        label += 3
        ops.append(np.broadcast_to(np.float32(1), (1_300_000,) * 3))
    terms.append(symbol(label) + symbol(label + 1))
    ops.append(np.broadcast_to(1.0, (10**9, 10**9)))
    equation = ",".join(terms) + "->a"
    assert es.einsum_path(equation, *ops)[0][0] == "einsum_path"
    assert es.explain(equation, *ops).startswith("einsum ")
    with pytest.raises(es.EinsumError):
        es.einsum(equation, *ops, memory_limit=10**6)


@pytest.mark.parametrize(("dtype", "item"), [("U0", 4), ("S0", 1)])
def test_an_unsized_string_dtype_is_sized_as_numpy_makes_it(dtype: str, item: int) -> None:
    """NumPy makes ``U0`` and ``S0`` arrays one character wide (``<U1``, ``|S1``): the memory
    limit and the empty-array bound count that item (``U0`` was counted as 1 byte: 8 GiB
    passed the limit where NumPy allocated 32)."""
    limit = 2**20
    previous = memory.set_memory_limit(limit)
    try:
        es.zeros((limit // item,), dtype=dtype)
        with pytest.raises(es.MemoryLimitError, match="would allocate"):
            es.zeros((limit // item + 1,), dtype=dtype)
    finally:
        memory.set_memory_limit(previous)
    too_long = (0, 2**63 // item, 2)  # empty, but NumPy refuses its other lengths' bytes
    with pytest.raises(LayoutError, match="multiply past 2\\*\\*63 bytes"):
        es.zeros(too_long, dtype=dtype)
    assert es.zeros((3,), dtype=dtype).dtype == np.dtype(dtype).kind + "1"


def test_a_product_past_a_floats_range_given_as_shapes_is_planned() -> None:
    """Two operands of 64 labels of 2**17 (shapes given for planning: no array has them),
    their product 2**1088 elements: the planner's layout costs met a float (a bare
    OverflowError, a review); every shape-only call reports instead."""
    labels, shape = list(range(64)), (2**17,) * 64
    args = (shape, labels, shape, labels, (2, 2), [64, 65], [65])
    path, report = es.einsum_path(*args)
    assert path[0] == "einsum_path" and report.startswith("einsum ")
    assert explain(*args).startswith("einsum ")
    assert es.contract_path(*args, shapes=True)[0]


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("abcdefghijklmnopqr,rqponmlkjihgfedcba->a", [(2**60,) * 18] * 2),  # a transposed pair
        ("nhiqsrmjckbdeaplfgo->op", [(2**60,) * 18 + (2,)]),  # one operand summed
        ("mragbpldjnschiekq,qhagrsoipdbfkl->cefjkmno", [(2**60,) * 17, (2**60,) * 14]),
    ],
)
def test_an_operand_past_a_floats_range_given_as_a_shape_is_planned(
    equation: str, shapes: list[tuple[int, ...]]
) -> None:
    """One operand of more elements than a float holds (shapes for planning only): its copy,
    its summing loop and a later copy were priced as ints times floats (a bare
    OverflowError, a second review); each shape-only call reports instead."""
    assert es.einsum_path(equation, *shapes)[1].startswith("einsum ")
    assert explain(equation, *shapes).startswith("einsum ")
    assert es.contract_path(equation, *shapes, shapes=True)[0]


def test_the_exact_subtree_search_over_sizes_past_a_float_is_left_to_the_loop() -> None:
    """The exact optimum over arrays multiplied sizes past a float's range (inf and nan
    costs, NumPy's overflow warning, a review): such subtrees are priced in the loop, whose
    counts are capped, and the tree is the loop's."""
    from einstride.engine.spec.costmodel import Problem
    from einstride.engine.spec.subsets import optimal_tree_arrays
    from einstride.engine.spec.trees import optimal_tree_loop

    sizes = [2**62] * 13 + [2] * 7
    inputs = [(2 * k, 2 * k + 1, 2 * k + 2, 13 + k) for k in range(6)]  # a chain of six
    problem = Problem(inputs, (0, 12, 18), sizes)
    masks = list(problem.inputs)
    assert optimal_tree_arrays(problem, masks, problem.output) is None
    args = [v for t in inputs for v in (tuple(sizes[x] for x in t), list(t))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ns, flops, _, tree = optimal_tree_loop(problem, masks, problem.output)
        assert es.einsum_path(*args, [0, 12, 18], optimize="optimal")[1].startswith("einsum ")
    leaves = str(tree).replace("(", " ").replace(")", " ").replace(",", " ").split()
    assert math.isfinite(ns) and flops > 2**300 and sorted(map(int, leaves)) == list(range(6))


def test_a_one_loop_numpys_iterator_refuses_is_not_chosen() -> None:
    """optimize=False ran NumPy's one loop where the pairs' intermediates outgrew the
    operands, also past 2**63 index combinations: NumPy's "iterator is too large" (a
    review); see tests/einsum/test_numpy_surface.py for the plan."""
    shapes = [(2, 98310), (2**30, 1), (3, 3, 411711), (3, 725444, 3), (3, 725444)]
    ops = [np.broadcast_to(1.0, s) for s in [*shapes, (3, 98310), (2, 3), (98310,)]]
    with pytest.raises(EinsumError, match="memory limit"):
        es.einsum("cb,af,gih,kji,gj,gb,ck,b->f", *ops, optimize=False, memory_limit=10**6)


@pytest.mark.parametrize("target", ["U0", "S0"])
def test_a_cast_to_an_unsized_string_is_sized_as_numpy_writes_it(target: str) -> None:
    """A cast to ``U0``/``S0`` takes the width of what it writes (``int64``: 21 characters,
    ``float64``: 32): astype, tensor(array, dtype=), one_hot's fill and a list of numbers
    were sized one character wide (a review: 352 MB passed a 16 MiB limit)."""
    count = 2**14
    made = np.broadcast_to(np.int64(7), (count,)).astype(target)
    assert made.dtype.itemsize > 8  # NumPy's own width, far past one character
    previous = memory.set_memory_limit(made.nbytes - 1)
    try:
        wide = es.as_tensor(np.broadcast_to(np.int64(7), (count,)))
        for run in (
            lambda: wide.astype(target),
            lambda: es.tensor(np.broadcast_to(np.int64(7), (count,)), dtype=target),
            lambda: wide.__array__(target),  # (np.asarray casts to U0 itself)
            lambda: es.one_hot(np.zeros(count // 16, int), 16, dtype=target),
            lambda: es.tensor([1.5] * (made.nbytes // 2), dtype=target),
        ):
            with pytest.raises(es.MemoryLimitError, match="would allocate"):
                run()
        assert wide[:4].astype(target).dtype == made.dtype  # what fits is made as NumPy does
        assert es.tensor([1.5, 2.0], dtype=target).numpy().dtype == np.asarray([1.5], target).dtype
    finally:
        memory.set_memory_limit(previous)


def test_one_hot_under_an_unsized_string_dtype_holds_both_values_whole() -> None:
    """``one_hot(..., on_value="abcdef", off_value="", dtype="U0")`` filled a one-character
    array and cut ``on_value`` to ``"a"`` (a review)."""
    found = es.one_hot(np.array([1]), 3, on_value="abcdef", off_value="", dtype="U0")
    assert np.asarray(found).tolist() == [["", "abcdef", ""]]


def test_an_empty_array_with_a_length_past_an_intp_is_a_layout_error() -> None:
    """``zeros((0, 2**64), "V0")`` (zero bytes an item) was NumPy's bare "Maximum allowed
    dimension exceeded" (a review)."""
    with pytest.raises(LayoutError, match="a length past 2\\*\\*63"):
        es.zeros((0, 2**64), "V0")
    assert not memory.numpy_can_make((0, 2**63), np.dtype("V0"))
    assert memory.numpy_can_make((0, 2**63 - 1), np.dtype("V0"))


def test_contract_paths_tuple_operand_is_sized_and_checked() -> None:
    """A tuple is an operand's data in ``contract_path`` (as in opt_einsum): converted
    unchecked, ``(range(10**15),)`` was NumPy's MemoryError and a tuple holding a list that
    holds itself NumPy's bare ValueError (a review)."""
    x = np.ones((2, 2))
    with pytest.raises(EinsumError, match="operand 1"):
        es.contract_path("ij,jk->ik", x, (range(10**15),))
    loop: list[object] = [1]
    loop.append(loop)
    with pytest.raises(es.EinsumTypeError, match="operand 1 \\(tuple\\)"):
        es.contract_path("ij,jk->ik", x, tuple(loop))
    assert es.contract_path("ij,jk->ik", x, ((1.0, 2.0), (3.0, 4.0)))[0] == [(0, 1)]


def test_one_hot_under_v0_keeps_its_fill_width() -> None:
    """``one_hot(..., dtype="V0")`` with values of different void widths: promoting them
    (for ``U0``'s sake) was NumPy's bare DTypePromotionError (a review)."""
    found = es.one_hot([0, 1], 2, on_value=True, off_value=0, dtype="V0")
    assert np.asarray(found).dtype == np.dtype("V8")


def test_an_unsized_void_dtype_sizes_a_lists_items_as_numpy_makes_them() -> None:
    """``V0`` of ``b"x" * 10**5`` makes ``V100000``: a list of them was sized one byte an
    item (10 MB passed a 1 MB limit; a review)."""
    previous = memory.set_memory_limit(10**6)
    try:
        with pytest.raises(es.MemoryLimitError, match="10,000,000 bytes"):
            es.tensor([b"x" * 10**5] * 100, "V0")
        with pytest.raises(es.MemoryLimitError, match="would allocate"):
            es.tensor([np.arange(200_000)], "V0")
        assert np.asarray(es.tensor([b"ab"] * 1000, "V0")).dtype == np.dtype("V2")
    finally:
        memory.set_memory_limit(previous)


def test_a_list_past_the_limit_is_refused_before_its_numbers_are_written_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``U0`` the walk writes each number as ``str()`` does, to size its width: a list
    far past the limit was written out first (7 s for 10**7 floats, a review); its length
    alone refuses it now, and ``[x] * n`` writes ``x`` once."""
    written: list[object] = []

    def counted(x: object) -> str:
        written.append(x)
        return builtins.str(x)

    monkeypatch.setattr(memory, "str", counted, raising=False)
    previous = memory.set_memory_limit(10**6)
    try:
        with pytest.raises(es.MemoryLimitError):
            memory.check_array_like([1.25] * (2 * 10**6), "U0", "tensor")
        assert written == []
        memory.check_array_like([1.5] * 1000, "U0", "tensor")
        assert written == [1.5]
    finally:
        memory.set_memory_limit(previous)


def test_an_external_finder_past_a_floats_range_is_an_einsum_error() -> None:
    """opt_einsum's random-greedy prices sizes as floats (a bare OverflowError past their
    range, a review), and the slicing under the default limit divided such counts."""
    letters = "abcdefghijklmnopqr"
    equation = f"{letters},{letters[::-1]}s,st->t"
    shapes = [(2**60,) * 18, (2**60,) * 18 + (2,), (2, 3)]
    for optimize in ("auto", "greedy", "dp", "branch-1"):
        assert es.einsum_path(equation, *shapes, optimize=optimize)[1].startswith("einsum ")
    with pytest.raises(EinsumError, match="cannot price these sizes"):
        es.einsum_path(equation, *shapes, optimize="random-greedy")
    with pytest.raises(EinsumError, match="cannot price these sizes"):
        es.contract_path(equation, *shapes, shapes=True, optimize="random-greedy")


def test_an_int_past_strs_digit_limit_is_sized_by_its_bits() -> None:
    """Sizing ``[10**5000] * 10`` under ``U0`` wrote it with ``str()``, past Python's limit
    of 4,300 digits: a bare ValueError from the walk (a review); it is sized by its bits."""
    previous = memory.set_memory_limit(10**4)
    try:
        with pytest.raises(es.MemoryLimitError, match="200,080 bytes"):
            es.tensor([10**5000] * 10, "U0")
    finally:
        memory.set_memory_limit(previous)
