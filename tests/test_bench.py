"""The benchmark harness, run on tiny cases with opt_einsum standing in for einstride.

The harness (benchmarks/einstride_bench) is not part of the wheel; pyproject's pytest
``pythonpath`` puts benchmarks/ on sys.path so that ``einstride_bench`` imports here."""

from __future__ import annotations

import math
import re
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
from einstride_bench import command as bench_command
from einstride_bench.check import mismatch, oracle
from einstride_bench.contenders import NUMPY, naive_size
from einstride_bench.machine import thread_limit
from einstride_bench.results import CaseResult, Entry, geometric_mean
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


def test_main_writes_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_command, "default_peers", lambda: default_peers(optional=False))
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
