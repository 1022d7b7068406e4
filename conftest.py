"""Without the optional einstride[dask] extra, skip the Dask backend's doctests (its tests
skip themselves with pytest.importorskip)."""

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
