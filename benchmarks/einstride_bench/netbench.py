"""The network section: a fresh contraction of each tensor network, path search included.

Every contender first finds its path (timed: "search"), then contracts along it (timed:
"contraction"); a fresh call of einsum pays both. Per network and contender the report
gives both times and their total, the FLOPs of the path (opt_einsum's count, the same for
everyone), and the peak bytes the contraction allocates (``tracemalloc``, in a separate
pass, so tracing does not slow the timed one). A path too costly to run here (a greedy
path can be thousands of times worse than the best) is reported with its FLOPs and not
run. Every result is checked against numpy.einsum's, or, past its 52 labels, opt_einsum's.

>>> from einstride_bench.contenders import stand_in
>>> from einstride_bench.networks import mps_norm
>>> peers = {name: peer for name, peer in default_network_peers(True).items()
...          if name.startswith("opt_einsum")}
>>> result = run_network(mps_norm(6, 4), subject_peer(stand_in()), peers, NETWORK_QUICK)
>>> result.subject.problem, result.reference
('', 'opt_einsum auto')
>>> result.subject.total > 0, result.entries[1].flops
(True, 1824.0)
"""

from __future__ import annotations

import gc
import random
import statistics
import time
import tracemalloc
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

import numpy as np

from .case import Operands, Skip
from .check import forget_numpy_parses
from .contenders import Engine, opt_einsum, optional_module
from .networks import Network, random_regular
from .results import geometric_mean

__all__ = [
    "COTENGRA",
    "NETWORK_FLOPS_FACTOR",
    "NETWORK_FULL",
    "NETWORK_GEOMEAN_LIMIT",
    "NETWORK_QUICK",
    "NETWORK_TARGET",
    "NetworkEntry",
    "NetworkPeer",
    "NetworkResult",
    "NetworkSettings",
    "Prepared",
    "default_network_peers",
    "run_network",
    "run_networks",
    "subject_peer",
]

NETWORK_TARGET = 1.1  # einstride's total / the best peer's total, per network
NETWORK_GEOMEAN_LIMIT = 0.8
NETWORK_FLOPS_FACTOR = 2.0  # einstride's FLOPs / cotengra's at its largest budget (>= 40)
COTENGRA = "cotengra"
DP_MAX_TENSORS = 24  # opt_einsum's dp searches for minutes past this on random networks
Path = list[tuple[int, ...]]


@dataclass(frozen=True)
class NetworkSettings:
    """How much the section may spend: cotengra's time budgets, rounds of the fast calls
    (each contender's fresh call once per round, the median reported: :func:`_rounds`),
    and the FLOPs and bytes past which a path is not run."""

    cotengra_budgets: tuple[float, ...]
    repeats: int
    repeat_below: float  # seconds: only calls faster than this are repeated
    max_flops: float
    max_bytes: float


NETWORK_FULL = NetworkSettings((0.1, 1.0, 5.0), 7, 0.5, 2e11, 4 * 2**30)
# (seven rounds: with three, the medians of a millisecond network moved with the machine's
# phases, random-10/4's ratio 1.03-1.29x over runs of the same code; with seven, three
# runs 0.88-1.05x)
NETWORK_QUICK = NetworkSettings((0.1, 0.5), 1, 0.0, 5e9, 2**29)


@dataclass(frozen=True)
class Prepared:
    """A contender's found path (None when it does not say) and what contracts along it."""

    path: Path | None
    contract: Callable[[], Any]


@dataclass(frozen=True)
class NetworkPeer:
    """A contender: ``search(network, operands)`` finds its path (raising ``Skip`` when it
    does not apply); ``fresh`` runs before every call (a cache to forget)."""

    search: Callable[[Network, Operands], Prepared]
    fresh: Callable[[], Any] | None = None
    separable: bool = True  # False: the search happens inside the contraction (torch)
    along: Callable[[Network, Operands, Path], Callable[[], Any]] | None = None
    """What contracts along a given path (the subject: a fresh call with ``optimize=path``)."""


@dataclass(frozen=True)
class NetworkEntry:
    """One contender on one network (seconds; ``problem`` when it did not run or was
    wrong: "skipped: ...", "error: ...", "wrong: ...", "not run: ...")."""

    name: str
    subject: bool
    search: float | None = None
    contraction: float | None = None
    flops: float | None = None
    peak: int | None = None
    problem: str = ""

    @property
    def total(self) -> float | None:
        if self.problem or self.contraction is None:
            return None
        return (self.search or 0.0) + self.contraction


@dataclass(frozen=True)
class NetworkResult:
    """A network's entries (subject first) and the verdicts on them."""

    network: Network
    entries: tuple[NetworkEntry, ...]
    reference: str
    largest_budget: str = ""  # the cotengra entry the FLOPs target compares with
    extra: dict[str, str] = field(default_factory=dict)
    paired: tuple[float, float] | None = None
    """The subject's contraction along the FLOPs reference's path and along its own (the
    same fresh call for both, alternated: :func:`_paired`), where the FLOPs target applies:
    whether a path of fewer FLOPs runs faster in the subject's executor."""

    @property
    def subject(self) -> NetworkEntry:
        return next(e for e in self.entries if e.subject)

    @property
    def best_peer(self) -> NetworkEntry | None:
        """The peer with the lowest total, if any ran."""
        timed = [e for e in self.entries if not e.subject and e.total is not None]
        return min(timed, key=lambda e: e.total or 0.0, default=None)

    @property
    def ratio(self) -> float | None:
        """Subject total / the best peer's total."""
        best, mine = self.best_peer, self.subject.total
        if best is None or mine is None or not best.total:
            return None
        return mine / best.total

    @property
    def flops_ratio(self) -> float | None:
        """Subject FLOPs / those of cotengra at its largest budget (networks >= 40 tensors)."""
        ref = next((e for e in self.entries if e.name == self.largest_budget), None)
        mine = self.subject.flops
        if self.network.tensors < 40 or ref is None or not ref.flops or mine is None:
            return None
        return mine / ref.flops

    def verdicts(self) -> tuple[tuple[str, bool | None, str], ...]:
        """Each target: its phrase, whether met (None: not measurable), what was measured."""
        ratio, flops = self.ratio, self.flops_ratio
        best = self.best_peer
        found = [(f"<= {NETWORK_TARGET:g}x the best peer's total", None if ratio is None else
                  ratio <= NETWORK_TARGET, "" if ratio is None or best is None
                  else f"{ratio:.2f}x {best.name}")]  # fmt: skip
        if self.network.tensors >= 40:
            found.append((f"FLOPs <= {NETWORK_FLOPS_FACTOR:g}x {self.largest_budget}",
                          None if flops is None else flops <= NETWORK_FLOPS_FACTOR,
                          "" if flops is None else f"{flops:.2f}x"))  # fmt: skip
        return tuple(found)

    @property
    def status(self) -> str:
        """ERROR/WRONG when the subject failed, MISS when a target failed (or its path was
        too costly to run), else PASS."""
        problem = self.subject.problem
        if problem.startswith("not run"):
            return "MISS"  # its path was too costly to run here
        if problem:
            return "WRONG" if problem.startswith("wrong") else "ERROR"
        met = [v[1] for v in self.verdicts() if v[1] is not None]
        if not met:
            return "n/a"
        return "PASS" if all(met) else "MISS"


def network_geomean(results: Sequence[NetworkResult]) -> float | None:
    """The geometric mean of the subject / best-peer total ratios."""
    return geometric_mean([r.ratio for r in results if r.ratio is not None])


# -- contenders ------------------------------------------------------------------------------


def subject_peer(engine: Engine) -> NetworkPeer:
    """The engine: ``contract_expression`` on the shapes (its path search), then the call."""

    def search(network: Network, ops: Operands) -> Prepared:
        expression = engine.contract_expression(network.equation, *network.shapes)
        path = getattr(expression, "path", None)
        return Prepared(None if path is None else [tuple(e) for e in path],
                        lambda: expression(*ops))  # fmt: skip

    def along(network: Network, ops: Operands, path: Path) -> Callable[[], Any]:
        return lambda: engine.einsum(network.equation, *ops, optimize=path)

    return NetworkPeer(search, fresh=engine.clear_caches, along=along)


def _numpy_greedy(network: Network, ops: Operands) -> Prepared:
    equation = network.ascii_equation()
    if equation is None:
        raise Skip(f"numpy.einsum takes at most 52 labels; this network has {network.labels}")
    path, _ = np.einsum_path(equation, *ops, optimize="greedy")
    return Prepared([tuple(e) for e in path[1:]],
                    lambda: np.einsum(equation, *ops, optimize=path))  # fmt: skip


def _opt_einsum(optimize: str) -> NetworkPeer:
    def search(network: Network, ops: Operands) -> Prepared:
        if optimize == "dp" and network.tensors > DP_MAX_TENSORS:
            raise Skip(f"its search takes minutes past {DP_MAX_TENSORS} tensors")
        path, _ = opt_einsum.contract_path(network.equation, *ops, optimize=optimize)
        return Prepared(
            list(path), lambda: opt_einsum.contract(network.equation, *ops, optimize=path)
        )

    return NetworkPeer(search)


def _torch(torch: Any) -> NetworkPeer:
    def search(network: Network, ops: Operands) -> Prepared:
        equation = network.ascii_equation()
        if equation is None:
            raise Skip(f"torch.einsum takes at most 52 labels; this network has {network.labels}")
        tensors = [torch.from_numpy(op) for op in ops]
        return Prepared(None, lambda: torch.einsum(equation, *tensors))

    return NetworkPeer(search, separable=False)


def _cotengra(ctg: Any, seconds: float) -> NetworkPeer:
    def search(network: Network, ops: Operands) -> Prepared:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. "kahypar not installed" on every call
            optimizer = ctg.HyperOptimizer(max_time=seconds, max_repeats=10**6,
                                           parallel=False, progbar=False)  # fmt: skip
            path, _ = opt_einsum.contract_path(network.equation, *ops, optimize=optimizer)
        return Prepared(
            list(path), lambda: opt_einsum.contract(network.equation, *ops, optimize=path)
        )

    return NetworkPeer(search)


def default_network_peers(quick: bool) -> dict[str, NetworkPeer]:
    """numpy.einsum (greedy path), opt_einsum (auto, greedy, random-greedy, dp), and
    torch.einsum and cotengra's HyperOptimizer at each budget when installed."""
    peers = {
        'numpy.einsum(optimize="greedy")': NetworkPeer(_numpy_greedy, fresh=forget_numpy_parses)
    }
    for name in ("auto", "greedy", "random-greedy", "dp"):
        peers[f"opt_einsum {name}"] = _opt_einsum(name)
    if (torch := optional_module("torch")) is not None:
        peers["torch.einsum"] = _torch(torch)
    ctg = optional_module("cotengra")
    if ctg is not None:
        settings = NETWORK_QUICK if quick else NETWORK_FULL
        for seconds in settings.cotengra_budgets:
            peers[f"{COTENGRA} {seconds:g} s"] = _cotengra(ctg, seconds)
    return peers


# -- running ---------------------------------------------------------------------------------


def _path_cost(network: Network, path: Path) -> tuple[float, float]:
    """FLOPs and the largest intermediate (elements) of ``path``, as opt_einsum counts."""
    _, info = opt_einsum.contract_path(network.equation, *network.shapes, shapes=True,
                                       optimize=path)  # fmt: skip
    return float(info.opt_cost), float(info.largest_intermediate)


def _search(peer: NetworkPeer, network: Network, ops: Operands) -> tuple[float, Prepared]:
    if peer.fresh is not None:
        peer.fresh()
    start = time.perf_counter()
    prepared = peer.search(network, ops)
    return time.perf_counter() - start, prepared


def _timed(contract: Callable[[], Any]) -> tuple[float, Any]:
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        result = contract()
        return time.perf_counter() - start, result
    finally:
        if gc_was_enabled:
            gc.enable()


def _peak(contract: Callable[[], Any]) -> int:
    """The bytes a call allocates at its peak beyond what it started with."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        contract()
        return max(0, tracemalloc.get_traced_memory()[1] - before)
    finally:
        tracemalloc.stop()


def _guard(
    network: Network, path: Path | None, settings: NetworkSettings
) -> tuple[float | None, str]:
    """The path's FLOPs, and why it must not run here ("" when it may)."""
    check = path if path is not None else "auto"  # torch: opt_einsum's auto path
    flops, largest = _path_cost(network, check)  # type: ignore[arg-type]
    if flops > settings.max_flops or largest * 8 > settings.max_bytes:
        return (flops if path is not None else None), (
            f"not run: its path needs {flops:.3g} FLOPs and an intermediate of "
            f"{largest * 8 / 2**20:,.0f} MiB (limits here: {settings.max_flops:.3g} FLOPs, "
            f"{settings.max_bytes / 2**20:,.0f} MiB)"
        )
    return (flops if path is not None else None), ""


@dataclass
class _Runs:
    """One contender's calls on one network so far: its timings, or why it stopped."""

    name: str
    peer: NetworkPeer
    subject: bool
    searches: list[float] = field(default_factory=list)
    contractions: list[float] = field(default_factory=list)
    prepared: Prepared | None = None
    result: Any = None
    flops: float | None = None
    entry: NetworkEntry | None = None  # set when it stopped early (skipped, failed, not run)
    done: bool = False

    def call(self, network: Network, ops: Operands, settings: NetworkSettings) -> None:
        """One fresh search and contraction; done when it failed, must not run, or took
        :attr:`NetworkSettings.repeat_below` or longer (a slow call is not repeated)."""
        try:
            search, prepared = _search(self.peer, network, ops)
            self.flops, reason = _guard(network, prepared.path, settings)
            if reason:
                searched = search if self.peer.separable else None
                self._stop(NetworkEntry(self.name, self.subject, searched, None, self.flops,
                                        None, reason))  # fmt: skip
                return
            seconds, self.result = _timed(prepared.contract)
        except Skip as exc:
            self._stop(NetworkEntry(self.name, self.subject, problem=f"skipped: {exc}"))
            return
        except Exception as exc:  # a failing contender is reported, never fatal
            self._stop(NetworkEntry(self.name, self.subject,
                                    problem=f"error: {type(exc).__name__}: {exc}"))  # fmt: skip
            return
        self.prepared = prepared
        self.searches.append(search)
        self.contractions.append(seconds)
        self.done = search + seconds >= settings.repeat_below

    def _stop(self, entry: NetworkEntry) -> None:
        self.entry, self.result, self.done = entry, None, True

    def finish(self) -> NetworkEntry:
        """The entry: medians of the timed calls, then the peak-bytes pass (untimed)."""
        if self.entry is not None:
            return self.entry
        assert self.prepared is not None
        contraction = statistics.median(self.contractions)
        if not self.peer.separable:  # the search is inside the call
            return NetworkEntry(self.name, self.subject, None, contraction, self.flops, None, "")
        try:
            peak: int | None = _peak(self.prepared.contract)
        except Exception:  # it ran timed: a failure here only loses the peak
            peak = None
        return NetworkEntry(self.name, self.subject, statistics.median(self.searches),
                            contraction, self.flops, peak, "")  # fmt: skip


def _rounds(
    network: Network, runs: Sequence[_Runs], ops: Operands, settings: NetworkSettings
) -> None:
    """Up to :attr:`NetworkSettings.repeats` rounds, each calling every contender not yet
    done once, in an order drawn anew each round (seeded by the network): this machine
    slows down and speeds up by 2x for seconds to minutes at a time (measured: one path
    contracted in 61-77 ms for a minute, then 29-33 ms), and contenders run back to back
    would each meet a different phase; interleaved, each meets all of them."""
    order = random.Random(f"einstride-bench:{network.name}")
    for _ in range(max(1, settings.repeats)):
        pending = [r for r in runs if not r.done]
        if not pending:
            break
        for runs_of in order.sample(pending, len(pending)):
            runs_of.call(network, ops, settings)


def _reference(
    network: Network, ops: Operands, results: Mapping[str, Any], entries: Sequence[NetworkEntry]
) -> tuple[str, Any]:
    """NumPy's result if it ran, else opt_einsum's, else another peer's (cotengra's paths:
    a greedy path that no peer was allowed to run may need more memory than the machine
    has); else computed along opt_einsum's greedy path."""
    for name in ('numpy.einsum(optimize="greedy")', "opt_einsum auto", "opt_einsum greedy"):
        if results.get(name) is not None:
            return name, results[name]
    for entry in entries[1:]:  # the peers, in order (the subject comes first)
        if results.get(entry.name) is not None and not entry.problem:
            return entry.name, results[entry.name]
    equation = network.ascii_equation()
    if equation is not None:
        return "numpy.einsum (greedy path)", np.einsum(equation, *ops, optimize="greedy")
    return "opt_einsum greedy", opt_einsum.contract(network.equation, *ops, optimize="greedy")


def _checked(entry: NetworkEntry, result: Any, expected: Any) -> NetworkEntry:
    if result is None or entry.problem:
        return entry
    actual = np.asarray(result.numpy() if hasattr(result, "numpy") else result, dtype=float)
    wanted = np.asarray(expected, dtype=float)
    if actual.shape != wanted.shape:
        return replace(entry, problem=f"wrong: shape {actual.shape}, expected {wanted.shape}")
    scale = float(np.max(np.abs(wanted))) if wanted.size else 0.0
    error = float(np.max(np.abs(actual - wanted))) if wanted.size else 0.0
    if not error <= 1e-8 * max(scale, 1e-300):
        return replace(entry, problem=f"wrong: max abs error {error:.3g} (largest |value| "
                                      f"{scale:.3g})")  # fmt: skip
    return entry


def _warm_up(network: Network, ops: Operands, settings: NetworkSettings) -> None:
    """One untimed contraction (opt_einsum's greedy path, when the limits allow it) before
    any contender runs: the first contraction of a network's sizes in a process pays for
    the allocator's growth (fresh pages, malloc's mmap threshold adapting), and without
    this it was always the subject, which runs first (measured on random-100: 228 ms run
    first against 98-113 ms run second, for either contender)."""
    path = [tuple(e) for e in opt_einsum.contract_path(
        network.equation, *ops, optimize="greedy")[0]]  # fmt: skip
    if not _guard(network, path, settings)[1]:
        opt_einsum.contract(network.equation, *ops, optimize=path)


WARM_UP_CALLS = 3
PAIRED_CALLS = 3  # each path's calls in :func:`_paired` (networks of 40 tensors and more)


def _warm_up_contenders(subject: NetworkPeer, peers: Mapping[str, NetworkPeer]) -> None:
    """Each contender's first calls in the process, untimed, on a small network of their
    own: the first call pays for lazy imports and for CPython's warm-up of the code it runs
    (measured: einstride's first fresh call of random-10 took 2.3 ms, the next ones
    1.1-1.3 ms), which would otherwise fall on whichever network comes first.  cotengra's
    optimizers are left out: their search takes its time budget on any network."""
    network = random_regular(8, 3, 2, 4, seed=0)
    ops = network.operands()
    for name, peer in [("subject", subject), *peers.items()]:
        if name.startswith(COTENGRA):
            continue
        for _ in range(WARM_UP_CALLS):
            try:
                _search(peer, network, ops)[1].contract()
            except Exception:  # a failing contender is reported when it is measured
                break


def run_network(
    network: Network,
    subject: NetworkPeer,
    peers: Mapping[str, NetworkPeer],
    settings: NetworkSettings,
    subject_name: str = "einstride",
) -> NetworkResult:
    """Every contender on ``network`` (after an untimed warm-up; the calls interleaved in
    rounds, :func:`_rounds`), each result checked; the entries in order, subject first."""
    ops = network.operands()
    _warm_up(network, ops, settings)
    runs = [_Runs(name, peer, peer is subject)
            for name, peer in [(subject_name, subject), *peers.items()]]  # fmt: skip
    _rounds(network, runs, ops, settings)
    measured = [r.finish() for r in runs]
    results = {r.name: r.result for r in runs}
    reference, expected = _reference(network, ops, results, measured)
    entries = tuple(_checked(e, results[e.name], expected) for e in measured)
    budgets = [name for name in peers if name.startswith(COTENGRA)]
    largest = budgets[-1] if budgets else ""
    paired = None
    if network.tensors >= 40 and largest:
        by_name = {r.name: r for r in runs}
        checked = {e.name: e for e in entries}
        mine, theirs = next(r for r in runs if r.subject), by_name[largest]
        if not (checked[mine.name].problem or checked[largest].problem):
            paired = _paired(network, ops, subject, mine.prepared, theirs.prepared, expected)
    return NetworkResult(network, entries, reference, largest, paired=paired)


def _paired(
    network: Network,
    ops: Operands,
    subject: NetworkPeer,
    own: Prepared | None,
    reference: Prepared | None,
    expected: Any,
) -> tuple[float, float] | None:
    """The subject's contraction along the FLOPs reference's path and along its own, the
    same call for both (a fresh ``einsum(..., optimize=path)``: no plan kept from before),
    :data:`PAIRED_CALLS` times each in an order drawn anew for each pair (seeded by the
    network): the medians; None when the subject cannot contract along a given path, a
    path is unknown, or a call fails or gives another result (the table then says
    nothing of it)."""
    if subject.along is None or own is None or reference is None:
        return None
    if own.path is None or reference.path is None:
        return None
    calls = (subject.along(network, ops, reference.path), subject.along(network, ops, own.path))
    times: tuple[list[float], list[float]] = ([], [])
    order = random.Random(f"einstride-bench-paired:{network.name}")
    try:
        for _ in range(PAIRED_CALLS):
            for k in order.sample((0, 1), 2):
                if subject.fresh is not None:
                    subject.fresh()
                seconds, result = _timed(calls[k])
                if _checked(NetworkEntry("paired", True), result, expected).problem:
                    return None
                times[k].append(seconds)
    except Exception:  # the comparison is extra: a failure leaves it out, never the run
        return None
    return statistics.median(times[0]), statistics.median(times[1])


def run_networks(
    networks: Sequence[Network],
    engine: Engine,
    peers: Mapping[str, NetworkPeer],
    settings: NetworkSettings,
    progress: TextIO,
) -> list[NetworkResult]:
    """Run the section, reporting progress (after every contender's untimed first call)."""
    subject = subject_peer(engine)
    _warm_up_contenders(subject, peers)
    results = []
    for number, network in enumerate(networks, 1):
        print(f"[network {number:2d}/{len(networks)}] {network.name} ({network.tensors} tensors)"
              " ...", file=progress, flush=True)  # fmt: skip
        result = run_network(network, subject, peers, settings, engine.name)
        mine = result.subject.total
        ratio = "-" if result.ratio is None else f"{result.ratio:.2f}x"
        print(f"        {engine.name} " + ("-" if mine is None else f"{mine:.3g} s") +
              f" | {ratio} | {result.status}", file=progress, flush=True)  # fmt: skip
        results.append(result)
    return results
