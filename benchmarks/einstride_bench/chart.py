"""The PNG bar chart: every contender's time relative to the fastest peer, per case.

matplotlib is optional (the ``bench`` extra); without it ``draw`` returns a note and
the report says the chart was skipped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .contenders import optional_module
from .report import column_of
from .results import CaseResult, SuiteResult

__all__ = ["draw", "relative_times"]


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


def draw(suite: SuiteResult, path: Path) -> str | None:
    """Write the chart to ``path``; returns why it was skipped, or ``None`` when drawn."""
    matplotlib = optional_module("matplotlib")
    if matplotlib is None:
        return "matplotlib is not installed (pip install 'einstride[bench]')"
    matplotlib.use("Agg")
    pyplot = optional_module("matplotlib.pyplot")
    if pyplot is None:
        return "matplotlib.pyplot could not be loaded"
    path.parent.mkdir(parents=True, exist_ok=True)
    _plot(pyplot, suite, path)
    return None
