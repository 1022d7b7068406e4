"""What the numbers were measured on: machine, library versions, BLAS, environment.

>>> info = machine_info()
>>> "numpy" in info and "cores" in info
True
>>> set(BLAS_ENVIRONMENT) <= set(blas_environment())
True
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import numpy as np

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from .contenders import optional_module
from .timing import Budget, interleave

__all__ = [
    "BLAS_ENVIRONMENT",
    "CpuClock",
    "background_cores",
    "blas_environment",
    "blas_libraries",
    "load_average",
    "machine_info",
    "matmul_rate",
    "thread_limit",
]

# Variables that change which kernels and threads BLAS uses (and so the numbers).
BLAS_ENVIRONMENT = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OMP_WAIT_POLICY",
)
_PACKAGES = ("numpy", "opt_einsum", "torch", "pytblis", "threadpoolctl", "matplotlib")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return "unknown"
    return f"{pages * page_size / 2**30:.1f} GiB"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, str]:
    """Platform, CPU, usable cores, memory, Python and the peers' package versions."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cores": f"{cores} usable of {os.cpu_count()}",
        "memory": _memory(),
        "python": platform.python_version(),
    }
    info.update({package: _version(package) for package in _PACKAGES})
    return info


def blas_environment() -> dict[str, str]:
    """The BLAS-related environment variables in effect ('unset' when absent)."""
    return {name: os.environ.get(name, "unset") for name in BLAS_ENVIRONMENT}


def _threadpool_lines(threadpoolctl: Any) -> list[str]:
    lines = []
    for pool in threadpoolctl.threadpool_info():
        details = [f"{key} {pool[key]}" for key in ("version", "architecture", "threading_layer")
                   if pool.get(key)]  # fmt: skip
        where = os.path.basename(os.path.dirname(str(pool.get("filepath", ""))))
        name = f"{pool.get('internal_api')} ({pool.get('prefix')} in {where})"
        lines.append(", ".join([f"{name}: {pool.get('num_threads')} threads", *details]))
    return lines


def _numpy_config_lines() -> list[str]:
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
    except (TypeError, KeyError):
        return ["numpy's BLAS: unknown (install threadpoolctl for details)"]
    return [f"numpy built with {blas.get('name')} {blas.get('version')}"]


def blas_libraries() -> list[str]:
    """One line per native thread pool (BLAS, OpenMP): via threadpoolctl when installed,
    else numpy's build configuration."""
    threadpoolctl = optional_module("threadpoolctl")
    if threadpoolctl is None:
        return _numpy_config_lines()
    return _threadpool_lines(threadpoolctl) or _numpy_config_lines()


def load_average() -> str:
    """The 1-minute load average (other work on the machine skews the numbers).

    >>> load_average() == "unknown" or float(load_average()) >= 0
    True
    """
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (OSError, AttributeError):
        return "unknown"


def matmul_rate(dtype: Any, size: int, budget: Budget) -> float:
    """numpy.matmul's GFLOP/s on a square ``size`` GEMM: the machine's reference rate.

    >>> matmul_rate(np.float64, 32, Budget(0.01, 1e-4, 1e-3, 2, 5)) > 0
    True
    """
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size)).astype(dtype) for _ in range(2))
    np.matmul(a, b)
    seconds = interleave({"matmul": lambda: np.matmul(a, b)}, budget)["matmul"].median
    return 2 * size**3 / seconds / 1e9


@dataclass(frozen=True)
class CpuClock:
    """A reading of wall time, the machine's busy CPU seconds (all processes, from
    /proc/stat; ``None`` where it is missing) and this process's CPU seconds."""

    wall: float
    busy: float | None
    own: float

    @classmethod
    def now(cls) -> CpuClock:
        """The current reading."""
        own = 0.0
        if resource is not None:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            own = usage.ru_utime + usage.ru_stime
        return cls(time.perf_counter(), _busy_seconds(), own)


def _busy_seconds() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    idle, iowait = fields[3], fields[4] if len(fields) > 4 else 0
    guests = sum(fields[8:10])  # already counted in user and nice
    return (sum(fields) - idle - iowait - guests) / ticks


def background_cores(start: CpuClock, end: CpuClock) -> float | None:
    """Cores that other processes kept busy, on average, between two readings.

    >>> background_cores(CpuClock(0.0, 10.0, 1.0), CpuClock(2.0, 13.0, 2.0))
    1.0
    >>> background_cores(CpuClock(0.0, None, 1.0), CpuClock(2.0, None, 2.0)) is None
    True
    """
    if start.busy is None or end.busy is None or end.wall <= start.wall:
        return None
    others = (end.busy - start.busy) - (end.own - start.own)
    return max(0.0, others / (end.wall - start.wall))


def _limit_module(stack: contextlib.ExitStack, name: str, threads: int) -> bool:
    module = sys.modules.get(name)
    if module is None or not hasattr(module, "set_num_threads"):
        return False
    before = module.get_num_threads()
    module.set_num_threads(threads)
    stack.callback(module.set_num_threads, before)
    return True


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[str]:
    """Limit the native thread pools already loaded (BLAS and OpenMP via threadpoolctl,
    torch and pytblis by their own setters) to ``threads`` while inside; yields a line
    for the report saying what was limited.

    >>> with thread_limit(None) as what:
    ...     what
    'not limited'
    """
    if threads is None:
        yield "not limited"
        return
    with contextlib.ExitStack() as stack:
        limited = [name for name in ("torch", "pytblis") if _limit_module(stack, name, threads)]
        threadpoolctl = optional_module("threadpoolctl")
        if threadpoolctl is not None:
            stack.enter_context(threadpoolctl.threadpool_limits(limits=threads))
            limited.insert(0, "BLAS/OpenMP (threadpoolctl)")
        yield f"{threads} per pool: " + (", ".join(limited) or "nothing (no threadpoolctl)")
