"""The performance benchmark: einstride's einsum against its peers (see docs/performance.md).

A development tool, not part of the einstride wheel: ``make bench`` (``benchmarks/run.py``,
which puts ``benchmarks/`` on ``sys.path``) times the installed einstride side by side with
numpy.einsum, opt_einsum, and torch and pytblis when installed, on the cases of ``suite``,
checks every result against NumPy, and writes a markdown report with a PNG chart. The pieces
are usable on their own: pass ``run_suite`` any ``Engine`` and any peers.

>>> from einstride_bench import Engine, default_cases, run_suite
>>> len(default_cases()) >= 20
True
"""

from .case import FASTEST_PEER, Case, Skip, Target, dense, viewed
from .command import main, select, write_report
from .contenders import Engine, default_peers, load_einstride, stand_in
from .results import CaseResult, Entry, SuiteResult
from .runner import run_case, run_suite
from .suite import default_cases
from .timing import FULL, QUICK, Budget, Timing

__all__ = [
    "FASTEST_PEER",
    "FULL",
    "QUICK",
    "Budget",
    "Case",
    "CaseResult",
    "Engine",
    "Entry",
    "Skip",
    "SuiteResult",
    "Target",
    "Timing",
    "default_cases",
    "default_peers",
    "dense",
    "load_einstride",
    "main",
    "run_case",
    "run_suite",
    "select",
    "stand_in",
    "viewed",
    "write_report",
]
