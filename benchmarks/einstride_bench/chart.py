"""The PNG bar chart: every contender's time relative to the fastest peer, per case.

matplotlib is optional (the ``bench`` extra); without it ``draw`` returns a note and
the report says the chart was skipped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .contenders import optional_module
from .netbench import NetworkResult
from .report import column_of
from .results import CaseResult, SuiteResult

__all__ = ["draw", "draw_networks", "network_ratios", "relative_times"]


def relative_times(result: CaseResult) -> dict[str, float]:
    """Each timed column's best time divided by the fastest peer's (empty without peers).

    >>> import numpy as np
    >>> from einstride_bench.case import Case, dense
    >>> from einstride_bench.results import Entry
    >>> from einstride_bench.timing import Timing
    >>> case = Case("mm", "ij,jk->ik", dense(np.float64, [(2, 2)] * 2))
    >>> entries = (Entry("s", "subject", Timing((3.0,), 1)), Entry("p", "peer", Timing((2.0,), 1)))
    >>> relative_times(CaseResult(case, "", "float64", 0.0, entries))
    {'s': 1.5, 'p': 1.0}
    """
    fastest = result.fastest_peer
    if fastest is None or fastest.timing is None:
        return {}
    best: dict[str, float] = {}
    for entry in result.entries:
        if entry.timing is not None:
            column = column_of(result, entry)
            relative = entry.timing.median / fastest.timing.median
            best[column] = min(best.get(column, math.inf), relative)
    return best


def _plot(pyplot: Any, suite: SuiteResult, path: Path) -> None:
    rows = [(r.case.name, relative_times(r)) for r in suite.results]
    columns = list(dict.fromkeys(column for _, times in rows for column in times))
    height = 0.8 / max(len(columns), 1)
    figure, axes = pyplot.subplots(figsize=(12, 1.5 + 0.085 * len(rows) * max(len(columns), 3)))
    for index, column in enumerate(columns):
        places = [n + index * height for n, (_, times) in enumerate(rows) if column in times]
        values = [times[column] for _, times in rows if column in times]
        axes.barh(places, values, height=height, label=column,
                  edgecolor="black" if column == suite.engine else None)  # fmt: skip
    axes.set_yticks([n + 0.4 - height / 2 for n in range(len(rows))], [name for name, _ in rows])
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.axvline(1.0, color="gray", linewidth=0.8)
    axes.set_xlabel("time / fastest peer's time (log scale; left of 1 is faster)")
    axes.set_title(f"{suite.engine} vs peers ({suite.mode} run)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    pyplot.close(figure)


def _pyplot() -> tuple[Any, str | None]:
    matplotlib = optional_module("matplotlib")
    if matplotlib is None:
        return None, "matplotlib is not installed (pip install 'einstride[bench]')"
    matplotlib.use("Agg")
    pyplot = optional_module("matplotlib.pyplot")
    if pyplot is None:
        return None, "matplotlib.pyplot could not be loaded"
    return pyplot, None


def draw(suite: SuiteResult, path: Path) -> str | None:
    """Write the chart to ``path``; returns why it was skipped, or ``None`` when drawn."""
    pyplot, note = _pyplot()
    if pyplot is None:
        return note
    path.parent.mkdir(parents=True, exist_ok=True)
    _plot(pyplot, suite, path)
    return None


def network_ratios(result: NetworkResult, attribute: str) -> dict[str, float]:
    """Each contender's ``total`` (or ``flops``) over the smallest among them.

    >>> from einstride_bench.netbench import NetworkEntry
    >>> from einstride_bench.networks import grid
    >>> entries = (NetworkEntry("s", True, 1.0, 2.0, 8.0), NetworkEntry("p", False, 0.5, 1.0, 4.0))
    >>> network_ratios(NetworkResult(grid(2, 2, 2), entries, "p"), "total")
    {'s': 2.0, 'p': 1.0}
    """
    values = {e.name: getattr(e, attribute) for e in result.entries}
    known = {name: v for name, v in values.items() if v}
    least = min(known.values(), default=None)
    return {name: v / least for name, v in known.items()} if least else {}


def _network_panel(
    axes: Any, suite: SuiteResult, attribute: str, label: str, colors: dict[str, Any]
) -> None:
    rows = [(r.network.name, network_ratios(r, attribute)) for r in suite.networks]
    height = 0.8 / max(len(colors), 1)
    for index, (column, color) in enumerate(colors.items()):
        places = [n + index * height for n, (_, values) in enumerate(rows) if column in values]
        values = [values[column] for _, values in rows if column in values]
        axes.barh(places, values, height=height, label=column, color=color,
                  edgecolor="black" if column == suite.engine else None)  # fmt: skip
    axes.set_yticks([n + 0.4 - height / 2 for n in range(len(rows))], [name for name, _ in rows])
    axes.invert_yaxis()
    axes.set_xscale("log")
    axes.axvline(1.0, color="gray", linewidth=0.8)
    axes.set_xlabel(label)


def draw_networks(suite: SuiteResult, path: Path) -> str | None:
    """The network chart: per network, each contender's fresh-call total and its path's
    FLOPs relative to the best; returns why it was skipped, or ``None`` when drawn."""
    pyplot, note = _pyplot()
    if pyplot is None:
        return note
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = max(len(suite.networks), 1)
    names = list(dict.fromkeys(e.name for r in suite.networks for e in r.entries))
    palette = pyplot.get_cmap("tab10" if len(names) <= 10 else "tab20")
    colors = {name: palette(index % palette.N) for index, name in enumerate(names)}
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(16, 2 + 0.9 * rows), sharey=True)
    _network_panel(left, suite, "total", "fresh-call total / the best (log; left is faster)",
                   colors)  # fmt: skip
    _network_panel(right, suite, "flops", "path FLOPs / the fewest (log)", colors)
    left.set_title(f"{suite.engine} on tensor networks ({suite.mode} run)")
    handles = [pyplot.Rectangle((0, 0), 1, 1, color=color) for color in colors.values()]
    right.legend(handles, list(colors), loc="upper left", bbox_to_anchor=(1.01, 1.0),
                 fontsize="small")  # fmt: skip
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    pyplot.close(figure)
    return None
