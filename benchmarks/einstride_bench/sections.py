"""The report's cold-call and network sections (markdown lines for ``report.render``).

>>> from einstride_bench.results import SuiteResult
>>> suite = SuiteResult("einstride", "quick", sections=("cold",))
>>> print(cold_summary(suite)[0])
- Cold calls: 0 cases (none); geometric mean of einstride / fastest peer: — (target <= 1x): **n/a**.
"""

from __future__ import annotations

from collections.abc import Sequence

from .cold import COLD_GEOMEAN_LIMIT, COLD_TARGET
from .imports import imports_line
from .netbench import (
    NETWORK_FLOPS_FACTOR,
    NETWORK_FULL,
    NETWORK_GEOMEAN_LIMIT,
    NETWORK_TARGET,
    NetworkEntry,
    NetworkResult,
    network_geomean,
)
from .report import _DASH, _cell, _columns, _Footnotes, fmt_seconds
from .results import CaseResult, SuiteResult, geometric_mean

__all__ = [
    "cold_section",
    "cold_summary",
    "network_section",
    "network_summary",
]


def _word(met: bool | None) -> str:
    return "n/a" if met is None else ("PASS" if met else "MISS")


def _counts(statuses: Sequence[str]) -> str:
    found = [f"{statuses.count(s)} {s}" for s in ("PASS", "MISS", "WRONG", "ERROR", "n/a")
             if statuses.count(s)]  # fmt: skip
    return ", ".join(found) or "none"


def _cold_geomean(results: Sequence[CaseResult]) -> float | None:
    return geometric_mean([r.ratio for r in results if r.ratio is not None])


def cold_summary(suite: SuiteResult) -> list[str]:
    """The summary line of the cold section."""
    geomean = _cold_geomean(suite.cold)
    shown = _DASH if geomean is None else f"{geomean:.2f}x"
    met = None if geomean is None else geomean <= COLD_GEOMEAN_LIMIT
    return [
        f"- Cold calls: {len(suite.cold)} cases ({_counts([r.status for r in suite.cold])}); "
        f"geometric mean of {suite.engine} / fastest peer: {shown} "
        f"(target <= {COLD_GEOMEAN_LIMIT:g}x): **{_word(met)}**."
    ]


def _cold_row(result: CaseResult, columns: list[str], notes: _Footnotes) -> str:
    times = [_cell(result, column, notes) for column in columns]
    ratio = _DASH if result.ratio is None else f"{result.ratio:.2f}x"
    calls = max((len(e.timing.samples) for e in result.entries if e.timing), default=0)
    cells = [result.case.name, f"`{result.case.equation}`", result.dtype, result.shapes,
             str(calls), *times, ratio, f"**{result.status}**"]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def _imports(suite: SuiteResult) -> list[str]:
    if not suite.imports:
        return []
    return [imports_line(suite.imports) + " A process pays it once, before its first call "
            "(no target).", ""]  # fmt: skip


def cold_section(suite: SuiteResult) -> list[str]:
    """The cold-call section: one row per case, the median seconds per call."""
    notes = _Footnotes()
    columns = _columns(suite.cold)
    header = ["case", "equation", "dtype", "shapes (first … last call)", "calls", *columns,
              "ratio", "status"]  # fmt: skip
    rows = [_cold_row(result, columns, notes) for result in suite.cold]
    misses = [f"- **{r.case.name}**: {r.subject.problem or f'{r.ratio:.2f}x'}"
              for r in suite.cold if r.status in ("MISS", "WRONG", "ERROR")]  # fmt: skip
    return [
        "## Cold calls",
        "",
        f"Each case called on new shapes, one call per shape (a label grows by one per call, "
        f"so every call misses every cache); the median seconds per call. Target: "
        f"{COLD_TARGET.describe()} per case, geometric mean <= {COLD_GEOMEAN_LIMIT:g}x.",
        "",
        *_imports(suite),
        *cold_summary(suite),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *rows,
        "",
        *(f"{number}. {line}" for number, line in enumerate(notes.lines, 1)),
        "",
        "Misses and failures:",
        "",
        *(misses or ["None."]),
        "",
        *_torch_cold(suite),
    ]


def _torch_cold(suite: SuiteResult) -> list[str]:
    """The section's cases on torch tensors: einstride against torch.einsum, no target."""
    if not suite.torch_cold:
        return []
    notes = _Footnotes()
    columns = _columns(suite.torch_cold)
    header = ["case", "equation", "dtype", "shapes (first … last call)", "calls", *columns,
              "ratio"]  # fmt: skip
    rows = [_cold_row(result, columns, notes).rsplit(" | ", 1)[0] + " |"
            for result in suite.torch_cold]  # fmt: skip
    ratios = [r.ratio for r in suite.torch_cold if r.ratio is not None]
    mean = geometric_mean(ratios)
    shown = _DASH if mean is None else f"{mean:.2f}x"
    return [
        "### On torch tensors",
        "",
        f"The section's cases on torch tensors ({suite.notes.get('torch cases on', 'cpu')}; "
        "but the diagonal expansion, which torch.einsum does not run), "
        "each call on a new shape as above: what a torch user's first call of a shape costs, "
        f"einstride against torch.einsum. No target (the section's targets are its NumPy "
        f"cases); geometric mean of the ratios: {shown}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *rows,
        "",
        *(f"{number}. {line}" for number, line in enumerate(notes.lines, 1)),
    ]


def network_summary(suite: SuiteResult) -> list[str]:
    """The summary line of the network section."""
    geomean = network_geomean(suite.networks)
    shown = _DASH if geomean is None else f"{geomean:.2f}x"
    met = None if geomean is None else geomean <= NETWORK_GEOMEAN_LIMIT
    statuses = [r.status for r in suite.networks]
    return [
        f"- Tensor networks: {len(suite.networks)} networks ({_counts(statuses)}); geometric "
        f"mean of {suite.engine}'s fresh-call total / the best peer's: {shown} "
        f"(target <= {NETWORK_GEOMEAN_LIMIT:g}x): **{_word(met)}**."
    ]


def _seconds(value: float | None) -> str:
    return _DASH if value is None else fmt_seconds(value)


def _bytes(value: int | None) -> str:
    return _DASH if value is None else f"{value / 2**20:,.2f} MiB"


def _flops(value: float | None) -> str:
    return _DASH if value is None else f"{value:.3g}"


def _overview_row(result: NetworkResult) -> str:
    net, best = result.network, result.best_peer
    ratio = _DASH if result.ratio is None else f"{result.ratio:.2f}x"
    flops = result.flops_ratio
    cells = [net.name, str(net.tensors), str(net.labels), _seconds(result.subject.total),
             _DASH if best is None else f"{best.name} {_seconds(best.total)}", ratio,
             _DASH if flops is None else f"{flops:.2f}x", f"**{result.status}**"]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def _detail_row(result: NetworkResult, entry: NetworkEntry) -> str:
    best = result.best_peer
    total = entry.total
    relative = (_DASH if total is None or best is None or not best.total
                else f"{total / best.total:.2f}x")  # fmt: skip
    name = f"**{entry.name}**" if entry is best or entry.subject else entry.name
    note = entry.problem
    if entry.name == result.largest_budget and result.paired is not None:
        theirs, mine = result.paired
        paired = (f"{result.subject.name} contracts this path in {_seconds(theirs)}, its own "
                  f"in {_seconds(mine)} (the same fresh call, alternated)")  # fmt: skip
        note = f"{note}; {paired}" if note else paired
    cells = [result.network.name, name, _seconds(entry.search), _seconds(entry.contraction),
             _seconds(total), relative, _flops(entry.flops), _bytes(entry.peak),
             note]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def network_section(suite: SuiteResult, chart: str | None, chart_note: str) -> list[str]:
    """The network section: an overview row per network, then every contender's numbers."""
    overview = ["network", "tensors", "labels", f"{suite.engine} total", "best peer (total)",
                "ratio", f"FLOPs / cotengra's (>= 40 tensors, <= {NETWORK_FLOPS_FACTOR:g}x)",
                "status"]  # fmt: skip
    detail = ["network", "contender", "path search", "contraction", "total", "/ best peer",
              "FLOPs", "peak", "note"]  # fmt: skip
    references = sorted({r.reference for r in suite.networks})
    return [
        "## Tensor networks",
        "",
        f"A fresh call on each network, after one untimed contraction of it (so that no "
        f"contender pays for the allocator's first growth to its sizes; before the first "
        f"network every contender but cotengra makes its own first calls, untimed, on a "
        f"small network, so that none pays its imports there; each call is fresh: "
        f"{suite.engine}'s plans and numpy.einsum's parses of its steps are forgotten "
        f"before it): path search "
        f"(timed), then the contraction (timed; "
        f"{suite.engine}'s includes planning the steps, the first call of its expression); "
        f"a fresh call of under {NETWORK_FULL.repeat_below:g} s is repeated, in up to "
        f"{NETWORK_FULL.repeats} rounds (one with --quick) that call every contender once "
        f"each, in a new random order per round, and the medians are reported (this "
        f"machine's speed drifts by up to 2x for seconds to minutes at a time: "
        f"interleaved, every contender meets every phase); "
        f"FLOPs of each path as opt_einsum counts them; peak bytes the contraction allocates "
        f"(tracemalloc, a separate pass; torch's allocator is not visible to it). Targets: "
        f"total <= {NETWORK_TARGET:g}x the best peer's, geometric mean <= "
        f"{NETWORK_GEOMEAN_LIMIT:g}x; on networks of 40 tensors and more the path's FLOPs "
        f"<= {NETWORK_FLOPS_FACTOR:g}x those of cotengra at its largest budget; there, "
        f"that cotengra row's note gives {suite.engine}'s contraction along cotengra's path "
        f"and along its own (the same fresh call with the path given, alternated, three "
        f"each; whether fewer FLOPs run faster in its executor). Results checked against: "
        f"{', '.join(references) or _DASH}.",
        "",
        *network_summary(suite),
        "",
        f"![{suite.engine} on tensor networks]({chart})" if chart else f"(No chart: {chart_note})",
        "",
        "| " + " | ".join(overview) + " |",
        "|" + "---|" * len(overview),
        *(_overview_row(r) for r in suite.networks),
        "",
        "| " + " | ".join(detail) + " |",
        "|" + "---|" * len(detail),
        *(_detail_row(r, e) for r in suite.networks for e in r.entries),
        "",
    ]
