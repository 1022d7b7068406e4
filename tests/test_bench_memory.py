"""The benchmark harness's memory section (benchmarks/einstride_bench/memory.py), on tiny
cases: peaks are measured, the sliced call keeps to its limit, the report has a row each."""

from __future__ import annotations

from pathlib import Path

from einstride_bench import command as bench_command
from einstride_bench.contenders import NUMPY_OPT, OPT_EINSUM, load_einstride
from einstride_bench.memory import MemoryCase, memory_cases, render_memory, run_memory_case
from einstride_bench.timing import Budget

TINY = Budget(seconds=0.05, min_sample=1e-4, turn=1e-3, min_turns=1, max_rounds=20)
CASE = MemoryCase(
    name="small",
    equation="ab,cbe,ae->ac",
    full=((40, 30), (20, 30, 25), (40, 25)),
    quick=((40, 30), (20, 30, 25), (40, 25)),
    target=100.0,
)


def test_the_memory_section_measures_peaks_and_times_the_sliced_call():
    row = run_memory_case(CASE, load_einstride(), TINY, quick=True)
    free = row.peaks["einstride"]
    assert free is not None and free >= 40 * 30 * 25 * 8  # the intermediate abe
    assert row.peaks[NUMPY_OPT] is not None and row.peaks[OPT_EINSUM] is not None
    assert row.limit == free // 8 and row.sliced_peak is not None
    assert row.sliced_peak < free and int(row.slices.replace(",", "")) > 1
    assert row.unsliced is not None and row.sliced is not None and row.ratio is not None
    assert row.status in ("PASS", "MISS") and not row.notes
    text = render_memory([row], "quick")
    assert "| small | `ab,cbe,ae->ac` |" in text and "einstride peak" in text


def test_the_memory_cases_are_the_issues():
    equations = {case.equation for case in memory_cases()}
    assert {"ab,cbe,ae->ac", "abc,ade,bdf,cef->", "zab,zcbe,zae->zac", "i,j,ij->"} <= equations


def test_the_memory_flag_writes_its_report(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(bench_command, "memory_cases", lambda: [CASE])
    output = tmp_path / "memory.md"
    assert (
        bench_command.main(["--memory", "--quick", "--budget", "0.05", "--output", str(output)])
        == 0
    )
    assert "| small |" in output.read_text(encoding="utf-8")
    assert bench_command.main(["--memory", "-k", "no such case"]) == 0
