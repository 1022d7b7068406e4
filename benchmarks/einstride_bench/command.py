"""``make bench`` (``benchmarks/run.py``): run the suite, write the markdown report and the chart.

Three sections: the warm suite (each shape repeated: a warm plan cache), cold calls (every
call on a new shape) and tensor networks (a fresh call, path search included). All three by
default; ``--warm``, ``--cold`` and ``--networks`` choose (a partial run writes into build/).

Exit codes: 0 when every case ran and the subject's results were all correct (targets
may be missed: the report says so; ``--strict`` makes a miss exit 1 too), 1 when the
subject raised or was wrong somewhere, 2 for a usage error or a build without einsum.

>>> main(["--list"])  # doctest: +ELLIPSIS
batched matmul f32: bij,bjk->bik
...
0
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .case import Case, Prepare
from .chart import draw, draw_networks
from .cold import (
    COLD_CALLS,
    COLD_GEOMEAN_LIMIT,
    QUICK_COLD_CALLS,
    ColdCase,
    cold_cases,
    run_cold,
    torch_cold_cases,
)
from .contenders import (
    TORCH,
    Engine,
    default_peers,
    load_einstride,
    stand_in,
    torch_device,
)
from .imports import import_seconds
from .machine import thread_limit
from .memory import memory_cases, render_memory, run_memory
from .netbench import (
    NETWORK_FULL,
    NETWORK_GEOMEAN_LIMIT,
    NETWORK_QUICK,
    default_network_peers,
    network_geomean,
    run_networks,
)
from .networks import Network, default_networks
from .report import render
from .results import SuiteResult, geometric_mean
from .runner import run_suite
from .sections import cold_section, cold_summary, network_section, network_summary
from .suite import default_cases
from .timing import FULL, QUICK, Budget

__all__ = ["SECTIONS", "main", "select", "write_report"]

SECTIONS = ("warm", "cold", "networks")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchmarks/run.py", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, shorter timing")
    parser.add_argument(
        "--output",
        type=Path,
        help="markdown report (default: docs/performance.md, or build/bench-quick.md with --quick)",
    )
    parser.add_argument("--chart", type=Path, help="PNG chart (default: beside the report)")
    parser.add_argument("--no-chart", action="store_true", help="do not draw the chart")
    parser.add_argument(
        "-k",
        "--case",
        action="append",
        default=[],
        metavar="TEXT",
        help="run only cases whose name or equation contains TEXT (repeatable)",
    )
    parser.add_argument(
        "--skip-peer",
        action="append",
        default=[],
        metavar="NAME",
        help="leave out a peer, e.g. torch.einsum (repeatable)",
    )
    parser.add_argument("--budget", type=float, help="seconds of timing per case")
    parser.add_argument(
        "--threads",
        type=_positive,
        help="limit native thread pools to N (1: steadier numbers on a busy machine)",
    )
    parser.add_argument(
        "--stand-in",
        action="store_true",
        help="time opt_einsum in einstride's place (to try the harness)",
    )
    parser.add_argument("--warm", action="store_true", help="run the warm suite (see below)")
    parser.add_argument("--cold", action="store_true", help="run the cold-call section")
    parser.add_argument(
        "--networks", action="store_true", help="run the tensor-network section (and its chart)"
    )
    parser.add_argument(
        "--cold-calls",
        type=_positive,
        help=f"new shapes per cold case (default {COLD_CALLS}, {QUICK_COLD_CALLS} with --quick)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--memory",
        action="store_true",
        help="run the memory section instead (peak bytes; sliced against unsliced time), "
        "written to docs/memory.md (build/bench-memory-quick.md with --quick)",
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    return parser


def select(cases: Sequence[Case], texts: Sequence[str]) -> list[Case]:
    """The cases whose name or equation contains any of ``texts`` (all when none given).

    >>> [case.name for case in select(default_cases(), ["bii"]) if not case.on_torch]
    ['batched trace']
    """
    if not texts:
        return list(cases)
    return [c for c in cases if any(t in c.name or t in c.equation for t in texts)]


def write_report(suite: SuiteResult, output: Path, chart: Path | None) -> str | None:
    """Write the markdown (and the charts unless ``chart`` is None: the network chart goes
    beside it, named ``<chart>-networks.png``); returns the chart's skip note, if any."""
    note = None
    if "warm" in suite.sections:
        note = "disabled with --no-chart" if chart is None else draw(suite, chart)
    link = None if chart is None or note is not None else os.path.relpath(chart, output.parent)
    extra: list[str] = []
    summary: list[str] = []
    if "cold" in suite.sections:
        summary += cold_summary(suite)
        extra += cold_section(suite)
    if "networks" in suite.sections:
        net_chart = None if chart is None else chart.with_name(chart.stem + "-networks.png")
        net_note = (
            "disabled with --no-chart" if net_chart is None else draw_networks(suite, net_chart)
        )
        net_link = (
            None
            if net_chart is None or net_note is not None
            else os.path.relpath(net_chart, output.parent)
        )
        summary += network_summary(suite)
        extra += network_section(suite, net_link, net_note or "")
        note = note or net_note
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render(suite, link, note or "", summary, extra), encoding="utf-8")
    return note


def _engine(use_stand_in: bool) -> Engine | None:
    if use_stand_in:
        return stand_in()
    try:
        return load_einstride()
    except ImportError as exc:
        print(f"benchmarks/run.py: {exc}; try --stand-in to exercise the harness", file=sys.stderr)
        return None


def _budget(args: argparse.Namespace) -> Budget:
    base = QUICK if args.quick else FULL
    return base if args.budget is None else dataclasses.replace(base, seconds=args.budget)


def _memory_main(args: argparse.Namespace) -> int:
    """``--memory``: the memory section alone (no case matching ``-k`` is no failure)."""
    cases = [
        c
        for c in memory_cases()
        if not args.case or any(t in c.name or t in c.equation for t in args.case)
    ]
    if args.list or not cases:
        print("\n".join(f"memory: {c.name}: {c.equation}" for c in cases) or "no memory case")
        return 0
    engine = _engine(args.stand_in)
    if engine is None:
        return 2
    with thread_limit(args.threads):
        rows = run_memory(cases, engine, _budget(args), args.quick)
    output = args.output or Path("build/bench-memory-quick.md" if args.quick else "docs/memory.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    mode = "quick" if args.quick else "full"
    output.write_text("# einstride: memory\n\n" + render_memory(rows, mode), encoding="utf-8")
    print(f"wrote {output}", file=sys.stderr)
    if any(note.startswith(("error", "wrong")) for row in rows for note in row.notes.values()):
        return 1
    return 1 if args.strict and any(row.status == "MISS" for row in rows) else 0


def _chosen(
    args: argparse.Namespace,
) -> tuple[tuple[str, ...], list[Case], list[ColdCase], list[Network]]:
    """The sections to run and, in each, the cases ``-k`` selects."""
    sections = tuple(s for s in SECTIONS if getattr(args, s)) or SECTIONS
    texts = args.case

    def wanted(name: str, equation: str = "") -> bool:
        return not texts or any(t in name or (equation and t in equation) for t in texts)

    warm = select(default_cases(), texts) if "warm" in sections else []
    # found, not imported: importing torch here, before the engine and the peers load,
    # slowed every library's cold products in the run (measured: the cold MLP layer
    # 0.65 -> 0.76-2.0 ms, torch.einsum's 2-4x; why is not known), which the peers' own
    # import of it, later, does not
    on_torch = torch_cold_cases() if importlib.util.find_spec("torch") is not None else ()
    cold = (
        [c for c in (*cold_cases(), *on_torch) if wanted(c.case.name, c.case.equation)]
        if ("cold" in sections)
        else []
    )
    nets = (
        [n for n in default_networks(args.quick) if wanted(n.name)]
        if ("networks" in sections)
        else []
    )
    return sections, warm, cold, nets


def _default_output(args: argparse.Namespace, sections: tuple[str, ...]) -> Path:
    if sections == SECTIONS:
        return Path("build/bench-quick.md" if args.quick else "docs/performance.md")
    return Path(f"build/bench-{'-'.join(sections)}{'-quick' if args.quick else ''}.md")


def _run(
    args: argparse.Namespace,
    engine: Engine,
    chosen: tuple[tuple[str, ...], list[Case], list[ColdCase], list[Network]],
) -> SuiteResult:
    sections, warm, cold, nets = chosen
    peers: dict[str, Prepare] = {
        n: p for n, p in default_peers().items() if n not in args.skip_peer
    }
    progress = sys.stderr
    with thread_limit(args.threads) as limited:
        suite = run_suite(warm, engine, peers, _budget(args), args.quick,
                          measure_rates="warm" in sections)  # fmt: skip
        suite.sections = sections
        if cold:
            calls = args.cold_calls or (QUICK_COLD_CALLS if args.quick else COLD_CALLS)
            on_numpy = [c for c in cold if not c.case.on_torch]
            suite.cold = run_cold(on_numpy, engine, peers, calls, progress)
            on_torch = [c for c in cold if c.case.on_torch]
            if on_torch and TORCH in peers:
                suite.torch_cold = run_cold(on_torch, engine, peers, calls, progress)
            suite.imports = import_seconds()
        if nets:
            net_peers = {n: p for n, p in default_network_peers(args.quick).items()
                         if n not in args.skip_peer}  # fmt: skip
            settings = NETWORK_QUICK if args.quick else NETWORK_FULL
            suite.networks = run_networks(nets, engine, net_peers, settings, progress)
    suite.notes["thread limit"] = limited
    if any(case.on_torch for case in warm) or suite.torch_cold:
        suite.notes["torch cases on"] = torch_device()
    return suite


def _missed(suite: SuiteResult) -> bool:
    cold = geometric_mean([r.ratio for r in suite.cold if r.ratio is not None])
    nets = network_geomean(suite.networks)
    return bool(
        suite.missed()
        or suite.geomean_met() is False
        or any(r.status == "MISS" for r in suite.cold)
        or any(r.status == "MISS" for r in suite.networks)
        or (cold is not None and cold > COLD_GEOMEAN_LIMIT)
        or (nets is not None and nets > NETWORK_GEOMEAN_LIMIT)
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; see the module doc for the exit codes."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.memory:
        return _memory_main(args)
    chosen = _chosen(args)
    sections, warm, cold, nets = chosen
    names = [f"{c.name}: {c.equation}" for c in warm]
    names += [f"cold {c.case.name}: {c.case.equation}" for c in cold]
    names += [f"network {n.name}: {n.tensors} tensors" for n in nets]
    if args.list or not names:
        print("\n".join(names) or "no case matches")
        return 0 if names else 2
    engine = _engine(args.stand_in)
    if engine is None:
        return 2
    # OpenMP peers (torch, pytblis) otherwise keep their workers spinning after each call,
    # holding a core while the next contender is timed. Set before their runtimes start;
    # an explicit value in the environment wins. The report records it.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    suite = _run(args, engine, chosen)
    output = args.output or _default_output(args, sections)
    chart = None if args.no_chart else (args.chart or output.with_suffix(".png"))
    note = write_report(suite, output, chart)
    print(
        f"wrote {output}" + (f" and {chart}" if note is None and chart else f" (no chart: {note})"),
        file=sys.stderr,
    )
    if suite.any_failed():
        return 1
    return 1 if args.strict and _missed(suite) else 0
