"""What a process's very first call pays before any plan: the library's import.

Each module is imported in a fresh interpreter (its own imports included: einstride's and
opt_einsum's time holds NumPy's), ``rounds`` times in turn, and the median is reported; a
module that is not installed is left out.  Each is timed as installed: with its modules'
bytecode compiled, as pip compiles a package it installs.  So one untimed import comes
first and writes what is missing, and the interpreters run without
``PYTHONDONTWRITEBYTECODE`` (set, a source checkout compiles every module on every import:
einstride's import took 280-340 ms here so, 127-170 ms from its bytecode).

>>> seconds = import_seconds(["json", "no_such_module_here"], rounds=1)
>>> sorted(seconds), seconds["json"] > 0
(['json'], True)
>>> imports_line({"numpy": 0.095, "einstride": 0.34})
'Imports, each in a fresh interpreter (median of 3): numpy 95 ms, einstride 340 ms.'
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence

__all__ = ["IMPORTED", "import_seconds", "imports_line", "probe_environment"]

IMPORTED = ("numpy", "einstride", "opt_einsum", "torch")
ROUNDS = 3
_PROBE = "import time; t = time.perf_counter(); import {0}; print(time.perf_counter() - t)"


def import_seconds(modules: Sequence[str] = IMPORTED, rounds: int = ROUNDS) -> dict[str, float]:
    """The median seconds of ``import module`` in a fresh interpreter, per installed module."""
    samples: dict[str, list[float]] = {name: [] for name in modules}
    for name in modules:
        if _import_once(name) is None:  # untimed: writes the bytecode a fresh clone lacks
            del samples[name]  # not installed
    for _ in range(rounds):
        for name in modules:
            if name in samples:
                seconds = _import_once(name)
                if seconds is None:
                    del samples[name]  # not installed
                else:
                    samples[name].append(seconds)
    return {name: statistics.median(found) for name, found in samples.items()}


def probe_environment() -> dict[str, str]:
    """The fresh interpreters' environment: this one's, bytecode caches allowed."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _import_once(name: str) -> float | None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(name)],
        capture_output=True,
        text=True,
        timeout=300,
        env=probe_environment(),
    )
    return float(done.stdout) if done.returncode == 0 else None


def imports_line(seconds: Mapping[str, float], rounds: int = ROUNDS) -> str:
    """The report's sentence."""
    parts = [f"{name} {_duration(s)}" for name, s in seconds.items()]
    return f"Imports, each in a fresh interpreter (median of {rounds}): {', '.join(parts)}."


def _duration(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"
