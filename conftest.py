"""Without the optional einstride[dask] / einstride[torch] extras, skip those backends'
doctests (their tests skip themselves)."""

import importlib.util


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


collect_ignore = [] if _installed("dask") else [
    "src/einstride/engine/backends/dask",
    "src/einstride/dask.py",
]
if not _installed("torch"):
    collect_ignore.append("src/einstride/engine/backends/torch")
