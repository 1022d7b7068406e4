"""The benchmark harness, run on tiny cases with opt_einsum standing in for einstride.

The harness (benchmarks/einstride_bench) is not part of the wheel; pyproject's pytest
``pythonpath`` puts benchmarks/ on sys.path so that ``einstride_bench`` imports here."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import opt_einsum
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from einstride_bench import (
    Budget,
    Case,
    Engine,
    Skip,
    Target,
    Timing,
    default_cases,
    default_peers,
    dense,
    run_suite,
    stand_in,
    write_report,
)
from einstride_bench import cold as bench_cold
from einstride_bench import command as bench_command
from einstride_bench.check import mismatch, oracle
from einstride_bench.cold import (
    ColdCase,
    cold_cases,
    issue_cases,
    like,
    run_cold_case,
    torch_cold_cases,
)
from einstride_bench.contenders import NUMPY, naive_size
from einstride_bench.imports import import_seconds, probe_environment
from einstride_bench.machine import thread_limit
from einstride_bench.netbench import (
    NETWORK_QUICK,
    NetworkPeer,
    Prepared,
    default_network_peers,
    run_network,
    run_networks,
    subject_peer,
)
from einstride_bench.networks import (
    circuit,
    default_networks,
    grid,
    mps_expectation,
    mps_norm,
    peps_norm,
    random_regular,
    tensor_train,
)
from einstride_bench.results import CaseResult, Entry, SuiteResult, geometric_mean
from einstride_bench.sections import cold_section, network_section
from einstride_bench.timing import interleave

TINY = Budget(seconds=0.03, min_sample=1e-4, turn=1e-3, min_turns=1, max_rounds=20)
CASES = [
    Case("tiny matmul", "ij,jk->ik", dense(np.float64, [(4, 4), (4, 4)])),
    Case("tiny reduction", "ijk->i", dense(np.float32, [(3, 4, 5)])),
]


def _run(engine: Engine, peers: dict[str, Any] | None = None, cases: list[Case] = CASES) -> Any:
    chosen = default_peers(optional=False) if peers is None else peers
    return run_suite(cases, engine, chosen, TINY, quick=True, measure_rates=False)


def _off_by(delta: float) -> Engine:
    def einsum(equation: str, *ops: Any) -> Any:
        return opt_einsum.contract(equation, *ops) + delta

    return Engine("broken", einsum, opt_einsum.contract_expression)


def _table_rows(text: str) -> list[list[str]]:
    lines = text.split("## Results")[1].split("## Misses")[0].splitlines()
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines if ln.startswith("| ")]


def test_report_has_a_row_per_case_with_the_measured_ratio(tmp_path: Path) -> None:
    suite = _run(stand_in())
    output, chart = tmp_path / "perf.md", tmp_path / "perf.png"
    note = write_report(suite, output, chart)
    rows = _table_rows(output.read_text(encoding="utf-8"))
    header, body = rows[0], rows[1:]
    assert header[4:8] == ["opt_einsum (stand-in)", NUMPY, "numpy.einsum(optimize)", "opt_einsum"]
    assert [row[0] for row in body] == [case.name for case in CASES]
    for row, result in zip(body, suite.results):
        peers = [e.timing.median for e in result.entries if e.role == "peer" and e.timing]
        expected = result.subject.timing.median / min(peers)
        assert row[header.index("ratio")].split()[0] == f"{expected:.2f}x"
        assert row[header.index("status")] in ("**PASS**", "**MISS**")
    text = output.read_text(encoding="utf-8")
    assert "## Machine" in text and "**Not einstride**" in text
    assert (note is None) == chart.exists()


def test_wrong_subject_result_is_caught_and_reported(tmp_path: Path) -> None:
    suite = _run(_off_by(1e-3))
    assert [r.status for r in suite.results] == ["WRONG", "WRONG"]
    assert all(r.subject.timing is None for r in suite.results)
    assert all(r.subject.problem.startswith("wrong: max abs error") for r in suite.results)
    write_report(suite, tmp_path / "perf.md", None)
    text = (tmp_path / "perf.md").read_text(encoding="utf-8")
    assert text.count("**WRONG**") == 2
    assert "- **tiny matmul**: wrong: max abs error" in text


def test_error_in_subject_is_reported_not_raised() -> None:
    def einsum(equation: str, *ops: Any) -> Any:
        raise RuntimeError("engine exploded")

    suite = _run(Engine("raises", einsum, opt_einsum.contract_expression), cases=CASES[:1])
    assert suite.results[0].status == "ERROR"
    assert suite.results[0].subject.problem == "error: RuntimeError: engine exploded"


def test_wrong_peer_is_left_out_of_the_comparison() -> None:
    peers = default_peers(optional=False)
    peers["bad peer"] = lambda case, ops: lambda: np.zeros((4, 4), np.float32)
    result = _run(stand_in(), peers, cases=CASES[:1]).results[0]
    bad = next(e for e in result.entries if e.name == "bad peer")
    assert bad.timing is None and bad.problem == "wrong: dtype float32, expected float64"
    assert result.fastest_peer is not None and result.fastest_peer.name != "bad peer"


def test_skipped_peer_says_why() -> None:
    peers = default_peers(optional=False)

    def never(case: Case, ops: Any) -> Any:
        raise Skip("not today")

    peers["skipper"] = never
    result = _run(stand_in(), peers, cases=CASES[:1]).results[0]
    assert next(e for e in result.entries if e.name == "skipper").problem == "skipped: not today"


def test_interleaved_timing_ranks_a_slower_call_slower() -> None:
    small, large = list(range(10)), list(range(20_000))
    timings = interleave({"small": lambda: sum(small), "large": lambda: sum(large)}, TINY)
    assert timings["large"].median > 10 * timings["small"].median
    assert all(len(t.samples) >= TINY.min_turns for t in timings.values())


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from([np.float32, np.float64]),
    factor=st.sampled_from([0.01, 100.0]),
)
def test_mismatch_accepts_rounding_and_rejects_real_errors(
    seed: int, dtype: Any, factor: float
) -> None:
    rng = np.random.default_rng(seed)
    ops = tuple(rng.standard_normal(shape).astype(dtype) for shape in [(5, 6), (6, 3)])
    expected = oracle("ij,jk->ik", ops)
    scale = max(float(np.max(np.abs(expected))), 1.0)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    result = (expected + factor * tol * scale).astype(dtype)
    verdict = mismatch(result, expected, np.dtype(dtype))
    assert (verdict is None) == (factor < 1)


def test_mismatch_names_a_wrong_shape() -> None:
    expected = np.zeros((2, 3))
    assert (
        mismatch(np.zeros((3, 2)), expected, np.dtype(np.float64))
        == "shape (3, 2), expected (2, 3)"
    )


def test_every_suite_case_is_consistent_at_quick_size() -> None:
    for case in default_cases():
        ops = case.operands(quick=True)
        expected = case.reference(ops) if case.reference else oracle(case.equation, ops)
        if case.matmul is not None:
            assert mismatch(case.matmul(ops)(), expected, np.result_type(*ops)) is None, case.name
        for name, prepare in case.handwritten.items():
            assert mismatch(prepare(case, ops)(), expected, np.result_type(*ops)) is None, name


def test_unoptimized_numpy_sits_out_huge_loops() -> None:
    case = Case("chain", "ij,jk,kl->il", dense(np.float64, [(1000, 1000)] * 3))
    ops = tuple(np.broadcast_to(np.zeros(1), (1000, 1000)) for _ in range(3))
    assert naive_size(case.equation, ops) == 10**12
    with pytest.raises(Skip, match="1e\\+12 iterations"):
        default_peers(optional=False)[NUMPY](case, ops)


def _result(subject: float, peers: list[float], targets: tuple[Target, ...]) -> CaseResult:
    case = Case("c", "ij,jk->ik", dense(np.float64, [(2, 2)] * 2), targets=targets)
    entries = [Entry("s", "subject", Timing((subject,), 1))]
    entries += [Entry(f"p{i}", "peer", Timing((t,), 1)) for i, t in enumerate(peers)]
    return CaseResult(case, "", "float64", 0.0, tuple(entries))


@settings(max_examples=50, deadline=None)
@given(
    subject=st.floats(1e-6, 1.0),
    peers=st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=4),
)
def test_ratio_and_targets_follow_the_medians(subject: float, peers: list[float]) -> None:
    targets = (Target("fastest", 1.1), Target("peer", 2.0, "p0"))
    result = _result(subject, peers, targets)
    assert result.ratio == pytest.approx(subject / min(peers))
    met = [verdict[1] for verdict in result.verdicts()]
    assert met == [subject / min(peers) <= 1.1, subject / peers[0] <= 2.0]
    assert result.status == ("PASS" if all(met) else "MISS")


def test_geometric_mean() -> None:
    values = [0.5, 0.8, 1.7]
    assert geometric_mean(values) == pytest.approx(math.prod(values) ** (1 / 3))


def test_main_without_the_engine_explains_and_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Engine:
        raise ImportError("einstride.einsum is not in this build")

    monkeypatch.setattr(bench_command, "load_einstride", missing)
    assert bench_command.main(["--quick", "-k", "tiny matmul"]) == 2


def _no_import_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for the imports' sixteen fresh interpreters (seven seconds): they have tests
    of their own (``import_seconds``); ``main`` only puts their line in the report."""
    monkeypatch.setattr(bench_command, "import_seconds", lambda: {"numpy": 0.095})


def test_main_writes_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_command, "default_peers", lambda: default_peers(optional=False))
    _no_import_timing(monkeypatch)
    output = tmp_path / "quick.md"
    argv = [
        "--stand-in",
        "--quick",
        "-k",
        "tiny matmul",
        "--budget",
        "0.03",
        "--output",
        str(output),
    ]
    assert bench_command.main([*argv, "--no-chart"]) == 0
    text = output.read_text(encoding="utf-8")
    assert re.search(r"\| tiny matmul 4x4 \| `ij,jk->ik` \|", text)
    assert "(No chart: disabled with --no-chart)" in text


def test_thread_limit_limits_blas_and_restores_it() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> list[int]:
        return [
            p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"
        ]

    before = blas_threads()
    with thread_limit(1) as what:
        assert what.startswith("1 per pool: BLAS/OpenMP (threadpoolctl)")
        assert set(blas_threads()) <= {1}
    assert blas_threads() == before


def test_torch_cases_run_on_torch_tensors_against_torch_einsum_only() -> None:
    torch = pytest.importorskip("torch")
    cases = [
        Case("mm", "ij,jk->ik", dense(np.float64, [(3, 4), (4, 5)]), kind="torch"),
        Case("mm fwd+bwd", "ij,jk->ik", dense(np.float64, [(3, 4), (4, 5)]), kind="torch-backward"),
    ]
    suite = _run(stand_in(), default_peers(), cases)
    for result in suite.results:
        assert [e.name for e in result.entries] == ["opt_einsum (stand-in)", "torch.einsum"]
        assert all(e.timing is not None for e in result.entries), result.entries

    def twice_the_gradient(equation: str, *ops: Any) -> Any:
        result = torch.einsum(equation, *ops)
        return result + (result - result.detach())

    broken = Engine("broken", twice_the_gradient, opt_einsum.contract_expression)
    (result,) = _run(broken, default_peers(), cases[1:]).results
    assert "the gradient of operand 0 differs" in result.subject.problem


# -- the cold-call and network sections (tiny smoke runs; no timing is asserted) -------------


def _cold(equation: str, shapes: list[tuple[int, ...]], vary: str) -> ColdCase:
    return ColdCase(Case("cold " + equation, equation, dense(np.float64, shapes)), vary)


def test_cold_case_calls_every_contender_once_per_new_shape() -> None:
    cold = _cold("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], "i")
    variants = list(cold.variants(5))
    assert [ops[0].shape for ops in variants] == [(2, i, 4) for i in range(4, 9)]
    assert all(ops[1].shape == (2, 4, 5) for ops in variants)
    result = run_cold_case(cold, stand_in(), default_peers(optional=False), 5)
    assert all(len(e.timing.samples) == 5 for e in result.entries if e.timing)
    assert result.entries[0].name == "opt_einsum (stand-in)"
    assert result.ratio is not None and result.status in ("PASS", "MISS")
    assert result.shapes == "2x4x4, 2x4x5 … 2x8x4, 2x4x5"


def test_a_slow_cold_contender_sits_out_the_remaining_shapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench_cold, "CONTENDER_SECONDS", 0.0)
    result = run_cold_case(_cold("ij->j", [(3, 4)], "i"), stand_in(), {}, 4)
    assert result.subject.timing is not None and len(result.subject.timing.samples) == 1


def _numpy_parse() -> Any:
    """numpy.einsum's cache of parses (NumPy 2.3+), else skip the test."""
    module = sys.modules.get("numpy._core.einsumfunc")
    parse = getattr(module, "_parse_eq_to_batch_matmul", None)
    if parse is None or not hasattr(parse, "cache_info"):
        pytest.skip("this NumPy keeps no parses")
    return parse


@pytest.mark.parametrize(
    "equation, shapes, expected",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)], [0, 0, 0, 0]),
        # its step jk,kl keeps its shapes: numpy reuses its own parse of it, as a user's
        # next call would; the oracle's never (the growing step's)
        ("ij,jk,kl->il", [(4, 5), (5, 5), (5, 2)], [0, 1, 1, 1]),
    ],
)
def test_the_cold_oracle_leaves_numpy_no_parse_of_the_timed_shapes(
    equation: str, shapes: list[tuple[int, ...]], expected: list[int]
) -> None:
    """The check's oracle (numpy.einsum(optimize=True) on the same shapes) must not hand
    the numpy.einsum(optimize) contender the parse of the call it times (NumPy 2.3+ keeps
    them per equation and shapes), nor take away the ones its own calls made."""
    parse = _numpy_parse()
    parse.cache_clear()
    hits: list[int] = []

    def probe(case: Case, ops: Any) -> Callable[[], Any]:
        def run() -> Any:
            before = parse.cache_info().hits
            result = np.einsum(case.equation, *ops, optimize=True)
            hits.append(parse.cache_info().hits - before)
            return result

        return run

    run_cold_case(_cold(equation, shapes, "i"), stand_in(), {"probe": probe}, 4)
    assert hits == expected


def test_the_oracle_adds_nothing_to_numpy_s_parses() -> None:
    parse = _numpy_parse()
    before = parse.cache_info().currsize
    oracle("ij,jk,kl->il", (np.ones((7, 3)), np.ones((3, 4)), np.ones((4, 2))))
    assert parse.cache_info().currsize == before
    module = sys.modules["numpy._core.einsumfunc"]
    assert module._parse_eq_to_batch_matmul is parse  # the cache is back in place


def test_cold_case_checks_every_call() -> None:
    calls: list[tuple[int, ...]] = []

    def wrong_on_the_third_shape(equation: str, *ops: Any) -> Any:
        calls.append(ops[0].shape)
        return opt_einsum.contract(equation, *ops) + (1.0 if len(calls) == 3 else 0.0)

    engine = Engine("late bug", wrong_on_the_third_shape, opt_einsum.contract_expression)
    result = run_cold_case(_cold("ij,jk->ik", [(3, 4), (4, 5)], "i"), engine, {}, 4)
    assert result.status == "WRONG" and "shapes 6x4, 4x5" in result.subject.problem
    assert len(calls) == 3  # a wrong contender is not called again


def test_the_cold_section_reports_the_imports() -> None:
    suite = SuiteResult("einstride", "quick", sections=("cold",))
    assert not any(line.startswith("Imports") for line in cold_section(suite))
    suite.imports = {"numpy": 0.1, "einstride": 1.25}
    (line,) = [line for line in cold_section(suite) if line.startswith("Imports")]
    assert "numpy 100 ms, einstride 1.25 s" in line


def test_the_cold_section_times_its_cases_on_torch_without_a_target() -> None:
    pytest.importorskip("torch")
    from einstride_bench.contenders import TORCH, default_peers, load_einstride

    cases = torch_cold_cases()[: len(issue_cases())]  # the issue's first, then the suite's
    assert [c.case.equation for c in cases] == [c.case.equation for c in issue_cases()]
    assert {c.case.equation for c in torch_cold_cases()} == {
        c.case.equation for c in cold_cases() if c.case.equation != "ij->iij"
    }  # all but the diagonal expansion, which torch.einsum does not run
    assert all(c.case.on_torch and c.case.targets == () for c in cases)
    peers = {TORCH: default_peers()[TORCH]}
    result = run_cold_case(cases[1], load_einstride(), peers, 3)
    assert [e.name for e in result.timed("peer")] == [TORCH] and result.status == "n/a"
    suite = SuiteResult("einstride", "quick", sections=("cold",))
    assert "### On torch tensors" not in cold_section(suite)
    suite.torch_cold = [result]
    lines = cold_section(suite)
    table = lines[lines.index("### On torch tensors") :]
    (row,) = [line for line in table if line.startswith("| torch: cold batched matmul")]
    assert row.endswith(f"| {result.ratio:.2f}x |") and "n/a" not in row
    assert "geometric mean of the ratios" in table[2]


def test_imports_are_timed_with_bytecode_caches_as_an_installed_package_has_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = probe_environment()
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["PATH"] == os.environ["PATH"]
    probe = "import sys; print(sys.dont_write_bytecode)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "False"
    assert set(import_seconds(["json", "no_such_module_here"], rounds=1)) == {"json"}


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a,
        lambda a: a.T,
        lambda a: a[::2, ::3],
        lambda a: a[::-1],
        lambda a: np.broadcast_to(a[:1], a.shape),
    ],
    ids=["C", "transposed", "strided", "reversed", "broadcast"],
)
def test_like_keeps_the_layout(view: Any) -> None:
    template = view(np.zeros((6, 9)))
    new = like(template, (4, 5), np.random.default_rng(0))
    assert new.shape == (4, 5) and new.dtype == template.dtype
    assert [np.sign(s) for s in new.strides] == [np.sign(s) for s in template.strides]
    order = np.argsort([abs(s) for s in template.strides])
    assert list(np.argsort([abs(s) for s in new.strides])) == list(order)


def test_cold_cases_hold_the_issue_table_and_the_suite() -> None:
    names = [c.case.name for c in cold_cases()]
    assert names[:7] == [c.case.name for c in issue_cases()]
    einsum_cases = [c.name for c in default_cases() if c.kind != "expression" and not c.on_torch]
    assert names[7:] == einsum_cases
    for cold in cold_cases():
        first, second = list(cold.variants(2))
        assert [a.shape for a in first] != [b.shape for b in second], cold.case.name


def test_networks_are_consistent_and_contract_to_order_one() -> None:
    small = [
        random_regular(8, 3, 2, 3, seed=1),
        mps_norm(5, 3),
        mps_expectation(4, 3, 2),
        grid(3, 3, 2),
        peps_norm(2, 3, 2),
        tensor_train(3, 2, 2, 2),
        circuit(4, 3, seed=0),
    ]
    for net in small:
        value = float(opt_einsum.contract(net.equation, *net.operands()))
        assert 1e-3 < value < 1e3, net.name
        assert net.ascii_equation() is not None
    full = default_networks(quick=False)
    sizes = {n.tensors for n in full if n.family == "random regular"}
    assert {10, 20, 40, 60, 100} <= sizes
    assert {"MPS", "grid", "PEPS", "tensor train", "circuit"} <= {n.family for n in full}
    assert len(default_networks(quick=True)) < len(full)


def _small_peers() -> dict[str, NetworkPeer]:
    chosen = ("numpy.einsum", "opt_einsum greedy", "opt_einsum dp")
    return {n: p for n, p in default_network_peers(True).items() if n.startswith(chosen)}


def test_network_run_times_searches_and_contractions_and_checks_results() -> None:
    net = grid(3, 3, 2)
    result = run_network(net, subject_peer(stand_in()), _small_peers(), NETWORK_QUICK)
    assert result.reference == 'numpy.einsum(optimize="greedy")'
    for entry in result.entries:
        assert entry.problem == "" and entry.contraction is not None and entry.total
        assert entry.peak is not None and entry.peak >= 0
    assert all(e.flops for e in result.entries if not e.subject)
    assert result.ratio is not None and result.status in ("PASS", "MISS")
    wrong = NetworkPeer(lambda n, ops: Prepared(None, lambda: 2.0))
    bad = run_network(net, wrong, _small_peers(), NETWORK_QUICK)
    assert bad.status == "WRONG" and bad.subject.problem.startswith("wrong: max abs error")


def test_every_contender_but_cotengra_makes_its_first_calls_before_the_first_network() -> None:
    calls: list[str] = []

    def counting(name: str) -> NetworkPeer:
        def search(network: Any, ops: Any) -> Prepared:
            calls.append(f"{name} {network.tensors}")
            return Prepared(None, lambda: np.einsum(network.equation, *ops))

        return NetworkPeer(search)

    peers = {"peer": counting("peer"), "cotengra 1 s": counting("cotengra")}
    base = stand_in()

    def expression(equation: str, *shapes: Any, **options: Any) -> Any:
        calls.append(f"subject {len(shapes)}")
        return base.contract_expression(equation, *shapes, **options)

    engine = dataclasses.replace(base, contract_expression=expression)
    net = grid(2, 2, 2)  # 4 tensors: the warm-up network has 8
    run_networks([net], engine, peers, NETWORK_QUICK, io.StringIO())
    assert calls[:6] == ["subject 8"] * 3 + ["peer 8"] * 3
    assert "cotengra 8" not in calls and {"subject 4", "peer 4", "cotengra 4"} <= set(calls)


def test_network_calls_are_interleaved_in_rounds_and_slow_ones_run_once() -> None:
    calls: list[str] = []

    def logged(name: str, seconds: float = 0.0) -> NetworkPeer:
        def search(network: Any, ops: Any) -> Prepared:
            calls.append(name)
            time.sleep(seconds)
            return Prepared(None, lambda: np.einsum(network.equation, *ops))

        return NetworkPeer(search)

    peers = {"a": logged("a"), "b": logged("b"), "slow": logged("slow", 0.02)}
    settings = dataclasses.replace(NETWORK_QUICK, repeats=3, repeat_below=0.01)
    result = run_network(grid(2, 2, 2), logged("subject"), peers, settings)
    assert calls.count("slow") == 1 and result.status in ("PASS", "MISS")
    fast = [c for c in calls if c != "slow"]
    rounds = [fast[k : k + 3] for k in (0, 3, 6)]
    assert len(fast) == 9 and all(sorted(r) == ["a", "b", "subject"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # a new order each round (seeded)
    assert [e.name for e in result.entries] == ["einstride", "a", "b", "slow"]


def test_numpy_forgets_its_step_parses_before_each_fresh_call() -> None:
    einsumfunc = pytest.importorskip("numpy._core.einsumfunc")
    parse = getattr(einsumfunc, "_parse_eq_to_batch_matmul", None)
    if parse is None or not hasattr(parse, "cache_clear"):
        pytest.skip("this NumPy keeps no parses of its steps")
    peer = default_network_peers(True)['numpy.einsum(optimize="greedy")']
    net = grid(3, 3, 2)
    peer.search(net, net.operands()).contract()
    assert parse.cache_info().currsize > 0 and peer.fresh is not None
    peer.fresh()
    assert parse.cache_info().currsize == 0


def test_where_the_flops_target_applies_the_subject_runs_cotengras_path_too() -> None:
    net = mps_norm(20, 2)  # 40 tensors: the FLOPs target applies
    calls: list[str] = []

    def greedy_path(network: Any, ops: Any) -> Any:
        return [tuple(e) for e in opt_einsum.contract_path(network.equation, *ops)[0]]

    def reference(network: Any, ops: Any) -> Prepared:  # cotengra's place: greedy's path
        path = greedy_path(network, ops)
        return Prepared(path, lambda: opt_einsum.contract(network.equation, *ops, optimize=path))

    def own(network: Any, ops: Any) -> Prepared:  # a path of its own: left to right
        path = [(0, 1)] * (len(ops) - 1)
        return Prepared(path, lambda: opt_einsum.contract(network.equation, *ops, optimize=path))

    def along(network: Any, ops: Any, path: Any) -> Any:
        def contract() -> Any:
            calls.append("reference" if path == greedy_path(network, ops) else "own")
            return opt_einsum.contract(network.equation, *ops, optimize=path)

        return contract

    subject = NetworkPeer(own, fresh=lambda: calls.append("fresh"), along=along)
    peers = {**_small_peers(), "cotengra 0.5 s": NetworkPeer(reference)}
    calls.clear()
    result = run_network(net, subject, peers, NETWORK_QUICK)
    paired = [c for c in calls if c != "fresh"]  # only the comparison calls along a path
    assert sorted(paired) == ["own"] * 3 + ["reference"] * 3  # PAIRED_CALLS each
    tail = calls[-12:]
    assert tail[0::2] == ["fresh"] * 6 and tail[1::2] == paired  # each one fresh
    assert paired != sorted(paired)  # the order is drawn, not fixed
    assert result.largest_budget == "cotengra 0.5 s"
    assert result.paired is not None and all(t > 0 for t in result.paired)
    suite = SuiteResult("subject", "quick", sections=("networks",))
    suite.networks = [result]
    text = "\n".join(network_section(suite, None, "none"))
    assert "einstride contracts this path in" in text and "its own in" in text
    # where the reference's row has a problem, no comparison, and the problem stays shown
    wrong = {**_small_peers(), "cotengra 0.5 s": NetworkPeer(
        lambda network, ops: Prepared(greedy_path(network, ops), lambda: 2.0))}  # fmt: skip
    bad = run_network(net, subject, wrong, NETWORK_QUICK)
    assert bad.paired is None
    suite.networks = [bad]
    assert "| wrong: max abs error" in "\n".join(network_section(suite, None, "none"))
    # a failing or wrong call along a path leaves the comparison out, never the run
    failing = dataclasses.replace(subject, along=lambda network, ops, path: lambda: 1 / 0)
    assert run_network(net, failing, peers, NETWORK_QUICK).paired is None
    off = dataclasses.replace(subject, along=lambda network, ops, path: lambda: 2.0)
    assert run_network(net, off, peers, NETWORK_QUICK).paired is None
    small = run_network(grid(3, 3, 2), subject, peers, NETWORK_QUICK)  # 9 tensors
    assert small.paired is None


def test_network_paths_too_costly_are_not_run() -> None:
    tight = dataclasses.replace(NETWORK_QUICK, max_flops=10.0)
    result = run_network(mps_norm(4, 2), subject_peer(stand_in()), _small_peers(), tight)
    assert result.status == "MISS"
    assert all(e.problem.startswith("not run: its path needs") for e in result.entries)


def test_main_runs_one_section_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_command, "default_peers", lambda: default_peers(optional=False))
    monkeypatch.setattr(bench_command, "default_networks", lambda quick: (grid(2, 3, 2),))
    monkeypatch.setattr(bench_command, "default_network_peers", lambda quick: _small_peers())
    _no_import_timing(monkeypatch)
    output = tmp_path / "nets.md"
    argv = ["--stand-in", "--quick", "--networks", "--output", str(output)]
    assert bench_command.main(argv) == 0
    text = output.read_text(encoding="utf-8")
    assert "## Tensor networks" in text and "## Results" not in text
    assert "closed 2x3 grid, bond 2" in text and "## Cold calls" not in text
    assert ("-networks.png" in text) == (tmp_path / "nets-networks.png").exists()
    output = tmp_path / "cold.md"
    argv = ["--stand-in", "--quick", "--cold", "--cold-calls", "3", "-k", "cold trace"]
    assert bench_command.main([*argv, "--output", str(output), "--no-chart"]) == 0
    text = output.read_text(encoding="utf-8")
    assert "## Cold calls" in text and "| cold trace | `ii->` |" in text
    assert "Imports, each in a fresh interpreter (median of 3): numpy 95 ms." in text
    assert "## Tensor networks" not in text


def test_the_torch_table_is_filled_from_the_reports_torch_rows() -> None:
    import torch_table  # benchmarks/ is on sys.path

    header = "| case | equation | dtype | einstride | torch.einsum | ratio | status |"
    report = "\n".join(
        [
            "`einstride` against its peers, full run of 2026-12-02 12:45 UTC.",
            header,
            "|---|---|---|---|---|---|---|",
            "| matmul | `ij,jk->ik` | float64 | 1 ms | 1 ms | 1.00x | **PASS** |",
            "| torch: matmul | `ij,jk->ik` | float64 | 1 ms | **2 ms** | 0.50x | **PASS** |",
            "| torch fwd+bwd: matmul | `ij,jk->ik` | float64 | 4 ms | **2 ms** | 2.00x | **MISS** |",
            "",
        ]
    )
    page = f"# Torch\n\n{torch_table.MARKER}\n\nold text\n\n| old | table |\n\n## Next\n"
    filled = torch_table.fill(report, page, "Prose.")
    assert "old text" not in filled and filled.endswith("## Next\n")
    assert "1 of 2 cases within their targets" in filled
    assert "geometric mean 1.00x" in filled and "0.50x over the forward cases" in filled
    assert "The misses: torch fwd+bwd: matmul 2.00x." in filled
    assert "| torch: matmul | `ij,jk->ik` | float64 | 1 ms | **2 ms** | 0.50x |" in filled
    assert "| matmul |" not in filled
