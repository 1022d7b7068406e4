"""The markdown report (docs/performance.md): targets, the table, the machine.

>>> fmt_seconds(0.00123), fmt_seconds(4.5e-6), fmt_seconds(2.0)
('1.23 ms', '4.50 µs', '2.00 s')
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from .results import GEOMEAN_LIMIT, CaseResult, Entry, SuiteResult

__all__ = ["HANDWRITTEN", "column_of", "fmt_seconds", "render"]

HANDWRITTEN = "hand-written NumPy"
BUSY_WARNING = 0.25  # cores used by other processes above which the report warns
_DASH = "—"


def fmt_seconds(seconds: float) -> str:
    """Seconds with three significant digits in a readable unit."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            value = seconds / scale
            digits = 2 if value < 10 else (1 if value < 100 else 0)
            return f"{value:.{digits}f} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def column_of(result: CaseResult, entry: Entry) -> str:
    """The table column of an entry: its name, or one column for all hand-written peers."""
    if result.case.kind == "handwritten" and entry.role == "peer":
        return HANDWRITTEN
    return entry.name


def _columns(results: Sequence[CaseResult]) -> list[str]:
    order = {"subject": 0, "peer": 1, "reference": 2}
    seen: dict[str, int] = {}
    for result in results:
        for entry in result.entries:
            seen.setdefault(column_of(result, entry), order[entry.role])
    return sorted(seen, key=lambda name: seen[name])  # stable: first appearance per role


class _Footnotes:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def mark(self, text: str) -> str:
        self.lines.append(text)
        return f"[{len(self.lines)}]"


def _cell(result: CaseResult, column: str, notes: _Footnotes) -> str:
    entries = [e for e in result.entries if column_of(result, e) == column]
    timed = [e for e in entries if e.timing is not None]
    if not entries:
        return ""
    if not timed:
        word = entries[0].problem.split(":", 1)[0]
        return (
            word + " " + notes.mark(f"{result.case.name}, {entries[0].name}: {entries[0].problem}")
        )
    best = min(timed, key=lambda e: e.timing.median if e.timing else 0.0)
    text = fmt_seconds(best.timing.median) if best.timing else _DASH
    if column == HANDWRITTEN:
        text += " " + notes.mark(f"{result.case.name}: fastest hand-written peer: {best.name}")
    return f"**{text}**" if best is result.fastest_peer else text


def _rate_cells(result: CaseResult, suite: SuiteResult) -> tuple[str, str]:
    gflops = result.gflops()
    share = result.matmul_share()
    if share is not None:
        percent = f"{share:.0%}"
    elif (
        gflops is not None
        and result.case.group == "contraction"
        and result.dtype in suite.matmul_rates
    ):
        percent = f"{gflops / suite.matmul_rates[result.dtype]:.0%} of peak"
    else:
        percent = _DASH
    return (_DASH if gflops is None else f"{gflops:.3g}"), percent


def _row(result: CaseResult, columns: list[str], suite: SuiteResult, notes: _Footnotes) -> str:
    times = [_cell(result, column, notes) for column in columns]
    gflops, percent = _rate_cells(result, suite)
    ratio = _DASH if result.ratio is None else f"{result.ratio:.2f}x"
    if result.ratio is not None and result.noisy():
        ratio += " (noisy)"
    busy = _DASH if result.background is None else f"{result.background:.1f}"
    targets = "; ".join(
        f"{phrase}: {measured or 'n/a'}" for phrase, _, measured in result.verdicts()
    )
    cells = [
        result.case.name,
        f"`{result.case.equation}`",
        result.dtype,
        result.shapes,
        *times,
        ratio,
        gflops,
        percent,
        targets,
        f"**{result.status}**",
        busy,
    ]
    return "| " + " | ".join(cells) + " |"


def _table(suite: SuiteResult, notes: _Footnotes) -> list[str]:
    columns = _columns(suite.results)
    header = [
        "case",
        "equation",
        "dtype",
        "shapes",
        *columns,
        "ratio",
        "GFLOP/s",
        "% matmul",
        "targets (measured)",
        "status",
        "others busy (cores)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + [_row(result, columns, suite, notes) for result in suite.results]


def _verdict_word(met: bool | None) -> str:
    return "n/a" if met is None else ("PASS" if met else "MISS")


def _summary(suite: SuiteResult) -> list[str]:
    statuses = [r.status for r in suite.results]
    counts = ", ".join(
        f"{statuses.count(s)} {s}"
        for s in ("PASS", "MISS", "WRONG", "ERROR", "n/a")
        if statuses.count(s)
    )
    geomean = suite.geomean_ratio()
    shown = _DASH if geomean is None else f"{geomean:.2f}x"
    lines = [
        f"- Cases: {len(suite.results)} ({counts or 'none'}).",
        f"- Geometric mean of {suite.engine} / fastest peer over the suite: {shown} "
        f"(target <= {GEOMEAN_LIMIT}x): **{_verdict_word(suite.geomean_met())}**.",
        *_quietness(suite),
    ]
    return lines + _target_tally(suite)


def _quietness(suite: SuiteResult) -> list[str]:
    if suite.background is None:
        return []
    line = (
        f"- Other processes kept {suite.background:.2f} cores busy on average during the run "
        f"({suite.machine.get('cores', '?')} cores)."
    )
    if suite.background >= BUSY_WARNING:
        line += (
            " **The machine was not quiet**: multi-threaded contenders (BLAS, torch, pytblis)"
            " lose whole scheduler slices, so ratios are unreliable; rerun when it is idle."
        )
    return [line]


def _target_tally(suite: SuiteResult) -> list[str]:
    tally: dict[str, list[bool | None]] = {}
    for result in suite.results:
        for phrase, met, _ in result.verdicts():
            tally.setdefault(phrase, []).append(met)
    lines = ["", "| target | cases | PASS | MISS | not measurable |", "|---|---|---|---|---|"]
    for phrase, mets in tally.items():
        counts = [mets.count(True), mets.count(False), mets.count(None)]
        lines.append(f"| {phrase} | {len(mets)} | " + " | ".join(map(str, counts)) + " |")
    return lines


def _misses(suite: SuiteResult) -> list[str]:
    lines = []
    for result in suite.results:
        if result.status in ("ERROR", "WRONG"):
            lines.append(f"- **{result.case.name}**: {result.subject.problem}")
        for phrase, met, measured in result.verdicts():
            if met is False:
                lines.append(f"- **{result.case.name}**: {phrase}, measured {measured}")
    return ["## Misses and failures", "", *(lines or ["None."]), ""]


def _machine(suite: SuiteResult) -> list[str]:
    lines = ["## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in suite.machine.items()]
    lines += [f"| `{key}` | {value} |" for key, value in suite.environment.items()]
    lines += [f"| {key} | {value} |" for key, value in suite.notes.items()]
    lines += [
        f"| numpy.matmul {dtype} | {rate:.1f} GFLOP/s |"
        for dtype, rate in suite.matmul_rates.items()
    ]
    return lines + ["", "Native thread pools:", "", *(f"- {line}" for line in suite.blas), ""]


_READING = """## How to read this

- Every contender runs in one process on the same operands; each result is first checked
  against NumPy (float64 oracle, dtype-dependent tolerance) and only correct ones are timed.
- Times are medians of interleaved samples: contenders take turns in a new random order
  each round, each turn starts with an untimed settling call, and calls per sample
  adapt so that microsecond cases are timed over many calls.
- A library leaves its worker threads spinning after a call (OpenBLAS for up to about
  0.1 s), and the contender whose turn follows runs slower while they do: the settling
  call absorbs only part of it. Measured: torch's `ijk->i` on 256 x 256 x 128 took 4.9-6.5
  ms right after {engine}'s BLAS row sum, 2.8 ms alone (`OPENBLAS_THREAD_TIMEOUT=4`
  removes the difference). A case where {engine} calls BLAS and the fastest peer does
  not (the large row and column sums) flatters {engine}, and the reverse.
- **ratio** = {engine} / fastest peer (bold); below 1 means {engine} wins. "(noisy)"
  marks a case whose samples spread widely (interquartile range > 25% of the median).
- **others busy**: cores that other processes kept busy while the case ran (from
  /proc/stat less this process's CPU time); on a 2-core machine anything near 1 makes
  multi-threaded timings unreliable. `make bench BENCH_ARGS="--threads 1"` limits every
  native thread pool (BLAS, OpenMP, torch, pytblis) to one thread: steadier numbers on a
  busy machine, at the price of not measuring parallel speed-ups.
- **% matmul**: for GEMM-shaped cases, numpy.matmul's time on the same data / {engine}'s
  (100% = as fast as matmul); for other contractions, {engine}'s GFLOP/s as a share of
  the square-GEMM reference rate ("of peak").
- Tiny cases are judged against numpy.einsum's C loop (optimize=False), as the issue asks;
  the diagonal expansion `ij->iij`, which no einsum peer computes, is judged against the
  best hand-written NumPy code.
- **Cold calls**: every call on a new shape (the issue-14 cases and the suite's einsum
  cases, a label growing by one per call), so no plan cache ever hits; each call timed
  alone, contenders in a new random order per shape, every result checked; the median.
  The check's oracle is numpy.einsum(optimize=True) on the same shapes, run without
  numpy's own cache of per-shape parses: it leaves the contenders none of those shapes.
- **Tensor networks**: one fresh call per network and contender (repeated while fast,
  median), split into the path search and the contraction along the path found.
- Reproduce: `make bench` (full, rewrites this file) or `make bench-quick` (smaller sizes);
  `--warm`, `--cold` or `--networks` run one section alone (into build/).
  On machines where `OPENBLAS_CORETYPE`/`OPENBLAS_L2_SIZE` are set to work around old
  OpenBLAS bugs, a current NumPy runs slower kernels; for numbers comparable to a tuned
  NumPy run `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE make bench` (the values in
  effect are recorded above).
"""


def _stand_in_banner(suite: SuiteResult) -> list[str]:
    if not suite.stand_in:
        return []
    return [
        f"> **Not einstride**: this run timed `{suite.engine}` in einstride's place, to",
        "> exercise the harness. Regenerate with `make bench` for einstride's numbers.",
        "",
    ]


def _warm(suite: SuiteResult, chart: str | None, chart_note: str) -> list[str]:
    notes = _Footnotes()
    table = _table(suite, notes)
    return [
        "## Results",
        "",
        f"![{suite.engine} vs peers]({chart})" if chart else f"(No chart: {chart_note})",
        "",
        *table,
        "",
        *(f"{number}. {line}" for number, line in enumerate(notes.lines, 1)),
        "",
        *_misses(suite),
    ]


def render(
    suite: SuiteResult,
    chart: str | None,
    chart_note: str = "",
    summary: Sequence[str] = (),
    sections: Sequence[str] = (),
) -> str:
    """The whole report; ``chart`` is the PNG's path relative to the report, if drawn.
    ``summary`` and ``sections`` are the lines of the other sections (cold calls, networks)
    for the summary and after the warm section; the warm parts appear when it ran."""
    warm = "warm" in suite.sections
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Performance",
        "",
        f"`{suite.engine}` against its peers, {suite.mode} run of {when}.",
        "",
        *_stand_in_banner(suite),
        "## Summary",
        "",
        *(_summary(suite) if warm else []),
        *summary,
        "",
        *(_warm(suite, chart, chart_note) if warm else []),
        *sections,
        *_machine(suite),
        _READING.format(engine=suite.engine),
    ]
    return "\n".join(lines)
